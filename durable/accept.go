package durable

import (
	"context"
	"errors"
	"fmt"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// TxStore is a [storage.Store] that can also write a starting run inside a
// Postgres transaction of its own, as
// [github.com/agnogo/agnogo/storage/postgres.Store] does. On Postgres, a
// queue whose store is a TxStore accepts each run in one transaction: the
// depth check, the run's PENDING row (with its session when new) and the
// enqueue commit together or not at all, so a refused or failed submission
// leaves nothing behind. Other stores write the row first and enqueue
// after; a crash between the two leaves a PENDING row that a live executor
// enqueues after Config.LockGrace.
//
// The store must keep its tables in the database of [Config.DatabaseURL]:
// the run is enqueued through the store's transaction.
type TxStore interface {
	// BeginFunc runs fn in a transaction, committing when fn returns nil
	// and rolling back otherwise; fn's error is returned as it is.
	BeginFunc(ctx context.Context, fn func(tx pgx.Tx) error) error
	// StartRunTx writes a starting run inside tx: its session is created
	// when it does not exist (an existing one is left as it is), then the
	// run is upserted, scoped to rec.UserID like [storage.RunStore.UpsertRun].
	StartRunTx(ctx context.Context, tx pgx.Tx, session *storage.Session, rec storage.RunRecord) (storage.RunRecord, error)
}

// errRecountDepth ends an acceptance that holds the depth lock shared when
// the depth bound leaves no room (or does not exist yet): it is tried again
// holding the lock exclusive, which recounts.
var errRecountDepth = errors.New("the queue depth must be recounted")

// accept checks the queue's depth, writes a run's PENDING row and enqueues
// the run: in one transaction on Postgres with a [TxStore], one step after
// the other otherwise.
func (q *Queue) accept(ctx context.Context, runner run.Runner, in *run.Input, j job) (Accepted, error) {
	if store, ok := q.cfg.Store.(TxStore); ok && q.eng.postgres() {
		err := q.acceptInTx(ctx, store, runner, in, j, depthShared)
		if errors.Is(err, errRecountDepth) {
			err = q.acceptInTx(ctx, store, runner, in, j, depthExclusive)
		}
		if err != nil {
			return Accepted{}, err
		}
		return Accepted{RunID: j.RunID, SessionID: j.SessionID}, nil
	}
	return q.acceptInSteps(ctx, runner, in, j)
}

// acceptInTx accepts a run in one transaction of the store, holding the
// depth lock as lock says (see [depthLock]): the lock and the depth bound
// in one round trip, then the session and run rows, the enqueue and the
// commit.
func (q *Queue) acceptInTx(ctx context.Context, store TxStore, runner run.Runner, in *run.Input, j job, lock depthLock) error {
	session, rec := runhost.PendingRun(runner, in, q.cfg.Now())
	registered := false
	err := store.BeginFunc(ctx, func(tx pgx.Tx) error {
		bound, err := q.lockDepth(ctx, tx, lock)
		switch {
		case err != nil:
			return err
		case bound <= q.cfg.MaxQueueDepth:
		case lock == depthShared:
			return errRecountDepth
		default: // counted: bound-1 runs wait, besides this one
			return queueFull(bound - 1)
		}
		if _, err := store.StartRunTx(ctx, tx, session, rec); err != nil {
			return fmt.Errorf("record run %s: %w", in.RunID, err)
		}
		if _, err := dbos.Enqueue[string](q.dbos, queueName, workflowName, j, dbos.WithEnqueueWorkflowID(j.RunID),
			dbos.WithEnqueueQueuePartitionKey(j.SessionID), dbos.WithEnqueueTransaction(tx)); err != nil {
			return fmt.Errorf("durable: enqueue run %s: %w", j.RunID, err)
		}
		// Known before the commit makes the run visible to executors, so
		// its first events never find it unregistered.
		q.register(j.RunID, run.StatusPending)
		registered = true
		return nil
	})
	if err != nil && registered {
		// The commit failed: the run was not accepted.
		q.finish(j.RunID, run.StatusError)
	}
	return err
}

// acceptInSteps accepts a run without a shared transaction: the depth is
// checked, not reserved (concurrent submissions may overshoot it by their
// number, never refuse below it); the PENDING row is written, then the run
// is enqueued.
func (q *Queue) acceptInSteps(ctx context.Context, runner run.Runner, in *run.Input, j job) (Accepted, error) {
	waiting, err := q.queuedCount(ctx)
	if err != nil {
		return Accepted{}, err
	}
	if waiting >= q.cfg.MaxQueueDepth {
		return Accepted{}, queueFull(waiting)
	}
	if err := runhost.RecordPending(ctx, q.cfg.Store, runner, in, q.cfg.Now()); err != nil {
		return Accepted{}, err
	}
	q.register(j.RunID, run.StatusPending)
	_, err = dbos.Enqueue[string](q.dbos, queueName, workflowName, j, dbos.WithEnqueueWorkflowID(j.RunID),
		dbos.WithEnqueueQueuePartitionKey(j.SessionID))
	if err != nil {
		q.fail(j, "the run could not be queued: "+err.Error())
		return Accepted{}, fmt.Errorf("durable: enqueue run %s: %w", j.RunID, err)
	}
	return Accepted{RunID: j.RunID, SessionID: j.SessionID}, nil
}

// queueFull is the [ErrQueueFull] of a queue with waiting runs.
func queueFull(waiting int) error {
	return fmt.Errorf("%w: %d runs are waiting (max_queue_depth)", ErrQueueFull, waiting)
}
