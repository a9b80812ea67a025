package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// HotQuery is a statement that a run turn or an AgentOS request runs on
// every call, with its text and arguments exactly as the store passed them
// to the database (before the Postgres adapter numbers its placeholders).
type HotQuery struct {
	// Name names the operation that ran the statement and the statement's
	// place among the operation's.
	Name string
	// SQL is the statement's text.
	SQL string
	// Args are the statement's arguments.
	Args []any
}

// HotFixture names stored rows for [Store.HotQueries] to work on: a
// session owned by UserID that holds the run RunID.
type HotFixture struct {
	SessionID, UserID, RunID string
}

// HotQueries runs the store's operations that a run turn and an AgentOS
// request make on every call (the session's version read, the session and
// run writes, the history, run and session reads and listings, the daily
// metrics write, ...) on the rows f names, and returns every statement they
// ran, so that a test can have the database explain each one (see
// [Store.Explain]). Each operation runs its real code over a connection
// that notes its statements; every transaction is rolled back, so the
// stored rows are left as they were. It is meant for tests.
func (s *Store) HotQueries(ctx context.Context, f HotFixture) ([]HotQuery, error) {
	session, err := s.GetSession(ctx, f.SessionID, storage.GetSessionOptions{UserID: f.UserID})
	if err != nil {
		return nil, fmt.Errorf("hot queries: %w", err)
	}
	now := s.nowSeconds()
	newRun := func(id string, status run.Status) *run.Output {
		return &run.Output{RunID: id, SessionID: f.SessionID, AgentID: "hot-agent", UserID: f.UserID, Status: status, CreatedAt: now,
			Model: "hot-model", ModelProvider: "hot-provider", Metrics: &run.RunMetrics{Metrics: run.Metrics{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}}}
	}
	firstPage := storage.Page{Limit: 20, Page: 1}
	ops := []struct {
		name string
		run  func(ctx context.Context, s *Store) error
	}{
		{"SessionVersion", func(ctx context.Context, s *Store) error {
			_, _, err := s.SessionVersion(ctx, f.SessionID, "", f.RunID)
			return err
		}},
		{"SessionVersion, user-scoped", func(ctx context.Context, s *Store) error {
			_, _, err := s.SessionVersion(ctx, f.SessionID, f.UserID, f.RunID)
			return err
		}},
		{"GetSession", func(ctx context.Context, s *Store) error {
			_, err := s.GetSession(ctx, f.SessionID, storage.GetSessionOptions{})
			return err
		}},
		{"GetSession, user-scoped", func(ctx context.Context, s *Store) error {
			_, err := s.GetSession(ctx, f.SessionID, storage.GetSessionOptions{UserID: f.UserID})
			return err
		}},
		{"HistoryRuns of a new run", func(ctx context.Context, s *Store) error {
			_, err := s.HistoryRuns(ctx, storage.HistoryQuery{SessionID: f.SessionID, UserID: f.UserID, RunID: "hot-new-run", N: 10})
			return err
		}},
		{"HistoryRuns of a stored run", func(ctx context.Context, s *Store) error {
			_, err := s.HistoryRuns(ctx, storage.HistoryQuery{SessionID: f.SessionID, RunID: f.RunID, N: 10})
			return err
		}},
		{"RecordPendingRun", func(ctx context.Context, s *Store) error {
			return s.RecordPendingRun(ctx, session, storage.RunRecord{Run: newRun("hot-pending-run", run.StatusPending)})
		}},
		{"StartRunIn", func(ctx context.Context, s *Store) error {
			return s.db.InTx(ctx, func(tx Conn) error {
				_, err := s.StartRunIn(ctx, tx, session, storage.RunRecord{Run: newRun("hot-started-run", run.StatusRunning)})
				return err
			})
		}},
		{"SaveRun of a new run", func(ctx context.Context, s *Store) error {
			_, _, err := s.SaveRun(ctx, session, storage.RunRecord{Run: newRun("hot-saved-run", run.StatusCompleted)})
			return err
		}},
		{"SaveRun of a stored run, user-scoped", func(ctx context.Context, s *Store) error {
			_, _, err := s.SaveRun(ctx, session, storage.RunRecord{UserID: f.UserID, Run: newRun(f.RunID, run.StatusCompleted)})
			return err
		}},
		{"UpsertRun", func(ctx context.Context, s *Store) error {
			_, err := s.UpsertRun(ctx, storage.RunRecord{Run: newRun(f.RunID, run.StatusError)})
			return err
		}},
		{"UpsertSession", func(ctx context.Context, s *Store) error {
			_, err := s.UpsertSession(ctx, session)
			return err
		}},
		{"TouchRun", func(ctx context.Context, s *Store) error {
			_, err := s.TouchRun(ctx, f.RunID)
			return err
		}},
		{"SetApprovalRunStatus", func(ctx context.Context, s *Store) error {
			return s.SetApprovalRunStatus(ctx, f.RunID, string(run.StatusCompleted), now)
		}},
		{"GetRun", func(ctx context.Context, s *Store) error {
			_, err := s.GetRun(ctx, f.RunID, "")
			return err
		}},
		{"GetRun, user-scoped", func(ctx context.Context, s *Store) error {
			_, err := s.GetRun(ctx, f.RunID, f.UserID)
			return err
		}},
		{"GetRuns of a session", func(ctx context.Context, s *Store) error {
			_, _, err := s.GetRuns(ctx, storage.RunQuery{SessionID: f.SessionID})
			return err
		}},
		{"GetRuns of a session, user-scoped, by status", func(ctx context.Context, s *Store) error {
			_, _, err := s.GetRuns(ctx, storage.RunQuery{SessionID: f.SessionID, UserID: f.UserID, Statuses: []run.Status{run.StatusCompleted}})
			return err
		}},
		{"GetRuns of a session, user-scoped, paged by creation time", func(ctx context.Context, s *Store) error {
			_, _, err := s.GetRuns(ctx, storage.RunQuery{SessionID: f.SessionID, UserID: f.UserID, CreatedAfter: 1, CreatedBefore: now + 1, Page: firstPage})
			return err
		}},
		{"GetRuns of a user", func(ctx context.Context, s *Store) error {
			_, _, err := s.GetRuns(ctx, storage.RunQuery{UserID: f.UserID})
			return err
		}},
		{"GetRuns by status", func(ctx context.Context, s *Store) error {
			_, _, err := s.GetRuns(ctx, storage.RunQuery{Statuses: []run.Status{run.StatusPending, run.StatusRunning}, CreatedBefore: now + 1,
				Page: storage.Page{Limit: 100, Page: 1}})
			return err
		}},
		{"ListSessions of a user", func(ctx context.Context, s *Store) error {
			_, _, err := s.ListSessions(ctx, storage.SessionQuery{UserID: f.UserID, Page: firstPage})
			return err
		}},
		{"ListSessions of a user, one type", func(ctx context.Context, s *Store) error {
			_, _, err := s.ListSessions(ctx, storage.SessionQuery{UserID: f.UserID, Type: storage.SessionTypeAgent, Page: firstPage})
			return err
		}},
		{"ListMemories of a user", func(ctx context.Context, s *Store) error {
			_, _, err := s.ListMemories(ctx, storage.MemoryQuery{UserID: f.UserID, SortBy: "updated_at", SortOrder: storage.SortDesc, Page: firstPage})
			return err
		}},
		{"CountPendingApprovals", func(ctx context.Context, s *Store) error {
			_, err := s.CountPendingApprovals(ctx, f.UserID)
			return err
		}},
		{"daily metrics upsert", func(ctx context.Context, s *Store) error {
			// Postgres runs it when it folds pending rows (see
			// [Store.CompactMetrics]), SQLite on every run write that counts.
			return s.db.InTx(ctx, func(tx Conn) error {
				return s.writeMetrics(ctx, tx, s.stmts.metricsUpsert, metricsKey{f.UserID, epochDay(now)}, aggregationDaily, &metricsDelta{runs: [kinds]int{1}}, false)
			})
		}},
		{"WriteTraces", func(ctx context.Context, s *Store) error {
			at := time.Unix(now, 0)
			const traceID = "0123456789abcdef0123456789abcdef"
			return s.WriteTraces(ctx, []storage.TraceWrite{{
				Trace: storage.Trace{TraceID: traceID, Name: "agent.run", Status: traceStatusOK, StartTime: at, EndTime: at,
					RunID: f.RunID, SessionID: f.SessionID, UserID: f.UserID, AgentID: "hot-agent", CreatedAt: at},
				NameLevel: storage.TraceLevelAgent,
				Spans: []storage.Span{{SpanID: "0123456789abcdef", TraceID: traceID, Name: "agent.run", SpanKind: "INTERNAL",
					StatusCode: traceStatusOK, StartTime: at, EndTime: at, CreatedAt: at}},
			}})
		}},
	}
	if s.dialect == Postgres {
		// About once a second while runs end, in the background.
		ops = append(ops, struct {
			name string
			run  func(ctx context.Context, s *Store) error
		}{"fold of the pending metrics rows", func(ctx context.Context, s *Store) error {
			_, err := s.CompactMetrics(ctx)
			return err
		}})
	}
	var out []HotQuery
	for _, op := range ops {
		rec := &recorder{db: s.db}
		if err := op.run(ctx, s.recordingTo(rec)); err != nil {
			return nil, fmt.Errorf("hot queries: %s: %w", op.name, err)
		}
		if len(rec.ran) == 0 {
			return nil, fmt.Errorf("hot queries: %s ran no statement", op.name)
		}
		for i, q := range rec.ran {
			q.Name = fmt.Sprintf("%s, statement %d of %d", op.name, i+1, len(rec.ran))
			out = append(out, q)
		}
	}
	if err := s.checkHotStatements(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkHotStatements makes sure the operations ran every statement built
// once for the store's hot path (see statements), so that none of them
// goes unexplained when the code paths change.
func (s *Store) checkHotStatements(ran []HotQuery) error {
	want := map[string]string{
		"sessionVersion": s.stmts.sessionVersion, "sessionVersionScoped": s.stmts.sessionVersionScoped,
		"runUpsert": s.stmts.runUpsert, "runUpsertScoped": s.stmts.runUpsertScoped, "runInsert": s.stmts.runInsert,
		"sessionBump": s.stmts.sessionBump, "metricsUpsert": s.stmts.metricsUpsert,
	}
	if s.dialect == Postgres {
		// The run upserts read the stored run in a CTE of their own.
		want["metricsPending"] = s.stmts.metricsPending
	} else {
		want["priorRun"] = s.stmts.priorRun
		want["runInsertCounting"] = s.stmts.runInsertCounting
	}
	for _, q := range ran {
		for name, text := range want {
			if q.SQL == text {
				delete(want, name)
			}
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("hot queries: no operation ran the statements %s", strings.Join(slices.Sorted(maps.Keys(want)), ", "))
	}
	return nil
}

// recordingTo returns a store that runs statements through rec; the copy
// shares everything else with s but its background compactor.
func (s *Store) recordingTo(rec *recorder) *Store {
	c := &Store{db: checkedDB{rec}, dialect: s.dialect, tables: s.tables, now: s.now, newID: s.newID, migrateCommand: s.migrateCommand, stmts: s.stmts}
	c.legacyRunsColumn.Store(s.legacyRunsColumn.Load())
	return c
}

// errRollBack makes a recorder's transaction roll back.
var errRollBack = errors.New("sqlstore: rolled back")

// recorder is a DB that notes every statement run through it and rolls
// back every transaction.
type recorder struct {
	db  DB
	ran []HotQuery
}

func (r *recorder) Reader() Conn { return recordingConn{r.db.Reader(), r} }

func (r *recorder) InTx(ctx context.Context, fn func(tx Conn) error) error {
	err := r.db.InTx(ctx, func(tx Conn) error {
		if err := fn(recordingConn{tx, r}); err != nil {
			return err
		}
		return errRollBack
	})
	if errors.Is(err, errRollBack) {
		return nil
	}
	return err
}

// Close leaves the store's database open.
func (r *recorder) Close() error { return nil }

// recordingConn is a connection of a recorder.
type recordingConn struct {
	conn Conn
	rec  *recorder
}

func (c recordingConn) note(query string, args []any) {
	c.rec.ran = append(c.rec.ran, HotQuery{SQL: query, Args: append([]any(nil), args...)})
}

func (c recordingConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	c.note(query, args)
	return c.conn.Exec(ctx, query, args...)
}

func (c recordingConn) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	c.note(query, args)
	return c.conn.Query(ctx, query, args...)
}

func (c recordingConn) QueryRow(ctx context.Context, query string, args ...any) Row {
	c.note(query, args)
	return c.conn.QueryRow(ctx, query, args...)
}

// Explain returns the plan the database makes for q, without running q.
// On SQLite it is the rows of EXPLAIN QUERY PLAN, one a line, indented by
// depth (SEARCH t USING INDEX …, SCAN t, …). On Postgres it is the JSON of
// EXPLAIN (FORMAT JSON), planned in a transaction with enable_seqscan off:
// a test table is too small for an index to pay, and that setting makes
// the planner use one whenever one can serve the statement, so a Seq Scan
// left in the plan means the statement has no usable index.
func (s *Store) Explain(ctx context.Context, q HotQuery) (string, error) {
	if s.dialect == Postgres {
		var plan []byte
		err := s.db.InTx(ctx, func(tx Conn) error {
			if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+q.SQL, q.Args...).Scan(jsonBytes{&plan}); err != nil {
				return err
			}
			return errRollBack
		})
		if !errors.Is(err, errRollBack) {
			return "", fmt.Errorf("explain %s: %w", q.Name, err)
		}
		return string(plan), nil
	}
	rows, err := s.db.Reader().Query(ctx, "EXPLAIN QUERY PLAN "+q.SQL, q.Args...)
	if err != nil {
		return "", fmt.Errorf("explain %s: %w", q.Name, err)
	}
	defer rows.Close()
	depth := map[int64]int{}
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int64
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return "", fmt.Errorf("explain %s: %w", q.Name, err)
		}
		depth[id] = depth[parent] + 1
		fmt.Fprintf(&plan, "%s%s\n", strings.Repeat("  ", depth[id]-1), detail)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("explain %s: %w", q.Name, err)
	}
	return plan.String(), nil
}

// PlannedQuery is a hot statement with the plan the database makes for it.
type PlannedQuery struct {
	HotQuery
	Plan string
}

// PlanHotQueries stores a small fixture — three sessions each of two users
// and of none, four runs in each (the last still running), a memory per
// user, a pending approval — runs [Store.HotQueries] on one of the
// sessions, makes sure their writes left it as it was, and returns every
// statement with its plan ([Store.Explain]). It is meant for tests.
func (s *Store) PlanHotQueries(ctx context.Context) ([]PlannedQuery, error) {
	f, err := s.seedHotFixture(ctx)
	if err != nil {
		return nil, fmt.Errorf("hot queries: seed: %w", err)
	}
	read := func() (*storage.Session, error) {
		return s.GetSession(ctx, f.SessionID, storage.GetSessionOptions{IncludeRuns: true})
	}
	before, err := read()
	if err != nil {
		return nil, err
	}
	queries, err := s.HotQueries(ctx, f)
	if err != nil {
		return nil, err
	}
	after, err := read()
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(before, after) {
		return nil, errors.New("hot queries: their writes were not rolled back")
	}
	planned := make([]PlannedQuery, 0, len(queries))
	for _, q := range queries {
		plan, err := s.Explain(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("explain %s: %w", q.Name, err)
		}
		planned = append(planned, PlannedQuery{HotQuery: q, Plan: plan})
	}
	return planned, nil
}

// seedHotFixture stores the rows [Store.PlanHotQueries] works on and names
// a session of alice's holding the run the hot queries use.
func (s *Store) seedHotFixture(ctx context.Context) (HotFixture, error) {
	for _, user := range []string{"alice", "bob", ""} {
		for i := range 3 {
			sessionID := fmt.Sprintf("s-%s-%d", user, i)
			_, err := s.UpsertSession(ctx, &storage.Session{SessionID: sessionID, SessionType: storage.SessionTypeAgent, AgentID: "agent", UserID: user})
			if err != nil {
				return HotFixture{}, err
			}
			for j := range 4 {
				status := run.StatusCompleted
				if j == 3 {
					status = run.StatusRunning
				}
				_, err := s.UpsertRun(ctx, storage.RunRecord{SessionID: sessionID, Run: &run.Output{
					RunID: fmt.Sprintf("r-%s-%d-%d", user, i, j), AgentID: "agent", UserID: user, Status: status}})
				if err != nil {
					return HotFixture{}, err
				}
			}
		}
		if user != "" {
			if _, err := s.UpsertMemory(ctx, &storage.Memory{MemoryID: "m-" + user, Memory: "likes tea", UserID: user}); err != nil {
				return HotFixture{}, err
			}
		}
	}
	_, err := s.CreateApproval(ctx, &storage.Approval{ID: "a-alice", RunID: "r-alice-0-3", SessionID: "s-alice-0", UserID: "alice",
		Status: storage.ApprovalPending})
	return HotFixture{SessionID: "s-alice-0", UserID: "alice", RunID: "r-alice-0-1"}, err
}
