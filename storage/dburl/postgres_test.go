package dburl_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
	"github.com/agnogo/agnogo/storage/migrate"
)

func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresURL(t)
	schema := testdb.UniqueName(t, "dburl_")
	t.Cleanup(func() { dropSchema(t, url, schema) })
	ctx := t.Context()

	store, err := dburl.Open(ctx, url, dburl.Options{Schema: schema})
	require.NoError(t, err)
	defer store.Close()
	pending, err := migrate.Pending(ctx, store)
	require.NoError(t, err)
	require.Empty(t, pending, "a new schema is created current")
	_, err = store.UpsertSession(ctx, &storage.Session{SessionID: "s1", SessionType: storage.SessionTypeAgent})
	require.NoError(t, err)

	var tables int
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(ctx))
	require.NoError(t, conn.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&tables))
	require.GreaterOrEqual(t, tables, 6, "the tables live in the schema asked for")
}

func dropSchema(t *testing.T, url, schema string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	require.NoError(t, err)
}
