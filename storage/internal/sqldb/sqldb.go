// Package sqldb adapts database/sql to the connection interfaces of
// storage/internal/sqlstore.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// Conn wraps a *sql.DB or *sql.Tx as a [sqlstore.Conn].
type Conn struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

// Exec implements [sqlstore.Conn].
func (c Conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("rows affected: %w", err)
	}
	return n, nil
}

// Query implements [sqlstore.Conn].
func (c Conn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := c.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// QueryRow implements [sqlstore.Conn].
func (c Conn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return sqlRow{c.q.QueryRowContext(ctx, query, args...)}
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() } // a close error after iteration surfaces through Err

type sqlRow struct{ row *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}

// DB is a [sqlstore.DB] with separate pools for writes and reads. With a
// single-connection writer, write transactions queue in-process instead of
// failing with "database is locked".
type DB struct {
	// Writer runs write transactions.
	Writer *sql.DB
	// Readers serve reads; may be the same pool as Writer.
	Readers *sql.DB
}

// Reader implements [sqlstore.DB].
func (d *DB) Reader() sqlstore.Conn { return Conn{q: d.Readers} }

// InTx implements [sqlstore.DB].
func (d *DB) InTx(ctx context.Context, fn func(tx sqlstore.Conn) error) error {
	tx, err := d.Writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(Conn{q: tx}); err != nil {
		_ = tx.Rollback() // the error that made us roll back is the one to report
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Close implements [sqlstore.DB].
func (d *DB) Close() error {
	err := d.Writer.Close()
	if d.Readers != d.Writer {
		err = errors.Join(err, d.Readers.Close())
	}
	return err
}
