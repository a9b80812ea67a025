package sqlstore

import (
	"context"
	"errors"
)

// ErrNoRows is returned by [Row.Scan] when a query matched nothing. Adapters
// translate their driver's own sentinel into it.
var ErrNoRows = errors.New("no rows in result set")

// Rows iterates a query result.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is a single-row query result.
type Row interface {
	// Scan copies the row into dest, or returns [ErrNoRows].
	Scan(dest ...any) error
}

// Conn runs statements, inside or outside a transaction. Queries use `?`
// placeholders.
type Conn interface {
	Exec(ctx context.Context, query string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// CommitExecer is a transaction that can hold a statement whose result
// nobody reads until its COMMIT and send both together, sparing a round
// trip. An error of the statement fails the commit, and the transaction
// rolls back. See [execAtCommit].
type CommitExecer interface {
	ExecAtCommit(query string, args ...any)
}

// execAtCommit runs a statement whose result nobody reads, as the last of
// the transaction tx: with the COMMIT when tx is a [CommitExecer], now
// otherwise.
func execAtCommit(ctx context.Context, tx Conn, query string, args ...any) error {
	inner := tx
	if c, ok := tx.(checkedConn); ok {
		// Checked now; the commit's error is mapped as the transaction's.
		if err := checkArgs(args); err != nil {
			return err
		}
		inner = c.Conn
	}
	if c, ok := inner.(CommitExecer); ok {
		c.ExecAtCommit(query, args...)
		return nil
	}
	_, err := tx.Exec(ctx, query, args...)
	return err
}

// DB is a database as the store sees it: a connection for reads and a way to
// run a function inside one write transaction.
type DB interface {
	// Reader runs reads; it sees every committed write.
	Reader() Conn
	// InTx runs fn in a write transaction, committing when fn returns nil and
	// rolling back otherwise.
	InTx(ctx context.Context, fn func(tx Conn) error) error
	// Close releases the connections.
	Close() error
}
