package sqltool

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/toolkit"
)

// maxTables bounds list_tables' answer before max_result_bytes does.
const maxTables = 2000

// tableEntry is one table or view in list_tables' answer.
type tableEntry struct {
	Schema string `json:"schema,omitempty"`
	Name   string `json:"name"`
	Type   string `json:"type"`
}

// listQuery lists the tables and views: on PostgreSQL those of the user's
// schemas it may SELECT from (partitions left out), on SQLite those of the
// main database.
var listQuery = map[dialect]string{
	postgres: `SELECT n.nspname, c.relname,
	CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'table' END
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
	AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
	AND ($1 = '' OR n.nspname = $1) AND has_table_privilege(c.oid, 'SELECT')
ORDER BY 1, 2`,
	sqlite: `SELECT '', name, type FROM sqlite_schema
WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND ? = ''
ORDER BY name`,
}

// listTables is list_tables.
func (d *Database) listTables(ctx context.Context, schema string) (string, error) {
	if d.dialect == sqlite && (schema == "main" || schema == "public") {
		schema = ""
	}
	if d.dialect == sqlite && schema != "" {
		err := fmt.Errorf("%s: a SQLite database has no schema %q: leave schema out", ListTablesName, schema)
		return "", &toolkit.Error{Toolkit: ToolkitName, Class: run.ClassBadRequest, Message: err.Error(), Err: err}
	}
	ctx, cancel := d.withTimeout(ctx)
	defer cancel()
	var tables []tableEntry
	more := false
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, listQuery[d.dialect], schema)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t tableEntry
			if err := rows.Scan(&t.Schema, &t.Name, &t.Type); err != nil {
				return err
			}
			if !d.allowed(t.Schema, t.Name) {
				continue
			}
			if len(tables) == maxTables {
				more = true
				break
			}
			tables = append(tables, t)
		}
		return rows.Err()
	})
	if err != nil {
		return "", d.classify(ctx, err)
	}
	answer := struct {
		Tables []tableEntry `json:"tables"`
		Note   string       `json:"note,omitempty"`
	}{Tables: tables}
	if tables == nil {
		answer.Tables = []tableEntry{}
		answer.Note = "no tables"
		if len(d.tables) > 0 {
			answer.Note = "none of the tables this toolkit may show exist: " + strings.Join(d.tables, ", ")
		}
	}
	out, err := marshal(answer)
	for err == nil && (len(out) > d.maxResultBytes || more) {
		if len(out) > d.maxResultBytes {
			answer.Tables = answer.Tables[:len(answer.Tables)*3/4]
		}
		more = false
		answer.Note = fmt.Sprintf("cut at %d tables: pass schema to list one schema's tables, or query the catalog with %s", len(answer.Tables), RunQueryName)
		out, err = marshal(answer)
	}
	return out, err
}

// column is one column in describe_table's answer.
type column struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Nullable   bool    `json:"nullable"`
	Default    *string `json:"default,omitempty"`
	PrimaryKey bool    `json:"primary_key,omitempty"`
}

// description is describe_table's answer.
type description struct {
	Schema      string   `json:"schema,omitempty"`
	Table       string   `json:"table"`
	Type        string   `json:"type"`
	Columns     []column `json:"columns"`
	PrimaryKey  []string `json:"primary_key"`
	ForeignKeys []string `json:"foreign_keys,omitempty"`
}

// errNoTable is describe_table's failure for a table that is not there
// (or that the tables setting hides).
var errNoTable = errors.New("no such table")

// describeTable is describe_table.
func (d *Database) describeTable(ctx context.Context, schema, table string) (string, error) {
	table, schema = strings.TrimSpace(table), strings.TrimSpace(schema)
	if schema == "" && d.dialect == postgres {
		if s, t, ok := strings.Cut(table, "."); ok && !strings.Contains(table, `"`) {
			schema, table = s, t
		}
	}
	if d.dialect == sqlite && (schema == "main" || schema == "public") {
		schema = ""
	}
	bad := func(format string, args ...any) error {
		err := fmt.Errorf(format, args...)
		return &toolkit.Error{Toolkit: ToolkitName, Class: run.ClassBadRequest, Message: err.Error(), Err: err}
	}
	if table == "" {
		return "", bad("%s: name a table", DescribeTableName)
	}
	if d.dialect == sqlite && schema != "" {
		return "", bad("%s: a SQLite database has no schema %q: leave schema out", DescribeTableName, schema)
	}
	ctx, cancel := d.withTimeout(ctx)
	defer cancel()
	var desc description
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		if d.dialect == postgres {
			return d.describePostgres(ctx, tx, schema, table, &desc)
		}
		return d.describeSQLite(ctx, tx, table, &desc)
	})
	if errors.Is(err, errNoTable) {
		name := table
		if schema != "" {
			name = schema + "." + table
		}
		return "", bad("%s: no table or view named %s%s; call %s to see them", DescribeTableName, name, d.narrowed(), ListTablesName)
	}
	if err != nil {
		return "", d.classify(ctx, err)
	}
	if desc.PrimaryKey == nil {
		desc.PrimaryKey = []string{}
	}
	out, err := marshal(desc)
	if err != nil {
		return "", err
	}
	if len(out) > d.maxResultBytes {
		out = out[:d.maxResultBytes] // cut JSON: still readable, and said so
		out += fmt.Sprintf("…[cut at max_result_bytes, %d bytes]", d.maxResultBytes)
	}
	return out, nil
}

// describePostgres fills desc from PostgreSQL's catalog: the table or
// view whose name matches exactly, else without regard to case,
// preferring the schemas of the search path.
func (d *Database) describePostgres(ctx context.Context, tx *sql.Tx, schema, table string, desc *description) error {
	var oid string
	err := tx.QueryRowContext(ctx, `SELECT c.oid::text, n.nspname, c.relname,
	CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'table' END
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND lower(c.relname) = lower($1) AND ($2 = '' OR lower(n.nspname) = lower($2))
	AND n.nspname NOT IN ('pg_catalog', 'information_schema')
ORDER BY c.relname = $1 DESC, n.nspname = $2 DESC, array_position(current_schemas(false), n.nspname::text) NULLS LAST, n.nspname
LIMIT 1`, table, schema).Scan(&oid, &desc.Schema, &desc.Table, &desc.Type)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoTable
	}
	if err != nil {
		return err
	}
	if !d.allowed(desc.Schema, desc.Table) {
		return errNoTable
	}
	rows, err := tx.QueryContext(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
	pg_get_expr(ad.adbin, ad.adrelid), COALESCE(a.attnum = ANY(i.indkey), false)
FROM pg_catalog.pg_attribute a
LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
LEFT JOIN pg_catalog.pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`, oid)
	if err != nil {
		return err
	}
	for rows.Next() {
		var c column
		var def sql.NullString
		if err := rows.Scan(&c.Name, &c.Type, &c.Nullable, &def, &c.PrimaryKey); err != nil {
			rows.Close()
			return err
		}
		if def.Valid {
			c.Default = &def.String
		}
		desc.Columns = append(desc.Columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if desc.PrimaryKey, err = strings1(ctx, tx, `SELECT a.attname
FROM pg_catalog.pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = $1::oid AND i.indisprimary ORDER BY k.ord`, oid); err != nil {
		return err
	}
	desc.ForeignKeys, err = strings1(ctx, tx, `SELECT pg_get_constraintdef(oid) FROM pg_catalog.pg_constraint
WHERE conrelid = $1::oid AND contype = 'f' ORDER BY conname`, oid)
	return err
}

// describeSQLite fills desc from SQLite's schema table and pragmas.
func (d *Database) describeSQLite(ctx context.Context, tx *sql.Tx, table string, desc *description) error {
	err := tx.QueryRowContext(ctx, `SELECT name, type FROM sqlite_schema
WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE ORDER BY name = ? DESC LIMIT 1`, table, table).Scan(&desc.Table, &desc.Type)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoTable
	}
	if err != nil {
		return err
	}
	if !d.allowed("", desc.Table) {
		return errNoTable
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid`, desc.Table)
	if err != nil {
		return err
	}
	type keyColumn struct {
		name     string
		position int
	}
	var keys []keyColumn
	for rows.Next() {
		var (
			c       column
			notNull bool
			def     sql.NullString
			pk      int
		)
		if err := rows.Scan(&c.Name, &c.Type, &notNull, &def, &pk); err != nil {
			rows.Close()
			return err
		}
		c.Nullable = !notNull && pk == 0
		c.PrimaryKey = pk > 0
		if def.Valid {
			c.Default = &def.String
		}
		if pk > 0 {
			keys = append(keys, keyColumn{c.Name, pk})
		}
		desc.Columns = append(desc.Columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	desc.PrimaryKey = make([]string, len(keys))
	for _, k := range keys {
		if k.position-1 < len(keys) {
			desc.PrimaryKey[k.position-1] = k.name
		}
	}
	rows, err = tx.QueryContext(ctx, `SELECT id, "table", "from", COALESCE("to", '') FROM pragma_foreign_key_list(?) ORDER BY id, seq`, desc.Table)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		lastID       = -1
		target       string
		from, toCols []string
	)
	flush := func() {
		if lastID >= 0 {
			references := target
			if len(toCols) > 0 && toCols[0] != "" {
				references += "(" + strings.Join(toCols, ", ") + ")"
			}
			desc.ForeignKeys = append(desc.ForeignKeys, fmt.Sprintf("FOREIGN KEY (%s) REFERENCES %s", strings.Join(from, ", "), references))
		}
	}
	for rows.Next() {
		var (
			id           int
			table, f, to string
		)
		if err := rows.Scan(&id, &table, &f, &to); err != nil {
			return err
		}
		if id != lastID {
			flush()
			lastID, target, from, toCols = id, table, nil, nil
		}
		from = append(from, f)
		toCols = append(toCols, to)
	}
	flush()
	return rows.Err()
}

// strings1 runs a query of one text column with one argument and returns
// its values.
func strings1(ctx context.Context, tx *sql.Tx, query string, arg any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var values []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		values = append(values, v)
	}
	return values, rows.Err()
}
