package sqltool

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// dialect is the SQL a database speaks, as far as splitting statements and
// the first checks of run_query need to know it.
type dialect int

const (
	postgres dialect = iota
	sqlite
)

// String names the database for the model.
func (d dialect) String() string {
	if d == postgres {
		return "PostgreSQL"
	}
	return "SQLite"
}

// token is a word (upper-cased keyword or bare identifier) or one
// punctuation character of a statement; quoted strings, quoted
// identifiers, numbers and comments are not kept.
type token struct {
	word  string
	punct byte
}

// statements splits sql into its statements, each a list of tokens,
// dropping empty ones (only blanks, comments or semicolons). It fails on a
// quoted string or identifier that is never closed. It is a lexer, not a
// parser: it knows the dialect's quotes and comments (PostgreSQL's
// dollar-quoted and E” strings and nested block comments, SQLite's “ and
// [] identifiers) so that a semicolon inside them does not split.
func statements(d dialect, sql string) ([][]token, error) {
	var (
		all     [][]token
		current []token
	)
	flush := func() {
		if len(current) > 0 {
			all = append(all, current)
		}
		current = nil
	}
	i := 0
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				i = len(sql)
			} else {
				i += end + 1
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			i = skipBlockComment(d, sql, i)
		case c == '\'':
			backslash := d == postgres && i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i < 2 || !isWordByte(sql[i-2]))
			end, err := skipQuoted(sql, i, '\'', backslash)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '"' || (d == sqlite && c == '`'):
			end, err := skipQuoted(sql, i, c, false)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '[' && d == sqlite:
			end := strings.IndexByte(sql[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("the SQL has a [ identifier that is never closed with ]")
			}
			i += end + 1
		case c == '$' && d == postgres:
			end, quoted, err := skipDollar(sql, i)
			if err != nil {
				return nil, err
			}
			if !quoted {
				current = append(current, token{punct: '$'})
			}
			i = end
		case c == ';':
			flush()
			i++
		case isWordStart(c):
			start := i
			for i < len(sql) && isWordByte(sql[i]) {
				i++
			}
			current = append(current, token{word: strings.ToUpper(sql[start:i])})
		case c >= '0' && c <= '9':
			for i < len(sql) && (isWordByte(sql[i]) || sql[i] == '.') {
				i++
			}
			current = append(current, token{punct: '0'})
		default:
			current = append(current, token{punct: c})
			i++
		}
	}
	flush()
	return all, nil
}

// isWordStart reports a byte that starts an unquoted identifier or
// keyword: a letter, '_' or a byte of a non-ASCII character.
func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf
}

// isWordByte reports a byte that continues an identifier.
func isWordByte(c byte) bool {
	return isWordStart(c) || c >= '0' && c <= '9' || c == '$'
}

// skipBlockComment returns the index after the block comment starting at
// i. PostgreSQL nests block comments, SQLite does not; a comment never
// closed runs to the end.
func skipBlockComment(d dialect, sql string, i int) int {
	depth := 0
	for i < len(sql) {
		switch {
		case strings.HasPrefix(sql[i:], "/*") && (depth == 0 || d == postgres):
			depth++
			i += 2
		case strings.HasPrefix(sql[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// skipQuoted returns the index after the quoted text starting at i, where
// a doubled quote stands for itself and, when backslash is set, a
// backslash escapes the next byte.
func skipQuoted(sql string, i int, quote byte, backslash bool) (int, error) {
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			if backslash {
				j++
			}
		case quote:
			if j+1 < len(sql) && sql[j+1] == quote {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("the SQL has a %c quote that is never closed", quote)
}

// skipDollar handles a '$' at i in PostgreSQL: a dollar-quoted string
// ($$…$$ or $tag$…$tag$) is skipped whole (quoted is true); anything else
// ($1, a lone $) moves one byte on.
func skipDollar(sql string, i int) (end int, quoted bool, err error) {
	j := i + 1
	if j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
		for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
			j++
		}
		return j, false, nil
	}
	for j < len(sql) && isWordByte(sql[j]) && sql[j] != '$' {
		j++
	}
	if j >= len(sql) || sql[j] != '$' {
		return i + 1, false, nil
	}
	delimiter := sql[i : j+1]
	closing := strings.Index(sql[j+1:], delimiter)
	if closing < 0 {
		return 0, false, fmt.Errorf("the SQL has a %s quoted string that is never closed", delimiter)
	}
	return j + 1 + closing + len(delimiter), true, nil
}

// firstWord is a statement's first keyword, after any opening
// parentheses.
func firstWord(stmt []token) string {
	for _, t := range stmt {
		if t.punct == '(' {
			continue
		}
		return t.word
	}
	return ""
}

// has reports whether the statement holds the keyword word anywhere.
func has(stmt []token, word string) bool {
	return slices.ContainsFunc(stmt, func(t token) bool { return t.word == word })
}

// writeWord returns the first keyword of stmt that changes data (INSERT,
// UPDATE, DELETE, MERGE; not the UPDATE of FOR UPDATE or FOR NO KEY
// UPDATE), or "".
func writeWord(stmt []token) string {
	for i, t := range stmt {
		switch t.word {
		case "INSERT", "DELETE", "MERGE", "REPLACE":
			if t.word == "REPLACE" && (i+1 >= len(stmt) || stmt[i+1].word != "INTO") {
				continue
			}
			return t.word
		case "UPDATE":
			if i > 0 && (stmt[i-1].word == "FOR" || stmt[i-1].word == "KEY") {
				continue
			}
			return t.word
		}
	}
	return ""
}

// The statements run_query accepts, by first keyword.
var readWords = []string{"SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "SHOW", "PRAGMA"}

// SQLite pragmas run_query accepts: those that read a table's or the
// database's structure, with a table or index name as argument, and those
// that only report a setting when given no argument.
var (
	pragmasWithArgument = []string{"TABLE_INFO", "TABLE_XINFO", "TABLE_LIST", "INDEX_LIST", "INDEX_INFO", "INDEX_XINFO",
		"FOREIGN_KEY_LIST", "FOREIGN_KEY_CHECK", "INTEGRITY_CHECK", "QUICK_CHECK"}
	pragmasWithoutArgument = []string{"DATABASE_LIST", "COLLATION_LIST", "FUNCTION_LIST", "MODULE_LIST", "PRAGMA_LIST",
		"COMPILE_OPTIONS", "USER_VERSION", "APPLICATION_ID", "SCHEMA_VERSION", "DATA_VERSION", "PAGE_COUNT", "PAGE_SIZE",
		"FREELIST_COUNT", "ENCODING", "JOURNAL_MODE", "FOREIGN_KEYS", "QUERY_ONLY", "AUTO_VACUUM"}
)

// checkRead is run_query's first check of sql: exactly one statement,
// which reads. It is a courtesy that explains a refusal; the database's
// read-only transaction or connection is the guarantee.
func checkRead(d dialect, sql string, allowWrites bool) error {
	stmt, err := single(d, sql, RunQueryName)
	if err != nil {
		return err
	}
	word := firstWord(stmt)
	elsewhere := "; this toolkit is read-only"
	switch {
	case allowWrites && slices.Contains(sessionWords, word):
		elsewhere = ""
	case allowWrites:
		elsewhere = "; use " + RunStatementName + " to change data (a person approves each call)"
	}
	if !slices.Contains(readWords, word) || word == "SHOW" && d != postgres || word == "PRAGMA" && d != sqlite {
		if word == "" {
			word = "this"
		}
		return fmt.Errorf("%s only reads: a %s statement is refused (it runs SELECT, WITH, VALUES, EXPLAIN and %s)%s",
			RunQueryName, word, map[dialect]string{postgres: "SHOW", sqlite: "reading PRAGMAs"}[d], elsewhere)
	}
	switch word {
	case "WITH":
		if w := writeWord(stmt); w != "" {
			return fmt.Errorf("%s only reads: a WITH query holding %s is refused%s", RunQueryName, w, elsewhere)
		}
	case "EXPLAIN":
		// EXPLAIN ANALYZE runs the statement it explains.
		if w := writeWord(stmt); w != "" && (has(stmt, "ANALYZE") || has(stmt, "ANALYSE")) {
			return fmt.Errorf("%s only reads: EXPLAIN ANALYZE runs the %s it explains and is refused%s", RunQueryName, w, elsewhere)
		}
	case "PRAGMA":
		return checkPragma(stmt)
	}
	return nil
}

// checkPragma accepts a SQLite PRAGMA that only reads.
func checkPragma(stmt []token) error {
	rest := stmt[1:]
	if len(rest) >= 2 && rest[1].punct == '.' {
		rest = rest[2:] // schema.pragma
	}
	if len(rest) == 0 || rest[0].word == "" {
		return fmt.Errorf("%s: PRAGMA names no pragma", RunQueryName)
	}
	name := rest[0].word
	withArgument := len(rest) > 1
	refused := slices.ContainsFunc(rest, func(t token) bool { return t.punct == '=' })
	switch {
	case slices.Contains(pragmasWithArgument, name):
	case slices.Contains(pragmasWithoutArgument, name):
		refused = refused || withArgument
	default:
		refused = true
	}
	if refused {
		return fmt.Errorf("%s only reads: PRAGMA %s is refused (it runs the pragmas that read structure, such as table_info(t) and index_list(t), and those that report a setting without changing it)",
			RunQueryName, strings.ToLower(name))
	}
	return nil
}

// Statements run_statement refuses: each call runs on its own, in its own
// transaction, on a pooled connection that must not keep state.
var sessionWords = []string{"BEGIN", "START", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE", "ABORT",
	"SET", "RESET", "ATTACH", "DETACH", "LISTEN", "UNLISTEN", "PREPARE", "DEALLOCATE", "DECLARE", "DISCARD"}

// checkWrite is run_statement's check of sql: exactly one statement, and
// not one that would leave state on the pooled connection.
func checkWrite(d dialect, sql string) error {
	stmt, err := single(d, sql, RunStatementName)
	if err != nil {
		return err
	}
	if word := firstWord(stmt); slices.Contains(sessionWords, word) {
		return fmt.Errorf("%s: a %s statement is refused: each call runs on its own and commits, and session settings or attachments would not last to the next call",
			RunStatementName, word)
	}
	return nil
}

// single returns sql's one statement, or explains why there is not
// exactly one.
func single(d dialect, sql, toolName string) ([]token, error) {
	stmts, err := statements(d, sql)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", toolName, err)
	}
	switch len(stmts) {
	case 0:
		return nil, fmt.Errorf("%s: the SQL is empty", toolName)
	case 1:
		return stmts[0], nil
	}
	return nil, fmt.Errorf("%s runs one statement per call and this SQL has %d: send them one at a time", toolName, len(stmts))
}
