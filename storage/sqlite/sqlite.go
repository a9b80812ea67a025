package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"runtime"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/internal/sqldb"
	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// Config configures [Open].
type Config struct {
	// Path is the database file. ":memory:" keeps everything in one
	// in-process connection (tests only). Defaults to "agnogo.db".
	Path string
	// BusyTimeout is how long a statement waits for another process's lock
	// before failing. Defaults to 5s.
	BusyTimeout time.Duration
	// MaxReadConns caps the read pool. Defaults to max(4, GOMAXPROCS).
	MaxReadConns int
	// AutoMigrate migrates an out-of-date database when opening it instead
	// of refusing it. Defaults to false.
	AutoMigrate bool
	// SkipSchemaCheck opens the database whatever its schema; for migration
	// tooling. Defaults to false.
	SkipSchemaCheck bool
	// Now is the clock used for created_at/updated_at. Defaults to time.Now.
	Now func() time.Time
}

// Store is a SQLite-backed [storage.Store], [storage.TraceStore],
// [storage.ScheduleStore], [storage.ApprovalStore] and
// [storage.ServiceAccountStore]. It also
// implements [migrate.Driver] and [migrate.LegacyRunsCleaner].
//
// [migrate.Driver]: https://pkg.go.dev/github.com/agnogo/agnogo/storage/migrate#Driver
// [migrate.LegacyRunsCleaner]: https://pkg.go.dev/github.com/agnogo/agnogo/storage/migrate#LegacyRunsCleaner
type Store struct {
	*sqlstore.Store
	writer, readers *sql.DB
}

var (
	_ storage.Store               = (*Store)(nil)
	_ storage.TraceStore          = (*Store)(nil)
	_ storage.ScheduleStore       = (*Store)(nil)
	_ storage.ApprovalStore       = (*Store)(nil)
	_ storage.ServiceAccountStore = (*Store)(nil)
	_ storage.PoolStatser         = (*Store)(nil)
)

// PoolStats implements [storage.PoolStatser]: the writer's pool (one
// connection) and the readers'.
func (s *Store) PoolStats() []storage.PoolStats {
	stats := []storage.PoolStats{sqlPoolStats("writer", s.writer)}
	if s.readers != s.writer {
		stats = append(stats, sqlPoolStats("reader", s.readers))
	}
	return stats
}

// sqlPoolStats reads a database/sql pool's state.
func sqlPoolStats(name string, db *sql.DB) storage.PoolStats {
	st := db.Stats()
	return storage.PoolStats{Name: name, Open: st.OpenConnections, InUse: st.InUse, Idle: st.Idle, MaxOpen: st.MaxOpenConnections,
		WaitCount: st.WaitCount, WaitDuration: st.WaitDuration}
}

// Open opens (creating if needed) the SQLite database at cfg.Path.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	path := cmp.Or(cfg.Path, "agnogo.db")
	busy := cmp.Or(cfg.BusyTimeout, 5*time.Second)
	if busy < 0 {
		return nil, fmt.Errorf("sqlite: BusyTimeout %v must not be negative", busy)
	}
	db := &sqldb.DB{}
	var err error
	if path == ":memory:" {
		db.Writer, err = openPool(path, busy, false, 1)
		db.Readers = db.Writer
	} else {
		db.Writer, err = openPool(path, busy, false, 1)
		if err == nil {
			db.Readers, err = openPool(path, busy, true, cmp.Or(cfg.MaxReadConns, max(4, runtime.GOMAXPROCS(0))))
		}
	}
	if err != nil {
		if db.Writer != nil {
			_ = db.Writer.Close()
		}
		return nil, err
	}
	// Touch the writer so a bad path or a corrupt file fails here, and the
	// file exists before the readers look at it.
	if err := db.Writer.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	store, err := sqlstore.Open(ctx, sqlstore.Config{
		DB:              db,
		Dialect:         sqlstore.SQLite,
		Now:             cfg.Now,
		MigrateCommand:  "agnogo migrate --db sqlite://" + path,
		AutoMigrate:     cfg.AutoMigrate,
		SkipSchemaCheck: cfg.SkipSchemaCheck,
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return &Store{Store: store, writer: db.Writer, readers: db.Readers}, nil
}

// openPool opens a pool whose every connection is set up with agnogo's
// pragmas: WAL, foreign keys (the runs cascade needs them), the busy timeout,
// and immediate write transactions, which take the write lock at BEGIN so a
// transaction never fails half-way on a lock upgrade. The writer keeps its
// temporary files in memory: transactions that share a commit each run in a
// savepoint, whose journal of the pages they change would otherwise be
// written to a temporary file once it outgrows 64 KiB (a fifth of the
// writer's time under load). Its sorts, such as a migration's CREATE INDEX,
// then also stay in memory, in proportion to the index built.
func openPool(path string, busy time.Duration, readOnly bool, maxConns int) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if path != ":memory:" {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
		q.Add("_pragma", "temp_store(MEMORY)")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	return db, nil
}
