package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// readsWaiting is how many reads wait for a batch.
func (f *idTable) readsWaiting() int {
	f.db.reads.mu.Lock()
	defer f.db.reads.mu.Unlock()
	return len(f.db.reads.waiting)
}

// readOutcome is what one batched read got.
type readOutcome struct {
	value   int
	err     error
	scanned bool
}

// read runs query for id as a batched read, in the background; hold, when
// set, runs inside its scan. Its outcome arrives on the returned channel.
func (f *idTable) read(ctx context.Context, query string, id int, hold func()) <-chan readOutcome {
	out := make(chan readOutcome, 1)
	go func() {
		var o readOutcome
		o.err = f.db.QueryRowBatched(ctx, sqlstore.Pipelined{Query: fmt.Sprintf(query, f.table), Args: []any{id}, Scan: func(row sqlstore.Row) error {
			o.scanned = true
			if hold != nil {
				hold()
			}
			return row.Scan(&o.value)
		}})
		out <- o
	}()
	return out
}

// holdReadBatches puts as many batches on the wire as may be at once, each
// held in its read's scan until release is closed.
func (f *idTable) holdReadBatches(ctx context.Context, release <-chan struct{}) []<-chan readOutcome {
	var held []<-chan readOutcome
	for id := range maxReadBatches {
		scanning := make(chan struct{})
		held = append(held, f.read(ctx, "SELECT id FROM %s WHERE id = ?", id, func() {
			close(scanning)
			<-release
		}))
		<-scanning
	}
	return held
}

// outcome waits for a read's outcome; a read that never ends fails the
// test.
func outcome(t *testing.T, out <-chan readOutcome) readOutcome {
	t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("a batched read never ended")
		return readOutcome{}
	}
}

// TestBatchedReads: reads that arrive while batches are on the wire go
// together in one round trip and each gets its own row; a read whose
// statement fails gets its own error, and the reads the server skipped
// after it run again alone; a read whose caller stops waiting returns at
// once and is never scanned.
func TestBatchedReads(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newIDTable(t, 4)
	for id := range 12 {
		if id != 7 {
			_, err := f.pool.Exec(ctx, fmt.Sprintf("INSERT INTO %s (id) VALUES ($1)", f.table), id)
			require.NoError(t, err)
		}
	}
	const (
		tenfold  = "SELECT id * 10 FROM %s WHERE id = ?"
		divByNil = "SELECT 10 / (id - id) FROM %s WHERE id = ?"
	)
	// enqueue starts the reads of ids in order, each once the one before
	// it waits; cancelled reads run on a context cancelled once they wait.
	enqueue := func(ids []int, query func(id int) string, cancelled map[int]bool) (map[int]<-chan readOutcome, context.CancelFunc) {
		cancelCtx, cancel := context.WithCancel(ctx)
		outs := map[int]<-chan readOutcome{}
		for i, id := range ids {
			readCtx := ctx
			if cancelled[id] {
				readCtx = cancelCtx
			}
			outs[id] = f.read(readCtx, query(id), id, nil)
			require.Eventually(t, func() bool { return f.readsWaiting() == i+1 }, 10*time.Second, time.Millisecond)
		}
		return outs, cancel
	}

	// Ten reads wait while the batches are held: they go in one round trip.
	release := make(chan struct{})
	held := f.holdReadBatches(ctx, release)
	ids := []int{2, 3, 4, 5, 6, 8, 9, 10, 11, 1}
	outs, cancel := enqueue(ids, func(int) string { return tenfold }, nil)
	cancel()
	trips := f.counter.trips.Load()
	close(release)
	for id := range maxReadBatches {
		require.Equal(t, readOutcome{value: id, scanned: true}, outcome(t, held[id]))
	}
	for _, id := range ids {
		require.Equal(t, readOutcome{value: 10 * id, scanned: true}, outcome(t, outs[id]), "read %d", id)
	}
	require.EqualValues(t, 1, f.counter.trips.Load()-trips, "the ten reads that waited went in one batch")

	// A failing read, a read of a missing row and a read whose caller
	// leaves, in one batch.
	release = make(chan struct{})
	held = f.holdReadBatches(ctx, release)
	ids = []int{2, 3, 4, 5, 6, 7, 8, 9, 10}
	outs, cancel = enqueue(ids, func(id int) string {
		if id == 4 {
			return divByNil
		}
		return tenfold
	}, map[int]bool{9: true})
	cancel()
	left := outcome(t, outs[9]) // at once: the batches are still held
	require.ErrorIs(t, left.err, context.Canceled)
	require.False(t, left.scanned, "a read whose caller left is never scanned")
	trips = f.counter.trips.Load()
	close(release)
	for id := range maxReadBatches {
		require.NoError(t, outcome(t, held[id]).err)
	}
	for _, id := range ids {
		if id == 9 {
			continue
		}
		got := outcome(t, outs[id])
		switch id {
		case 4:
			var pgErr *pgconn.PgError
			require.ErrorAs(t, got.err, &pgErr, "read 4 fails with its own error")
			require.Equal(t, "22012", pgErr.Code, "division by zero")
		case 7:
			require.ErrorIs(t, got.err, sqlstore.ErrNoRows, "read 7 finds no row")
		default:
			require.NoError(t, got.err, "read %d", id)
			require.Equal(t, 10*id, got.value, "read %d", id)
		}
	}
	// The batch, then read 4 alone and the five the server skipped after
	// it (5, 6, 7, 8 and 10; 9 had left).
	require.EqualValues(t, 7, f.counter.trips.Load()-trips)
}

// TestSessionVersionsUnderLoad: many turns checking their sessions'
// versions at once, as a busy server's do, each get their own session's
// version and whether their own run is stored, whatever batch their check
// went in.
func TestSessionVersionsUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, _ := openTemp(t)
	const sessions, checks = 20, 400
	want := make([]storage.SessionVersion, sessions)
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		_, err := store.UpsertSession(ctx, &storage.Session{SessionID: id, SessionType: storage.SessionTypeAgent, AgentID: "a"})
		require.NoError(t, err)
		for r := range i % 4 { // versions differ from session to session
			_, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: id, Run: &run.Output{RunID: fmt.Sprintf("%s-r%d", id, r), SessionID: id, Status: run.StatusCompleted}})
			require.NoError(t, err)
		}
		want[i], _, err = store.SessionVersion(ctx, id, "", "")
		require.NoError(t, err)
	}
	var wrong atomic.Int64
	done := make(chan error, checks)
	for c := range checks {
		go func() {
			i := c % sessions
			id := fmt.Sprintf("s%d", i)
			runID := fmt.Sprintf("%s-r%d", id, c%3) // stored when c%3 < i%4
			v, stored, err := store.SessionVersion(ctx, id, "", runID)
			if err == nil && (v != want[i] || stored != (c%3 < i%4)) {
				wrong.Add(1)
			}
			done <- err
		}()
	}
	for range checks {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("a version check never ended")
		}
	}
	require.Zero(t, wrong.Load(), "checks answered with another session's version or run")
}
