package sqltool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agnogo/agnogo/tools/sqltool"
)

// A read-only toolkit on a SQLite file: the model lists the tables, then
// queries one; a write is refused.
func Example() {
	dir, err := os.MkdirTemp("", "sqltool-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "shop.db")
	seed, err := sql.Open("sqlite", path)
	if err != nil {
		panic(err)
	}
	if _, err := seed.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total REAL);
		INSERT INTO orders (customer, total) VALUES ('Ada', 12.5), ('Grace', 30), ('Ada', 7.25)`); err != nil {
		panic(err)
	}
	seed.Close()

	db, err := sqltool.Open(sqltool.Config{URL: "sqlite:" + path, MaxRows: 10})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	tools := db.Tools()
	ctx := context.Background()
	call := func(i int, args any) {
		raw, _ := json.Marshal(args)
		out, err := tools[i].Call(ctx, raw)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(out)
	}
	call(0, map[string]any{})
	call(2, map[string]string{"sql": "SELECT customer, SUM(total) AS spent FROM orders GROUP BY customer ORDER BY spent DESC"})
	call(2, map[string]string{"sql": "DELETE FROM orders"})
	// Output:
	// {"tables":[{"name":"orders","type":"table"}]}
	// {"columns":["customer","spent"],"rows":[{"customer":"Grace","spent":30},{"customer":"Ada","spent":19.75}],"row_count":2}
	// error: sql: bad_request: run_query only reads: a DELETE statement is refused (it runs SELECT, WITH, VALUES, EXPLAIN and reading PRAGMAs); this toolkit is read-only
}
