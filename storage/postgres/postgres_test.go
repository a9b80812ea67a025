package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/storagetest"
)

// openTemp opens a store in a schema of its own, dropped when the test ends.
func openTemp(tb testing.TB) (*Store, Config) {
	tb.Helper()
	cfg := Config{URL: testdb.PostgresURL(tb), Schema: testdb.UniqueName(tb, "agnogo")}
	store, err := Open(context.Background(), cfg)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		require.NoError(tb, store.Close())
		dropSchema(tb, cfg)
	})
	return store, cfg
}

func dropSchema(tb testing.TB, cfg Config) {
	conn, err := pgx.Connect(context.Background(), cfg.URL)
	require.NoError(tb, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), fmt.Sprintf("DROP SCHEMA IF EXISTS %q CASCADE", cfg.Schema))
	require.NoError(tb, err)
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		store, _ := openTemp(t)
		return store
	})
}

// TestReplicaConformance runs the races of two replicas: two stores, each
// with its own pool, over one schema.
func TestReplicaConformance(t *testing.T) {
	storagetest.RunReplicas(t, func(t *testing.T) (storage.Store, storage.Store) {
		first, cfg := openTemp(t)
		second, err := Open(t.Context(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, second.Close()) })
		return first, second
	})
}

// TestReplicasShareOneSession writes runs into one session from two pools
// (as two replicas would): run_index values stay distinct.
func TestReplicasShareOneSession(t *testing.T) {
	first, cfg := openTemp(t)
	second, err := Open(t.Context(), cfg)
	require.NoError(t, err)
	defer second.Close()
	ctx := t.Context()
	_, err = first.UpsertSession(ctx, &storage.Session{SessionID: "s", SessionType: storage.SessionTypeAgent})
	require.NoError(t, err)

	const total = 60
	var wg sync.WaitGroup
	errs := make(chan error, total)
	for i := range total {
		store := first
		if i%2 == 1 {
			store = second
		}
		wg.Go(func() {
			_, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: "s", Run: &run.Output{RunID: fmt.Sprintf("r%03d", i), Status: run.StatusCompleted}})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	runs, count, err := second.GetRuns(ctx, storage.RunQuery{SessionID: "s"})
	require.NoError(t, err)
	require.Equal(t, total, count)
	for i, rec := range runs {
		require.EqualValues(t, i, *rec.RunIndex, "run_index is a permutation of 0..n-1")
	}
}

// TestSchemaDefaultsToAI opens a brand-new database with no schema set: the
// tables land in schema ai, as Agno puts them.
func TestSchemaDefaultsToAI(t *testing.T) {
	adminURL := testdb.PostgresURL(t)
	name := testdb.UniqueName(t, "agnogo_db")
	admin, err := pgx.Connect(t.Context(), adminURL)
	require.NoError(t, err)
	defer admin.Close(context.Background())
	_, err = admin.Exec(t.Context(), "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })

	cfg, err := pgx.ParseConfig(adminURL)
	require.NoError(t, err)
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	store, err := Open(t.Context(), Config{URL: url})
	require.NoError(t, err)
	_, err = store.UpsertSession(t.Context(), &storage.Session{SessionID: "s1", SessionType: storage.SessionTypeAgent})
	require.NoError(t, err)
	require.NoError(t, store.Close())

	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var sessions int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT COUNT(*) FROM ai.agno_sessions").Scan(&sessions))
	require.Equal(t, 1, sessions)
}

func TestMigrateCommandHidesPassword(t *testing.T) {
	require.Equal(t, "agnogo migrate --db postgres://u@h:5432/db", migrateCommand("postgres://u:secret@h:5432/db", "ai"))
	require.Equal(t, "agnogo migrate --db postgres://u@h:5432/db --schema tenant", migrateCommand("postgres://u@h:5432/db", "tenant"))
}

func TestOpenRejectsBadSchemaName(t *testing.T) {
	_, err := Open(t.Context(), Config{URL: testdb.PostgresURL(t), Schema: `x"; DROP TABLE y; --`})
	require.ErrorIs(t, err, storage.ErrInvalid)
}

func TestRebind(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"a = ? AND b = ?", "a = $1 AND b = $2"},
		{"x = '?' AND y = ?", "x = '?' AND y = $1"},
		{`"we?ird" = ?`, `"we?ird" = $1`},
	}
	b := &binds{}
	for range 2 { // turned, then remembered
		for _, tt := range tests {
			require.Equal(t, tt.want, rebind(tt.in), tt.in)
			require.Equal(t, tt.want, b.rebind(tt.in), tt.in)
		}
	}
	require.EqualValues(t, len(tests), b.n.Load(), "each statement is remembered once")
	var nilBinds *binds
	require.Equal(t, "a = $1", nilBinds.rebind("a = ?"))
}

// TestBindsStayBounded: statements whose text varies (an IN list of any
// length) are still turned right once the memory is full, and the memory
// does not grow past maxBinds.
func TestBindsStayBounded(t *testing.T) {
	b := &binds{}
	for n := 1; n <= maxBinds+100; n++ {
		query := "id IN (" + strings.Repeat("?, ", n-1) + "?)"
		got := b.rebind(query)
		require.Equal(t, fmt.Sprintf("$%d)", n), got[strings.LastIndex(got, "$"):])
	}
	require.EqualValues(t, maxBinds, b.n.Load())
	count := 0
	b.turned.Range(func(any, any) bool { count++; return true })
	require.Equal(t, maxBinds, count)
}

func TestMetricsAgnoRows(t *testing.T) {
	store, cfg := openTemp(t)
	conn, err := pgx.Connect(t.Context(), cfg.URL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	storagetest.AgnoMetricsRows(t, store, func(t *testing.T, row storagetest.AgnoMetricsRow) {
		_, err := conn.Exec(t.Context(), fmt.Sprintf(`INSERT INTO %q.agno_metrics (id, agent_runs_count, agent_sessions_count, users_count, token_metrics, model_metrics,
	date, aggregation_period, user_id, created_at, updated_at, completed) VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::date, 'daily', $8, 1, 1, TRUE)`, cfg.Schema),
			"agno-"+row.UserID, row.AgentRuns, row.AgentSessions, row.Users, row.TokenMetrics, row.ModelMetrics, row.Date, row.UserID)
		require.NoError(t, err)
	})
}
