package run

import (
	"cmp"
	"time"
)

// Message roles, as providers and Agno name them.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of a run's transcript (Agno's models.message.Message):
// what was sent to the model, what it answered, and each tool result.
//
// The JSON follows Agno's Message.to_dict: empty optional fields are left out,
// while role, from_history, stop_after_tool_call and created_at are always
// written. Metrics are left out while they are all zero.
type Message struct {
	ID string `json:"id,omitempty"`
	// Content is a string or a list of provider content parts.
	Content           any    `json:"content,omitempty"`
	ReasoningContent  string `json:"reasoning_content,omitempty"`
	FromHistory       bool   `json:"from_history"`
	CompressedContent string `json:"compressed_content,omitempty"`
	StopAfterToolCall bool   `json:"stop_after_tool_call"`
	Role              string `json:"role"`
	// Name tells apart participants that share a role.
	Name string `json:"name,omitempty"`
	// ToolCallID is set on a tool-result message: the call it answers.
	ToolCallID    string     `json:"tool_call_id,omitempty"`
	ToolName      string     `json:"tool_name,omitempty"`
	ToolArgs      any        `json:"tool_args,omitempty"`
	ToolCallError *bool      `json:"tool_call_error,omitempty"`
	ToolCalls     []ToolCall `json:"tool_calls,omitempty"`
	// RedactedReasoningContent is reasoning the provider returned encrypted.
	RedactedReasoningContent string `json:"redacted_reasoning_content,omitempty"`
	// ProviderData carries provider-specific data needed on later turns; external
	// agents keep their native ids here (e.g. provider_data["claude_sdk"]).
	ProviderData        map[string]any `json:"provider_data,omitempty"`
	CheckpointStatus    string         `json:"checkpoint_status,omitempty"`
	CheckpointCreatedAt int64          `json:"checkpoint_created_at,omitempty"`

	Images      []Image `json:"images,omitempty"`
	Audio       []Audio `json:"audio,omitempty"`
	Videos      []Video `json:"videos,omitempty"`
	Files       []File  `json:"files,omitempty"`
	AudioOutput *Audio  `json:"audio_output,omitempty"`
	ImageOutput *Image  `json:"image_output,omitempty"`
	VideoOutput *Video  `json:"video_output,omitempty"`
	FileOutput  *File   `json:"file_output,omitempty"`

	Citations  *Citations         `json:"citations,omitempty"`
	References *MessageReferences `json:"references,omitempty"`
	Metrics    MessageMetrics     `json:"metrics,omitzero"`

	// AddToAgentMemory is nil for Agno's default (true); Agno never writes it.
	AddToAgentMemory *bool `json:"add_to_agent_memory,omitempty"`
	// Temporary messages go to the model but are not persisted.
	Temporary bool  `json:"temporary,omitempty"`
	CreatedAt int64 `json:"created_at"`
}

// NewMessage returns a message with a fresh id and created_at set from now.
func NewMessage(role string, content any, now time.Time) *Message {
	return &Message{ID: NewUUID(), Role: role, Content: content, CreatedAt: now.Unix()}
}

// ContentString returns the message text: the string content, the text of the
// first part of a list whose first part has one, or the list as JSON.
func (m *Message) ContentString() string {
	switch content := m.Content.(type) {
	case string:
		return content
	case []any:
		if len(content) == 0 {
			return ""
		}
		if part, ok := content[0].(map[string]any); ok {
			if text, ok := part["text"].(string); ok {
				return text
			}
		}
		encoded, err := marshalJSON(content)
		if err != nil {
			return ""
		}
		return string(encoded)
	}
	return ""
}

// ToolCall is one function call requested by the model, in the OpenAI shape
// Agno stores for every provider.
type ToolCall struct {
	ID string `json:"id"`
	// Type is always "function"; it is written as such when left empty.
	Type     string           `json:"type"`
	Function ToolCallFunction `json:"function"`
}

// MarshalJSON fills in the "function" type when the caller left it out.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	c.Type = cmp.Or(c.Type, "function")
	return marshalJSON(plain(c))
}

// ToolCallFunction names the function a [ToolCall] invokes.
type ToolCallFunction struct {
	Name string `json:"name"`
	// Arguments is the JSON-encoded argument object, as a string.
	Arguments string `json:"arguments"`
}

// Citations are the sources a model cited (Agno's Citations).
type Citations struct {
	// Raw is the provider's own citation payload.
	Raw           any                `json:"raw,omitempty"`
	SearchQueries []string           `json:"search_queries,omitempty"`
	URLs          []URLCitation      `json:"urls,omitempty"`
	Documents     []DocumentCitation `json:"documents,omitempty"`
}

// URLCitation is a cited web page.
type URLCitation struct {
	URL   string `json:"url,omitempty"`
	Title string `json:"title,omitempty"`
}

// DocumentCitation is a cited passage of a document.
type DocumentCitation struct {
	DocumentTitle string `json:"document_title,omitempty"`
	CitedText     string `json:"cited_text,omitempty"`
	FileName      string `json:"file_name,omitempty"`
}

// MessageReferences are the knowledge references added to a user message for
// retrieval-augmented generation. Agno dumps every key, null included.
type MessageReferences struct {
	Query string `json:"query"`
	// References are documents (objects) or plain strings.
	References []any `json:"references"`
	// Time is how long the retrieval took, in seconds.
	Time *float64 `json:"time"`
}

// CloneMessages copies messages one level deep, so that a new run (a fork,
// a continuation) does not share them with the run they came from.
func CloneMessages(messages []*Message) []*Message {
	out := make([]*Message, len(messages))
	for i, msg := range messages {
		copied := *msg
		out[i] = &copied
	}
	return out
}
