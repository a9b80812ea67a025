package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/run"
)

// TestCalculatorAndTimeToolkits: an agent listing the calculator and time
// toolkits gets their tools, flagged as its entries say, and its model's
// calls are answered by them.
func TestCalculatorAndTimeToolkits(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.New(t)
	file := mustParse(t, fmt.Sprintf(`db: sqlite://%s
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - id: maths
    model: fake
    tools: [calculator, time, {name: square_root, requires_confirmation: true}]
`, filepath.Join(t.TempDir(), "os.db"), fake.URL), nil)
	built, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = built.Close() })

	fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("multiply", `{"a":6,"b":7}`), fakeopenai.Call("get_current_time", `{"timezone":"UTC"}`)))
	fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("square_root", `{"n":9}`)))
	out, err := built.Agents["maths"].Run(t.Context(), &run.Input{InputContent: "6 × 7, the time, √9"})
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, out.Status, "square_root waits for a confirmation, as its entry says")
	require.JSONEq(t, `{"operation":"multiply","result":42}`, *out.Tools[0].Result)
	require.True(t, strings.Contains(*out.Tools[1].Result, `"timezone":"UTC"`), *out.Tools[1].Result)
	require.Equal(t, "square_root", out.Tools[2].ToolName)
	require.Nil(t, out.Tools[2].Result)
}

// TestToolkitSettings: a toolkit listed with its settings gets only the
// tools include_tools keeps, flagged as its lists say, and a show_result
// tool's result heads the run's content.
func TestToolkitSettings(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.New(t)
	file := mustParse(t, fmt.Sprintf(`db: sqlite://%s
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - id: maths
    model: fake
    tools:
      - calculator: {include_tools: [add, divide], show_result_tools: [add], requires_confirmation_tools: [divide], cache_results: true, cache_ttl: 60}
      - time
`, filepath.Join(t.TempDir(), "os.db"), fake.URL), nil)
	require.JSONEq(t, `{"include_tools":["add","divide"],"show_result_tools":["add"],"requires_confirmation_tools":["divide"],"cache_results":true,"cache_ttl":60}`,
		string(file.Agents[0].ToolkitSettings["calculator"]))
	built, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = built.Close() })

	fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("add", `{"a":2,"b":3}`)))
	fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("multiply", `{"a":2,"b":3}`)))
	fake.Enqueue(fakeopenai.Text("Five."))
	out, err := built.Agents["maths"].Run(t.Context(), &run.Input{InputContent: "2 + 3"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "{\"operation\":\"add\",\"result\":5}\n\nFive.", out.Content, "the shown result heads the answer")
	require.True(t, *out.Tools[1].ToolCallError, "multiply is not among include_tools")

	fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("divide", `{"a":1,"b":0}`)))
	out, err = built.Agents["maths"].Run(t.Context(), &run.Input{InputContent: "1 / 0"})
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, out.Status, "divide waits for a confirmation, as requires_confirmation_tools says")
}

// TestCodeMode: with code_mode, the model sees run_code alone and its
// program calls the agent's toolkits as functions.
func TestCodeMode(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.New(t)
	file := mustParse(t, fmt.Sprintf(`db: sqlite://%s
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - id: maths
    model: fake
    tools: [calculator]
    code_mode: {max_tool_calls: 5, timeout_seconds: 10}
`, filepath.Join(t.TempDir(), "os.db"), fake.URL), nil)
	require.Equal(t, &CodeMode{MaxToolCalls: 5, Timeout: 10 * time.Second, Line: 8}, file.Agents[0].CodeMode)
	built, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = built.Close() })

	fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("run_code", map[string]string{"code": `multiply(a=add(a=2, b=3)["result"], b=4)["result"]`})))
	fake.Enqueue(fakeopenai.Text("20"))
	out, err := built.Agents["maths"].Run(t.Context(), &run.Input{InputContent: "(2 + 3) × 4"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Len(t, out.Tools, 3)
	require.Equal(t, "run_code", out.Tools[2].ToolName)
	require.Equal(t, "20", *out.Tools[2].Result)
	require.Equal(t, []string{"add", "multiply"}, []string{out.Tools[0].ToolName, out.Tools[1].ToolName})

	for yaml, want := range map[string]string{
		"agents:\n  - id: a\n    code_mode: true\n":                                    `agnogo.yaml:3: code_mode in agent "a" gives the model run_code to call the agent's tools, but it has none`,
		"agents:\n  - id: a\n    tools: [time]\n    code_mode: {max_step: 3}\n":        `agnogo.yaml:4: unknown key "max_step" in code_mode in agent "a"; did you mean "max_steps"?`,
		"agents:\n  - id: a\n    tools: [time]\n    code_mode: yes please\n":           `agnogo.yaml:4: code_mode in agent "a": want true or false`,
		"agents:\n  - id: a\n    type: claude\n    code_mode: true\n":                  `key "code_mode" in agent "a" is for agnogo agents`,
		"agents:\n  - id: a\n    tools: [time]\n    code_mode: {timeout_seconds: 0}\n": `timeout_seconds in code_mode in agent "a": want a number from 0.001`,
	} {
		_, err := parse([]byte(yaml), "agnogo.yaml", env(nil))
		require.ErrorContains(t, err, want, yaml)
	}
}
