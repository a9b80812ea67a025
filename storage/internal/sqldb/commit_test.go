package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// openTestDB opens a SQLite file with a one-connection writer, as
// storage/sqlite does, and a table of numbers.
func openTestDB(t *testing.T) *DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "commit.db")
	writer, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_txlock=immediate")
	require.NoError(t, err)
	writer.SetMaxOpenConns(1)
	readers, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	db := &DB{Writer: writer, Readers: readers}
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = writer.ExecContext(t.Context(), "CREATE TABLE numbers (n INTEGER PRIMARY KEY)")
	require.NoError(t, err)
	return db
}

// insert is a transaction body that stores n and notes whether it ran in a
// shared commit.
func insert(n int, shared *bool) func(tx sqlstore.Conn) error {
	return func(tx sqlstore.Conn) error {
		*shared = tx.(Conn).detached
		_, err := tx.Exec(context.Background(), "INSERT INTO numbers (n) VALUES (?)", n)
		return err
	}
}

func storedNumbers(t *testing.T, db *DB) []int {
	t.Helper()
	rows, err := db.Readers.QueryContext(t.Context(), "SELECT n FROM numbers ORDER BY n")
	require.NoError(t, err)
	defer rows.Close()
	var numbers []int
	for rows.Next() {
		var n int
		require.NoError(t, rows.Scan(&n))
		numbers = append(numbers, n)
	}
	require.NoError(t, rows.Err())
	return numbers
}

// holdWriter starts a transaction that keeps the writer until release is
// closed, and returns once it runs, with a channel for its result.
func holdWriter(t *testing.T, db *DB, release <-chan struct{}) <-chan error {
	t.Helper()
	running := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.InTx(t.Context(), func(tx sqlstore.Conn) error {
			close(running)
			<-release
			_, err := tx.Exec(context.Background(), "INSERT INTO numbers (n) VALUES (0)")
			return err
		})
	}()
	<-running
	return done
}

// waitQueued polls until n transactions wait for the writer.
func waitQueued(t *testing.T, db *DB, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		db.commits.mu.Lock()
		defer db.commits.mu.Unlock()
		return len(db.commits.waiting) == n
	}, 5*time.Second, time.Millisecond, "%d transactions never queued", n)
}

func TestTransactionsQueuedTogetherShareACommit(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	release := make(chan struct{})
	held := holdWriter(t, db, release)

	const queued = 5
	shared := make([]bool, queued)
	errs := make([]error, queued)
	var wg sync.WaitGroup
	for i := range queued {
		wg.Go(func() { errs[i] = db.InTx(t.Context(), insert(i+1, &shared[i])) })
	}
	waitQueued(t, db, queued)
	close(release)
	wg.Wait()

	require.NoError(t, <-held)
	for i := range queued {
		require.NoError(t, errs[i], "transaction %d", i+1)
		require.True(t, shared[i], "transaction %d ran in the shared commit", i+1)
	}
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, storedNumbers(t, db))
}

func TestAFailedTransactionRollsBackAloneInASharedCommit(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	release := make(chan struct{})
	held := holdWriter(t, db, release)

	failure := errors.New("the second one changes its mind")
	bodies := []func(tx sqlstore.Conn) error{
		func(tx sqlstore.Conn) error {
			_, err := tx.Exec(context.Background(), "INSERT INTO numbers (n) VALUES (1)")
			return err
		},
		func(tx sqlstore.Conn) error {
			if _, err := tx.Exec(context.Background(), "INSERT INTO numbers (n) VALUES (2)"); err != nil {
				return err
			}
			return failure
		},
		func(tx sqlstore.Conn) error {
			// A statement error (a duplicate key) leaves the others alone too.
			_, err := tx.Exec(context.Background(), "INSERT INTO numbers (n) VALUES (1)")
			return err
		},
		func(tx sqlstore.Conn) error {
			_, err := tx.Exec(context.Background(), "INSERT INTO numbers (n) VALUES (4)")
			return err
		},
	}
	errs := make([]error, len(bodies))
	var wg sync.WaitGroup
	for i, body := range bodies {
		wg.Go(func() { errs[i] = db.InTx(t.Context(), body) })
		waitQueued(t, db, i+1) // queue in order, so the duplicate comes after the first insert
	}
	close(release)
	wg.Wait()

	require.NoError(t, <-held)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], failure)
	require.ErrorContains(t, errs[2], "UNIQUE constraint failed")
	require.NoError(t, errs[3])
	require.Equal(t, []int{0, 1, 4}, storedNumbers(t, db))
}

func TestACancelledTransactionIsSkippedInASharedCommit(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	release := make(chan struct{})
	held := holdWriter(t, db, release)

	ctx, cancel := context.WithCancel(t.Context())
	var ran, first, last bool
	errs := make([]error, 3)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = db.InTx(t.Context(), insert(1, &first)) })
	waitQueued(t, db, 1)
	wg.Go(func() {
		errs[1] = db.InTx(ctx, func(tx sqlstore.Conn) error {
			ran = true
			return nil
		})
	})
	waitQueued(t, db, 2)
	wg.Go(func() { errs[2] = db.InTx(t.Context(), insert(3, &last)) })
	waitQueued(t, db, 3)
	cancel()
	close(release)
	wg.Wait()

	require.NoError(t, <-held)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], context.Canceled)
	require.False(t, ran, "a transaction whose caller left does not run")
	require.NoError(t, errs[2])
	require.Equal(t, []int{0, 1, 3}, storedNumbers(t, db))
}

func TestATransactionAloneKeepsItsCancellation(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	var shared bool
	require.NoError(t, db.InTx(t.Context(), insert(1, &shared)))
	require.False(t, shared, "a transaction with no one queued behind it runs on its own")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := db.InTx(ctx, insert(2, &shared))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []int{1}, storedNumbers(t, db))
}

func TestManyConcurrentTransactionsAllCommit(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	const writers = 200
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			var shared bool
			errs[i] = db.InTx(t.Context(), insert(i+1, &shared))
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "writer %d", i)
	}
	numbers := storedNumbers(t, db)
	require.Len(t, numbers, writers, fmt.Sprint(numbers))
}

func TestAPanicInASharedCommitReachesItsCallerOnly(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	release := make(chan struct{})
	held := holdWriter(t, db, release)

	var first, last bool
	errs := make([]error, 3)
	var recovered any
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = db.InTx(t.Context(), insert(1, &first)) })
	waitQueued(t, db, 1)
	wg.Go(func() {
		defer func() { recovered = recover() }()
		errs[1] = db.InTx(t.Context(), func(tx sqlstore.Conn) error {
			if _, err := tx.Exec(context.Background(), "INSERT INTO numbers (n) VALUES (2)"); err != nil {
				return err
			}
			panic("a bug in a transaction")
		})
	})
	waitQueued(t, db, 2)
	wg.Go(func() { errs[2] = db.InTx(t.Context(), insert(3, &last)) })
	waitQueued(t, db, 3)
	close(release)
	wg.Wait()

	require.NoError(t, <-held)
	require.Equal(t, "a bug in a transaction", recovered, "the panic is raised in its own caller")
	require.NoError(t, errs[0])
	require.NoError(t, errs[2])
	require.Equal(t, []int{0, 1, 3}, storedNumbers(t, db))

	// The queue was handed on: later transactions still run, alone too.
	require.NoError(t, db.InTx(t.Context(), insert(4, &first)))
	require.Equal(t, []int{0, 1, 3, 4}, storedNumbers(t, db))
}

func TestAPanicInATransactionAloneRollsItBack(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	func() {
		defer func() { require.Equal(t, "alone", recover()) }()
		_ = db.InTx(t.Context(), func(tx sqlstore.Conn) error {
			if _, err := tx.Exec(context.Background(), "INSERT INTO numbers (n) VALUES (1)"); err != nil {
				return err
			}
			panic("alone")
		})
	}()
	var shared bool
	require.NoError(t, db.InTx(t.Context(), insert(2, &shared)), "the writer is free again")
	require.Equal(t, []int{2}, storedNumbers(t, db))
}

// TestWarmReadsRunOnTheIdleWriter checks [DB.QueryRowWarm]: a read runs on
// the writer's own connection when no write holds or awaits it (a table
// only that connection has answers it), is refused at once while a write
// holds the writer, and a write that arrives during a warm read waits for
// it, then runs.
func TestWarmReadsRunOnTheIdleWriter(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := t.Context()
	// A temporary table exists on the connection that created it only:
	// the writer's one connection.
	_, err := db.Writer.ExecContext(ctx, "CREATE TEMP TABLE writer_only (n INTEGER)")
	require.NoError(t, err)
	_, err = db.Writer.ExecContext(ctx, "INSERT INTO writer_only (n) VALUES (7)")
	require.NoError(t, err)
	var n int
	err = db.Readers.QueryRowContext(ctx, "SELECT n FROM writer_only").Scan(&n)
	require.ErrorContains(t, err, "no such table", "a reader connection has no writer_only")

	ran, err := db.QueryRowWarm(ctx, func(row sqlstore.Row) error { return row.Scan(&n) }, "SELECT n FROM writer_only")
	require.NoError(t, err)
	require.True(t, ran, "the writer is idle")
	require.Equal(t, 7, n)

	// While a write holds the writer, the read is refused, not queued.
	release := make(chan struct{})
	held := holdWriter(t, db, release)
	ran, err = db.QueryRowWarm(ctx, func(row sqlstore.Row) error { return row.Scan(&n) }, "SELECT n FROM writer_only")
	require.NoError(t, err)
	require.False(t, ran, "a write holds the writer")
	close(release)
	require.NoError(t, <-held)

	// A write arriving during a warm read waits for it, and then commits.
	var shared bool
	written := make(chan error, 1)
	ran, err = db.QueryRowWarm(ctx, func(row sqlstore.Row) error {
		if err := row.Scan(&n); err != nil {
			return err
		}
		go func() { written <- db.InTx(ctx, insert(42, &shared)) }()
		waitQueued(t, db, 1)
		select {
		case err := <-written:
			return fmt.Errorf("the write ran during the warm read: %v", err)
		default:
			return nil
		}
	}, "SELECT n FROM writer_only")
	require.NoError(t, err)
	require.True(t, ran)
	require.NoError(t, <-written)
	require.Equal(t, []int{0, 42}, storedNumbers(t, db))

	// While writes queue for the writer, reads leave it to them: after a
	// batch of two, the read goes elsewhere, and after a lone write it
	// runs on the writer again.
	require.NoError(t, db.InTx(ctx, func(tx sqlstore.Conn) error {
		_, err := tx.Exec(ctx, "DELETE FROM numbers WHERE n = 0")
		return err
	}))
	release = make(chan struct{})
	held = holdWriter(t, db, release)
	batched := make([]bool, 2)
	var wg sync.WaitGroup
	for i := range batched {
		wg.Go(func() { require.NoError(t, db.InTx(ctx, insert(50+i, &batched[i]))) })
	}
	waitQueued(t, db, 2)
	close(release)
	require.NoError(t, <-held)
	wg.Wait()
	require.Equal(t, []bool{true, true}, batched, "the two writes shared a batch")
	ran, err = db.QueryRowWarm(ctx, func(row sqlstore.Row) error { return row.Scan(&n) }, "SELECT n FROM writer_only")
	require.NoError(t, err)
	require.False(t, ran, "the last batch carried two writes")
	require.NoError(t, db.InTx(ctx, insert(60, &shared)))
	ran, err = db.QueryRowWarm(ctx, func(row sqlstore.Row) error { return row.Scan(&n) }, "SELECT n FROM writer_only")
	require.NoError(t, err)
	require.True(t, ran, "the last batch was a lone write")

	// A failing read reports its error and leaves the writer free.
	ran, err = db.QueryRowWarm(ctx, func(row sqlstore.Row) error { return row.Scan(&n) }, "SELECT n FROM no_such_table")
	require.True(t, ran)
	require.ErrorContains(t, err, "no such table")
	require.NoError(t, db.InTx(ctx, insert(43, &shared)))
}
