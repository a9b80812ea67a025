package anthropic_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/anthropic"
	"github.com/agnogo/agnogo/run"
)

var _ model.Model = (*anthropic.Model)(nil)

const testModelID = "claude-test"

// testTimeout and pollInterval bound the waits for the fake server to notice
// a client going away.
const (
	testTimeout  = 5 * time.Second
	pollInterval = 5 * time.Millisecond
)

// bundle is a model wired to a fresh fake server.
type bundle struct {
	srv   *fakeanthropic.Server
	model *anthropic.Model
}

func setup(t *testing.T, configure ...func(*anthropic.Config)) bundle {
	t.Helper()
	srv := fakeanthropic.New(t)
	cfg := anthropic.Config{ID: testModelID, APIKey: "test-key", BaseURL: srv.URL}
	for _, apply := range configure {
		apply(&cfg)
	}
	m, err := anthropic.New(cfg)
	require.NoError(t, err)
	return bundle{srv: srv, model: m}
}

// streamed is everything a Stream yielded.
type streamed struct {
	content, reasoning []string
	response           *model.Response
	err                error
}

func collect(t *testing.T, seq func(func(*model.Chunk, error) bool)) streamed {
	t.Helper()
	var out streamed
	for chunk, err := range seq {
		if err != nil {
			out.err = err
			return out
		}
		require.Nil(t, out.response, "a chunk came after the final one")
		if chunk.ContentDelta != "" {
			out.content = append(out.content, chunk.ContentDelta)
		}
		if chunk.ReasoningDelta != "" {
			out.reasoning = append(out.reasoning, chunk.ReasoningDelta)
		}
		if chunk.Response != nil {
			out.response = chunk.Response
		}
	}
	return out
}

func userRequest(text string) *model.Request {
	return &model.Request{Messages: []*run.Message{{Role: run.RoleUser, Content: text}}}
}

// jsonOf re-encodes a decoded request field for JSONEq.
func jsonOf(t *testing.T, value any) string {
	t.Helper()
	encoded, err := json.Marshal(value)
	require.NoError(t, err)
	return string(encoded)
}

func TestNewValidatesConfig(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "")

	_, err := anthropic.New(anthropic.Config{APIKey: "k"})
	require.ErrorContains(t, err, "Config.ID is required")

	_, err = anthropic.New(anthropic.Config{ID: testModelID})
	require.ErrorContains(t, err, "ANTHROPIC_API_KEY")

	_, err = anthropic.New(anthropic.Config{ID: testModelID, APIKey: "k", MaxRetries: -1})
	require.ErrorContains(t, err, "MaxRetries")

	_, err = anthropic.New(anthropic.Config{ID: testModelID, APIKey: "k", MaxTokens: -1})
	require.ErrorContains(t, err, "MaxTokens")

	m, err := anthropic.New(anthropic.Config{ID: testModelID, BaseURL: "http://127.0.0.1:1"})
	require.NoError(t, err, "a BaseURL needs no key")
	require.Equal(t, model.Info{ID: testModelID, Provider: "Anthropic"}, m.Info())
}

func TestAPIKeyDefaultsToEnvironment(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "env-key")
	srv := fakeanthropic.New(t)
	m, err := anthropic.New(anthropic.Config{ID: testModelID, BaseURL: srv.URL})
	require.NoError(t, err)
	srv.Enqueue(fakeanthropic.Text("hi"))

	_, err = m.Invoke(t.Context(), userRequest("hello"))
	require.NoError(t, err)
	headers := srv.Headers()
	require.Len(t, headers, 1)
	require.Equal(t, "Bearer env-key", headers[0].Get("Authorization"))
	require.NotEmpty(t, headers[0].Get("Anthropic-Version"))
}

func TestTextWithUsage(t *testing.T) {
	t.Parallel()
	usage := fakeanthropic.Usage{InputTokens: 12, OutputTokens: 7, CacheReadInputTokens: 300, CacheCreationInputTokens: 40}
	want := run.Metrics{InputTokens: 12, OutputTokens: 7, TotalTokens: 19, CacheReadTokens: 300, CacheWriteTokens: 40}

	t.Run("Invoke", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.srv.Enqueue(fakeanthropic.Text("Hello there, friend.").WithUsage(usage))

		response, err := b.model.Invoke(t.Context(), userRequest("hi"))
		require.NoError(t, err)
		require.Equal(t, &model.Response{Content: "Hello there, friend.", StopReason: "end_turn", Usage: want}, response)

		body := b.srv.Requests()[0]
		require.Equal(t, testModelID, body["model"])
		require.InDelta(t, anthropic.DefaultMaxTokens, body["max_tokens"], 0)
		require.NotContains(t, body, "stream")
		require.NotContains(t, body, "temperature")
		require.NotContains(t, body, "tools")
		require.NotContains(t, body, "tool_choice")
	})

	t.Run("Stream", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.srv.Enqueue(fakeanthropic.Text("Hello there, friend.").WithUsage(usage))

		got := collect(t, b.model.Stream(t.Context(), userRequest("hi")))
		require.NoError(t, got.err)
		require.Equal(t, []string{"Hello ", "there, ", "friend."}, got.content)
		require.Equal(t, &model.Response{Content: "Hello there, friend.", StopReason: "end_turn", Usage: want}, got.response)
		require.Equal(t, true, b.srv.Requests()[0]["stream"])
	})
}

func TestToolUseAssembly(t *testing.T) {
	t.Parallel()
	reply := fakeanthropic.Message(
		fakeanthropic.TextBlock("Let me check."),
		fakeanthropic.ToolUseBlock("get_weather", `{"city":"Paris","units":"metric","days":[1,2,3]}`),
		fakeanthropic.ToolUseBlock("get_time", `{"zone":"Europe/Paris — CET"}`),
	)
	check := func(t *testing.T, response *model.Response) {
		t.Helper()
		require.Equal(t, "Let me check.", response.Content)
		require.Equal(t, "tool_use", response.StopReason)
		require.Len(t, response.ToolCalls, 2)
		require.Equal(t, "toolu_fake_01", response.ToolCalls[0].ID)
		require.Equal(t, "function", response.ToolCalls[0].Type)
		require.Equal(t, "get_weather", response.ToolCalls[0].Function.Name)
		require.JSONEq(t, `{"city":"Paris","units":"metric","days":[1,2,3]}`, response.ToolCalls[0].Function.Arguments)
		require.Equal(t, "toolu_fake_02", response.ToolCalls[1].ID)
		require.Equal(t, "get_time", response.ToolCalls[1].Function.Name)
		require.JSONEq(t, `{"zone":"Europe/Paris — CET"}`, response.ToolCalls[1].Function.Arguments)
	}

	t.Run("Invoke", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.srv.Enqueue(reply)
		response, err := b.model.Invoke(t.Context(), userRequest("weather?"))
		require.NoError(t, err)
		check(t, response)
	})

	t.Run("Stream", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.srv.Enqueue(reply)
		got := collect(t, b.model.Stream(t.Context(), userRequest("weather?")))
		require.NoError(t, got.err)
		require.Equal(t, "Let me check.", strings.Join(got.content, ""), "tool input is not content")
		check(t, got.response)
	})
}

func TestRequestEncoding(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.Text("done"))
	failed := true
	request := &model.Request{
		Messages: []*run.Message{
			{Role: run.RoleSystem, Content: "You are terse."},
			{Role: run.RoleDeveloper, Content: "Use metric units."},
			{Role: run.RoleUser, Content: "Weather and time in Paris?"},
			{Role: run.RoleAssistant, Content: "Checking.", ToolCalls: []run.ToolCall{
				{ID: "toolu_1", Type: "function", Function: run.ToolCallFunction{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
				{ID: "toolu_2", Type: "function", Function: run.ToolCallFunction{Name: "get_time", Arguments: ""}},
			}},
			{Role: run.RoleTool, ToolCallID: "toolu_1", Content: "21°C, sunny"},
			{Role: run.RoleTool, ToolCallID: "toolu_2", Content: "clock unavailable", ToolCallError: &failed},
			{Role: run.RoleUser, Content: []any{
				map[string]any{"type": "text", "text": "Thanks."},
				map[string]any{"type": "text", "text": "And tomorrow?"},
			}},
		},
		Tools: []model.ToolDefinition{
			{Name: "get_weather", Description: "Weather for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"],"additionalProperties":false}`)},
			{Name: "get_time"},
		},
		ToolChoice: "auto",
	}

	_, err := b.model.Invoke(t.Context(), request)
	require.NoError(t, err)
	body := b.srv.Requests()[0]

	require.JSONEq(t, `[{"type":"text","text":"You are terse."},{"type":"text","text":"Use metric units."}]`, jsonOf(t, body["system"]))
	require.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"Weather and time in Paris?"}]},
		{"role":"assistant","content":[
			{"type":"text","text":"Checking."},
			{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}
		]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"21°C, sunny"}]},
			{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"clock unavailable"}],"is_error":true}
		]},
		{"role":"user","content":[{"type":"text","text":"Thanks."},{"type":"text","text":"And tomorrow?"}]}
	]`, jsonOf(t, body["messages"]))
	require.JSONEq(t, `[
		{"name":"get_weather","description":"Weather for a city.","input_schema":{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"],"additionalProperties":false}},
		{"name":"get_time","input_schema":{"type":"object","properties":{}}}
	]`, jsonOf(t, body["tools"]))
	require.JSONEq(t, `{"type":"auto"}`, jsonOf(t, body["tool_choice"]))
}

func TestToolChoice(t *testing.T) {
	t.Parallel()
	tools := []model.ToolDefinition{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []struct {
		choice string
		tools  []model.ToolDefinition
		want   string // "" when tool_choice is absent
	}{
		{choice: "", tools: tools, want: ""},
		{choice: "auto", tools: tools, want: `{"type":"auto"}`},
		{choice: "none", tools: tools, want: `{"type":"none"}`},
		{choice: "required", tools: tools, want: `{"type":"any"}`},
		{choice: "any", tools: tools, want: `{"type":"any"}`},
		{choice: "get_weather", tools: tools, want: `{"type":"tool","name":"get_weather"}`},
		{choice: "auto", tools: nil, want: ""},
	} {
		t.Run(tc.choice, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.srv.Enqueue(fakeanthropic.Text("ok"))
			request := userRequest("hi")
			request.Tools, request.ToolChoice = tc.tools, tc.choice
			_, err := b.model.Invoke(t.Context(), request)
			require.NoError(t, err)
			body := b.srv.Requests()[0]
			if tc.want == "" {
				require.NotContains(t, body, "tool_choice")
				return
			}
			require.JSONEq(t, tc.want, jsonOf(t, body["tool_choice"]))
		})
	}
}

func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"city":{"type":"string"},"temperature":{"type":"number"}},"required":["city","temperature"]}`
	answer := `{"city":"Paris","temperature":21.5}`
	request := func() *model.Request {
		r := userRequest("Weather in Paris as JSON")
		r.ResponseFormat = &model.ResponseFormat{Name: "WeatherReport", Schema: json.RawMessage(schema)}
		return r
	}
	reply := fakeanthropic.Message(fakeanthropic.TextBlock("Here it is."), fakeanthropic.ToolUseBlock("WeatherReport", answer))
	checkRequest := func(t *testing.T, body map[string]any) {
		t.Helper()
		tools := body["tools"].([]any)
		require.Len(t, tools, 1)
		tool := tools[0].(map[string]any)
		require.Equal(t, "WeatherReport", tool["name"])
		require.JSONEq(t, schema, jsonOf(t, tool["input_schema"]))
		require.JSONEq(t, `{"type":"tool","name":"WeatherReport"}`, jsonOf(t, body["tool_choice"]))
	}

	t.Run("Invoke", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.srv.Enqueue(reply)
		response, err := b.model.Invoke(t.Context(), request())
		require.NoError(t, err)
		require.JSONEq(t, answer, response.Content)
		require.Empty(t, response.ToolCalls)
		require.Equal(t, "end_turn", response.StopReason)
		checkRequest(t, b.srv.Requests()[0])
	})

	t.Run("Stream", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.srv.Enqueue(reply)
		got := collect(t, b.model.Stream(t.Context(), request()))
		require.NoError(t, got.err)
		require.Equal(t, "Here it is."+answer, strings.Join(got.content, ""), "the answer streams as content")
		require.Greater(t, len(got.content), 3)
		require.JSONEq(t, answer, got.response.Content)
		require.Empty(t, got.response.ToolCalls)
		require.Equal(t, "end_turn", got.response.StopReason)
		checkRequest(t, b.srv.Requests()[0])
	})

	t.Run("WithTools", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.srv.Enqueue(fakeanthropic.ToolUse("WeatherReport", `{"city":"x"}`))
		r := request()
		r.Tools = []model.ToolDefinition{{Name: "WeatherReport", Parameters: json.RawMessage(`{"type":"object"}`)}}
		r.ResponseFormat.Name = "Weather Report"
		response, err := b.model.Invoke(t.Context(), r)
		require.NoError(t, err)
		body := b.srv.Requests()[0]
		require.JSONEq(t, `{"type":"any"}`, jsonOf(t, body["tool_choice"]), "real tools stay callable")
		tools := body["tools"].([]any)
		require.Len(t, tools, 2)
		require.Equal(t, "Weather_Report", tools[1].(map[string]any)["name"])
		require.Len(t, response.ToolCalls, 1, "a call of the real tool stays a tool call")
		require.Empty(t, response.Content)
	})
}

func TestThinking(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.ThinkingText("The user greets me. I greet back.", "Hello!"), fakeanthropic.Text("Again."))

	got := collect(t, b.model.Stream(t.Context(), userRequest("hi")))
	require.NoError(t, got.err)
	require.Equal(t, "The user greets me. I greet back.", strings.Join(got.reasoning, ""))
	require.Greater(t, len(got.reasoning), 1)
	require.Equal(t, []string{"Hello!"}, got.content)
	require.Equal(t, "The user greets me. I greet back.", got.response.ReasoningContent)
	require.Equal(t, "Hello!", got.response.Content)
	require.Contains(t, got.response.ProviderData, anthropic.ThinkingBlocksKey)

	// The kept thinking block goes back with the assistant message, even after
	// a trip through JSON (a stored session).
	stored, err := json.Marshal(got.response.ProviderData)
	require.NoError(t, err)
	var providerData map[string]any
	require.NoError(t, json.Unmarshal(stored, &providerData))
	request := userRequest("hi")
	request.Messages = append(request.Messages,
		&run.Message{Role: run.RoleAssistant, Content: "Hello!", ProviderData: providerData},
		&run.Message{Role: run.RoleUser, Content: "again"},
	)
	_, err = b.model.Invoke(t.Context(), request)
	require.NoError(t, err)
	messages := b.srv.Requests()[1]["messages"].([]any)
	require.JSONEq(t, `{"role":"assistant","content":[
		{"type":"thinking","thinking":"The user greets me. I greet back.","signature":"sig_fake"},
		{"type":"text","text":"Hello!"}
	]}`, jsonOf(t, messages[1]))
}

func TestTemperatureAndMaxTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, func(cfg *anthropic.Config) {
		cfg.Temperature = new(0.2)
		cfg.MaxTokens = 1024
	})
	b.srv.Enqueue(fakeanthropic.Text("a"), fakeanthropic.Text("b"))

	_, err := b.model.Invoke(t.Context(), userRequest("hi"))
	require.NoError(t, err)
	request := userRequest("hi")
	request.Temperature = new(0.9)
	request.MaxTokens = 64000 // beyond what the SDK allows a non-streaming call by default
	_, err = b.model.Invoke(t.Context(), request)
	require.NoError(t, err)

	bodies := b.srv.Requests()
	require.InDelta(t, 0.2, bodies[0]["temperature"], 1e-9)
	require.InDelta(t, 1024, bodies[0]["max_tokens"], 0)
	require.InDelta(t, 0.9, bodies[1]["temperature"], 1e-9)
	require.InDelta(t, 64000, bodies[1]["max_tokens"], 0)
}

func TestImages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.Text("a cat"))
	request := &model.Request{Messages: []*run.Message{{
		Role:    run.RoleUser,
		Content: "What is this?",
		Images: []run.Image{
			{URL: "https://example.com/cat.png"},
			{Content: []byte("GIF89a"), Format: "gif"},
		},
	}}}
	_, err := b.model.Invoke(t.Context(), request)
	require.NoError(t, err)
	require.JSONEq(t, `[{"role":"user","content":[
		{"type":"text","text":"What is this?"},
		{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}},
		{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGODlh"}}
	]}]`, jsonOf(t, b.srv.Requests()[0]["messages"]))
}

func TestEncodingErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, request := range map[string]*model.Request{
		"nil":           nil,
		"bad arguments": {Messages: []*run.Message{{Role: run.RoleAssistant, ToolCalls: []run.ToolCall{{ID: "t", Function: run.ToolCallFunction{Name: "f", Arguments: "{not json"}}}}}},
		"bad schema":    {Messages: []*run.Message{{Role: run.RoleUser, Content: "x"}}, Tools: []model.ToolDefinition{{Name: "f", Parameters: json.RawMessage("{")}}},
		"unknown role":  {Messages: []*run.Message{{Role: "narrator", Content: "x"}}},
		"empty user":    {Messages: []*run.Message{{Role: run.RoleUser}}},
	} {
		_, err := b.model.Invoke(t.Context(), request)
		require.Error(t, err, name)
		require.ErrorContains(t, collect(t, b.model.Stream(t.Context(), request)).err, "encode anthropic request", name)
		require.False(t, errors.As(err, new(*model.Error)), "%s: not a provider error", name)
	}
	require.Empty(t, b.srv.Requests(), "nothing was sent")
}

func TestImageOnlyUserMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.Text("a cat"))
	request := &model.Request{Messages: []*run.Message{{
		Role:    run.RoleUser,
		Content: "",
		Images:  []run.Image{{URL: "https://example.com/cat.png"}},
	}}}
	_, err := b.model.Invoke(t.Context(), request)
	require.NoError(t, err)
	require.JSONEq(t, `[{"role":"user","content":[
		{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}
	]}]`, jsonOf(t, b.srv.Requests()[0]["messages"]))
}
