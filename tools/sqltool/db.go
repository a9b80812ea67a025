package sqltool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/toolkit"
)

// The pools' limits: few connections, closed after a minute idle, so a
// toolkit nobody closes holds no connection while it is not used.
const (
	maxOpenConns    = 2
	connMaxIdleTime = time.Minute
	connMaxLifetime = 30 * time.Minute
)

// networkGrace is how much longer than timeout_seconds a PostgreSQL call's
// context lasts, so that the server's statement_timeout, which keeps the
// connection, fires before the context, which drops it.
const networkGrace = 500 * time.Millisecond

// errClosed is the failure of a call after [Database.Close].
var errClosed = errors.New("the toolkit's database was closed")

// pool returns the pool to read with, or with write set the one to write
// with, opening it on first use. sql.Open and stdlib.OpenDB do no I/O:
// connections are made as queries need them.
func (d *Database) pool(write bool) (*sql.DB, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, &toolkit.Error{Toolkit: ToolkitName, Class: run.ClassBadRequest, Message: errClosed.Error(), Err: errClosed}
	}
	if d.dialect == postgres || !write {
		if d.read == nil {
			db, err := d.openPool(false)
			if err != nil {
				return nil, err
			}
			d.read = db
		}
		return d.read, nil
	}
	if d.write == nil {
		db, err := d.openPool(true)
		if err != nil {
			return nil, err
		}
		d.write = db
	}
	return d.write, nil
}

// openPool opens a pool: on PostgreSQL one for reads and writes, whose
// connections are read-only by default unless allow_writes is set; on
// SQLite a read-only one (mode=ro, query_only) or, with write, a
// read-write one that creates the file if needed.
func (d *Database) openPool(write bool) (*sql.DB, error) {
	var db *sql.DB
	if d.dialect == postgres {
		config, err := pgx.ParseConfig(d.target)
		if err != nil {
			return nil, &toolkit.Error{Toolkit: ToolkitName, Class: run.ClassBadRequest, Err: err,
				Message: fmt.Sprintf("url %s: %v", d.display, err)}
		}
		// Exec mode: no statement cache of model-written SQL on the server,
		// and the extended protocol, which runs one statement per query.
		config.DefaultQueryExecMode = pgx.QueryExecModeExec
		if config.RuntimeParams == nil {
			config.RuntimeParams = map[string]string{}
		}
		if config.RuntimeParams["application_name"] == "" {
			config.RuntimeParams["application_name"] = "agnogo-sql"
		}
		// Session settings, set once a connection is made (rather than as
		// startup parameters, which a pooler such as PgBouncer may refuse):
		// statement_timeout bounds run_statement, which runs outside a
		// transaction block; without allow_writes every transaction is
		// read-only by default, beside run_query's BEGIN READ ONLY.
		settings := []string{"SET statement_timeout = " + strconv.FormatInt(d.timeout.Milliseconds(), 10)}
		if !d.allowWrites {
			settings = append(settings, "SET default_transaction_read_only = on")
		}
		db = stdlib.OpenDB(*config, stdlib.OptionAfterConnect(func(ctx context.Context, conn *pgx.Conn) error {
			for _, s := range settings {
				if _, err := conn.Exec(ctx, s); err != nil {
					return fmt.Errorf("%s: %w", s, err)
				}
			}
			return nil
		}))
	} else {
		mode, queryOnly := "ro", true
		if write {
			mode, queryOnly = "rwc", false
		}
		var err error
		db, err = sql.Open("sqlite", sqliteDSN(d.target, mode, d.timeout, queryOnly))
		if err != nil {
			return nil, &toolkit.Error{Toolkit: ToolkitName, Class: run.ClassBadRequest, Message: err.Error(), Err: err}
		}
	}
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxOpenConns)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	db.SetConnMaxLifetime(connMaxLifetime)
	if write {
		db.SetMaxOpenConns(1) // SQLite has one writer at a time
	}
	return db, nil
}

// withTimeout bounds a call by timeout_seconds (plus, on PostgreSQL, a
// grace for the server's own statement_timeout to fire first).
func (d *Database) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	timeout := d.timeout
	if d.dialect == postgres {
		timeout += networkGrace
	}
	return context.WithTimeout(ctx, timeout)
}

// readTx runs fn in a read-only transaction: on PostgreSQL BEGIN READ
// ONLY with SET LOCAL statement_timeout, on SQLite on the read-only
// connection; it is always rolled back.
func (d *Database) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	db, err := d.pool(false)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if d.dialect == postgres {
		if _, err := tx.ExecContext(ctx, "SET LOCAL statement_timeout = "+strconv.FormatInt(d.timeout.Milliseconds(), 10)); err != nil {
			return err
		}
	}
	return fn(tx)
}

// runQuery is run_query: the check, then the query in a read-only
// transaction.
func (d *Database) runQuery(ctx context.Context, query string) (string, error) {
	if err := checkRead(d.dialect, query, d.allowWrites); err != nil {
		return "", &toolkit.Error{Toolkit: ToolkitName, Class: run.ClassBadRequest, Message: err.Error(), Err: err}
	}
	return d.query(ctx, query)
}

// query runs a query, unchecked, in a read-only transaction and renders
// its rows.
func (d *Database) query(ctx context.Context, query string) (string, error) {
	ctx, cancel := d.withTimeout(ctx)
	defer cancel()
	var out string
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = d.render(rows)
		return err
	})
	if err != nil {
		return "", d.classify(ctx, err)
	}
	return out, nil
}

// runStatement is run_statement: one statement, committed on its own.
func (d *Database) runStatement(ctx context.Context, statement string) (string, error) {
	if err := checkWrite(d.dialect, statement); err != nil {
		return "", &toolkit.Error{Toolkit: ToolkitName, Class: run.ClassBadRequest, Message: err.Error(), Err: err}
	}
	db, err := d.pool(true)
	if err != nil {
		return "", err
	}
	ctx, cancel := d.withTimeout(ctx)
	defer cancel()
	// Autocommit, bounded on PostgreSQL by the connection's
	// statement_timeout: statements such as VACUUM or CREATE INDEX
	// CONCURRENTLY cannot run inside a transaction block.
	result, err := db.ExecContext(ctx, statement)
	if err != nil {
		return "", d.classify(ctx, err)
	}
	affected, err := result.RowsAffected()
	if err != nil {
		return `{"ok":true}`, nil
	}
	return fmt.Sprintf(`{"rows_affected":%d}`, affected), nil
}

// classify wraps a database failure in a [*toolkit.Error] of run's
// taxonomy: the timeout a query ran into, a write the read-only
// transaction refused, a login refused, a connection failing, or — most
// often — SQL the database refused (bad_request, with its message, detail
// and hint). A caller's cancellation is returned as it is.
func (d *Database) classify(ctx context.Context, err error) error {
	var classified *toolkit.Error
	if errors.As(err, &classified) {
		return err
	}
	if errors.Is(err, context.Canceled) && ctx.Err() == context.Canceled {
		return err
	}
	fail := func(class run.ErrorClass, message string) error {
		return &toolkit.Error{Toolkit: ToolkitName, Class: class, Message: message, Err: err}
	}
	timedOut := fmt.Sprintf("the query ran longer than timeout_seconds (%gs) and was stopped: filter, aggregate or add a LIMIT", d.timeout.Seconds())
	readOnly := "the database refused a write: " + RunQueryName + " runs in a read-only transaction"
	if d.allowWrites {
		readOnly += "; use " + RunStatementName + " to change data"
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		message := pgErr.Message
		if pgErr.Detail != "" {
			message += " (" + pgErr.Detail + ")"
		}
		if pgErr.Hint != "" {
			message += "; hint: " + pgErr.Hint
		}
		switch {
		case pgErr.Code == "57014": // query_canceled: statement_timeout
			return fail(run.ClassTimeout, timedOut+" ("+pgErr.Message+")")
		case pgErr.Code == "25006": // read_only_sql_transaction
			return fail(run.ClassBadRequest, readOnly+" ("+pgErr.Message+")")
		case pgErr.Code == "28000" || pgErr.Code == "28P01":
			return fail(run.ClassAuthentication, message)
		case strings.HasPrefix(pgErr.Code, "08"), strings.HasPrefix(pgErr.Code, "57P"), pgErr.Code == "53300":
			return fail(run.ClassConnection, message)
		case strings.HasPrefix(pgErr.Code, "53"), strings.HasPrefix(pgErr.Code, "XX"), strings.HasPrefix(pgErr.Code, "58"):
			return fail(run.ClassServer, message)
		}
		return fail(run.ClassBadRequest, message+" [SQLSTATE "+pgErr.Code+"]")
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fail(run.ClassTimeout, timedOut)
	}
	var sqliteErr *msqlite.Error
	if errors.As(err, &sqliteErr) {
		switch sqliteErr.Code() & 0xff {
		case sqlite3.SQLITE_READONLY:
			return fail(run.ClassBadRequest, readOnly+" ("+sqliteErr.Error()+")")
		case sqlite3.SQLITE_CANTOPEN:
			if _, statErr := os.Stat(d.target); errors.Is(statErr, fs.ErrNotExist) {
				return fail(run.ClassBadRequest, fmt.Sprintf("the SQLite file %s does not exist", d.target))
			}
			return fail(run.ClassConnection, sqliteErr.Error())
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fail(run.ClassServer, sqliteErr.Error()+": the database is busy; try again")
		case sqlite3.SQLITE_INTERRUPT:
			return fail(run.ClassTimeout, timedOut)
		}
		return fail(run.ClassBadRequest, sqliteErr.Error())
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.Timeout(err) {
		return toolkit.Classify(ToolkitName, err)
	}
	return fail(run.ClassBadRequest, err.Error())
}
