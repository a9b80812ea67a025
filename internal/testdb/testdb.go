package testdb

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The environment variables that point tests at their servers, and the
// addresses used when they are unset.
const (
	PostgresURLEnv     = "AGNOGO_TEST_POSTGRES_URL"
	DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	RedisAddrEnv       = "AGNOGO_TEST_REDIS_ADDR"
	DefaultRedisAddr   = "127.0.0.1:6379"
)

// reachTimeout bounds how long a reachability check may take.
const reachTimeout = 3 * time.Second

// reachability remembers each address's check for the rest of the test
// binary's life, so a package with hundreds of tests probes the server once.
var reachability sync.Map // address -> *probe

type probe struct {
	once sync.Once
	err  error
}

// check runs probeFn once per address and returns its result.
func check(address string, probeFn func(ctx context.Context) error) error {
	value, _ := reachability.LoadOrStore(address, &probe{})
	p := value.(*probe)
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), reachTimeout)
		defer cancel()
		p.err = probeFn(ctx)
	})
	return p.err
}

// PostgresURL returns the URL of the test PostgreSQL server, from
// AGNOGO_TEST_POSTGRES_URL or [DefaultPostgresURL], after checking that it
// answers within a few seconds. When it does not, the test is skipped — or,
// when the CI environment variable is true, failed.
func PostgresURL(t testing.TB) string {
	t.Helper()
	url := envOr(PostgresURLEnv, DefaultPostgresURL)
	err := check("postgres "+url, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		return conn.Ping(ctx)
	})
	if err != nil {
		unreachable(t, "PostgreSQL", redactURL(url), PostgresURLEnv, err)
	}
	return url
}

// RedisAddr returns the host:port of the test Redis server, from
// AGNOGO_TEST_REDIS_ADDR or [DefaultRedisAddr], after checking that it answers
// PING within a few seconds. When it does not, the test is skipped — or, when
// the CI environment variable is true, failed.
func RedisAddr(t testing.TB) string {
	t.Helper()
	addr := envOr(RedisAddrEnv, DefaultRedisAddr)
	err := check("redis "+addr, func(ctx context.Context) error {
		return pingRedis(ctx, addr)
	})
	if err != nil {
		unreachable(t, "Redis", addr, RedisAddrEnv, err)
	}
	return addr
}

// pingRedis sends PING in the RESP protocol and expects +PONG, without
// depending on a Redis client library.
func pingRedis(ctx context.Context, addr string) error {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			return err
		}
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return fmt.Errorf("send PING: %w", err)
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read PING reply: %w", err)
	}
	if reply = strings.TrimSpace(reply); reply != "+PONG" {
		return fmt.Errorf("PING answered %q, want +PONG", reply)
	}
	return nil
}

// unreachable skips the test, or fails it in CI, naming the server, where it
// was looked for and how to point the tests elsewhere.
func unreachable(t testing.TB, server, address, env string, err error) {
	t.Helper()
	if inCI() {
		t.Fatalf("%s not reachable at %s (set %s to override): %v; CI must run the database tests", server, address, env, err)
	}
	t.Skipf("SKIPPING: %s not reachable at %s (set %s to override): %v; these tests run in CI", server, address, env, err)
}

// inCI reports whether the CI environment variable is set to a true value.
func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// envOr returns the environment variable key, or fallback when it is unset or empty.
func envOr(key, fallback string) string {
	if value := os.Getenv(key); value != "" {
		return value
	}
	return fallback
}

// redactURL hides a password in a connection URL before it reaches a log.
func redactURL(raw string) string {
	config, err := pgx.ParseConfig(raw)
	if err != nil || config.Password == "" {
		return raw
	}
	return strings.Replace(raw, ":"+config.Password+"@", ":xxxxx@", 1)
}

// maxIdentifierLen is PostgreSQL's identifier limit (NAMEDATALEN - 1).
const maxIdentifierLen = 63

// suffixLen is the number of random hex characters UniqueName appends.
const suffixLen = 10

// issuedNames guarantees that UniqueName never repeats within a test binary.
var issuedNames sync.Map

// UniqueName returns a short lower-case identifier, unique per call, made of
// prefix and 10 random hex characters: for example "storagetest_3f9a01c2d4".
// It is safe as an unquoted PostgreSQL identifier: prefix is lower-cased, any
// character other than a-z, 0-9 and _ becomes _, and a prefix that is empty or
// starts with a digit gains a leading "t".
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	prefix = sanitizeIdentifier(prefix)
	if len(prefix) > maxIdentifierLen-suffixLen {
		prefix = prefix[:maxIdentifierLen-suffixLen]
	}
	for {
		random := make([]byte, suffixLen/2)
		if _, err := rand.Read(random); err != nil {
			t.Fatalf("unique name: read random bytes: %v", err)
		}
		name := prefix + hex.EncodeToString(random)
		if _, taken := issuedNames.LoadOrStore(name, true); !taken {
			return name
		}
	}
}

// sanitizeIdentifier maps text onto [a-z0-9_], starting with a letter or _.
func sanitizeIdentifier(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "t" + name
	}
	return name
}
