package migrate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/migrate"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// database is one empty database of one dialect, reachable both through raw
// SQL (to lay out an old schema) and through the adapter.
type database struct {
	// exec runs raw SQL with {{s}} standing for the schema prefix and
	// {{json}} for the JSON column type.
	exec func(t *testing.T, query string, args ...any)
	// query returns the first column of every row.
	query func(t *testing.T, query string, args ...any) []string
	// open opens the adapter; skipCheck opens whatever the schema.
	open func(t *testing.T, skipCheck bool) (storage.Store, error)
}

func sqliteDatabase(t *testing.T) database {
	path := filepath.Join(t.TempDir(), "agnogo.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	expand := strings.NewReplacer("{{s}}", "", "{{json}}", "JSON").Replace
	return database{
		exec: func(t *testing.T, query string, args ...any) {
			_, err := raw.Exec(expand(query), args...)
			require.NoError(t, err)
		},
		query: func(t *testing.T, query string, args ...any) []string {
			rows, err := raw.Query(expand(query), args...)
			require.NoError(t, err)
			defer rows.Close()
			var out []string
			for rows.Next() {
				var v sql.NullString
				require.NoError(t, rows.Scan(&v))
				out = append(out, v.String)
			}
			require.NoError(t, rows.Err())
			return out
		},
		open: func(t *testing.T, skipCheck bool) (storage.Store, error) {
			store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, SkipSchemaCheck: skipCheck})
			if err == nil {
				t.Cleanup(func() { store.Close() })
			}
			return store, err
		},
	}
}

func postgresDatabase(t *testing.T) database {
	url := testdb.PostgresURL(t)
	schema := testdb.UniqueName(t, "mig")
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	expand := strings.NewReplacer("{{s}}", schema+".", "{{json}}", "JSONB").Replace
	rebind := func(q string) string {
		for n := 1; strings.Contains(q, "?"); n++ {
			q = strings.Replace(q, "?", fmt.Sprintf("$%d", n), 1)
		}
		return q
	}
	return database{
		exec: func(t *testing.T, query string, args ...any) {
			_, err := conn.Exec(t.Context(), rebind(expand(query)), args...)
			require.NoError(t, err)
		},
		query: func(t *testing.T, query string, args ...any) []string {
			rows, err := conn.Query(t.Context(), rebind(expand(query)), args...)
			require.NoError(t, err)
			defer rows.Close()
			var out []string
			for rows.Next() {
				values, err := rows.Values()
				require.NoError(t, err)
				if values[0] == nil {
					out = append(out, "")
					continue
				}
				out = append(out, fmt.Sprint(values[0]))
			}
			require.NoError(t, rows.Err())
			return out
		},
		open: func(t *testing.T, skipCheck bool) (storage.Store, error) {
			store, err := postgres.Open(t.Context(), postgres.Config{URL: url, Schema: schema, SkipSchemaCheck: skipCheck})
			if err == nil {
				t.Cleanup(func() { store.Close() })
			}
			return store, err
		},
	}
}

// forEachDialect runs test against SQLite and Postgres.
func forEachDialect(t *testing.T, test func(t *testing.T, db database)) {
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); test(t, sqliteDatabase(t)) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); test(t, postgresDatabase(t)) })
}

func driver(t *testing.T, db database) migrate.Driver {
	t.Helper()
	store, err := db.open(t, true)
	require.NoError(t, err)
	return store.(migrate.Driver)
}

// v2Schema is the layout Agno 2.x wrote: runs embedded in the session row,
// metrics unique per (date, period) with no user_id, memories without
// created_at/feedback, and no version stamps.
const v2Schema = `
CREATE TABLE {{s}}agno_sessions (session_id VARCHAR PRIMARY KEY, session_type VARCHAR NOT NULL, agent_id VARCHAR, team_id VARCHAR,
	workflow_id VARCHAR, user_id VARCHAR, session_data {{json}}, agent_data {{json}}, team_data {{json}}, workflow_data {{json}},
	metadata {{json}}, runs {{json}}, summary {{json}}, created_at BIGINT NOT NULL, updated_at BIGINT);
CREATE TABLE {{s}}agno_memories (memory_id VARCHAR PRIMARY KEY, memory {{json}} NOT NULL, input VARCHAR, agent_id VARCHAR,
	team_id VARCHAR, user_id VARCHAR, topics {{json}}, updated_at BIGINT);
CREATE TABLE {{s}}agno_metrics (id VARCHAR PRIMARY KEY, agent_runs_count BIGINT, team_runs_count BIGINT, workflow_runs_count BIGINT,
	agent_sessions_count BIGINT, team_sessions_count BIGINT, workflow_sessions_count BIGINT, users_count BIGINT,
	token_metrics {{json}}, model_metrics {{json}}, date DATE NOT NULL, aggregation_period VARCHAR NOT NULL, created_at BIGINT NOT NULL,
	updated_at BIGINT, completed BOOLEAN, CONSTRAINT uq_metrics_date_period UNIQUE (date, aggregation_period))`

// legacySession is a v2 session and the runs its blob holds, in order.
type legacySession struct {
	id, user string
	runIDs   []string
}

var legacySessions = []legacySession{
	{id: "s-alice", user: "alice", runIDs: []string{"r-a3", "r-a1", "r-a2"}}, // blob order, not id order
	{id: "s-bob", user: "bob", runIDs: []string{"r-b1"}},
	{id: "s-empty", user: "carol"},
}

func seedV2(t *testing.T, db database) {
	for _, stmt := range strings.Split(v2Schema, ";") {
		db.exec(t, stmt)
	}
	for _, s := range legacySessions {
		var blob []map[string]any
		for i, id := range s.runIDs {
			blob = append(blob, map[string]any{"run_id": id, "agent_id": "agent", "session_id": s.id, "status": "COMPLETED",
				"content": "answer " + id, "created_at": 1700000000 + i, "legacy_only_field": "kept"})
		}
		doc, err := json.Marshal(blob)
		require.NoError(t, err)
		if blob == nil {
			doc = []byte("[]")
		}
		db.exec(t, `INSERT INTO {{s}}agno_sessions (session_id, session_type, agent_id, user_id, session_data, runs, created_at)
			VALUES (?, 'agent', 'agent', ?, '{"session_name":"legacy"}', ?, 1700000000)`, s.id, s.user, string(doc))
	}
	db.exec(t, `INSERT INTO {{s}}agno_memories (memory_id, memory, user_id, topics, updated_at) VALUES ('m1', '"likes tea"', 'alice', '["drinks"]', 1700000000)`)
	db.exec(t, `INSERT INTO {{s}}agno_metrics (id, agent_runs_count, token_metrics, model_metrics, date, aggregation_period, created_at, completed)
		VALUES ('day1', 4, '{}', '{}', '2026-01-02', 'daily', 1700000000, TRUE)`)
}

func stamps(t *testing.T, db database) map[string]string {
	rows := db.query(t, "SELECT table_name || '=' || version FROM {{s}}agno_schema_versions")
	out := map[string]string{}
	for _, row := range rows {
		name, version, _ := strings.Cut(row, "=")
		out[name] = version
	}
	return out
}

var currentStamps = map[string]string{
	"agno_sessions": "3.0.0", "agno_runs": "3.0.0", "agno_memories": "3.0.0", "agno_metrics": "3.0.0", "agno_transcripts": "3.1.0", "agno_tool_results": "3.0.0",
	"agno_traces": "3.0.0", "agno_spans": "3.0.0", "agno_schedules": "3.0.0", "agno_schedule_runs": "3.0.0", "agno_approvals": "3.0.0",
	"agno_service_accounts": "3.0.0",
}

func TestUpCreatesEmptyDatabase(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		d := driver(t, db)
		reports, err := migrate.Up(t.Context(), d, migrate.Options{})
		require.NoError(t, err)
		require.Len(t, reports, len(currentStamps))
		for _, r := range reports {
			require.Equal(t, migrate.ActionCreated, r.Action, r.Table)
		}
		require.Equal(t, currentStamps, stamps(t, db))

		again, err := migrate.Up(t.Context(), d, migrate.Options{})
		require.NoError(t, err)
		for _, r := range again {
			require.Equal(t, migrate.ActionUpToDate, r.Action, r.Table)
		}
		pending, err := migrate.Pending(t.Context(), d)
		require.NoError(t, err)
		require.Empty(t, pending)
	})
}

func TestUpImportsLegacyRunsOnceInOrder(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		seedV2(t, db)
		_, err := db.open(t, false)
		require.ErrorIs(t, err, storage.ErrMigrationRequired, "an un-migrated database must be refused")
		require.ErrorContains(t, err, "agnogo migrate")

		d := driver(t, db)
		var progress []migrate.TableReport
		reports, err := migrate.Up(t.Context(), d, migrate.Options{Progress: func(r migrate.TableReport) { progress = append(progress, r) }})
		require.NoError(t, err)
		require.Equal(t, currentStamps, stamps(t, db))
		require.Len(t, progress, 2*len(reports), "progress reports each table as it starts and as it ends")
		byTable := map[string]migrate.TableReport{}
		for _, r := range reports {
			byTable[r.Table] = r
		}
		require.Equal(t, 4, byTable["agno_runs"].ImportedRuns)
		require.Equal(t, migrate.ActionCreated, byTable["agno_runs"].Action)
		require.Equal(t, "2.0.0", byTable["agno_metrics"].From)
		require.Equal(t, migrate.ActionMigrated, byTable["agno_metrics"].Action)

		// A second run imports nothing.
		again, err := migrate.Up(t.Context(), d, migrate.Options{})
		require.NoError(t, err)
		for _, r := range again {
			require.Equal(t, migrate.ActionUpToDate, r.Action, r.Table)
			require.Zero(t, r.ImportedRuns)
		}

		store, err := db.open(t, false)
		require.NoError(t, err, "a migrated database opens")
		ctx := t.Context()
		for _, s := range legacySessions {
			records, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: s.id})
			require.NoError(t, err)
			require.Equal(t, len(s.runIDs), total, "every legacy run is imported exactly once")
			for i, rec := range records {
				require.Equal(t, s.runIDs[i], rec.Run.RunID, "blob order is kept")
				require.EqualValues(t, i, *rec.RunIndex)
				require.Equal(t, s.user, rec.UserID)
				require.Equal(t, run.StatusCompleted, rec.Run.Status)
			}
		}
		// The stored run_data is the blob's JSON, unknown fields included.
		raw := db.query(t, "SELECT run_data FROM {{s}}agno_runs WHERE run_id = 'r-a1'")
		require.Len(t, raw, 1)
		require.Contains(t, raw[0], "legacy_only_field")

		// The legacy column is kept, with its content.
		blobs := db.query(t, "SELECT runs FROM {{s}}agno_sessions WHERE session_id = 's-alice'")
		require.Contains(t, blobs[0], "r-a3")

		// Migrated memories and metrics are usable.
		memory, err := store.GetMemory(ctx, "m1", "alice")
		require.NoError(t, err)
		require.Equal(t, "likes tea", memory.Memory)
		require.Equal(t, []string{""}, db.query(t, "SELECT user_id FROM {{s}}agno_metrics WHERE id = 'day1'"))
		require.Equal(t, []string{"4"}, db.query(t, "SELECT agent_runs_count FROM {{s}}agno_metrics WHERE id = 'day1'"))
	})
}

func TestImportNeverOverwritesNewerRuns(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		seedV2(t, db)
		d := driver(t, db)
		_, err := migrate.Up(t.Context(), d, migrate.Options{})
		require.NoError(t, err)
		store := d.(storage.Store)
		_, err = store.UpsertRun(t.Context(), storage.RunRecord{SessionID: "s-bob", Run: &run.Output{RunID: "r-b1", Content: "edited after migration", Status: run.StatusCompleted}})
		require.NoError(t, err)

		// Forget the runs stamp: the next Up re-runs the import.
		db.exec(t, "DELETE FROM {{s}}agno_schema_versions WHERE table_name = 'agno_runs'")
		reports, err := migrate.Up(t.Context(), d, migrate.Options{})
		require.NoError(t, err)
		for _, r := range reports {
			if r.Table == "agno_runs" {
				require.Equal(t, migrate.ActionMigrated, r.Action)
				require.Zero(t, r.ImportedRuns, "runs already in agno_runs are not imported again")
			}
		}
		rec, err := store.GetRun(t.Context(), "r-b1", "")
		require.NoError(t, err)
		require.Equal(t, "edited after migration", rec.Run.Content)
	})
}

func TestUpStopsAtFailingStep(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		seedV2(t, db)
		// A metrics table without aggregation_period cannot take the 3.0.0
		// key (user_id, date, aggregation_period).
		db.exec(t, "DROP TABLE {{s}}agno_metrics")
		db.exec(t, "CREATE TABLE {{s}}agno_metrics (id VARCHAR PRIMARY KEY, date DATE NOT NULL, created_at BIGINT NOT NULL)")
		d := driver(t, db)
		reports, err := migrate.Up(t.Context(), d, migrate.Options{})
		var stepErr *migrate.StepError
		require.ErrorAs(t, err, &stepErr)
		require.Equal(t, "agno_metrics", stepErr.Table)
		require.Equal(t, "3.0.0", stepErr.Version)
		require.ErrorContains(t, err, "aggregation_period", "the step's own error is reported")

		require.Len(t, reports, 4, "migration stops at the failing table")
		require.Equal(t, "agno_metrics", reports[3].Table)
		require.NotEmpty(t, reports[3].Error)
		got := stamps(t, db)
		require.NotContains(t, got, "agno_metrics", "a failed table is not stamped")
		require.NotContains(t, got, "agno_transcripts", "tables after the failure are not touched")
		require.Equal(t, "3.0.0", got["agno_sessions"], "tables before the failure keep their stamps")
		require.Equal(t, "3.0.0", got["agno_runs"])
		require.Equal(t, []string{"3"}, db.query(t, "SELECT COUNT(*) FROM {{s}}agno_runs WHERE session_id = 's-alice'"))
	})
}

func TestTargetStopsShortOfCurrent(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		seedV2(t, db)
		d := driver(t, db)
		reports, err := migrate.Up(t.Context(), d, migrate.Options{Target: "2.5.0"})
		require.NoError(t, err)
		got := stamps(t, db)
		require.Equal(t, "2.5.0", got["agno_sessions"])
		require.Equal(t, "2.5.0", got["agno_metrics"])
		require.NotContains(t, got, "agno_runs", "the runs table is introduced by 3.0.0")
		for _, r := range reports {
			if r.Table == "agno_runs" {
				require.Equal(t, migrate.ActionSkipped, r.Action)
			}
		}
		_, err = migrate.Up(t.Context(), d, migrate.Options{Target: "not-a-version"})
		require.ErrorIs(t, err, storage.ErrInvalid)

		reports, err = migrate.Up(t.Context(), d, migrate.Options{})
		require.NoError(t, err)
		require.Equal(t, currentStamps, stamps(t, db))
	})
}

func TestCleanupLegacyRunsRefusesUnlessForced(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		seedV2(t, db)
		d := driver(t, db)
		_, err := migrate.Up(t.Context(), d, migrate.Options{})
		require.NoError(t, err)

		dropped, err := migrate.CleanupLegacyRuns(t.Context(), d, false)
		require.ErrorIs(t, err, storage.ErrInvalid)
		require.ErrorContains(t, err, "still hold legacy runs")
		require.False(t, dropped)
		require.Contains(t, db.query(t, "SELECT runs FROM {{s}}agno_sessions WHERE session_id = 's-alice'")[0], "r-a3")

		dropped, err = migrate.CleanupLegacyRuns(t.Context(), d, true)
		require.NoError(t, err)
		require.True(t, dropped)
		dropped, err = migrate.CleanupLegacyRuns(t.Context(), d, true)
		require.NoError(t, err)
		require.False(t, dropped, "nothing left to drop")

		store := d.(storage.Store)
		session, err := store.GetSession(t.Context(), "s-alice", storage.GetSessionOptions{IncludeRuns: true})
		require.NoError(t, err)
		require.Len(t, session.Runs, 3, "runs live on in agno_runs")
	})
}

func TestSessionWriteClearsLegacyBlob(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		seedV2(t, db)
		_, err := migrate.Up(t.Context(), driver(t, db), migrate.Options{})
		require.NoError(t, err)
		store, err := db.open(t, false)
		require.NoError(t, err)
		session, err := store.GetSession(t.Context(), "s-bob", storage.GetSessionOptions{})
		require.NoError(t, err)
		_, err = store.UpsertSession(t.Context(), session)
		require.NoError(t, err)
		require.Equal(t, []string{""}, db.query(t, "SELECT runs FROM {{s}}agno_sessions WHERE session_id = 's-bob'"))
		_, err = migrate.CleanupLegacyRuns(t.Context(), store.(migrate.Driver), false)
		require.ErrorContains(t, err, "2 session(s)", "the untouched sessions still hold their blobs")
	})
}

// TestOpenAddsTraceTables opens a database written before the trace tables
// existed: the new tables are created as it opens (nothing stored
// changes), and migrate then has nothing left to do.
func TestOpenAddsTraceTables(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		_, err := migrate.Up(t.Context(), driver(t, db), migrate.Options{})
		require.NoError(t, err)
		// As an older agnogo left it: no trace tables, no stamps for them.
		db.exec(t, "DROP TABLE {{s}}agno_spans")
		db.exec(t, "DROP TABLE {{s}}agno_traces")
		db.exec(t, "DELETE FROM {{s}}agno_schema_versions WHERE table_name IN ('agno_traces', 'agno_spans')")

		store, err := db.open(t, false)
		require.NoError(t, err, "missing tables are created on open")
		require.NoError(t, store.Close())
		require.Equal(t, currentStamps, stamps(t, db))
		reports, err := migrate.Up(t.Context(), driver(t, db), migrate.Options{})
		require.NoError(t, err)
		for _, r := range reports {
			require.Equal(t, migrate.ActionUpToDate, r.Action, r.Table)
		}
		requireTracesWork(t, db)
	})
}

// TestOpenAddsOwnColumnsToAgnoStampedTables opens a database whose trace
// and schedule-run tables Agno created and stamped at the current version,
// without the columns agnogo adds to them: they are added as it opens.
func TestOpenAddsOwnColumnsToAgnoStampedTables(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		_, err := migrate.Up(t.Context(), driver(t, db), migrate.Options{})
		require.NoError(t, err)
		db.exec(t, "ALTER TABLE {{s}}agno_schedule_runs DROP COLUMN locked_by")
		db.exec(t, "ALTER TABLE {{s}}agno_schedule_runs DROP COLUMN locked_at")
		db.exec(t, "DROP INDEX IF EXISTS {{s}}idx_agno_traces_name_level")
		db.exec(t, "ALTER TABLE {{s}}agno_traces DROP COLUMN name_level")

		store, err := db.open(t, false)
		require.NoError(t, err)
		require.NoError(t, store.Close())
		require.Equal(t, currentStamps, stamps(t, db))
		require.Equal(t, []string{"0"}, db.query(t, "SELECT COUNT(*) FROM {{s}}agno_schedule_runs WHERE locked_by IS NULL AND locked_at IS NULL"))
		requireTracesWork(t, db)
	})
}

// TestUpAddsNameLevelToAgnoTraces migrates trace tables Agno created, which
// lack agnogo's name_level column.
func TestUpAddsNameLevelToAgnoTraces(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		db.exec(t, `CREATE TABLE {{s}}agno_traces (trace_id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, status VARCHAR NOT NULL,
	start_time VARCHAR NOT NULL, end_time VARCHAR NOT NULL, duration_ms BIGINT NOT NULL, run_id VARCHAR, session_id VARCHAR,
	user_id VARCHAR, agent_id VARCHAR, team_id VARCHAR, workflow_id VARCHAR, created_at VARCHAR NOT NULL)`)
		db.exec(t, `INSERT INTO {{s}}agno_traces (trace_id, name, status, start_time, end_time, duration_ms, created_at)
	VALUES ('agno', 'Agent.run', 'OK', '2026-12-02T14:04:36.123456+00:00', '2026-12-02T14:04:36.223456+00:00', 100, '2026-12-02T14:04:37+00:00')`)
		reports, err := migrate.Up(t.Context(), driver(t, db), migrate.Options{})
		require.NoError(t, err)
		for _, r := range reports {
			if r.Table == "agno_traces" {
				require.Equal(t, migrate.ActionMigrated, r.Action)
				require.Equal(t, []string{"3.0.0"}, r.Steps)
			}
		}
		require.Equal(t, currentStamps, stamps(t, db))
		require.Equal(t, []string{"0"}, db.query(t, "SELECT name_level FROM {{s}}agno_traces WHERE trace_id = 'agno'"))
		store, err := db.open(t, false)
		require.NoError(t, err)
		tr, _, err := store.(storage.TraceStore).GetTrace(t.Context(), "agno")
		require.NoError(t, err, "Agno's row reads back")
		require.EqualValues(t, 100, tr.DurationMS)
		requireTracesWork(t, db)
	})
}

// requireTracesWork writes and reads a trace through the adapter.
func requireTracesWork(t *testing.T, db database) {
	t.Helper()
	store, err := db.open(t, false)
	require.NoError(t, err, "a migrated database opens")
	traces := store.(storage.TraceStore)
	start := time.Date(2026, 12, 2, 14, 4, 36, 0, time.UTC)
	require.NoError(t, traces.WriteTraces(t.Context(), []storage.TraceWrite{{
		Trace: storage.Trace{TraceID: "t1", Name: "Agent.run", Status: "OK", StartTime: start, EndTime: start.Add(time.Second)},
		Spans: []storage.Span{{SpanID: "s1", Name: "Agent.run", StartTime: start, EndTime: start.Add(time.Second)}},
	}}))
	tr, spans, err := traces.GetTrace(t.Context(), "t1")
	require.NoError(t, err)
	require.EqualValues(t, 1000, tr.DurationMS)
	require.Len(t, spans, 1)
}

// agnoSchedulerTables is the scheduler's tables as Agno created them: no
// lease columns on the runs, which agnogo adds.
const agnoSchedulerTables = `
CREATE TABLE {{s}}agno_schedules (id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, description TEXT, method VARCHAR, endpoint VARCHAR,
	payload {{json}}, cron_expr VARCHAR, timezone VARCHAR, timeout_seconds BIGINT, max_retries BIGINT, retry_delay_seconds BIGINT,
	enabled BOOLEAN DEFAULT TRUE, next_run_at BIGINT, locked_by VARCHAR, locked_at BIGINT, user_id VARCHAR, managed_by VARCHAR,
	target_type VARCHAR, target_id VARCHAR, created_by_run_id VARCHAR, created_by_session_id VARCHAR, updated_by_run_id VARCHAR,
	updated_by_session_id VARCHAR, disabled_reason VARCHAR, created_at BIGINT NOT NULL, updated_at BIGINT);
CREATE TABLE {{s}}agno_schedule_runs (id VARCHAR PRIMARY KEY, schedule_id VARCHAR NOT NULL REFERENCES {{s}}agno_schedules (id) ON DELETE CASCADE,
	attempt BIGINT, triggered_at BIGINT, completed_at BIGINT, status VARCHAR, status_code BIGINT, run_id VARCHAR, session_id VARCHAR,
	error TEXT, input {{json}}, output {{json}}, requirements {{json}}, user_id VARCHAR, created_at BIGINT NOT NULL)`

// TestUpAddsLeaseColumnsToAgnoScheduleRuns migrates scheduler tables Agno
// created: the runs table gets agnogo's lease columns, and Agno's rows
// read back and can be leased.
func TestUpAddsLeaseColumnsToAgnoScheduleRuns(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		for _, stmt := range strings.Split(agnoSchedulerTables, ";") {
			db.exec(t, stmt)
		}
		db.exec(t, `INSERT INTO {{s}}agno_schedules (id, name, method, endpoint, payload, cron_expr, timezone, enabled, next_run_at, user_id, created_at)
	VALUES ('s1', 'morning', 'POST', '/agents/a/runs', '{"message":"hi"}', '0 9 * * *', 'UTC', TRUE, 1900000000, 'alice', 1800000000)`)
		db.exec(t, `INSERT INTO {{s}}agno_schedule_runs (id, schedule_id, attempt, triggered_at, status, user_id, created_at)
	VALUES ('r1', 's1', 1, 1900000000, 'running', 'alice', 1900000000)`)
		reports, err := migrate.Up(t.Context(), driver(t, db), migrate.Options{})
		require.NoError(t, err)
		for _, r := range reports {
			if r.Table == "agno_schedule_runs" {
				require.Equal(t, migrate.ActionMigrated, r.Action)
				require.Equal(t, []string{"3.0.0"}, r.Steps)
			}
		}
		require.Equal(t, currentStamps, stamps(t, db))

		store, err := db.open(t, false)
		require.NoError(t, err, "a migrated database opens")
		schedules := store.(storage.ScheduleStore)
		sched, err := schedules.GetSchedule(t.Context(), "s1", "alice")
		require.NoError(t, err, "Agno's schedule reads back")
		require.True(t, sched.Enabled)
		require.Equal(t, "hi", sched.Payload["message"])
		claimed, err := schedules.ClaimScheduleRuns(t.Context(), storage.ScheduleRunClaim{Worker: "w1", Now: 1900000010, StaleBefore: 1899999700})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "Agno's running attempt is leased")
		require.Equal(t, "w1", claimed[0].LockedBy)
		_, err = schedules.CreateSchedule(t.Context(), &storage.Schedule{Name: "morning", UserID: "alice", Method: "GET", Endpoint: "/x", CronExpr: "* * * * *"})
		require.ErrorIs(t, err, storage.ErrConflict, "the migrated table keeps names unique per owner")
	})
}

// TestUpRefusesDuplicateScheduleNames migrates a schedules table Agno 2.x
// left with one owner's name used twice: the migration stops and names it
// rather than pick which schedule to rename.
func TestUpRefusesDuplicateScheduleNames(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db database) {
		db.exec(t, `CREATE TABLE {{s}}agno_schedules (id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, description TEXT, method VARCHAR,
	endpoint VARCHAR, payload {{json}}, cron_expr VARCHAR, timezone VARCHAR, timeout_seconds BIGINT, max_retries BIGINT,
	retry_delay_seconds BIGINT, enabled BOOLEAN DEFAULT TRUE, next_run_at BIGINT, locked_by VARCHAR, locked_at BIGINT,
	created_at BIGINT NOT NULL, updated_at BIGINT)`)
		for _, id := range []string{"s1", "s2"} {
			db.exec(t, "INSERT INTO {{s}}agno_schedules (id, name, method, endpoint, cron_expr, timezone, created_at) VALUES (?, 'twice', 'GET', '/x', '* * * * *', 'UTC', 1)", id)
		}
		_, err := migrate.Up(t.Context(), driver(t, db), migrate.Options{})
		var stepErr *migrate.StepError
		require.ErrorAs(t, err, &stepErr)
		require.Equal(t, "agno_schedules", stepErr.Table)
		require.ErrorContains(t, err, "'twice'")
		require.NotContains(t, stamps(t, db), "agno_schedules", "a refused table is not stamped")

		db.exec(t, "UPDATE {{s}}agno_schedules SET name = 'once' WHERE id = 's2'")
		_, err = migrate.Up(t.Context(), driver(t, db), migrate.Options{})
		require.NoError(t, err, "renamed, the table migrates")
		require.Equal(t, currentStamps, stamps(t, db))
		require.Equal(t, []string{""}, db.query(t, "SELECT user_id FROM {{s}}agno_schedules WHERE id = 's1'"), "2.x schedules get an owner column, unowned")
	})
}
