package fakeanthropic

import (
	"net/http"
	"time"
)

// Block types of the Messages API that a [Block] can be.
const (
	BlockText     = "text"
	BlockThinking = "thinking"
	BlockToolUse  = "tool_use"
)

// Block is one content block of a scripted reply.
type Block struct {
	// Type is [BlockText], [BlockThinking] or [BlockToolUse].
	Type string
	// Text is the text of a text block.
	Text string
	// Thinking is the reasoning of a thinking block.
	Thinking string
	// Signature of a thinking block. Defaults to "sig_fake".
	Signature string
	// ID of a tool_use block. Defaults to toolu_fake_<n>, numbered across the
	// server's lifetime.
	ID string
	// Name of the tool a tool_use block calls.
	Name string
	// Input of a tool_use block: a JSON object. Defaults to {}.
	Input string
}

// TextBlock returns a text block.
func TextBlock(text string) Block { return Block{Type: BlockText, Text: text} }

// ThinkingBlock returns a thinking block with the default signature.
func ThinkingBlock(thinking string) Block { return Block{Type: BlockThinking, Thinking: thinking} }

// ToolUseBlock returns a tool_use block calling name with input, a JSON object.
func ToolUseBlock(name, input string) Block {
	return Block{Type: BlockToolUse, Name: name, Input: input}
}

// Usage is the token accounting a reply reports, in the API's terms:
// InputTokens exclude the cached prefix, which is counted in
// CacheReadInputTokens and CacheCreationInputTokens.
type Usage struct {
	InputTokens              int64
	OutputTokens             int64
	CacheReadInputTokens     int64
	CacheCreationInputTokens int64
}

// Reply is the scripted answer to one request. Build it with [Message],
// [Text], [ToolUse], [ThinkingText] or [HTTPError] and refine it with its
// With and Then methods, which return a modified copy.
type Reply struct {
	blocks     []Block
	stopReason string
	usage      *Usage
	header     http.Header

	// status is non-zero for an HTTP error reply.
	status       int
	errorType    string
	errorMessage string

	// streamError, when set, ends the stream with an error event after the
	// blocks instead of message_delta and message_stop.
	streamError *apiError
	// hang holds the reply open after the blocks until the client goes away.
	hang bool
	// delay is the wait before the blocks.
	delay time.Duration
}

// Message returns a reply with the given content blocks. Its stop reason is
// tool_use when a block calls a tool, end_turn otherwise.
func Message(blocks ...Block) Reply { return Reply{blocks: blocks} }

// Text returns a reply of one text block.
func Text(text string) Reply { return Message(TextBlock(text)) }

// ToolUse returns a reply that calls the tool name with input, a JSON object.
func ToolUse(name, input string) Reply { return Message(ToolUseBlock(name, input)) }

// ThinkingText returns a reply of a thinking block followed by a text block.
func ThinkingText(thinking, text string) Reply {
	return Message(ThinkingBlock(thinking), TextBlock(text))
}

// HTTPError returns a reply that fails the request with status and an error
// body of the given type and message, e.g. (529, "overloaded_error",
// "Overloaded") or (400, "invalid_request_error", "prompt is too long: 210000
// tokens > 200000 maximum").
func HTTPError(status int, errorType, message string) Reply {
	return Reply{status: status, errorType: errorType, errorMessage: message}
}

// StreamError returns a reply whose stream fails right after message_start
// with an error event of the given type and message, e.g.
// ("overloaded_error", "Overloaded").
func StreamError(errorType, message string) Reply {
	return Message().ThenStreamError(errorType, message)
}

// WithUsage returns a copy of r that reports usage. Without it, the input
// tokens are a quarter of the request body's bytes and the output tokens a
// quarter of the content's, as the Python fake counts them.
func (r Reply) WithUsage(usage Usage) Reply {
	r.usage = &usage
	return r
}

// WithStopReason returns a copy of r that reports stop reason reason, e.g.
// max_tokens.
func (r Reply) WithStopReason(reason string) Reply {
	r.stopReason = reason
	return r
}

// WithHeader returns a copy of r that sets a response header, e.g.
// retry-after-ms on an error.
func (r Reply) WithHeader(key, value string) Reply {
	r.header = r.header.Clone()
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set(key, value)
	return r
}

// ThenStreamError returns a copy of r whose stream sends its blocks and then
// an error event of the given type and message instead of finishing. A
// non-streaming request gets the HTTP error the API uses for that type
// (529 for overloaded_error, 500 for api_error, …) instead.
func (r Reply) ThenStreamError(errorType, message string) Reply {
	r.streamError = &apiError{Type: errorType, Message: message}
	return r
}

// ThenHang returns a copy of r that, after its blocks, holds the response open
// until the client goes away; a non-streaming request gets no answer at all.
// Tests use it to cancel a call or break a stream part-way.
func (r Reply) ThenHang() Reply {
	r.hang = true
	return r
}

// apiError is the error object of the API's error bodies and events.
type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// statusForErrorType is the HTTP status the API answers with for an error
// type.
func statusForErrorType(errorType string) int {
	switch errorType {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return http.StatusInternalServerError
}
