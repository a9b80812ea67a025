package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/run"
)

func TestParseNativeAgentKeys(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
models:
  cheap: {provider: openai, id: gpt-5-nano, prices: {input: 0.1, output: 0.4, cache_read: 0.01}}
  claude: {provider: anthropic, id: claude-haiku-4-5, prices: {input: 1, output: 5, cache_read: 0.1, cache_write: 1.25}}
agents:
  - id: a
    model: openai:gpt-5-mini
    offload_tool_results: true
    offload_threshold: 4000
    enable_user_memories: true
    memory_model: cheap
    max_model_media_bytes: 0
    session_state: {cart: [], currency: EUR}
    tools:
      - workspace
      - user_control_flow_tools
      - {name: run_shell, requires_confirmation: false, stop_after_tool_call: true}
      - name: get_weather
        description: Weather of a city.
        parameters: {type: object, properties: {city: {type: string}}, required: [city]}
        external_execution: true
      - {name: ask_address, requires_user_input: true, user_input_fields: [street],
         parameters: '{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}'}
    workspace: {root: ., max_read_bytes: 64KB, max_shell_output_bytes: 1000, shell_timeout_seconds: 1.5}
  - id: b
    model: claude
    enable_agentic_memory: true
  - id: c
    model: claude
    update_memory_on_run: true
    add_memories_to_context: false
  - id: d
`, nil)
	a, b, c, d := file.Agents[0], file.Agents[1], file.Agents[2], file.Agents[3]

	require.True(t, a.OffloadToolResults)
	require.Equal(t, 4000, a.OffloadThreshold)
	require.True(t, a.UpdateMemoryOnRun, "enable_user_memories is update_memory_on_run's alias")
	require.True(t, a.AddMemoriesToContext, "on by default when memories are enabled, as in Agno")
	require.Equal(t, file.Models["cheap"], a.ResolvedMemoryModel)
	require.Equal(t, int64(-1), a.MaxModelMediaBytes, "0 is no bound")
	require.Equal(t, map[string]any{"cart": []any{}, "currency": "EUR"}, a.SessionState)
	require.Equal(t, []string{ToolWorkspace, ToolUserControlFlow}, a.Tools)
	require.Equal(t, &Workspace{Root: ".", ConfirmWrites: true, MaxReadBytes: 64000, MaxShellOutputBytes: 1000, ShellTimeout: 1500 * time.Millisecond, Line: 24},
		a.Workspace)

	require.Len(t, a.ToolOptions, 3)
	shell, weather, address := a.ToolOptions[0], a.ToolOptions[1], a.ToolOptions[2]
	require.Equal(t, &ToolOptions{Name: "run_shell", RequiresConfirmation: new(false), StopAfterToolCall: new(true), Toolkit: ToolWorkspace, Line: 17}, shell)
	require.True(t, weather.Declared())
	require.Equal(t, "Weather of a city.", weather.Description)
	require.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, string(weather.Parameters))
	require.Equal(t, new(true), weather.ExternalExecution)
	require.True(t, address.Declared())
	require.Equal(t, []string{"street"}, address.UserInputFields)

	require.True(t, b.EnableAgenticMemory)
	require.True(t, b.AddMemoriesToContext)
	require.Nil(t, b.ResolvedMemoryModel)
	require.Equal(t, agent.DefaultOffloadThreshold, b.OffloadThreshold)
	require.Equal(t, agent.DefaultMaxModelMediaBytes, b.MaxModelMediaBytes)
	require.False(t, c.AddMemoriesToContext, "an explicit false wins")
	require.False(t, d.AddMemoriesToContext)

	require.Equal(t, &agent.Price{Input: 0.1, Output: 0.4, CacheRead: 0.01, CacheWrite: 0.1, CachedInInput: true}, file.Models["cheap"].Prices,
		"a cache price left out is the input price")
	require.Equal(t, &agent.Price{Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25}, file.Models["claude"].Prices,
		"Anthropic counts cached tokens apart from input")
	require.Equal(t, agent.PriceTable(nil), agentPrices(d), "no prices in the file: the built-in table")
	prices := agentPrices(a)
	require.Equal(t, *file.Models["cheap"].Prices, prices["gpt-5-nano"], "the memory model's prices")
	require.Equal(t, agent.DefaultPrices()["gpt-5-mini"], prices["gpt-5-mini"], "the built-in prices stay for the others")
}

func TestParseNativeAgentKeyErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"threshold without offloading", "agents:\n  - id: a\n    offload_threshold: 100\n",
			`agnogo.yaml:3: offload_threshold in agent "a" has no effect without offload_tool_results: true`},
		{"zero threshold", "agents:\n  - id: a\n    offload_tool_results: true\n    offload_threshold: 0\n",
			`agnogo.yaml:4: offload_threshold in agent "a": want a number of at least 1, got 0`},
		{"memory key and its alias", "agents:\n  - id: a\n    update_memory_on_run: true\n    enable_user_memories: true\n",
			`agnogo.yaml:4: update_memory_on_run and enable_user_memories (its alias) are both set in agent "a"; keep update_memory_on_run`},
		{"memory model without memories", "agents:\n  - id: a\n    memory_model: openai:gpt-5-nano\n",
			`agnogo.yaml:3: memory_model in agent "a" is the model update_memory_on_run asks for memories`},
		{"unknown memory model", "agents:\n  - id: a\n    update_memory_on_run: true\n    memory_model: tiny\n",
			`agnogo.yaml:4: unknown model "tiny" in memory_model of agent "a": not a key of models (none) nor provider:id`},
		{"quoted agentic memory", "agents:\n  - id: a\n    enable_agentic_memory: \"yes\"\n",
			`agnogo.yaml:3: enable_agentic_memory in agent "a": want true or false, got "yes"`},
		{"session state not a mapping", "agents:\n  - id: a\n    session_state: [a]\n",
			`agnogo.yaml:3: session_state in agent "a": want a mapping, such as {cart: [], currency: EUR}, got a list`},
		{"reasoning", "agents:\n  - id: a\n    reasoning: true\n",
			`agnogo.yaml:3: key "reasoning" in agent "a" is not supported for agnogo agents: agnogo agents have no separate reasoning step`},
		{"reasoning effort on an agnogo agent", "agents:\n  - id: a\n    reasoning_effort: high\n",
			`agnogo.yaml:3: key "reasoning_effort" in agent "a" is not supported for agnogo agents: agnogo's openai and anthropic models send no reasoning effort`},
		{"prices not a mapping", "models:\n  m: {provider: openai, id: g, prices: 3}\n",
			`agnogo.yaml:2: prices of model "m": want a mapping of USD per million tokens, such as {input: 0.25, output: 2, cache_read: 0.025}, got "3"`},
		{"unknown price", "models:\n  m: {provider: openai, id: g, prices: {input: 1, outptu: 2}}\n",
			`agnogo.yaml:2: unknown key "outptu" in prices of model "m"; did you mean "output"?`},
		{"negative price", "models:\n  m: {provider: openai, id: g, prices: {input: -1}}\n",
			`agnogo.yaml:2: input in prices of model "m": want a number from 0 to 100000, got -1`},
		{"unknown toolkit", "agents:\n  - id: a\n    tools: [web_serch]\n",
			`agnogo.yaml:3: unknown tool "web_serch" in agent "a"; the built-in toolkits are: workspace, user_control_flow_tools, calculator, time`},
		{"unknown toolkit with settings", "agents:\n  - id: a\n    tools: [{web_serch: {provider: tavily}}]\n",
			`agnogo.yaml:3: unknown tool "web_serch" in agent "a"`},
		{"unknown toolkit setting", "agents:\n  - id: a\n    tools: [calculator: {show_result_tool: [add]}]\n",
			`agnogo.yaml:3: tools in agent "a": calculator: settings: unknown key "show_result_tool"; the toolkit has no settings of its own, only include_tools,`},
		{"toolkit option naming no tool", "agents:\n  - id: a\n    tools:\n      - time: {requires_confirmation_tools: [now]}\n",
			`agnogo.yaml:4: tools in agent "a": requires_confirmation_tools: time has no tool "now"; its tools are get_current_time, convert_time`},
		{"settings on a toolkit that has a key of its own", "agents:\n  - id: a\n    tools: [workspace: {root: .}]\n",
			`agnogo.yaml:3: tools in agent "a": the workspace toolkit takes no settings here; list it by name`},
		{"a toolkit's tool as a toolkit", "agents:\n  - id: a\n    tools: [read_file]\n",
			`agnogo.yaml:3: tools in agent "a": "read_file" is a tool of the workspace toolkit, not a toolkit: list workspace (it brings all its tools), and add {name: read_file, …} to change the tool's flags`},
		{"tool entry without a name", "agents:\n  - id: a\n    tools: [{external_execution: true}]\n",
			`agnogo.yaml:3: tools[0] of agent "a" has no name; add name: followed by the tool's name`},
		{"bad tool name", "agents:\n  - id: a\n    tools: [{name: get weather, external_execution: true}]\n",
			`agnogo.yaml:3: tool "get weather" of agent "a": the name must be 1 to 64 letters, digits, '_' or '-'`},
		{"unknown tool key", "agents:\n  - id: a\n    tools: [{name: x, external_execution: true, requires_confirmaton: true}]\n",
			`agnogo.yaml:3: unknown key "requires_confirmaton" in tool "x" of agent "a"; did you mean "requires_confirmation"?`},
		{"declared tool with no way to run", "agents:\n  - id: a\n    tools:\n      - {name: get_weather, description: Weather.}\n",
			`agnogo.yaml:4: tool "get_weather" in agent "a" is not a tool of a listed toolkit, and agnogo has no code for it: declare how its calls are answered with external_execution: true`},
		{"toolkit tool without its toolkit", "agents:\n  - id: a\n    tools:\n      - {name: read_file, requires_confirmation: true}\n",
			`(read_file is a tool of the workspace toolkit: add workspace to tools)`},
		{"external and user input", "agents:\n  - id: a\n    tools:\n      - {name: x, external_execution: true, requires_user_input: true}\n",
			`agnogo.yaml:4: tool "x" in agent "a": give external_execution or requires_user_input, not both`},
		{"description on a toolkit tool", "agents:\n  - id: a\n    tools:\n      - workspace\n      - {name: read_file, description: Reads.}\n",
			`agnogo.yaml:5: tool "read_file" in agent "a" is the workspace toolkit's: description and parameters are for tools declared in the file; set only its flags`},
		{"user input fields without user input", "agents:\n  - id: a\n    tools: [workspace, {name: write_file, user_input_fields: [path]}]\n",
			`agnogo.yaml:3: tool "write_file" in agent "a": user_input_fields needs requires_user_input: true`},
		{"unknown user input field", "agents:\n  - id: a\n    tools:\n      - {name: ask, requires_user_input: true, user_input_fields: [zip], parameters: {type: object, properties: {city: {type: string}}}}\n",
			`agnogo.yaml:4: tool "ask" in agent "a": user input field "zip" is not one of its arguments ([city])`},
		{"user input tool without parameters", "agents:\n  - id: a\n    tools:\n      - {name: ask, requires_user_input: true}\n",
			`agnogo.yaml:4: tool "ask" in agent "a": requires_user_input asks a person for the tool's arguments, but its parameters have no properties`},
		{"parameters not an object schema", "agents:\n  - id: a\n    tools:\n      - {name: x, external_execution: true, parameters: {type: string}}\n",
			`agnogo.yaml:4: tool "x" in agent "a": parameters schema must have type "object"`},
		{"parameters not a schema", "agents:\n  - id: a\n    tools:\n      - {name: x, external_execution: true, parameters: [city]}\n",
			`agnogo.yaml:4: parameters in tool "x" of agent "a": want a JSON Schema as a mapping`},
		{"tool listed twice", "agents:\n  - id: a\n    tools:\n      - {name: x, external_execution: true}\n      - {name: x, external_execution: true}\n",
			`agnogo.yaml:5: tool "x" in agent "a" is listed twice (first at line 4)`},
		{"tool named like the memory tool", "agents:\n  - id: a\n    enable_agentic_memory: true\n    tools: [{name: update_user_memory, external_execution: true}]\n",
			`agnogo.yaml:4: tool "update_user_memory" in agent "a": the name is taken by the tool enable_agentic_memory adds`},
		{"unknown workspace key", "agents:\n  - id: a\n    tools: [workspace]\n    workspace: {max_read_byte: 10}\n",
			`unknown key "max_read_byte" in workspace of agent "a"; did you mean "max_read_bytes"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tt.yaml), "agnogo.yaml", env(nil))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestBuildToolFlagsAndDeclaredTools runs an agent whose toolkit tool and
// declared tools pause the run as their entries say.
func TestBuildToolFlagsAndDeclaredTools(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("remember the milk\n"), 0o600))
	b := build(t, fmt.Sprintf(`
db: ${DB}
models:
  fake: {provider: openai, id: gpt-test, base_url: "${FAKE_URL}", api_key: k}
agents:
  - id: a
    model: fake
    tools:
      - workspace
      - {name: read_file, requires_confirmation: true}
      - {name: get_weather, description: Weather of a city., external_execution: true,
         parameters: {type: object, properties: {city: {type: string}}, required: [city]}}
      - user_control_flow_tools
    workspace: {root: %q}
`, root))
	b.fake.Enqueue(fakeopenai.ToolCalls(
		fakeopenai.Call("read_file", map[string]any{"path": "notes.txt"}),
		fakeopenai.Call("get_weather", map[string]any{"city": "Paris"}),
		fakeopenai.Call("get_user_input", map[string]any{"user_input_fields": []any{
			map[string]any{"field_name": "when", "field_type": "str", "field_description": "the day"}}}),
	))
	out, err := b.runAgent(t, "a", "Plan my day", "s1")
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, out.Status)
	require.Len(t, out.Tools, 3)
	require.True(t, out.Tools[0].RequiresConfirmation, "read_file now needs confirmation")
	require.True(t, out.Tools[1].ExternalExecutionRequired)
	require.True(t, out.Tools[2].RequiresUserInput)
	require.Equal(t, []run.UserInputField{{Name: "when", FieldType: "str", Description: "the day"}}, out.Tools[2].UserInputSchema)

	request := b.fake.Requests()[0]
	tools, _ := request.Body["tools"].([]any)
	var weather map[string]any
	for _, raw := range tools {
		function, _ := raw.(map[string]any)["function"].(map[string]any)
		if function["name"] == "get_weather" {
			weather = function
		}
	}
	require.Equal(t, "Weather of a city.", weather["description"])
	parameters, err := json.Marshal(weather["parameters"])
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, string(parameters))
	require.Contains(t, messageTexts(request)[0], "get_user_input", "the toolkit's instructions are in the system message")
}
