package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// otlpReceiver is an OTLP/HTTP collector: it decodes the protobuf
// requests posted to /v1/traces and keeps their spans' names by trace id.
type otlpReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	traces map[string][]string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{traces: map[string][]string{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
			return
		}
		if req.Header.Get("X-Collector-Key") != "k1" {
			http.Error(w, "the configured header is missing", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var export collector.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &export); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, span := range ss.GetSpans() {
					id := fmt.Sprintf("%x", span.GetTraceId())
					r.traces[id] = append(r.traces[id], span.GetName())
				}
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) spans(traceID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.traces[traceID]...)
}

// TestTracesOfAnAgentATeamAndAWorkflow: with tracing on, an agent run with
// a tool call, a team run and a workflow run each make one trace, listed
// by /traces with Agno's fields; each trace's tree holds the run span with
// its model and tool spans, carrying the OpenInference attributes; an OTLP
// collector receives the same spans; /metrics/prometheus counts the runs.
func TestTracesOfAnAgentATeamAndAWorkflow(t *testing.T) {
	fake := fakeopenai.New(t)
	receiver := newOTLPReceiver(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`name: Traced
db: sqlite://%s
tracing: {enabled: true, otlp_endpoint: %q, headers: {X-Collector-Key: k1}}
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - id: calc
    name: Calculator
    model: fake
    tools: [calculator]
teams:
  - id: crew
    model: fake
    members: [calc]
workflows:
  - id: pipeline
    steps: [{name: draft, agent: calc}]
`, filepath.Join(dir, "agnogo.db"), receiver.URL, fake.URL)), 0o600))
	s := startServe(t, "--config", config)

	post := func(path string) map[string]any {
		t.Helper()
		resp, err := http.PostForm(s.url+path, url.Values{"message": {"go"}, "stream": {"false"}})
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%v", out)
		require.Equal(t, "COMPLETED", out["status"], "%v", out)
		return out
	}
	fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("add", `{"a":2,"b":3}`)), fakeopenai.Text("5"))
	agentRun := post("/agents/calc/runs")
	fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("delegate_task_to_member", `{"member_id":"calc","task":"say hi"}`)),
		fakeopenai.Text("hi"), fakeopenai.Text("the crew says hi"))
	teamRun := post("/teams/crew/runs")
	fake.Enqueue(fakeopenai.Text("drafted"))
	workflowRun := post("/workflows/pipeline/runs")

	traceIDs := []string{agentRun["trace_id"].(string), teamRun["trace_id"].(string), workflowRun["trace_id"].(string)}
	for _, id := range traceIDs {
		require.Len(t, id, 32, "every run names its trace")
	}
	var listed struct {
		Data []map[string]any `json:"data"`
		Meta map[string]any   `json:"meta"`
	}
	require.True(t, poll(30*time.Second, 20*time.Millisecond, func() bool {
		resp, body := s.get(t, "/traces")
		// Decoded afresh: json.Unmarshal into the last listing would keep
		// the keys an entry at the same position had, and a trace listed
		// without agent_id would show the agent_id of the one before it.
		listed.Data, listed.Meta = nil, nil
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &listed) != nil {
			return false
		}
		if len(listed.Data) != 3 {
			return false
		}
		// A trace is listed once any of its spans is exported; its runner
		// is named once the run's own span is, which ends last.
		named := map[string]bool{}
		for _, tr := range listed.Data {
			for _, key := range []string{"agent_id", "team_id", "workflow_id"} {
				if tr[key] != nil && tr["name"] != nil && strings.HasSuffix(tr["name"].(string), ".run") {
					named[tr["trace_id"].(string)+key] = true
				}
			}
		}
		return named[traceIDs[0]+"agent_id"] && named[traceIDs[1]+"team_id"] && named[traceIDs[2]+"workflow_id"]
	}), "three traces listed, each named by its run: %+v", listed)
	require.EqualValues(t, 3, listed.Meta["total_count"])
	byID := map[string]map[string]any{}
	for _, tr := range listed.Data {
		byID[tr["trace_id"].(string)] = tr
		for _, key := range []string{"trace_id", "name", "status", "duration", "start_time", "end_time", "total_spans", "error_count", "created_at"} {
			require.Contains(t, tr, key)
		}
		require.Equal(t, "OK", tr["status"])
	}
	require.Equal(t, "Calculator.run", byID[traceIDs[0]]["name"])
	require.Equal(t, "calc", byID[traceIDs[0]]["agent_id"])
	require.Equal(t, agentRun["run_id"], byID[traceIDs[0]]["run_id"])
	require.Equal(t, "go", byID[traceIDs[0]]["input"])
	require.Equal(t, "crew", byID[traceIDs[1]]["team_id"])
	require.Equal(t, teamRun["run_id"], byID[traceIDs[1]]["run_id"], "the team's run, not its member's, names the trace")
	require.NotContains(t, byID[traceIDs[1]], "agent_id")
	require.Equal(t, "pipeline", byID[traceIDs[2]]["workflow_id"])

	tree := func(id string) map[string]any {
		t.Helper()
		resp, body := s.get(t, "/traces/"+id)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		var detail map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &detail))
		return detail
	}
	agentTrace := tree(traceIDs[0])
	roots := agentTrace["tree"].([]any)
	require.Len(t, roots, 1)
	root := roots[0].(map[string]any)
	require.Equal(t, "AGENT", root["type"])
	require.Equal(t, "5", agentTrace["output"])
	kinds := map[string]map[string]any{}
	for _, child := range root["spans"].([]any) {
		node := child.(map[string]any)
		kinds[node["type"].(string)] = node
	}
	require.Contains(t, kinds, "LLM")
	require.Contains(t, kinds, "TOOL")
	require.Equal(t, "gpt-test", kinds["LLM"]["metadata"].(map[string]any)["model"])
	require.Positive(t, kinds["LLM"]["metadata"].(map[string]any)["input_tokens"])
	require.Equal(t, "add", kinds["TOOL"]["metadata"].(map[string]any)["tool_name"])
	require.Equal(t, `{"operation":"add","result":5}`, kinds["TOOL"]["output"])

	// The team's trace holds the member's run under the delegation.
	teamTrace := tree(traceIDs[1])
	teamRoot := teamTrace["tree"].([]any)[0].(map[string]any)
	require.Equal(t, "TEAM", teamRoot["type"])
	require.Contains(t, fmt.Sprint(teamRoot), "delegate_task_to_member")
	require.Contains(t, fmt.Sprint(teamRoot), "Calculator.run", "the member's run is a span of the team's trace")
	workflowTrace := tree(traceIDs[2])
	workflowRoot := workflowTrace["tree"].([]any)[0].(map[string]any)
	require.Equal(t, "WORKFLOW", workflowRoot["type"])
	require.Equal(t, "drafted", workflowTrace["output"])

	resp, body := s.get(t, "/traces/0123456789abcdef0123456789abcdef")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, body)

	// The collector got the same spans.
	for _, id := range traceIDs {
		require.True(t, poll(30*time.Second, 20*time.Millisecond, func() bool { return len(receiver.spans(id)) > 0 }), "OTLP got trace %s", id)
	}
	require.ElementsMatch(t, spanNames(agentTrace), receiver.spans(traceIDs[0]))

	// Prometheus counts the runs (the member's included).
	resp, body = s.get(t, "/metrics/prometheus")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	finished := map[string]float64{}
	for _, m := range families["agnogo_runs_finished_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		require.Equal(t, "COMPLETED", labels["status"])
		finished[labels["kind"]+"/"+labels["runner"]] += m.GetCounter().GetValue()
	}
	require.Equal(t, map[string]float64{"agent/calc": 3, "team/crew": 1, "workflow/pipeline": 1}, finished,
		"the agent ran alone, for the team and for the workflow's step")
	var toolCalls float64
	for _, m := range families["agnogo_tool_calls_total"].GetMetric() {
		toolCalls += m.GetCounter().GetValue()
	}
	require.EqualValues(t, 2, toolCalls, "add and delegate_task_to_member")
	for _, name := range []string{"agnogo_db_connections_open", "agnogo_db_connections_max", "agnogo_queue_depth", "agnogo_queue_executing",
		"agnogo_sse_clients", "agnogo_model_tokens_total", "agnogo_model_call_duration_seconds", "go_goroutines"} {
		require.Contains(t, families, name)
	}
	var writerMax float64
	for _, m := range families["agnogo_db_connections_max"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "writer" {
			writerMax = m.GetGauge().GetValue()
		}
	}
	require.EqualValues(t, 1, writerMax, "SQLite's writer pool holds one connection")
	require.EqualValues(t, 0, families["agnogo_queue_depth"].GetMetric()[0].GetGauge().GetValue(), "no background run waits")
	require.Contains(t, s.log.String(), `msg="run finished" run_id=`+agentRun["run_id"].(string), "each run has its log line")
}

// spanNames lists the names of a trace detail's spans.
func spanNames(detail map[string]any) []string {
	var names []string
	var walk func(nodes []any)
	walk = func(nodes []any) {
		for _, n := range nodes {
			node := n.(map[string]any)
			names = append(names, node["name"].(string))
			if children, ok := node["spans"].([]any); ok {
				walk(children)
			}
		}
	}
	walk(detail["tree"].([]any))
	return names
}

// TestTracesAreScopedToTheirUser: under user isolation a user's /traces
// never show another user's traces, nor can they be read by id.
func TestTracesAreScopedToTheirUser(t *testing.T) {
	fake := fakeopenai.New(t)
	public, token := jwtKeys(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "agnogo.yaml")
	indented := "        " + strings.ReplaceAll(strings.TrimSpace(public), "\n", "\n        ")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`db: sqlite://%s
tracing: {enabled: true}
auth:
  user_isolation: true
  jwt:
    authorization: true
    verification_keys:
      - |
%s
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - {id: a, model: fake}
`, filepath.Join(dir, "agnogo.db"), indented, fake.URL)), 0o600))
	s := startServe(t, "--config", config)
	scopes := []string{"agents:run", "traces:read"}
	call := func(method, path, user string, form url.Values) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token(user, scopes...))
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	fake.Enqueue(fakeopenai.Text("for alice"))
	code, body := call(http.MethodPost, "/agents/a/runs", "alice", url.Values{"message": {"hi"}, "stream": {"false"}})
	require.Equal(t, http.StatusOK, code, body)
	var ran map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &ran))
	traceID := ran["trace_id"].(string)
	require.True(t, poll(30*time.Second, 20*time.Millisecond, func() bool {
		code, body := call(http.MethodGet, "/traces", "alice", nil)
		return code == http.StatusOK && strings.Contains(body, traceID)
	}), "alice sees her trace")
	code, body = call(http.MethodGet, "/traces", "bob", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, traceID)
	code, body = call(http.MethodGet, "/traces?user_id=alice", "bob", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, traceID, "naming alice does not make her traces bob's")
	code, _ = call(http.MethodGet, "/traces/"+traceID, "bob", nil)
	require.Equal(t, http.StatusNotFound, code)
	code, body = call(http.MethodPost, "/traces/search", "bob", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, traceID, "a search is scoped to its caller too")
	code, body = call(http.MethodPost, "/traces/search", "alice", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, traceID, "the same search finds alice her own trace")
	code, body = call(http.MethodGet, "/trace_session_stats", "bob", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, ran["session_id"].(string))
	code, body = call(http.MethodGet, "/trace_session_stats", "alice", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, ran["session_id"].(string), "alice's session is counted for her")
	code, body = call(http.MethodGet, "/traces/"+traceID, "alice", nil)
	require.Equal(t, http.StatusOK, code, body)
}
