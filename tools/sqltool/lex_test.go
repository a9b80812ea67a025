package sqltool

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    dialect
		sql  string
		want int
	}{
		{postgres, "", 0},
		{postgres, " ; ;\n-- only a comment", 0},
		{postgres, "SELECT 1;", 1},
		{postgres, "SELECT 1; SELECT 2", 2},
		{postgres, "SELECT ';' AS semi", 1},
		{postgres, `SELECT 'it''s;' AS "a;b"`, 1},
		{postgres, `SELECT E'\';' ; SELECT 2`, 2},
		{postgres, `SELECT '\'; SELECT 2 -- '`, 2}, // standard strings: the backslash is a character
		{postgres, "SELECT $$;$$, $tag$ ; $$ ; $tag$", 1},
		{postgres, "SELECT $1; SELECT 2", 2},
		{postgres, "SELECT 1 /* ; /* nested ; */ still ; */", 1},
		{postgres, "SELECT 1 -- ; DROP TABLE t\n", 1},
		{postgres, "SELECT a[1] FROM t; SELECT 2", 2},
		{sqlite, "SELECT [a;b], `c;d` FROM t", 1},
		{sqlite, "SELECT 1 /* /* */ ; SELECT 2", 2}, // SQLite does not nest comments
		{sqlite, "SELECT $$;$$", 2},                 // nor dollar-quote
	}
	for _, tt := range tests {
		stmts, err := statements(tt.d, tt.sql)
		require.NoError(t, err, tt.sql)
		require.Len(t, stmts, tt.want, tt.sql)
	}
	for _, sql := range []string{"SELECT 'open", `SELECT "open`, "SELECT $x$ open", "SELECT E'\\'"} {
		_, err := statements(postgres, sql)
		require.ErrorContains(t, err, "never closed", sql)
	}
	_, err := statements(sqlite, "SELECT [open")
	require.ErrorContains(t, err, "never closed")
}

func TestCheckRead(t *testing.T) {
	t.Parallel()
	allowed := map[dialect][]string{
		postgres: {"SELECT 1", "(SELECT 1) UNION (SELECT 2)", "  select 1  ;", "WITH a AS (SELECT 1) SELECT * FROM a",
			"WITH a AS (SELECT * FROM t FOR UPDATE) SELECT * FROM a", "VALUES (1), (2)", "TABLE t", "EXPLAIN SELECT 1",
			"EXPLAIN DELETE FROM t", "EXPLAIN ANALYZE SELECT 1", "SHOW search_path", "SELECT 'DELETE' AS word"},
		sqlite: {"SELECT 1", "PRAGMA table_info(t)", "PRAGMA main.index_list('t')", "PRAGMA user_version", "PRAGMA integrity_check",
			"EXPLAIN QUERY PLAN SELECT 1", "SELECT * FROM pragma_table_info('t')"},
	}
	for d, list := range allowed {
		for _, sql := range list {
			require.NoError(t, checkRead(d, sql, false), "%s: %s", d, sql)
		}
	}
	refused := map[dialect]map[string]string{
		postgres: {
			"DELETE FROM t":              "a DELETE statement is refused",
			"  insert into t values (1)": "a INSERT statement is refused",
			"SELECT 1; DROP TABLE t":     "one statement per call and this SQL has 2",
			"WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x": "a WITH query holding DELETE is refused",
			"WITH x AS (SELECT 1) UPDATE t SET a = 1":               "holding UPDATE",
			"EXPLAIN ANALYZE DELETE FROM t":                         "EXPLAIN ANALYZE runs the DELETE",
			"PRAGMA table_info(t)":                                  "a PRAGMA statement is refused",
			"DO $$ BEGIN DELETE FROM t; END $$":                     "a DO statement is refused",
			"":                                                      "the SQL is empty",
			"-- nothing":                                            "the SQL is empty",
		},
		sqlite: {
			"SHOW tables":                  "a SHOW statement is refused",
			"PRAGMA query_only = 0":        "PRAGMA query_only is refused",
			"PRAGMA query_only(false)":     "PRAGMA query_only is refused",
			"PRAGMA writable_schema = 1":   "PRAGMA writable_schema is refused",
			"PRAGMA main.user_version = 3": "PRAGMA user_version is refused",
			"PRAGMA":                       "names no pragma",
			"ATTACH 'x.db' AS x":           "a ATTACH statement is refused",
			"WITH a AS (SELECT 1) REPLACE INTO t SELECT * FROM a": "holding REPLACE",
		},
	}
	for d, list := range refused {
		for sql, mention := range list {
			err := checkRead(d, sql, false)
			require.ErrorContains(t, err, mention, "%s: %s", d, sql)
		}
	}
	require.ErrorContains(t, checkRead(postgres, "DELETE FROM t", false), "this toolkit is read-only")
	require.ErrorContains(t, checkRead(postgres, "DELETE FROM t", true), "use run_statement")
}

func TestCheckWrite(t *testing.T) {
	t.Parallel()
	for _, sql := range []string{"INSERT INTO t VALUES (1)", "CREATE TABLE t (a int);", "VACUUM", "DELETE FROM t WHERE a = ';'"} {
		require.NoError(t, checkWrite(postgres, sql), sql)
	}
	for sql, mention := range map[string]string{
		"INSERT INTO t VALUES (1); DELETE FROM t": "one statement per call",
		"BEGIN":               "a BEGIN statement is refused",
		"set search_path = x": "a SET statement is refused",
		"ATTACH 'x.db' AS x":  "a ATTACH statement is refused",
		"   ":                 "empty",
	} {
		require.ErrorContains(t, checkWrite(sqlite, sql), mention, sql)
	}
}

func TestCell(t *testing.T) {
	t.Parallel()
	require.Equal(t, `"NaN"`, string(cell(nan(), "", 100)))
	require.Equal(t, `12.50`, string(cell("12.50", "NUMERIC", 100)))
	require.Equal(t, `"NaN"`, string(cell("NaN", "NUMERIC", 100)))
	require.Equal(t, `"{not json"`, string(cell([]byte("{not json"), "JSONB", 100)))
	require.Equal(t, `"ab…[cut: 5 bytes in all]"`, string(cell("abcde", "TEXT", 2)))
	require.Equal(t, `"…[cut: 4 bytes in all]"`, string(cell("éé", "TEXT", 1)), "a cut never splits a character")
	big := make([]byte, 300)
	big[0] = 0xff
	out := string(cell(big, "BLOB", 100))
	require.Regexp(t, `^\{"base64":"/wA{98}","bytes":300,"cut":true\}$`, out, "base64 of the first 75 bytes: 100 characters")
	require.Equal(t, []string{"a", "b", "a_2", "a_3"}, uniqueNames([]string{"a", "b", "a", "a"}))
	require.Equal(t, []string{"a", "a_2", "a_2_2"}, uniqueNames([]string{"a", "a", "a_2"}))
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}
