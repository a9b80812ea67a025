package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// TestKilledServerRunsResumeOrFailVisibly: a background run is in flight
// (its model call stalled) when the server is killed with SIGKILL. Started
// again on the same database, the server finishes the run (max_attempts: 2)
// or stores it as ERROR with the requeue hint (max_attempts: 1). No run is
// left PENDING or RUNNING.
func TestKilledServerRunsResumeOrFailVisibly(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL")
	}
	t.Parallel()
	binary := buildBinary(t)
	for _, attempts := range []int{1, 2} {
		t.Run(map[int]string{1: "at most once", 2: "continues"}[attempts], func(t *testing.T) {
			t.Parallel()
			b := setupRun(t, assistantAgent)
			config, err := os.ReadFile(b.config)
			require.NoError(t, err)
			config = append(config, []byte("queue: {max_attempts: "+map[int]string{1: "1", 2: "2"}[attempts]+"}\n")...)
			require.NoError(t, os.WriteFile(b.config, config, 0o600))

			b.fake.Enqueue(fakeopenai.Text("this reply never ends").StallAfter(1))
			first := startBinary(t, binary, b.config)
			resp, err := http.PostForm(first.url+"/agents/assistant/runs", url.Values{"message": {"work"}, "stream": {"false"}, "background": {"true"}, "session_id": {"s1"}})
			require.NoError(t, err)
			var accepted map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
			resp.Body.Close()
			require.Equal(t, http.StatusAccepted, resp.StatusCode)
			runID := accepted["run_id"].(string)
			require.Eventually(t, func() bool { return len(b.fake.Requests()) == 1 }, 20*time.Second, 10*time.Millisecond, "the model call is in flight")
			first.kill(t)

			b.fake.Enqueue(fakeopenai.Text("finished after the restart"))
			second := startBinary(t, binary, b.config)
			var out map[string]any
			require.Eventually(t, func() bool {
				resp, err := http.Get(second.url + "/agents/assistant/runs/" + runID + "?session_id=s1")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				out = nil
				if json.NewDecoder(resp.Body).Decode(&out) != nil {
					return false
				}
				return out["status"] == "COMPLETED" || out["status"] == "ERROR"
			}, 30*time.Second, 50*time.Millisecond, "the run reaches a terminal state after the restart:\n%s", second.log)
			if attempts == 1 {
				require.Equal(t, "ERROR", out["status"])
				require.Contains(t, out["content"], "/queue/jobs/"+runID+"/requeue")
				require.Len(t, b.fake.Requests(), 1, "at most once: the run is not started again")
			} else {
				require.Equal(t, "COMPLETED", out["status"], "%v", out)
				require.Equal(t, "finished after the restart", out["content"])
			}
			second.kill(t)

			store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(b.dir, "agnogo.db")})
			require.NoError(t, err)
			defer store.Close()
			runs, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s1"})
			require.NoError(t, err)
			for _, rec := range runs {
				require.True(t, rec.Run.Status.Terminal(), "run %s left %s", rec.Run.RunID, rec.Run.Status)
			}
		})
	}
}
