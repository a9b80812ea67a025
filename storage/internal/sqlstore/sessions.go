package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// sessionInsertColumns are the columns a session write sets, in the order
// of [Store.sessionArgs]; sessionColumns are those a read returns, which
// adds the row's update count (see [storage.SessionVersion]).
const (
	sessionInsertColumns = "session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, agent_data, team_data, workflow_data, metadata, summary, created_at, updated_at"
	sessionColumns       = sessionInsertColumns + ", update_count"
)

// UpsertSession implements [storage.SessionStore].
func (s *Store) UpsertSession(ctx context.Context, in *storage.Session) (*storage.Session, error) {
	write, err := s.sessionWrite(in)
	if err != nil {
		return nil, err
	}
	var out *storage.Session
	err = s.db.InTx(ctx, func(tx Conn) error {
		out, err = write.run(ctx, tx)
		return err
	})
	return out, s.sessionWriteErr(in, err)
}

// sessionWrite validates and encodes a session and returns the statement
// that writes it inside a transaction, which returns the stored row.
func (s *Store) sessionWrite(in *storage.Session) (rowStatement[*storage.Session], error) {
	return s.sessionWriteReturning(in, returnStored, scanSession)
}

// sessionSave is [Store.sessionWrite] for a write whose caller keeps what
// it wrote ([Store.SaveRun]): the stored row is in's documents with the
// columns the database sets, so the documents are not decoded again.
func (s *Store) sessionSave(in *storage.Session) (rowStatement[*storage.Session], error) {
	return s.sessionWriteReturning(in, returnSet, func(row Row) (*storage.Session, error) {
		stored := *in
		stored.Runs = nil
		var userID string
		if err := row.Scan(nullString{&userID}, &stored.CreatedAt, nullInt64{&stored.UpdatedAt}, nullInt64{&stored.UpdateCount}); err != nil {
			return nil, err
		}
		stored.UserID, stored.SessionType = userID, sessionTypeOf(in)
		return &stored, nil
	})
}

// sessionReturning is what a session upsert returns: the stored row
// (sessionColumns), or only the columns the database sets.
type sessionReturning int

const (
	returnStored sessionReturning = iota
	returnSet
)

// columns lists the returned columns.
func (r sessionReturning) columns() string {
	if r == returnSet {
		return "user_id, created_at, updated_at, update_count"
	}
	return sessionColumns
}

// sessionUpsert is the text of a session upsert: query, and orElse, the
// general form that runs when a narrowed query changes nothing.
type sessionUpsert struct{ query, orElse string }

// sessionWriteReturning is the session upsert returning what returning
// names, read by scan.
func (s *Store) sessionWriteReturning(in *storage.Session, returning sessionReturning, scan func(Row) (*storage.Session, error)) (rowStatement[*storage.Session], error) {
	args, err := s.sessionArgs(in, "upsert")
	if err != nil {
		return rowStatement[*storage.Session]{}, err
	}
	legacy := 0
	if s.legacyRunsColumn.Load() {
		legacy = 1
	}
	st := s.stmts.sessionUpserts[legacy][returning]
	return rowStatement[*storage.Session]{query: st.query, orElse: st.orElse, args: args, scan: scan}, nil
}

// sessionUpsertStatement builds the session upsert returning what
// returning names; with legacyRuns it also empties Agno 2.x's runs column,
// whose runs the migration has copied into agno_runs.
func (s *Store) sessionUpsertStatement(returning sessionReturning, legacyRuns bool) sessionUpsert {
	clear := ""
	if legacyRuns {
		clear = ", runs = NULL"
	}
	// The conflict branch only fires for the same user (or an unscoped
	// write, which keeps the stored owner); RETURNING then yields no row and
	// the caller learns nothing about the other user's session. The owner
	// therefore never changes, and is not in the SET list.
	upsert := `INSERT INTO %[1]s (%[4]s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET
	%[5]sagent_id = excluded.agent_id, team_id = excluded.team_id, workflow_id = excluded.workflow_id,
	session_data = excluded.session_data, agent_data = excluded.agent_data, team_data = excluded.team_data,
	workflow_data = excluded.workflow_data, metadata = excluded.metadata, summary = excluded.summary,
	updated_at = excluded.updated_at, update_count = %[1]s.update_count + 1%[3]s
WHERE (excluded.user_id IS NULL OR %[1]s.user_id = excluded.user_id)%[6]s
RETURNING %[2]s`
	general := fmt.Sprintf(upsert, s.tables.sessions, returning.columns(), clear, sessionInsertColumns, "session_type = excluded.session_type, ", "")
	if s.dialect != SQLite {
		// Postgres compares values: an update that changes no indexed
		// column writes no index entry, whatever its SET list names.
		return sessionUpsert{query: general}
	}
	// SQLite rewrites the index entries of every indexed column a SET
	// list names, changed or not: two more pages in every write's commit
	// for session_type and user_id, which a session keeps. The common
	// write leaves session_type out and applies only where it is
	// unchanged; a write that changes it, or finds another user's
	// session, has changed nothing and runs the general form.
	narrow := fmt.Sprintf(upsert, s.tables.sessions, returning.columns(), clear, sessionInsertColumns, "",
		fmt.Sprintf(" AND %s.session_type = excluded.session_type", s.tables.sessions))
	return sessionUpsert{query: narrow, orElse: general}
}

// sessionArgs validates and encodes a session as the values of its row,
// in sessionColumns order; verb names the write in an encoding error.
func (s *Store) sessionArgs(in *storage.Session, verb string) ([]any, error) {
	if in == nil || in.SessionID == "" {
		return nil, storage.Invalidf("session_id is required")
	}
	sessionType := sessionTypeOf(in)
	if !sessionType.Valid() {
		return nil, storage.Invalidf("session_type %q: want agent, team or workflow", in.SessionType)
	}
	docs, err := marshalAll(in.SessionData, in.AgentData, in.TeamData, in.WorkflowData, in.Metadata, in.Summary)
	if err != nil {
		return nil, fmt.Errorf("%s session %s: %w", verb, in.SessionID, err)
	}
	now := s.nowSeconds()
	createdAt := in.CreatedAt
	if createdAt == 0 {
		createdAt = now
	}
	return []any{in.SessionID, string(sessionType), nullable(in.AgentID), nullable(in.TeamID), nullable(in.WorkflowID),
		nullable(in.UserID), docs[0], docs[1], docs[2], docs[3], docs[4], docs[5], createdAt, now}, nil
}

// sessionTypeOf is the session_type a session is written with: agent
// unless it says otherwise.
func sessionTypeOf(in *storage.Session) storage.SessionType {
	return cmp.Or(in.SessionType, storage.SessionTypeAgent)
}

// sessionWriteErr turns a session write's error into the store's.
func (s *Store) sessionWriteErr(in *storage.Session, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoRows):
		return notFound("session", in.SessionID)
	case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrInvalid):
		return err
	}
	return fmt.Errorf("upsert session %s: %w", in.SessionID, err)
}

// GetSession implements [storage.SessionStore].
func (s *Store) GetSession(ctx context.Context, sessionID string, opts storage.GetSessionOptions) (*storage.Session, error) {
	where, args := userScope("user_id", opts.UserID, "session_id = ?", sessionID)
	row := s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", sessionColumns, s.tables.sessions, where), args...)
	session, err := scanSession(row)
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("session", sessionID)
	}
	if err != nil {
		return nil, fmt.Errorf("get session %s: %w", sessionID, err)
	}
	switch {
	case opts.ContextRuns > 0:
		session.Runs, err = s.contextRuns(ctx, sessionID, opts.ContextRuns)
	case opts.IncludeRuns:
		session.Runs, err = s.sessionRuns(ctx, sessionID)
	}
	if err != nil {
		return nil, fmt.Errorf("get session %s: %w", sessionID, err)
	}
	return session, nil
}

// SessionVersion implements [storage.SessionVersioner]: one indexed read
// of two columns of the session row, with a primary-key probe of the run.
func (s *Store) SessionVersion(ctx context.Context, sessionID, userID, runID string) (storage.SessionVersion, bool, error) {
	// Every turn reads this: its two texts are built once (statements).
	query, args := s.stmts.sessionVersion, []any{runID, sessionID, sessionID}
	if userID != "" {
		query, args = s.stmts.sessionVersionScoped, append(args, userID)
	}
	var v storage.SessionVersion
	var stored bool
	// Batched with concurrent turns' checks on a database that batches
	// reads: one round trip for many.
	err := s.db.queryRowBatched(ctx, func(row Row) error {
		return row.Scan(&v.UpdateCount, nullInt64{&v.UpdatedAt}, &stored)
	}, query, args...)
	if errors.Is(err, ErrNoRows) {
		return v, false, notFound("session", sessionID)
	}
	if err != nil {
		return v, false, fmt.Errorf("read version of session %s: %w", sessionID, err)
	}
	return v, stored, nil
}

// sessionRuns reads every run of a session in run order.
func (s *Store) sessionRuns(ctx context.Context, sessionID string) ([]*run.Output, error) {
	query := fmt.Sprintf("SELECT run_data FROM %s WHERE session_id = ? ORDER BY run_index ASC, created_at ASC, run_id ASC", s.tables.runs)
	return s.queryRunData(ctx, query, sessionID)
}

// ListSessions implements [storage.SessionStore].
func (s *Store) ListSessions(ctx context.Context, q storage.SessionQuery) ([]*storage.Session, int, error) {
	if q.Type != "" && !q.Type.Valid() {
		return nil, 0, storage.Invalidf("session type %q: want agent, team or workflow", q.Type)
	}
	orderBy, err := s.sessionOrder(q.SortBy, q.SortOrder)
	if err != nil {
		return nil, 0, err
	}
	limitClause, err := pageClause(q.Page)
	if err != nil {
		return nil, 0, err
	}
	var conds []string
	var args []any
	add := func(cond string, arg ...any) { conds = append(conds, cond); args = append(args, arg...) }
	if q.UserID != "" {
		add("user_id = ?", q.UserID)
	}
	if q.Type != "" {
		add("session_type = ?", string(q.Type))
	}
	if q.ComponentID != "" {
		switch q.Type {
		case storage.SessionTypeTeam:
			add("team_id = ?", q.ComponentID)
		case storage.SessionTypeWorkflow:
			add("workflow_id = ?", q.ComponentID)
		case storage.SessionTypeAgent:
			add("agent_id = ?", q.ComponentID)
		default:
			add("(agent_id = ? OR team_id = ? OR workflow_id = ?)", q.ComponentID, q.ComponentID, q.ComponentID)
		}
	}
	if q.Name != "" {
		add(fmt.Sprintf(`LOWER(%s) LIKE ? ESCAPE '\'`, s.dialect.jsonText("session_data", storage.SessionNameKey)), likePattern(q.Name))
	}
	sessions, total, err := listPage(ctx, s.db.Reader(), listing{
		table: s.tables.sessions, columns: sessionColumns, where: whereClause(conds), args: args, order: orderBy, limit: limitClause,
	}, scanSession)
	if err != nil {
		return nil, 0, fmt.Errorf("list sessions: %w", err)
	}
	return sessions, total, nil
}

func (s *Store) sessionOrder(sortBy string, order storage.SortOrder) (string, error) {
	dir, err := sortDirection(order)
	if err != nil {
		return "", err
	}
	var column string
	switch sortBy {
	case "", "created_at":
		column = "created_at"
	case "updated_at", "session_id":
		column = sortBy
	case "session_name":
		column = s.dialect.jsonText("session_data", storage.SessionNameKey)
	default:
		return "", storage.Invalidf("sort_by %q: want created_at, updated_at, session_id or session_name", sortBy)
	}
	return fmt.Sprintf("%s %s, session_id %s", column, dir, dir), nil
}

// RenameSession implements [storage.SessionStore].
func (s *Store) RenameSession(ctx context.Context, sessionID, userID, name string) (*storage.Session, error) {
	if strings.TrimSpace(name) == "" {
		return nil, storage.Invalidf("session_name must not be empty")
	}
	var out *storage.Session
	err := s.db.InTx(ctx, func(tx Conn) error {
		where, args := userScope("user_id", userID, "session_id = ?", sessionID)
		var raw []byte
		err := tx.QueryRow(ctx, fmt.Sprintf("SELECT session_data FROM %s WHERE %s%s", s.tables.sessions, where, s.dialect.forUpdate()), args...).Scan(jsonBytes{&raw})
		if err != nil {
			return err
		}
		data := map[string]any{}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &data); err != nil || data == nil {
				data = map[string]any{}
			}
		}
		data[storage.SessionNameKey] = name
		doc, err := encodeJSON(data)
		if err != nil {
			return err
		}
		out, err = scanSession(tx.QueryRow(ctx, fmt.Sprintf("UPDATE %s SET session_data = ?, updated_at = ?, update_count = update_count + 1 WHERE session_id = ? RETURNING %s", s.tables.sessions, sessionColumns),
			string(doc), s.nowSeconds(), sessionID))
		return err
	})
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("session", sessionID)
	}
	if err != nil {
		return nil, fmt.Errorf("rename session %s: %w", sessionID, err)
	}
	return out, nil
}

// DeleteSession implements [storage.SessionStore]. Runs go by the foreign
// key's cascade; transcripts are deleted in the same transaction.
func (s *Store) DeleteSession(ctx context.Context, sessionID, userID string) error {
	err := s.db.InTx(ctx, func(tx Conn) error {
		where, args := userScope("user_id", userID, "session_id = ?", sessionID)
		deleted, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s", s.tables.sessions, where), args...)
		if err != nil {
			return err
		}
		if deleted == 0 {
			return ErrNoRows
		}
		_, err = tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE agno_session_id = ?", s.tables.transcripts), sessionID)
		return err
	})
	if errors.Is(err, ErrNoRows) {
		return notFound("session", sessionID)
	}
	if err != nil {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	return nil
}

func scanSession(row Row) (*storage.Session, error) {
	var (
		out                                                               storage.Session
		sessionType, agentID, teamID, workflowID, userID                  string
		sessionData, agentData, teamData, workflowData, metadata, summary []byte
		updatedAt, updateCount                                            int64
	)
	err := row.Scan(&out.SessionID, &sessionType, nullString{&agentID}, nullString{&teamID}, nullString{&workflowID}, nullString{&userID},
		jsonBytes{&sessionData}, jsonBytes{&agentData}, jsonBytes{&teamData}, jsonBytes{&workflowData}, jsonBytes{&metadata}, jsonBytes{&summary},
		&out.CreatedAt, nullInt64{&updatedAt}, nullInt64{&updateCount})
	if err != nil {
		return nil, err
	}
	out.SessionType = storage.SessionType(sessionType)
	out.AgentID, out.TeamID, out.WorkflowID, out.UserID, out.UpdatedAt = agentID, teamID, workflowID, userID, updatedAt
	out.UpdateCount = updateCount
	targets := []*map[string]any{&out.SessionData, &out.AgentData, &out.TeamData, &out.WorkflowData, &out.Metadata, &out.Summary}
	for i, doc := range [][]byte{sessionData, agentData, teamData, workflowData, metadata, summary} {
		if err := unmarshalObject(doc, targets[i]); err != nil {
			return nil, fmt.Errorf("session %s: %w", out.SessionID, err)
		}
	}
	return &out, nil
}
