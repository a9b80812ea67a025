package codemode_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/codemode"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tool"
)

type pair struct {
	A int `json:"a" jsonschema:"the first number"`
	B int `json:"b" jsonschema:"the second number"`
}

type sum struct {
	Sum int `json:"sum"`
}

type city struct {
	City string `json:"city"`
}

// kit is the tools the tests' programs call, counting calls.
type kit struct {
	adds, sends atomic.Int64
}

func (k *kit) tools(t *testing.T, confirmSend bool) []tool.Tool {
	t.Helper()
	add := tool.MustNew(tool.Config{Name: "add", Description: "Add two numbers."}, func(_ context.Context, p pair) (sum, error) {
		k.adds.Add(1)
		return sum{Sum: p.A + p.B}, nil
	})
	weather := tool.MustNew(tool.Config{Name: "get_weather", Description: "The weather of a city."}, func(_ context.Context, c city) (string, error) {
		return "sunny in " + c.City, nil
	})
	send := tool.MustNew(tool.Config{Name: "send_report", Description: "Send a report.", RequiresConfirmation: confirmSend},
		func(_ context.Context, c city) (string, error) {
			k.sends.Add(1)
			return "sent " + c.City, nil
		})
	block := tool.MustNew(tool.Config{Name: "wait_forever"}, func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	return []tool.Tool{add, weather, send, block}
}

type bundle struct {
	agent *agent.Agent
	model *scripted.Model
	store storage.Store
	kit   *kit
}

func setup(t *testing.T, replies []scripted.Reply, cfg codemode.Config, confirmSend bool) *bundle {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "code.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	b := &bundle{model: scripted.New(replies), store: store, kit: &kit{}}
	cm, err := codemode.New(b.kit.tools(t, confirmSend), cfg)
	require.NoError(t, err)
	b.agent, err = agent.New(agent.Config{ID: "coder", Model: b.model, Store: store, Tools: cm.Tools()})
	require.NoError(t, err)
	return b
}

func code(program string) scripted.Reply {
	args, _ := json.Marshal(map[string]string{"code": program})
	return scripted.ToolCall(codemode.ToolName, string(args))
}

// lastToolResult is the result of run_code the model read last.
func lastToolResult(t *testing.T, m *scripted.Model) string {
	t.Helper()
	requests := m.Requests()
	messages := requests[len(requests)-1].Messages
	last := messages[len(messages)-1]
	require.Equal(t, run.RoleTool, last.Role)
	return last.Content.(string)
}

func TestProgramCallsToolsAsFunctions(t *testing.T) {
	b := setup(t, []scripted.Reply{code(`
total = 0
for i in range(3):
    total = add(a=total, b=i + 1)["sum"]
print("weather:", get_weather(city="Paris"))
{"total": total}
`), scripted.Text("Total 6.")}, codemode.Config{}, false)
	var events []run.Event
	for event, err := range b.agent.Stream(t.Context(), &run.Input{InputContent: "sum and weather", SessionID: "s1"}) {
		require.NoError(t, err)
		events = append(events, event)
	}
	require.Equal(t, "weather: sunny in Paris\n{\"total\":6}", lastToolResult(t, b.model))
	require.EqualValues(t, 3, b.kit.adds.Load())

	var names []string
	for _, e := range events {
		switch e := e.(type) {
		case *run.ToolCallStarted:
			names = append(names, "start "+e.Tool.ToolName)
		case *run.ToolCallCompleted:
			names = append(names, "done "+e.Tool.ToolName)
		}
	}
	require.Equal(t, []string{"start run_code", "start add", "done add", "start add", "done add", "start add", "done add",
		"start get_weather", "done get_weather", "done run_code"}, names, "each call of the program is a tool execution with its events")

	done := events[len(events)-1].(*run.RunCompleted)
	rec, err := b.store.GetRun(t.Context(), done.RunID, "")
	require.NoError(t, err)
	require.Len(t, rec.Run.Tools, 5, "the program's four calls, then run_code")
	codeCall := rec.Run.Tools[4]
	require.Equal(t, codemode.ToolName, codeCall.ToolName)
	require.Equal(t, codeCall.ToolCallID+".1", rec.Run.Tools[0].ToolCallID)
	require.Equal(t, map[string]any{"a": float64(0), "b": float64(1)}, rec.Run.Tools[0].ToolArgs)
	require.JSONEq(t, `{"sum":1}`, *rec.Run.Tools[0].Result)
	require.Equal(t, "get_weather", rec.Run.Tools[3].ToolName)
	require.Equal(t, "Total 6.", rec.Run.Content)
	require.Equal(t, []string{codemode.ToolName}, []string{b.model.Requests()[0].Tools[0].Name}, "the model sees run_code alone")
	require.Contains(t, b.model.Requests()[0].Tools[0].Description, "add(a: integer, b: integer): Add two numbers.")
}

func TestVariablesPersistWithinASession(t *testing.T) {
	b := setup(t, []scripted.Reply{code(`x = add(a=2, b=3)["sum"]`), scripted.Text("ok"), code(`x * 10`), scripted.Text("ok"),
		code(`x`), scripted.Text("ok")}, codemode.Config{}, false)
	_, err := b.agent.Run(t.Context(), &run.Input{InputContent: "set", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "(the program printed nothing)", lastToolResult(t, b.model))
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "use", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "50", lastToolResult(t, b.model), "x is still set in the session")
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "other", SessionID: "s2"})
	require.NoError(t, err)
	require.Contains(t, lastToolResult(t, b.model), "undefined: x", "another session has its own variables")
}

func TestSandboxAndLimits(t *testing.T) {
	for _, tc := range []struct {
		name, program string
		cfg           codemode.Config
		want          string
	}{
		{"no files", `open("/etc/passwd")`, codemode.Config{}, "undefined: open"},
		{"no imports", `load("os", "system")`, codemode.Config{}, "load not implemented"},
		{"steps", "while True:\n    pass\n", codemode.Config{MaxSteps: 10_000}, "too many steps"},
		{"time", `wait_forever()`, codemode.Config{Timeout: 50 * time.Millisecond}, "deadline exceeded"},
		{"output", `print("x" * 5000)`, codemode.Config{MaxOutputBytes: 100}, "[output cut: 4901 more bytes; print less]"},
		{"tool calls", "for i in range(5):\n    add(a=i, b=i)\n", codemode.Config{MaxToolCalls: 3}, "more than 3 tool calls"},
		{"bad arguments", `add(a="two", b=1)`, codemode.Config{}, `add failed: invalid arguments for tool add: property "a"`},
		{"syntax", `def (`, codemode.Config{}, "does not parse"},
		{"positional", `add(1, 2)`, codemode.Config{}, "call it with keyword arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, []scripted.Reply{code(tc.program), scripted.Text("ok")}, tc.cfg, false)
			out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "go"})
			require.NoError(t, err)
			require.Equal(t, run.StatusCompleted, out.Status, "a failed program is a tool result the model reads")
			require.Contains(t, lastToolResult(t, b.model), tc.want)
		})
	}
}

// TestConfirmationInsideAProgram: a call of a tool that needs confirmation
// pauses the run; once confirmed, the program runs again from the start,
// its earlier calls answered from the run's record instead of being made
// again, and the confirmed call is made once.
func TestConfirmationInsideAProgram(t *testing.T) {
	for _, confirm := range []bool{true, false} {
		t.Run(map[bool]string{true: "confirmed", false: "rejected"}[confirm], func(t *testing.T) {
			b := setup(t, []scripted.Reply{code(`
n = add(a=1, b=2)["sum"]
r = send_report(city="Paris " + str(n))
print(r)
`), scripted.Text("Reported.")}, codemode.Config{}, true)
			paused, err := b.agent.Run(t.Context(), &run.Input{InputContent: "report", SessionID: "s1", UserID: "ada"})
			require.NoError(t, err)
			require.Equal(t, run.StatusPaused, paused.Status)
			require.Len(t, paused.Requirements, 1)
			waiting := paused.Requirements[0].ToolExecution
			require.Equal(t, "send_report", waiting.ToolName)
			require.Equal(t, map[string]any{"city": "Paris 3"}, waiting.ToolArgs)
			require.EqualValues(t, 1, b.kit.adds.Load())
			require.Zero(t, b.kit.sends.Load())

			resolution := *waiting
			resolution.Confirmed = &confirm
			out, err := b.agent.ContinueRun(t.Context(), &agent.ContinueRequest{RunID: paused.RunID, UserID: "ada",
				Tools: []*run.ToolExecution{&resolution}})
			require.NoError(t, err)
			require.Equal(t, run.StatusCompleted, out.Status)
			require.EqualValues(t, 1, b.kit.adds.Load(), "the call made before the pause is not made again")
			result := lastToolResult(t, b.model)
			if confirm {
				require.EqualValues(t, 1, b.kit.sends.Load())
				require.Equal(t, "sent Paris 3", result)
			} else {
				require.Zero(t, b.kit.sends.Load())
				require.Contains(t, result, "The user rejected the call to send_report.")
			}
			var names []string
			for _, t := range out.Tools {
				names = append(names, t.ToolName)
			}
			require.Equal(t, []string{"add", "send_report", codemode.ToolName}, names)
			require.True(t, strings.HasSuffix(out.Tools[1].ToolCallID, ".2"))
		})
	}
}

func TestNewRefusesToolsNamedLikeBuiltins(t *testing.T) {
	lenTool := tool.MustNew(tool.Config{Name: "len"}, func(context.Context, struct{}) (string, error) { return "", nil })
	_, err := codemode.New([]tool.Tool{lenTool}, codemode.Config{})
	require.ErrorContains(t, err, `tool "len" is named like a Starlark built-in`)
	dashed := tool.MustNew(tool.Config{Name: "get-weather"}, func(context.Context, struct{}) (string, error) { return "", nil })
	underscored := tool.MustNew(tool.Config{Name: "get_weather"}, func(context.Context, struct{}) (string, error) { return "", nil })
	_, err = codemode.New([]tool.Tool{dashed, underscored}, codemode.Config{})
	require.ErrorContains(t, err, `tools "get-weather" and "get_weather" are both the function get_weather`)
	cm, err := codemode.New([]tool.Tool{dashed}, codemode.Config{})
	require.NoError(t, err)
	require.Contains(t, cm.Tools()[0].Spec().Description, "- get_weather()\n", "a tool whose name is no identifier is called by one")
}

// TestFunctionsKeptAcrossPrograms: a function a program keeps (an alias of
// a tool, a def calling one) calls the tool for the program that runs it.
func TestFunctionsKeptAcrossPrograms(t *testing.T) {
	b := setup(t, []scripted.Reply{code("plus = add\ndef double(n):\n    return add(a=n, b=n)[\"sum\"]\n"), scripted.Text("ok"),
		code(`[plus(a=1, b=1)["sum"], double(5)]`), scripted.Text("ok")}, codemode.Config{}, false)
	_, err := b.agent.Run(t.Context(), &run.Input{InputContent: "define", SessionID: "s1"})
	require.NoError(t, err)
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "use", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "[2,10]", lastToolResult(t, b.model))
	require.Len(t, out.Tools, 3, "the kept functions' calls are this run's tool executions")
	require.Equal(t, out.Tools[2].ToolCallID+".1", out.Tools[0].ToolCallID)
}
