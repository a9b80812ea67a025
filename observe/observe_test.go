package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// recorder is a trace store that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	writes []storage.TraceWrite
	block  chan struct{} // when set, writes wait for it
}

func (r *recorder) WriteTraces(_ context.Context, writes []storage.TraceWrite) error {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, writes...)
	return nil
}

func (r *recorder) spans() []storage.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var spans []storage.Span
	for _, w := range r.writes {
		spans = append(spans, w.Spans...)
	}
	return spans
}

func (r *recorder) ListTraces(context.Context, storage.TraceFilter) ([]storage.Trace, int, error) {
	return nil, 0, nil
}
func (r *recorder) GetTrace(context.Context, string) (*storage.Trace, []storage.Span, error) {
	return nil, nil, storage.ErrNotFound
}
func (r *recorder) TraceSessionStats(context.Context, storage.TraceFilter) ([]storage.TraceSessionStats, int, error) {
	return nil, 0, nil
}
func (r *recorder) DeleteTracesBefore(context.Context, time.Time) (int64, error) { return 0, nil }

func newObserver(t *testing.T, store storage.TraceStore, metrics *observe.Metrics, log *slog.Logger) *observe.Observer {
	t.Helper()
	o, err := observe.New(t.Context(), observe.Config{Tracing: &observe.TracingConfig{Store: store, FlushInterval: time.Hour}, Metrics: metrics, RunLog: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	return o
}

// runWithCalls observes a run with one model call and one tool call.
func runWithCalls(ctx context.Context, out *run.Output, runErr error) {
	ctx, span := observe.StartRun(ctx, out)
	modelCtx, model := observe.StartModel(ctx, "OpenAI", "gpt-test", "hi")
	_ = modelCtx
	cost := 0.25
	model.EndModel("calling a tool", &run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, Cost: &cost}, nil)
	_, tool := observe.StartTool(ctx, "get_weather", `{"city":"Paris"}`)
	tool.EndTool("sunny", false)
	out.Content = "It is sunny."
	out.Status = run.StatusCompleted
	if runErr != nil {
		out.Status = run.StatusError
	}
	out.Metrics = &run.RunMetrics{Metrics: run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, Cost: &cost}}
	span.EndRun(ctx, out, runErr, "")
}

func TestRunSpansCarryOpenInferenceAttributes(t *testing.T) {
	store := &recorder{}
	o := newObserver(t, store, nil, nil)
	out := &run.Output{RunID: "r1", AgentID: "assistant", AgentName: "My Assistant", SessionID: "s1", UserID: "ada",
		Input: &run.Input{InputContent: "weather?"}}
	runWithCalls(observe.With(t.Context(), o), out, nil)
	require.NoError(t, o.ForceFlush(t.Context()))

	require.Len(t, out.TraceID, 32)
	require.Contains(t, out.Metadata[observe.TraceparentKey], out.TraceID, "the run keeps its traceparent for a later execution")
	spans := store.spans()
	require.Len(t, spans, 3)
	byName := map[string]storage.Span{}
	for _, s := range spans {
		byName[s.Name] = s
		require.Equal(t, out.TraceID, s.TraceID)
	}
	root := byName["My_Assistant.run"]
	require.Empty(t, root.ParentSpanID)
	require.Equal(t, "AGENT", root.Attributes["openinference.span.kind"])
	require.Equal(t, "weather?", root.Attributes["input.value"])
	require.Equal(t, "It is sunny.", root.Attributes["output.value"])
	require.Equal(t, "assistant", root.Attributes["agno.agent.id"])
	require.Equal(t, "r1", root.Attributes["agno.run.id"])
	require.Equal(t, "s1", root.Attributes["session.id"])
	require.Equal(t, "ada", root.Attributes["user.id"])
	require.Equal(t, "OK", root.StatusCode)

	llm := byName["gpt-test.invoke"]
	require.Equal(t, root.SpanID, llm.ParentSpanID)
	require.Equal(t, "LLM", llm.Attributes["openinference.span.kind"])
	require.Equal(t, "gpt-test", llm.Attributes["llm.model_name"])
	require.EqualValues(t, 10, llm.Attributes["llm.token_count.prompt"])
	require.EqualValues(t, 5, llm.Attributes["llm.token_count.completion"])
	require.EqualValues(t, 15, llm.Attributes["llm.token_count.total"])
	require.InDelta(t, 0.25, llm.Attributes["llm.cost"], 1e-9)
	require.Equal(t, "CLIENT", llm.SpanKind)

	tool := byName["get_weather"]
	require.Equal(t, root.SpanID, tool.ParentSpanID)
	require.Equal(t, "TOOL", tool.Attributes["openinference.span.kind"])
	require.Equal(t, `{"city":"Paris"}`, tool.Attributes["tool.parameters"])
	require.Equal(t, "sunny", tool.Attributes["output.value"])

	var write storage.TraceWrite
	for _, w := range store.writes {
		if w.Trace.Name != "" {
			write = w
		}
	}
	require.Equal(t, "My_Assistant.run", write.Trace.Name)
	require.Equal(t, storage.TraceLevelAgent, write.NameLevel)
	require.Equal(t, "r1", write.Trace.RunID)
	require.Equal(t, "ada", write.Trace.UserID)
	require.Equal(t, "assistant", write.Trace.AgentID)
}

func TestAContinuedRunJoinsItsTrace(t *testing.T) {
	store := &recorder{}
	o := newObserver(t, store, nil, nil)
	ctx := observe.With(t.Context(), o)
	out := &run.Output{RunID: "r1", AgentID: "a", SessionID: "s1"}
	runWithCalls(ctx, out, nil)
	first := out.TraceID
	// A later execution (a continue, or another replica after a crash)
	// reads the stored run: its metadata carries the traceparent.
	again := &run.Output{RunID: "r1", AgentID: "a", SessionID: "s1", Metadata: out.Metadata}
	runWithCalls(ctx, again, errors.New("model exploded"))
	require.NoError(t, o.ForceFlush(t.Context()))
	require.Equal(t, first, again.TraceID, "one trace for every execution of a run")
	var roots []storage.Span
	for _, s := range store.spans() {
		require.Equal(t, first, s.TraceID)
		if s.Name == "Agent.run" || strings.HasSuffix(s.Name, ".run") {
			roots = append(roots, s)
		}
	}
	require.Len(t, roots, 2)
	require.Equal(t, roots[0].SpanID, roots[1].ParentSpanID, "the later execution's span is under the first's")
	require.Equal(t, "ERROR", roots[1].StatusCode)
	require.Equal(t, "model exploded", roots[1].StatusMessage)
}

func TestIncomingTraceparentIsTheParent(t *testing.T) {
	store := &recorder{}
	o := newObserver(t, store, nil, nil)
	header := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	ctx := o.ExtractTraceparent(observe.With(t.Context(), o), header)
	out := &run.Output{RunID: "r1", AgentID: "a"}
	runWithCalls(ctx, out, nil)
	require.Equal(t, "0af7651916cd43dd8448eb211c80319c", out.TraceID)

	// A model request made under the run carries its traceparent.
	var got string
	server := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.Header.Get("traceparent") }))
	defer server.Close()
	runCtx, span := observe.StartRun(observe.With(t.Context(), o), &run.Output{RunID: "r2", AgentID: "a"})
	modelCtx, model := observe.StartModel(runCtx, "OpenAI", "gpt-test", "")
	req, err := http.NewRequestWithContext(modelCtx, http.MethodPost, server.URL, nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: observe.Transport(nil)}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	model.EndModel("", nil, nil)
	span.EndRun(runCtx, &run.Output{RunID: "r2", AgentID: "a", Status: run.StatusCompleted}, nil, "")
	sc := trace.SpanContextFromContext(modelCtx)
	require.Equal(t, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01", got)
}

func TestAFullQueueDropsSpansAndCountsThem(t *testing.T) {
	store := &recorder{block: make(chan struct{})}
	metrics := observe.NewMetrics()
	o, err := observe.New(t.Context(), observe.Config{Tracing: &observe.TracingConfig{Store: store, QueueSize: 4, BatchSize: 1}, Metrics: metrics})
	require.NoError(t, err)
	ctx := observe.With(t.Context(), o)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			runWithCalls(ctx, &run.Output{RunID: "r", AgentID: "a"}, nil)
		}
	}()
	select {
	case <-done: // the runs never waited for the stuck exporter
	case <-time.After(30 * time.Second):
		t.Fatal("runs blocked on a full export queue")
	}
	require.Positive(t, o.DroppedSpans())
	close(store.block)
	require.NoError(t, o.Shutdown(t.Context()))
	require.Equal(t, 150, len(store.spans())+int(o.DroppedSpans()), "every span was either exported or counted as dropped")
	families := scrape(t, metrics)
	require.EqualValues(t, o.DroppedSpans(), families["agnogo_trace_spans_dropped_total"])
}

// scrape parses the metrics as Prometheus would and sums each family.
func scrape(t *testing.T, m *observe.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/prometheus", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(t, err)
	sums := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				sums[name] += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sums[name] += m.GetGauge().GetValue()
			case m.Histogram != nil:
				sums[name] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sums
}

func TestMetricsAndRunLogWithoutTracing(t *testing.T) {
	metrics := observe.NewMetrics()
	var logs bytes.Buffer
	o, err := observe.New(t.Context(), observe.Config{Metrics: metrics, RunLog: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)
	require.False(t, o.Tracing())
	ctx := observe.With(t.Context(), o)
	runWithCalls(ctx, &run.Output{RunID: "r1", AgentID: "a", SessionID: "s1", UserID: "ada"}, nil)
	runWithCalls(ctx, &run.Output{RunID: "r2", AgentID: "a", SessionID: "s1"}, run.Classify(run.ClassRateLimit, errors.New("429")))

	sums := scrape(t, metrics)
	require.EqualValues(t, 2, sums["agnogo_runs_started_total"])
	require.EqualValues(t, 2, sums["agnogo_runs_finished_total"])
	require.EqualValues(t, 2, sums["agnogo_run_duration_seconds"])
	require.EqualValues(t, 2, sums["agnogo_model_calls_total"])
	require.EqualValues(t, 30, sums["agnogo_model_tokens_total"])
	require.InDelta(t, 0.5, sums["agnogo_model_cost_usd_total"], 1e-9)
	require.EqualValues(t, 2, sums["agnogo_tool_calls_total"])
	require.Contains(t, sums, "go_goroutines", "the Go runtime's metrics are there")

	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &entry))
		lines = append(lines, entry)
	}
	require.Len(t, lines, 4)
	require.Equal(t, "run started", lines[0]["msg"])
	require.Equal(t, "run finished", lines[1]["msg"])
	require.Equal(t, "r1", lines[1]["run_id"])
	require.Equal(t, "ada", lines[1]["user_id"])
	require.Equal(t, "COMPLETED", lines[1]["status"])
	require.EqualValues(t, 10, lines[1]["input_tokens"])
	require.Equal(t, "run failed", lines[3]["msg"])
	require.Equal(t, "rate_limit", lines[3]["error_type"])
	require.Equal(t, "WARN", lines[3]["level"])
}

func TestNilObserverObservesNothing(t *testing.T) {
	ctx, span := observe.StartRun(t.Context(), &run.Output{RunID: "r"})
	require.Nil(t, span)
	span.EndRun(ctx, &run.Output{}, nil, "")
	_, tool := observe.StartTool(ctx, "x", "{}")
	tool.EndTool("", false)
	var m *observe.Metrics
	m.SSEClient(1)
}

func TestSQLiteStoreReceivesSpans(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "traces.db")})
	require.NoError(t, err)
	defer store.Close()
	o := newObserver(t, store, nil, nil)
	out := &run.Output{RunID: "r1", AgentID: "a", SessionID: "s1", UserID: "ada"}
	runWithCalls(observe.With(t.Context(), o), out, nil)
	require.NoError(t, o.ForceFlush(t.Context()))
	tr, spans, err := store.GetTrace(t.Context(), out.TraceID)
	require.NoError(t, err)
	require.Len(t, spans, 3)
	require.Equal(t, "Agent.run", tr.Name)
	require.Equal(t, "ada", tr.UserID)
	require.Equal(t, "OK", tr.Status)
}

// TestTraceContextIsTheHighestLevelRuns checks that a trace's context is
// its highest-level run's whatever order its spans are batched in: a
// team's run names the trace, and its member's agent_id never joins it.
func TestTraceContextIsTheHighestLevelRuns(t *testing.T) {
	traceID := trace.TraceID{1}
	now := time.Now()
	span := func(id byte, parent byte, name string, attrs ...attribute.KeyValue) sdktrace.ReadOnlySpan {
		stub := tracetest.SpanStub{
			Name:        name,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: trace.SpanID{id}}),
			StartTime:   now.Add(time.Duration(id) * time.Millisecond),
			EndTime:     now.Add(time.Second - time.Duration(id)*time.Millisecond),
			Attributes:  attrs,
		}
		if parent != 0 {
			stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: trace.SpanID{parent}})
		}
		return stub.Snapshot()
	}
	teamRun := span(1, 0, "Crew.run", attribute.String(observe.AttrRunID, "team-run"), attribute.String(observe.AttrSpanKind, observe.KindAgent),
		attribute.String(observe.AttrTeamID, "crew"), attribute.String(observe.AttrSessionID, "s1"))
	memberRun := span(2, 1, "Calculator.run", attribute.String(observe.AttrRunID, "member-run"), attribute.String(observe.AttrSpanKind, observe.KindAgent),
		attribute.String(observe.AttrAgentID, "calc"), attribute.String(observe.AttrSessionID, "s1"))
	model := span(3, 2, "fake.invoke")
	for _, order := range [][]sdktrace.ReadOnlySpan{{teamRun, memberRun, model}, {model, memberRun, teamRun}, {memberRun, teamRun, model}} {
		writes := observe.TraceWrites(order, now)
		require.Len(t, writes, 1)
		tr := writes[0].Trace
		require.Equal(t, "Crew.run", tr.Name)
		require.Equal(t, storage.TraceLevelTeam, writes[0].NameLevel)
		require.Equal(t, "team-run", tr.RunID)
		require.Equal(t, "crew", tr.TeamID)
		require.Empty(t, tr.AgentID, "the member's agent_id is not the trace's")
		require.Equal(t, "s1", tr.SessionID)
	}
}
