package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Reply is the scripted answer to one request. Build it with [Text], [JSON],
// [ToolCalls], [Error], [RawError], [ContextLengthExceeded] or [Failed], then
// refine it with the With… methods. The zero Reply is an empty text answer.
type Reply struct {
	text      string
	reasoning string
	toolCalls []ToolCall
	usage     *Usage

	// status and body make an HTTP error reply when status is non-zero.
	status      int
	body        string
	contentType string

	// failCode makes a reply that starts streaming and then fails.
	failCode    string
	failMessage string

	// stalls makes the reply stall, after stallAfter deltas, until the
	// client goes away.
	stalls     bool
	stallAfter int
	// cuts makes the server drop the connection after cutAfter deltas.
	cuts     bool
	cutAfter int
	// delay is how long the server waits before answering.
	delay time.Duration
}

// ToolCall is one function call in a [ToolCalls] reply.
type ToolCall struct {
	// ID is the call id. Defaults to call_fake_N.
	ID string
	// Name is the function's name.
	Name string
	// Arguments is the JSON-encoded argument object.
	Arguments string
}

// Usage is the token accounting a reply reports. Zero fields are reported as
// zero, except TotalTokens, which defaults to InputTokens + OutputTokens.
type Usage struct {
	// InputTokens is prompt_tokens / input_tokens; it includes
	// CachedTokens, as OpenAI counts them.
	InputTokens int64
	// OutputTokens is completion_tokens / output_tokens.
	OutputTokens int64
	// TotalTokens is total_tokens.
	TotalTokens int64
	// CachedTokens is the cached_tokens of the input's details.
	CachedTokens int64
	// ReasoningTokens is the reasoning_tokens of the output's details.
	ReasoningTokens int64
}

// Text answers with text, streamed word by word.
func Text(text string) Reply {
	return Reply{text: text}
}

// JSON answers with a JSON document, as a model does under a response
// format. A string, []byte or json.RawMessage is sent as it is; any other
// value is marshalled (a value that cannot be makes the reply an HTTP 500
// saying why).
func JSON(value any) Reply {
	encoded, err := encodeJSON(value)
	if err != nil {
		return Error(http.StatusInternalServerError, "fake_bad_reply", fmt.Sprintf("fakeopenai: JSON reply: %v", err))
	}
	return Text(encoded)
}

// ToolCalls answers with function calls and no text. Their arguments are
// streamed in several pieces.
func ToolCalls(calls ...ToolCall) Reply {
	return Reply{toolCalls: calls}
}

// Call is a [ToolCall] of the named function. A string, []byte or
// json.RawMessage argument is taken as JSON text; any other value is
// marshalled (one that cannot be is sent as its error text, which is not
// JSON).
func Call(name string, arguments any) ToolCall {
	encoded, err := encodeJSON(arguments)
	if err != nil {
		encoded = err.Error()
	}
	return ToolCall{Name: name, Arguments: encoded}
}

// Error answers with an HTTP error status and OpenAI's error body:
// {"error": {"message", "type", "param", "code"}}, the type following the
// status as OpenAI's does.
func Error(status int, code, message string) Reply {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message,
		"type":    errorType(status),
		"param":   nil,
		"code":    nullIfEmpty(code),
	}})
	return Reply{status: status, body: string(body), contentType: "application/json"}
}

// RawError answers with an HTTP status and body exactly as given; the
// content type is application/json when the body is JSON, text/plain
// otherwise. It stands in for proxies and OpenAI-compatible servers whose
// errors do not follow OpenAI's shape (and, with status 200, for a reply
// that is empty).
func RawError(status int, body string) Reply {
	contentType := "text/plain; charset=utf-8"
	if json.Valid([]byte(body)) {
		contentType = "application/json"
	}
	return Reply{status: status, body: body, contentType: contentType}
}

// ContextLengthExceeded answers as OpenAI does when the conversation is longer
// than the model's context window: HTTP 400 with code context_length_exceeded.
func ContextLengthExceeded() Reply {
	return Error(http.StatusBadRequest, "context_length_exceeded",
		"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.")
}

// Failed answers HTTP 200 and then fails mid-reply: a Responses stream ends
// with response.failed carrying code and message, a Chat Completions stream
// with an error frame. A request that does not stream gets HTTP 500 with that
// code instead.
func Failed(code, message string) Reply {
	return Reply{failCode: code, failMessage: message}
}

// WithText sets the reply's text, e.g. a preamble before its tool calls.
func (r Reply) WithText(text string) Reply {
	r.text = text
	return r
}

// WithToolCalls adds function calls to the reply.
func (r Reply) WithToolCalls(calls ...ToolCall) Reply {
	r.toolCalls = append(append([]ToolCall(nil), r.toolCalls...), calls...)
	return r
}

// WithReasoning adds visible reasoning, streamed before the answer: a
// reasoning summary on the Responses API, reasoning_content (as vLLM and
// DeepSeek send it) on Chat Completions.
func (r Reply) WithReasoning(text string) Reply {
	r.reasoning = text
	return r
}

// WithUsage sets the reported token usage. Without it the usage is derived
// from the sizes of the request and the reply.
func (r Reply) WithUsage(usage Usage) Reply {
	r.usage = &usage
	return r
}

// StallAfter makes the reply stop after that many streamed deltas (text,
// reasoning or argument pieces) and wait, headers and those deltas sent,
// until the client goes away; the server then counts a disconnect (see
// [Server.Disconnects]). A request that does not stream waits before any
// answer. It lets tests cancel or abandon a reply mid-stream.
func (r Reply) StallAfter(deltas int) Reply {
	r.stalls, r.stallAfter = true, max(deltas, 0)
	return r
}

// CutAfter makes the server drop the connection after that many streamed
// deltas, as a failing network or proxy does: the client sees the stream
// end abruptly. A request that does not stream is dropped before any answer.
func (r Reply) CutAfter(deltas int) Reply {
	r.cuts, r.cutAfter = true, max(deltas, 0)
	return r
}

// WithDelay makes the server wait d before answering, as a slow model does;
// a client that goes away meanwhile ends the wait.
func (r Reply) WithDelay(d time.Duration) Reply {
	r.delay = d
	return r
}

func (r Reply) isHTTPError() bool { return r.status != 0 }

func (r Reply) isFailure() bool { return r.failCode != "" }

// errorType is the error type OpenAI reports with an HTTP status.
func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "requests"
	case status == http.StatusForbidden:
		return "permission_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func encodeJSON(value any) (string, error) {
	switch value := value.(type) {
	case string:
		return value, nil
	case []byte:
		return string(value), nil
	case json.RawMessage:
		return string(value), nil
	}
	encoded, err := json.Marshal(value)
	if err != nil {
		return "", err
	}
	return string(encoded), nil
}

func nullIfEmpty(text string) any {
	if text == "" {
		return nil
	}
	return text
}
