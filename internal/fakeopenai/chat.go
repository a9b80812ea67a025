package fakeopenai

import (
	"net/http"
	"regexp"
)

// serveChat answers POST /v1/chat/completions: a chat.completion object, or
// chat.completion.chunk frames ending with `data: [DONE]` when the request
// streams.
func (e *exchange) serveChat() {
	if !e.streaming() {
		e.serveChatCompletion()
		return
	}
	id := e.server.nextID("chatcmpl-fake-")
	created := now()
	chunk := func(delta map[string]any, finishReason any) map[string]any {
		frame := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": e.model(),
			"system_fingerprint": "fp_fake",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finishReason}},
		}
		if e.includeUsage() {
			frame["usage"] = nil
		}
		return frame
	}

	e.startSSE()
	if !e.data(chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)) {
		return
	}
	for _, piece := range splitText(e.reply.reasoning) {
		if e.delta() || !e.data(chunk(map[string]any{"reasoning_content": piece}, nil)) {
			return
		}
	}
	for _, piece := range splitText(e.reply.text) {
		if e.delta() || !e.data(chunk(map[string]any{"content": piece}, nil)) {
			return
		}
	}
	if e.reply.isFailure() {
		e.data(map[string]any{"error": map[string]any{
			"message": e.reply.failMessage, "type": "server_error", "param": nil, "code": e.reply.failCode,
		}})
		return
	}
	calls := e.toolCalls()
	for index, call := range calls {
		opening := map[string]any{
			"index": index, "id": call.ID, "type": "function",
			"function": map[string]any{"name": call.Name, "arguments": ""},
		}
		if !e.data(chunk(map[string]any{"tool_calls": []any{opening}}, nil)) {
			return
		}
		for _, piece := range splitArguments(call.Arguments) {
			argument := map[string]any{"index": index, "function": map[string]any{"arguments": piece}}
			if e.delta() || !e.data(chunk(map[string]any{"tool_calls": []any{argument}}, nil)) {
				return
			}
		}
	}
	if e.stall() {
		return
	}
	if !e.data(chunk(map[string]any{}, chatFinishReason(calls))) {
		return
	}
	if e.includeUsage() {
		frame := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": e.model(),
			"system_fingerprint": "fp_fake", "choices": []any{}, "usage": chatUsage(e.usage()),
		}
		if !e.data(frame) {
			return
		}
	}
	_, _ = e.w.Write([]byte("data: [DONE]\n\n"))
	e.flush()
}

// serveChatCompletion answers a request that does not stream.
func (e *exchange) serveChatCompletion() {
	if e.beforeAnswer() {
		return
	}
	if e.reply.isFailure() {
		writeError(e.w, http.StatusInternalServerError, e.reply.failCode, e.reply.failMessage)
		return
	}
	calls := e.toolCalls()
	message := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if e.reply.text != "" || len(calls) == 0 {
		message["content"] = e.reply.text
	}
	if e.reply.reasoning != "" {
		message["reasoning_content"] = e.reply.reasoning
	}
	if len(calls) > 0 {
		toolCalls := make([]any, len(calls))
		for i, call := range calls {
			toolCalls[i] = map[string]any{
				"id": call.ID, "type": "function",
				"function": map[string]any{"name": call.Name, "arguments": call.Arguments},
			}
		}
		message["tool_calls"] = toolCalls
	}
	writeJSON(e.w, http.StatusOK, map[string]any{
		"id": e.server.nextID("chatcmpl-fake-"), "object": "chat.completion", "created": now(), "model": e.model(),
		"choices": []any{map[string]any{
			"index": 0, "message": message, "logprobs": nil, "finish_reason": chatFinishReason(calls),
		}},
		"usage":              chatUsage(e.usage()),
		"service_tier":       "default",
		"system_fingerprint": "fp_fake",
	})
}

// includeUsage reports whether a streaming request asked for the usage chunk
// (stream_options.include_usage), without which OpenAI sends none.
func (e *exchange) includeUsage() bool {
	options, _ := e.req.Body["stream_options"].(map[string]any)
	include, _ := options["include_usage"].(bool)
	return include
}

func chatFinishReason(calls []ToolCall) string {
	if len(calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func chatUsage(usage Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":     usage.InputTokens,
		"completion_tokens": usage.OutputTokens,
		"total_tokens":      usage.TotalTokens,
		"prompt_tokens_details": map[string]any{
			"cached_tokens": usage.CachedTokens, "audio_tokens": 0,
		},
		"completion_tokens_details": map[string]any{
			"reasoning_tokens": usage.ReasoningTokens, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
		},
	}
}

var wordPattern = regexp.MustCompile(`\S+\s*|\s+`)

// splitText cuts text into word-sized deltas that join back to it exactly.
func splitText(text string) []string {
	return wordPattern.FindAllString(text, -1)
}

// argumentPieceRunes is the size of the pieces tool-call arguments are
// streamed in: small enough that any real argument object spans several
// chunks.
const argumentPieceRunes = 7

// splitArguments cuts JSON arguments into pieces of a few runes, never
// splitting a rune, that join back to them exactly.
func splitArguments(arguments string) []string {
	var pieces []string
	runes := []rune(arguments)
	for start := 0; start < len(runes); start += argumentPieceRunes {
		pieces = append(pieces, string(runes[start:min(start+argumentPieceRunes, len(runes))]))
	}
	return pieces
}
