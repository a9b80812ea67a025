package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServeNewDatabase(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)

	got := agnogo(t, "serve", "--db", dbURL)
	require.Equal(t, exitFailure, got.code)
	require.Equal(t, "agnogo: database ready at "+dbURL+"; the HTTP server is not available in this build yet\n", got.stderr)
	require.Subset(t, tableNames(t, openRaw(t, path)), agnoTables, "serve creates a new database in the current schema")
}

func TestServeOutdatedDatabase(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)
	createAgno2Database(t, path, []legacySession{{id: "s1", sessionType: "agent", runIDs: []string{"r1"}}})

	got := agnogo(t, "serve", "--db", dbURL)
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "database schema needs migrating")
	require.Contains(t, got.stderr, "agnogo migrate --db "+dbURL)
	require.NotContains(t, got.stderr, "database ready")
}

func TestServeMissingConfig(t *testing.T) {
	t.Parallel()
	dbURL, _ := tempDB(t)
	got := agnogo(t, "serve", "--db", dbURL, "--config", "does-not-exist.yaml")
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "agnogo: config file: ")
	require.Contains(t, got.stderr, "does-not-exist.yaml")
}
