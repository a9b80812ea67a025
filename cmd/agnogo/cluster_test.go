package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/internal/testdb"
)

// replicaRedisDB is the Redis database the replica tests use. The config
// has no key prefix, so a database of their own keeps their keys apart
// from the other tests'; the keys of each run are deleted when its test ends.
const replicaRedisDB = 9

// replicaCluster is what replicas of `agnogo serve` share: a fresh Postgres
// database, optionally Redis, one config file and one fake model.
type replicaCluster struct {
	binary string
	config string
	fake   *fakeopenai.Server
	redis  *redis.Client // nil without Redis
	runs   []string      // the runs whose Redis keys are deleted at the end
}

// clusterOptions shapes a replicaCluster's config.
type clusterOptions struct {
	// redis adds the redis key. Defaults to false: the replicas meet in the
	// database only.
	redis bool
	// maxConcurrency is queue.max_concurrency. Defaults to 4.
	maxConcurrency int
	// lockGrace is queue.lock_grace_seconds. Defaults to 5.
	lockGrace int
	// stopTimeout is queue.stop_timeout_seconds. Defaults to 30.
	stopTimeout int
	// defaultAttempts leaves queue.max_attempts out, to its default.
	// Defaults to false: max_attempts 2.
	defaultAttempts bool
}

// newReplicaCluster writes the config of an "assistant" agent with the
// workspace tools (on a directory holding notes.txt) and the durable queue
// set to continue lost runs: max_attempts 2 (or the default),
// lock_grace_seconds 5 (see clusterOptions).
func newReplicaCluster(tb testing.TB, binary string, opts clusterOptions) *replicaCluster {
	tb.Helper()
	c := &replicaCluster{binary: binary, fake: fakeopenai.New(tb)}
	redisLine := ""
	if opts.redis {
		addr := testdb.RedisAddr(tb)
		redisLine = fmt.Sprintf("redis: redis://%s/%d\n", addr, replicaRedisDB)
		c.redis = redis.NewClient(&redis.Options{Addr: addr, DB: replicaRedisDB})
		tb.Cleanup(c.deleteRedisKeys) // after the replicas, started later, are killed
	}
	dbURL := freshDatabase(tb)
	workspace := tb.TempDir()
	require.NoError(tb, os.WriteFile(filepath.Join(workspace, "notes.txt"), []byte("remember the milk\n"), 0o600))
	attempts := "max_attempts: 2, "
	if opts.defaultAttempts {
		attempts = ""
	}
	c.config = filepath.Join(tb.TempDir(), "agnogo.yaml")
	require.NoError(tb, os.WriteFile(c.config, []byte(fmt.Sprintf(`name: Replicas
db: %s
%squeue: {%slock_grace_seconds: %d, stop_timeout_seconds: %d, max_concurrency: %d}
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - id: assistant
    model: fake
    tools: [workspace]
    workspace: {root: %q, confirm_writes: false}
`, dbURL, redisLine, attempts, cmp.Or(opts.lockGrace, 5), cmp.Or(opts.stopTimeout, 30), cmp.Or(opts.maxConcurrency, 4), c.fake.URL, workspace)), 0o600))
	return c
}

// start starts the replica named name (its executor id is replica-<name>).
func (c *replicaCluster) start(tb testing.TB, name string) *process {
	tb.Helper()
	p := startReplica(tb, c.binary, c.config, "replica-"+name)
	if c.redis != nil {
		require.NotContains(tb, p.log.String(), "redis does not answer", "replica %s serves without Redis", name)
	}
	return p
}

// track notes a run of the cluster, whose Redis keys are deleted when the
// test ends.
func (c *replicaCluster) track(runID string) { c.runs = append(c.runs, runID) }

// deleteRedisKeys deletes the Redis keys of the runs tracked and closes the
// client.
func (c *replicaCluster) deleteRedisKeys() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, runID := range c.runs {
		if keys, err := c.redisKeys(ctx, runID); err == nil && len(keys) > 0 {
			_ = c.redis.Del(ctx, keys...).Err()
		}
	}
	_ = c.redis.Close()
}

// redisKeys lists the Redis keys that name the run.
func (c *replicaCluster) redisKeys(ctx context.Context, runID string) ([]string, error) {
	var keys []string
	iter := c.redis.Scan(ctx, 0, "*"+runID+"*", 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys, iter.Err()
}

// forEachCoordination runs test as parallel subtests on a new cluster: one
// whose replicas also share Redis, one whose replicas share the database only.
func forEachCoordination(t *testing.T, binary string, opts clusterOptions, test func(t *testing.T, c *replicaCluster)) {
	for _, mode := range []struct {
		name  string
		redis bool
	}{{"redis", true}, {"database only", false}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			opts := opts // each subtest its own copy
			opts.redis = mode.redis
			test(t, newReplicaCluster(t, binary, opts))
		})
	}
}

// submitBackground submits a background run (stream=false) and returns its
// run id.
func (p *process) submitBackground(tb testing.TB, sessionID, message string) string {
	tb.Helper()
	resp, err := http.PostForm(p.url+"/agents/assistant/runs",
		url.Values{"message": {message}, "stream": {"false"}, "background": {"true"}, "session_id": {sessionID}})
	require.NoError(tb, err)
	defer resp.Body.Close()
	var accepted map[string]any
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&accepted))
	require.Equal(tb, http.StatusAccepted, resp.StatusCode, "%v", accepted)
	runID, _ := accepted["run_id"].(string)
	require.NotEmpty(tb, runID)
	return runID
}

// readRun reads a run with GET /agents/assistant/runs/{run_id}.
func (p *process) readRun(tb testing.TB, runID, sessionID string) map[string]any {
	tb.Helper()
	resp, err := http.Get(p.url + "/agents/assistant/runs/" + runID + "?session_id=" + url.QueryEscape(sessionID))
	require.NoError(tb, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(tb, http.StatusOK, resp.StatusCode, "%v", out)
	return out
}

// pollRun reads the run every 50 ms until done accepts it and returns
// how long that took; it fails after streamTimeout.
func (p *process) pollRun(tb testing.TB, runID, sessionID string, done func(map[string]any) bool) time.Duration {
	tb.Helper()
	start := time.Now()
	var out map[string]any
	ok := poll(streamTimeout, 50*time.Millisecond, func() bool {
		out = p.readRun(tb, runID, sessionID)
		return done(out)
	})
	took := time.Since(start)
	require.True(tb, ok, "the run is still %v:\n%s", out["status"], p.log)
	return took
}

// resumeForm is the form of POST …/resume: from the start when last is
// negative, else after the event index last.
func resumeForm(sessionID string, last int64) url.Values {
	form := url.Values{"session_id": {sessionID}}
	if last >= 0 {
		form.Set("last_event_index", fmt.Sprint(last))
	}
	return form
}
