package agentos_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// The metrics benchmarks serve GET /metrics over a database holding many
// runs, written straight into agno_sessions and agno_runs in one
// transaction (saving 100,000 runs one by one would take minutes), the
// daily aggregates then computed by POST /metrics/refresh. Each answer is
// checked to count every seeded run.

// metricsSeed describes the seeded history: sessions of runsPerSession
// runs each, owned by metricsUsers users in turn, spread evenly over
// metricsDays days.
const (
	runsPerSession = 100
	metricsUsers   = 10
	metricsDays    = 30
	// seedTokens is each seeded run's total_tokens.
	seedTokens = 30
)

// metricsSeedStart is the first seeded day.
var metricsSeedStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// seedRow is one seeded run: its row's columns.
type seedRow struct {
	runID, sessionID, userID string
	runIndex, createdAt      int64
	runData                  []byte
}

// seedRuns returns n runs (about 1 KB of run_data each, with messages and
// metrics) and the sessions that hold them, each session's runs created
// the same day.
func seedRuns(b *testing.B, n int) (sessions []seedRow, runs []seedRow) {
	b.Helper()
	sessionCount := (n + runsPerSession - 1) / runsPerSession
	daySeconds := int64(24 * time.Hour / time.Second)
	for s := range sessionCount {
		sessionID, userID := fmt.Sprintf("session-%05d", s), fmt.Sprintf("user-%d", s%metricsUsers)
		created := metricsSeedStart.Unix() + int64(s%metricsDays)*daySeconds + int64(s)
		sessions = append(sessions, seedRow{sessionID: sessionID, userID: userID, createdAt: created})
		for i := 0; i < runsPerSession && len(runs) < n; i++ {
			runID := fmt.Sprintf("run-%05d-%03d", s, i)
			out := &run.Output{
				RunID: runID, SessionID: sessionID, AgentID: "assistant", UserID: userID, Status: run.StatusCompleted,
				Model: "gpt-5-mini", ModelProvider: "OpenAI", CreatedAt: created + int64(i),
				Content: "The capital of France is Paris. It has been the capital since the 10th century and is home to about two million people.",
				Messages: []*run.Message{
					{Role: "user", Content: "What is the capital of France, and since when?"},
					{Role: "assistant", Content: "The capital of France is Paris. It has been the capital since the 10th century and is home to about two million people."},
				},
				Metrics: &run.RunMetrics{Metrics: run.Metrics{InputTokens: 20, OutputTokens: 10, TotalTokens: seedTokens}, Duration: 0.8},
			}
			data, err := json.Marshal(out)
			if err != nil {
				b.Fatal(err)
			}
			runs = append(runs, seedRow{runID: runID, sessionID: sessionID, userID: userID, runIndex: int64(i), createdAt: out.CreatedAt, runData: data})
		}
	}
	return sessions, runs
}

// seedSQLite writes the seed into the SQLite file at path in one
// transaction.
func seedSQLite(b *testing.B, path string, sessions, runs []seedRow) {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	insert := func(query string, rows []seedRow, args func(seedRow) []any) {
		stmt, err := tx.Prepare(query)
		if err != nil {
			b.Fatal(err)
		}
		defer stmt.Close()
		for _, row := range rows {
			if _, err := stmt.Exec(args(row)...); err != nil {
				b.Fatal(err)
			}
		}
	}
	insert("INSERT INTO agno_sessions (session_id, session_type, agent_id, user_id, created_at, updated_at) VALUES (?, 'agent', 'assistant', ?, ?, ?)",
		sessions, func(s seedRow) []any { return []any{s.sessionID, s.userID, s.createdAt, s.createdAt} })
	insert(`INSERT INTO agno_runs (run_id, session_id, run_type, agent_id, user_id, status, run_index, run_data, created_at, updated_at)
VALUES (?, ?, 'agent', 'assistant', ?, 'COMPLETED', ?, ?, ?, ?)`,
		runs, func(r seedRow) []any {
			return []any{r.runID, r.sessionID, r.userID, r.runIndex, string(r.runData), r.createdAt, r.createdAt}
		})
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// seedPostgres copies the seed into the schema's tables in one
// transaction.
func seedPostgres(b *testing.B, url, schema string, sessions, runs []seedRow) {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		sessionRows := make([][]any, len(sessions))
		for i, s := range sessions {
			sessionRows[i] = []any{s.sessionID, "agent", "assistant", s.userID, s.createdAt, s.createdAt}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{schema, "agno_sessions"},
			[]string{"session_id", "session_type", "agent_id", "user_id", "created_at", "updated_at"}, pgx.CopyFromRows(sessionRows)); err != nil {
			return err
		}
		runRows := make([][]any, len(runs))
		for i, r := range runs {
			runRows[i] = []any{r.runID, r.sessionID, "agent", "assistant", r.userID, "COMPLETED", r.runIndex, string(r.runData), r.createdAt, r.createdAt}
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{schema, "agno_runs"},
			[]string{"run_id", "session_id", "run_type", "agent_id", "user_id", "status", "run_index", "run_data", "created_at", "updated_at"}, pgx.CopyFromRows(runRows))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// openMetricsSQLite opens a SQLite store holding the seed.
func openMetricsSQLite(b *testing.B, n int) storage.Store {
	path := filepath.Join(b.TempDir(), "metrics.db")
	store, err := sqlite.Open(b.Context(), sqlite.Config{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	sessions, runs := seedRuns(b, n)
	seedSQLite(b, path, sessions, runs)
	return store
}

// openMetricsPostgres opens a store in a schema of its own on the test
// server, holding the seed. Without a server it skips, or fails when
// CI=true.
func openMetricsPostgres(b *testing.B, n int) storage.Store {
	url := testdb.PostgresURL(b)
	schema := testdb.UniqueName(b, "agnogo_metrics")
	store, err := postgres.Open(b.Context(), postgres.Config{URL: url, Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		store.Close()
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), fmt.Sprintf("DROP SCHEMA IF EXISTS %q CASCADE", schema)); err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sessions, runs := seedRuns(b, n)
	seedPostgres(b, url, schema, sessions, runs)
	return store
}

// withoutDailyAggregates hides a store's daily aggregates, so the server
// computes the days from the runs, as it did before it had them.
type withoutDailyAggregates struct{ storage.Store }

// BenchmarkGetMetrics measures GET /metrics (every day, every user) over
// 10,000 and 100,000 stored runs: "daily" reads the daily aggregates,
// "on-the-fly" computes the days from the runs as a store without
// aggregates needs; "refresh" is POST /metrics/refresh of the 31 days that
// hold every seeded run. One op is one request served by the whole
// handler (routing, auth, JSON).
func BenchmarkGetMetrics(b *testing.B) {
	for _, db := range []struct {
		name string
		open func(b *testing.B, n int) storage.Store
	}{
		{"sqlite", openMetricsSQLite},
		{"postgres", openMetricsPostgres},
	} {
		b.Run(db.name, func(b *testing.B) {
			for _, n := range []int{10_000, 100_000} {
				b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
					store := db.open(b, n)
					daily, err := agentos.New(agentos.Config{Store: store})
					if err != nil {
						b.Fatal(err)
					}
					refresh := fmt.Sprintf("/metrics/refresh?starting_date=%s&ending_date=%s",
						metricsSeedStart.Format(time.DateOnly), metricsSeedStart.AddDate(0, 0, storage.MaxMetricsRefreshDays-1).Format(time.DateOnly))
					serveMetrics(b, daily, http.MethodPost, refresh, n, true)
					b.Run("daily", func(b *testing.B) { benchMetrics(b, daily, http.MethodGet, "/metrics", n) })
					b.Run("refresh", func(b *testing.B) { benchMetrics(b, daily, http.MethodPost, refresh, n) })
					onTheFly, err := agentos.New(agentos.Config{Store: withoutDailyAggregates{store}})
					if err != nil {
						b.Fatal(err)
					}
					b.Run("on-the-fly", func(b *testing.B) { benchMetrics(b, onTheFly, http.MethodGet, "/metrics", n) })
				})
			}
		})
	}
}

// benchMetrics serves method path b.N times.
func benchMetrics(b *testing.B, handler http.Handler, method, path string, runs int) {
	b.ReportAllocs()
	for b.Loop() {
		serveMetrics(b, handler, method, path, runs, method == http.MethodPost)
	}
}

// serveMetrics serves one metrics request and checks that its days count
// every seeded run and session, and their tokens.
func serveMetrics(b *testing.B, handler http.Handler, method, path string, runs int, bareList bool) {
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequestWithContext(b.Context(), method, path, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
	var days []struct {
		AgentRuns     int `json:"agent_runs_count"`
		AgentSessions int `json:"agent_sessions_count"`
		TokenMetrics  struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"token_metrics"`
	}
	var err error
	if bareList {
		err = json.Unmarshal(rec.Body.Bytes(), &days)
	} else {
		var resp struct {
			Metrics json.RawMessage `json:"metrics"`
		}
		if err = json.Unmarshal(rec.Body.Bytes(), &resp); err == nil {
			err = json.Unmarshal(resp.Metrics, &days)
		}
	}
	if err != nil {
		b.Fatalf("%s %s: %v", method, path, err)
	}
	var gotRuns, gotSessions, gotTokens int
	for _, d := range days {
		gotRuns, gotSessions, gotTokens = gotRuns+d.AgentRuns, gotSessions+d.AgentSessions, gotTokens+d.TokenMetrics.TotalTokens
	}
	wantSessions := (runs + runsPerSession - 1) / runsPerSession
	if len(days) != metricsDays || gotRuns != runs || gotSessions != wantSessions || gotTokens != runs*seedTokens {
		b.Fatalf("%s %s: %d days, %d runs, %d sessions, %d tokens; want %d, %d, %d, %d",
			method, path, len(days), gotRuns, gotSessions, gotTokens, metricsDays, runs, wantSessions, runs*seedTokens)
	}
}
