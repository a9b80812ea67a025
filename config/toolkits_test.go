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
