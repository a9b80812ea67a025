package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agnogo/agnogo/storage"
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
