package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// commitCounter counts the COMMITs a pool sends, alone or in a batch.
type commitCounter struct{ commits atomic.Int64 }

func (c *commitCounter) count(sql string) {
	if sql == "COMMIT" {
		c.commits.Add(1)
	}
}

func (c *commitCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.count(data.SQL)
	return ctx
}

func (c *commitCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *commitCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *commitCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	c.count(data.SQL)
}

func (c *commitCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// groupFixture is a pool with a table of ids, counting its COMMITs.
type groupFixture struct {
	db      *poolDB
	pool    *pgxpool.Pool
	counter *commitCounter
	insert  string
	table   string
}

func newGroupFixture(t *testing.T) *groupFixture {
	t.Helper()
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(testdb.PostgresURL(t))
	require.NoError(t, err)
	counter := &commitCounter{}
	cfg.ConnConfig.Tracer = counter
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	table := fmt.Sprintf("%q", testdb.UniqueName(t, "grouped"))
	_, err = pool.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (id INT PRIMARY KEY)", table))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+table) })
	return &groupFixture{db: &poolDB{pool: pool, binds: &binds{}}, pool: pool, counter: counter, table: table,
		insert: fmt.Sprintf("INSERT INTO %s (id) VALUES (?)", table)}
}

func (f *groupFixture) ids(t *testing.T) []int {
	t.Helper()
	rows, err := f.pool.Query(t.Context(), fmt.Sprintf("SELECT id FROM %s ORDER BY id", f.table))
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	return got
}

// waiting is how many saves wait for a group.
func (f *groupFixture) waiting() int {
	f.db.group.mu.Lock()
	defer f.db.group.mu.Unlock()
	return len(f.db.group.waiting)
}

// TestGroupCommit: saves that arrive while the groups in flight are being
// written are written together, in one transaction with one COMMIT. A save
// that fails undoes its group, whose saves then run alone: every other one
// is stored, the failing one alone fails. A save whose context ended while
// it waited is not written.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newGroupFixture(t)

	// Two leaders, each holding its group open until the others wait.
	release := make(chan struct{})
	var leaders sync.WaitGroup
	errs := make(chan error, 64)
	for id := range 2 {
		leaders.Add(1)
		go func() {
			errs <- f.db.InGroupTx(ctx, fmt.Sprint(id), func(tx sqlstore.Conn) error {
				leaders.Done()
				<-release
				_, err := tx.Exec(ctx, f.insert, id)
				return err
			})
		}()
	}
	leaders.Wait()
	const waiting = 10
	cancelled, cancel := context.WithCancel(ctx)
	for id := 2; id < 2+waiting; id++ {
		saveCtx := ctx
		if id == 5 {
			saveCtx = cancelled
		}
		go func() {
			errs <- f.db.InGroupTx(saveCtx, fmt.Sprint(id), func(tx sqlstore.Conn) error {
				_, err := tx.Exec(saveCtx, f.insert, id)
				return err
			})
		}()
	}
	require.Eventually(t, func() bool { return f.waiting() == waiting }, 10*time.Second, time.Millisecond)
	cancel()
	f.counter.commits.Store(0)
	close(release)
	var failed []error
	for range 2 + waiting {
		if err := receive(t, errs); err != nil {
			failed = append(failed, err)
		}
	}
	require.Len(t, failed, 1)
	require.ErrorIs(t, failed[0], context.Canceled, "the save whose context ended")
	require.Equal(t, []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11}, f.ids(t))
	require.EqualValues(t, 3, f.counter.commits.Load(), "the two leaders' groups, then one group of the nine that waited")

	// A failing save in a group: the group is undone and each save runs
	// alone, those after it in the group as well as those before.
	release = make(chan struct{})
	leaders.Add(2)
	for id := 100; id < 102; id++ {
		go func() {
			errs <- f.db.InGroupTx(ctx, fmt.Sprint(id), func(tx sqlstore.Conn) error {
				leaders.Done()
				<-release
				_, err := tx.Exec(ctx, f.insert, id)
				return err
			})
		}()
	}
	leaders.Wait()
	// 4 is stored already; its key puts it between the others, so saves
	// of the group come after the failing one.
	for id, key := range map[int]string{102: "102", 103: "103", 4: "1035", 104: "104"} {
		go func() {
			errs <- f.db.InGroupTx(ctx, key, func(tx sqlstore.Conn) error {
				_, err := tx.Exec(ctx, f.insert, id)
				return err
			})
		}()
	}
	require.Eventually(t, func() bool { return f.waiting() == 4 }, 10*time.Second, time.Millisecond)
	close(release)
	failed = failed[:0]
	for range 6 {
		if err := receive(t, errs); err != nil {
			failed = append(failed, err)
		}
	}
	require.Len(t, failed, 1)
	require.ErrorContains(t, failed[0], "duplicate key")
	require.Equal(t, []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 100, 101, 102, 103, 104}, f.ids(t))

	// Nothing waits: a save leads its own group at once.
	f.counter.commits.Store(0)
	require.NoError(t, f.db.InGroupTx(ctx, "alone", func(tx sqlstore.Conn) error {
		_, err := tx.Exec(ctx, f.insert, 200)
		return err
	}))
	require.EqualValues(t, 1, f.counter.commits.Load())
	require.Zero(t, f.waiting())
}

// receive is the next save's outcome; a save that never ends fails the
// test.
func receive(t *testing.T, errs <-chan error) error {
	t.Helper()
	select {
	case err := <-errs:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("a save never ended")
		return nil
	}
}
