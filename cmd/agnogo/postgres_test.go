package main

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/storage/migrate"
)

func TestMigratePostgres(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresURL(t)
	schema := testdb.UniqueName(t, "cli_migrate_")
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		require.NoError(t, err)
	})

	got := agnogo(t, "migrate", "--db", dbURL, "--schema", schema, "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	doc := decodeResult(t, got.stdout)
	require.Len(t, doc.Tables, 12)
	for _, table := range doc.Tables {
		require.Equal(t, migrate.ActionCreated, table.Action, table.Table)
	}
	parsed, err := url.Parse(dbURL)
	require.NoError(t, err)
	if password, ok := parsed.User.Password(); ok {
		require.NotContains(t, doc.Database, password, "the report never shows the password")
	}

	got = agnogo(t, "migrate", "--db", dbURL, "--schema", schema)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Contains(t, got.stdout, "done: already up to date\n")

	got = agnogo(t, "migrate", "--db", dbURL, "--schema", "bad-name")
	require.Equal(t, exitUsage, got.code, "an invalid schema name is a usage error: %s", got.stderr)
	require.Contains(t, got.stderr, `schema "bad-name"`)
}
