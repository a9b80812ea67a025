package sqlstore_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/internal/sqldb"
	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// openSQLite opens a store on a new SQLite file, as storage/sqlite does,
// with ids from newID. It returns the store and a read connection for
// inspecting columns the store does not return.
func openSQLite(t *testing.T, newID func() string) (*sqlstore.Store, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fork.db")
	writer, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_txlock=immediate")
	require.NoError(t, err)
	writer.SetMaxOpenConns(1)
	readers, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	db := &sqldb.DB{Writer: writer, Readers: readers}
	store, err := sqlstore.Open(t.Context(), sqlstore.Config{DB: db, Dialect: sqlstore.SQLite, NewID: newID})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	return store, readers
}

// forkFixture stores session s-src with runs r-1 and r-2 (a child of
// r-1), and session s-other with run r-other.
func forkFixture(t *testing.T, store storage.Store) {
	t.Helper()
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
}

// TestForkRollsBackWhenRunsFail: the session row is written before the
// runs are copied; when the copy fails (here the id generator hands out a
// run id already stored), the session row must go with it.
func TestForkRollsBackWhenRunsFail(t *testing.T) {
	store, _ := openSQLite(t, func() string { return "r-other" })
	forkFixture(t, store)
	_, err := store.ForkSession(t.Context(), storage.SessionFork{SessionID: "s-src", ForkID: "s-fork"})
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
	store, readers := openSQLite(t, func() string { return fmt.Sprintf("id-%d", n.Add(1)) })
	forkFixture(t, store)
	_, err := store.ForkSession(t.Context(), storage.SessionFork{SessionID: "s-src", ForkID: "s-fork"})
	require.NoError(t, err)
	copies, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-fork"})
	require.NoError(t, err)
	require.Len(t, copies, 2)
	var parent sql.NullString
	require.NoError(t, readers.QueryRowContext(t.Context(), "SELECT parent_run_id FROM agno_runs WHERE run_id = ?", copies[1].Run.RunID).Scan(&parent))
	require.Equal(t, copies[0].Run.RunID, parent.String)
	require.Equal(t, copies[0].Run.RunID, copies[1].Run.ParentRunID)
	require.NoError(t, readers.QueryRowContext(t.Context(), "SELECT parent_run_id FROM agno_runs WHERE run_id = ?", copies[0].Run.RunID).Scan(&parent))
	require.False(t, parent.Valid, "a top-level run stays top-level")
}
