package durable_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// TestRedisNamespacePerDatabase: two deployments on two databases share one
// Redis and one key prefix, and each accepts a run under the same
// Idempotency-Key — so the same run id. Their Redis keys differ by the
// database's namespace: each run's Redis stream holds exactly its own
// events, and no write is refused as an index the stream already has.
func TestRedisNamespacePerDatabase(t *testing.T) {
	t.Parallel()
	rdb := newTestRedis(t)
	logs := &recorder{}
	withRedis := rdb.with(nil, func(c *durable.Config) { c.Logger = slog.New(logs) })
	a := newFixture(t, []scripted.Reply{scripted.Text("answered by deployment A")}, nil, withRedis)
	b := newFixture(t, []scripted.Reply{scripted.Text("answered by deployment B, at greater length")}, nil, withRedis)
	prefixA, prefixB := a.queue.RedisKeyPrefix(), b.queue.RedisKeyPrefix()
	namespaced := regexp.MustCompile("^" + regexp.QuoteMeta(rdb.prefix) + ":[0-9a-f]{16}$")
	require.Regexp(t, namespaced, prefixA)
	require.Regexp(t, namespaced, prefixB)
	require.NotEqual(t, prefixA, prefixB, "two databases, two namespaces")

	onA, err := a.submit(t, "s1", "hello", "order-42")
	require.NoError(t, err)
	onB, err := b.submit(t, "s1", "hello", "order-42")
	require.NoError(t, err)
	require.Equal(t, onA.RunID, onB.RunID, "the same key names the same run id in both")
	require.Equal(t, "answered by deployment A", a.wait(t, onA.RunID).Content)
	require.Equal(t, "answered by deployment B, at greater length", b.wait(t, onB.RunID).Content)

	for _, f := range []*fixture{a, b} {
		// The run's row is final before its last event is in the
		// database's stream: read the stream once it has its end.
		reader := databaseOnly(t, f)
		var stored []string
		require.Eventually(t, func() bool {
			stored = summary(collect(t, reader.Events(t.Context(), onA.RunID, -1, false)))
			return len(stored) > 0 && strings.HasSuffix(stored[len(stored)-1], ":"+run.EventRunCompleted)
		}, 30*time.Second, 20*time.Millisecond, "the stored stream ends with RunCompleted")
		var live []string
		require.Eventually(t, func() bool {
			msgs, err := rdb.client.XRange(t.Context(), eventsKey(f.queue, onA.RunID), "-", "+").Result()
			require.NoError(t, err)
			live = make([]string, len(msgs))
			for i, msg := range msgs {
				live[i] = msg.Values["idx"].(string) + ":" + msg.Values["name"].(string)
			}
			return len(live) >= len(stored)
		}, 30*time.Second, 20*time.Millisecond, "the Redis stream has the run's events")
		require.Equal(t, stored, live, "the Redis stream of %s holds its own run's events only", f.queue.RedisKeyPrefix())
	}
	require.Zero(t, logs.count("Redis refused a write"), "%v", logs.all())
}

// databaseOnly opens a queue without Redis on f's database, to read what
// the database holds.
func databaseOnly(t *testing.T, f *fixture) *durable.Queue {
	t.Helper()
	return f.open(t, "reader", nil)
}

// TestRedisNamespaceOfARecreatedDatabase: the namespace is kept in the
// database: a restart finds the same one, a database dropped and created
// again under the same URL gets a new one.
func TestRedisNamespaceOfARecreatedDatabase(t *testing.T) {
	t.Parallel()
	onBoth(t, testRedisNamespaceOfARecreatedDatabase)
}

func testRedisNamespaceOfARecreatedDatabase(t *testing.T) {
	rdb := newTestRedis(t)
	var (
		open func(t *testing.T) *durable.Queue
		drop func(t *testing.T)
	)
	if postgresBackend(t) {
		url := testdb.PostgresURL(t)
		schema := testdb.UniqueName(t, "agnogo")
		open = func(t *testing.T) *durable.Queue {
			store, err := postgres.Open(t.Context(), postgres.Config{URL: url, Schema: schema, AutoMigrate: true})
			require.NoError(t, err)
			t.Cleanup(func() { store.Close() })
			return openQueue(t, url, schema+"_dbos", store, rdb)
		}
		drop = func(t *testing.T) {
			conn, err := pgx.Connect(t.Context(), url)
			require.NoError(t, err)
			defer conn.Close(context.WithoutCancel(t.Context()))
			for _, s := range []string{schema, schema + "_dbos"} {
				_, err = conn.Exec(t.Context(), "DROP SCHEMA "+pgx.Identifier{s}.Sanitize()+" CASCADE")
				require.NoError(t, err)
			}
		}
		t.Cleanup(func() {
			conn, err := pgx.Connect(context.Background(), url)
			if err == nil {
				_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema + "_dbos"}.Sanitize()+" CASCADE")
				_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
				_ = conn.Close(context.Background())
			}
		})
	} else {
		path := filepath.Join(t.TempDir(), "agnogo.db")
		open = func(t *testing.T) *durable.Queue {
			store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
			require.NoError(t, err)
			t.Cleanup(func() { store.Close() })
			return openQueue(t, "sqlite:file:"+path, "", store, rdb)
		}
		drop = func(t *testing.T) {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
					require.NoError(t, err)
				}
			}
		}
	}

	first := open(t)
	namespace := first.RedisKeyPrefix()
	require.NoError(t, first.Shutdown(0))
	again := open(t)
	require.Equal(t, namespace, again.RedisKeyPrefix(), "the same database, the same namespace")
	require.NoError(t, again.Shutdown(0))

	drop(t)
	recreated := open(t)
	require.NotEqual(t, namespace, recreated.RedisKeyPrefix(), "a new database under the same URL, a new namespace")
}

// openQueue opens (without launching) a queue with Redis on a database; it
// is shut down when the test ends.
func openQueue(t *testing.T, dbURL, schema string, store storage.Store, rdb *testRedis) *durable.Queue {
	t.Helper()
	q, err := durable.New(t.Context(), durable.Config{DatabaseURL: dbURL, Schema: schema, Store: store,
		Events: eventlog.NewMemory(eventlog.MemoryConfig{}), ExecutorID: "exec-1", Redis: rdb.client, RedisPrefix: rdb.prefix,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Shutdown(0) })
	return q
}
