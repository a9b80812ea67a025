package sqltool

import "context"

// QueryUnchecked runs query through d's read-only path without
// run_query's first check, so that tests can show the database itself
// refuses writes.
func QueryUnchecked(ctx context.Context, d *Database, query string) (string, error) {
	return d.query(ctx, query)
}
