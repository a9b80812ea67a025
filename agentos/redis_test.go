package agentos_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/internal/gatedmodel"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// newRedisReplica is newReplica with any model and the queue on Redis.
func newRedisReplica(t *testing.T, path, executor string, m model.Model, rdb *redis.Client, prefix string) *server {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: m, Store: store})
	require.NoError(t, err)
	events := agentos.NewEventLog()
	q, err := durable.New(t.Context(), durable.Config{DatabaseURL: "sqlite:file:" + path, Store: store, Runners: []run.Runner{a},
		Events: events, ExecutorID: executor, PollInterval: 10 * time.Millisecond, Redis: rdb, RedisPrefix: prefix,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, q.Launch())
	t.Cleanup(func() { _ = q.Shutdown(time.Second) })
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{a}, Queue: q, Events: events})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	return &server{Server: ts, store: store, os: os}
}

// TestResumeOnAnotherReplicaLiveThroughRedis: replica B resumes a run that
// replica A is executing and gets the deltas of A's model call while that
// call is still running (the database would have them only when it ends),
// then the rest of the run, with the indices A assigned.
func TestResumeOnAnotherReplicaLiveThroughRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testdb.RedisAddr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := testdb.UniqueName(t, "agnotest")
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		if keys, _ := rdb.Keys(ctx, prefix+":*").Result(); len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	})
	m := gatedmodel.New()
	t.Cleanup(m.Open)
	path := filepath.Join(t.TempDir(), "shared.db")
	a := newRedisReplica(t, path, "replica-a", m, rdb, prefix)
	accepted := decode[map[string]any](t, a.postBackground(t, url.Values{"message": {"go"}, "stream": {"false"}, "session_id": {"x"}}, ""))
	runID := accepted["run_id"].(string)
	select {
	case <-m.Streamed():
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not start on A")
	}
	b := newRedisReplica(t, path, "replica-b", m, rdb, prefix)

	frames := liveFrames(t, b.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"last_event_index": {"-1"}, "session_id": {"x"}}).Body)
	var got []frame
	var deltas []string
	deadline := time.After(10 * time.Second)
	for strings.Join(deltas, "") != "Hello, " {
		select {
		case f, ok := <-frames:
			require.True(t, ok, "the stream ended early: %v", frameNames(got))
			got = append(got, f)
			if f.event == run.EventRunContent {
				deltas = append(deltas, f.data["content"].(string))
			}
		case <-deadline:
			t.Fatalf("B did not stream the running model call's deltas; got %v", frameNames(got))
		}
	}
	require.Equal(t, "catch_up", got[0].event, frameNames(got))

	m.Open()
	for f := range frames {
		got = append(got, f)
	}
	names := frameNames(got)
	require.Contains(t, names, "subscribed")
	require.Equal(t, run.EventRunCompleted, names[len(names)-1], names)

	onA := readFrames(t, a.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"last_event_index": {"-1"}, "session_id": {"x"}}).Body)
	require.Equal(t, indices(t, onA), indices(t, got), "the same events with the same indices on both replicas")
}
