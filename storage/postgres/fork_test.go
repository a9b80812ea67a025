package postgres

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// openWithIDs opens a store in a temporary schema and a second store over
// its pool whose ids come from newID (the first closes the pool), and
// stores session s-src with runs r-1 and r-2 (a child of r-1), and session
// s-other with run r-other. It also returns the runs table's name.
func openWithIDs(t *testing.T, newID func() string) (*Store, *sqlstore.Store, string) {
	t.Helper()
	store, cfg := openTemp(t)
	withIDs, err := sqlstore.Open(t.Context(), sqlstore.Config{DB: &poolDB{pool: store.pool}, Dialect: sqlstore.Postgres, Schema: cfg.Schema, NewID: newID})
	require.NoError(t, err)
	for _, sessionID := range []string{"s-src", "s-other"} {
		_, err := store.UpsertSession(t.Context(), &storage.Session{SessionID: sessionID, SessionType: storage.SessionTypeAgent, AgentID: "a"})
		require.NoError(t, err)
	}
	for _, out := range []*run.Output{
		{RunID: "r-1", SessionID: "s-src", Status: run.StatusCompleted},
		{RunID: "r-2", SessionID: "s-src", ParentRunID: "r-1", Status: run.StatusCompleted},
		{RunID: "r-other", SessionID: "s-other", Status: run.StatusCompleted},
	} {
		_, err := store.UpsertRun(t.Context(), storage.RunRecord{SessionID: out.SessionID, Run: out})
		require.NoError(t, err)
	}
	return store, withIDs, fmt.Sprintf("%q.%s", cfg.Schema, sqlstore.RunsTable)
}

// TestForkRollsBackWhenRunsFail: the session row is written before the
// runs are copied; when the copy fails (here the id generator hands out a
// run id already stored), the session row must go with it.
func TestForkRollsBackWhenRunsFail(t *testing.T) {
	store, colliding, _ := openWithIDs(t, func() string { return "r-other" })
	_, err := colliding.ForkSession(t.Context(), storage.SessionFork{SessionID: "s-src", ForkID: "s-fork"})
	require.Error(t, err)
	_, err = store.GetSession(t.Context(), "s-fork", storage.GetSessionOptions{})
	require.ErrorIs(t, err, storage.ErrNotFound, "the fork's session row rolled back with its runs")
	other, err := store.GetRun(t.Context(), "r-other", "")
	require.NoError(t, err)
	require.Equal(t, "s-other", other.SessionID, "the run that holds the id is untouched")
}

// TestForkRelinksParentColumn: the parent_run_id column of a copy names
// the copy of its parent, as its run_data does.
func TestForkRelinksParentColumn(t *testing.T) {
	var n atomic.Int64
	store, counting, table := openWithIDs(t, func() string { return fmt.Sprintf("id-%d", n.Add(1)) })
	_, err := counting.ForkSession(t.Context(), storage.SessionFork{SessionID: "s-src", ForkID: "s-fork"})
	require.NoError(t, err)
	copies, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-fork"})
	require.NoError(t, err)
	require.Len(t, copies, 2)
	var parent *string
	require.NoError(t, store.pool.QueryRow(t.Context(), "SELECT parent_run_id FROM "+table+" WHERE run_id = $1", copies[1].Run.RunID).Scan(&parent))
	require.NotNil(t, parent)
	require.Equal(t, copies[0].Run.RunID, *parent)
	require.Equal(t, copies[0].Run.RunID, copies[1].Run.ParentRunID)
	require.NoError(t, store.pool.QueryRow(t.Context(), "SELECT parent_run_id FROM "+table+" WHERE run_id = $1", copies[0].Run.RunID).Scan(&parent))
	require.Nil(t, parent, "a top-level run stays top-level")
}
