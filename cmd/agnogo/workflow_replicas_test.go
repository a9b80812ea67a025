package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// TestWorkflowRunSurvivesAKilledReplica: a background workflow run
// executes on replica A — its draft step done, its check step's model
// call in flight — when A is killed with SIGKILL. Replica B takes the run
// over and completes it: the draft step's output comes from the journal
// (the writer is not called again), the check step runs again as the same
// child run, and the publish step runs once.
func TestWorkflowRunSurvivesAKilledReplica(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	fake := fakeopenai.New(t)
	config := filepath.Join(t.TempDir(), "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`name: Workflow replicas
db: %s
queue: {max_attempts: 2, lock_grace_seconds: 5, max_concurrency: 4}
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - {id: writer, model: fake, instructions: Write.}
  - {id: checker, model: fake, instructions: Check.}
workflows:
  - id: pipeline
    steps:
      - {name: draft, agent: writer}
      - {name: check, agent: checker}
      - {name: publish, agent: writer}
`, freshDatabase(t), fake.URL)), 0o600))

	fake.Enqueue(
		fakeopenai.Text("the draft"),                         // 1: draft, on A
		fakeopenai.Text("lost with replica A").StallAfter(1), // 2: check, killed with A
		fakeopenai.Text("checked on B"),                      // 3: check again, on B
		fakeopenai.Text("published on B"),                    // 4: publish, on B
	)
	a := startReplica(t, binary, config, "replica-a")
	resp, err := http.PostForm(a.url+"/workflows/pipeline/runs", url.Values{"message": {"work"}, "stream": {"false"}, "background": {"true"}, "session_id": {"s1"}})
	require.NoError(t, err)
	var accepted map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%v", accepted)
	runID := accepted["run_id"].(string)
	require.True(t, poll(streamTimeout, 10*time.Millisecond, func() bool { return len(fake.Requests()) == 2 }), "the check step's model call is in flight:\n%s", a.log)
	checkRun := memberRunOf(t, a.url, "s1", "checker")
	b := startReplica(t, binary, config, "replica-b")
	a.kill(t)

	var out map[string]any
	require.True(t, poll(60*time.Second, 50*time.Millisecond, func() bool {
		out = getJSON(t, b.url+"/workflows/pipeline/runs/"+runID+"?session_id=s1")
		return out["status"] == "COMPLETED" || out["status"] == "ERROR"
	}), "the workflow run is still %v:\n%s", out["status"], b.log)
	require.Equal(t, "COMPLETED", out["status"], "%v\nB's log:\n%s", out, b.log)
	require.Equal(t, "published on B", out["content"])
	require.Equal(t, "pipeline", out["workflow_id"])
	require.Len(t, fake.Requests(), 4, "no completed step ran twice: the writer drafted once")
	steps := out["step_results"].([]any)
	require.Len(t, steps, 3)
	require.Equal(t, "the draft", steps[0].(map[string]any)["content"])
	require.Equal(t, "checked on B", steps[1].(map[string]any)["content"])
	require.Equal(t, checkRun, steps[1].(map[string]any)["step_run_id"], "the step in flight ran again as the same child run")

	check := getJSON(t, b.url+"/agents/checker/runs/"+checkRun+"?session_id=s1")
	require.Equal(t, "COMPLETED", check["status"])
	require.Equal(t, runID, check["parent_run_id"])
}
