package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/external"
)

// The line types of the CLI's stream-json output (and of its control
// protocol, which shares the stream).
const (
	LineSystem          = "system"
	LineAssistant       = "assistant"
	LineUser            = "user"
	LineResult          = "result"
	LineStreamEvent     = "stream_event"
	LineControlRequest  = "control_request"
	LineControlResponse = "control_response"
	LineControlCancel   = "control_cancel_request"
)

// Line is one line of `claude --output-format stream-json --verbose`: the
// fields agnogo reads, by type. Unknown types and subtypes parse, with only
// Type, Subtype and Raw set, so a newer CLI's additions are skipped, not
// fatal.
type Line struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype,omitempty"`
	// SessionID is the CLI session the line belongs to.
	SessionID string `json:"session_id,omitempty"`
	UUID      string `json:"uuid,omitempty"`
	// ParentToolUseID is set on the lines of a subagent: the Task tool call
	// that started it.
	ParentToolUseID string `json:"parent_tool_use_id,omitempty"`

	// Message is the content of an assistant or user line. An assistant
	// line carries one content block; several lines may share a message id.
	Message *Message `json:"message,omitempty"`

	// System init fields.
	Model          string   `json:"model,omitempty"`
	Cwd            string   `json:"cwd,omitempty"`
	Tools          []string `json:"tools,omitempty"`
	PermissionMode string   `json:"permissionMode,omitempty"`
	Version        string   `json:"claude_code_version,omitempty"`

	// System api_retry fields.
	Attempt      int    `json:"attempt,omitempty"`
	MaxRetries   int    `json:"max_retries,omitempty"`
	RetryDelayMS int64  `json:"retry_delay_ms,omitempty"`
	ErrorStatus  *int   `json:"error_status,omitempty"`
	Error        string `json:"error,omitempty"`

	// IsAPIErrorMessage marks the assistant line the CLI writes in place of
	// an answer when the model API failed; Error then names the failure
	// (authentication_failed, billing_error, invalid_request, …).
	IsAPIErrorMessage bool `json:"is_api_error_message,omitempty"`

	// Result fields (see [Line.IsResult]).
	IsError           bool                  `json:"is_error,omitempty"`
	Result            *string               `json:"result,omitempty"`
	NumTurns          int                   `json:"num_turns,omitempty"`
	DurationMS        int64                 `json:"duration_ms,omitempty"`
	DurationAPIMS     int64                 `json:"duration_api_ms,omitempty"`
	TTFTMS            int64                 `json:"ttft_ms,omitempty"`
	StopReason        string                `json:"stop_reason,omitempty"`
	TerminalReason    string                `json:"terminal_reason,omitempty"`
	TotalCostUSD      float64               `json:"total_cost_usd,omitempty"`
	Usage             *Usage                `json:"usage,omitempty"`
	ModelUsage        map[string]ModelUsage `json:"modelUsage,omitempty"`
	PermissionDenials []PermissionDenial    `json:"permission_denials,omitempty"`
	Errors            []string              `json:"errors,omitempty"`
	APIErrorStatus    *int                  `json:"api_error_status,omitempty"`
	StructuredOutput  json.RawMessage       `json:"structured_output,omitempty"`

	// Event is the raw Anthropic stream event of a stream_event line, and
	// APIMessageID the message it belongs to.
	Event        json.RawMessage `json:"event,omitempty"`
	APIMessageID string          `json:"api_message_id,omitempty"`

	// RequestID and Request are a control request's; Response is a control
	// response's.
	RequestID string          `json:"request_id,omitempty"`
	Request   json.RawMessage `json:"request,omitempty"`
	Response  json.RawMessage `json:"response,omitempty"`

	// Raw is the line as the CLI wrote it.
	Raw json.RawMessage `json:"-"`
}

// Message is the message of an assistant or user line.
type Message struct {
	ID      string  `json:"id,omitempty"`
	Role    string  `json:"role"`
	Model   string  `json:"model,omitempty"`
	Content Content `json:"content"`
	Usage   *Usage  `json:"usage,omitempty"`
}

// Content is a message's content: blocks, or a plain string (one text
// block).
type Content []Block

// UnmarshalJSON reads a string as one text block.
func (c *Content) UnmarshalJSON(data []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte(`"`)) {
		var text string
		if err := json.Unmarshal(data, &text); err != nil {
			return err
		}
		*c = Content{{Type: "text", Text: text}}
		return nil
	}
	var blocks []Block
	if err := json.Unmarshal(data, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// Block is one content block.
type Block struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Thinking string `json:"thinking,omitempty"`
	// ID, Name and Input are a tool_use block's.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError are a tool_result block's.
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// ResultText is a tool_result block's content as text: a string, or the
// text of its text blocks.
func (b Block) ResultText() string {
	if len(b.Content) == 0 {
		return ""
	}
	var text string
	if json.Unmarshal(b.Content, &text) == nil {
		return text
	}
	var parts []Block
	if json.Unmarshal(b.Content, &parts) != nil {
		return string(b.Content)
	}
	var out strings.Builder
	for _, p := range parts {
		out.WriteString(p.Text)
	}
	return out.String()
}

// Usage is the token accounting of a message or a result.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// ModelUsage is a result's accounting for one model.
type ModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow"`
}

// minus returns the usage since before (a session's earlier running
// totals).
func (u ModelUsage) minus(before ModelUsage) ModelUsage {
	u.InputTokens = max(0, u.InputTokens-before.InputTokens)
	u.OutputTokens = max(0, u.OutputTokens-before.OutputTokens)
	u.CacheReadInputTokens = max(0, u.CacheReadInputTokens-before.CacheReadInputTokens)
	u.CacheCreationInputTokens = max(0, u.CacheCreationInputTokens-before.CacheCreationInputTokens)
	u.CostUSD = max(0, u.CostUSD-before.CostUSD)
	return u
}

// PermissionDenial is a tool call the CLI's permissions refused.
type PermissionDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// ParseLine decodes one stream-json line. Blank lines are an error the
// caller skips; a line that is not a JSON object with a type is an error
// naming it.
func ParseLine(data []byte) (Line, error) {
	data = bytes.TrimSpace(data)
	var line Line
	if len(data) == 0 {
		return line, fmt.Errorf("claude: empty line")
	}
	if err := json.Unmarshal(data, &line); err != nil {
		return line, fmt.Errorf("claude: unreadable output line %q: %w", external.Clip(data), err)
	}
	if line.Type == "" {
		return line, fmt.Errorf("claude: output line without a type: %q", external.Clip(data))
	}
	line.Raw = append(json.RawMessage(nil), data...)
	return line, nil
}

// IsResult reports whether the line ends a turn.
func (l Line) IsResult() bool { return l.Type == LineResult }

// ResultText is a result line's final text ("" when null).
func (l Line) ResultText() string {
	if l.Result == nil {
		return ""
	}
	return *l.Result
}
