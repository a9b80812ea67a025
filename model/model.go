package model

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/agnogo/agnogo/run"
)

// Model is a language model behind some provider's API.
//
// Invoke returns the whole reply; Stream yields it as it is generated. Both
// honour ctx: cancelling it aborts the request. Implementations are safe for
// concurrent use.
type Model interface {
	// Info names the model and its provider (for events, metrics and logs).
	Info() Info
	// Invoke sends req and waits for the complete reply.
	Invoke(ctx context.Context, req *Request) (*Response, error)
	// Stream sends req and yields deltas as they arrive. The last chunk
	// carries the complete reply in Chunk.Response. Breaking the loop
	// aborts the request and releases the connection.
	Stream(ctx context.Context, req *Request) iter.Seq2[*Chunk, error]
}

// Info names a model.
type Info struct {
	// ID is the provider's model id, e.g. gpt-5-mini.
	ID string
	// Provider is the provider's name as Agno reports it, e.g. OpenAI.
	Provider string
}

// Request is one call to a model.
type Request struct {
	// Messages is the conversation so far: system (or developer), user,
	// assistant (with tool calls) and tool-result messages, in order.
	Messages []*run.Message
	// Tools the model may call.
	Tools []ToolDefinition
	// ToolChoice is "auto" (default when Tools is set), "none", "required",
	// or the name of one tool to call.
	ToolChoice string
	// ResponseFormat asks for a JSON answer matching a schema, natively
	// where the provider supports it.
	ResponseFormat *ResponseFormat
	// Temperature and MaxTokens are left to the provider's defaults when nil/0.
	Temperature *float64
	MaxTokens   int
}

// ToolDefinition describes one callable tool to the model.
type ToolDefinition struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the tool's arguments (an object schema).
	Parameters json.RawMessage
}

// ResponseFormat asks for structured output.
type ResponseFormat struct {
	// Name labels the schema (providers require one); e.g. the Go type name.
	Name string
	// Schema is the JSON Schema the answer must match.
	Schema json.RawMessage
	// Strict asks the provider to enforce the schema exactly where it can.
	Strict bool
}

// Response is a model's complete reply.
type Response struct {
	// Content is the text of the reply ("" when it only calls tools).
	Content string
	// ReasoningContent is the model's visible reasoning, if any.
	ReasoningContent string
	// ToolCalls are the calls the model asks for, in order.
	ToolCalls []run.ToolCall
	// StopReason is the provider's reason for stopping (stop, tool_calls, length, …).
	StopReason string
	// Usage is the token accounting of this call. By the conventions of the
	// reference: for Anthropic, InputTokens excludes the cached prefix (it is
	// in CacheReadTokens / CacheWriteTokens); for OpenAI it includes it.
	Usage run.Metrics
	// ProviderData is provider-specific state a later turn needs (e.g. a
	// Responses API response id); it is kept on the assistant message.
	ProviderData map[string]any
}

// Chunk is one piece of a streamed reply.
type Chunk struct {
	// ContentDelta is new reply text.
	ContentDelta string
	// ReasoningDelta is new reasoning text.
	ReasoningDelta string
	// Response is set on the final chunk only: the complete reply, tool calls
	// and usage included.
	Response *Response
}
