package codex

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agnogo/agnogo/run"
)

// ProviderName is the model provider the runs of a Codex agent report, as
// agnogo's own OpenAI models do.
const ProviderName = "OpenAI"

// Turn states of turn/completed.
const (
	TurnCompleted   = "completed"
	TurnInterrupted = "interrupted"
	TurnFailed      = "failed"
)

// Turn gathers one turn of the app-server into what agnogo records: the
// events clients see, the tool calls, the answer and the metrics. Feed it
// the turn's notifications in order with [Turn.Apply].
type Turn struct {
	// Content is the answer: the agent messages, separated by a blank line.
	Content string
	// LastMessage is the text of the turn's last agent message (the answer
	// under an output schema).
	LastMessage string
	// Messages are the turn's assistant and tool messages, in order: an
	// assistant message calling each tool as it starts, a tool message
	// with its result as it completes, an assistant message with each agent
	// message's text once it completes.
	Messages []*run.Message
	// Reasoning is the reasoning text the model showed.
	Reasoning string
	// Tools are the tool calls (commands, patches, MCP and dynamic tools,
	// web searches), in the order they started.
	Tools []*run.ToolExecution
	// Status is the turn/completed status: completed, interrupted or
	// failed; empty until then.
	Status string
	// Error is the failure message of a failed turn.
	Error string
	// ErrorInfo is the failed turn's codexErrorInfo (e.g.
	// "contextWindowExceeded" or {"httpConnectionFailed":
	// {"httpStatusCode": 401}}); nil when it gave none.
	ErrorInfo json.RawMessage
	// DurationMS is the turn's duration as the app-server measured it.
	DurationMS int64

	started     time.Time
	firstToken  time.Time
	byID        map[string]*run.ToolExecution
	lastMessage string // the agent message item being written
	written     map[string]bool
	usage       usageReports
}

// NewTurn starts gathering a turn that began at started.
func NewTurn(started time.Time) *Turn {
	return &Turn{started: started, byID: map[string]*run.ToolExecution{}, written: map[string]bool{}}
}

// item is the item of an item/started or item/completed notification: the
// fields agnogo reads of every type.
type item struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Text string `json:"text"`
	// commandExecution
	Command          string `json:"command"`
	Cwd              string `json:"cwd"`
	Status           string `json:"status"`
	AggregatedOutput string `json:"aggregatedOutput"`
	ExitCode         *int   `json:"exitCode"`
	// fileChange
	Changes json.RawMessage `json:"changes"`
	// mcpToolCall, dynamicToolCall
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Error     json.RawMessage `json:"error"`
	// webSearch
	Query string `json:"query"`
}

// Apply takes one message of the turn, read at now, and returns the events
// it gives.
func (t *Turn) Apply(m Message, now time.Time) []run.Event {
	switch m.Method {
	case "item/agentMessage/delta":
		var p struct {
			ItemID string `json:"itemId"`
			Delta  string `json:"delta"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.Delta == "" {
			return nil
		}
		delta := p.Delta
		if p.ItemID != t.lastMessage {
			if t.Content != "" {
				delta = "\n\n" + delta // consecutive agent messages
			}
			t.lastMessage = p.ItemID
			t.LastMessage = ""
		}
		t.LastMessage += p.Delta
		if t.firstToken.IsZero() {
			t.firstToken = now
		}
		t.Content += delta
		return []run.Event{&run.RunContent{Content: delta, ContentType: "str"}}
	case "item/reasoning/summaryTextDelta", "item/reasoning/textDelta":
		var p struct {
			Delta string `json:"delta"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.Delta == "" {
			return nil
		}
		t.Reasoning += p.Delta
		return []run.Event{&run.RunContent{ReasoningContent: p.Delta, ContentType: "str"}}
	case "item/started", "item/completed":
		var p struct {
			Item item `json:"item"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			return nil
		}
		return t.item(p.Item, m.Method == "item/completed", now)
	case "thread/tokenUsage/updated":
		var p struct {
			TokenUsage struct {
				Total tokenCounts `json:"total"`
				Last  tokenCounts `json:"last"`
			} `json:"tokenUsage"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			t.usage.add(p.TokenUsage.Total, p.TokenUsage.Last)
		}
	case "turn/completed":
		var p struct {
			Turn struct {
				Status     string          `json:"status"`
				Error      json.RawMessage `json:"error"`
				DurationMS int64           `json:"durationMs"`
			} `json:"turn"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			t.Status, t.DurationMS = p.Turn.Status, p.Turn.DurationMS
			t.Error = errorText(p.Turn.Error)
			var info struct {
				CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
			}
			if json.Unmarshal(p.Turn.Error, &info) == nil && len(info.CodexErrorInfo) > 0 && string(info.CodexErrorInfo) != "null" {
				t.ErrorInfo = info.CodexErrorInfo
			}
		}
	}
	return nil
}

// item maps a tool-like item; an agent message's completion fixes its text.
func (t *Turn) item(it item, completed bool, now time.Time) []run.Event {
	if it.Type == "agentMessage" {
		if !completed {
			return nil
		}
		var events []run.Event
		if it.Text != "" && !strings.HasSuffix(t.Content, it.Text) {
			// The deltas were missed (or never sent): the item has the text.
			if t.Content != "" {
				t.Content += "\n\n"
			}
			t.Content += it.Text
			t.lastMessage = it.ID
			events = append(events, &run.RunContent{Content: it.Text, ContentType: "str"})
		}
		text := it.Text
		if text == "" && it.ID == t.lastMessage {
			text = t.LastMessage
		}
		if text != "" {
			t.LastMessage = text
			if !t.written[it.ID] {
				t.written[it.ID] = true
				t.Messages = append(t.Messages, &run.Message{Role: run.RoleAssistant, Content: text, CreatedAt: now.Unix()})
			}
		}
		return events
	}
	name, args := toolOf(it)
	if name == "" {
		return nil
	}
	tool, known := t.byID[it.ID]
	if !known {
		tool = &run.ToolExecution{ToolCallID: it.ID, ToolName: name, ToolArgs: args, CreatedAt: now.Unix()}
		t.byID[it.ID] = tool
		t.Tools = append(t.Tools, tool)
		arguments, _ := json.Marshal(args)
		t.Messages = append(t.Messages, &run.Message{Role: run.RoleAssistant, CreatedAt: now.Unix(),
			ToolCalls: []run.ToolCall{{ID: it.ID, Type: "function", Function: run.ToolCallFunction{Name: name, Arguments: string(arguments)}}}})
	}
	if !completed {
		if known {
			return nil
		}
		return []run.Event{&run.ToolCallStarted{Tool: tool}}
	}
	result, failed := resultOf(it)
	tool.Result, tool.ToolCallError = &result, &failed
	if !t.written[it.ID] {
		t.written[it.ID] = true
		t.Messages = append(t.Messages, &run.Message{Role: run.RoleTool, ToolCallID: it.ID, ToolName: name, Content: result,
			ToolCallError: &failed, CreatedAt: now.Unix()})
	}
	var events []run.Event
	if !known {
		events = append(events, &run.ToolCallStarted{Tool: tool})
	}
	if failed {
		return append(events, &run.ToolCallError{Tool: tool, Error: result})
	}
	return append(events, &run.ToolCallCompleted{Tool: tool, Content: result})
}

// toolOf names a tool-like item and its arguments; "" for other items.
func toolOf(it item) (string, map[string]any) {
	switch it.Type {
	case "commandExecution":
		return "shell", map[string]any{"command": it.Command, "cwd": it.Cwd}
	case "fileChange":
		var changes any
		_ = json.Unmarshal(it.Changes, &changes)
		return "apply_patch", map[string]any{"changes": changes}
	case "mcpToolCall":
		args := map[string]any{}
		_ = json.Unmarshal(it.Arguments, &args)
		return "mcp__" + it.Server + "__" + it.Tool, args
	case "dynamicToolCall":
		args := map[string]any{}
		_ = json.Unmarshal(it.Arguments, &args)
		return it.Tool, args
	case "webSearch":
		return "web_search", map[string]any{"query": it.Query}
	}
	return "", nil
}

// resultOf is a completed tool-like item's result text and whether it
// failed.
func resultOf(it item) (string, bool) {
	failed := it.Status == "failed" || it.Status == "declined" || len(it.Error) > 0 && string(it.Error) != "null"
	switch it.Type {
	case "commandExecution":
		text := it.AggregatedOutput
		if it.ExitCode != nil {
			text = strings.TrimRight(text, "\n") + fmt.Sprintf("\n[exit code %d]", *it.ExitCode)
			failed = failed || *it.ExitCode != 0
		}
		if text == "" && it.Status == "declined" {
			text = "the command was declined"
		}
		return strings.TrimLeft(text, "\n"), failed
	case "fileChange":
		return string(it.Changes), failed
	}
	if failed {
		return errorText(it.Error), true
	}
	return resultText(it.Result), false
}

// resultText renders an MCP or dynamic tool result: its text parts, or the
// JSON.
func resultText(raw json.RawMessage) string {
	var structured struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &structured) == nil && len(structured.Content) > 0 {
		var parts []string
		for _, c := range structured.Content {
			if c.Text != "" {
				parts = append(parts, c.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return string(raw)
}

// errorText renders an error value: a string, an object's message, or the
// JSON.
func errorText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	return string(raw)
}

// tokenCounts are the app-server's token figures.
type tokenCounts struct {
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

// minus subtracts o field by field.
func (c tokenCounts) minus(o tokenCounts) tokenCounts {
	return tokenCounts{c.InputTokens - o.InputTokens, c.CachedInputTokens - o.CachedInputTokens,
		c.CacheWriteInputTokens - o.CacheWriteInputTokens, c.OutputTokens - o.OutputTokens, c.ReasoningOutputTokens - o.ReasoningOutputTokens}
}

// usageReports keeps what a turn's usage is computed from: the thread's
// totals before the turn (the first report's total less its last request)
// and the latest total.
type usageReports struct {
	seen   bool
	before tokenCounts
	latest tokenCounts
}

// add takes one thread/tokenUsage/updated report.
func (u *usageReports) add(total, last tokenCounts) {
	if !u.seen {
		u.seen, u.before = true, total.minus(last)
	}
	u.latest = total
}

// Metrics are the turn's metrics: its own tokens (the thread's totals less
// what came before the turn), duration and time to first token; Codex
// reports no cost.
func (t *Turn) Metrics(now time.Time, model string) *run.RunMetrics {
	m := &run.RunMetrics{Duration: now.Sub(t.started).Seconds()}
	if !t.firstToken.IsZero() {
		m.TimeToFirstToken = t.firstToken.Sub(t.started).Seconds()
	}
	if !t.usage.seen {
		return m
	}
	own := t.usage.latest.minus(t.usage.before)
	m.InputTokens, m.OutputTokens = own.InputTokens, own.OutputTokens
	m.CacheReadTokens, m.CacheWriteTokens, m.ReasoningTokens = own.CachedInputTokens, own.CacheWriteInputTokens, own.ReasoningOutputTokens
	m.TotalTokens = m.InputTokens + m.OutputTokens
	m.Details = map[string][]run.ModelMetrics{run.ModelTypeModel: {{ID: model, Provider: ProviderName, Metrics: m.Metrics}}}
	return m
}
