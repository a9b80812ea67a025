package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

const runColumns = "run_id, session_id, run_type, user_id, run_index, run_data, created_at, updated_at"

// UpsertRun implements [storage.RunStore].
//
// The write takes one indexed lookup of the session, one of the stored
// run (what it counts for in the daily metrics), and one statement that
// inserts or updates the run (finding the session's highest run_index
// through an index), so its cost does not grow with the number of runs a
// session holds; a save that changes what the run counts for also updates
// one metrics row (see [Store.applyMetrics]).
func (s *Store) UpsertRun(ctx context.Context, rec storage.RunRecord) (storage.RunRecord, error) {
	write, err := s.runWrite(rec, false)
	if err != nil {
		return rec, err
	}
	err = s.db.InTx(ctx, func(tx Conn) error {
		changes := metricsChanges{}
		if rec, err = write.write(ctx, tx, nil, changes); err != nil {
			return err
		}
		return s.applyMetrics(ctx, tx, changes)
	})
	if err != nil {
		return rec, fmt.Errorf("upsert run %s: %w", rec.Run.RunID, err)
	}
	return rec, nil
}

// SaveRun implements [storage.RunStore]: the session and the run in one
// transaction.
func (s *Store) SaveRun(ctx context.Context, session *storage.Session, rec storage.RunRecord) (*storage.Session, storage.RunRecord, error) {
	writeSession, err := s.sessionSave(session)
	if err != nil {
		return nil, rec, err
	}
	if rec.SessionID == "" {
		rec.SessionID = session.SessionID
	}
	writeRun, err := s.runWrite(rec, false)
	if err != nil {
		return nil, rec, err
	}
	var stored *storage.Session
	// A save that locks only its session's row may commit with concurrent
	// ones, ordered by session (see [GroupCommitter]).
	group := ""
	if rec.SessionID == session.SessionID {
		group = session.SessionID
	}
	err = s.db.inGroupTx(ctx, group, func(tx Conn) error {
		changes := metricsChanges{}
		var pipelined bool
		if stored, rec, pipelined, err = writeRun.pipelinedSave(ctx, tx, session, writeSession, changes); pipelined {
			if err != nil {
				return err
			}
			return s.applyMetrics(ctx, tx, changes)
		}
		if stored, err = writeSession.run(ctx, tx); err != nil {
			return s.sessionWriteErr(session, err)
		}
		// When the run is the session's, the session write has just locked
		// the row and returned what the run's write needs of it.
		if stored.SessionID == rec.SessionID {
			rec, err = writeRun.writeInSession(ctx, tx, stored, changes)
		} else {
			rec, err = writeRun.write(ctx, tx, nil, changes)
		}
		if err != nil {
			return err
		}
		return s.applyMetrics(ctx, tx, changes)
	})
	if err != nil {
		return nil, rec, fmt.Errorf("save run %s: %w", rec.Run.RunID, err)
	}
	return stored, rec, nil
}

// runWrite validates and encodes a run and returns what writes it inside a
// transaction: an upsert, or with insertOnly an insert that refuses a run
// id already stored. See [runWriter.write].
func (s *Store) runWrite(rec storage.RunRecord, insertOnly bool) (*runWriter, error) {
	if rec.Run == nil || rec.Run.RunID == "" {
		return nil, storage.Invalidf("run_id is required")
	}
	runID := rec.Run.RunID
	if rec.SessionID == "" {
		rec.SessionID = rec.Run.SessionID
	}
	if rec.SessionID == "" {
		return nil, storage.Invalidf("run %s: session_id is required", runID)
	}
	if rec.Run.SessionID != "" && rec.Run.SessionID != rec.SessionID {
		return nil, storage.Invalidf("run %s names session %s but is saved to session %s", runID, rec.Run.SessionID, rec.SessionID)
	}
	if rec.Run.Status != "" && !rec.Run.Status.Valid() {
		return nil, storage.Invalidf("run %s: unknown status %q", runID, rec.Run.Status)
	}
	if rec.RunType == "" {
		rec.RunType = storage.RunTypeOf(rec.Run)
	}
	runData, err := encodeJSON(rec.Run)
	if err != nil {
		return nil, fmt.Errorf("%w: encode run %s: %v", storage.ErrInvalid, runID, err)
	}
	now := s.nowSeconds()
	rec.UpdatedAt = now
	if rec.CreatedAt == 0 {
		rec.CreatedAt = rec.Run.CreatedAt
	}
	if rec.CreatedAt == 0 {
		rec.CreatedAt = now
	}
	w := &runWriter{s: s, rec: rec, runData: string(runData), insertOnly: insertOnly, scopedUser: rec.UserID,
		newCounts: storage.CountsInMetrics(rec.Run.Status), query: s.stmts.runUpsert}
	switch {
	case insertOnly:
		w.query = s.stmts.runInsert
	case w.scopedUser != "":
		w.query = s.stmts.runUpsertScoped
	}
	// Postgres reads the stored row in the upsert (see [Store.runUpsert]),
	// sparing a round trip; SQLite reads it first, in process.
	w.priorInWrite = !insertOnly && s.dialect == Postgres
	return w, nil
}

// runWriter writes one validated and encoded run ([Store.runWrite]).
type runWriter struct {
	s            *Store
	rec          storage.RunRecord
	runData      string
	query        string // runUpsert, runUpsertScoped or runInsert
	scopedUser   string // the user the write is scoped to, if any
	insertOnly   bool
	priorInWrite bool // the statement also returns what the stored row counted for
	newCounts    bool // the new row counts in the daily metrics
}

// runStatement is the statement that writes the run, and what reads its row.
type runStatement struct {
	rec  storage.RunRecord
	args []any
	// values are the arguments of the values the run's row is written
	// with, which every insert of it takes first (see runInsertCounting).
	values           []any
	index, createdAt int64
	prior            *priorRun
}

// dest lists the scan destinations of the statement's row.
func (st *runStatement) dest(priorInWrite bool) []any {
	dest := []any{&st.index, &st.createdAt}
	if priorInWrite {
		dest = append(dest, st.prior.dest()...)
	}
	return dest
}

// write writes the run inside tx. owner is the user_id of the run's
// session when the transaction has already written (and so locked) that
// session row; nil makes it read and lock the row first. What the write
// changes in the daily metrics (the new row's usage less the stored row's)
// is added to changes, for the caller to apply before it commits.
func (w *runWriter) write(ctx context.Context, tx Conn, knownOwner *string, changes metricsChanges) (storage.RunRecord, error) {
	var owner string
	if knownOwner != nil {
		owner = *knownOwner
	} else {
		// Lock the session row (Postgres) so concurrent inserts into
		// one session take distinct run_index values, and count the
		// change to the session's runs (see [storage.SessionVersion]).
		err := tx.QueryRow(ctx, w.s.stmts.sessionBump, w.rec.SessionID).Scan(nullString{&owner})
		if errors.Is(err, ErrNoRows) {
			return w.rec, notFound("session", w.rec.SessionID)
		}
		if err != nil {
			return w.rec, err
		}
	}
	if w.scopedUser != "" && owner != w.scopedUser {
		return w.rec, notFound("session", w.rec.SessionID)
	}
	// The session row is locked, and every write of this run locks it
	// first: the stored row read here is the one the write replaces.
	// Postgres reads it in the write's own statement; an insert-only
	// write has none to replace.
	prior := &priorRun{}
	if !w.insertOnly && !w.priorInWrite {
		var err error
		if prior, err = w.s.readPriorRun(ctx, tx, w.rec.SessionID, w.rec.Run.RunID, w.newCounts); err != nil {
			return w.rec, err
		}
	}
	st := w.statement(owner, prior)
	err := tx.QueryRow(ctx, w.query, st.args...).Scan(st.dest(w.priorInWrite)...)
	return w.written(ctx, tx, st, err, changes)
}

// writeInSession is [runWriter.write] for a run of session, the stored
// row this transaction has just written, and so locked. On SQLite a run
// not stored yet, a save's usual case, is inserted by a statement that
// also tells whether another run of the session counts in the daily
// metrics: the session's row gives the rest of what the metrics' change
// needs, and the stored run need not be looked for first. A run the
// insert finds stored is written as any other write is.
func (w *runWriter) writeInSession(ctx context.Context, tx Conn, session *storage.Session, changes metricsChanges) (storage.RunRecord, error) {
	if w.s.dialect != SQLite || w.insertOnly || (w.scopedUser != "" && w.scopedUser != session.UserID) {
		return w.write(ctx, tx, &session.UserID, changes)
	}
	st := w.statement(session.UserID, &priorRun{sessionUser: session.UserID, sessionType: string(sessionTypeOf(session)), sessionCreated: session.CreatedAt})
	args := append(st.values, countsFlag(w.newCounts), w.rec.SessionID, w.rec.Run.RunID)
	err := tx.QueryRow(ctx, w.s.stmts.runInsertCounting, args...).Scan(&st.index, &st.createdAt, &st.prior.othersCounted)
	if errors.Is(err, ErrNoRows) {
		return w.write(ctx, tx, &session.UserID, changes)
	}
	return w.written(ctx, tx, st, err, changes)
}

// statement builds the write's statement for a session owned by owner.
func (w *runWriter) statement(owner string, prior *priorRun) *runStatement {
	rec := w.rec
	if rec.UserID == "" {
		rec.UserID = owner
	}
	var givenIndex any
	if rec.RunIndex != nil {
		givenIndex = *rec.RunIndex
	}
	args := []any{rec.Run.RunID, rec.SessionID, string(rec.RunType), nullable(rec.Run.AgentID), nullable(rec.Run.TeamID), nullable(rec.Run.WorkflowID),
		nullable(rec.UserID), nullable(string(rec.Run.Status)), nullable(rec.Run.ParentRunID), givenIndex, rec.SessionID, w.runData, rec.CreatedAt, rec.UpdatedAt}
	values := args[:len(args):len(args)]
	if w.scopedUser != "" && !w.insertOnly {
		args = append(args, w.scopedUser)
	}
	if w.priorInWrite {
		args = append([]any{countsFlag(w.newCounts), rec.Run.RunID, rec.Run.RunID, rec.SessionID}, args...)
	}
	return &runStatement{rec: rec, args: args, values: values, prior: prior}
}

// written finishes a write whose statement returned err: it explains a
// write that changed nothing, and adds what the write changes in the daily
// metrics to changes.
func (w *runWriter) written(ctx context.Context, tx Conn, st *runStatement, err error, changes metricsChanges) (storage.RunRecord, error) {
	rec := st.rec
	if errors.Is(err, ErrNoRows) {
		return rec, w.s.runNotWritten(ctx, tx, rec, w.scopedUser, w.insertOnly)
	}
	if err != nil {
		return rec, err
	}
	rec.RunIndex = &st.index
	// An update keeps the stored created_at: the run counts on the day
	// it was first written.
	st.prior.addChanges(changes, newRunUsage(rec.Run.Status, rec.UserID, st.createdAt, rec.RunType, rec.Run), rec.Run.ForkedFromSessionID != "")
	return rec, nil
}

// pipelinedSave writes the session and the run in one round trip, where
// tx can send both together (Postgres) and the run needs nothing from the
// session's row beforehand: the run is the session's, and the write is
// unscoped or scoped to the session's own user, whom the session's upsert
// checks. The run's statement runs after the session's has locked the row,
// so it sees the runs committed before, and a run written without a user
// takes the session's stored owner in it (see [Store.runUpsert]). It
// returns false when the save must go one statement at a time.
func (w *runWriter) pipelinedSave(ctx context.Context, tx Conn, session *storage.Session, writeSession rowStatement[*storage.Session], changes metricsChanges) (stored *storage.Session, rec storage.RunRecord, ok bool, err error) {
	p := pipelinerOf(tx)
	if p == nil || !w.priorInWrite || w.rec.SessionID != session.SessionID || (w.scopedUser != "" && w.scopedUser != session.UserID) {
		return nil, w.rec, false, nil
	}
	st := w.statement(session.UserID, &priorRun{})
	var sessionErr, runErr error
	err = p.QueryRows(ctx,
		Pipelined{Query: writeSession.query, Args: writeSession.args, Scan: func(row Row) error {
			stored, sessionErr = writeSession.scan(row)
			return sessionErr
		}},
		Pipelined{Query: w.query, Args: st.args, Scan: func(row Row) error {
			runErr = row.Scan(st.dest(true)...)
			if errors.Is(runErr, ErrNoRows) {
				return nil // explained below, after the round trip
			}
			return runErr
		}})
	switch {
	case sessionErr != nil:
		return nil, w.rec, true, w.s.sessionWriteErr(session, sessionErr)
	case err != nil:
		return nil, w.rec, true, err
	}
	if st.rec.UserID == "" {
		st.rec.UserID = stored.UserID // as the statement wrote it
	}
	rec, err = w.written(ctx, tx, st, runErr, changes)
	return stored, rec, true, err
}

// runUpsert is the statement that inserts a run, or updates it when it is
// already stored in the same session (and, when scoped, for the same user),
// returning its run_index and created_at. A new run without a given
// run_index gets the session's highest plus one: written as ORDER BY …
// LIMIT 1 rather than MAX() so every planner walks the (session_id,
// run_index) index backwards, even on a table it has no statistics for
// yet; a plan that aggregates the session's rows would make saves O(runs).
// An update keeps the stored run_index, session and created_at. No row
// comes back when the stored run belongs to another session or user: see
// [Store.runNotWritten]. On Postgres the statement also returns, from a
// CTE, what [Store.priorRunStatement] reads (whose arguments come first):
// every part of a statement runs on one snapshot, so the CTE sees the row
// as it was before the write.
func (s *Store) runUpsert(scoped bool) string {
	userCheck := ""
	if scoped {
		userCheck = fmt.Sprintf(" AND %s.user_id = ?", s.tables.runs)
	}
	prior, priorReturning, user := "", "", "?"
	if s.dialect == Postgres {
		// A run written without a user takes its session's owner, which
		// the CTE reads (an unscoped save of an owned session).
		prior, priorReturning, user = "WITH prior AS ("+s.priorRunStatement()+")\n", priorRunReturning, "COALESCE(?, (SELECT session_owner FROM prior))"
	}
	return prior + fmt.Sprintf(`INSERT INTO %[1]s (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, status, parent_run_id, run_index, run_data, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, %[4]s, ?, ?,
	COALESCE(?, (SELECT run_index FROM %[1]s WHERE session_id = ? AND run_index IS NOT NULL ORDER BY run_index DESC LIMIT 1) + 1, 0),
	?, ?, ?)
ON CONFLICT (run_id) DO UPDATE SET
	run_type = excluded.run_type, agent_id = excluded.agent_id, team_id = excluded.team_id, workflow_id = excluded.workflow_id,
	user_id = excluded.user_id, status = excluded.status, parent_run_id = excluded.parent_run_id, run_data = excluded.run_data,
	updated_at = excluded.updated_at
WHERE %[1]s.session_id = excluded.session_id%[2]s
RETURNING run_index, created_at%[3]s`, s.tables.runs, userCheck, priorReturning, user)
}

// runInsert is the statement that inserts a new run as [Store.runUpsert]
// does, and returns no row when the run id is already stored.
func (s *Store) runInsert() string {
	return fmt.Sprintf(`INSERT INTO %[1]s (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, status, parent_run_id, run_index, run_data, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?,
	COALESCE(?, (SELECT run_index FROM %[1]s WHERE session_id = ? AND run_index IS NOT NULL ORDER BY run_index DESC LIMIT 1) + 1, 0),
	?, ?, ?)
ON CONFLICT (run_id) DO NOTHING
RETURNING run_index, created_at`, s.tables.runs)
}

// runInsertCounting is [Store.runInsert] returning also whether another
// run of the session counts in the daily metrics (as
// [Store.priorRunStatement]'s others_counted), when the new row counts;
// its arguments after the run's values: whether the new row counts (1 or
// 0), the session id, the run id. SQLite only.
func (s *Store) runInsertCounting() string {
	insert := strings.TrimSuffix(s.runInsert(), "RETURNING run_index, created_at")
	return insert + fmt.Sprintf(`RETURNING run_index, created_at,
	CASE WHEN ? = 1 THEN EXISTS (SELECT 1 FROM %s AS o WHERE o.session_id = ? AND o.run_id <> ? AND %s AND %s) ELSE 0 END`,
		s.tables.runs, s.countedStatusesOf(s.dialect.unindexed("o.status")), s.dialect.jsonTextAbsent("o.run_data", "forked_from_session_id"))
}

// runNotWritten explains why the write of an already stored run changed
// nothing: the run is another user's (reported as not found), another
// session's, or, for an insert, stored at all.
func (s *Store) runNotWritten(ctx context.Context, tx Conn, rec storage.RunRecord, scopedUser string, insertOnly bool) error {
	var storedSession, storedUser string
	err := tx.QueryRow(ctx, fmt.Sprintf("SELECT session_id, user_id FROM %s WHERE run_id = ?", s.tables.runs), rec.Run.RunID).
		Scan(&storedSession, nullString{&storedUser})
	switch {
	case err != nil:
		return fmt.Errorf("run %s was neither inserted nor updated: %w", rec.Run.RunID, err)
	case scopedUser != "" && storedUser != scopedUser:
		return notFound("run", rec.Run.RunID)
	case insertOnly:
		return storage.Invalidf("run %s already exists", rec.Run.RunID)
	case storedSession != rec.SessionID:
		return storage.Invalidf("run %s belongs to session %s, not %s", rec.Run.RunID, storedSession, rec.SessionID)
	}
	return fmt.Errorf("run %s was neither inserted nor updated", rec.Run.RunID)
}

// GetRun implements [storage.RunStore].
func (s *Store) GetRun(ctx context.Context, runID, userID string) (storage.RunRecord, error) {
	where, args := userScope("user_id", userID, "run_id = ?", runID)
	rec, err := scanRun(s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", runColumns, s.tables.runs, where), args...))
	if errors.Is(err, ErrNoRows) {
		return rec, notFound("run", runID)
	}
	if err != nil {
		return rec, fmt.Errorf("get run %s: %w", runID, err)
	}
	return rec, nil
}

// GetRuns implements [storage.RunStore].
func (s *Store) GetRuns(ctx context.Context, q storage.RunQuery) ([]storage.RunRecord, int, error) {
	limitClause, err := pageClause(q.Page)
	if err != nil {
		return nil, 0, err
	}
	var conds []string
	var args []any
	add := func(cond string, arg ...any) { conds = append(conds, cond); args = append(args, arg...) }
	// The runs of one session are found through its index: the other
	// filters are hidden from the planner, which could otherwise walk every
	// run of a status, or all of a user's, across the database.
	userID, status, createdAt := "user_id", "status", "created_at"
	if q.SessionID != "" {
		add("session_id = ?", q.SessionID)
		userID, status, createdAt = s.dialect.unindexed(userID), s.dialect.unindexed(status), "(created_at + 0)"
	}
	if q.UserID != "" {
		add(userID+" = ?", q.UserID)
	}
	if len(q.Statuses) > 0 {
		marks := make([]string, len(q.Statuses))
		for i, status := range q.Statuses {
			if !status.Valid() {
				return nil, 0, storage.Invalidf("status %q: want one of %v", status, run.Statuses())
			}
			marks[i] = "?"
			args = append(args, string(status))
		}
		conds = append(conds, status+" IN ("+strings.Join(marks, ", ")+")")
	}
	if q.CreatedAfter != 0 {
		add(createdAt+" >= ?", q.CreatedAfter)
	}
	if q.CreatedBefore != 0 {
		add(createdAt+" <= ?", q.CreatedBefore)
	}
	records, total, err := listPage(ctx, s.db.Reader(), listing{
		table: s.tables.runs, columns: runColumns, where: whereClause(conds), args: args,
		order: "run_index ASC, created_at ASC, run_id ASC", limit: limitClause,
	}, scanRun)
	if err != nil {
		return nil, 0, fmt.Errorf("list runs: %w", err)
	}
	return records, total, nil
}

// DeleteRun implements [storage.RunStore].
func (s *Store) DeleteRun(ctx context.Context, runID, userID string) error {
	where, args := userScope("user_id", userID, "run_id = ?", runID)
	var deleted int64
	err := s.db.InTx(ctx, func(tx Conn) error {
		var sessionID string
		err := tx.QueryRow(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s RETURNING session_id", s.tables.runs, where), args...).Scan(&sessionID)
		if errors.Is(err, ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		deleted = 1
		// The session's runs changed: count it (see [storage.SessionVersion]).
		var owner string
		return tx.QueryRow(ctx, s.stmts.sessionBump, sessionID).Scan(nullString{&owner})
	})
	if err != nil {
		return fmt.Errorf("delete run %s: %w", runID, err)
	}
	if deleted == 0 {
		return notFound("run", runID)
	}
	return nil
}

func (s *Store) queryRunData(ctx context.Context, query string, args ...any) ([]*run.Output, error) {
	return queryAll(ctx, s.db.Reader(), scanRunData, query, args...)
}

func scanRunData(row Row) (*run.Output, error) {
	var doc []byte
	if err := row.Scan(jsonBytes{&doc}); err != nil {
		return nil, err
	}
	var out run.Output
	if err := json.Unmarshal(doc, &out); err != nil {
		return nil, fmt.Errorf("decode run_data: %w", err)
	}
	return &out, nil
}

func scanRun(row Row) (storage.RunRecord, error) {
	var (
		rec                    storage.RunRecord
		runID, runType, userID string
		runIndex, updatedAt    int64
		runData                []byte
	)
	err := row.Scan(&runID, &rec.SessionID, nullString{&runType}, nullString{&userID}, nullInt64{&runIndex}, jsonBytes{&runData}, &rec.CreatedAt, nullInt64{&updatedAt})
	if err != nil {
		return rec, err
	}
	rec.RunType, rec.UserID, rec.RunIndex, rec.UpdatedAt = storage.RunType(runType), userID, &runIndex, updatedAt
	rec.Run = new(run.Output)
	if err := json.Unmarshal(runData, rec.Run); err != nil {
		return rec, fmt.Errorf("decode run %s: %w", runID, err)
	}
	return rec, nil
}

// TouchRun implements [storage.RunToucher].
func (s *Store) TouchRun(ctx context.Context, runID string) (bool, error) {
	var touched int64
	err := s.db.InTx(ctx, func(tx Conn) error {
		var err error
		touched, err = tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET updated_at = ? WHERE run_id = ? AND status = ?", s.tables.runs),
			s.nowSeconds(), runID, string(run.StatusRunning))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("touch run %s: %w", runID, err)
	}
	return touched > 0, nil
}
