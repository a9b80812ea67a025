package dburl_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
	"github.com/agnogo/agnogo/storage/migrate"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		url  string
		want dburl.Target
	}{
		{"sqlite relative with dot", "sqlite://./agnogo.db", dburl.Target{Kind: dburl.SQLite, Path: "./agnogo.db"}},
		{"sqlite relative bare", "sqlite://x.db", dburl.Target{Kind: dburl.SQLite, Path: "x.db"}},
		{"sqlite relative subdir", "sqlite://data/x.db", dburl.Target{Kind: dburl.SQLite, Path: "data/x.db"}},
		{"sqlite absolute", "sqlite:///abs/path.db", dburl.Target{Kind: dburl.SQLite, Path: "/abs/path.db"}},
		{"sqlite scheme case", "SQLite://x.db", dburl.Target{Kind: dburl.SQLite, Path: "x.db"}},
		{"postgres", "postgres://u:p@db:5432/agno?sslmode=disable", dburl.Target{Kind: dburl.Postgres, URL: "postgres://u:p@db:5432/agno?sslmode=disable"}},
		{"postgresql", "postgresql://u@localhost/agno", dburl.Target{Kind: dburl.Postgres, URL: "postgresql://u@localhost/agno"}},
		{"postgres socket via host param", "postgres:///agno?host=/var/run/postgresql", dburl.Target{Kind: dburl.Postgres, URL: "postgres:///agno?host=/var/run/postgresql"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := dburl.Parse(tt.url)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url, mentions string
	}{
		{"empty", "", "has no scheme"},
		{"no scheme", "agnogo.db", `"agnogo.db" has no scheme`},
		{"unknown scheme", "mysql://u@h/db", `scheme "mysql" is not supported`},
		{"sqlite empty path", "sqlite://", "has no file path"},
		{"sqlite with parameters", "sqlite://x.db?mode=ro", "no ?parameters"},
		{"postgres nothing", "postgres://", "names no server or database"},
		{"postgres bad port", "postgres://u:secret@h:port/db", "not a valid URL"},
		{"no scheme with password", "u:secret@h/db", "not shown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := dburl.Parse(tt.url)
			require.ErrorIs(t, err, storage.ErrInvalid)
			require.ErrorContains(t, err, tt.mentions)
			require.ErrorContains(t, err, "sqlite://PATH", "the error lists the accepted forms")
			require.ErrorContains(t, err, "postgres://")
			require.NotContains(t, err.Error(), "secret", "a password never reaches an error message")
		})
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"sqlite://./agnogo.db", "sqlite://./agnogo.db"},
		{"postgres://u:secret@db:5432/agno", "postgres://u@db:5432/agno"},
		{"postgres://u@db/agno", "postgres://u@db/agno"},
		{"postgres://db/agno?password=secret&sslmode=disable", "postgres://db/agno?sslmode=disable"},
		{"postgres://u:secret@h:port/db", "postgres://…"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, dburl.Redact(tt.in), tt.in)
	}
	target, err := dburl.Parse("postgresql://u:secret@db/agno")
	require.NoError(t, err)
	require.Equal(t, "postgresql://u@db/agno", target.String())
}

func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agnogo.db")

	store, err := dburl.Open(ctx, "sqlite://"+path, dburl.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })

	// A new file is created in the current schema: nothing is pending.
	pending, err := migrate.Pending(ctx, store)
	require.NoError(t, err)
	require.Empty(t, pending)
	_, ok := store.(migrate.LegacyRunsCleaner)
	require.True(t, ok, "a SQLite store can clean up legacy runs")

	_, err = store.UpsertSession(ctx, &storage.Session{SessionID: "s1", SessionType: storage.SessionTypeAgent})
	require.NoError(t, err)
	got, err := store.GetSession(ctx, "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Equal(t, "s1", got.SessionID)
}

func TestOpenRejectsUnknownScheme(t *testing.T) {
	t.Parallel()
	_, err := dburl.Open(t.Context(), "redis://localhost:6379/0", dburl.Options{})
	require.ErrorIs(t, err, storage.ErrInvalid)
}

// The queue opens the store's own SQLite file by its absolute path, and a
// Postgres URL as given.
func TestQueueURL(t *testing.T) {
	lite, err := dburl.Parse("sqlite://./agnogo.db")
	require.NoError(t, err)
	got, err := lite.QueueURL()
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, "sqlite:file:"+filepath.Join(wd, "agnogo.db"), got)

	pg, err := dburl.Parse("postgres://u@h:5432/db?sslmode=disable")
	require.NoError(t, err)
	got, err = pg.QueueURL()
	require.NoError(t, err)
	require.Equal(t, "postgres://u@h:5432/db?sslmode=disable", got)
}
