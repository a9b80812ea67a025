// Package sqldb adapts database/sql to the connection interfaces of
// storage/internal/sqlstore.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// Conn wraps a *sql.DB or *sql.Tx as a [sqlstore.Conn]. Statements are
// prepared once per pool and reused: parsing SQL costs SQLite more than
// running these small statements.
type Conn struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
	// tx is set inside a transaction, which binds the cached statements.
	tx    *sql.Tx
	stmts *stmtCache
	// misses collects, inside a transaction, the statements to prepare
	// once it ends.
	misses *[]string
	// detached runs statements without the caller's cancellation: in a
	// commit shared by several callers, an interrupted statement would roll
	// back the others' writes too (see [DB.InTx]).
	detached bool
}

// stmt returns the cached prepared statement for query, or nil to run it
// unprepared. Outside a transaction a missing statement is prepared on the
// spot. Inside one it is only noted: the transaction holds the writer's one
// connection, so it is prepared once the transaction ends (see [DB.InTx]).
func (c Conn) stmt(ctx context.Context, query string) *sql.Stmt {
	if c.stmts == nil {
		return nil
	}
	stmt := c.stmts.peek(query)
	switch {
	case stmt != nil && c.tx != nil:
		return c.tx.StmtContext(ctx, stmt)
	case stmt != nil:
		return stmt
	case c.tx != nil:
		*c.misses = append(*c.misses, query)
		return nil
	}
	return c.stmts.prepare(ctx, query)
}

// stmtCache holds the prepared statements of one pool.
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// maxCachedStatements bounds the cache: queries are built from templates,
// but IN lists of varying length make new texts.
const maxCachedStatements = 512

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}}
}

func (c *stmtCache) peek(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[query]
}

// prepare prepares and caches query. The lock is not held while preparing,
// which may wait for a connection.
func (c *stmtCache) prepare(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	full := len(c.stmts) >= maxCachedStatements
	c.mu.Unlock()
	if full {
		return nil
	}
	stmt, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil // the statement's own error surfaces when it runs unprepared
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.stmts[query]; ok {
		_ = stmt.Close()
		return cached
	}
	c.stmts[query] = stmt
	return stmt
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, stmt := range c.stmts {
		errs = append(errs, stmt.Close())
	}
	c.stmts = map[string]*sql.Stmt{}
	return errors.Join(errs...)
}

// context returns the context a statement runs under.
func (c Conn) context(ctx context.Context) context.Context {
	if c.detached {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// Exec implements [sqlstore.Conn].
func (c Conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	ctx = c.context(ctx)
	var res sql.Result
	var err error
	if stmt := c.stmt(ctx, query); stmt != nil {
		res, err = stmt.ExecContext(ctx, args...)
	} else {
		res, err = c.q.ExecContext(ctx, query, args...)
	}
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
	ctx = c.context(ctx)
	var rows *sql.Rows
	var err error
	if stmt := c.stmt(ctx, query); stmt != nil {
		rows, err = stmt.QueryContext(ctx, args...)
	} else {
		rows, err = c.q.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// QueryRow implements [sqlstore.Conn].
func (c Conn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	ctx = c.context(ctx)
	if stmt := c.stmt(ctx, query); stmt != nil {
		return sqlRow{stmt.QueryRowContext(ctx, args...)}
	}
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
// failing with "database is locked", and transactions that queue together
// share one commit (see [DB.InTx]).
type DB struct {
	// Writer runs write transactions.
	Writer *sql.DB
	// Readers serve reads; may be the same pool as Writer.
	Readers *sql.DB

	once                  sync.Once
	writeStmts, readStmts *stmtCache
	commits               commitQueue
}

func (d *DB) init() {
	d.once.Do(func() {
		d.writeStmts = newStmtCache(d.Writer)
		d.readStmts = d.writeStmts
		if d.Readers != d.Writer {
			d.readStmts = newStmtCache(d.Readers)
		}
	})
}

// Reader implements [sqlstore.DB].
func (d *DB) Reader() sqlstore.Conn {
	d.init()
	return Conn{q: d.Readers, stmts: d.readStmts}
}

// Close implements [sqlstore.DB].
func (d *DB) Close() error {
	d.init()
	err := d.writeStmts.close()
	if d.readStmts != d.writeStmts {
		err = errors.Join(err, d.readStmts.close())
	}
	err = errors.Join(err, d.Writer.Close())
	if d.Readers != d.Writer {
		err = errors.Join(err, d.Readers.Close())
	}
	return err
}
