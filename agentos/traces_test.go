package agentos_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

// seedTraces writes two traces to the server's store: a failed agent run
// with a model call under it, and a slow workflow run.
func seedTraces(t *testing.T, s *server) {
	t.Helper()
	traces := s.store.(storage.TraceStore)
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	span := func(traceID, id, parent, name string, ms int, status string, attrs map[string]any) storage.Span {
		return storage.Span{SpanID: id, TraceID: traceID, ParentSpanID: parent, Name: name, SpanKind: "INTERNAL", StatusCode: status,
			StatusMessage: map[string]string{"ERROR": "boom"}[status], StartTime: start, EndTime: start.Add(time.Duration(ms) * time.Millisecond),
			DurationMS: int64(ms), Attributes: attrs}
	}
	require.NoError(t, traces.WriteTraces(t.Context(), []storage.TraceWrite{
		{NameLevel: storage.TraceLevelAgent, Trace: storage.Trace{TraceID: "aaaa", Name: "Assistant.run", Status: "ERROR", StartTime: start,
			EndTime: start.Add(50 * time.Millisecond), RunID: "r1", SessionID: "s1", AgentID: "assistant", CreatedAt: start},
			Spans: []storage.Span{
				span("aaaa", "a1", "", "Assistant.run", 50, "ERROR", map[string]any{"openinference.span.kind": "AGENT", "agno.agent.id": "assistant",
					"agno.run.id": "r1", "input.value": "hi"}),
				span("aaaa", "a2", "a1", "gpt.invoke", 20, "OK", map[string]any{"openinference.span.kind": "LLM", "llm.model_name": "gpt",
					"llm.token_count.prompt": 7, "llm.token_count.completion": 3}),
			}},
		{NameLevel: storage.TraceLevelWorkflow, Trace: storage.Trace{TraceID: "bbbb", Name: "pipeline.run", Status: "OK", StartTime: start.Add(time.Second),
			EndTime: start.Add(3 * time.Second), RunID: "r2", SessionID: "s2", WorkflowID: "pipeline", CreatedAt: start},
			Spans: []storage.Span{span("bbbb", "b1", "", "pipeline.run", 2000, "OK", map[string]any{"openinference.span.kind": "CHAIN",
				"agno.workflow.id": "pipeline", "output.value": ""})}},
	}))
}

func TestTraceRoutes(t *testing.T) {
	s := newServer(t, nil, nil)
	seedTraces(t, s)

	listed := decode[map[string]any](t, s.get(t, "/traces?status=ERROR"))
	data := listed["data"].([]any)
	require.Len(t, data, 1)
	first := data[0].(map[string]any)
	require.Equal(t, "aaaa", first["trace_id"])
	require.Equal(t, "50ms", first["duration"])
	require.EqualValues(t, 2, first["total_spans"])
	require.EqualValues(t, 1, first["error_count"])
	require.Equal(t, "hi", first["input"])
	require.Equal(t, http.StatusUnprocessableEntity, s.get(t, "/traces?status=BAD").StatusCode)
	require.Equal(t, http.StatusUnprocessableEntity, s.get(t, "/traces?start_time=yesterday").StatusCode)
	all := decode[map[string]any](t, s.get(t, "/traces?start_time=2026-12-02T11:00:00%2B01:00"))
	require.Len(t, all["data"], 2, "an offset is converted to UTC")

	detail := decode[map[string]any](t, s.get(t, "/traces/aaaa"))
	require.Equal(t, "boom", detail["error"])
	root := detail["tree"].([]any)[0].(map[string]any)
	require.Equal(t, "AGENT", root["type"])
	require.EqualValues(t, 7, root["metadata"].(map[string]any)["total_input_tokens"])
	child := root["spans"].([]any)[0].(map[string]any)
	require.Equal(t, "LLM", child["type"])
	require.Equal(t, map[string]any{"model": "gpt", "input_tokens": float64(7), "output_tokens": float64(3)}, child["metadata"])
	node := decode[map[string]any](t, s.get(t, "/traces/aaaa?span_id=a2"))
	require.Equal(t, "gpt.invoke", node["name"])
	require.Equal(t, http.StatusNotFound, s.get(t, "/traces/aaaa?span_id=zz").StatusCode)
	require.Equal(t, http.StatusNotFound, s.get(t, "/traces/cccc").StatusCode)
	require.Equal(t, "WORKFLOW", decode[map[string]any](t, s.get(t, "/traces/bbbb"))["tree"].([]any)[0].(map[string]any)["type"])

	schema := decode[map[string]any](t, s.get(t, "/traces/filter-schema"))
	require.Len(t, schema["fields"], 13)
	stats := decode[map[string]any](t, s.get(t, "/trace_session_stats"))
	require.Len(t, stats["data"], 2)

	search := func(body string) *http.Response {
		t.Helper()
		resp, err := http.Post(s.URL+"/traces/search", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		return resp
	}
	found := decode[map[string]any](t, search(`{"filter": {"op": "AND", "conditions": [{"op": "EQ", "key": "workflow_id", "value": "pipeline"},
		{"op": "GT", "key": "duration_ms", "value": 1000}]}}`))
	require.Len(t, found["data"], 1)
	hit := found["data"].([]any)[0].(map[string]any)
	require.Equal(t, "bbbb", hit["trace_id"])
	require.NotEmpty(t, hit["tree"], "a search by run answers trace details")
	none := decode[map[string]any](t, search(`{"filter": {"op": "NOT", "condition": {"op": "IN", "key": "trace_id", "values": ["aaaa", "bbbb"]}}}`))
	require.Empty(t, none["data"])
	sessions := decode[map[string]any](t, search(`{"group_by": "session"}`))
	require.Len(t, sessions["data"], 2)
	for body, want := range map[string]string{
		`{"filter": {"op": "LIKE", "key": "name", "value": "x"}}`:   "unknown op",
		`{"filter": {"op": "EQ", "key": "password", "value": "x"}}`: `unknown key "password"`,
		`{"filter": {"op": "IN", "key": "run_id"}}`:                 "needs values",
		`{"group_by": "day"}`:                                       "group_by",
		`{"limit": 500}`:                                            "limit",
	} {
		resp := search(body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		require.Contains(t, decode[map[string]any](t, resp)["detail"], want, body)
	}
}
