package run

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// fixedCreatedAt is the epoch-second timestamp every fixture uses.
const fixedCreatedAt = 1767000000

// fixedTime is the wall-clock time behind fixtures that need a time.Time; it
// has microseconds so Python's isoformat writes a fraction.
var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)

// assertGolden compares got, indented, with testdata/<name>.golden, or rewrites
// the file under -update.
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, got, "", "  "))
	indented.WriteByte('\n')
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, indented.Bytes(), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run: go test ./run -update")
	require.Equal(t, string(want), indented.String(), "golden %s differs; if intended, run: go test ./run -update", path)
}

func fixtureBase() BaseEvent {
	return BaseEvent{
		CreatedAt: fixedCreatedAt,
		AgentID:   "agent-1",
		AgentName: "Researcher",
		RunID:     "run-1",
		SessionID: "session-1",
	}
}

func fixtureToolMetrics() *ToolCallMetrics {
	return &ToolCallMetrics{StartTime: 1767000001.25, EndTime: 1767000002.75, Duration: 1.5}
}

// fixtureTool is a finished, top-level tool call.
func fixtureTool() *ToolExecution {
	return &ToolExecution{
		ToolCallID:    "call-1",
		ToolName:      "get_weather",
		ToolArgs:      map[string]any{"city": "Paris"},
		ToolCallError: new(false),
		Result:        new("sunny, 21C"),
		Metrics:       fixtureToolMetrics(),
		CreatedAt:     fixedCreatedAt,
	}
}

// fixturePausedTool waits for a confirmation.
func fixturePausedTool() *ToolExecution {
	return &ToolExecution{
		ToolCallID:           "call-2",
		ToolName:             "delete_file",
		ToolArgs:             map[string]any{"path": "/tmp/x"},
		CreatedAt:            fixedCreatedAt,
		RequiresConfirmation: true,
		ApprovalType:         "required",
		ApprovalID:           "approval-1",
	}
}

func fixtureRequirement() *Requirement {
	return &Requirement{ID: "req-1", ToolExecution: fixturePausedTool(), CreatedAt: fixedTime}
}

func fixtureModelMetrics() ModelMetrics {
	return ModelMetrics{
		Metrics:         Metrics{InputTokens: 100, OutputTokens: 20, TotalTokens: 120, CacheReadTokens: 50, Cost: new(0.0125)},
		ID:              "claude-sonnet-4-5",
		Provider:        "Anthropic",
		ProviderMetrics: map[string]any{"service_tier": "standard"},
	}
}

func fixtureRunMetrics() *RunMetrics {
	return &RunMetrics{
		Metrics:           Metrics{InputTokens: 100, OutputTokens: 20, TotalTokens: 120, CacheReadTokens: 50, Cost: new(0.0125)},
		TimeToFirstToken:  0.42,
		Duration:          2.5,
		Details:           map[string][]ModelMetrics{ModelTypeModel: {fixtureModelMetrics()}},
		AdditionalMetrics: map[string]any{"eval_duration": 0.5},
	}
}

func fixtureMessages() []*Message {
	return []*Message{
		{ID: "msg-1", Role: RoleUser, Content: "What is the weather in Paris?", CreatedAt: fixedCreatedAt},
		{
			ID:        "msg-2",
			Role:      RoleAssistant,
			ToolCalls: []ToolCall{{ID: "call-1", Function: ToolCallFunction{Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			Metrics:   MessageMetrics{Metrics: Metrics{InputTokens: 60, OutputTokens: 10, TotalTokens: 70}, Duration: 1.25, TimeToFirstToken: 0.42},
			CreatedAt: fixedCreatedAt,
		},
		{
			ID: "msg-3", Role: RoleTool, Content: "sunny, 21C", ToolCallID: "call-1", ToolName: "get_weather",
			ToolArgs: map[string]any{"city": "Paris"}, ToolCallError: new(false), CreatedAt: fixedCreatedAt,
		},
		{
			ID: "msg-4", Role: RoleAssistant, Content: "It is sunny.",
			ProviderData:     map[string]any{"claude_sdk": map[string]any{"session_id": "sdk-1", "uuid": "u-1", "position": 3}},
			CheckpointStatus: "RUNNING", CheckpointCreatedAt: fixedCreatedAt, CreatedAt: fixedCreatedAt,
		},
	}
}

func fixtureInput() *Input {
	return &Input{
		InputContent: "What is the weather in Paris?",
		Images:       []Image{{ID: "img-1", URL: "https://example.com/paris.png", MimeType: "image/png"}},
	}
}

// fixtureEvents returns one fully populated value of every agent event type,
// keyed by wire name.
func fixtureEvents() map[string]Event {
	base := fixtureBase
	indexed := func() BaseEvent {
		b := base()
		b.SetIndex(3)
		return b
	}
	stepBase := func() BaseEvent {
		b := base()
		b.WorkflowID, b.WorkflowRunID, b.StepID, b.StepName, b.StepIndex = "wf-1", "wf-run-1", "step-1", "research", new(0)
		return b
	}
	subagentTool := fixtureTool()
	subagentTool.ParentToolCallID = "call-parent"
	return map[string]Event{
		EventRunStarted: &RunStarted{BaseEvent: base(), Model: "claude-sonnet-4-5", ModelProvider: "Anthropic"},
		EventRunContent: &RunContent{
			BaseEvent: indexed(), Content: "Hel", ContentType: "str", ReasoningContent: "thinking",
			Citations:  &Citations{URLs: []URLCitation{{URL: "https://example.com", Title: "Example"}}},
			References: []MessageReferences{{Query: "paris weather", References: []any{"doc"}, Time: new(0.1)}},
		},
		EventRunContentCompleted:    &RunContentCompleted{BaseEvent: base()},
		EventRunIntermediateContent: &RunIntermediateContent{BaseEvent: base(), Content: map[string]any{"draft": true}, ContentType: "Draft"},
		EventRunCompleted: &RunCompleted{
			BaseEvent: base(), Content: "It is sunny.", ContentType: "str",
			Images:       []Image{{ID: "img-2", Content: []byte("png-bytes")}},
			Metadata:     map[string]any{"attempts": []any{}},
			Metrics:      fixtureRunMetrics(),
			SessionState: map[string]any{"city": "Paris"},
		},
		EventRunError: &RunError{
			BaseEvent: base(), Content: "session is busy", ErrorType: "session_busy", ErrorID: "err-1",
			AdditionalData: map[string]any{"active_run_id": "run-0"},
		},
		EventRunCancelled: &RunCancelled{BaseEvent: base(), Reason: "cancelled by user"},
		EventRunPaused: func() Event {
			req := fixtureRequirement()
			b := base()
			b.Tools = []*ToolExecution{req.ToolExecution}
			return &RunPaused{BaseEvent: b, Requirements: []*Requirement{req}}
		}(),
		EventRunContinued:      &RunContinued{BaseEvent: base()},
		EventPreHookStarted:    &PreHookStarted{BaseEvent: base(), PreHookName: "pii_guardrail", RunInput: fixtureInput()},
		EventPreHookCompleted:  &PreHookCompleted{BaseEvent: base(), PreHookName: "pii_guardrail", RunInput: fixtureInput()},
		EventPostHookStarted:   &PostHookStarted{BaseEvent: base(), PostHookName: "audit"},
		EventPostHookCompleted: &PostHookCompleted{BaseEvent: base(), PostHookName: "audit"},
		EventToolCallStarted:   &ToolCallStarted{BaseEvent: stepBase(), Tool: subagentTool, ParentToolCallID: "call-parent"},
		EventToolCallCompleted: &ToolCallCompleted{
			BaseEvent: base(), Tool: fixtureTool(), Content: "sunny, 21C",
			Files: []File{{ID: "file-1", MimeType: "text/plain", Content: []byte("forecast")}},
		},
		EventToolCallError:         &ToolCallError{BaseEvent: base(), Tool: fixtureTool(), Error: "timeout"},
		EventReasoningStarted:      &ReasoningStarted{BaseEvent: base()},
		EventReasoningStep:         &ReasoningStep{BaseEvent: base(), Content: map[string]any{"title": "Plan"}, ContentType: "ReasoningStep", ReasoningContent: "First, plan."},
		EventReasoningContentDelta: &ReasoningContentDelta{BaseEvent: base(), ReasoningContent: "Fir"},
		EventReasoningCompleted:    &ReasoningCompleted{BaseEvent: base(), Content: "done"},
		EventMemoryUpdateStarted:   &MemoryUpdateStarted{BaseEvent: base()},
		EventMemoryUpdateCompleted: &MemoryUpdateCompleted{BaseEvent: base(), Memories: []any{map[string]any{"memory_id": "m-1", "memory": "Likes Paris"}}},
		EventSessionSummaryStarted: &SessionSummaryStarted{BaseEvent: base()},
		EventSessionSummaryCompleted: &SessionSummaryCompleted{
			BaseEvent: base(), SessionSummary: &SessionSummary{Summary: "Weather chat", Topics: []string{"weather"}, UpdatedAt: fixedTime},
		},
		EventParserModelResponseStarted:   &ParserModelResponseStarted{BaseEvent: base()},
		EventParserModelResponseCompleted: &ParserModelResponseCompleted{BaseEvent: base()},
		EventOutputModelResponseStarted:   &OutputModelResponseStarted{BaseEvent: base()},
		EventOutputModelResponseCompleted: &OutputModelResponseCompleted{BaseEvent: base()},
		EventModelRequestStarted:          &ModelRequestStarted{BaseEvent: base(), Model: "gpt-5", ModelProvider: "OpenAI"},
		EventModelRequestCompleted: &ModelRequestCompleted{
			BaseEvent: base(), Model: "gpt-5", ModelProvider: "OpenAI",
			InputTokens: new(int64(60)), OutputTokens: new(int64(10)), TotalTokens: new(int64(70)),
			TimeToFirstToken: new(0.42), ReasoningTokens: new(int64(0)), CacheReadTokens: new(int64(32)),
		},
		EventCompressionStarted:   &CompressionStarted{BaseEvent: base()},
		EventCompressionCompleted: &CompressionCompleted{BaseEvent: base(), ToolResultsCompressed: new(2), OriginalSize: new(146300), CompressedSize: new(920)},
		EventFollowupsStarted:     &FollowupsStarted{BaseEvent: base()},
		EventFollowupsCompleted:   &FollowupsCompleted{BaseEvent: base(), Followups: []string{"What about tomorrow?"}},
		EventCustom: &CustomEvent{
			BaseEvent: base(), ToolCallID: "call-1",
			Fields: map[string]any{"warning_type": "transcript_persistence_failed", "count": 2},
		},
		EventRunRetry: &RunRetry{BaseEvent: indexed(), Attempt: 2, MaxAttempts: 3, Error: "overloaded", DelaySeconds: 1.5},
	}
}

func fixtureOutput() *Output {
	req := fixtureRequirement()
	events := fixtureEvents()
	return &Output{
		RunID: "run-1", AgentID: "agent-1", AgentName: "Researcher", SessionID: "session-1", UserID: "user-1",
		Input:         fixtureInput(),
		Content:       "It is sunny.",
		ContentType:   "str",
		Model:         "claude-sonnet-4-5",
		ModelProvider: "Anthropic",
		Messages:      fixtureMessages(),
		Tools:         []*ToolExecution{fixtureTool(), req.ToolExecution},
		Metrics:       fixtureRunMetrics(),
		Status:        StatusPaused,
		Metadata: map[string]any{MetadataAttempts: []Attempt{
			{Attempt: 1, Error: new("overloaded"), StartedAt: fixedCreatedAt, EndedAt: fixedCreatedAt + 2},
			{Attempt: 2, StartedAt: fixedCreatedAt + 3, EndedAt: fixedCreatedAt + 9},
		}},
		SessionState:                 map[string]any{"city": "Paris"},
		CreatedAt:                    fixedCreatedAt,
		Requirements:                 []*Requirement{req},
		Events:                       EventList{events[EventRunStarted], events[EventRunContent], events[EventRunRetry]},
		QueueAttempt:                 2,
		LastCheckpointAtMessageIndex: new(3),
		ForkedFromRunID:              "run-0",
		ForkedFromMessageIndex:       new(0),
		ForkedFromSessionID:          "session-0",
		RegeneratedFrom:              "run-00",
	}
}
