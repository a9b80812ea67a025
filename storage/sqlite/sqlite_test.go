package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/storage/storagetest"
)

func openTemp(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agnogo.db")
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	return store, path
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		store, _ := openTemp(t)
		return store
	})
}

// TestReplicaConformance runs the races of two processes: two stores, each
// with its own pools, over one file.
func TestReplicaConformance(t *testing.T) {
	storagetest.RunReplicas(t, func(t *testing.T) (storage.Store, storage.Store) {
		first, path := openTemp(t)
		second, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, second.Close()) })
		return first, second
	})
}

func TestPragmas(t *testing.T) {
	_, path := openTemp(t)
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	var mode string
	require.NoError(t, db.QueryRow("PRAGMA journal_mode").Scan(&mode))
	require.Equal(t, "wal", mode, "the database must run in WAL mode")
}

func TestForeignKeysCascadeRuns(t *testing.T) {
	store, _ := openTemp(t)
	ctx := t.Context()
	_, err := store.UpsertSession(ctx, &storage.Session{SessionID: "s1", SessionType: storage.SessionTypeAgent})
	require.NoError(t, err)
	_, err = store.UpsertRun(ctx, storage.RunRecord{SessionID: "s1", Run: &run.Output{RunID: "r1", Status: run.StatusCompleted}})
	require.NoError(t, err)
	require.NoError(t, store.DeleteSession(ctx, "s1", ""))
	_, err = store.GetRun(ctx, "r1", "")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// TestManyWritersNeverLocked hammers one file from two stores (two pools, as
// two processes would) and many goroutines each: every write must land.
func TestManyWritersNeverLocked(t *testing.T) {
	first, path := openTemp(t)
	second, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	defer second.Close()
	ctx := t.Context()
	_, err = first.UpsertSession(ctx, &storage.Session{SessionID: "s", SessionType: storage.SessionTypeAgent})
	require.NoError(t, err)

	const perStore = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*perStore)
	for i := range 2 * perStore {
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
	runs, total, err := first.GetRuns(ctx, storage.RunQuery{SessionID: "s"})
	require.NoError(t, err)
	require.Equal(t, 2*perStore, total)
	seen := map[int64]bool{}
	for _, rec := range runs {
		require.False(t, seen[*rec.RunIndex], "run_index %d assigned twice", *rec.RunIndex)
		seen[*rec.RunIndex] = true
	}
}

func TestOpenRejectsOutdatedSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE agno_sessions (session_id VARCHAR PRIMARY KEY, session_type VARCHAR NOT NULL, agent_id VARCHAR, team_id VARCHAR,
		workflow_id VARCHAR, user_id VARCHAR, session_data JSON, agent_data JSON, team_data JSON, workflow_data JSON, metadata JSON,
		runs JSON, summary JSON, created_at BIGINT NOT NULL, updated_at BIGINT)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	_, err = sqlite.Open(context.Background(), sqlite.Config{Path: path})
	require.ErrorIs(t, err, storage.ErrMigrationRequired)
	require.Contains(t, err.Error(), "agnogo migrate --db sqlite://"+path)
	var required *storage.MigrationRequiredError
	require.True(t, errors.As(err, &required))
	require.NotEmpty(t, required.Pending)

	store, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, AutoMigrate: true})
	require.NoError(t, err, "AutoMigrate opens the same database")
	require.NoError(t, store.Close())
}

func TestMetricsAgnoRows(t *testing.T) {
	store, path := openTemp(t)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	defer db.Close()
	storagetest.AgnoMetricsRows(t, store, func(t *testing.T, row storagetest.AgnoMetricsRow) {
		_, err := db.Exec(`INSERT INTO agno_metrics (id, agent_runs_count, agent_sessions_count, users_count, token_metrics, model_metrics,
	date, aggregation_period, user_id, created_at, updated_at, completed) VALUES (?, ?, ?, ?, ?, ?, ?, 'daily', ?, 1, 1, 1)`,
			"agno-"+row.UserID, row.AgentRuns, row.AgentSessions, row.Users, row.TokenMetrics, row.ModelMetrics, row.Date, row.UserID)
		require.NoError(t, err)
	})
}

// TestASaveRewritesOnlyThePagesItChanges reads the write-ahead log after a
// conversation's saves and checks which pages each save's commit wrote. A
// commit writes every page it changed, and a page costs its write and its
// checksum: a save in a continuing session must not rewrite the index
// entries of session columns it does not change (session_type, user_id),
// which SQLite does for every indexed column an UPDATE's SET list names.
func TestASaveRewritesOnlyThePagesItChanges(t *testing.T) {
	store, path := openTemp(t)
	ctx := t.Context()
	session, err := store.UpsertSession(ctx, &storage.Session{SessionID: "s1", AgentID: "a1", UserID: "alice"})
	require.NoError(t, err)
	const saves = 12
	for i := range saves {
		out := &run.Output{RunID: fmt.Sprintf("r%d", i), SessionID: "s1", AgentID: "a1", UserID: "alice",
			Status: run.StatusCompleted, Content: "ok", Metrics: &run.RunMetrics{Metrics: run.Metrics{InputTokens: 12, OutputTokens: 3, TotalTokens: 15}}}
		session, _, err = store.SaveRun(ctx, session, storage.RunRecord{Run: out, UserID: "alice"})
		require.NoError(t, err)
	}
	commits := walCommits(t, path+"-wal")
	require.GreaterOrEqual(t, len(commits), saves, "one commit per save")

	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	owner := map[uint32]string{}
	rows, err := db.QueryContext(ctx, "SELECT name, pageno FROM dbstat")
	require.NoError(t, err)
	for rows.Next() {
		var name string
		var page uint32
		require.NoError(t, rows.Scan(&name, &page))
		owner[page] = name
	}
	require.NoError(t, rows.Err())

	// The last saves, once the session and its day's metrics row exist.
	for i, commit := range commits[len(commits)-saves/2:] {
		var wrote []string
		for _, page := range commit {
			wrote = append(wrote, owner[page])
		}
		require.NotContains(t, wrote, "idx_agno_sessions_session_type", "save %d rewrote the session_type index: %v", i, wrote)
		require.NotContains(t, wrote, "idx_agno_sessions_user_id", "save %d rewrote the user_id index: %v", i, wrote)
		require.Contains(t, wrote, "agno_sessions", "save %d wrote its session row", i)
		require.Contains(t, wrote, "agno_runs", "save %d wrote its run row", i)
	}
}

// walCommits reads a write-ahead log's frame headers and returns, per
// commit, the page numbers its frames wrote.
func walCommits(t *testing.T, path string) [][]uint32 {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	const logHeader, frameHeader = 32, 24
	require.Greater(t, len(data), logHeader, "an empty write-ahead log")
	pageSize := int(binary.BigEndian.Uint32(data[8:12]))
	var commits [][]uint32
	var pages []uint32
	for at := logHeader; at+frameHeader+pageSize <= len(data); at += frameHeader + pageSize {
		pages = append(pages, binary.BigEndian.Uint32(data[at:]))
		// A commit's last frame records the database's size after it.
		if binary.BigEndian.Uint32(data[at+4:]) != 0 {
			commits = append(commits, pages)
			pages = nil
		}
	}
	return commits
}
