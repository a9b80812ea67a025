package sqltool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/sqltool"
)

// backend is a database the suite runs against, seeded with the same
// data: items (250 rows), notes (referencing items), kinds (one row of
// each kind of value) and the view cheap_items.
type backend struct {
	name     string
	url      string
	postgres bool
	// db is a direct read-write connection, to seed and to check that
	// data is unchanged.
	db *sql.DB
}

func (b backend) exec(t *testing.T, statements ...string) {
	t.Helper()
	for _, s := range statements {
		_, err := b.db.ExecContext(t.Context(), s)
		require.NoError(t, err, s)
	}
}

func (b backend) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM "+table).Scan(&n))
	return n
}

// open builds the toolkit on b with cfg (its URL set to b's) and closes it
// when the test ends.
func (b backend) open(t *testing.T, cfg sqltool.Config) *sqltool.Database {
	t.Helper()
	cfg.URL = b.url
	d, err := sqltool.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

var sqliteSeed = []string{
	`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL, created DATETIME)`,
	`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 250)
	 INSERT INTO items SELECT n, 'item ' || n, n * 1.5, NULL FROM g`,
	`CREATE TABLE notes (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id), body TEXT DEFAULT 'none')`,
	`INSERT INTO notes (item_id, body) VALUES (1, 'first'), (2, 'second')`,
	`CREATE TABLE kinds (bin BLOB, txt BLOB, at DATETIME, empty TEXT, big INTEGER, ratio REAL, html TEXT)`,
	`CREATE VIEW cheap_items AS SELECT id, name FROM items WHERE price < 10`,
}

var postgresSeed = []string{
	`CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, price numeric(10,2), created timestamptz)`,
	`INSERT INTO items SELECT g, 'item ' || g, g * 1.5, NULL FROM generate_series(1, 250) g`,
	`CREATE TABLE notes (id serial PRIMARY KEY, item_id integer NOT NULL REFERENCES items(id), body text DEFAULT 'none')`,
	`INSERT INTO notes (item_id, body) VALUES (1, 'first'), (2, 'second')`,
	`CREATE TABLE kinds (bin bytea, txt bytea, at timestamptz, empty text, big bigint, ratio double precision, html text, flag boolean, doc jsonb, day date)`,
	`CREATE VIEW cheap_items AS SELECT id, name FROM items WHERE price < 10`,
	// A function that writes: a SELECT calling it passes run_query's
	// first check, and only the read-only transaction stops it.
	`CREATE FUNCTION purge_items() RETURNS integer LANGUAGE sql AS $$ DELETE FROM items RETURNING 1 $$`,
	`CREATE SEQUENCE counter`,
}

// sqliteBackend makes a seeded SQLite file in the test's directory.
func sqliteBackend(t *testing.T) backend {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	b := backend{name: "sqlite", url: "sqlite:" + path, db: db}
	b.exec(t, sqliteSeed...)
	_, err = db.ExecContext(t.Context(), `INSERT INTO kinds VALUES (?, ?, ?, NULL, ?, 0.25, '<b>&</b>')`,
		[]byte{0x00, 0xff, 0x10}, []byte("hé"), "2026-03-04T05:06:07Z", int64(1)<<40)
	require.NoError(t, err)
	return b
}

// postgresBackend makes a seeded database of its own on the test
// PostgreSQL server (127.0.0.1:5432 as postgres, or
// AGNOGO_TEST_POSTGRES_URL), dropped when the test ends. When the server
// is not reachable the test is skipped, loudly — or fails when CI=true.
func postgresBackend(t *testing.T) backend {
	t.Helper()
	base := testdb.PostgresURL(t)
	name := testdb.UniqueName(t, "sqltool_")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, admin.Close(ctx))
	require.NoError(t, err)
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, base)
		require.NoError(t, err)
		defer admin.Close(ctx)
		_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		require.NoError(t, err)
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path = "/" + name
	db, err := sql.Open("pgx", u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	b := backend{name: "postgres", url: u.String(), postgres: true, db: db}
	b.exec(t, postgresSeed...)
	_, err = db.ExecContext(t.Context(), `INSERT INTO kinds VALUES ($1, $2, '2026-03-04T05:06:07Z', NULL, $3, 0.25, '<b>&</b>', true, '{"a": [1, 2]}', '2026-03-04')`,
		[]byte{0x00, 0xff, 0x10}, []byte("hé"), int64(1)<<40)
	require.NoError(t, err)
	return b
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	suite(t, sqliteBackend(t))
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	suite(t, postgresBackend(t))
}

// tools returns d's tools by name.
func tools(d *sqltool.Database) map[string]tool.Tool {
	byName := map[string]tool.Tool{}
	for _, tl := range d.Tools() {
		byName[tl.Spec().Name] = tl
	}
	return byName
}

// call calls the tool name of d with args (a JSON object).
func call(t *testing.T, d *sqltool.Database, name string, args any) (string, error) {
	t.Helper()
	tl, ok := tools(d)[name]
	require.True(t, ok, "no tool %s", name)
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tl.Call(t.Context(), raw)
}

// queryResult is run_query's answer.
type queryResult struct {
	Columns  []string         `json:"columns"`
	Rows     []map[string]any `json:"rows"`
	RowCount int              `json:"row_count"`
	Note     string           `json:"note"`
}

func query(t *testing.T, d *sqltool.Database, sql string) queryResult {
	t.Helper()
	out, err := call(t, d, sqltool.RunQueryName, map[string]string{"sql": sql})
	require.NoError(t, err, sql)
	var r queryResult
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// classOf returns err's class after checking it is a *toolkit.Error of
// the sql toolkit.
func classOf(t *testing.T, err error) run.ErrorClass {
	t.Helper()
	require.Error(t, err)
	var tkErr *toolkit.Error
	require.True(t, errors.As(err, &tkErr), "want a *toolkit.Error, got %T: %v", err, err)
	require.Equal(t, "sql", tkErr.Toolkit)
	require.Equal(t, tkErr.Class, run.ClassOf(err))
	return tkErr.Class
}

func suite(t *testing.T, b backend) {
	t.Run("list_tables", func(t *testing.T) {
		d := b.open(t, sqltool.Config{})
		out, err := call(t, d, sqltool.ListTablesName, map[string]any{})
		require.NoError(t, err)
		schema := ""
		if b.postgres {
			schema = `"schema":"public",`
		}
		require.JSONEq(t, fmt.Sprintf(`{"tables":[{%[1]s"name":"cheap_items","type":"view"},{%[1]s"name":"items","type":"table"},
			{%[1]s"name":"kinds","type":"table"},{%[1]s"name":"notes","type":"table"}]}`, schema), out)
		if b.postgres {
			out, err = call(t, d, sqltool.ListTablesName, map[string]any{"schema": "nowhere"})
			require.NoError(t, err)
			require.JSONEq(t, `{"tables":[],"note":"no tables"}`, out)
		} else {
			_, err = call(t, d, sqltool.ListTablesName, map[string]any{"schema": "nowhere"})
			require.Equal(t, run.ClassBadRequest, classOf(t, err))
		}
	})

	t.Run("describe_table", func(t *testing.T) {
		d := b.open(t, sqltool.Config{})
		out, err := call(t, d, sqltool.DescribeTableName, map[string]any{"table": "NOTES"})
		require.NoError(t, err)
		if b.postgres {
			require.JSONEq(t, `{"schema":"public","table":"notes","type":"table","columns":[
				{"name":"id","type":"integer","nullable":false,"default":"nextval('notes_id_seq'::regclass)","primary_key":true},
				{"name":"item_id","type":"integer","nullable":false},
				{"name":"body","type":"text","nullable":true,"default":"'none'::text"}],
				"primary_key":["id"],"foreign_keys":["FOREIGN KEY (item_id) REFERENCES items(id)"]}`, out)
		} else {
			require.JSONEq(t, `{"table":"notes","type":"table","columns":[
				{"name":"id","type":"INTEGER","nullable":false,"primary_key":true},
				{"name":"item_id","type":"INTEGER","nullable":false},
				{"name":"body","type":"TEXT","nullable":true,"default":"'none'"}],
				"primary_key":["id"],"foreign_keys":["FOREIGN KEY (item_id) REFERENCES items(id)"]}`, out)
		}
		if b.postgres {
			out, err = call(t, d, sqltool.DescribeTableName, map[string]any{"table": "public.cheap_items"})
			require.NoError(t, err)
			require.Contains(t, out, `"type":"view"`)
		}
		_, err = call(t, d, sqltool.DescribeTableName, map[string]any{"table": "nope"})
		require.Equal(t, run.ClassBadRequest, classOf(t, err))
		require.ErrorContains(t, err, "no table or view named nope")
	})

	t.Run("run_query", func(t *testing.T) {
		d := b.open(t, sqltool.Config{})
		out, err := call(t, d, sqltool.RunQueryName, map[string]string{"sql": "SELECT id, name, price FROM items WHERE id <= 2 ORDER BY id -- the first two;"})
		require.NoError(t, err)
		require.Equal(t, `{"columns":["id","name","price"],"rows":[{"id":1,"name":"item 1","price":1.5},{"id":2,"name":"item 2","price":3}],"row_count":2}`,
			strings.ReplaceAll(strings.ReplaceAll(out, `"price":1.50`, `"price":1.5`), `"price":3.00`, `"price":3`),
			"compact JSON, each row's keys in the columns' order")

		r := query(t, d, "SELECT COUNT(*) AS n, 1 AS n FROM items WHERE name LIKE 'item 1%'")
		require.Equal(t, []string{"n", "n_2"}, r.Columns, "a repeated column name is made unique")
		require.Equal(t, map[string]any{"n": float64(111), "n_2": float64(1)}, r.Rows[0])

		r = query(t, d, "SELECT * FROM kinds")
		require.Len(t, r.Rows, 1)
		row := r.Rows[0]
		require.Equal(t, map[string]any{"base64": "AP8Q", "bytes": float64(3)}, row["bin"], "bytes that are not UTF-8 are base64")
		require.Equal(t, "hé", row["txt"], "UTF-8 bytes are text")
		require.Equal(t, "2026-03-04T05:06:07Z", row["at"], "times are RFC 3339")
		require.Nil(t, row["empty"])
		require.Equal(t, float64(1<<40), row["big"])
		require.Equal(t, 0.25, row["ratio"])
		require.Equal(t, "<b>&</b>", row["html"])
		if b.postgres {
			require.Equal(t, true, row["flag"])
			require.Equal(t, map[string]any{"a": []any{float64(1), float64(2)}}, row["doc"], "jsonb is JSON")
			require.Equal(t, "2026-03-04T00:00:00Z", row["day"])
			r = query(t, d, "SHOW server_encoding")
			require.Equal(t, "UTF8", r.Rows[0]["server_encoding"])
			r = query(t, d, "SHOW default_transaction_read_only")
			require.Equal(t, "on", r.Rows[0]["default_transaction_read_only"], "without allow_writes the session is read-only too")
			r = query(t, d, "SHOW statement_timeout")
			require.Equal(t, "10s", r.Rows[0]["statement_timeout"])
		} else {
			r = query(t, d, "PRAGMA table_info(items)")
			require.Equal(t, 4, r.RowCount)
			r = query(t, d, "EXPLAIN QUERY PLAN SELECT * FROM items WHERE id = 3")
			require.NotZero(t, r.RowCount)
		}

		r = query(t, d, "WITH cheap AS (SELECT id FROM items WHERE price < 3) SELECT COUNT(*) AS n FROM cheap")
		require.Equal(t, float64(1), r.Rows[0]["n"])
		r = query(t, d, "SELECT name FROM items WHERE name = 'item;1' OR name = 'x''y'")
		require.Zero(t, r.RowCount, "a semicolon in a string does not split the statement")
		require.Equal(t, []any{}, anySlice(r.Rows))

		_, err = call(t, d, sqltool.RunQueryName, map[string]string{"sql": "SELECT nope FROM items"})
		require.Equal(t, run.ClassBadRequest, classOf(t, err))
		require.ErrorContains(t, err, "nope")
	})

	t.Run("row cap", func(t *testing.T) {
		d := b.open(t, sqltool.Config{})
		r := query(t, d, "SELECT id FROM items ORDER BY id")
		require.Equal(t, 100, r.RowCount)
		require.Len(t, r.Rows, 100)
		require.Equal(t, float64(100), r.Rows[99]["id"])
		require.Equal(t, "cut at 100 rows of 250 (max_rows): filter, aggregate, select fewer columns or add a LIMIT", r.Note)

		d = b.open(t, sqltool.Config{MaxRows: 250})
		r = query(t, d, "SELECT id FROM items")
		require.Equal(t, 250, r.RowCount)
		require.Empty(t, r.Note, "a result that fits is not cut")

		d = b.open(t, sqltool.Config{MaxRows: 3})
		r = query(t, d, "SELECT a.id FROM items a CROSS JOIN items b")
		require.Equal(t, 3, r.RowCount)
		require.Equal(t, "cut at 3 rows of more than 10003 (max_rows): filter, aggregate, select fewer columns or add a LIMIT", r.Note,
			"counting the rows past the cut stops")
	})

	t.Run("byte cap", func(t *testing.T) {
		d := b.open(t, sqltool.Config{MaxResultBytes: 2048})
		out, err := call(t, d, sqltool.RunQueryName, map[string]string{"sql": "SELECT id, name FROM items ORDER BY id"})
		require.NoError(t, err)
		require.LessOrEqual(t, len(out), 2048)
		var r queryResult
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.Less(t, r.RowCount, 100)
		require.Positive(t, r.RowCount)
		require.Equal(t, fmt.Sprintf("cut at %d rows of 250 (max_result_bytes, 2048 bytes): filter, aggregate, select fewer columns or add a LIMIT", r.RowCount), r.Note)

		r = query(t, d, "SELECT "+map[bool]string{true: "repeat('é', 2000)", false: "printf('%.*c', 4000, 'x')"}[b.postgres]+" AS long")
		require.Equal(t, 1, r.RowCount, "a long value is shortened rather than dropped")
		require.Contains(t, r.Rows[0]["long"], "…[cut: 4000 bytes in all]")
	})

	t.Run("read-only", func(t *testing.T) {
		for _, allowWrites := range []bool{false, true} {
			d := b.open(t, sqltool.Config{AllowWrites: allowWrites})
			refused := []string{
				"DELETE FROM items",
				"INSERT INTO items (id, name) VALUES (1000, 'x')",
				"UPDATE items SET name = 'x'",
				"SELECT 1; DROP TABLE items",
				"SELECT 1; DELETE FROM items;",
				"DROP TABLE items",
				"CREATE TABLE t (x int)",
				"/* SELECT */ DELETE FROM items",
				"WITH x AS (DELETE FROM items RETURNING *) SELECT * FROM x",
			}
			if b.postgres {
				refused = append(refused, "SELECT $$;$$; DELETE FROM items", "SET default_transaction_read_only = off", "COPY items TO STDOUT")
			} else {
				refused = append(refused, "PRAGMA query_only = 0", "PRAGMA query_only(0)", "PRAGMA journal_mode = DELETE",
					"ATTACH DATABASE 'other.db' AS other", "VACUUM", "REPLACE INTO items (id, name) VALUES (1, 'x')")
			}
			for _, sql := range refused {
				_, err := call(t, d, sqltool.RunQueryName, map[string]string{"sql": sql})
				require.Equal(t, run.ClassBadRequest, classOf(t, err), sql)
				if allowWrites && !strings.Contains(sql, ";") && !strings.HasPrefix(sql, "PRAGMA") && !strings.HasPrefix(sql, "ATTACH") &&
					!strings.HasPrefix(sql, "SET") {
					require.ErrorContains(t, err, "use run_statement", sql)
				}
			}
			// What passes the first check is stopped by the database.
			var stopped []string
			if b.postgres {
				stopped = []string{"SELECT purge_items()", "SELECT * INTO items_copy FROM items", "SELECT nextval('counter')",
					"SELECT * FROM items FOR UPDATE"}
			}
			for _, sql := range stopped {
				_, err := call(t, d, sqltool.RunQueryName, map[string]string{"sql": sql})
				require.Equal(t, run.ClassBadRequest, classOf(t, err), sql)
				require.ErrorContains(t, err, "read-only", sql)
			}
			// The checks bypassed, the database refuses writes itself.
			for _, sql := range []string{"DELETE FROM items", "INSERT INTO items (id, name) VALUES (1000, 'x')",
				"WITH x AS (DELETE FROM items RETURNING *) SELECT * FROM x", "CREATE TABLE t (x int)", "DROP TABLE items"} {
				if !b.postgres && strings.HasPrefix(sql, "WITH") {
					continue // SQLite has no writing WITH
				}
				_, err := sqltool.QueryUnchecked(t.Context(), d, sql)
				require.Equal(t, run.ClassBadRequest, classOf(t, err), sql)
				require.ErrorContains(t, err, "read-only", sql)
			}
			require.Equal(t, 250, b.count(t, "items"), "the data is unchanged")
			require.Equal(t, 2, b.count(t, "notes"))
		}
	})

	t.Run("timeout", func(t *testing.T) {
		d := b.open(t, sqltool.Config{TimeoutSeconds: 0.2})
		slow := "SELECT pg_sleep(5)"
		if !b.postgres {
			slow = "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g) SELECT COUNT(*) FROM g"
		}
		_, err := call(t, d, sqltool.RunQueryName, map[string]string{"sql": slow})
		require.Equal(t, run.ClassTimeout, classOf(t, err))
		require.Equal(t, run.ClassTimeout, run.ClassOf(err))
		require.ErrorContains(t, err, "timeout_seconds (0.2s)")
		r := query(t, d, "SELECT COUNT(*) AS n FROM items")
		require.Equal(t, float64(250), r.Rows[0]["n"], "the toolkit works after a timeout")

		d = b.open(t, sqltool.Config{TimeoutSeconds: 0.2, AllowWrites: true})
		_, err = call(t, d, sqltool.RunStatementName, map[string]string{"sql": slow})
		require.Equal(t, run.ClassTimeout, classOf(t, err), "run_statement is bounded too")
	})

	t.Run("tables allow-list", func(t *testing.T) {
		allowed := []string{"items", "cheap_items"}
		if b.postgres {
			allowed[1] = "public.CHEAP_ITEMS"
		}
		d := b.open(t, sqltool.Config{Tables: allowed})
		out, err := call(t, d, sqltool.ListTablesName, map[string]any{})
		require.NoError(t, err)
		require.Contains(t, out, `"name":"items"`)
		require.Contains(t, out, `"name":"cheap_items"`)
		require.NotContains(t, out, "notes")
		require.NotContains(t, out, "kinds")
		_, err = call(t, d, sqltool.DescribeTableName, map[string]any{"table": "items"})
		require.NoError(t, err)
		_, err = call(t, d, sqltool.DescribeTableName, map[string]any{"table": "notes"})
		require.Equal(t, run.ClassBadRequest, classOf(t, err))
		require.ErrorContains(t, err, "no table or view named notes")
		require.Contains(t, tools(d)[sqltool.ListTablesName].Spec().Description, "items")
	})

	t.Run("writes", func(t *testing.T) {
		d := b.open(t, sqltool.Config{})
		require.NotContains(t, tools(d), sqltool.RunStatementName, "no run_statement without allow_writes")
		require.Len(t, d.Tools(), 3)
		require.Contains(t, d.Toolkit().Instructions, "read-only")

		d = b.open(t, sqltool.Config{AllowWrites: true})
		statement, ok := tools(d)[sqltool.RunStatementName]
		require.True(t, ok)
		require.True(t, statement.Spec().RequiresConfirmation, "a person approves each write")
		b.exec(t, "CREATE TABLE scratch (id integer PRIMARY KEY, v text)")

		out, err := call(t, d, sqltool.RunStatementName, map[string]string{"sql": "INSERT INTO scratch VALUES (1, 'a'), (2, 'b'), (3, 'c')"})
		require.NoError(t, err)
		require.JSONEq(t, `{"rows_affected":3}`, out)
		out, err = call(t, d, sqltool.RunStatementName, map[string]string{"sql": "DELETE FROM scratch WHERE id > 1"})
		require.NoError(t, err)
		require.JSONEq(t, `{"rows_affected":2}`, out)
		require.Equal(t, 1, b.count(t, "scratch"))
		_, err = call(t, d, sqltool.RunStatementName, map[string]string{"sql": "CREATE TABLE made (x integer)"})
		require.NoError(t, err)
		require.Equal(t, 0, b.count(t, "made"))

		for _, sql := range []string{"INSERT INTO scratch VALUES (9, 'x'); DROP TABLE items", "BEGIN", "COMMIT", "", "  -- nothing"} {
			_, err = call(t, d, sqltool.RunStatementName, map[string]string{"sql": sql})
			require.Equal(t, run.ClassBadRequest, classOf(t, err), sql)
		}
		_, err = call(t, d, sqltool.RunStatementName, map[string]string{"sql": "INSERT INTO scratch VALUES (1, 'dup')"})
		require.Equal(t, run.ClassBadRequest, classOf(t, err), "a constraint violation is the database's refusal")
		require.Equal(t, 1, b.count(t, "scratch"))
		require.Equal(t, 250, b.count(t, "items"))

		// From a config file, the flag is there whatever the common options
		// say: no option takes it away.
		tools, _, err := sqltool.Definition().Build(t.Context(), json.RawMessage(fmt.Sprintf(
			`{"url": %q, "allow_writes": true, "requires_confirmation_tools": ["run_query"]}`, b.url)))
		require.NoError(t, err)
		require.Len(t, tools, 4)
		for _, tl := range tools {
			spec := tl.Spec()
			require.Equal(t, spec.Name == sqltool.RunStatementName || spec.Name == sqltool.RunQueryName, spec.RequiresConfirmation, spec.Name)
		}
		_, _, err = sqltool.Definition().Build(t.Context(), json.RawMessage(fmt.Sprintf(
			`{"url": %q, "requires_confirmation_tools": ["run_statement"]}`, b.url)))
		require.ErrorContains(t, err, `has no tool "run_statement"`, "without allow_writes there is no run_statement to flag")
	})

	t.Run("concurrent calls and close", func(t *testing.T) {
		d := b.open(t, sqltool.Config{})
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Go(func() {
				raw, _ := json.Marshal(map[string]string{"sql": fmt.Sprintf("SELECT name FROM items WHERE id = %d", i+1)})
				out, err := tools(d)[sqltool.RunQueryName].Call(t.Context(), raw)
				if err == nil && !strings.Contains(out, fmt.Sprintf(`"item %d"`, i+1)) {
					err = fmt.Errorf("unexpected result %s", out)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.NoError(t, d.Close())
		require.NoError(t, d.Close(), "closing twice is harmless")
		_, err := call(t, d, sqltool.RunQueryName, map[string]string{"sql": "SELECT 1"})
		require.ErrorContains(t, err, "closed")
	})
}

func anySlice(rows []map[string]any) []any {
	out := []any{}
	for _, r := range rows {
		out = append(out, r)
	}
	return out
}

func TestNewDoesNoIO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "missing.db")
	k, err := sqltool.New(sqltool.Config{URL: path})
	require.NoError(t, err)
	require.Equal(t, "sql", k.Name)
	require.Contains(t, k.Instructions, "SQLite")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "New creates no file")
	_, err = k.Tools[2].Call(t.Context(), json.RawMessage(`{"sql":"SELECT 1"}`))
	require.Equal(t, run.ClassBadRequest, classOf(t, err))
	require.ErrorContains(t, err, "does not exist")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "reading creates no file")

	// A server nobody listens on: New succeeds, the first call fails.
	d, err := sqltool.Open(sqltool.Config{URL: "postgres://postgres@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=2"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	require.Equal(t, "PostgreSQL", d.Dialect())
	_, err = call(t, d, sqltool.ListTablesName, map[string]any{})
	require.Equal(t, run.ClassConnection, classOf(t, err))
}

func TestWritesCreateSQLiteFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new.sqlite")
	d, err := sqltool.Open(sqltool.Config{URL: "file:" + path, AllowWrites: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	out, err := call(t, d, sqltool.RunStatementName, map[string]string{"sql": "CREATE TABLE t (x TEXT)"})
	require.NoError(t, err)
	require.JSONEq(t, `{"rows_affected":0}`, out)
	_, err = call(t, d, sqltool.RunStatementName, map[string]string{"sql": "INSERT INTO t VALUES ('a')"})
	require.NoError(t, err)
	r := query(t, d, "SELECT x FROM t")
	require.Equal(t, []map[string]any{{"x": "a"}}, r.Rows)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      sqltool.Config
		mentions string
	}{
		{"no url", sqltool.Config{}, "url: required"},
		{"unknown scheme", sqltool.Config{URL: "mysql://u@h/db"}, `scheme "mysql" is not supported`},
		{"no path", sqltool.Config{URL: "sqlite:"}, "has no file path"},
		{"memory", sqltool.Config{URL: "sqlite::memory:"}, "in-memory"},
		{"parameters", sqltool.Config{URL: "sqlite:x.db?mode=rw"}, "no ?parameters"},
		{"not a database", sqltool.Config{URL: "notes.txt"}, "names no database"},
		{"remote file", sqltool.Config{URL: "file://server/x.db"}, "names a host"},
		{"empty postgres", sqltool.Config{URL: "postgres://"}, "names no server or database"},
		{"bad port", sqltool.Config{URL: "postgres://u:secret@h:port/db"}, "not a valid URL"},
		{"max_rows", sqltool.Config{URL: "x.db", MaxRows: -1}, "max_rows"},
		{"timeout", sqltool.Config{URL: "x.db", TimeoutSeconds: -2}, "timeout_seconds"},
		{"max_result_bytes", sqltool.Config{URL: "x.db", MaxResultBytes: 100}, "max_result_bytes: 100 is too small"},
		{"tables", sqltool.Config{URL: "x.db", Tables: []string{"a", " "}}, "tables[1]: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sqltool.New(tt.cfg)
			require.ErrorContains(t, err, tt.mentions)
			require.NotContains(t, err.Error(), "secret", "a password never reaches an error")
		})
	}
	_, _, err := sqltool.Definition().Build(t.Context(), json.RawMessage(`{"url": "x.db", "max_row": 5}`))
	require.ErrorContains(t, err, "unknown key")
	_, _, err = sqltool.Definition().Build(t.Context(), json.RawMessage(`{"url": "x.db", "timeout_seconds": "soon"}`))
	require.ErrorContains(t, err, "timeout_seconds")
}

func TestURLForms(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"sqlite:x.db", "sqlite://x.db", "sqlite:///tmp/x.db", "file:x.db", "file:///tmp/x.db", "file://localhost/tmp/x.db",
		"./data/x.sqlite", "/tmp/x.sqlite3", "x.db"} {
		d, err := sqltool.Open(sqltool.Config{URL: u})
		require.NoError(t, err, u)
		require.Equal(t, "SQLite", d.Dialect(), u)
	}
	for _, u := range []string{"postgres://u:p@db:5432/app?sslmode=disable", "postgresql://u@localhost/app", "POSTGRES://db/app"} {
		d, err := sqltool.Open(sqltool.Config{URL: u})
		require.NoError(t, err, u)
		require.Equal(t, "PostgreSQL", d.Dialect(), u)
	}
	require.Equal(t, []string{"list_tables", "describe_table", "run_query", "run_statement"}, sqltool.Names())
	require.Equal(t, sqltool.Names(), sqltool.Definition().ToolNames())
	require.Equal(t, []string{"url", "max_rows", "timeout_seconds", "max_result_bytes", "tables", "allow_writes"}, sqltool.Definition().Keys())
}
