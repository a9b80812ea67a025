package sqlstore

import (
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
		doc, err := json.Marshal(m)
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
