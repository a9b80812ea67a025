package durable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The engine's pool on Postgres, with the settings DBOS gives the pool it
// makes itself.
const (
	poolMaxConns        = 20
	poolMaxConnLifetime = time.Hour
	poolMaxConnIdleTime = 5 * time.Minute
	poolConnectTimeout  = 10 * time.Second
	// idleInTransaction ends a transaction a lost client left open.
	idleInTransaction = time.Minute
)

// enginePool opens the connection pool the engine keeps its workflows in
// when its database is Postgres (nil for SQLite).
//
// The engine retries its database calls while the database is away — it
// recognises a refused connection, an administrator's shutdown (SQLSTATE
// 57P01) and network errors — but not a connection that ends while a
// statement waits for its answer: the server went away between two
// messages, and the driver reports io.ErrUnexpectedEOF, which the engine
// takes for a permanent failure. A run caught that way by a database
// restart would not have its step or its outcome recorded, or would be
// dequeued and dropped. The pool's connections therefore report the end of
// their stream as the network error it is (a *net.OpError wrapping io.EOF),
// which every layer above retries.
func enginePool(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	if !postgresURL(databaseURL) {
		return nil, nil
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("durable: the database URL: %w", err)
	}
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = poolMaxConns
	}
	cfg.MinConns = 0
	cfg.MaxConnLifetime = poolMaxConnLifetime
	cfg.MaxConnIdleTime = poolMaxConnIdleTime
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = poolConnectTimeout
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "agnogo"
	}
	if _, set := cc.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cc.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(idleInTransaction.Milliseconds())
	}
	dial := cc.DialFunc
	cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return eofAsNetError{Conn: c}, nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("durable: open the queue database: %w", err)
	}
	return pool, nil
}

// postgresURL reports whether a database URL names Postgres (a URL or a
// key=value connection string), as opposed to SQLite.
func postgresURL(u string) bool {
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		return true
	}
	return !strings.Contains(u, "://") && !strings.HasPrefix(u, "sqlite") && strings.Contains(u, "=")
}

// eofAsNetError is a connection whose end of stream is a network error.
type eofAsNetError struct{ net.Conn }

// Read reads from the connection; the end of its stream is a *net.OpError
// wrapping io.EOF.
func (c eofAsNetError) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if errors.Is(err, io.EOF) {
		err = &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return n, err
}
