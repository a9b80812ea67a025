package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// Config configures [Open].
type Config struct {
	// URL is a PostgreSQL connection URL or keyword/value string; required.
	URL string
	// Schema holds agnogo's tables. Defaults to "ai".
	Schema string
	// MaxConns caps the pool. Defaults to pgxpool's default (max(4, CPUs)),
	// or pool_max_conns in URL.
	MaxConns int32
	// AutoMigrate migrates an out-of-date database when opening it instead
	// of refusing it. Defaults to false.
	AutoMigrate bool
	// SkipSchemaCheck opens the database whatever its schema; for migration
	// tooling. Defaults to false.
	SkipSchemaCheck bool
	// Now is the clock used for created_at/updated_at. Defaults to time.Now.
	Now func() time.Time
}

// Store is a PostgreSQL-backed [storage.Store], [storage.TraceStore],
// [storage.ScheduleStore], [storage.ApprovalStore] and
// [storage.ServiceAccountStore]. It also
// implements the migration driver interfaces of storage/migrate.
type Store struct {
	*sqlstore.Store
	pool *pgxpool.Pool
}

var (
	_ storage.Store               = (*Store)(nil)
	_ storage.TraceStore          = (*Store)(nil)
	_ storage.ScheduleStore       = (*Store)(nil)
	_ storage.ApprovalStore       = (*Store)(nil)
	_ storage.ServiceAccountStore = (*Store)(nil)
	_ storage.PoolStatser         = (*Store)(nil)
)

// PoolStats implements [storage.PoolStatser]: the pgx pool's state.
func (s *Store) PoolStats() []storage.PoolStats {
	st := s.pool.Stat()
	return []storage.PoolStats{{Name: "pool", Open: int(st.TotalConns()), InUse: int(st.AcquiredConns()), Idle: int(st.IdleConns()),
		MaxOpen: int(st.MaxConns()), WaitCount: st.EmptyAcquireCount(), WaitDuration: st.EmptyAcquireWaitTime()}}
}

// Open connects to cfg.URL and checks the schema.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.URL == "" {
		return nil, fmt.Errorf("%w: postgres: Config.URL is required", storage.ErrInvalid)
	}
	schema := cmp.Or(cfg.Schema, "ai")
	if !sqlstore.ValidIdentifier(schema) {
		return nil, fmt.Errorf("%w: schema %q must be letters, digits and underscores", storage.ErrInvalid, schema)
	}
	poolConfig, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres URL: %v", storage.ErrInvalid, err)
	}
	if cfg.MaxConns > 0 {
		poolConfig.MaxConns = cfg.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolConfig)
	if err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	store, err := sqlstore.Open(ctx, sqlstore.Config{
		DB:              &poolDB{pool: pool, binds: &binds{}},
		Dialect:         sqlstore.Postgres,
		Schema:          schema,
		Now:             cfg.Now,
		MigrateCommand:  migrateCommand(cfg.URL, schema),
		AutoMigrate:     cfg.AutoMigrate,
		SkipSchemaCheck: cfg.SkipSchemaCheck,
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return &Store{Store: store, pool: pool}, nil
}

// migrateCommand names the command that migrates this database, without
// the password.
func migrateCommand(rawURL, schema string) string {
	shown := "postgres://…"
	if cfg, err := pgconn.ParseConfig(rawURL); err == nil {
		shown = fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	}
	cmd := "agnogo migrate --db " + shown
	if schema != "ai" {
		cmd += " --schema " + schema
	}
	return cmd
}

// poolDB is a sqlstore.DB over a pgx pool.
type poolDB struct {
	pool  *pgxpool.Pool
	binds *binds // nil rebinds every statement
	// group holds the saves waiting to be committed together (see
	// [poolDB.InGroupTx]).
	group grouper
	// reads holds the reads waiting to be sent together (see
	// [poolDB.QueryRowBatched]).
	reads readBatcher
}

func (d *poolDB) Reader() sqlstore.Conn { return pgConn{q: d.pool, binds: d.binds} }

// InTx runs fn in a transaction whose BEGIN travels with its first
// statement, one round trip instead of two (see [lazyTx]).
func (d *poolDB) InTx(ctx context.Context, fn func(tx sqlstore.Conn) error) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection released inside a transaction (a ROLLBACK that failed)
	// is closed by the pool, not reused.
	defer conn.Release()
	tx := &lazyTx{conn: conn.Conn(), binds: d.binds}
	if err := fn(tx); err != nil {
		tx.rollback(ctx)
		return err
	}
	return tx.commit(ctx)
}

func (d *poolDB) Close() error {
	d.pool.Close()
	return nil
}

// pgConn runs sqlstore's `?` statements on pgx, numbering the placeholders.
type pgConn struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
	binds *binds // nil rebinds every statement
}

func (c pgConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, c.binds.rebind(query), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (c pgConn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := c.q.Query(ctx, c.binds.rebind(query), args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (c pgConn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return pgRow{c.q.QueryRow(ctx, c.binds.rebind(query), args...)}
}

type pgRow struct{ row pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}

// binds remembers the statements [rebind] turned, so a statement the store
// runs again and again is not scanned and copied each time. It keeps at
// most maxBinds of them: statements whose text varies with their filters
// could otherwise grow it without end.
type binds struct {
	turned sync.Map // query → rebound query
	n      atomic.Int64
}

// maxBinds bounds the statements a [binds] keeps.
const maxBinds = 1024

// rebind is [rebind], remembered; a nil b remembers nothing.
func (b *binds) rebind(query string) string {
	if b == nil {
		return rebind(query)
	}
	if turned, ok := b.turned.Load(query); ok {
		return turned.(string)
	}
	turned := rebind(query)
	if b.n.Load() < maxBinds {
		if _, loaded := b.turned.LoadOrStore(query, turned); !loaded {
			b.n.Add(1)
		}
	}
	return turned
}

// rebind turns `?` placeholders into $1, $2, …, leaving quoted text alone.
func rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		ch := query[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}
