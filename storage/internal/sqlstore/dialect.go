package sqlstore

import (
	"errors"
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

// jsonTextAbsent is the condition that a JSON column has no member key, or
// a null one. On SQLite a document whose text does not hold the quoted key
// anywhere cannot have the member, which a substring search tells without
// parsing the document; only one that does is parsed. (Go's and Python's
// JSON encoders write an ASCII key as it is, never with escapes.)
func (d Dialect) jsonTextAbsent(column, key string) string {
	if d == Postgres {
		return d.jsonText(column, key) + " IS NULL"
	}
	return fmt.Sprintf(`(instr(%[1]s, '"%[2]s"') = 0 OR %[3]s IS NULL)`, column, key, d.jsonText(column, key))
}

// dateArg is a statement argument holding a YYYY-MM-DD day, as a DATE
// column compares with it. SQLite keeps dates as that text.
func (d Dialect) dateArg() string {
	if d == Postgres {
		return "CAST(? AS DATE)"
	}
	return "?"
}

// dateText reads a DATE column as YYYY-MM-DD text.
func (d Dialect) dateText(column string) string {
	if d == Postgres {
		return fmt.Sprintf("to_char(%s, 'YYYY-MM-DD')", column)
	}
	return fmt.Sprintf("CAST(%s AS TEXT)", column)
}

// lockExclusive is the statement that makes every other writer of table
// wait for the transaction to end, while readers go on; "" for SQLite,
// whose single writer already does.
func (d Dialect) lockExclusive(table string) string {
	if d == Postgres {
		return fmt.Sprintf("LOCK TABLE %s IN EXCLUSIVE MODE", table)
	}
	return ""
}

// unindexed is a text column in a condition that must not pick an index of
// its own. SQLite, which has no statistics to weigh them, prefers any
// equality (status IN (…), user_id = ?) to a range, and would walk every
// finished run for each day asked for rather than the day's runs through
// the created_at index; Postgres, for a session's runs, intersects the
// session's index entries with the status index, whose entries for the
// counted statuses cover nearly every run. A unary + hides the column
// from SQLite's planner; on Postgres the same comes from an expression no
// index is on (COALESCE of a NULL matches nothing, as the NULL would).
func (d Dialect) unindexed(column string) string {
	if d == Postgres {
		return "COALESCE(" + column + ", '')"
	}
	return "+" + column
}

// jsonMembers extracts top-level members of a JSON column, parsing it once,
// as a JSON array of their values in the order of keys (null for a missing
// member).
func (d Dialect) jsonMembers(column string, keys ...string) string {
	parts := make([]string, len(keys))
	for i, key := range keys {
		if d == Postgres {
			parts[i] = fmt.Sprintf("%s->'%s'", column, key)
		} else {
			parts[i] = fmt.Sprintf("'$.%s'", key)
		}
	}
	if d == Postgres {
		return "jsonb_build_array(" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("json_extract(%s, %s)", column, strings.Join(parts, ", "))
}

// jsonNumber extracts a top-level member of a JSON object column as a
// number; NULL when it is missing or null.
func (d Dialect) jsonNumber(doc, key string) string {
	if d == Postgres {
		return fmt.Sprintf("(%s->>'%s')::numeric", doc, key)
	}
	return fmt.Sprintf("json_extract(%s, '$.%s')", doc, key)
}

// jsonObjectWithoutNulls builds a JSON object from alternating key and
// value expressions, leaving out the members whose value is NULL.
func (d Dialect) jsonObjectWithoutNulls(pairs ...string) string {
	if d == Postgres {
		return "jsonb_strip_nulls(jsonb_build_object(" + strings.Join(pairs, ", ") + "))"
	}
	// A merge patch drops the members it sets to null.
	return "json_patch('{}', json_object(" + strings.Join(pairs, ", ") + "))"
}

// jsonAddModelCounts adds two model_metrics documents, Agno's lists of
// {model_id, model_provider, count}: one element per model, its counts
// summed, a model whose count comes to zero left out, most used first. A
// stored document that is not a list counts as empty.
func (d Dialect) jsonAddModelCounts(stored, added string) string {
	if d == Postgres {
		return fmt.Sprintf(`(SELECT COALESCE(jsonb_agg(jsonb_build_object('model_id', g.id, 'model_provider', g.provider, 'count', g.n) ORDER BY g.n DESC, g.id, g.provider), '[]'::jsonb)
	FROM (SELECT e->>'model_id' AS id, COALESCE(e->>'model_provider', '') AS provider, SUM((e->>'count')::numeric) AS n
		FROM (SELECT jsonb_array_elements(CASE WHEN jsonb_typeof(%[1]s) = 'array' THEN %[1]s ELSE '[]'::jsonb END) AS e
			UNION ALL SELECT jsonb_array_elements(%[2]s)) AS x
		GROUP BY 1, 2) AS g
	WHERE g.n <> 0)`, stored, added)
	}
	// The common change adds to the integer count of the one model a
	// day's row lists, the model the change lists alone: that sum is made
	// in place, as the grouping below would make it, without its table of
	// groups and its sort.
	one := func(doc, member string) string { return fmt.Sprintf("json_extract(%s, '$[0].%s')", doc, member) }
	sum := one(stored, "count") + " + " + one(added, "count")
	return fmt.Sprintf(`CASE WHEN json_type(%[1]s) = 'array' AND json_array_length(%[1]s) = 1 AND json_array_length(%[2]s) = 1
	AND json_type(%[1]s, '$[0].count') = 'integer' AND json_type(%[2]s, '$[0].count') = 'integer'
	AND %[3]s IS %[4]s AND COALESCE(%[5]s, '') = COALESCE(%[6]s, '') AND %[7]s <> 0
THEN json_array(json_object('model_id', %[3]s, 'model_provider', COALESCE(%[5]s, ''), 'count', %[7]s))
ELSE %[8]s END`, stored, added, one(stored, "model_id"), one(added, "model_id"), one(stored, "model_provider"), one(added, "model_provider"), sum,
		d.jsonGroupModelCounts(stored, added))
}

// jsonGroupModelCounts is [Dialect.jsonAddModelCounts] on SQLite for any
// two documents: their elements grouped by model.
func (d Dialect) jsonGroupModelCounts(stored, added string) string {
	return fmt.Sprintf(`(SELECT COALESCE(json_group_array(json_object('model_id', id, 'model_provider', provider, 'count', n)), '[]') FROM (
	SELECT id, provider, SUM(n) AS n FROM (
		SELECT json_extract(value, '$.model_id') AS id, COALESCE(json_extract(value, '$.model_provider'), '') AS provider, json_extract(value, '$.count') AS n
		FROM json_each(CASE WHEN json_type(%[1]s) = 'array' THEN %[1]s ELSE '[]' END)
		UNION ALL
		SELECT json_extract(value, '$.model_id'), COALESCE(json_extract(value, '$.model_provider'), ''), json_extract(value, '$.count')
		FROM json_each(%[2]s))
	GROUP BY id, provider HAVING SUM(n) <> 0 ORDER BY SUM(n) DESC, id, provider))`, stored, added)
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

// forShare locks the selected rows against writers, not readers, until the
// transaction ends; SQLite's single writer needs no lock (see forUpdate).
func (d Dialect) forShare() string {
	if d == Postgres {
		return " FOR SHARE"
	}
	return ""
}

// skipLocked makes a locking read skip the rows another transaction holds
// instead of waiting for them; SQLite's single writer holds none.
func (d Dialect) skipLocked() string {
	if d == Postgres {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// jsonArg is a statement argument holding a JSON document (passed as text,
// see jsonParam), as the dialect's JSON functions take it.
func (d Dialect) jsonArg() string {
	if d == Postgres {
		return "CAST(? AS JSONB)"
	}
	return "json(?)"
}

// jsonObjectEntries is a table expression yielding the members of a JSON
// object as text, in columns named key and value.
func (d Dialect) jsonObjectEntries(doc string) string {
	if d == Postgres {
		return fmt.Sprintf("jsonb_each_text(%s)", doc)
	}
	return fmt.Sprintf("json_each(%s)", doc)
}

// jsonObject builds a JSON object from alternating key and value
// expressions.
func (d Dialect) jsonObject(pairs ...string) string {
	if d == Postgres {
		return "jsonb_build_object(" + strings.Join(pairs, ", ") + ")"
	}
	return "json_object(" + strings.Join(pairs, ", ") + ")"
}

// jsonEmptyObject is the JSON object {}.
func (d Dialect) jsonEmptyObject() string {
	if d == Postgres {
		return "'{}'::jsonb"
	}
	return "'{}'"
}

// jsonMerge returns the object doc with the top-level members of the object
// patch set on it, replacing members of the same name. patch holds no
// nulls: SQLite's merge patch would read one as a removal.
func (d Dialect) jsonMerge(doc, patch string) string {
	if d == Postgres {
		return fmt.Sprintf("(%s || %s)", doc, patch)
	}
	return fmt.Sprintf("json_patch(%s, %s)", doc, patch)
}

// jsonWithoutKey returns the object doc without its top-level member key
// (a literal name of letters, digits and underscores).
func (d Dialect) jsonWithoutKey(doc, key string) string {
	if d == Postgres {
		return fmt.Sprintf("(%s - '%s')", doc, key)
	}
	return fmt.Sprintf("json_remove(%s, '$.%s')", doc, key)
}

// jsonWithoutKeys returns the object column without the top-level members
// named in keys, a JSON array of strings. Any key is matched exactly
// (SQLite rebuilds the object rather than address members by path, whose
// syntax would need quoting); every other member is kept as it is, taken by
// its path (->) so that its JSON is copied exactly. NULL stays NULL.
func (d Dialect) jsonWithoutKeys(column, keys string) string {
	if d == Postgres {
		return fmt.Sprintf("(%s - ARRAY(SELECT jsonb_array_elements_text(%s)))", column, keys)
	}
	return fmt.Sprintf(`(CASE WHEN json_type(%[1]s) = 'object' THEN
	(SELECT json_group_object(member.key, %[1]s -> member.fullkey) FROM json_each(%[1]s) AS member
	WHERE member.key NOT IN (SELECT value FROM json_each(%[2]s)))
	ELSE %[1]s END)`, column, keys)
}

// jsonIsArray reports whether the top-level member key of the object doc is
// an array.
func (d Dialect) jsonIsArray(doc, key string) string {
	if d == Postgres {
		return fmt.Sprintf("(jsonb_typeof(%s -> '%s') = 'array')", doc, key)
	}
	return fmt.Sprintf("(json_type(%s, '$.%s') = 'array')", doc, key)
}

// jsonRelinkArray returns the array held by the top-level member field of
// the object doc, in its order, with the member idKey of each object element
// replaced through ids (a table with text columns old_id and new_id) when it
// is an old_id there. Other elements, and objects whose idKey is missing,
// null or unknown, are kept as they are. field and idKey are literal names
// of letters, digits and underscores.
func (d Dialect) jsonRelinkArray(doc, field, idKey, ids string) string {
	if d == Postgres {
		return fmt.Sprintf(`(SELECT COALESCE(jsonb_agg(CASE WHEN link.new_id IS NULL THEN elem.value
		ELSE elem.value || jsonb_build_object('%[3]s', link.new_id) END ORDER BY elem.ord), '[]'::jsonb)
	FROM jsonb_array_elements(%[1]s -> '%[2]s') WITH ORDINALITY AS elem(value, ord)
	LEFT JOIN %[4]s AS link ON link.old_id = elem.value ->> '%[3]s')`, doc, field, idKey, ids)
	}
	// An element is taken from the document by its path (->), which keeps
	// its exact JSON; json_each's value column would turn true into 1.
	return fmt.Sprintf(`json((SELECT json_group_array(CASE WHEN link.new_id IS NULL THEN %[1]s -> elem.fullkey
		ELSE json_set(elem.value, '$.%[3]s', link.new_id) END ORDER BY elem.key)
	FROM json_each(%[1]s, '$.%[2]s') AS elem
	LEFT JOIN %[4]s AS link ON link.old_id = CASE WHEN elem.type = 'object' THEN json_extract(elem.value, '$.%[3]s') END))`, doc, field, idKey, ids)
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

// The SQLite result codes of a constraint failure: the primary code, and
// the extended codes of a unique index and a primary key.
const (
	sqliteConstraint           = 19
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// uniqueViolation reports whether err is the database refusing a row that
// a unique index (or primary key) already holds: Postgres's SQLSTATE 23505,
// SQLite's SQLITE_CONSTRAINT_UNIQUE or _PRIMARYKEY. Both drivers' errors
// are read through the methods they expose, as storage.Transient does.
func uniqueViolation(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState() == "23505"
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		switch code := lite.Code(); code {
		case sqliteConstraintUnique, sqliteConstraintPrimaryKey:
			return true
		case sqliteConstraint:
			// A driver that reports the primary code only.
			return strings.Contains(err.Error(), "UNIQUE constraint failed")
		}
	}
	return false
}
