package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// TestMetricsWriteNeverWaitsForTheDaysRow: a run that ends while another
// transaction holds its (user, day) metrics row is saved without waiting
// for it: its usage goes into a pending row of its own, which readers count
// at once; CompactMetrics (which the store also runs in the background)
// folds the pending rows into the day's row, and a refresh replaces them.
func TestMetricsWriteNeverWaitsForTheDaysRow(t *testing.T) {
	store, cfg := openTemp(t)
	ctx := t.Context()
	day := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	_, err := store.UpsertSession(ctx, &storage.Session{SessionID: "s", SessionType: storage.SessionTypeAgent, UserID: "alice", CreatedAt: day.Unix()})
	require.NoError(t, err)
	save := func(ctx context.Context, runID string) error {
		_, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: "s", UserID: "alice", CreatedAt: day.Unix() + 60, Run: &run.Output{
			RunID: runID, SessionID: "s", Status: run.StatusCompleted, Model: "m", ModelProvider: "p",
			Metrics: &run.RunMetrics{Metrics: run.Metrics{InputTokens: 10, TotalTokens: 10}},
		}})
		return err
	}
	require.NoError(t, save(ctx, "r-1"))

	conn, err := pgx.Connect(ctx, cfg.URL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	count := func(period string) int {
		t.Helper()
		var n int
		require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf(`SELECT COUNT(*) FROM %q.agno_metrics WHERE aggregation_period LIKE $1`, cfg.Schema), period).Scan(&n))
		return n
	}
	// A compaction takes the rows no other one holds: the background one
	// may be folding them at the same moment.
	compacted := func(msg string) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, err := store.CompactMetrics(ctx)
			require.NoError(t, err)
			return count("agnogo-pending:%") == 0
		}, 10*time.Second, 10*time.Millisecond, msg)
		require.Equal(t, 1, count("daily"), msg)
	}
	compacted("compacted into the day's row")
	requireDay := func(runs int, msg string) {
		t.Helper()
		days, err := store.DailyMetrics(ctx, storage.MetricsQuery{UserID: "alice"})
		require.NoError(t, err)
		require.Len(t, days, 1, msg)
		require.Equal(t, []int{runs, 1, 1, runs * 10}, []int{days[0].AgentRuns, days[0].AgentSessions, days[0].Users, int(days[0].Tokens.TotalTokens)}, msg)
		require.Equal(t, []storage.ModelCount{{ModelID: "m", ModelProvider: "p", Count: runs}}, days[0].Models, msg)
	}
	requireDay(1, "one run")

	held, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = held.Exec(ctx, fmt.Sprintf(`SELECT id FROM %q.agno_metrics WHERE user_id = 'alice' AND aggregation_period = 'daily' FOR UPDATE`, cfg.Schema))
	require.NoError(t, err)
	waitAtMost, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, save(waitAtMost, "r-2"), "the save must not wait for the row another transaction holds")
	require.NoError(t, save(waitAtMost, "r-3"))
	// A compaction woken meanwhile waits for the row; what it took out is
	// not gone until it commits.
	require.Equal(t, 2, count("agnogo-pending:%"))
	requireDay(3, "pending rows count at once")
	require.NoError(t, held.Rollback(ctx))

	compacted("folded")
	requireDay(3, "folding changes no figure")

	require.NoError(t, save(ctx, "r-4"))
	refreshed, err := store.RefreshMetrics(ctx, storage.MetricsQuery{From: day, To: day})
	require.NoError(t, err)
	require.Len(t, refreshed, 1)
	require.Equal(t, 4, refreshed[0].AgentRuns)
	require.Equal(t, []int{1, 0}, []int{count("daily"), count("agnogo-pending:%")}, "a refresh replaces the pending rows")
	requireDay(4, "refreshed")
}
