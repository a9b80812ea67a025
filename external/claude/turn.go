package claude

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agnogo/agnogo/run"
)

// ProviderName is the model provider the runs of a Claude agent report.
const ProviderName = "Anthropic"

// Turn gathers one turn of the CLI into what agnogo records: the events
// clients see, the messages and tool calls of the run, the CLI session id,
// and the result with its metrics. Feed it the turn's lines in order with
// [Turn.Apply].
type Turn struct {
	// SessionID is the CLI session the turn ran in, from its init line.
	SessionID string
	// Model is the model the CLI reported.
	Model string
	// Messages are the turn's assistant and tool messages, in order.
	Messages []*run.Message
	// Tools are the tool calls, in the order they started.
	Tools []*run.ToolExecution
	// Result is the turn's result line; nil until it arrives.
	Result *Line
	// Warnings are lines that could not be read.
	Warnings []run.Warning
	// APIError is the kind of model API failure the CLI reported in place
	// of an answer (authentication_failed, billing_error, …), if any.
	APIError string

	started    time.Time
	firstToken time.Time
	byID       map[string]*run.ToolExecution
	// pending holds, per assistant message, the tool calls still waiting
	// for their results; batchOf names a call's assistant message.
	pending map[string]map[string]bool
	batchOf map[string]string
	// streamed are the messages whose text came as stream deltas
	// (--include-partial-messages); their whole blocks are not sent again.
	streamed map[string]bool
	// before are the session's running totals before this turn: a resumed
	// CLI session reports cost and per-model usage since its start.
	before CostState
}

// CostState is a CLI session's running totals, as its transcript's
// cost-state lines and its results report them.
type CostState struct {
	TotalCostUSD float64               `json:"totalCostUSD"`
	ModelUsage   map[string]ModelUsage `json:"modelUsage"`
}

// Since sets the session's totals before this turn, so that the turn's
// metrics count only its own cost and per-model usage.
func (t *Turn) Since(before CostState) { t.before = before }

// NewTurn starts gathering a turn that began at started.
func NewTurn(started time.Time) *Turn {
	return &Turn{started: started, byID: map[string]*run.ToolExecution{},
		pending: map[string]map[string]bool{}, batchOf: map[string]string{}, streamed: map[string]bool{}}
}

// ProviderDataKey is the provider_data key of a message's place in the
// CLI transcript: {"session_id", "uuid"}. Continuing from a message forks
// the transcript there.
const ProviderDataKey = "claude_sdk"

// CheckpointStatus marks the last tool result of a batch of tool calls: a
// place the run can be continued from.
const CheckpointStatus = "RUNNING"

// reference is the provider data naming a top-level line in the CLI's
// transcript; nil for a subagent's line or one without a uuid.
func reference(line Line) map[string]any {
	if line.ParentToolUseID != "" || line.UUID == "" {
		return nil
	}
	return map[string]any{ProviderDataKey: map[string]any{"session_id": line.SessionID, "uuid": line.UUID}}
}

// Apply takes one line of the turn, read at now, and returns the events it
// gives: RunContent for assistant text, ToolCallStarted for a tool call,
// ToolCallCompleted or ToolCallError for its result. Tool calls of a
// subagent carry its Task call as their parent.
func (t *Turn) Apply(line Line, now time.Time) []run.Event {
	switch line.Type {
	case LineSystem:
		if line.Subtype == "init" {
			t.SessionID = firstNonEmpty(line.SessionID, t.SessionID)
			t.Model = firstNonEmpty(line.Model, t.Model)
		}
	case LineAssistant:
		return t.assistant(line, now)
	case LineStreamEvent:
		return t.delta(line, now)
	case LineUser:
		if isReplay(line) {
			t.prompt(line, now)
			return nil
		}
		return t.toolResults(line, now)
	case LineResult:
		result := line
		t.Result = &result
		t.SessionID = firstNonEmpty(line.SessionID, t.SessionID)
	case "invalid":
		t.Warnings = append(t.Warnings, run.Warning{Type: "unreadable_cli_output", Message: "a line of the claude CLI's output could not be read", Error: line.Error})
	}
	return nil
}

// assistant maps an assistant line's blocks.
func (t *Turn) assistant(line Line, now time.Time) []run.Event {
	if line.Message == nil {
		return nil
	}
	if line.IsAPIErrorMessage {
		// A stand-in for an answer the API refused: the failure is the
		// turn's result, not content.
		t.APIError = firstNonEmpty(line.Error, t.APIError)
		return nil
	}
	var events []run.Event
	for _, block := range line.Message.Content {
		switch block.Type {
		case "text":
			if block.Text == "" {
				continue
			}
			if t.firstToken.IsZero() {
				t.firstToken = now
			}
			t.Messages = append(t.Messages, &run.Message{Role: run.RoleAssistant, Content: block.Text, CreatedAt: now.Unix(), ProviderData: reference(line)})
			if line.ParentToolUseID == "" && !t.streamed[line.Message.ID] {
				events = append(events, &run.RunContent{Content: block.Text, ContentType: "str"})
			}
		case "thinking":
			if block.Thinking != "" && line.ParentToolUseID == "" && !t.streamed[line.Message.ID] {
				events = append(events, &run.RunContent{ReasoningContent: block.Thinking, ContentType: "str"})
			}
		case "tool_use":
			args := map[string]any{}
			_ = json.Unmarshal(block.Input, &args)
			tool := &run.ToolExecution{ToolCallID: block.ID, ToolName: block.Name, ToolArgs: args, CreatedAt: now.Unix()}
			t.byID[block.ID] = tool
			t.Tools = append(t.Tools, tool)
			t.Messages = append(t.Messages, &run.Message{Role: run.RoleAssistant, CreatedAt: now.Unix(), ProviderData: reference(line),
				ToolCalls: []run.ToolCall{{ID: block.ID, Type: "function", Function: run.ToolCallFunction{Name: block.Name, Arguments: string(block.Input)}}}})
			if line.ParentToolUseID == "" && line.Message.ID != "" {
				if t.pending[line.Message.ID] == nil {
					t.pending[line.Message.ID] = map[string]bool{}
				}
				t.pending[line.Message.ID][block.ID] = true
				t.batchOf[block.ID] = line.Message.ID
			}
			events = append(events, &run.ToolCallStarted{Tool: tool, ParentToolCallID: line.ParentToolUseID})
		}
	}
	return events
}

// delta maps a stream event's text or thinking delta (of the top-level
// conversation) to RunContent.
func (t *Turn) delta(line Line, now time.Time) []run.Event {
	if line.ParentToolUseID != "" {
		return nil
	}
	var event struct {
		Type  string `json:"type"`
		Delta struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Thinking string `json:"thinking"`
		} `json:"delta"`
	}
	if json.Unmarshal(line.Event, &event) != nil || event.Type != "content_block_delta" {
		return nil
	}
	switch {
	case event.Delta.Type == "text_delta" && event.Delta.Text != "":
		t.streamed[line.APIMessageID] = true
		if t.firstToken.IsZero() {
			t.firstToken = now
		}
		return []run.Event{&run.RunContent{Content: event.Delta.Text, ContentType: "str"}}
	case event.Delta.Type == "thinking_delta" && event.Delta.Thinking != "":
		t.streamed[line.APIMessageID] = true
		return []run.Event{&run.RunContent{ReasoningContent: event.Delta.Thinking, ContentType: "str"}}
	}
	return nil
}

// prompt records the CLI's echo of the turn's prompt as the run's user
// message, with its place in the transcript.
func (t *Turn) prompt(line Line, now time.Time) {
	if line.Message == nil || line.ParentToolUseID != "" {
		return
	}
	var text strings.Builder
	for _, block := range line.Message.Content {
		text.WriteString(block.Text)
	}
	t.Messages = append(t.Messages, &run.Message{Role: run.RoleUser, Content: text.String(), CreatedAt: now.Unix(), ProviderData: reference(line)})
}

// toolResults maps the tool results of a user line.
func (t *Turn) toolResults(line Line, now time.Time) []run.Event {
	if line.Message == nil {
		return nil
	}
	var events []run.Event
	for _, block := range line.Message.Content {
		if block.Type != "tool_result" {
			continue
		}
		text := block.ResultText()
		failed := block.IsError
		tool, ok := t.byID[block.ToolUseID]
		if !ok {
			tool = &run.ToolExecution{ToolCallID: block.ToolUseID, CreatedAt: now.Unix()}
			t.byID[block.ToolUseID] = tool
			t.Tools = append(t.Tools, tool)
		}
		tool.Result, tool.ToolCallError = &text, &failed
		msg := &run.Message{Role: run.RoleTool, ToolCallID: block.ToolUseID, ToolName: tool.ToolName,
			Content: text, ToolCallError: &failed, CreatedAt: now.Unix(), ProviderData: reference(line)}
		t.Messages = append(t.Messages, msg)
		if batch, ok := t.batchOf[block.ToolUseID]; ok {
			delete(t.pending[batch], block.ToolUseID)
			if len(t.pending[batch]) == 0 && msg.ProviderData != nil {
				// The batch's last result: the run can go on from here.
				msg.CheckpointStatus, msg.CheckpointCreatedAt = CheckpointStatus, now.Unix()
			}
		}
		if failed {
			events = append(events, &run.ToolCallError{Tool: tool, Error: text, ParentToolCallID: line.ParentToolUseID})
		} else {
			events = append(events, &run.ToolCallCompleted{Tool: tool, Content: text, ParentToolCallID: line.ParentToolUseID})
		}
	}
	return events
}

// Content is the turn's answer: the result's text.
func (t *Turn) Content() string {
	if t.Result == nil {
		return ""
	}
	return t.Result.ResultText()
}

// Metrics are the turn's metrics, from its result: tokens, cache, cost,
// duration, time to first token, and one entry per model.
func (t *Turn) Metrics(now time.Time) *run.RunMetrics {
	m := &run.RunMetrics{Duration: now.Sub(t.started).Seconds()}
	if !t.firstToken.IsZero() {
		m.TimeToFirstToken = t.firstToken.Sub(t.started).Seconds()
	}
	if t.Result == nil {
		return m
	}
	if u := t.Result.Usage; u != nil {
		m.InputTokens = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
		m.OutputTokens = u.OutputTokens
		m.CacheReadTokens = u.CacheReadInputTokens
		m.CacheWriteTokens = u.CacheCreationInputTokens
		m.TotalTokens = m.InputTokens + m.OutputTokens
	}
	if t.Result.TotalCostUSD > 0 || t.Result.Usage != nil {
		cost := max(0, t.Result.TotalCostUSD-t.before.TotalCostUSD)
		m.Cost = &cost
	}
	for _, id := range slices.Sorted(maps.Keys(t.Result.ModelUsage)) {
		mu := t.Result.ModelUsage[id].minus(t.before.ModelUsage[id])
		if mu.InputTokens == 0 && mu.OutputTokens == 0 && mu.CostUSD == 0 {
			continue // a model used by earlier turns only
		}
		cost := mu.CostUSD
		detail := run.ModelMetrics{ID: id, Provider: ProviderName, Metrics: run.Metrics{
			InputTokens: mu.InputTokens + mu.CacheReadInputTokens + mu.CacheCreationInputTokens, OutputTokens: mu.OutputTokens,
			CacheReadTokens: mu.CacheReadInputTokens, CacheWriteTokens: mu.CacheCreationInputTokens, Cost: &cost}}
		detail.TotalTokens = detail.InputTokens + detail.OutputTokens
		if m.Details == nil {
			m.Details = map[string][]run.ModelMetrics{}
		}
		m.Details[run.ModelTypeModel] = append(m.Details[run.ModelTypeModel], detail)
	}
	return m
}

// firstNonEmpty returns the first non-empty string.
func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
