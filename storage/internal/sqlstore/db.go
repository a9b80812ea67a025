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

// Pipeliner is a transaction that can send several statements in one
// round trip. Each statement still runs on its own: one that waits for a
// row lock sees, once it has it, what the lock's holder committed.
type Pipeliner interface {
	// QueryRows sends the statements together and hands each one's row to
	// its scan, in order. It returns the first error, a scan's or a
	// statement's; the statements after a failed one change nothing once
	// the transaction rolls back, which it must then do.
	QueryRows(ctx context.Context, stmts ...Pipelined) error
}

// Pipelined is one statement of a [Pipeliner] round trip.
type Pipelined struct {
	Query string
	Args  []any
	// Scan reads the statement's row.
	Scan func(Row) error
}

// pipelinerOf returns tx as a [Pipeliner], or nil when its connection sends
// one statement at a time. The arguments of a checked connection's
// statements are checked before they are sent.
func pipelinerOf(tx Conn) Pipeliner {
	inner := tx
	checked := false
	if c, ok := tx.(checkedConn); ok {
		inner, checked = c.Conn, true
	}
	p, ok := inner.(Pipeliner)
	if !ok {
		return nil
	}
	if checked {
		return checkedPipeliner{p}
	}
	return p
}

// checkedPipeliner checks a batch's text arguments before it is sent, and
// maps the database's refusal of text as [checkedConn] does.
type checkedPipeliner struct{ Pipeliner }

func (c checkedPipeliner) QueryRows(ctx context.Context, stmts ...Pipelined) error {
	checked := make([]Pipelined, len(stmts))
	for i, st := range stmts {
		if err := checkArgs(st.Args); err != nil {
			return err
		}
		scan := st.Scan
		st.Scan = func(row Row) error { return scan(checkedRow{row}) }
		checked[i] = st
	}
	return invalidText(c.Pipeliner.QueryRows(ctx, checked...))
}

// rowStatement is a statement that returns one row, with what reads it.
type rowStatement[T any] struct {
	query string
	args  []any
	scan  func(Row) (T, error)
	// orElse, when set, is a statement that takes the same arguments and
	// runs when query returns no row (and so changed nothing): the general
	// form of a query narrowed for its common case.
	orElse string
}

// run runs the statement on tx and reads its row.
func (st rowStatement[T]) run(ctx context.Context, tx Conn) (T, error) {
	out, err := st.scan(tx.QueryRow(ctx, st.query, st.args...))
	if st.orElse != "" && errors.Is(err, ErrNoRows) {
		return st.scan(tx.QueryRow(ctx, st.orElse, st.args...))
	}
	return out, err
}

// GroupCommitter is a database that can run a write in a transaction it
// shares with concurrent writes, committing them together (one commit, and
// one flush of the log, for many writes). fn may run twice: when another
// write of its group fails, the group is undone and each of its writes runs
// again in a transaction of its own. key orders a group's writes (the
// session a save locks first), so that two groups lock rows in one order.
type GroupCommitter interface {
	InGroupTx(ctx context.Context, key string, fn func(tx Conn) error) error
}

// ReadBatcher is a database that can send a one-row read together with
// the reads of concurrent callers, in one round trip: a busy server so
// makes one exchange for many of its most frequent reads. A read whose
// statement fails in a batch runs again alone, so no read fails with
// another's error.
type ReadBatcher interface {
	// QueryRowBatched runs read's statement and hands its row to
	// read.Scan, which is never called once QueryRowBatched has returned.
	QueryRowBatched(ctx context.Context, read Pipelined) error
}

// WarmReader is a database that can serve a one-row read from the
// connection that writes, when no write is running or waiting. SQLite's
// writer keeps in its page cache the pages its last commit changed, which
// every reader connection has to read again from the log: the frequent
// read of a row the last write changed (a session's version, checked at
// the start of the session's next run) is cheapest there.
type WarmReader interface {
	// QueryRowWarm runs the read on the writer's connection and hands its
	// row to scan, reporting true, when the writer is idle; it reports
	// false, having done nothing, when a write holds or awaits it.
	QueryRowWarm(ctx context.Context, scan func(Row) error, query string, args ...any) (bool, error)
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
