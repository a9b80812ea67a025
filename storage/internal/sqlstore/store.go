package sqlstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/migrate"
)

// Config configures a [Store].
type Config struct {
	// DB is the database; required.
	DB DB
	// Dialect is the database's SQL dialect; required.
	Dialect Dialect
	// Schema is the Postgres schema holding the tables. Ignored by SQLite.
	// Defaults to "ai".
	Schema string
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// NewID generates ids for transcript entries that carry no uuid.
	// Defaults to a random UUID v4.
	NewID func() string
	// MigrateCommand is the command line named by a migration-required error.
	// Defaults to "agnogo migrate".
	MigrateCommand string
	// AutoMigrate migrates an out-of-date database on [Open] instead of
	// refusing it. Defaults to false.
	AutoMigrate bool
	// SkipSchemaCheck opens the database whatever its schema, for migration
	// tooling. Defaults to false.
	SkipSchemaCheck bool
}

// Store is a [storage.Store] over SQL. It also implements [migrate.Driver].
type Store struct {
	db             checkedDB
	dialect        Dialect
	tables         tables
	now            func() time.Time
	newID          func() string
	migrateCommand string
	// legacyRunsColumn records that agno_sessions still has Agno 2.x's runs
	// column; session writes then clear it, as Agno 3.x does.
	legacyRunsColumn atomic.Bool
	// stmts are the texts of the statements every run write runs, built
	// once.
	stmts statements
	// compactor folds pending daily-metrics rows on Postgres; nil on SQLite.
	compactor *compactor
}

// statements holds statement texts that depend only on the dialect and
// the table names.
type statements struct {
	// runUpsert and runUpsertScoped are [Store.runUpsert], unscoped and
	// scoped; runInsert is [Store.runInsert], and runInsertCounting
	// [Store.runInsertCounting] (SQLite).
	runUpsert, runUpsertScoped, runInsert, runInsertCounting string
	// priorRun is [Store.priorRunStatement].
	priorRun string
	// metricsUpsert is [Store.metricsUpsertStatement]; metricsPending is
	// [Store.metricsInsertStatement].
	metricsUpsert, metricsPending string
	// sessionBump counts a change to a session's runs and returns the
	// session's owner; it locks the row until the transaction ends.
	sessionBump string
	// sessionVersion and sessionVersionScoped are [Store.SessionVersion]'s
	// read, unscoped and scoped to a user.
	sessionVersion, sessionVersionScoped string
	// sessionUpserts are [Store.sessionUpsertStatement]'s texts, by
	// whether the legacy runs column exists (0 or 1) and what they return.
	sessionUpserts [2][2]sessionUpsert
}

var (
	_ storage.Store             = (*Store)(nil)
	_ migrate.Driver            = (*Store)(nil)
	_ migrate.LegacyRunsCleaner = (*Store)(nil)
)

// Open returns a store over cfg.DB after checking its schema: a database with
// no agnogo tables is created in the current schema; one whose tables are
// behind is migrated when cfg.AutoMigrate is set and refused with a
// [*storage.MigrationRequiredError] otherwise.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.DB == nil {
		return nil, errors.New("sqlstore: Config.DB is required")
	}
	schema := cmp.Or(cfg.Schema, "ai")
	if cfg.Dialect == Postgres && !ValidIdentifier(schema) {
		return nil, fmt.Errorf("%w: schema %q must be letters, digits and underscores", storage.ErrInvalid, schema)
	}
	s := &Store{
		db:             checkedDB{cfg.DB},
		dialect:        cfg.Dialect,
		tables:         newTables(cfg.Dialect, schema),
		now:            cfg.Now,
		newID:          cfg.NewID,
		migrateCommand: cmp.Or(cfg.MigrateCommand, "agnogo migrate"),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = newUUID
	}
	s.stmts = statements{
		runUpsert: s.runUpsert(false), runUpsertScoped: s.runUpsert(true), runInsert: s.runInsert(),
		priorRun:      s.priorRunStatement(),
		metricsUpsert: s.metricsUpsertStatement(), metricsPending: s.metricsInsertStatement(),
		sessionBump: fmt.Sprintf("UPDATE %s SET update_count = update_count + 1 WHERE session_id = ? RETURNING user_id", s.tables.sessions),
	}
	if s.dialect == SQLite {
		s.stmts.runInsertCounting = s.runInsertCounting()
	}
	s.stmts.sessionVersion = fmt.Sprintf("SELECT update_count, updated_at, EXISTS (SELECT 1 FROM %s WHERE run_id = ? AND session_id = ?) FROM %s WHERE session_id = ?",
		s.tables.runs, s.tables.sessions)
	s.stmts.sessionVersionScoped = s.stmts.sessionVersion + " AND user_id = ?"
	for _, returning := range []sessionReturning{returnStored, returnSet} {
		s.stmts.sessionUpserts[0][returning] = s.sessionUpsertStatement(returning, false)
		s.stmts.sessionUpserts[1][returning] = s.sessionUpsertStatement(returning, true)
	}
	if !cfg.SkipSchemaCheck {
		if err := s.checkSchema(ctx, cfg.AutoMigrate); err != nil {
			return nil, err
		}
	}
	cols, err := s.columns(ctx, s.db.Reader(), SessionsTable)
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", SessionsTable, err)
	}
	s.legacyRunsColumn.Store(cols["runs"])
	if s.dialect == Postgres {
		s.startCompactor(ctx)
	}
	return s, nil
}

// checkSchema creates a new database, and migrates or refuses an old one.
func (s *Store) checkSchema(ctx context.Context, autoMigrate bool) error {
	pending, err := migrate.Pending(ctx, s)
	if err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	if len(pending) == 0 {
		return s.addOwnColumns(ctx)
	}
	fresh, err := s.isEmpty(ctx)
	if err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	if !fresh && !autoMigrate {
		// Tables a newer build adds are created as the database opens: that
		// changes nothing stored. Anything else waits for agnogo migrate.
		added, err := s.onlyMissingTables(ctx, pending)
		if err != nil {
			return fmt.Errorf("check schema: %w", err)
		}
		if !added {
			return &storage.MigrationRequiredError{Pending: pending, Command: s.migrateCommand}
		}
	}
	if _, err := migrate.Up(ctx, s, migrate.Options{}); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return s.addOwnColumns(ctx)
}

// ownColumns are the columns agnogo adds to tables Agno also creates. A
// table Agno created and stamped at the current version lacks them, and no
// migration step runs for it: they are added as the database opens.
var ownColumns = []struct{ table, column, definition string }{
	{SessionsTable, "update_count", "BIGINT NOT NULL DEFAULT 0"},
	{TracesTable, "name_level", "INTEGER NOT NULL DEFAULT 0"},
	{ScheduleRunsTable, "locked_by", "VARCHAR"},
	{ScheduleRunsTable, "locked_at", "BIGINT"},
}

// addOwnColumns adds the [ownColumns] an existing table lacks.
func (s *Store) addOwnColumns(ctx context.Context) error {
	qualified := map[string]string{SessionsTable: s.tables.sessions, TracesTable: s.tables.traces, ScheduleRunsTable: s.tables.scheduleRuns}
	for _, c := range ownColumns {
		exists, err := s.tableExists(ctx, s.db.Reader(), c.table)
		if err != nil {
			return fmt.Errorf("check schema: %w", err)
		}
		if !exists {
			continue
		}
		cols, err := s.columns(ctx, s.db.Reader(), c.table)
		if err != nil {
			return fmt.Errorf("check schema: columns of %s: %w", c.table, err)
		}
		if cols[c.column] {
			continue
		}
		if err := s.db.InTx(ctx, func(tx Conn) error {
			return s.addColumnIfMissing(ctx, tx, c.table, qualified[c.table], c.column, c.definition)
		}); err != nil {
			return fmt.Errorf("check schema: add %s.%s: %w", c.table, c.column, err)
		}
	}
	return nil
}

// onlyMissingTables reports whether every pending table is one the
// database does not have yet.
func (s *Store) onlyMissingTables(ctx context.Context, pending []storage.PendingTable) (bool, error) {
	for _, p := range pending {
		exists, err := s.tableExists(ctx, s.db.Reader(), p.Table)
		if err != nil || exists {
			return false, err
		}
	}
	return true, nil
}

// isEmpty reports whether the database holds none of the agnogo tables.
func (s *Store) isEmpty(ctx context.Context) (bool, error) {
	for _, table := range s.Tables() {
		exists, err := s.tableExists(ctx, s.db.Reader(), table.Name)
		if err != nil || exists {
			return false, err
		}
	}
	return true, nil
}

// Close stops the background compaction of daily metrics and releases the
// store's connections.
func (s *Store) Close() error {
	s.stopCompactor()
	return s.db.Close()
}

func (s *Store) nowSeconds() int64 { return s.now().Unix() }

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// notFound returns an error wrapping [storage.ErrNotFound] that names what is missing.
func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, storage.ErrNotFound)
}

// scanNullString scans a nullable text column.
type nullString struct{ s *string }

func (n nullString) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n.s = ""
	case string:
		*n.s = v
	case []byte:
		*n.s = string(v)
	default:
		*n.s = fmt.Sprint(v)
	}
	return nil
}

// nullInt64 scans a nullable integer column.
type nullInt64 struct{ n *int64 }

func (n nullInt64) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n.n = 0
	case int64:
		*n.n = v
	case int32:
		*n.n = int64(v)
	case int:
		*n.n = int64(v)
	case float64:
		*n.n = int64(v)
	default:
		return fmt.Errorf("scan %T into int64", src)
	}
	return nil
}

// jsonBytes scans a JSON column (text, bytes, or a driver-decoded value).
type jsonBytes struct{ b *[]byte }

func (j jsonBytes) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j.b = nil
	case string:
		*j.b = []byte(v)
	case []byte:
		*j.b = append([]byte(nil), v...)
	default:
		return fmt.Errorf("scan %T into JSON", src)
	}
	return nil
}

// nullable turns "" into SQL NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
