package sqltool

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// countLimit bounds how many rows past max_rows a query's rows are counted
// to tell the model how many there were; past it the note says "more
// than".
const countLimit = 10_000

// footerRoom is the part of max_result_bytes kept for the end of a result:
// its row count and note.
const footerRoom = 400

// render encodes a query's rows as run_query's result: {"columns": [...],
// "rows": [{column: value, ...}], "row_count": n, "note": "..."}, each row
// object in the columns' order, cut at max_rows rows and max_result_bytes
// bytes. Rows past the cut are counted, up to countLimit, for the note.
func (d *Database) render(rows *sql.Rows) (string, error) {
	columns, err := rows.Columns()
	if err != nil {
		return "", err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return "", err
	}
	names := uniqueNames(columns)
	keys := make([][]byte, len(names))
	typeNames := make([]string, len(names))
	for i, name := range names {
		keys[i] = quote(name)
		typeNames[i] = strings.ToUpper(types[i].DatabaseTypeName())
	}
	cellLimit := max(256, d.maxResultBytes/8)

	var out bytes.Buffer
	out.WriteString(`{"columns":[`)
	for i, key := range keys {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(key)
	}
	out.WriteString(`],"rows":[`)
	budget := d.maxResultBytes - footerRoom

	values := make([]any, len(names))
	pointers := make([]any, len(names))
	for i := range values {
		pointers[i] = &values[i]
	}
	var (
		shown, total int
		bytesCut     bool
		moreThan     bool  // counting stopped at countLimit
		countErr     error // reading the rows past the cut failed
		row          bytes.Buffer
	)
	for rows.Next() {
		total++
		if total > d.maxRows || bytesCut {
			if total > d.maxRows+countLimit {
				moreThan = true
				break
			}
			continue
		}
		if err := rows.Scan(pointers...); err != nil {
			return "", err
		}
		row.Reset()
		if shown > 0 {
			row.WriteByte(',')
		}
		row.WriteByte('{')
		for i, value := range values {
			if i > 0 {
				row.WriteByte(',')
			}
			row.Write(keys[i])
			row.WriteByte(':')
			row.Write(cell(value, typeNames[i], cellLimit))
		}
		row.WriteByte('}')
		if out.Len()+row.Len() > budget {
			bytesCut = true
			continue
		}
		out.Write(row.Bytes())
		shown++
	}
	if err := rows.Err(); err != nil {
		if total <= d.maxRows && !bytesCut {
			return "", err
		}
		countErr = err
	}
	fmt.Fprintf(&out, `],"row_count":%d`, shown)
	if shown < total || moreThan || countErr != nil {
		reason := "max_rows"
		if bytesCut {
			reason = fmt.Sprintf("max_result_bytes, %d bytes", d.maxResultBytes)
		}
		var of string
		switch {
		case moreThan:
			of = fmt.Sprintf(" of more than %d", total-1)
		case countErr != nil:
			of = fmt.Sprintf(" of more than %d (reading the rest failed: %s)", total, cutText(countErr.Error(), 200))
		default:
			of = fmt.Sprintf(" of %d", total)
		}
		note := fmt.Sprintf("cut at %d rows%s (%s): filter, aggregate, select fewer columns or add a LIMIT", shown, of, reason)
		out.WriteString(`,"note":`)
		out.Write(quote(note))
	}
	out.WriteByte('}')
	return out.String(), nil
}

// uniqueNames returns the columns' names, a repeated one suffixed _2, _3…
// so that each is a distinct key of a row object.
func uniqueNames(columns []string) []string {
	names := make([]string, len(columns))
	seen := make(map[string]bool, len(columns))
	for i, name := range columns {
		unique := name
		for n := 2; seen[unique]; n++ {
			unique = name + "_" + strconv.Itoa(n)
		}
		seen[unique] = true
		names[i] = unique
	}
	return names
}

// cell encodes a column's value as JSON: null, a number, a boolean, a
// string (times RFC 3339, text longer than limit shortened), PostgreSQL
// json and numeric values as JSON, and bytes that are not UTF-8 as
// {"base64": ..., "bytes": n}.
func cell(value any, typeName string, limit int) []byte {
	switch v := value.(type) {
	case nil:
		return []byte("null")
	case bool:
		return strconv.AppendBool(nil, v)
	case int64:
		return strconv.AppendInt(nil, v, 10)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return quote(strconv.FormatFloat(v, 'g', -1, 64))
		}
		return strconv.AppendFloat(nil, v, 'g', -1, 64)
	case time.Time:
		return quote(v.Format(time.RFC3339Nano))
	case string:
		if (typeName == "NUMERIC" || typeName == "DECIMAL") && isJSONNumber(v) {
			return []byte(v)
		}
		return quote(cutText(v, limit))
	case []byte:
		if (typeName == "JSON" || typeName == "JSONB") && len(v) <= limit {
			var compact bytes.Buffer
			if json.Compact(&compact, v) == nil {
				return compact.Bytes()
			}
		}
		if utf8.Valid(v) {
			return quote(cutText(string(v), limit))
		}
		shown := v
		if encoded := base64.StdEncoding.EncodedLen(len(v)); encoded > limit {
			shown = v[:limit/4*3]
		}
		out := fmt.Appendf(nil, `{"base64":%q,"bytes":%d`, base64.StdEncoding.EncodeToString(shown), len(v))
		if len(shown) < len(v) {
			out = append(out, `,"cut":true`...)
		}
		return append(out, '}')
	default:
		return quote(cutText(fmt.Sprint(v), limit))
	}
}

// isJSONNumber reports whether s is a JSON number (a PostgreSQL numeric
// may also be NaN or Infinity, which are not).
func isJSONNumber(s string) bool {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

// cutText shortens s to at most limit bytes, on a character boundary, and
// says how long it was.
func cutText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[cut: %d bytes in all]", len(s))
}

// quote encodes s as a JSON string, leaving <, > and & as they are.
func quote(s string) []byte {
	var b bytes.Buffer
	encoder := json.NewEncoder(&b)
	encoder.SetEscapeHTML(false)
	_ = encoder.Encode(s) // a string always encodes
	return bytes.TrimRight(b.Bytes(), "\n")
}

// marshal encodes v as compact JSON, leaving <, > and & as they are.
func marshal(v any) (string, error) {
	var b bytes.Buffer
	encoder := json.NewEncoder(&b)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
