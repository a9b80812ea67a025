package fakeopenai

import (
	"maps"
	"net/http"
)

// serveResponses answers POST /v1/responses: a response object, or, when the
// request streams, the event sequence OpenAI sends: response.created,
// response.in_progress, then per output item output_item.added, its content
// events (content_part.added, output_text.delta…, output_text.done,
// content_part.done for a message; function_call_arguments.delta… and .done
// for a function call; reasoning_summary_* for reasoning) and
// output_item.done, and finally response.completed with the usage.
func (e *exchange) serveResponses() {
	id := e.server.nextID("resp_fake_")
	base := e.responseObject(id)
	if !e.streaming() {
		e.serveResponse(base)
		return
	}

	sequence := 0
	send := func(eventType string, payload map[string]any) bool {
		payload["sequence_number"] = sequence
		sequence++
		return e.event(eventType, payload)
	}

	e.startSSE()
	if !send("response.created", map[string]any{"response": base}) ||
		!send("response.in_progress", map[string]any{"response": base}) {
		return
	}
	if e.reply.isFailure() {
		failed := maps.Clone(base)
		failed["status"] = "failed"
		failed["error"] = map[string]any{"code": e.reply.failCode, "message": e.reply.failMessage}
		send("response.failed", map[string]any{"response": failed})
		return
	}

	items := e.outputItems()
	for index, item := range items {
		var ok bool
		switch item["type"] {
		case "reasoning":
			ok = e.streamReasoning(send, index, item)
		case "message":
			ok = e.streamMessage(send, index, item)
		default:
			ok = e.streamFunctionCall(send, index, item)
		}
		if !ok {
			return
		}
	}
	if e.stall() {
		return
	}
	completed := maps.Clone(base)
	completed["status"] = "completed"
	completed["output"] = items
	completed["usage"] = responsesUsage(e.usage())
	send("response.completed", map[string]any{"response": completed})
}

type sendFunc func(eventType string, payload map[string]any) bool

func (e *exchange) streamReasoning(send sendFunc, index int, item map[string]any) bool {
	id := item["id"]
	added := maps.Clone(item)
	added["summary"] = []any{}
	if !send("response.output_item.added", map[string]any{"output_index": index, "item": added}) ||
		!send("response.reasoning_summary_part.added", map[string]any{
			"item_id": id, "output_index": index, "summary_index": 0,
			"part": map[string]any{"type": "summary_text", "text": ""},
		}) {
		return false
	}
	for _, piece := range splitText(e.reply.reasoning) {
		if e.delta() || !send("response.reasoning_summary_text.delta", map[string]any{
			"item_id": id, "output_index": index, "summary_index": 0, "delta": piece,
		}) {
			return false
		}
	}
	return send("response.reasoning_summary_text.done", map[string]any{
		"item_id": id, "output_index": index, "summary_index": 0, "text": e.reply.reasoning,
	}) && send("response.reasoning_summary_part.done", map[string]any{
		"item_id": id, "output_index": index, "summary_index": 0,
		"part": map[string]any{"type": "summary_text", "text": e.reply.reasoning},
	}) && send("response.output_item.done", map[string]any{"output_index": index, "item": item})
}

func (e *exchange) streamMessage(send sendFunc, index int, item map[string]any) bool {
	id := item["id"]
	added := maps.Clone(item)
	added["status"] = "in_progress"
	added["content"] = []any{}
	if !send("response.output_item.added", map[string]any{"output_index": index, "item": added}) ||
		!send("response.content_part.added", map[string]any{
			"item_id": id, "output_index": index, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}},
		}) {
		return false
	}
	pieces := splitText(e.reply.text)
	if len(pieces) == 0 {
		pieces = []string{""}
	}
	for _, piece := range pieces {
		if e.delta() || !send("response.output_text.delta", map[string]any{
			"item_id": id, "output_index": index, "content_index": 0, "delta": piece, "logprobs": []any{},
		}) {
			return false
		}
	}
	return send("response.output_text.done", map[string]any{
		"item_id": id, "output_index": index, "content_index": 0, "text": e.reply.text, "logprobs": []any{},
	}) && send("response.content_part.done", map[string]any{
		"item_id": id, "output_index": index, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": e.reply.text, "annotations": []any{}},
	}) && send("response.output_item.done", map[string]any{"output_index": index, "item": item})
}

func (e *exchange) streamFunctionCall(send sendFunc, index int, item map[string]any) bool {
	id := item["id"]
	arguments, _ := item["arguments"].(string)
	added := maps.Clone(item)
	added["status"] = "in_progress"
	added["arguments"] = ""
	if !send("response.output_item.added", map[string]any{"output_index": index, "item": added}) {
		return false
	}
	for _, piece := range splitArguments(arguments) {
		if e.delta() || !send("response.function_call_arguments.delta", map[string]any{
			"item_id": id, "output_index": index, "delta": piece,
		}) {
			return false
		}
	}
	return send("response.function_call_arguments.done", map[string]any{
		"item_id": id, "output_index": index, "name": item["name"], "arguments": arguments,
	}) && send("response.output_item.done", map[string]any{"output_index": index, "item": item})
}

// serveResponse answers a request that does not stream.
func (e *exchange) serveResponse(base map[string]any) {
	if e.beforeAnswer() {
		return
	}
	if e.reply.isFailure() {
		writeError(e.w, http.StatusInternalServerError, e.reply.failCode, e.reply.failMessage)
		return
	}
	base["status"] = "completed"
	base["output"] = e.outputItems()
	base["usage"] = responsesUsage(e.usage())
	writeJSON(e.w, http.StatusOK, base)
}

// responseObject is the response object as response.created shows it.
func (e *exchange) responseObject(id string) map[string]any {
	return map[string]any{
		"id": id, "object": "response", "created_at": now(), "status": "in_progress",
		"error": nil, "incomplete_details": nil, "instructions": nil, "max_output_tokens": nil,
		"model": e.model(), "output": []any{}, "parallel_tool_calls": true, "previous_response_id": nil,
		"reasoning": map[string]any{"effort": nil, "summary": nil}, "store": true, "temperature": 1.0,
		"text": map[string]any{"format": map[string]any{"type": "text"}}, "tool_choice": "auto",
		"tools": []any{}, "top_p": 1.0, "truncation": "disabled", "usage": nil, "metadata": map[string]any{},
	}
}

// outputItems are the reply's output items, complete: reasoning, then the
// message, then the function calls.
func (e *exchange) outputItems() []map[string]any {
	var items []map[string]any
	if e.reply.reasoning != "" {
		items = append(items, map[string]any{
			"type": "reasoning", "id": e.server.nextID("rs_fake_"),
			"summary": []any{map[string]any{"type": "summary_text", "text": e.reply.reasoning}},
		})
	}
	calls := e.toolCalls()
	if e.reply.text != "" || len(calls) == 0 {
		items = append(items, map[string]any{
			"type": "message", "id": e.server.nextID("msg_fake_"), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": e.reply.text, "annotations": []any{}}},
		})
	}
	for _, call := range calls {
		items = append(items, map[string]any{
			"type": "function_call", "id": e.server.nextID("fc_fake_"), "call_id": call.ID,
			"name": call.Name, "arguments": call.Arguments, "status": "completed",
		})
	}
	return items
}

func responsesUsage(usage Usage) map[string]any {
	return map[string]any{
		"input_tokens":          usage.InputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": usage.CachedTokens},
		"output_tokens":         usage.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": usage.ReasoningTokens},
		"total_tokens":          usage.TotalTokens,
	}
}
