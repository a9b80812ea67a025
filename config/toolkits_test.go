package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
