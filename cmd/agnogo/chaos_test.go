package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/internal/testdb"
)

// chaosRuns is how many background runs the replica test submits.
const chaosRuns = 200

// chaosRedisDB is the Redis database of the chaos test.
const chaosRedisDB = 10

// TestReplicasSurviveAKilledPeer: two `agnogo serve` replicas share one
// Postgres database. Runs are submitted to both; one replica is killed with
// SIGKILL while it executes runs. Every accepted run ends COMPLETED, none is
// left PENDING or RUNNING, a retried submission returns the same run, and
// model calls are repeated only for the calls in flight at the kill.
func TestReplicasSurviveAKilledPeer(t *testing.T) {
	t.Parallel()
	dbURL := freshDatabase(t)
	binary := buildBinary(t)
	fake := fakeopenai.New(t)
	for range chaosRuns + 64 {
		fake.Enqueue(fakeopenai.Text("done").WithDelay(40 * time.Millisecond))
	}
	// Redis carries live events and cancels between the replicas; it has a
	// database of its own here, emptied when the test ends.
	rdb := redis.NewClient(&redis.Options{Addr: testdb.RedisAddr(t), DB: chaosRedisDB})
	t.Cleanup(func() { _ = rdb.FlushDB(context.Background()).Err(); _ = rdb.Close() })
	config := filepath.Join(t.TempDir(), "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`name: Chaos
db: %s
redis: redis://%s/%d
queue: {max_attempts: 2, lock_grace_seconds: 3, max_concurrency: 8}
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - {id: assistant, model: fake}
`, dbURL, testdb.RedisAddr(t), chaosRedisDB, fake.URL)), 0o600))

	a := startReplica(t, binary, config, "replica-a")
	b := startReplica(t, binary, config, "replica-b")

	submit := func(p *process, i int) (string, int) {
		form := url.Values{"message": {fmt.Sprintf("job %d", i)}, "stream": {"false"}, "background": {"true"}, "session_id": {fmt.Sprintf("s%d", i%20)}}
		req, err := http.NewRequest(http.MethodPost, p.url+"/agents/assistant/runs", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("job-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", 0 // the replica is gone
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		id, _ := body["run_id"].(string)
		return id, resp.StatusCode
	}

	var mu sync.Mutex
	accepted := map[int]string{}
	var wg sync.WaitGroup
	killed := make(chan struct{})
	for worker := range 4 {
		wg.Go(func() {
			for i := worker; i < chaosRuns; i += 4 {
				target := a
				if i%2 == 1 {
					target = b
				}
				select {
				case <-killed:
					target = b
				default:
				}
				id, status := submit(target, i)
				if status == 0 {
					id, status = submit(b, i) // A died under us: retry on B with the same key
				}
				// 200 runs never exceed the default max_queue_depth (1000):
				// every submission is accepted.
				require.Equal(t, http.StatusAccepted, status, "job %d", i)
				if status == http.StatusAccepted {
					mu.Lock()
					accepted[i] = id
					mu.Unlock()
				}
			}
		})
	}
	// Kill A once it is executing runs.
	require.Eventually(t, func() bool { return len(fake.Requests()) >= 30 }, 60*time.Second, 10*time.Millisecond)
	a.kill(t)
	close(killed)
	wg.Wait()
	require.NotEmpty(t, accepted)

	// A retried submission names the same run.
	for i, id := range accepted {
		again, status := submit(b, i)
		require.Equal(t, http.StatusAccepted, status)
		require.Equal(t, id, again, "Idempotency-Key job-%d", i)
		break
	}

	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var open int
	settled := poll(120*time.Second, 200*time.Millisecond, func() bool {
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM ai.agno_runs WHERE status IN ('PENDING', 'RUNNING')`).Scan(&open))
		return open == 0
	})
	require.True(t, settled, "%d runs still PENDING or RUNNING:\n%s", open, b.log)
	for i, id := range accepted {
		var status string
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT status FROM ai.agno_runs WHERE run_id = $1`, id).Scan(&status), "run %d", i)
		require.Equal(t, "COMPLETED", status, "run %d (%s)", i, id)
	}
	// Each run calls the model once; only calls in flight at the kill (at
	// most A's max_concurrency) are made again.
	require.LessOrEqual(t, len(fake.Requests()), len(accepted)+8)
	require.GreaterOrEqual(t, len(fake.Requests()), len(accepted))
}
