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
// executes on replica A — its draft step done, then a Parallel of three
// branches, two of which answered while the third's model call is in
// flight — when A is killed with SIGKILL. Replica B takes the run over and
// completes it: the draft and the two finished branches come from the
// journal (their agents are not called again), the third branch runs
// again as the same child run, and the publish step runs once.
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
      - name: fan
        parallel: [{name: a, agent: writer}, {name: b, agent: checker}, {name: c, agent: writer}]
      - {name: publish, agent: checker}
`, freshDatabase(t), fake.URL)), 0o600))

	// The branches ask the model in any order: the third request to
	// arrive stalls, whichever branch sent it.
	fake.Enqueue(
		fakeopenai.Text("the draft"),                         // 1: draft, on A
		fakeopenai.Text("first branch"),                      // 2: a branch, on A
		fakeopenai.Text("second branch"),                     // 3: another branch, on A
		fakeopenai.Text("lost with replica A").StallAfter(1), // 4: the last branch, killed with A
		fakeopenai.Text("third branch, on B"),                // 5: that branch again, on B
		fakeopenai.Text("published on B"),                    // 6: publish, on B
	)
	a := startReplica(t, binary, config, "replica-a")
	resp, err := http.PostForm(a.url+"/workflows/pipeline/runs", url.Values{"message": {"work"}, "stream": {"false"}, "background": {"true"}, "session_id": {"s1"}})
	require.NoError(t, err)
	var accepted map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%v", accepted)
	runID := accepted["run_id"].(string)
	require.True(t, poll(streamTimeout, 10*time.Millisecond, func() bool { return len(fake.Requests()) == 4 }), "the last branch's model call is in flight:\n%s", a.log)
	// The two branches that answered are recorded once their runs end.
	var inFlight string
	require.True(t, poll(streamTimeout, 20*time.Millisecond, func() bool {
		completed, running := 0, []string{}
		for _, r := range agentRuns(t, a.url, "s1", "writer", "checker") {
			switch r["status"] {
			case "COMPLETED":
				completed++
			case "RUNNING":
				running = append(running, r["run_id"].(string))
			}
		}
		if completed == 3 && len(running) == 1 {
			inFlight = running[0]
			return true
		}
		return false
	}), "the draft and two branches completed, one branch running:\n%s", a.log)
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
	require.Len(t, fake.Requests(), 6, "no completed step ran twice: only the branch in flight ran again")
	steps := out["step_results"].([]any)
	require.Len(t, steps, 3)
	require.Equal(t, "the draft", steps[0].(map[string]any)["content"])
	branches := steps[1].(map[string]any)["steps"].([]any)
	require.Len(t, branches, 3)
	contents := map[string]string{}
	for i, raw := range branches {
		branch := raw.(map[string]any)
		require.Equal(t, []string{"a", "b", "c"}[i], branch["step_name"], "branches in declaration order")
		contents[branch["content"].(string)] = branch["step_run_id"].(string)
	}
	require.Contains(t, contents, "first branch")
	require.Contains(t, contents, "second branch")
	require.Equal(t, inFlight, contents["third branch, on B"], "the branch in flight ran again as the same child run")

	rerun := getJSON(t, b.url+"/sessions/s1/runs/"+inFlight)
	require.Equal(t, "COMPLETED", rerun["status"])
	require.Equal(t, runID, rerun["parent_run_id"])
}

// agentRuns lists the runs of agents in a session (a workflow's session
// lists its steps' runs only once the workflow's run is over).
func agentRuns(t testing.TB, base, sessionID string, agents ...string) []map[string]any {
	t.Helper()
	var all []map[string]any
	for _, agent := range agents {
		resp, err := http.Get(base + "/agents/" + agent + "/runs?session_id=" + url.QueryEscape(sessionID))
		require.NoError(t, err)
		var runs []map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&runs))
		resp.Body.Close()
		all = append(all, runs...)
	}
	return all
}
