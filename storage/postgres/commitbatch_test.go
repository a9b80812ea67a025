package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// batchCounter counts the batches and single statements a pool sends —
// each is one round trip — and the COMMITs among their statements.
type batchCounter struct{ trips, commits atomic.Int64 }

func (c *batchCounter) countCommit(sql string) {
	if sql == "COMMIT" {
		c.commits.Add(1)
	}
}

func (c *batchCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.trips.Add(1)
	c.countCommit(data.SQL)
	return ctx
}

func (c *batchCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *batchCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.trips.Add(1)
	return ctx
}

func (c *batchCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	c.countCommit(data.SQL)
}

func (c *batchCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// idTable is a table of ids of a test's own, written through a poolDB
// whose pool's round trips and COMMITs are counted.
type idTable struct {
	db      *poolDB
	pool    *pgxpool.Pool
	counter *batchCounter
	table   string
	insert  string // INSERT of one id, `?` for it
}

// newIDTable makes the table, on a pool of at most maxConns connections.
func newIDTable(t *testing.T, maxConns int32) *idTable {
	t.Helper()
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(testdb.PostgresURL(t))
	require.NoError(t, err)
	counter := &batchCounter{}
	cfg.ConnConfig.Tracer = counter
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	table := fmt.Sprintf("%q", testdb.UniqueName(t, "ids"))
	_, err = pool.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (id INT PRIMARY KEY)", table))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+table) })
	return &idTable{db: &poolDB{pool: pool, binds: &binds{}}, pool: pool, counter: counter, table: table,
		insert: fmt.Sprintf("INSERT INTO %s (id) VALUES (?)", table)}
}

// ids lists the stored ids in order.
func (f *idTable) ids(t *testing.T) []int {
	t.Helper()
	rows, err := f.pool.Query(t.Context(), fmt.Sprintf("SELECT id FROM %s ORDER BY id", f.table))
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	return got
}

// TestStatementsHeldForTheCommit: a statement held for the COMMIT runs
// with it, in the same round trip; when it fails, nothing of the
// transaction is kept and the connection is fit for the next one.
func TestStatementsHeldForTheCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newIDTable(t, 1) // every transaction reuses the connection the last one left
	db, insert, counter := f.db, f.insert, f.counter
	ids := func() []int { return f.ids(t) }

	counter.trips.Store(0)
	err := db.InTx(ctx, func(tx sqlstore.Conn) error {
		if _, err := tx.Exec(ctx, insert, 1); err != nil {
			return err
		}
		tx.(sqlstore.CommitExecer).ExecAtCommit(insert, 2)
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 2, counter.trips.Load(), "BEGIN with the first statement, the held one with COMMIT")
	require.Equal(t, []int{1, 2}, ids())

	counter.trips.Store(0)
	err = db.InTx(ctx, func(tx sqlstore.Conn) error {
		tx.(sqlstore.CommitExecer).ExecAtCommit(insert, 3)
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 1, counter.trips.Load(), "a transaction of held statements alone is one round trip")
	require.Equal(t, []int{1, 2, 3}, ids())

	err = db.InTx(ctx, func(tx sqlstore.Conn) error {
		if _, err := tx.Exec(ctx, insert, 4); err != nil {
			return err
		}
		tx.(sqlstore.CommitExecer).ExecAtCommit(insert, 1) // a duplicate key
		return nil
	})
	require.ErrorContains(t, err, "duplicate key")
	require.Equal(t, []int{1, 2, 3}, ids(), "the transaction's first statement is rolled back with it")

	// The one connection is out of the failed transaction.
	require.NoError(t, db.InTx(ctx, func(tx sqlstore.Conn) error {
		_, err := tx.Exec(ctx, insert, 5)
		return err
	}))
	require.Equal(t, []int{1, 2, 3, 5}, ids())
}

// TestSaveRunRoundTrips: saving a run with its session takes two round
// trips — BEGIN, the session's upsert and the run's in one batch, then the
// COMMIT with the day's metrics row when the run counts — whether the
// session is new or not, and whether the save is scoped to a user or not.
func TestSaveRunRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, cfg := openTemp(t) // the schema, migrated
	poolConfig, err := pgxpool.ParseConfig(cfg.URL)
	require.NoError(t, err)
	counter := &batchCounter{}
	poolConfig.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, poolConfig)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := sqlstore.Open(ctx, sqlstore.Config{DB: &poolDB{pool: pool}, Dialect: sqlstore.Postgres, Schema: cfg.Schema})
	require.NoError(t, err)

	for _, user := range []string{"", "alice"} {
		session := &storage.Session{SessionID: "s-" + user, SessionType: storage.SessionTypeAgent, AgentID: "agent-1", UserID: user}
		for i, status := range []run.Status{run.StatusRunning, run.StatusCompleted, run.StatusRunning, run.StatusCompleted} {
			runID := fmt.Sprintf("r-%s-%d", user, i/2)
			rec := storage.RunRecord{UserID: user, Run: &run.Output{RunID: runID, AgentID: "agent-1", SessionID: session.SessionID, UserID: user, Status: status}}
			counter.trips.Store(0)
			_, saved, err := store.SaveRun(ctx, session, rec)
			require.NoError(t, err)
			require.EqualValues(t, 2, counter.trips.Load(), "user %q, run %s saved %s", user, runID, status)
			require.EqualValues(t, i/2, *saved.RunIndex)
		}
		runs, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: session.SessionID, UserID: user})
		require.NoError(t, err)
		require.Equal(t, 2, total)
		for _, rec := range runs {
			require.Equal(t, run.StatusCompleted, rec.Run.Status)
			require.Equal(t, user, rec.UserID)
		}
	}
}
