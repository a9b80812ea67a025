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

// TestATakenOverRunIsOneTrace: a background run with a tool call executes
// on replica A — its first model call and its tool call done and their
// spans exported, its second model call in flight — when A is killed with
// SIGKILL. Replica B takes the run over and completes it. The run's trace
// holds the spans of both executions: A's model and tool calls (B replays
// them from the journal and makes neither again), and B's run and model
// call, under the trace the run started in.
func TestATakenOverRunIsOneTrace(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	fake := fakeopenai.New(t)
	config := filepath.Join(t.TempDir(), "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`name: Traced replicas
db: %s
tracing: {enabled: true}
queue: {max_attempts: 2, lock_grace_seconds: 5}
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - {id: calc, name: Calculator, model: fake, tools: [calculator]}
`, freshDatabase(t), fake.URL)), 0o600))
	fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("add", `{"a":2,"b":3}`)), // 1: on A, then the tool runs on A
		fakeopenai.Text("lost with replica A").StallAfter(1),          // 2: in flight when A is killed
		fakeopenai.Text("5, on B"),                                    // 3: the same call again, on B
	)
	a := startReplica(t, binary, config, "replica-a")
	resp, err := http.PostForm(a.url+"/agents/calc/runs", url.Values{"message": {"2 + 3"}, "stream": {"false"}, "background": {"true"}, "session_id": {"s1"}})
	require.NoError(t, err)
	var accepted map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%v", accepted)
	runID := accepted["run_id"].(string)

	// A's finished spans reach the database as they end.
	var traceID string
	var first map[string]any
	require.True(t, poll(streamTimeout, 20*time.Millisecond, func() bool {
		if len(fake.Requests()) < 2 {
			return false
		}
		out := getJSON(t, a.url+"/agents/calc/runs/"+runID+"?session_id=s1")
		traceID, _ = out["trace_id"].(string)
		if traceID == "" {
			return false
		}
		first = tryJSON(a.url + "/traces/" + traceID)
		names := spanTypes(first)
		return names["LLM"] == 1 && names["TOOL"] == 1
	}), "A's model and tool spans are exported while its second model call is in flight:\n%v\n%s", first, a.log)
	b := startReplica(t, binary, config, "replica-b")
	a.kill(t)

	var out map[string]any
	require.True(t, poll(60*time.Second, 50*time.Millisecond, func() bool {
		out = getJSON(t, b.url+"/agents/calc/runs/"+runID+"?session_id=s1")
		return out["status"] == "COMPLETED" || out["status"] == "ERROR"
	}), "the run is still %v:\n%s", out["status"], b.log)
	require.Equal(t, "COMPLETED", out["status"], "%v\nB's log:\n%s", out, b.log)
	require.Equal(t, "5, on B", out["content"])
	require.Equal(t, traceID, out["trace_id"], "the run keeps its trace")
	require.Len(t, fake.Requests(), 3)

	var detail map[string]any
	require.True(t, poll(streamTimeout, 20*time.Millisecond, func() bool {
		detail = tryJSON(b.url + "/traces/" + traceID)
		return spanTypes(detail)["LLM"] == 2
	}), "B's model call joins the trace: %v", detail)
	types := spanTypes(detail)
	require.Equal(t, 1, types["TOOL"], "the tool ran once, on A: B replayed it from the journal")
	require.Equal(t, 1, types["AGENT"], "B's run span (A's never ended: A was killed)")
	var runNode map[string]any
	for _, n := range detail["tree"].([]any) {
		if node := n.(map[string]any); node["type"] == "AGENT" {
			runNode = node
		}
	}
	require.NotNil(t, runNode, "B's run span is a root of the tree: its parent, A's run span, never ended")
	require.Equal(t, "Calculator.run", runNode["name"])
	require.Equal(t, "OK", runNode["status"])
	require.Contains(t, fmt.Sprint(runNode["spans"]), "gpt-test.invoke", "B's model call is under B's run span")
	listed := getJSON(t, b.url+"/traces?run_id="+runID)
	require.EqualValues(t, 1, listed["meta"].(map[string]any)["total_count"], "one trace for the run")
}

// tryJSON reads a JSON object answered 200, else nil (a trace whose spans
// are not exported yet is 404).
func tryJSON(target string) map[string]any {
	resp, err := http.Get(target)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return nil
	}
	return out
}

// spanTypes counts a trace detail's spans by type.
func spanTypes(detail map[string]any) map[string]int {
	counts := map[string]int{}
	var walk func(nodes []any)
	walk = func(nodes []any) {
		for _, n := range nodes {
			node := n.(map[string]any)
			counts[node["type"].(string)]++
			if children, ok := node["spans"].([]any); ok {
				walk(children)
			}
		}
	}
	if tree, ok := detail["tree"].([]any); ok {
		walk(tree)
	}
	return counts
}
