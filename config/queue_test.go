package config

import (
	"net"
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
		require.Eventually(t, func() bool {
			subs, err := client.PubSubNumSub(t.Context(), "agno:run:cancellation").Result()
			return err == nil && subs["agno:run:cancellation"] >= 1
		}, 10*time.Second, 10*time.Millisecond)
	})
}
