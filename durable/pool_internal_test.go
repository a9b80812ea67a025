package durable

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/testdb"
)

// cutProxy forwards TCP connections to a server and can end every one of
// them cleanly, as a server that goes away between two messages does.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
			go func() { _, _ = io.Copy(client, server); _ = client.Close() }()
		}
	}()
	return p
}

// cut closes every connection made so far.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// A connection of the engine's pool that the server ends while a statement
// waits for its answer fails with a network error — the kind the engine
// retries — not with a bare io.ErrUnexpectedEOF, which it would take for a
// permanent failure; the pool then connects again.
func TestEnginePoolReportsAnEndedConnectionAsANetworkError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := url.Parse(testdb.PostgresURL(t))
	require.NoError(t, err)
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()

	pool, err := enginePool(ctx, u.String())
	require.NoError(t, err)
	require.NotNil(t, pool)
	defer pool.Close()
	_, err = pool.Exec(ctx, "SELECT 1")
	require.NoError(t, err)

	// The statement is in flight when the connection ends: the server
	// holds it (pg_sleep) until the proxy cuts the connection.
	done := make(chan error, 1)
	go func() {
		_, err := pool.Exec(ctx, "SELECT pg_sleep($1) /* cut me */", 30)
		done <- err
	}()
	direct, err := pgx.Connect(ctx, testdb.PostgresURL(t))
	require.NoError(t, err)
	defer direct.Close(ctx)
	require.Eventually(t, func() bool {
		var n int
		err := direct.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%/* cut me */'`).Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 10*time.Millisecond, "the statement reaches the server")
	proxy.cut()
	err = <-done
	require.Error(t, err, "the connection was ended under the statement")
	var netErr net.Error
	require.True(t, errors.As(err, &netErr), "an ended connection is a network error, got %T: %v", err, err)
	require.ErrorIs(t, err, io.EOF)
	_, _ = direct.Exec(ctx, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%/* cut me */' AND pid <> pg_backend_pid()`)

	_, err = pool.Exec(ctx, "SELECT 1")
	require.NoError(t, err, "the pool connects again")
}

func TestEnginePoolIsForPostgresOnly(t *testing.T) {
	t.Parallel()
	pool, err := enginePool(context.Background(), "sqlite:file:/tmp/x.db")
	require.NoError(t, err)
	require.Nil(t, pool)
	require.True(t, postgresURL("postgresql://u@h/db"))
	require.True(t, postgresURL("host=h user=u dbname=db"))
	require.False(t, postgresURL("sqlite:file:x.db?_pragma=busy_timeout(5000)"))
}
