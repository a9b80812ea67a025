package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/run"
)

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

// historyRequest is a conversation after one tool call, with one tool on
// offer.
func historyRequest() *model.Request {
	return &model.Request{
		Messages: []*run.Message{
			{Role: run.RoleSystem, Content: "You are terse."},
			{Role: run.RoleUser, Content: "Weather in Paris?"},
			{Role: run.RoleAssistant, ToolCalls: []run.ToolCall{{
				ID: "call_1", Type: "function",
				Function: run.ToolCallFunction{Name: "get_weather", Arguments: `{"city":"Paris"}`},
			}}},
			{Role: run.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Content: "sunny, 21°C"},
			{Role: run.RoleAssistant, Content: "Sunny, 21°C."},
			{Role: run.RoleUser, Content: "And tomorrow?"},
		},
		Tools: []model.ToolDefinition{{
			Name: "get_weather", Description: "Current weather for a city", Parameters: json.RawMessage(weatherSchema),
		}},
	}
}

func TestChatRequestEncoding(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		b := setup(t, openai.APIChat)
		b.srv.Enqueue(fakeopenai.Text("Rain."))
		_, err := call(t, b.model, stream, historyRequest())
		require.NoError(t, err)

		requests := b.srv.Requests()
		require.Len(t, requests, 1)
		sent := requests[0]
		require.Equal(t, "/v1/chat/completions", sent.Path)
		require.Equal(t, "Bearer sk-test", sent.Header.Get("Authorization"))
		require.Equal(t, "gpt-test", sent.Body["model"])
		require.JSONEq(t, `[
			{"role":"system","content":"You are terse."},
			{"role":"user","content":"Weather in Paris?"},
			{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"sunny, 21°C"},
			{"role":"assistant","content":"Sunny, 21°C."},
			{"role":"user","content":"And tomorrow?"}
		]`, jsonOf(t, sent.Body["messages"]))
		require.JSONEq(t, `[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city","parameters":`+weatherSchema+`}}]`,
			jsonOf(t, sent.Body["tools"]))
		require.NotContains(t, sent.Body, "tool_choice", "auto is the server's default")
		require.NotContains(t, sent.Body, "response_format")
		require.NotContains(t, sent.Body, "temperature")
		if stream {
			require.Equal(t, true, sent.Body["stream"])
			require.JSONEq(t, `{"include_usage":true}`, jsonOf(t, sent.Body["stream_options"]), "or the stream reports no usage")
		} else {
			require.NotContains(t, sent.Body, "stream")
		}
	}
}

func TestResponsesRequestEncoding(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		b := setup(t, openai.APIResponses)
		b.srv.Enqueue(fakeopenai.Text("Rain."))
		_, err := call(t, b.model, stream, historyRequest())
		require.NoError(t, err)

		sent := b.srv.Requests()[0]
		require.Equal(t, "/v1/responses", sent.Path)
		require.Equal(t, "gpt-test", sent.Body["model"])
		require.JSONEq(t, `[
			{"role":"system","content":"You are terse."},
			{"role":"user","content":"Weather in Paris?"},
			{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
			{"type":"function_call_output","call_id":"call_1","output":"sunny, 21°C"},
			{"role":"assistant","content":"Sunny, 21°C."},
			{"role":"user","content":"And tomorrow?"}
		]`, jsonOf(t, sent.Body["input"]))
		require.JSONEq(t, `[{"type":"function","name":"get_weather","description":"Current weather for a city","strict":false,"parameters":`+weatherSchema+`}]`,
			jsonOf(t, sent.Body["tools"]))
		require.NotContains(t, sent.Body, "tool_choice")
		require.NotContains(t, sent.Body, "text")
		require.NotContains(t, sent.Body, "previous_response_id", "the whole history is sent")
		require.Equal(t, stream, sent.Body["stream"] == true)
	}
}

func TestToolChoice(t *testing.T) {
	t.Parallel()
	cases := []struct {
		choice        string
		wantChat      string
		wantResponses string
	}{
		{"auto", `"auto"`, `"auto"`},
		{"none", `"none"`, `"none"`},
		{"required", `"required"`, `"required"`},
		{"get_weather", `{"type":"function","function":{"name":"get_weather"}}`, `{"type":"function","name":"get_weather"}`},
	}
	for _, api := range apis {
		b := setup(t, api)
		for _, tc := range cases {
			b.srv.Enqueue(fakeopenai.Text("ok"))
			req := historyRequest()
			req.ToolChoice = tc.choice
			_, err := b.model.Invoke(t.Context(), req)
			require.NoError(t, err)
			requests := b.srv.Requests()
			want := tc.wantChat
			if api == openai.APIResponses {
				want = tc.wantResponses
			}
			require.JSONEq(t, want, jsonOf(t, requests[len(requests)-1].Body["tool_choice"]), "%s %s", api, tc.choice)
		}
	}
}

func TestUserImagesAndContentParts(t *testing.T) {
	t.Parallel()
	messages := []*run.Message{
		{Role: run.RoleDeveloper, Content: "Describe images."},
		{Role: run.RoleUser, Content: "What is this?", Images: []run.Image{
			{URL: "https://example.com/cat.png", Detail: "low"},
			{Content: []byte("\x89PNG\r\n\x1a\n"), MimeType: "image/png"},
		}},
		{Role: run.RoleUser, Content: []any{map[string]any{"type": "text", "text": "first"}, map[string]any{"type": "text", "text": "second"}}},
	}
	wantChat := `[
		{"role":"developer","content":"Describe images."},
		{"role":"user","content":[
			{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"https://example.com/cat.png","detail":"low"}},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
		{"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]}
	]`
	wantResponses := `[
		{"role":"developer","content":"Describe images."},
		{"role":"user","content":[
			{"type":"input_text","text":"What is this?"},
			{"type":"input_image","image_url":"https://example.com/cat.png","detail":"low"},
			{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}]},
		{"role":"user","content":"first\nsecond"}
	]`
	for _, api := range apis {
		b := setup(t, api)
		b.srv.Enqueue(fakeopenai.Text("A cat."))
		_, err := b.model.Invoke(t.Context(), &model.Request{Messages: messages})
		require.NoError(t, err)
		sent := b.srv.Requests()[0]
		if api == openai.APIChat {
			require.JSONEq(t, wantChat, jsonOf(t, sent.Body["messages"]))
		} else {
			require.JSONEq(t, wantResponses, jsonOf(t, sent.Body["input"]))
		}
	}
}

func TestRequestErrorsBeforeSending(t *testing.T) {
	t.Parallel()
	bad := []*model.Request{
		{Messages: []*run.Message{{Role: "narrator", Content: "Once upon a time"}}},
		{Messages: []*run.Message{{Role: run.RoleUser, Content: "hi"}}, Tools: []model.ToolDefinition{{Name: "broken", Parameters: json.RawMessage(`[1]`)}}},
		{Messages: []*run.Message{{Role: run.RoleUser, Content: "hi"}}, ResponseFormat: &model.ResponseFormat{Name: "x", Schema: json.RawMessage(`"nope"`)}},
		{Messages: []*run.Message{{Role: run.RoleUser, Content: "hi", Images: []run.Image{{Filepath: "/tmp/cat.png"}}}}},
	}
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		b := setup(t, api)
		for _, req := range bad {
			_, err := call(t, b.model, stream, req)
			require.Error(t, err)
		}
		require.Empty(t, b.srv.Requests(), "nothing is sent")
	})
}
