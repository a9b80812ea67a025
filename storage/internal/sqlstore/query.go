package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/storage"
)

// userScope returns a WHERE condition for cond (with its argument) narrowed
// to userID when the call is user-scoped.
func userScope(column, userID, cond string, arg any) (string, []any) {
	if userID == "" {
		return cond, []any{arg}
	}
	return cond + " AND " + column + " = ?", []any{arg, userID}
}

func whereClause(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// pageClause returns the LIMIT/OFFSET of a 1-indexed page; no limit selects everything.
func pageClause(p storage.Page) (string, error) {
	if p.Limit < 0 {
		return "", storage.Invalidf("limit %d: must be positive (or 0 for no limit)", p.Limit)
	}
	if p.Limit == 0 {
		return "", nil
	}
	page := p.Page
	if page == 0 {
		page = 1
	}
	if page < 1 {
		return "", storage.Invalidf("page %d: pages start at 1", p.Page)
	}
	return fmt.Sprintf(" LIMIT %d OFFSET %d", p.Limit, (page-1)*p.Limit), nil
}

func sortDirection(order storage.SortOrder) (string, error) {
	switch strings.ToLower(string(order)) {
	case "", "desc":
		return "DESC", nil
	case "asc":
		return "ASC", nil
	}
	return "", storage.Invalidf("sort_order %q: want asc or desc", order)
}

// marshalAll encodes each map as a JSON document; a nil map stays SQL NULL.
func marshalAll(maps ...map[string]any) ([]any, error) {
	docs := make([]any, len(maps))
	for i, m := range maps {
		if m == nil {
			continue
		}
		doc, err := encodeJSON(m)
		if err != nil {
			return nil, fmt.Errorf("%w: encode JSON: %v", storage.ErrInvalid, err)
		}
		docs[i] = string(doc)
	}
	return docs, nil
}

// unmarshalObject decodes a JSON object column; NULL, "null" and empty stay nil.
func unmarshalObject(doc []byte, into *map[string]any) error {
	if len(doc) == 0 || string(doc) == "null" {
		return nil
	}
	if err := json.Unmarshal(doc, into); err != nil {
		return fmt.Errorf("decode JSON column: %w", err)
	}
	return nil
}

// queryAll runs a query on conn and scans every row with scan.
func queryAll[T any](ctx context.Context, conn Conn, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		item, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, rows.Err()
}

// listing is one paged listing: the rows of table matching where (with
// args), in order, cut by limit, and how many match in all.
type listing struct {
	table, columns, where, order, limit string
	args                                []any
}

// listPage runs a listing's count and page queries.
func listPage[T any](ctx context.Context, conn Conn, l listing, scan func(Row) (T, error)) ([]T, int, error) {
	var total int
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s%s", l.table, l.where), l.args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count: %w", err)
	}
	items, err := queryAll(ctx, conn, scan, fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s%s", l.columns, l.table, l.where, l.order, l.limit), l.args...)
	if err != nil {
		return nil, 0, err
	}
	return items, total, nil
}

func scanString(row Row) (string, error) {
	var v string
	err := row.Scan(&v)
	return v, err
}
