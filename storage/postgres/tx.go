package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// BeginFunc runs fn in a transaction on the store's connection pool,
// committing when fn returns nil and rolling back otherwise; fn's error is
// returned as it is. With [Store.StartRunTx] it lets a caller write a run
// together with its own statements on the same database (the durable queue
// enqueues the run in the transaction that writes its row), so both commit
// or neither does.
func (s *Store) BeginFunc(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op once committed
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// StartRunTx writes a run that is starting inside tx, a transaction the
// caller owns and commits (see [Store.BeginFunc]): the session is created
// when it does not exist yet (an existing session is left as it is, and
// must be the run's user's when rec.UserID is set, as with
// [Store.UpsertRun]), then the run is inserted or updated. Nothing is
// visible to others until tx commits.
func (s *Store) StartRunTx(ctx context.Context, tx pgx.Tx, session *storage.Session, rec storage.RunRecord) (storage.RunRecord, error) {
	return s.StartRunIn(ctx, pgConn{q: tx}, session, rec)
}

// lazyTx is a transaction that starts with its first statement: BEGIN and
// that statement go to the server in one batch, so a transaction of n
// statements takes n+1 round trips (its COMMIT) rather than n+2. A
// transaction that runs no statement sends nothing.
type lazyTx struct {
	conn  *pgx.Conn
	binds *binds
	begun bool
	// atCommit holds statements sent with the COMMIT
	// ([sqlstore.CommitExecer]).
	atCommit []queued
}

// queued is a statement held for the COMMIT.
type queued struct {
	query string
	args  []any
}

// ExecAtCommit implements [sqlstore.CommitExecer].
func (t *lazyTx) ExecAtCommit(query string, args ...any) {
	t.atCommit = append(t.atCommit, queued{t.binds.rebind(query), args})
}

// batch starts a batch of the transaction: with BEGIN first when nothing
// ran yet, which it reports.
func (t *lazyTx) batch() (b *pgx.Batch, begins bool) {
	b = &pgx.Batch{}
	if !t.begun {
		b.Queue("BEGIN")
		t.begun = true
		return b, true
	}
	return b, false
}

// direct runs statements on the connection, the transaction begun.
func (t *lazyTx) direct() pgConn { return pgConn{q: t.conn, binds: t.binds} }

// begin sends BEGIN with the first statement and returns that statement's
// results, BEGIN's read.
func (t *lazyTx) begin(ctx context.Context, query string, args []any) (pgx.BatchResults, error) {
	b, _ := t.batch()
	b.Queue(t.binds.rebind(query), args...)
	results := t.conn.SendBatch(ctx, b)
	if _, err := results.Exec(); err != nil {
		_ = results.Close()
		return nil, err
	}
	return results, nil
}

func (t *lazyTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if t.begun {
		return t.direct().Exec(ctx, query, args...)
	}
	results, err := t.begin(ctx, query, args)
	if err != nil {
		return 0, err
	}
	tag, err := results.Exec()
	if closeErr := results.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t *lazyTx) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if !t.begun {
		// Rows stay open while the caller reads them: BEGIN goes first, alone.
		if _, err := t.conn.Exec(ctx, "BEGIN"); err != nil {
			return nil, err
		}
		t.begun = true
	}
	return t.direct().Query(ctx, query, args...)
}

func (t *lazyTx) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	if t.begun {
		return t.direct().QueryRow(ctx, query, args...)
	}
	results, err := t.begin(ctx, query, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{results: results, row: results.QueryRow()}
}

// QueryRows implements [sqlstore.Pipeliner]: the statements go to the
// server in one batch (after BEGIN when none ran yet), and their rows are
// read in order. The server runs each statement of the batch on its own
// snapshot, taken when the statement starts, as it would one sent alone.
func (t *lazyTx) QueryRows(ctx context.Context, stmts ...sqlstore.Pipelined) error {
	b, begin := t.batch()
	for _, st := range stmts {
		b.Queue(t.binds.rebind(st.Query), st.Args...)
	}
	results := t.conn.SendBatch(ctx, b)
	var err error
	if begin {
		_, err = results.Exec()
	}
	for _, st := range stmts {
		if err != nil {
			break
		}
		err = st.Scan(pgRow{results.QueryRow()})
	}
	if closeErr := results.Close(); err == nil {
		err = closeErr
	}
	return err
}

// commit commits what ran; a transaction the server had to abort reports
// [pgx.ErrTxCommitRollback].
func (t *lazyTx) commit(ctx context.Context) error {
	if len(t.atCommit) > 0 {
		return t.commitBatch(ctx)
	}
	if !t.begun {
		return nil
	}
	tag, err := t.conn.Exec(ctx, "COMMIT")
	if err != nil {
		return err
	}
	return committed(tag)
}

// commitBatch sends the statements held for the COMMIT and the COMMIT in
// one batch (after BEGIN when nothing ran yet). When one fails the server
// skips the rest, COMMIT included, and the transaction is rolled back.
func (t *lazyTx) commitBatch(ctx context.Context) error {
	b, _ := t.batch()
	for _, q := range t.atCommit {
		b.Queue(q.query, q.args...)
	}
	b.Queue("COMMIT")
	t.atCommit = nil
	results := t.conn.SendBatch(ctx, b)
	var tag pgconn.CommandTag
	var err error
	for range b.Len() {
		if tag, err = results.Exec(); err != nil {
			break
		}
	}
	if closeErr := results.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		t.rollback(ctx)
		return err
	}
	return committed(tag)
}

// committed reads COMMIT's tag: a transaction the server had to abort
// reports [pgx.ErrTxCommitRollback].
func committed(tag pgconn.CommandTag) error {
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// rollback undoes what ran. When it cannot, the connection is left inside
// its transaction, and the pool closes it on release.
func (t *lazyTx) rollback(ctx context.Context) {
	if t.begun {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_, _ = t.conn.Exec(ctx, "ROLLBACK")
	}
}

// rollbackTimeout bounds a ROLLBACK, which runs even when the
// transaction's context has ended.
const rollbackTimeout = 5 * time.Second

// batchRow is the row of a statement sent with its transaction's BEGIN;
// scanning it releases the batch.
type batchRow struct {
	results pgx.BatchResults
	row     pgx.Row
}

func (r batchRow) Scan(dest ...any) error {
	err := pgRow{r.row}.Scan(dest...)
	if closeErr := r.results.Close(); err == nil {
		err = closeErr
	}
	return err
}

// errRow is a row that failed before it was read.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
