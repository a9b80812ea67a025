package fakeopenai_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// frame is one server-sent event.
type frame struct {
	event string
	data  string
}

func post(t *testing.T, url string, body string) *http.Response {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func readFrames(t *testing.T, body io.Reader) []frame {
	t.Helper()
	var frames []frame
	var current frame
	scanner := bufio.NewScanner(body)
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case line == "":
			if current.data != "" {
				frames = append(frames, current)
			}
			current = frame{}
		case strings.HasPrefix(line, "event: "):
			current.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			current.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	require.NoError(t, scanner.Err())
	return frames
}

func decode(t *testing.T, data string) map[string]any {
	t.Helper()
	var object map[string]any
	require.NoError(t, json.Unmarshal([]byte(data), &object), data)
	return object
}

func TestChatStreamWireFormat(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	srv.Enqueue(fakeopenai.ToolCalls(
		fakeopenai.ToolCall{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
		fakeopenai.Call("get_time", `{}`),
	).WithText("Checking.").WithUsage(fakeopenai.Usage{InputTokens: 10, OutputTokens: 5, CachedTokens: 4}))

	res := post(t, srv.URL+"/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", res.Header.Get("Content-Type"))
	frames := readFrames(t, res.Body)

	require.Equal(t, "[DONE]", frames[len(frames)-1].data, "the stream ends with data: [DONE]")
	frames = frames[:len(frames)-1]
	var content string
	arguments := map[float64]string{}
	argumentChunks := map[float64]int{}
	var finishReasons []any
	var usage map[string]any
	for _, f := range frames {
		require.Empty(t, f.event, "chat frames have no event line")
		chunk := decode(t, f.data)
		require.Equal(t, "chat.completion.chunk", chunk["object"])
		require.Equal(t, "m", chunk["model"])
		choices := chunk["choices"].([]any)
		if len(choices) == 0 {
			usage = chunk["usage"].(map[string]any)
			continue
		}
		require.Contains(t, chunk, "usage", "with include_usage every chunk has usage: null")
		choice := choices[0].(map[string]any)
		if reason := choice["finish_reason"]; reason != nil {
			finishReasons = append(finishReasons, reason)
		}
		delta := choice["delta"].(map[string]any)
		if text, ok := delta["content"].(string); ok {
			content += text
		}
		for _, raw := range asList(delta["tool_calls"]) {
			call := raw.(map[string]any)
			index := call["index"].(float64)
			arguments[index] += call["function"].(map[string]any)["arguments"].(string)
			argumentChunks[index]++
		}
	}
	require.Equal(t, "Checking.", content)
	require.Equal(t, `{"city":"Paris","unit":"celsius"}`, arguments[0])
	require.Equal(t, `{}`, arguments[1])
	require.Greater(t, argumentChunks[0], 3, "arguments span several chunks")
	require.Equal(t, []any{"tool_calls"}, finishReasons)
	require.EqualValues(t, 10, usage["prompt_tokens"])
	require.EqualValues(t, 5, usage["completion_tokens"])
	require.EqualValues(t, 15, usage["total_tokens"])
	require.EqualValues(t, 4, usage["prompt_tokens_details"].(map[string]any)["cached_tokens"])
}

func TestChatStreamWithoutIncludeUsageHasNoUsage(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	srv.Enqueue(fakeopenai.Text("hi"))
	res := post(t, srv.URL+"/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
	for _, f := range readFrames(t, res.Body) {
		require.NotContains(t, f.data, "usage")
	}
}

func TestResponsesStreamEventSequence(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	srv.Enqueue(fakeopenai.Text("Hello there").WithUsage(fakeopenai.Usage{InputTokens: 7, OutputTokens: 2, ReasoningTokens: 1}))

	res := post(t, srv.URL+"/responses", `{"model":"m","stream":true,"input":"hi"}`)
	require.Equal(t, http.StatusOK, res.StatusCode)
	frames := readFrames(t, res.Body)

	var types []string
	var text string
	for i, f := range frames {
		event := decode(t, f.data)
		require.Equal(t, f.event, event["type"], "the event line names the data's type")
		require.EqualValues(t, i, event["sequence_number"])
		types = append(types, f.event)
		if f.event == "response.output_text.delta" {
			text += event["delta"].(string)
		}
	}
	require.Equal(t, []string{
		"response.created",
		"response.in_progress",
		"response.output_item.added",
		"response.content_part.added",
		"response.output_text.delta",
		"response.output_text.delta",
		"response.output_text.done",
		"response.content_part.done",
		"response.output_item.done",
		"response.completed",
	}, types)
	require.Equal(t, "Hello there", text)

	completed := decode(t, frames[len(frames)-1].data)["response"].(map[string]any)
	require.Equal(t, "completed", completed["status"])
	require.Regexp(t, `^resp_fake_`, completed["id"])
	require.JSONEq(t, `{"input_tokens":7,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,`+
		`"output_tokens_details":{"reasoning_tokens":1},"total_tokens":9}`, mustJSON(t, completed["usage"]))
	output := completed["output"].([]any)
	require.Len(t, output, 1)
	require.Equal(t, "Hello there", output[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
}

func TestResponsesFunctionCallEvents(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	srv.Enqueue(fakeopenai.ToolCalls(fakeopenai.ToolCall{ID: "call_x", Name: "f", Arguments: `{"a":"bcdefghijk"}`}))

	res := post(t, srv.URL+"/responses", `{"model":"m","stream":true,"input":"hi"}`)
	var arguments string
	var types []string
	for _, f := range readFrames(t, res.Body) {
		event := decode(t, f.data)
		if len(types) == 0 || types[len(types)-1] != f.event {
			types = append(types, f.event)
		}
		switch f.event {
		case "response.output_item.added":
			require.JSONEq(t, `{"type":"function_call","call_id":"call_x","name":"f","arguments":"","status":"in_progress"}`,
				mustJSON(t, without(event["item"], "id")))
		case "response.function_call_arguments.delta":
			arguments += event["delta"].(string)
		case "response.output_item.done":
			require.Equal(t, `{"a":"bcdefghijk"}`, event["item"].(map[string]any)["arguments"])
		}
	}
	require.Equal(t, `{"a":"bcdefghijk"}`, arguments)
	require.Equal(t, []string{
		"response.created", "response.in_progress", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.output_item.done", "response.completed",
	}, types)
}

func TestNonStreamingReplies(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	srv.Enqueue(fakeopenai.Text("chat answer"), fakeopenai.Text("responses answer"))

	res := post(t, srv.URL+"/chat/completions", `{"model":"m","messages":[]}`)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	completion := decode(t, string(body))
	require.Equal(t, "chat.completion", completion["object"])
	message := completion["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	require.Equal(t, "chat answer", message["content"])

	res = post(t, srv.URL+"/responses", `{"model":"m","input":"hi"}`)
	body, err = io.ReadAll(res.Body)
	require.NoError(t, err)
	response := decode(t, string(body))
	require.Equal(t, "response", response["object"])
	require.Equal(t, "completed", response["status"])
}

func TestErrorReplies(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	srv.Enqueue(fakeopenai.ContextLengthExceeded(), fakeopenai.RawError(502, "bad gateway"))

	res := post(t, srv.URL+"/chat/completions", `{"model":"m","messages":[]}`)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	body, _ := io.ReadAll(res.Body)
	errorObject := decode(t, string(body))["error"].(map[string]any)
	require.Equal(t, "context_length_exceeded", errorObject["code"])
	require.Equal(t, "invalid_request_error", errorObject["type"])

	res = post(t, srv.URL+"/responses", `{"model":"m","input":"hi"}`)
	require.Equal(t, http.StatusBadGateway, res.StatusCode)
	body, _ = io.ReadAll(res.Body)
	require.Equal(t, "bad gateway", string(body))
}

func TestEmptyQueueAnswers500(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	res := post(t, srv.URL+"/chat/completions", `{"model":"m","messages":[]}`)
	require.Equal(t, http.StatusInternalServerError, res.StatusCode)
	body, _ := io.ReadAll(res.Body)
	require.Contains(t, string(body), "no reply enqueued for request #1")
	require.Contains(t, string(body), "fake_queue_empty")
	require.Len(t, srv.Requests(), 1, "the request is recorded all the same")
}

func TestUnknownRoute(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	srv.Enqueue(fakeopenai.Text("kept"))
	res := post(t, srv.URL+"/embeddings", `{}`)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Equal(t, 1, srv.Pending(), "an unknown route takes no reply")
}

func TestConcurrentRequestsAreRecorded(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	const clients = 20
	for i := range clients {
		srv.Enqueue(fakeopenai.Text(fmt.Sprint(i)))
	}
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			res, err := http.Post(srv.URL+"/chat/completions", "application/json",
				strings.NewReader(fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"%d"}]}`, i)))
			if err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
			}
		})
	}
	wg.Wait()
	requests := srv.Requests()
	require.Len(t, requests, clients)
	seen := map[string]bool{}
	for _, req := range requests {
		require.Equal(t, "/v1/chat/completions", req.Path)
		seen[req.Body["messages"].([]any)[0].(map[string]any)["content"].(string)] = true
	}
	require.Len(t, seen, clients)
	require.Zero(t, srv.Pending())
}

func asList(value any) []any {
	list, _ := value.([]any)
	return list
}

func without(value any, key string) map[string]any {
	object := map[string]any{}
	for k, v := range value.(map[string]any) {
		if k != key {
			object[k] = v
		}
	}
	return object
}

func mustJSON(t *testing.T, value any) string {
	t.Helper()
	encoded, err := json.Marshal(value)
	require.NoError(t, err)
	return string(encoded)
}
