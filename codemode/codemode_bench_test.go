package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/codemode"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tool"
)

// chainLength is how many dependent calls the benchmark's task needs: each
// call's argument is the previous call's result.
const chainLength = 10

type stepArgs struct {
	N int `json:"n" jsonschema:"the current value"`
}

type stepResult struct {
	N int `json:"n"`
}

// stepTool maps n to the next value of the chain.
func stepTool() tool.Tool {
	return tool.MustNew(tool.Config{Name: "step", Description: "The next value of the chain after n."},
		func(_ context.Context, a stepArgs) (stepResult, error) { return stepResult{N: (a.N*7 + 3) % 1000}, nil })
}

// chainAnswer is the value the task ends with.
func chainAnswer() int {
	n := 1
	for range chainLength {
		n = (n*7 + 3) % 1000
	}
	return n
}

// counted wraps a reply so the benchmark counts the model's turns.
func counted(turns *atomic.Int64, fn func(req *model.Request) scripted.Reply) scripted.Reply {
	return scripted.Respond(func(req *model.Request) scripted.Reply {
		turns.Add(1)
		return fn(req)
	})
}

// lastN reads the value in the last tool result the model was sent.
func lastN(req *model.Request) int {
	last := req.Messages[len(req.Messages)-1]
	if last.Role != run.RoleTool {
		return 1
	}
	text, _ := last.Content.(string)
	var out stepResult
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		// run_code returns the program's final value.
		n, _ := strconv.Atoi(text)
		return n
	}
	return out.N
}

// BenchmarkTenDependentCalls runs a task needing ten dependent tool calls
// with the tools given to the model directly (a model turn per call) and
// in CodeMode (one program), and reports the model turns each takes.
func BenchmarkTenDependentCalls(b *testing.B) {
	for _, mode := range []string{"direct", "codemode"} {
		b.Run(mode, func(b *testing.B) {
			var turns atomic.Int64
			var replies []scripted.Reply
			tools := []tool.Tool{stepTool()}
			if mode == "direct" {
				for range chainLength {
					replies = append(replies, counted(&turns, func(req *model.Request) scripted.Reply {
						return scripted.ToolCall("step", fmt.Sprintf(`{"n":%d}`, lastN(req)))
					}))
				}
			} else {
				program := fmt.Sprintf("n = 1\nfor i in range(%d):\n    n = step(n=n)[\"n\"]\nn", chainLength)
				replies = append(replies, counted(&turns, func(*model.Request) scripted.Reply { return code(program) }))
				cm, err := codemode.New(tools, codemode.Config{})
				require.NoError(b, err)
				tools = cm.Tools()
			}
			replies = append(replies, counted(&turns, func(req *model.Request) scripted.Reply {
				return scripted.Text(strconv.Itoa(lastN(req)))
			}))
			store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
			require.NoError(b, err)
			b.Cleanup(func() { _ = store.Close() })
			a, err := agent.New(agent.Config{ID: "chain", Model: scripted.New(replies, scripted.Loop(), scripted.NoRecord()), Store: store, Tools: tools})
			require.NoError(b, err)
			want := strconv.Itoa(chainAnswer())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out, err := a.Run(b.Context(), &run.Input{InputContent: "walk the chain from 1"})
				if err != nil || out.Content != want {
					b.Fatalf("run: %v, answer %v, want %s", err, out.Content, want)
				}
			}
			b.ReportMetric(float64(turns.Load())/float64(b.N), "model-turns/op")
		})
	}
}
