package sqlstore

import (
	"fmt"
	"regexp"
	"strings"
)

// Dialect names the SQL dialect of a database and holds the few statements
// that differ between them.
type Dialect int

// The supported dialects.
const (
	SQLite Dialect = iota + 1
	Postgres
)

// String implements fmt.Stringer.
func (d Dialect) String() string {
	if d == Postgres {
		return "postgres"
	}
	return "sqlite"
}

var identifierPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// ValidIdentifier reports whether name can be used unquoted-safe as a schema
// or table name.
func ValidIdentifier(name string) bool { return identifierPattern.MatchString(name) }

// jsonType is the column type of JSON documents.
func (d Dialect) jsonType() string {
	if d == Postgres {
		return "JSONB"
	}
	return "JSON"
}

// jsonText extracts the text of a top-level key of a JSON column.
func (d Dialect) jsonText(column, key string) string {
	if d == Postgres {
		return fmt.Sprintf("(%s->>'%s')", column, key)
	}
	return fmt.Sprintf("json_extract(%s, '$.%s')", column, key)
}

// jsonScalarText extracts the text of a JSON column that holds a string.
func (d Dialect) jsonScalarText(column string) string {
	if d == Postgres {
		return fmt.Sprintf("(%s #>> '{}')", column)
	}
	return fmt.Sprintf("json_extract(%s, '$')", column)
}

// jsonArrayValues is a table expression yielding a JSON array's elements as
// text in a column named value.
func (d Dialect) jsonArrayValues(column string) string {
	if d == Postgres {
		return fmt.Sprintf("jsonb_array_elements_text(CASE WHEN jsonb_typeof(%[1]s) = 'array' THEN %[1]s ELSE '[]'::jsonb END) AS je(value)", column)
	}
	return fmt.Sprintf("json_each(CASE WHEN json_type(%[1]s) = 'array' THEN %[1]s ELSE '[]' END)", column)
}

// forUpdate locks the selected rows until the transaction ends. SQLite needs
// no row lock: its single writer already serializes write transactions.
func (d Dialect) forUpdate() string {
	if d == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// jsonParam converts an encoded JSON document into a statement argument.
// Both drivers take JSON as text: SQLite would store a []byte as a BLOB, which
// its JSON functions reject.
func jsonParam(doc []byte) any {
	if doc == nil {
		return nil
	}
	return string(doc)
}

// likePattern returns a LIKE pattern matching text anywhere, with LIKE's
// wildcards in text escaped by a backslash (the statements say ESCAPE '\').
func likePattern(text string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + strings.ToLower(r.Replace(text)) + "%"
}
