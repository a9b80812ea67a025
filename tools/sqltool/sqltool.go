// Package sqltool is the sql toolkit: a model lists the tables of a
// PostgreSQL or SQLite database, describes one, and runs read-only queries
// on it — and, only when the settings allow writes, runs statements that
// change it, each approved by a person.
//
// # Tools
//
//   - list_tables: the tables and views (with their schema on PostgreSQL).
//   - describe_table: a table's columns, types, nullability, defaults,
//     primary key and foreign keys.
//   - run_query: one read-only statement (SELECT, WITH, VALUES, EXPLAIN,
//     SHOW on PostgreSQL, reading PRAGMAs on SQLite); the rows come back as
//     a compact JSON object {"columns": [...], "rows": [{column: value}],
//     "row_count": n, "note": "..."} whose row objects keep the columns'
//     order. Text is a JSON string, bytes that are not UTF-8 an object
//     {"base64": ..., "bytes": n}, times RFC 3339, PostgreSQL json and
//     numeric values JSON.
//   - run_statement, only with allow_writes: one INSERT, UPDATE, DELETE or
//     DDL statement, answered with the rows it affected. It always requires
//     confirmation: a person approves each call, and no setting removes
//     that.
//
// # Read-only is the database's guarantee
//
// run_query refuses more than one statement and anything but a reading
// statement, with a message saying why; that check is a courtesy. The
// guarantee is the database's: on PostgreSQL every query runs in a
// transaction opened with BEGIN READ ONLY (with SET LOCAL
// statement_timeout) and rolled back, on connections whose
// default_transaction_read_only is on unless allow_writes is set; on
// SQLite queries run on a connection opened read-only (mode=ro and
// PRAGMA query_only). A function that writes, a SELECT INTO or a
// data-modifying WITH is refused by the database itself. What reaches
// outside the transaction — dblink, say — is not: where such extensions are
// installed, give the toolkit a role without write grants as well.
//
// The tables setting narrows what list_tables and describe_table show; it
// is not access control, as run_query may read any table the database
// user can. Give the toolkit a database user whose grants are what the
// model may see.
//
// # Settings
//
// url (required) names the database: postgres://user:pass@host:5432/db or
// postgresql://…; sqlite:PATH, sqlite://PATH, file:PATH or a path ending
// .db, .sqlite or .sqlite3. max_rows (default 100) cuts each result, with
// a note saying how many rows there were; max_result_bytes (default 64
// KiB) bounds a result's size; timeout_seconds (default 10) bounds each
// call; tables is an allow-list of the tables list_tables and
// describe_table show; allow_writes (default false) adds run_statement.
//
// # Connections
//
// [New] and [Open] do no I/O: the database is opened on the first call.
// Each toolkit holds a small pool — at most two connections, each closed
// after a minute idle — so an agent built from a config file holds no
// connection while it is not querying. A Go program that builds the
// toolkit with [Open] calls [Database.Close] when done; with [New] the
// pool's idle connections close on their own.
package sqltool

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agnogo/agnogo/storage/dburl"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// ToolkitName is the toolkit's name, as config files list it.
const ToolkitName = "sql"

// The tools' names.
const (
	ListTablesName    = "list_tables"
	DescribeTableName = "describe_table"
	RunQueryName      = "run_query"
	RunStatementName  = "run_statement"
)

// Names lists the tools the toolkit can have, in order; a toolkit has
// run_statement only when allow_writes is set.
func Names() []string {
	return []string{ListTablesName, DescribeTableName, RunQueryName, RunStatementName}
}

// The settings' defaults and bounds.
const (
	// DefaultMaxRows is max_rows when it is not set.
	DefaultMaxRows = 100
	// DefaultTimeout is timeout_seconds when it is not set.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxResultBytes is max_result_bytes when it is not set: 64 KiB.
	DefaultMaxResultBytes = 64 << 10
	// MinMaxResultBytes is the smallest max_result_bytes accepted: room
	// for a few rows and the note saying the result was cut.
	MinMaxResultBytes = 1 << 10
	// MaxMaxRows is the largest max_rows accepted.
	MaxMaxRows = 100_000
)

// Config is the toolkit's settings, from Go or from a config file's
// mapping.
type Config struct {
	// URL names the database: postgres://user:pass@host:5432/db (or
	// postgresql://) for PostgreSQL, where a missing password is taken from
	// PGPASSWORD or ~/.pgpass as libpq does; sqlite:PATH, sqlite://PATH,
	// file:PATH or a path ending .db, .sqlite or .sqlite3 for a SQLite file.
	// Required; in a config file write url: "${DATABASE_URL}" to keep a
	// password out of it.
	URL string `json:"url"`
	// MaxRows is the most rows a query returns; a longer result is cut,
	// with a note saying how many rows there were. Defaults to 100.
	MaxRows int `json:"max_rows,omitempty"`
	// TimeoutSeconds bounds each call (on PostgreSQL also as the
	// transaction's statement_timeout); a query that runs longer fails
	// with a timeout error. Defaults to 10.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// MaxResultBytes bounds a result's size in bytes; rows past it are cut,
	// with a note, and a long value is shortened. Defaults to 65536 (64
	// KiB); at least 1024.
	MaxResultBytes int `json:"max_result_bytes,omitempty"`
	// Tables, when not empty, are the only tables and views list_tables
	// and describe_table show: names such as orders or, on PostgreSQL,
	// sales.orders, matched without regard to case. It does not restrict
	// run_query. Defaults to nil: all.
	Tables []string `json:"tables,omitempty"`
	// AllowWrites adds run_statement, which runs INSERT, UPDATE, DELETE
	// and DDL statements, each after a person approves it. Defaults to
	// false: the toolkit only reads.
	AllowWrites bool `json:"allow_writes,omitempty"`
}

// Definition declares the toolkit for config files, as sql.
func Definition() toolkit.Definition {
	return toolkit.Define(ToolkitName,
		"SQL on a PostgreSQL or SQLite database: list_tables, describe_table, read-only run_query, and with allow_writes run_statement (each call approved by a person).",
		Names(), func(_ context.Context, cfg Config) (*toolkit.Toolkit, error) {
			return New(cfg)
		})
}

// New validates cfg and returns the toolkit, without connecting: the
// database is opened on the first call. Its connections close on their own
// after a minute idle; use [Open] for a [Database] to close at once.
func New(cfg Config) (*toolkit.Toolkit, error) {
	db, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	return db.Toolkit(), nil
}

// Database is the toolkit bound to one database: its tools and its
// connection pool, opened on the first call and closed by
// [Database.Close]. It is safe for concurrent use.
//
// Unclosed — as when [New] built it for a config file's agent — it holds
// no connection after a minute idle, only the pool's bookkeeping
// goroutine.
type Database struct {
	dialect        dialect
	target         string // the PostgreSQL URL, or the SQLite file's path
	display        string // the URL without its password
	maxRows        int
	timeout        time.Duration
	maxResultBytes int
	tables         []string
	allowWrites    bool

	mu     sync.Mutex
	closed bool
	read   *sql.DB // PostgreSQL: the only pool; SQLite: the read-only one
	write  *sql.DB // SQLite with allow_writes: the read-write pool
}

// Open validates cfg and returns the database's toolkit, without
// connecting: the database is opened on the first call. Call
// [Database.Close] when done.
func Open(cfg Config) (*Database, error) {
	var errs []error
	d := &Database{
		maxRows:        cmp.Or(cfg.MaxRows, DefaultMaxRows),
		maxResultBytes: cmp.Or(cfg.MaxResultBytes, DefaultMaxResultBytes),
		allowWrites:    cfg.AllowWrites,
		timeout:        DefaultTimeout,
	}
	var err error
	d.dialect, d.target, d.display, err = parseURL(cfg.URL)
	if err != nil {
		errs = append(errs, err)
	}
	if cfg.MaxRows < 0 || cfg.MaxRows > MaxMaxRows {
		errs = append(errs, fmt.Errorf("max_rows: %d is out of range: want 1 to %d (default %d)", cfg.MaxRows, MaxMaxRows, DefaultMaxRows))
	}
	switch {
	case math.IsNaN(cfg.TimeoutSeconds) || cfg.TimeoutSeconds < 0 || cfg.TimeoutSeconds > 24*3600:
		errs = append(errs, fmt.Errorf("timeout_seconds: %v is out of range: want a positive number of seconds such as 10 (the default)", cfg.TimeoutSeconds))
	case cfg.TimeoutSeconds > 0:
		d.timeout = time.Duration(cfg.TimeoutSeconds * float64(time.Second))
		if d.timeout < time.Millisecond {
			errs = append(errs, fmt.Errorf("timeout_seconds: %v is below a millisecond", cfg.TimeoutSeconds))
		}
	}
	if cfg.MaxResultBytes != 0 && cfg.MaxResultBytes < MinMaxResultBytes {
		errs = append(errs, fmt.Errorf("max_result_bytes: %d is too small: want at least %d (default %d)", cfg.MaxResultBytes, MinMaxResultBytes, DefaultMaxResultBytes))
	}
	for i, name := range cfg.Tables {
		name = strings.TrimSpace(name)
		if name == "" {
			errs = append(errs, fmt.Errorf("tables[%d]: empty table name", i))
			continue
		}
		d.tables = append(d.tables, name)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

// parseURL reads the url setting: the dialect, the PostgreSQL URL or the
// SQLite path, and the URL as it may be shown.
func parseURL(raw string) (dialect, string, string, error) {
	const accepted = "use postgres://user:pass@host:5432/db, sqlite:PATH, file:PATH or a path ending .db or .sqlite"
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return 0, "", "", fmt.Errorf("url: required: the database to query (%s)", accepted)
	}
	scheme, rest, hasScheme := strings.Cut(raw, ":")
	if !hasScheme || strings.ContainsAny(scheme, `/\.`) {
		scheme, rest = "", raw
	}
	var path string
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		target, err := dburl.Parse(raw)
		if err != nil {
			return 0, "", "", fmt.Errorf("url: %w", err)
		}
		return postgres, target.URL, target.String(), nil
	case "sqlite":
		path = strings.TrimPrefix(rest, "//")
	case "file":
		path = rest
		if strings.HasPrefix(path, "//") {
			host, p, _ := strings.Cut(path[2:], "/")
			if host != "" && host != "localhost" {
				return 0, "", "", fmt.Errorf("url: %q names a host: a SQLite file must be local (%s)", raw, accepted)
			}
			path = "/" + p
		}
	case "":
		switch strings.ToLower(filepath.Ext(raw)) {
		case ".db", ".sqlite", ".sqlite3":
			path = raw
		default:
			return 0, "", "", fmt.Errorf("url: %q names no database: %s", raw, accepted)
		}
	default:
		return 0, "", "", fmt.Errorf("url: scheme %q is not supported: %s", scheme, accepted)
	}
	switch {
	case path == "":
		return 0, "", "", fmt.Errorf("url: %q has no file path (%s)", raw, accepted)
	case strings.ContainsAny(path, "?#"):
		return 0, "", "", fmt.Errorf("url: %q: a SQLite URL takes no ?parameters or #fragment: the toolkit sets them", raw)
	case path == ":memory:" || strings.HasPrefix(path, ":memory"):
		return 0, "", "", fmt.Errorf("url: %q: an in-memory database is private to one connection; give a file", raw)
	}
	return sqlite, path, "sqlite:" + path, nil
}

// Dialect names the database's kind: PostgreSQL or SQLite.
func (d *Database) Dialect() string { return d.dialect.String() }

// Toolkit returns the toolkit of d's tools and instructions.
func (d *Database) Toolkit() *toolkit.Toolkit {
	return &toolkit.Toolkit{Name: ToolkitName, Tools: d.Tools(), Instructions: d.instructions()}
}

// instructions tell the model what database it has and how to use it.
func (d *Database) instructions() string {
	var b strings.Builder
	fmt.Fprintf(&b, "You can query a %s database with the sql tools. Call %s and %s before writing a query you are unsure of. "+
		"%s runs one read-only statement per call and returns at most %d rows: filter, aggregate or add a LIMIT rather than reading whole tables.",
		d.dialect, ListTablesName, DescribeTableName, RunQueryName, d.maxRows)
	if d.allowWrites {
		fmt.Fprintf(&b, " %s changes data, one statement per call, after a person approves it; say what it will change.", RunStatementName)
	} else {
		b.WriteString(" The database is read-only for you.")
	}
	return b.String()
}

type listArgs struct {
	Schema string `json:"schema,omitempty" jsonschema:"PostgreSQL only: list the tables of this schema only, such as public; all schemas when left out"`
}

type describeArgs struct {
	Table  string `json:"table" jsonschema:"the table or view, as list_tables names it (on PostgreSQL schema.table is accepted)"`
	Schema string `json:"schema,omitempty" jsonschema:"PostgreSQL only: the table's schema, when the name alone is ambiguous"`
}

type queryArgs struct {
	SQL string `json:"sql" jsonschema:"exactly one read-only SQL statement"`
}

type statementArgs struct {
	SQL string `json:"sql" jsonschema:"exactly one SQL statement that changes the database"`
}

// Tools returns d's tools: list_tables, describe_table, run_query and, with
// allow_writes, run_statement (which always requires confirmation).
func (d *Database) Tools() []tool.Tool {
	tools := []tool.Tool{
		tool.MustNew(tool.Config{Name: ListTablesName, Description: fmt.Sprintf(
			"List the tables and views of the %s database%s, as JSON {\"tables\": [{\"name\", \"type\"%s}]}.",
			d.dialect, d.narrowed(), map[dialect]string{postgres: ", \"schema\"", sqlite: ""}[d.dialect])},
			func(ctx context.Context, a listArgs) (string, error) { return d.listTables(ctx, a.Schema) }),
		tool.MustNew(tool.Config{Name: DescribeTableName, Description: fmt.Sprintf(
			"Describe a table or view of the %s database: its columns (name, type, nullable, default, primary_key), primary key and foreign keys, as JSON.",
			d.dialect)},
			func(ctx context.Context, a describeArgs) (string, error) {
				return d.describeTable(ctx, a.Schema, a.Table)
			}),
		tool.MustNew(tool.Config{Name: RunQueryName, Description: fmt.Sprintf(
			"Run one read-only SQL statement (%s dialect: SELECT, WITH, VALUES, EXPLAIN%s) and get its rows as compact JSON: "+
				"{\"columns\": [...], \"rows\": [{\"column\": value, ...}], \"row_count\": n, \"note\": \"...\" when the result was cut}. "+
				"At most %d rows and %d bytes come back; times are RFC 3339, binary values {\"base64\": ...}. "+
				"Writes are refused by the database. Prefer aggregates and LIMIT to reading whole tables.",
			d.dialect, map[dialect]string{postgres: ", SHOW", sqlite: ", reading PRAGMAs such as PRAGMA table_info(t)"}[d.dialect],
			d.maxRows, d.maxResultBytes)},
			func(ctx context.Context, a queryArgs) (string, error) { return d.runQuery(ctx, a.SQL) }),
	}
	if d.allowWrites {
		tools = append(tools, tool.MustNew(tool.Config{Name: RunStatementName, RequiresConfirmation: true, Description: fmt.Sprintf(
			"Run one SQL statement that changes the %s database — INSERT, UPDATE, DELETE, or DDL such as CREATE TABLE — and get "+
				"{\"rows_affected\": n}. A person approves each call before it runs; it commits on its own. Use %s to read.",
			d.dialect, RunQueryName)},
			func(ctx context.Context, a statementArgs) (string, error) { return d.runStatement(ctx, a.SQL) }))
	}
	return tools
}

// narrowed says, in a tool description, that the tables setting narrows
// what is listed.
func (d *Database) narrowed() string {
	if len(d.tables) == 0 {
		return ""
	}
	return " (those this toolkit may show: " + strings.Join(d.tables, ", ") + ")"
}

// allowed reports whether the tables setting lets list_tables and
// describe_table show schema.name.
func (d *Database) allowed(schema, name string) bool {
	if len(d.tables) == 0 {
		return true
	}
	return slices.ContainsFunc(d.tables, func(entry string) bool {
		return strings.EqualFold(entry, name) || schema != "" && strings.EqualFold(entry, schema+"."+name)
	})
}

// Close closes d's connections; a call afterwards fails. Closing twice is
// harmless.
func (d *Database) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	for _, db := range []*sql.DB{d.read, d.write} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	d.read, d.write = nil, nil
	return errors.Join(errs...)
}

// sqliteDSN is the modernc.org/sqlite data source of the file at path: a
// SQLite URI (file:PATH?…) so that SQLite applies mode, with the driver's
// _pragma parameters.
func sqliteDSN(path, mode string, busy time.Duration, queryOnly bool) string {
	q := url.Values{}
	q.Set("mode", mode)
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	if queryOnly {
		q.Add("_pragma", "query_only(1)")
	}
	escaped := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
	return "file:" + escaped + "?" + q.Encode()
}
