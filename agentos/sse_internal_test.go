package agentos

import (
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestSSEFramesGolden pins the exact bytes of a run's frames: event name
// line, compact JSON with null fields left out and the event log's
// event_index last, blank line; control frames and the heartbeat comment.
func TestSSEFramesGolden(t *testing.T) {
	base := run.BaseEvent{CreatedAt: 1767000000, AgentID: "assistant", AgentName: "Assistant", RunID: "r1", SessionID: "s1"}
	usage := &run.RunMetrics{Metrics: run.Metrics{InputTokens: 12, OutputTokens: 3, TotalTokens: 15}}
	events := []run.Event{
		&run.RunStarted{BaseEvent: base, Model: "gpt-5-mini", ModelProvider: "OpenAI"},
		&run.RunContent{BaseEvent: base, Content: "Hel", ContentType: "str"},
		&run.RunContent{BaseEvent: base, Content: "lo", ContentType: "str"},
		&run.ToolCallStarted{BaseEvent: base, Tool: &run.ToolExecution{ToolCallID: "c1", ToolName: "get_weather", ToolArgs: map[string]any{"city": "Paris"}}},
		&run.RunCompleted{BaseEvent: base, Content: "Hello", ContentType: "str", Metrics: usage},
		&run.RunError{BaseEvent: base, Content: "boom", ErrorType: "server_error"},
	}
	rec := httptest.NewRecorder()
	sse := startSSE(rec)
	log := eventlog.NewMemory(eventlog.MemoryConfig{})
	require.NoError(t, sse.control("catch_up", map[string]any{"missed_events": 2, "current_event_count": 2, "status": "running"}))
	for _, e := range events {
		log.Append(e)
		require.NoError(t, sse.event(e))
	}
	require.NoError(t, sse.comment("heartbeat"))
	require.NoError(t, sse.errorFrame("tail lost"))
	require.Equal(t, "text/event-stream", rec.Header().Get("Content-Type"))

	golden := filepath.Join("testdata", "run_stream.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, rec.Body.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), rec.Body.String())
}
