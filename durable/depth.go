package durable

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// queuedCount is how many runs wait in or execute from the queue.
func (q *Queue) queuedCount(ctx context.Context) (int, error) {
	n, err := q.eng.waiting(ctx)
	if err != nil {
		return 0, fmt.Errorf("durable: count queued runs: %w", err)
	}
	return n, nil
}

// depthLock is how an acceptance transaction on Postgres holds the queue's
// depth lock, a transaction-level advisory lock.
//
// The depth limit is exact and costs no count in the common case. A
// sequence beside the engine's tables (agno_queue_depth) holds a bound:
// no more runs wait than its last value. Each acceptance, holding the lock
// shared (acceptances run concurrently), takes the next value, which counts
// its own run, and goes on when that value is within MaxQueueDepth. When it
// is not, the acceptance starts again holding the lock exclusive: that
// waits for every acceptance in flight to commit, counts the waiting runs
// (up to MaxQueueDepth) and resets the bound to the count plus its own run,
// then accepts when there was room. The bound only grows between counts
// (runs that end do not lower it), so it stays above the true number, and
// a count happens about once every MaxQueueDepth − waiting acceptances, or
// at each one while the queue is nearly full. A value taken by a
// transaction that then fails is lost, which only makes the bound larger.
//
// Runs enqueued by other paths (requeues, adopted orphans) are never
// refused; they count towards the limit from the next count on.
type depthLock int

// The ways of holding the depth lock.
const (
	// depthShared lets acceptances run concurrently, each taking the next
	// value of the bound.
	depthShared depthLock = iota
	// depthExclusive serialises acceptances while the bound is recounted.
	depthExclusive
)

// depthSequence names the sequence holding the depth bound.
const depthSequence = "agno_queue_depth"

// errUndefinedTable is Postgres's SQLSTATE for a missing relation: the
// depth sequence before the first count.
const errUndefinedTable = "42P01"

// lockDepth takes the depth lock in tx and returns the bound on the waiting
// runs that includes this acceptance's own, in one round trip. Held
// exclusive, the lock is followed by a count (in a statement of its own, so
// its snapshot sees every acceptance that held the lock before) that
// becomes the new bound. A missing sequence is [errRecountDepth] on the
// shared path: the exclusive one creates it.
func (q *Queue) lockDepth(ctx context.Context, tx pgx.Tx, lock depthLock) (int, error) {
	sequence := q.eng.table(depthSequence)
	key := q.eng.schema() + "." + queueName + ":depth"
	batch := &pgx.Batch{}
	if lock == depthExclusive {
		batch.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, key)
		batch.Queue(`CREATE SEQUENCE IF NOT EXISTS ` + sequence)
		batch.Queue(`SELECT setval($3::regclass, (`+q.eng.engineSQL(waitingUpToSQL)+`) + 1)`, queueName, q.cfg.MaxQueueDepth, sequence)
	} else {
		batch.Queue(`SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))`, key)
		batch.Queue(`SELECT nextval($1::regclass)`, sequence)
	}
	results := tx.SendBatch(ctx, batch)
	var err error
	for range batch.Len() - 1 {
		if _, err = results.Exec(); err != nil {
			break
		}
	}
	var bound int
	if err == nil {
		err = results.QueryRow().Scan(&bound)
	}
	if closeErr := results.Close(); err == nil {
		err = closeErr
	}
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == errUndefinedTable && lock == depthShared {
		return 0, errRecountDepth
	}
	if err != nil {
		return 0, fmt.Errorf("durable: check the queue depth: %w", err)
	}
	return bound, nil
}

// Depth is how many runs wait in or execute from the queue, across
// replicas: what queue.max_queue_depth bounds.
func (q *Queue) Depth(ctx context.Context) (int, error) { return q.queuedCount(ctx) }

// Executing is how many runs execute in this process now.
func (q *Queue) Executing() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.running)
}
