package sqldb

import (
	"context"
	"fmt"
	"sync"

	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// Group commit. SQLite has one writer, so write transactions run one after
// another, and each commit appends the pages it changed to the WAL and, with
// synchronous=FULL, waits for the disk to flush. Under concurrent load most
// of a transaction's time is that commit. So transactions that queue while
// another commits are run together, one after another inside a single
// transaction, each in its own savepoint, and committed once: the pages
// they share are written once and the disk flushes once for all of them.
//
// Each caller still gets its own outcome. A function that fails is rolled
// back to its savepoint, leaving the others' writes in place; a commit that
// fails fails every caller in the batch. No caller returns before the commit
// holding its writes is durable, so what a caller sees is what it would see
// with a transaction of its own, except that its writes become visible
// together with its batch-mates'.

// maxBatch bounds the transactions one commit carries, and so how long the
// last of them waits for the first.
const maxBatch = 64

// savepoint names the savepoint each transaction of a batch runs in.
const savepoint = "agnogo_batch_member"

// commitQueue holds the write transactions waiting for the writer. One
// waiting caller at a time is the leader: it runs the batch, then hands the
// role to the first caller still waiting.
type commitQueue struct {
	mu      sync.Mutex
	waiting []*pendingTx
	leading bool
	// shared is whether the last batch carried more than one transaction:
	// writes queue for the writer, whose time goes to them first.
	shared bool
}

// pendingTx is one caller's transaction.
type pendingTx struct {
	ctx context.Context
	fn  func(tx sqlstore.Conn) error
	err error
	// panicked holds what fn panicked with, to panic with again in the
	// caller's goroutine.
	panicked any
	// outcome receives the caller's result once its batch is over, or a
	// promotion to leader.
	outcome chan txOutcome
}

type txOutcome struct {
	err      error
	panicked any
	lead     bool
}

// call runs the transaction's function. A panic is recovered, so that the
// leader, which may be running another caller's function, still finishes
// the batch and hands the queue on; it fails the transaction and is raised
// again in its own caller.
func (tx *pendingTx) call(conn Conn) (err error) {
	defer func() {
		if r := recover(); r != nil {
			tx.panicked = r
			err = fmt.Errorf("transaction panicked: %v", r)
		}
	}()
	return tx.fn(conn)
}

// join queues tx and reports whether its caller leads: whether no batch is
// running.
func (q *commitQueue) join(tx *pendingTx) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = append(q.waiting, tx)
	if q.leading {
		return false
	}
	q.leading = true
	return true
}

// take removes the next batch from the queue.
func (q *commitQueue) take() []*pendingTx {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.waiting), maxBatch)
	q.shared = n > 1
	batch := q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	if len(q.waiting) == 0 {
		q.waiting = nil // let the backing array go
	}
	return batch
}

// tryLead makes the caller the leader when no batch is running or
// waiting, and the last one was a single write's, reporting whether it
// did: while writes queue, the writer's time goes to them.
func (q *commitQueue) tryLead() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.leading || len(q.waiting) > 0 || q.shared {
		return false
	}
	q.leading = true
	return true
}

// handOff makes the first waiting caller the leader, or ends leadership
// when no one waits.
func (q *commitQueue) handOff() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.leading = false
		return
	}
	q.waiting[0].outcome <- txOutcome{lead: true}
}

// InTx implements [sqlstore.DB]. fn runs in a write transaction, possibly
// shared with other callers' (see the package's group commit): it must not
// keep the writer waiting on anything but its own statements. A caller whose
// ctx ends while its transaction waits for the writer is answered with
// ctx's error once the batch ahead of it is over; one whose ctx ends while
// fn runs inside a shared transaction has its statements finish regardless.
func (d *DB) InTx(ctx context.Context, fn func(tx sqlstore.Conn) error) error {
	d.init()
	tx := &pendingTx{ctx: ctx, fn: fn, outcome: make(chan txOutcome, 1)}
	if !d.commits.join(tx) {
		outcome := <-tx.outcome
		if outcome.panicked != nil {
			panic(outcome.panicked)
		}
		if !outcome.lead {
			return outcome.err
		}
	}
	batch := d.commits.take()
	misses := d.runBatch(batch)
	// Statements first seen in the batch are prepared while this caller
	// still holds the writer, so the next batch does not wait for them.
	for _, query := range misses {
		d.writeStmts.prepare(context.WithoutCancel(ctx), query)
	}
	d.commits.handOff()
	for _, member := range batch {
		if member != tx {
			member.outcome <- txOutcome{err: member.err, panicked: member.panicked}
		}
	}
	if tx.panicked != nil {
		panic(tx.panicked)
	}
	return tx.err
}

// QueryRowWarm implements [sqlstore.WarmReader]: the read runs on the
// writer's connection, outside any transaction, while its caller holds
// the writer as a batch's leader would; writes that arrive meanwhile wait
// for it as for a batch, and the first of them leads next. Its row is
// scanned before the writer is handed on. While writes queue for the
// writer (its last batch carried more than one), reads leave it to them.
func (d *DB) QueryRowWarm(ctx context.Context, scan func(sqlstore.Row) error, query string, args ...any) (bool, error) {
	if d.Readers == d.Writer || !d.commits.tryLead() {
		return false, nil
	}
	d.init()
	defer d.commits.handOff()
	return true, scan(Conn{q: d.Writer, stmts: d.writeStmts}.QueryRow(ctx, query, args...))
}

// runBatch runs batch in one transaction, setting each member's err, and
// returns the statements to prepare.
func (d *DB) runBatch(batch []*pendingTx) []string {
	var misses []string
	if len(batch) == 1 {
		// Alone: the transaction is the caller's, cancellation included.
		only := batch[0]
		only.err = d.runAlone(only, &misses)
		return misses
	}
	// The shared transaction outlives any one caller's cancellation.
	ctx := context.WithoutCancel(batch[0].ctx)
	fail := func(err error) []string {
		for _, member := range batch {
			if member.err == nil {
				member.err = err
			}
		}
		return misses
	}
	sqlTx, err := d.Writer.BeginTx(ctx, nil)
	if err != nil {
		return fail(fmt.Errorf("begin: %w", err))
	}
	conn := Conn{q: sqlTx, tx: sqlTx, stmts: d.writeStmts, misses: &misses, detached: true}
	for _, member := range batch {
		if member.err = member.ctx.Err(); member.err != nil {
			continue
		}
		if _, err := conn.Exec(ctx, "SAVEPOINT "+savepoint); err != nil {
			_ = sqlTx.Rollback()
			return fail(fmt.Errorf("begin: savepoint: %w", err))
		}
		if member.err = member.call(conn); member.err != nil {
			if _, err := conn.Exec(ctx, "ROLLBACK TO "+savepoint); err != nil {
				// SQLite rolled the whole transaction back (it does on some
				// I/O and memory errors): every write of the batch is gone.
				_ = sqlTx.Rollback()
				return fail(fmt.Errorf("transaction rolled back after another write failed (%v): %w", member.err, err))
			}
		}
		if _, err := conn.Exec(ctx, "RELEASE "+savepoint); err != nil {
			_ = sqlTx.Rollback()
			return fail(fmt.Errorf("release savepoint: %w", err))
		}
	}
	if err := sqlTx.Commit(); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return misses
}

// runAlone runs tx in a transaction of its own.
func (d *DB) runAlone(tx *pendingTx, misses *[]string) error {
	sqlTx, err := d.Writer.BeginTx(tx.ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := tx.call(Conn{q: sqlTx, tx: sqlTx, stmts: d.writeStmts, misses: misses}); err != nil {
		_ = sqlTx.Rollback() // the error that made us roll back is the one to report
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
