// Package testdb finds the databases that database-backed tests run against.
//
// Tests that need PostgreSQL or Redis ask for its address:
//
//	func TestSomething(t *testing.T) {
//		url := testdb.PostgresURL(t) // skips, or fails in CI, when Postgres is down
//		schema := testdb.UniqueName(t, "storagetest_")
//		...
//	}
//
// Locally a missing server skips the test with a loud message, so `go test
// ./...` works on a laptop without Docker. In CI (CI=true) a missing server
// fails the test instead: a green CI run must mean the database tests ran.
//
// The addresses come from AGNOGO_TEST_POSTGRES_URL and AGNOGO_TEST_REDIS_ADDR,
// defaulting to a local server on the standard port.
package testdb
