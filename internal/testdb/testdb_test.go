package testdb

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestUniqueName(t *testing.T) {
	t.Parallel()
	identifier := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	cases := []struct {
		prefix     string
		wantPrefix string
	}{
		{"storagetest_", "storagetest_"},
		{"Agno-Test ", "agno_test_"},
		{"", "t"},
		{"9lives_", "t9lives_"},
		{strings.Repeat("x", 80), strings.Repeat("x", 53)},
	}
	for _, tc := range cases {
		name := UniqueName(t, tc.prefix)
		require.Regexp(t, identifier, name, "prefix %q", tc.prefix)
		require.True(t, strings.HasPrefix(name, tc.wantPrefix), "%q has no prefix %q", name, tc.wantPrefix)
		require.Len(t, name, len(tc.wantPrefix)+10, "prefix %q", tc.prefix)
		require.LessOrEqual(t, len(name), 63, "fits a PostgreSQL identifier")
	}

	seen := make(map[string]bool)
	for range 1000 {
		name := UniqueName(t, "s_")
		require.False(t, seen[name], "UniqueName repeated %q", name)
		seen[name] = true
	}
}

func TestSanitizeKeepsValidIdentifiers(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ai_schema_1", sanitizeIdentifier("ai_schema_1"))
	require.Equal(t, "_x", sanitizeIdentifier("_x"))
}

func TestPostgresURL(t *testing.T) {
	t.Parallel()
	url := PostgresURL(t)
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.WithoutCancel(t.Context())) })
	var one int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}

func TestRedisAddr(t *testing.T) {
	t.Parallel()
	addr := RedisAddr(t)
	require.NoError(t, pingRedis(t.Context(), addr))
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	require.Equal(t, "postgres://agno:xxxxx@db:5432/ai", redactURL("postgres://agno:s3cret@db:5432/ai"))
	require.Equal(t, DefaultPostgresURL, redactURL(DefaultPostgresURL))
}
