package config

import (
	"net"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/testdb"
)

// closedAddr is a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := listener.Addr().String()
	require.NoError(t, listener.Close())
	return addr
}

func TestStartQueueRedis(t *testing.T) {
	t.Run("unreachable: a warning, and the queue runs without it", func(t *testing.T) {
		addr := closedAddr(t)
		built, opts, log := serverOS(t, "db: ${DB}\nredis: redis://"+addr+"/0\n", nil)
		q, events, err := built.StartQueue(t.Context(), opts)
		require.NoError(t, err)
		require.NotNil(t, q)
		require.NotNil(t, events)
		require.Contains(t, log.String(), "redis does not answer; serving without it")
		require.Contains(t, log.String(), addr)
	})
	t.Run("a URL that cannot be parsed is an error", func(t *testing.T) {
		built, opts, _ := serverOS(t, "db: ${DB}\n", nil)
		built.File.Redis = "redis://127.0.0.1:6379/not-a-number"
		q, _, err := built.StartQueue(t.Context(), opts)
		require.ErrorContains(t, err, "redis: ")
		require.ErrorContains(t, err, "want redis://")
		require.Nil(t, q)
	})
	t.Run("reachable: the queue listens for cancels", func(t *testing.T) {
		addr := testdb.RedisAddr(t)
		built, opts, log := serverOS(t, "db: ${DB}\nredis: redis://"+addr+"/0\n", nil)
		q, _, err := built.StartQueue(t.Context(), opts)
		require.NoError(t, err)
		require.NotNil(t, q)
		require.NotContains(t, log.String(), "redis does not answer")
		client := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = client.Close() })
		channel := q.RedisKeyPrefix() + ":run:cancellation"
		require.Regexp(t, `^agno:[0-9a-f]{16}:run:cancellation$`, channel, "the default prefix, then the database's namespace")
		require.Eventually(t, func() bool {
			subs, err := client.PubSubNumSub(t.Context(), channel).Result()
			return err == nil && subs[channel] >= 1
		}, 10*time.Second, 10*time.Millisecond)
	})
}

// TestDefaultExecutorID: the default executor id is the host name, the
// listen address and a digest of the database: the same for one server
// started again, different for two servers on one host or two databases.
func TestDefaultExecutorID(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	require.NoError(t, err)
	a := defaultExecutorID("127.0.0.1:7777", "postgres://db/one")
	require.Equal(t, a, defaultExecutorID("127.0.0.1:7777", "postgres://db/one"), "stable across restarts")
	require.Regexp(t, "^"+regexp.QuoteMeta(host+"-127.0.0.1:7777-")+"[0-9a-f]{8}$", a)
	require.NotEqual(t, a, defaultExecutorID("127.0.0.1:7778", "postgres://db/one"), "another server on the host")
	require.NotEqual(t, a, defaultExecutorID("127.0.0.1:7777", "postgres://db/two"), "another database")
	require.Regexp(t, "^"+regexp.QuoteMeta(host+"-")+"[0-9a-f]{8}$", defaultExecutorID("", "postgres://db/one"), "no address known")
}
