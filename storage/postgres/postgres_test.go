package postgres

import (
	"context"
	"fmt"
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

func TestSchemaDefaultsToAI(t *testing.T) {
	url := testdb.PostgresURL(t)
	store, err := Open(t.Context(), Config{URL: url, SkipSchemaCheck: true})
	require.NoError(t, err)
	defer store.Close()
	state, err := store.TableState(t.Context(), "agno_sessions")
	require.NoError(t, err)
	_ = state // the ai schema may or may not hold tables on a shared server; the probe must work
	require.Contains(t, migrateCommand(url, "ai"), "agnogo migrate --db postgres://")
	require.NotContains(t, migrateCommand("postgres://u:secret@h:5432/db", "ai"), "secret", "the password never appears in messages")
	require.Contains(t, migrateCommand("postgres://u@h:5432/db", "tenant"), "--schema tenant")
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
	for _, tt := range tests {
		require.Equal(t, tt.want, rebind(tt.in), tt.in)
	}
}
