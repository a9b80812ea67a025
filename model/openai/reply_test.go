package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/run"
)

func TestTextReplyWithUsage(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		b := setup(t, api)
		b.srv.Enqueue(fakeopenai.Text("The capital of France is Paris.").WithUsage(fakeopenai.Usage{
			InputTokens: 1200, OutputTokens: 80, CachedTokens: 1024, ReasoningTokens: 64,
		}))

		resp, err := call(t, b.model, stream, userRequest("Capital of France?"))
		require.NoError(t, err)
		require.Equal(t, "The capital of France is Paris.", resp.Content)
		require.Empty(t, resp.ToolCalls)
		require.Equal(t, "stop", resp.StopReason)
		require.Equal(t, run.Metrics{
			InputTokens:     1200, // includes the cached prefix, as OpenAI counts it
			OutputTokens:    80,
			TotalTokens:     1280,
			CacheReadTokens: 1024,
			ReasoningTokens: 64,
		}, resp.Usage)

		if api == openai.APIResponses {
			require.Regexp(t, `^resp_`, resp.ProviderData["response_id"])
		}
	})
}

func TestTextStreamsInSeveralDeltas(t *testing.T) {
	t.Parallel()
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			b := setup(t, api)
			b.srv.Enqueue(fakeopenai.Text("one two three four five"))

			result := collect(t.Context(), b.model, userRequest("count"))
			require.NoError(t, result.err)
			require.Equal(t, 5, result.deltas, "a chunk per word, before the final reply")
			require.Equal(t, "one two three four five", result.content)
			require.Equal(t, "one two three four five", result.response.Content)
		})
	}
}

func TestToolCallReply(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		b := setup(t, api)
		// Long arguments: the fake streams them in pieces of a few runes, so
		// each call spans many chunks.
		weatherArgs := `{"city":"Zürich","unit":"celsius","days":[1,2,3],"note":"straße \"quoted\""}`
		b.srv.Enqueue(fakeopenai.ToolCalls(
			fakeopenai.ToolCall{ID: "call_weather", Name: "get_weather", Arguments: weatherArgs},
			fakeopenai.Call("get_time", map[string]string{"zone": "Europe/Zurich"}),
			fakeopenai.Call("ping", ""),
		).WithText("Let me check."))

		resp, err := call(t, b.model, stream, userRequest("Weather and time in Zürich?"))
		require.NoError(t, err)
		require.Equal(t, "Let me check.", resp.Content)
		require.Equal(t, "tool_calls", resp.StopReason)
		require.Len(t, resp.ToolCalls, 3)

		require.Equal(t, run.ToolCall{
			ID: "call_weather", Type: "function",
			Function: run.ToolCallFunction{Name: "get_weather", Arguments: weatherArgs},
		}, resp.ToolCalls[0])
		require.Equal(t, "get_time", resp.ToolCalls[1].Function.Name)
		require.JSONEq(t, `{"zone":"Europe/Zurich"}`, resp.ToolCalls[1].Function.Arguments)
		require.Regexp(t, `^call_fake_`, resp.ToolCalls[1].ID)
		require.Equal(t, "ping", resp.ToolCalls[2].Function.Name)
		require.Equal(t, "{}", resp.ToolCalls[2].Function.Arguments, "no arguments become an empty object")
		for _, toolCall := range resp.ToolCalls {
			require.True(t, json.Valid([]byte(toolCall.Function.Arguments)), "%s arguments are JSON", toolCall.Function.Name)
			require.NotEmpty(t, toolCall.ID, "every call has an id")
		}
		require.NotEqual(t, resp.ToolCalls[1].ID, resp.ToolCalls[2].ID)
	})
}

func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"summary":{"type":"string"},"celsius":{"type":"number"}},` +
		`"required":["summary","celsius"],"additionalProperties":false}`
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		b := setup(t, api)
		b.srv.Enqueue(fakeopenai.JSON(map[string]any{"summary": "sunny", "celsius": 21}))

		req := userRequest("Weather in Paris as JSON")
		req.ResponseFormat = &model.ResponseFormat{Name: "Weather report", Schema: json.RawMessage(schema), Strict: true}
		resp, err := call(t, b.model, stream, req)
		require.NoError(t, err)
		require.JSONEq(t, `{"summary":"sunny","celsius":21}`, resp.Content)

		sent := b.srv.Requests()[0]
		wantFormat := `{"type":"json_schema","name":"Weather_report","strict":true,"schema":` + schema + `}`
		if api == openai.APIChat {
			format := sent.Body["response_format"].(map[string]any)
			require.Equal(t, "json_schema", format["type"])
			require.JSONEq(t, wantFormat, jsonOf(t, mergeType(format["json_schema"], "json_schema")))
		} else {
			require.JSONEq(t, wantFormat, jsonOf(t, sent.Body["text"].(map[string]any)["format"]))
		}
		raw := string(sent.Raw)
		require.Less(t, strings.Index(raw, `"summary":{`), strings.Index(raw, `"celsius":{`),
			"properties keep their order, which the model follows")
	})
}

func TestNonStrictResponseFormat(t *testing.T) {
	t.Parallel()
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			b := setup(t, api)
			b.srv.Enqueue(fakeopenai.JSON(`{"ok":true}`))
			req := userRequest("json please")
			req.ResponseFormat = &model.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)}
			_, err := b.model.Invoke(t.Context(), req)
			require.NoError(t, err)
			require.Contains(t, string(b.srv.Requests()[0].Raw), `"strict":false`)
		})
	}
}

func TestReasoningReply(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		b := setup(t, api)
		b.srv.Enqueue(fakeopenai.Text("42").WithReasoning("Six times seven is forty-two."))

		resp, err := call(t, b.model, stream, userRequest("6*7?"))
		require.NoError(t, err)
		require.Equal(t, "42", resp.Content)
		require.Equal(t, "Six times seven is forty-two.", resp.ReasoningContent)
	})
}

// mergeType adds "type" to a json_schema object so Chat Completions'
// nesting compares with the Responses API's flat text.format.
func mergeType(object any, kind string) map[string]any {
	merged := map[string]any{"type": kind}
	for key, value := range object.(map[string]any) {
		merged[key] = value
	}
	return merged
}
