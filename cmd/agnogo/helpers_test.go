package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/testdb"
)

// Helpers shared by the tests that run the agnogo binary.

// TestMain removes the agnogo binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the agnogo binary the tests run, built once per test process
// (the tests that need it run in parallel; one build is enough for all).
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// buildBinary returns the agnogo binary, building it on first use.
func buildBinary(t testing.TB) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "agnogo-test-"); built.err != nil {
			return
		}
		path := filepath.Join(built.dir, "agnogo")
		if out, err := exec.Command(goTool, "build", "-o", path, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w: %s", err, out)
			return
		}
		built.path = path
	})
	require.NoError(t, built.err)
	return built.path
}

// process is a running `agnogo serve`.
type process struct {
	cmd    *exec.Cmd
	log    *serverLog
	url    string
	exited chan struct{}
}

// startBinary starts `agnogo serve` with the config, its executor id left to
// the default.
func startBinary(t testing.TB, binary, config string) *process {
	t.Helper()
	return startProcess(t, binary, config)
}

// startReplica starts `agnogo serve` as one replica with its executor id.
func startReplica(t testing.TB, binary, config, executor string) *process {
	t.Helper()
	return startProcess(t, binary, config, "AGNOGO_EXECUTOR_ID="+executor)
}

// startProcess starts `agnogo serve` on a free port, with env added to an
// environment cleared of the variables that change its queue or auth, and
// waits until it listens. It is killed when the test ends.
func startProcess(t testing.TB, binary, config string, env ...string) *process {
	t.Helper()
	return startProcessAt(t, binary, config, "127.0.0.1:0", env...)
}

// startProcessAt is startProcess listening on addr.
func startProcessAt(t testing.TB, binary, config, addr string, env ...string) *process {
	t.Helper()
	p := &process{log: &serverLog{}, exited: make(chan struct{})}
	p.cmd = serveCommand(binary, config, addr, env...)
	p.cmd.Stderr = p.log
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	p.url = "http://" + waitAddr(t, p.log, p.exited)
	return p
}

// serveCommand is `agnogo serve` with the config on addr, with env added to
// an environment cleared of the variables that change its queue or auth.
func serveCommand(binary, config, addr string, env ...string) *exec.Cmd {
	cmd := exec.Command(binary, "serve", "--config", config, "--addr", addr)
	cmd.Env = append(withoutEnv(os.Environ(), "AGNOGO_EXECUTOR_ID", "AGNOGO_BACKGROUND_MAX_CONCURRENCY", "OS_SECURITY_KEY"), env...)
	return cmd
}

// freeAddr is a local address nothing listens on at the moment, for a
// server that must be restarted on the address it had.
func freeAddr(t testing.TB) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := listener.Addr().String()
	require.NoError(t, listener.Close())
	return addr
}

// kill ends the process with SIGKILL: no shutdown, no final writes.
func (p *process) kill(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Kill())
	<-p.exited
}

// freshDatabase creates an empty Postgres database for one test and returns
// its URL; it is dropped when the test ends.
func freshDatabase(t testing.TB) string {
	t.Helper()
	admin := testdb.PostgresURL(t)
	name := testdb.UniqueName(t, "agnogo_chaos")
	conn, err := pgx.Connect(t.Context(), admin)
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	conn.Close(t.Context())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, admin); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			conn.Close(ctx)
		}
	})
	u, err := url.Parse(admin)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

// poll calls check every tick, on the caller's goroutine, until it reports
// true or within passes; it reports whether check did.
func poll(within, tick time.Duration, check func() bool) bool {
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for !check() {
		select {
		case <-ticker.C:
		case <-timeout.C:
			return check()
		}
	}
	return true
}
