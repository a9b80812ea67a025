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

// TestTeamRunSurvivesAKilledReplica: a background team run executes on
// replica A — its leader delegated to the writer, which answered, then to
// the checker, whose model call is in flight — when A is killed with
// SIGKILL. Replica B takes the run over and completes it: the completed
// delegation is replayed from the journal (the writer's model is not
// called again), the checker runs again as the same member run, and the
// team's answer reads both members.
func TestTeamRunSurvivesAKilledReplica(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	fake := fakeopenai.New(t)
	config := filepath.Join(t.TempDir(), "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`name: Team replicas
db: %s
queue: {max_attempts: 2, lock_grace_seconds: 5, max_concurrency: 4}
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - {id: writer, model: fake, instructions: Write.}
  - {id: checker, model: fake, instructions: Check.}
teams:
  - id: crew
    model: fake
    members: [writer, checker]
    instructions: Delegate, then summarise.
`, freshDatabase(t), fake.URL)), 0o600))

	delegate := func(member, task string) fakeopenai.Reply {
		return fakeopenai.ToolCalls(fakeopenai.Call("delegate_task_to_member", map[string]string{"member_id": member, "task": task}))
	}
	fake.Enqueue(
		delegate("writer", "write a draft"),                     // 1: A's leader
		fakeopenai.Text("the draft"),                            // 2: the writer, on A
		delegate("checker", "check the draft"),                  // 3: A's leader
		fakeopenai.Text("lost with replica A").StallAfter(1),    // 4: the checker, killed with A
		fakeopenai.Text("checked on B"),                         // 5: the checker again, on B
		fakeopenai.Text("crew answer: the draft, checked on B"), // 6: B's leader
	)
	a := startReplica(t, binary, config, "replica-a")
	resp, err := http.PostForm(a.url+"/teams/crew/runs", url.Values{"message": {"work"}, "stream": {"false"}, "background": {"true"}, "session_id": {"s1"}})
	require.NoError(t, err)
	var accepted map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%v", accepted)
	runID := accepted["run_id"].(string)
	require.True(t, poll(streamTimeout, 10*time.Millisecond, func() bool { return len(fake.Requests()) == 4 }), "the checker's model call is in flight:\n%s", a.log)
	checkerRun := memberRunOf(t, a.url, "s1", "checker")
	b := startReplica(t, binary, config, "replica-b")
	a.kill(t)

	var out map[string]any
	require.True(t, poll(60*time.Second, 50*time.Millisecond, func() bool {
		out = getJSON(t, b.url+"/teams/crew/runs/"+runID+"?session_id=s1")
		return out["status"] == "COMPLETED" || out["status"] == "ERROR"
	}), "the team run is still %v:\n%s", out["status"], b.log)
	require.Equal(t, "COMPLETED", out["status"], "%v\nB's log:\n%s", out, b.log)
	require.Equal(t, "crew answer: the draft, checked on B", out["content"])
	require.Equal(t, "crew", out["team_id"])
	require.Len(t, fake.Requests(), 6, "no completed step ran twice: the writer answered once")

	runs := sessionRuns(t, b.url, "s1")
	byAgent := map[string][]map[string]any{}
	for _, r := range runs {
		if id, _ := r["agent_id"].(string); id != "" {
			byAgent[id] = append(byAgent[id], r)
		}
	}
	require.Len(t, byAgent["writer"], 1, "the completed delegation was not repeated")
	require.Len(t, byAgent["checker"], 1, "the delegation in flight ran again as the same member run")
	require.Equal(t, checkerRun, byAgent["checker"][0]["run_id"])
	for _, member := range []string{"writer", "checker"} {
		require.Equal(t, "COMPLETED", byAgent[member][0]["status"], member)
		require.Equal(t, runID, byAgent[member][0]["parent_run_id"], member)
	}
}

// getJSON reads a JSON object.
func getJSON(t testing.TB, target string) map[string]any {
	t.Helper()
	resp, err := http.Get(target)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", out)
	return out
}

// sessionRuns lists a team session's runs, members' included.
func sessionRuns(t testing.TB, base, sessionID string) []map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/sessions/" + sessionID + "/runs?type=team")
	require.NoError(t, err)
	defer resp.Body.Close()
	var runs []map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&runs))
	return runs
}

// memberRunOf waits for the member's run in the session and returns its id
// (the session's own listing leaves out the member runs of a team run in
// flight; the member's listing has them).
func memberRunOf(t testing.TB, base, sessionID, member string) string {
	t.Helper()
	var runID string
	require.True(t, poll(streamTimeout, 20*time.Millisecond, func() bool {
		resp, err := http.Get(base + "/agents/" + member + "/runs?session_id=" + url.QueryEscape(sessionID))
		require.NoError(t, err)
		defer resp.Body.Close()
		var runs []map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&runs))
		for _, r := range runs {
			runID, _ = r["run_id"].(string)
		}
		return runID != ""
	}), "no run of %s in %s", member, sessionID)
	return runID
}
