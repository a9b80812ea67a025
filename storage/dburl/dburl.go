package dburl

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/migrate"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// Store is an opened agnogo database: the store the server uses and the
// driver `agnogo migrate` moves forward. Stores returned by [Open] also
// implement [migrate.LegacyRunsCleaner].
type Store interface {
	storage.Store
	migrate.Driver
}

// Kind names a database adapter.
type Kind string

// The adapters [Open] knows.
const (
	// SQLite is a SQLite file (storage/sqlite).
	SQLite Kind = "sqlite"
	// Postgres is a PostgreSQL server (storage/postgres).
	Postgres Kind = "postgres"
)

// Accepted describes the URL forms [Parse] accepts; error messages quote it.
const Accepted = "sqlite://PATH (e.g. sqlite://./agnogo.db or sqlite:///abs/path.db) or postgres://user:pass@host:5432/db"

// Target is a parsed database URL.
type Target struct {
	// Kind is the adapter the URL's scheme names.
	Kind Kind
	// Path is the SQLite file, as written after sqlite:// ("" for Postgres).
	Path string
	// URL is the Postgres connection URL exactly as given ("" for SQLite).
	URL string
}

// QueueURL is the URL the durable queue (package durable) opens for this
// database: the Postgres URL as given, or the SQLite file's absolute path
// as sqlite:file:PATH, so the queue and the store share one file whatever
// the working directory.
func (t Target) QueueURL() (string, error) {
	if t.Kind != SQLite {
		return t.URL, nil
	}
	path, err := filepath.Abs(t.Path)
	if err != nil {
		return "", fmt.Errorf("database %s: %w", t, err)
	}
	return "sqlite:file:" + path, nil
}

// Parse reads a database URL without opening it. An unknown scheme or an
// empty path returns an error wrapping [storage.ErrInvalid] that lists the
// accepted forms.
func Parse(rawURL string) (Target, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok || scheme == "" {
		return Target{}, invalid("database URL %s has no scheme", quoteUnlessSecret(rawURL))
	}
	switch strings.ToLower(scheme) {
	case "sqlite":
		if rest == "" {
			return Target{}, invalid("database URL %q has no file path", rawURL)
		}
		if strings.ContainsAny(rest, "?#") {
			// sqlite.Open owns the driver's query string (pragmas), and a
			// file name with ? or # would be misread by the driver.
			return Target{}, invalid("database URL %q: SQLite URLs take no ?parameters or #fragment", rawURL)
		}
		return Target{Kind: SQLite, Path: rest}, nil
	case "postgres", "postgresql":
		u, err := url.Parse(rawURL)
		if err != nil {
			// url.Parse's message repeats the URL, password included.
			return Target{}, invalid("database URL %s is not a valid URL", Redact(rawURL))
		}
		if u.Host == "" && u.Path == "" && u.RawQuery == "" {
			return Target{}, invalid("database URL %q names no server or database", rawURL)
		}
		return Target{Kind: Postgres, URL: rawURL}, nil
	default:
		return Target{}, invalid("database URL scheme %q is not supported", scheme)
	}
}

// String returns the URL without its password, fit for logs and reports.
func (t Target) String() string {
	switch t.Kind {
	case SQLite:
		return "sqlite://" + t.Path
	case Postgres:
		return Redact(t.URL)
	}
	return ""
}

// Options tune [Open].
type Options struct {
	// Schema is the Postgres schema holding agnogo's tables. Ignored by
	// SQLite. Defaults to "ai".
	Schema string
	// AutoMigrate migrates an out-of-date database while opening it instead
	// of refusing it. Defaults to false.
	AutoMigrate bool
	// SkipSchemaCheck opens the database whatever its schema; for migration
	// tooling. Defaults to false.
	SkipSchemaCheck bool
}

// Open parses rawURL (see [Parse]) and opens the database with the adapter
// its scheme names. A SQLite file that does not exist is created.
func Open(ctx context.Context, rawURL string, opts Options) (Store, error) {
	target, err := Parse(rawURL)
	if err != nil {
		return nil, err
	}
	switch target.Kind {
	case SQLite:
		store, err := sqlite.Open(ctx, sqlite.Config{
			Path:            target.Path,
			AutoMigrate:     opts.AutoMigrate,
			SkipSchemaCheck: opts.SkipSchemaCheck,
		})
		if err != nil {
			return nil, err
		}
		return store, nil
	default:
		store, err := postgres.Open(ctx, postgres.Config{
			URL:             target.URL,
			Schema:          cmp.Or(opts.Schema, "ai"),
			AutoMigrate:     opts.AutoMigrate,
			SkipSchemaCheck: opts.SkipSchemaCheck,
		})
		if err != nil {
			return nil, err
		}
		return store, nil
	}
}

// Redact returns rawURL without its password (in the user info or a
// password query parameter). A string that does not parse as a URL is
// shortened to its scheme so that nothing secret is shown.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		scheme, _, ok := strings.Cut(rawURL, "://")
		if !ok {
			return "…"
		}
		return scheme + "://…"
	}
	if u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			u.User = url.User(u.User.Username())
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// quoteUnlessSecret quotes s for an error message, unless it may hold a
// password (user:pass@host, or a keyword/value password=…).
func quoteUnlessSecret(s string) string {
	if strings.Contains(s, "@") || strings.Contains(strings.ToLower(s), "password") {
		return "(not shown: it may hold a password)"
	}
	return fmt.Sprintf("%q", s)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s; use %s", storage.ErrInvalid, fmt.Sprintf(format, args...), Accepted)
}
