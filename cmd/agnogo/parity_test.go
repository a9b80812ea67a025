package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// Tests of the agent options agnogo.yaml reaches, as a user of the server
// sees them: `agnogo serve` on a config file, a fake OpenAI-compatible
// model, HTTP requests.

// parityServer is `agnogo serve` on a config of one agent over a fake model.
type parityServer struct {
	*servingOS
	fake *fakeopenai.Server
	dir  string
}

// serveParity writes a config whose models are fake (gpt-test), priced
// (gpt-priced, with prices in the file) and known (gpt-5-mini, priced by
// the built-in table), all answered by one fake server, adds agents, and
// serves it.
func serveParity(t *testing.T, agents string) *parityServer {
	t.Helper()
	fake := fakeopenai.New(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "agnogo.yaml")
	yaml := fmt.Sprintf(`name: Parity OS
db: sqlite://%s
queue: {durable: false}
models:
  fake: {provider: openai, id: gpt-test, base_url: %[2]q, api_key: sk-fake}
  priced: {provider: openai, id: gpt-priced, base_url: %[2]q, api_key: sk-fake, prices: {input: 2, output: 10, cache_read: 0.5}}
  known: {provider: openai, id: gpt-5-mini, base_url: %[2]q, api_key: sk-fake}
agents:
%s`, filepath.Join(dir, "agnogo.db"), fake.URL, agents)
	require.NoError(t, os.WriteFile(config, []byte(yaml), 0o600))
	return &parityServer{servingOS: startServe(t, "--config", config), fake: fake, dir: dir}
}

// postRun runs agent with the form fields and returns the run JSON.
func (s *parityServer) postRun(t *testing.T, path string, fields url.Values) map[string]any {
	t.Helper()
	fields.Set("stream", "false")
	resp, err := http.PostForm(s.url+path, fields)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var out map[string]any
	require.NoError(t, json.Unmarshal(body, &out), string(body))
	return out
}

// toolMessages returns the content of each tool message of a model request.
func toolMessages(request fakeopenai.Request) []string {
	var contents []string
	for _, message := range chatMessages(request) {
		if message[0] == "tool" {
			contents = append(contents, message[1])
		}
	}
	return contents
}

var envelopeID = regexp.MustCompile(`^<result id="(res_[0-9a-f]+)" tool="read_file" lines=\d+ chars=(\d+)>`)

// TestParityOffloadedToolResult: a read_file result of some 43,000
// characters reaches the model as an envelope, and read_result returns the
// slice it asks for.
func TestParityOffloadedToolResult(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var file strings.Builder
	for i := range 400 {
		line := fmt.Sprintf("line %03d ", i)
		file.WriteString(line + strings.Repeat("x", 99-len(line)) + "\n")
	}
	require.Equal(t, 40_000, file.Len())
	require.NoError(t, os.WriteFile(filepath.Join(root, "big.txt"), []byte(file.String()), 0o600))
	s := serveParity(t, fmt.Sprintf(`  - id: reader
    model: fake
    tools: [workspace]
    workspace: {root: %q, max_read_bytes: 100KB}
    offload_tool_results: true
`, root))

	s.fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("read_file", map[string]any{"path": "big.txt"})), fakeopenai.Text("It is long."))
	first := s.postRun(t, "/agents/reader/runs", url.Values{"message": {"Read big.txt"}, "user_id": {"ada"}, "session_id": {"s1"}})
	require.Equal(t, "COMPLETED", first["status"])

	results := toolMessages(s.fake.Requests()[1])
	require.Len(t, results, 1)
	envelope := results[0]
	match := envelopeID.FindStringSubmatch(envelope)
	require.NotNil(t, match, "the model sees an envelope, not the result:\n%.300s", envelope)
	require.Greater(t, mustAtoi(t, match[2]), 40_000, "the envelope gives the full result's size")
	require.Less(t, len(envelope), 2_500, "the envelope is small")
	require.Contains(t, envelope, "line 000")
	require.NotContains(t, envelope, "line 300", "the tail is not sent")
	require.Contains(t, envelope, `read_result("`+match[1]+`")`)

	// The next turn reads a slice of it back.
	s.fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("read_result", map[string]any{"result_id": match[1], "offset": 300, "limit": 2})),
		fakeopenai.Text("Line 300 is x."),
	)
	second := s.postRun(t, "/agents/reader/runs", url.Values{"message": {"What is on line 300?"}, "user_id": {"ada"}, "session_id": {"s1"}})
	require.Equal(t, "COMPLETED", second["status"])
	slice := toolMessages(s.fake.Requests()[3])
	require.NotEmpty(t, slice)
	page := slice[len(slice)-1]
	require.True(t, strings.HasPrefix(page, "[lines 300-301 of "), page)
	require.Contains(t, page, "line 300 xx")
	require.Contains(t, page, "line 301 xx")
	require.NotContains(t, page, "line 299")
	require.NotContains(t, page, "line 302")
}

// TestParityRunCost: a served run on a model priced in the file, and one
// on a model of the built-in table, have metrics.cost.
func TestParityRunCost(t *testing.T) {
	t.Parallel()
	s := serveParity(t, `  - {id: priced, model: priced}
  - {id: known, model: known}
  - {id: unpriced, model: fake}
`)
	usage := fakeopenai.Usage{InputTokens: 1000, CachedTokens: 200, OutputTokens: 100}
	cost := func(agentID string) any {
		s.fake.Enqueue(fakeopenai.Text("hi").WithUsage(usage))
		out := s.postRun(t, "/agents/"+agentID+"/runs", url.Values{"message": {"hi"}})
		require.Equal(t, "COMPLETED", out["status"])
		metrics, ok := out["metrics"].(map[string]any)
		require.True(t, ok, "the run has metrics: %v", out)
		return metrics["cost"]
	}
	// The file's prices: 800 uncached input tokens at $2, 200 cached at
	// $0.50, 100 output at $10, per million.
	require.InDelta(t, (800*2+200*0.5+100*10)/1e6, cost("priced"), 1e-12)
	// gpt-5-mini's built-in price: $0.25, $0.025 cached, $2 output.
	require.InDelta(t, (800*0.25+200*0.025+100*2)/1e6, cost("known"), 1e-12)
	require.Nil(t, cost("unpriced"), "a model without a price has no cost")
}

// TestParityAgenticMemory: the model calls update_user_memory ("remember I
// live in Paris"); the memory is the user's (GET /memories), and the next
// run's system message carries it.
func TestParityAgenticMemory(t *testing.T) {
	t.Parallel()
	s := serveParity(t, `  - id: rememberer
    model: fake
    instructions: You are a travel assistant.
    enable_agentic_memory: true
`)
	s.fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("update_user_memory", map[string]any{"memory": "The user lives in Paris", "topics": []string{"location"}})),
		fakeopenai.Text("Noted: you live in Paris."),
	)
	out := s.postRun(t, "/agents/rememberer/runs", url.Values{"message": {"Remember I live in Paris"}, "user_id": {"ada"}})
	require.Equal(t, "COMPLETED", out["status"])
	offered, _ := s.fake.Requests()[0].Body["tools"].([]any)
	require.Len(t, offered, 1)
	require.Equal(t, "update_user_memory", offered[0].(map[string]any)["function"].(map[string]any)["name"])

	resp, body := s.get(t, "/memories?user_id=ada")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var listed struct {
		Data []struct {
			Memory  string   `json:"memory"`
			Topics  []string `json:"topics"`
			UserID  string   `json:"user_id"`
			AgentID string   `json:"agent_id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &listed), body)
	require.Len(t, listed.Data, 1, body)
	require.Equal(t, "The user lives in Paris", listed.Data[0].Memory)
	require.Equal(t, []string{"location"}, listed.Data[0].Topics)
	require.Equal(t, "ada", listed.Data[0].UserID)
	require.Equal(t, "rememberer", listed.Data[0].AgentID)
	_, body = s.get(t, "/memories?user_id=bob")
	require.NotContains(t, body, "Paris", "another user has no such memory")

	// A new session of the same user: the memory is in the system message.
	s.fake.Enqueue(fakeopenai.Text("In Paris."), fakeopenai.Text("I don't know."))
	s.postRun(t, "/agents/rememberer/runs", url.Values{"message": {"Where do I live?"}, "user_id": {"ada"}})
	system := chatMessages(s.fake.Requests()[2])[0]
	require.Equal(t, "system", system[0])
	require.Contains(t, system[1], "You are a travel assistant.")
	require.Contains(t, system[1], "The user lives in Paris")
	s.postRun(t, "/agents/rememberer/runs", url.Values{"message": {"Where do I live?"}, "user_id": {"bob"}})
	require.NotContains(t, chatMessages(s.fake.Requests()[3])[0][1], "Paris", "bob's runs do not see ada's memories")
}

// TestParityDeclaredToolsPauseAndContinue: a declared user-input tool, a
// declared external tool and get_user_input (user_control_flow_tools) from
// agnogo.yaml pause a run; POST …/continue with the tools filled in
// answers them, and the model reads the answers.
func TestParityDeclaredToolsPauseAndContinue(t *testing.T) {
	t.Parallel()
	s := serveParity(t, `  - id: planner
    model: fake
    tools:
      - user_control_flow_tools
      - name: ask_address
        description: Ask the user where to ship.
        requires_user_input: true
        user_input_fields: [city]
        parameters: {type: object, properties: {street: {type: string}, city: {type: string, description: the city}}, required: [street, city]}
      - name: get_weather
        description: Weather of a city, looked up by the client.
        external_execution: true
        parameters: {type: object, properties: {city: {type: string}}, required: [city]}
`)
	s.fake.Enqueue(fakeopenai.ToolCalls(
		fakeopenai.ToolCall{ID: "call_address", Name: "ask_address", Arguments: `{"street":"1 Rue de Rivoli"}`},
		fakeopenai.ToolCall{ID: "call_weather", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		fakeopenai.ToolCall{ID: "call_input", Name: "get_user_input",
			Arguments: `{"user_input_fields":[{"field_name":"date","field_type":"str","field_description":"the day to ship"}]}`},
	))
	paused := s.postRun(t, "/agents/planner/runs", url.Values{"message": {"Ship my parcel"}, "user_id": {"ada"}})
	require.Equal(t, "PAUSED", paused["status"])
	requirements, _ := paused["requirements"].([]any)
	require.Len(t, requirements, 3)
	tools, _ := paused["tools"].([]any)
	require.Len(t, tools, 3)
	byID := map[string]map[string]any{}
	for _, raw := range tools {
		execution := raw.(map[string]any)
		byID[execution["tool_call_id"].(string)] = execution
	}
	address, weather, input := byID["call_address"], byID["call_weather"], byID["call_input"]
	require.Equal(t, true, address["requires_user_input"])
	require.Equal(t, []any{map[string]any{"name": "city", "field_type": "str", "description": "the city", "value": nil}}, address["user_input_schema"])
	require.Equal(t, true, weather["external_execution_required"])
	require.Equal(t, true, input["requires_user_input"])
	require.Equal(t, "date", input["user_input_schema"].([]any)[0].(map[string]any)["name"])

	// The client answers: the user's values and the external result.
	address["user_input_schema"].([]any)[0].(map[string]any)["value"] = "Paris"
	weather["result"] = "Sunny, 24°C"
	input["user_input_schema"].([]any)[0].(map[string]any)["value"] = "tomorrow"
	answers, err := json.Marshal([]any{address, weather, input})
	require.NoError(t, err)
	s.fake.Enqueue(fakeopenai.Text("Shipping to 1 Rue de Rivoli, Paris, tomorrow; it will be sunny."))
	runID := paused["run_id"].(string)
	done := s.postRun(t, "/agents/planner/runs/"+runID+"/continue", url.Values{"tools": {string(answers)}, "user_id": {"ada"},
		"session_id": {paused["session_id"].(string)}})
	require.Equal(t, "COMPLETED", done["status"], "continued run: %v", done)
	require.Equal(t, "Shipping to 1 Rue de Rivoli, Paris, tomorrow; it will be sunny.", done["content"])

	results := toolMessages(s.fake.Requests()[1])
	require.Len(t, results, 3)
	require.JSONEq(t, `{"city":"Paris"}`, results[0], "a declared user-input tool's result is the user's values")
	require.Equal(t, "Sunny, 24°C", results[1], "an external tool's result is the client's")
	require.Equal(t, `User inputs retrieved: [{"name":"date","value":"tomorrow"}]`, results[2])
}

// mustAtoi reads a decimal number.
func mustAtoi(t *testing.T, text string) int {
	t.Helper()
	var n int
	_, err := fmt.Sscan(text, &n)
	require.NoError(t, err)
	return n
}
