package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

func call(id, name, args string) run.ToolCall {
	return run.ToolCall{ID: id, Type: "function", Function: run.ToolCallFunction{Name: name, Arguments: args}}
}

func mustSet(t *testing.T, tools ...tool.Tool) *tool.Set {
	t.Helper()
	set, err := tool.NewSet(tools...)
	require.NoError(t, err)
	return set
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func addNumbers(ctx context.Context, args addArgs) (int, error) { return args.A + args.B, nil }

var add = tool.MustNew(tool.Config{Name: "add"}, addNumbers)

// tickingClock returns a clock that advances one second per reading.
func tickingClock(start time.Time) func() time.Time {
	var mu sync.Mutex
	now := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		current := now
		now = now.Add(time.Second)
		return current
	}
}

func TestExecuteRecordsExecution(t *testing.T) {
	t.Parallel()
	outcomes := tool.Execute(context.Background(), mustSet(t, add), []run.ToolCall{call("call_1", "add", `{"a":2,"b":3}`)},
		tool.ExecuteOptions{Now: tickingClock(time.Unix(1767000000, 0))})
	require.Len(t, outcomes, 1)
	out := outcomes[0]
	require.NoError(t, out.Err)
	require.False(t, out.Paused())
	require.True(t, out.Counted)
	require.Equal(t, "call_1", out.Call.ID)

	exec := out.Execution
	require.Equal(t, "call_1", exec.ToolCallID)
	require.Equal(t, "add", exec.ToolName)
	require.Equal(t, map[string]any{"a": 2.0, "b": 3.0}, exec.ToolArgs)
	require.Equal(t, "5", *exec.Result)
	require.False(t, *exec.ToolCallError)
	require.Equal(t, int64(1767000000), exec.CreatedAt)
	require.Equal(t, &run.ToolCallMetrics{StartTime: 1767000001, EndTime: 1767000002, Duration: 1}, exec.Metrics)
}

func TestExecuteFailures(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk on fire")
	failing := tool.MustNew(tool.Config{Name: "failing"}, func(ctx context.Context, args struct{}) (string, error) { return "", boom })
	panicking := fixedPanic{name: "panicking"}
	set := mustSet(t, add, failing, panicking)

	tests := []struct {
		name        string
		call        run.ToolCall
		wantIs      error
		wantAs      any
		wantResult  string
		wantCounted bool
		wantArgs    map[string]any
	}{
		{
			name:       "unknown tool lists the available ones",
			call:       call("c1", "subtract", `{}`),
			wantIs:     tool.ErrUnknownTool,
			wantResult: `unknown tool "subtract"; available tools: add, failing, panicking`,
			wantArgs:   map[string]any{},
		},
		{
			name:        "tool error",
			call:        call("c2", "failing", `{}`),
			wantIs:      boom,
			wantResult:  "disk on fire",
			wantCounted: true,
			wantArgs:    map[string]any{},
		},
		{
			name:        "invalid JSON arguments",
			call:        call("c3", "add", `{"a":`),
			wantAs:      new(*tool.ArgumentError),
			wantResult:  "invalid arguments for tool add: arguments are not valid JSON: unexpected end of JSON input",
			wantCounted: true,
		},
		{
			name:        "arguments not an object",
			call:        call("c4", "add", `[1,2]`),
			wantAs:      new(*tool.ArgumentError),
			wantResult:  "invalid arguments for tool add: arguments must be a JSON object, got an array",
			wantCounted: true,
		},
		{
			name:        "schema mismatch",
			call:        call("c5", "add", `{"a":"two","b":3}`),
			wantAs:      new(*tool.ArgumentError),
			wantResult:  `invalid arguments for tool add: property "a": type: two has type "string", want "integer"`,
			wantCounted: true,
			wantArgs:    map[string]any{"a": "two", "b": 3.0},
		},
		{
			name:        "panic in a hand-rolled tool",
			call:        call("c6", "panicking", `{}`),
			wantAs:      new(*tool.PanicError),
			wantResult:  "tool panicking panicked: hand-rolled panic",
			wantCounted: true,
			wantArgs:    map[string]any{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := tool.Execute(context.Background(), set, []run.ToolCall{tt.call}, tool.ExecuteOptions{})[0]
			if tt.wantIs != nil {
				require.ErrorIs(t, out.Err, tt.wantIs)
			}
			if tt.wantAs != nil {
				require.ErrorAs(t, out.Err, tt.wantAs)
			}
			require.Equal(t, tt.wantResult, *out.Execution.Result)
			require.True(t, *out.Execution.ToolCallError)
			require.Equal(t, tt.wantCounted, out.Counted)
			require.Equal(t, tt.wantArgs, out.Execution.ToolArgs)
			require.False(t, out.Paused())
		})
	}
}

// fixedPanic is a hand-rolled tool that panics, without the guard New adds.
type fixedPanic struct{ name string }

func (f fixedPanic) Spec() tool.Spec {
	return tool.Spec{Name: f.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (f fixedPanic) Call(ctx context.Context, args json.RawMessage) (string, error) {
	panic("hand-rolled panic")
}

func TestExecuteRunsCallsConcurrentlyInCallOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 5
		// Every call waits for all the others to arrive: run one at a time,
		// the first would wait forever and synctest reports the deadlock.
		var arrived sync.WaitGroup
		arrived.Add(n)
		barrier := tool.MustNew(tool.Config{Name: "barrier"}, func(ctx context.Context, args struct {
			N int `json:"n"`
		}) (string, error) {
			arrived.Done()
			arrived.Wait()
			return fmt.Sprintf("result %d", args.N), nil
		})
		var calls []run.ToolCall
		for i := range n {
			calls = append(calls, call(fmt.Sprintf("call_%d", i), "barrier", fmt.Sprintf(`{"n":%d}`, i)))
		}
		outcomes := tool.Execute(context.Background(), mustSet(t, barrier), calls, tool.ExecuteOptions{})
		require.Len(t, outcomes, n)
		for i, out := range outcomes {
			require.NoError(t, out.Err)
			require.Equal(t, fmt.Sprintf("call_%d", i), out.Execution.ToolCallID)
			require.Equal(t, fmt.Sprintf("result %d", i), *out.Execution.Result)
		}
	})
}

func TestExecuteBoundsParallelism(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var active, peak, started atomic.Int32
		release := make(chan struct{})
		blocking := tool.MustNew(tool.Config{Name: "blocking"}, func(ctx context.Context, args struct{}) (string, error) {
			started.Add(1)
			current := active.Add(1)
			for {
				old := peak.Load()
				if current <= old || peak.CompareAndSwap(old, current) {
					break
				}
			}
			<-release
			active.Add(-1)
			return "ok", nil
		})
		calls := make([]run.ToolCall, 5)
		for i := range calls {
			calls[i] = call(fmt.Sprintf("call_%d", i), "blocking", `{}`)
		}
		done := make(chan []tool.Outcome)
		go func() {
			done <- tool.Execute(context.Background(), mustSet(t, blocking), calls, tool.ExecuteOptions{MaxParallel: 2})
		}()

		synctest.Wait() // everything that can run is blocked
		require.Equal(t, int32(2), started.Load())
		require.Equal(t, int32(2), active.Load())

		release <- struct{}{} // one call finishes, the next one starts
		synctest.Wait()
		require.Equal(t, int32(3), started.Load())
		require.Equal(t, int32(2), active.Load())

		close(release)
		outcomes := <-done
		require.Equal(t, int32(5), started.Load())
		require.Equal(t, int32(2), peak.Load())
		for _, out := range outcomes {
			require.NoError(t, out.Err)
		}
	})
}

func TestExecuteToolCallLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		limit, used int
		wantRun     int
	}{
		{"no limit", 0, 0, 4},
		{"room for all", 10, 2, 4},
		{"room for some", 5, 3, 2},
		{"exhausted", 3, 3, 0},
		{"over", 3, 7, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int32
			counter := tool.MustNew(tool.Config{Name: "counter"}, func(ctx context.Context, args struct{}) (string, error) {
				ran.Add(1)
				return "ok", nil
			})
			calls := []run.ToolCall{
				call("c0", "counter", `{}`),
				call("c1", "nope", `{}`), // unknown tools do not count, as in Agno
				call("c2", "counter", `{}`),
				call("c3", "counter", `{}`),
				call("c4", "counter", `{}`),
			}
			outcomes := tool.Execute(context.Background(), mustSet(t, counter), calls, tool.ExecuteOptions{Limit: tt.limit, Used: tt.used})
			require.Equal(t, int32(tt.wantRun), ran.Load())
			require.ErrorIs(t, outcomes[1].Err, tool.ErrUnknownTool)
			require.False(t, outcomes[1].Counted)
			known := []tool.Outcome{outcomes[0], outcomes[2], outcomes[3], outcomes[4]}
			for i, out := range known {
				if i < tt.wantRun {
					require.NoError(t, out.Err, "call %d", i)
					require.True(t, out.Counted)
					continue
				}
				require.ErrorIs(t, out.Err, tool.ErrToolCallLimit, "call %d", i)
				require.False(t, out.Counted)
				require.True(t, *out.Execution.ToolCallError)
				require.Equal(t, "tool call limit reached: tool call counter not executed; don't try to execute it again", *out.Execution.Result)
				require.Nil(t, out.Execution.Metrics)
			}
		})
	}
}

func TestExecutePausesHumanInTheLoopCalls(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	body := func(ctx context.Context, args addArgs) (int, error) {
		ran.Add(1)
		return args.A + args.B, nil
	}
	inputFields := []run.UserInputField{{Name: "b", FieldType: "int", Description: "second number"}}
	confirm := tool.MustNew(tool.Config{Name: "confirm", RequiresConfirmation: true}, body)
	input := tool.MustNew(tool.Config{Name: "input", RequiresUserInput: true, UserInputSchema: inputFields}, body)
	external := tool.MustNew(tool.Config{Name: "external", ExternalExecution: true, StopAfterToolCall: true}, body)
	set := mustSet(t, confirm, input, external, add)

	outcomes := tool.Execute(context.Background(), set, []run.ToolCall{
		call("c0", "confirm", `{"a":1,"b":2}`),
		call("c1", "input", `{"a":1}`), // b comes from the person: not validated yet
		call("c2", "external", `{"a":1,"b":2}`),
		call("c3", "add", `{"a":1,"b":2}`),
		call("c4", "confirm", `{"a":"one"}`), // bound to fail: not worth asking
	}, tool.ExecuteOptions{})
	require.Zero(t, ran.Load(), "paused tools must not run")

	wantFlags := []struct{ confirmation, input, external bool }{
		{true, false, false},
		{false, true, false},
		{false, false, true},
	}
	for i, want := range wantFlags {
		out := outcomes[i]
		require.True(t, out.Paused(), "call %d", i)
		require.NoError(t, out.Err)
		require.True(t, out.Counted)
		exec := out.Execution
		require.Equal(t, want.confirmation, exec.RequiresConfirmation, "call %d", i)
		require.Equal(t, want.input, exec.RequiresUserInput, "call %d", i)
		require.Equal(t, want.external, exec.ExternalExecutionRequired, "call %d", i)
		require.Nil(t, exec.Result, "call %d", i)
		require.Nil(t, exec.ToolCallError, "call %d", i)
		require.Nil(t, exec.Metrics, "call %d", i)
		require.True(t, exec.Paused())
	}
	require.Equal(t, inputFields, outcomes[1].Execution.UserInputSchema)
	require.True(t, outcomes[2].Execution.StopAfterToolCall)

	require.False(t, outcomes[3].Paused())
	require.Equal(t, "3", *outcomes[3].Execution.Result)

	var argErr *tool.ArgumentError
	require.ErrorAs(t, outcomes[4].Err, &argErr)
	require.False(t, outcomes[4].Paused())
}

func TestExecuteResolvedRunsConfirmedCalls(t *testing.T) {
	t.Parallel()
	confirm := tool.MustNew(tool.Config{Name: "confirm", RequiresConfirmation: true}, addNumbers)
	input := tool.MustNew(tool.Config{Name: "input", RequiresUserInput: true}, addNumbers)
	external := tool.MustNew(tool.Config{Name: "external", ExternalExecution: true}, addNumbers)
	outcomes := tool.Execute(context.Background(), mustSet(t, confirm, input, external), []run.ToolCall{
		call("c0", "confirm", `{"a":1,"b":2}`),
		call("c1", "input", `{"a":1,"b":5}`),
		call("c2", "external", `{"a":1,"b":2}`),
	}, tool.ExecuteOptions{Resolved: true})
	require.Equal(t, "3", *outcomes[0].Execution.Result)
	require.Equal(t, "6", *outcomes[1].Execution.Result)
	require.True(t, outcomes[2].Paused(), "nobody but the caller runs an external tool")
	require.True(t, outcomes[2].Execution.ExternalExecutionRequired)
}

func TestExecuteStopsStartingCallsOnCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var ran atomic.Int32
		started := make(chan struct{})
		waiter := tool.MustNew(tool.Config{Name: "waiter"}, func(ctx context.Context, args struct{}) (string, error) {
			ran.Add(1)
			close(started)
			<-ctx.Done() // the running call sees the cancellation
			return "", ctx.Err()
		})
		done := make(chan []tool.Outcome)
		go func() {
			done <- tool.Execute(ctx, mustSet(t, waiter), []run.ToolCall{
				call("c0", "waiter", `{}`), call("c1", "waiter", `{}`), call("c2", "waiter", `{}`),
			}, tool.ExecuteOptions{MaxParallel: 1})
		}()
		<-started
		cancel()
		outcomes := <-done
		require.Equal(t, int32(1), ran.Load(), "no call may start after cancellation")
		for i, out := range outcomes {
			require.ErrorIs(t, out.Err, context.Canceled, "call %d", i)
			require.True(t, *out.Execution.ToolCallError)
		}
		require.Equal(t, "tool call waiter not started: context canceled", *outcomes[2].Execution.Result)
		require.NotNil(t, outcomes[0].Execution.Metrics, "the started call is timed")
		require.Nil(t, outcomes[1].Execution.Metrics)
	})
}

func TestExecuteWithCancelledContextRunsNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Int32
	counter := tool.MustNew(tool.Config{Name: "counter"}, func(ctx context.Context, args struct{}) (string, error) {
		ran.Add(1)
		return "ok", nil
	})
	outcomes := tool.Execute(ctx, mustSet(t, counter), []run.ToolCall{call("c0", "counter", `{}`), call("c1", "counter", `{}`)}, tool.ExecuteOptions{})
	require.Zero(t, ran.Load())
	for _, out := range outcomes {
		require.ErrorIs(t, out.Err, context.Canceled)
	}
}

func TestExecuteEmptyBatch(t *testing.T) {
	t.Parallel()
	require.Empty(t, tool.Execute(context.Background(), nil, nil, tool.ExecuteOptions{}))
	out := tool.Execute(context.Background(), nil, []run.ToolCall{call("c0", "any", `{}`)}, tool.ExecuteOptions{})
	require.Equal(t, `unknown tool "any": no tools are available`, *out[0].Execution.Result)
}
