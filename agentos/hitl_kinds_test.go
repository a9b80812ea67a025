package agentos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// bookArgs are the arguments of book_seats: the model names the city, a
// person the number of seats.
type bookArgs struct {
	City  string `json:"city" jsonschema:"the destination"`
	Seats int    `json:"seats" jsonschema:"how many seats to book"`
}

// seatsTool is a tool that needs user input; each call's arguments go to
// calls.
func seatsTool(t *testing.T, calls chan<- bookArgs) tool.Tool {
	t.Helper()
	booked, err := tool.New(tool.Config{Name: "book_seats", RequiresUserInput: true}, func(_ context.Context, args bookArgs) (string, error) {
		calls <- args
		return fmt.Sprintf("booked %d seats to %s", args.Seats, args.City), nil
	})
	require.NoError(t, err)
	return booked
}

// weatherTool is a tool the caller executes; the server must never run it,
// which executed counts.
func weatherTool(t *testing.T, executed *atomic.Int32) tool.Tool {
	t.Helper()
	weather, err := tool.New(tool.Config{Name: "get_weather", ExternalExecution: true}, func(context.Context, struct {
		City string `json:"city"`
	}) (string, error) {
		executed.Add(1)
		return "not executed here", nil
	})
	require.NoError(t, err)
	return weather
}

// toolsOf decodes the tools of a run as the API listed them, a fresh copy
// for each edit.
func toolsOf(t *testing.T, runJSON string) []map[string]any {
	t.Helper()
	var out struct {
		Tools []map[string]any `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(runJSON), &out))
	return out.Tools
}

// setInput sets the value of a user-input field of a tool execution.
func setInput(t *testing.T, execution map[string]any, name string, value any) {
	t.Helper()
	for _, field := range execution["user_input_schema"].([]any) {
		if f := field.(map[string]any); f["name"] == name {
			f["value"] = value
			return
		}
	}
	t.Fatalf("no user input field %s in %v", name, execution["user_input_schema"])
}

// continueWith posts /continue with tools (encoded unless already a
// string) and the other fields.
func (s *server) continueWith(t *testing.T, runID, sessionID string, tools any, fields url.Values) *http.Response {
	t.Helper()
	encoded, ok := tools.(string)
	if !ok {
		data, err := json.Marshal(tools)
		require.NoError(t, err)
		encoded = string(data)
	}
	form := url.Values{"tools": {encoded}, "session_id": {sessionID}}
	for k, v := range fields {
		form[k] = v
	}
	return s.postForm(t, "/agents/assistant/runs/"+runID+"/continue", form)
}

// requireRefused checks a refused request: its status, and a detail naming
// what to fix.
func requireRefused(t *testing.T, resp *http.Response, status int, want string) {
	t.Helper()
	body := readAll(t, resp)
	require.Equal(t, status, resp.StatusCode, body)
	var refused struct {
		Detail any `json:"detail"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &refused), body)
	require.Contains(t, fmt.Sprint(refused.Detail), want)
}

// runJSON reads a run as GET …/runs/{run_id} answers it.
func (s *server) runJSON(t *testing.T, runID, sessionID string) string {
	t.Helper()
	resp := s.get(t, "/agents/assistant/runs/"+runID+"?session_id="+sessionID)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return readAll(t, resp)
}

// lastToolMessage is the last tool result the model was sent.
func lastToolMessage(t *testing.T, m *scripted.Model) *run.Message {
	t.Helper()
	requests := m.Requests()
	messages := requests[len(requests)-1].Messages
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == run.RoleTool {
			return messages[i]
		}
	}
	t.Fatal("the model was sent no tool result")
	return nil
}

// TestUserInputContinueOverHTTP: a tool that needs user input pauses the
// run with the fields to fill (the one the model gave filled in); a
// continue that leaves one empty, gives it a value of another type, names
// an unknown call or field is refused with 400 saying what to fix, and
// leaves the run paused; the filled-in continue, streamed, runs the tool
// with the values merged into its arguments.
func TestUserInputContinueOverHTTP(t *testing.T) {
	calls := make(chan bookArgs, 4)
	s := newServer(t, []scripted.Reply{scripted.ToolCall("book_seats", `{"city":"Paris"}`), scripted.Text("Two seats to Paris are booked.")},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{seatsTool(t, calls)} })

	created := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"book me seats"}, "stream": {"false"}, "session_id": {"u1"}})
	require.Equal(t, http.StatusOK, created.StatusCode)
	pausedJSON := readAll(t, created)
	var paused map[string]any
	require.NoError(t, json.Unmarshal([]byte(pausedJSON), &paused))
	require.Equal(t, "PAUSED", paused["status"])
	runID := paused["run_id"].(string)
	requirements := paused["requirements"].([]any)
	require.Len(t, requirements, 1)
	require.Equal(t, []any{
		map[string]any{"name": "city", "field_type": "str", "description": "the destination", "value": "Paris"},
		map[string]any{"name": "seats", "field_type": "int", "description": "how many seats to book", "value": nil},
	}, requirements[0].(map[string]any)["user_input_schema"])
	callID := toolsOf(t, pausedJSON)[0]["tool_call_id"].(string)

	refused := []struct {
		name   string
		edit   func(tools []map[string]any) any
		status int
		detail string
	}{
		{"a value left empty", func(tools []map[string]any) any { return tools }, http.StatusBadRequest,
			"book_seats (" + callID + ") waits for user input: send it with a value in user_input_schema for seats (int)"},
		{"a value of another type", func(tools []map[string]any) any {
			setInput(t, tools[0], "seats", "two")
			return tools
		}, http.StatusBadRequest, `user input field seats is int, and the string "two" is not one: send a whole number`},
		{"an unknown tool_call_id", func(tools []map[string]any) any {
			setInput(t, tools[0], "seats", 2)
			tools[0]["tool_call_id"] = "call_nope"
			return tools
		}, http.StatusBadRequest, "tools[0]: run " + runID + " has no tool call call_nope; the calls that wait are book_seats (" + callID + ")"},
		{"a field the call does not ask for", func(tools []map[string]any) any {
			setInput(t, tools[0], "seats", 2)
			tools[0]["user_input_schema"] = append(tools[0]["user_input_schema"].([]any), map[string]any{"name": "class", "field_type": "str", "value": "first"})
			return tools
		}, http.StatusBadRequest, `user_input_schema has a field "class" the call does not ask for; it asks for city, seats`},
		{"a tool execution that is not an object", func([]map[string]any) any { return `[42]` }, http.StatusUnprocessableEntity,
			"a JSON array of tool executions"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, s.continueWith(t, runID, "u1", tc.edit(toolsOf(t, pausedJSON)), url.Values{"stream": {"false"}}), tc.status, tc.detail)
		})
	}
	require.Empty(t, calls, "a refused continue runs nothing")
	require.Len(t, s.model.Requests(), 1, "a refused continue calls no model")
	var still map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.runJSON(t, runID, "u1")), &still))
	require.Equal(t, "PAUSED", still["status"], "a refused continue leaves the run paused")

	tools := toolsOf(t, pausedJSON)
	setInput(t, tools[0], "seats", 2)
	resp := s.continueWith(t, runID, "u1", tools, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := readFrames(t, resp.Body)
	names := frameNames(frames)
	require.Equal(t, "RunContinued", names[0], names)
	require.Contains(t, names, "ToolCallCompleted")
	require.Equal(t, "RunCompleted", names[len(names)-1], names)
	require.Equal(t, "Two seats to Paris are booked.", frames[len(frames)-1].data["content"])
	require.Equal(t, bookArgs{City: "Paris", Seats: 2}, <-calls, "the person's values are merged into the model's arguments")
	result := lastToolMessage(t, s.model)
	require.Equal(t, callID, result.ToolCallID)
	require.Equal(t, "booked 2 seats to Paris", result.ContentString())

	var done map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.runJSON(t, runID, "u1")), &done))
	require.Equal(t, "COMPLETED", done["status"])
	answered := done["requirements"].([]any)[0].(map[string]any)
	require.Equal(t, float64(2), answered["user_input_schema"].([]any)[1].(map[string]any)["value"], "the run shows what the person answered")
	require.Equal(t, true, answered["tool_execution"].(map[string]any)["answered"])
}

// TestExternalExecutionContinueOverHTTP: a tool the caller executes pauses
// the run; a continue without its result is refused with 400, one with a
// result that is not a string with 422; with the result, the model reads
// it as the tool's output and the server never runs the tool.
func TestExternalExecutionContinueOverHTTP(t *testing.T) {
	var executed atomic.Int32
	s := newServer(t, []scripted.Reply{scripted.ToolCall("get_weather", `{"city":"Oslo"}`), scripted.Text("It is 21°C in Oslo.")},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{weatherTool(t, &executed)} })

	created := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"weather in Oslo?"}, "stream": {"false"}, "session_id": {"e1"}})
	require.Equal(t, http.StatusOK, created.StatusCode)
	pausedJSON := readAll(t, created)
	var paused map[string]any
	require.NoError(t, json.Unmarshal([]byte(pausedJSON), &paused))
	require.Equal(t, "PAUSED", paused["status"])
	runID := paused["run_id"].(string)
	requirement := paused["requirements"].([]any)[0].(map[string]any)
	require.Equal(t, true, requirement["tool_execution"].(map[string]any)["external_execution_required"])
	callID := toolsOf(t, pausedJSON)[0]["tool_call_id"].(string)

	requireRefused(t, s.continueWith(t, runID, "e1", toolsOf(t, pausedJSON), url.Values{"stream": {"false"}}), http.StatusBadRequest,
		"get_weather ("+callID+") is executed by the caller: send it with its output as result")
	numeric := toolsOf(t, pausedJSON)
	numeric[0]["result"] = 21
	requireRefused(t, s.continueWith(t, runID, "e1", numeric, url.Values{"stream": {"false"}}), http.StatusUnprocessableEntity, "result of type string")
	require.Len(t, s.model.Requests(), 1, "a refused continue calls no model")

	tools := toolsOf(t, pausedJSON)
	tools[0]["result"] = "21°C"
	resp := s.continueWith(t, runID, "e1", tools, url.Values{"stream": {"false"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	done := decode[map[string]any](t, resp)
	require.Equal(t, "COMPLETED", done["status"])
	require.Equal(t, "It is 21°C in Oslo.", done["content"])
	result := lastToolMessage(t, s.model)
	require.Equal(t, callID, result.ToolCallID)
	require.Equal(t, "21°C", result.ContentString(), "the model reads the caller's result as the tool's output")
	require.Zero(t, executed.Load(), "an externally executed tool never runs on the server")
	require.Equal(t, "21°C", done["requirements"].([]any)[0].(map[string]any)["external_execution_result"])
}

// TestHITLKindsInBackgroundRuns: a background run on the durable queue
// pauses for user input, then for an external result. A bad continue with
// background=true is refused with 400 at once (not accepted and failed
// later) and the run stays paused; the good ones go on through the queue,
// the first followed as a stream.
func TestHITLKindsInBackgroundRuns(t *testing.T) {
	calls := make(chan bookArgs, 4)
	var executed atomic.Int32
	s := newDurableServer(t, []scripted.Reply{
		scripted.ToolCall("book_seats", `{"city":"Paris"}`), scripted.ToolCall("get_weather", `{"city":"Paris"}`), scripted.Text("Booked; 18°C in Paris."),
	}, []tool.Tool{seatsTool(t, calls), weatherTool(t, &executed)}, nil)
	background := url.Values{"background": {"true"}, "stream": {"false"}}

	accepted := decode[map[string]any](t, s.postBackground(t, url.Values{"message": {"book and check"}, "stream": {"false"}, "session_id": {"bg"}}, ""))
	runID := accepted["run_id"].(string)
	require.Equal(t, "PAUSED", pollRun(t, s, runID, "bg")["status"])
	pausedJSON := s.runJSON(t, runID, "bg")
	bookID := toolsOf(t, pausedJSON)[0]["tool_call_id"].(string)

	requireRefused(t, s.continueWith(t, runID, "bg", toolsOf(t, pausedJSON), background), http.StatusBadRequest,
		"book_seats ("+bookID+") waits for user input: send it with a value in user_input_schema for seats (int)")
	wrong := toolsOf(t, pausedJSON)
	setInput(t, wrong[0], "seats", true)
	requireRefused(t, s.continueWith(t, runID, "bg", wrong, url.Values{"background": {"true"}}), http.StatusBadRequest,
		"user input field seats is int, and the boolean true is not one")
	var still map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.runJSON(t, runID, "bg")), &still))
	require.Equal(t, "PAUSED", still["status"], "a refused continue leaves the run paused on the queue")

	// The user input, followed as a stream up to the next pause.
	tools := toolsOf(t, pausedJSON)
	setInput(t, tools[0], "seats", 2)
	resp := s.continueWith(t, runID, "bg", tools, url.Values{"background": {"true"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := framesUntil(t, liveFrames(t, resp.Body), "RunPaused", runTimeout)
	require.Contains(t, frameNames(frames), "ToolCallCompleted")
	require.Equal(t, bookArgs{City: "Paris", Seats: 2}, <-calls)

	var pausedAgain string
	poll(t, runTimeout, 20*time.Millisecond, func() bool {
		pausedAgain = s.runJSON(t, runID, "bg")
		return len(toolsOf(t, pausedAgain)) == 2 && json.Valid([]byte(pausedAgain))
	}, "run %s did not pause for the external result", runID)
	weather := toolsOf(t, pausedAgain)[1]
	weatherID := weather["tool_call_id"].(string)
	requireRefused(t, s.continueWith(t, runID, "bg", []map[string]any{weather}, background), http.StatusBadRequest,
		"get_weather ("+weatherID+") is executed by the caller: send it with its output as result")

	weather["result"] = "18°C"
	accepted = decode[map[string]any](t, s.continueWith(t, runID, "bg", []map[string]any{weather}, background))
	require.Equal(t, runID, accepted["run_id"])
	var done map[string]any
	poll(t, runTimeout, 20*time.Millisecond, func() bool {
		require.NoError(t, json.Unmarshal([]byte(s.runJSON(t, runID, "bg")), &done))
		return done["status"] == "COMPLETED"
	}, "run %s did not complete after its external result", runID)
	require.Equal(t, "Booked; 18°C in Paris.", done["content"])
	require.Equal(t, "18°C", lastToolMessage(t, s.model).ContentString())
	require.Zero(t, executed.Load())
}

// offsetClock is a clock that can be moved ahead of the wall clock: an
// agent on it sees its runs start later than they were accepted.
type offsetClock struct{ ahead atomic.Int64 }

func (c *offsetClock) now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// newQueuedServer is newDurableServer with the agent configured by
// configure.
func newQueuedServer(t *testing.T, replies []scripted.Reply, configure func(*agent.Config)) *server {
	t.Helper()
	return newQueuedReplica(t, filepath.Join(t.TempDir(), "os.db"), "test", scripted.New(replies), configure, nil)
}

// TestBackgroundRunCreatedAtIsWhenAccepted: a background run held back by
// the run before it (on the durable queue, behind the session's running
// run; in process, waiting for the one slot) keeps the created_at of its
// acceptance — no later than the moment its POST was answered — in the run
// JSON, the session's runs and the queue's job, and records when it started
// executing as metadata.started_at. The agent's clock is moved an hour
// ahead before the run starts, so a created_at taken at its start would
// show. A run answered inline keeps its start as created_at.
func TestBackgroundRunCreatedAtIsWhenAccepted(t *testing.T) {
	for _, queued := range []bool{true, false} {
		name := map[bool]string{true: "durable queue", false: "in process"}[queued]
		t.Run(name, func(t *testing.T) {
			clock := &offsetClock{}
			started, release := make(chan struct{}, 1), make(chan struct{})
			gate, err := tool.New(tool.Config{Name: "gate"}, func(ctx context.Context, _ struct{}) (string, error) {
				started <- struct{}{}
				select {
				case <-release:
					return "open", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			})
			require.NoError(t, err)
			replies := []scripted.Reply{scripted.ToolCall("gate", `{}`), scripted.Text("first"), scripted.Text("second"), scripted.Text("inline")}
			configure := func(c *agent.Config) { c.Tools, c.Now = []tool.Tool{gate}, clock.now }
			var s *server
			if queued {
				s = newQueuedServer(t, replies, configure)
			} else {
				s = newServer(t, replies, func(c *agent.Config, o *agentos.Config) {
					configure(c)
					o.BackgroundMaxConcurrency = 1
				})
			}
			submit := func(message string) string {
				resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {message}, "stream": {"false"}, "background": {"true"}, "session_id": {"q"}})
				require.Equal(t, http.StatusAccepted, resp.StatusCode)
				return decode[map[string]any](t, resp)["run_id"].(string)
			}
			first := submit("first")
			<-started
			before := time.Now().Unix()
			second := submit("second")
			answered := time.Now().Unix()

			clock.ahead.Store(int64(time.Hour))
			close(release)
			require.Equal(t, "COMPLETED", pollRun(t, s, first, "q")["status"])
			out := pollRun(t, s, second, "q")
			require.Equal(t, "second", out["content"])
			createdAt := int64(out["created_at"].(float64))
			require.GreaterOrEqual(t, createdAt, before)
			require.LessOrEqual(t, createdAt, answered, "created_at is when the run was accepted")
			startedAt := int64(out["metadata"].(map[string]any)["started_at"].(float64))
			require.GreaterOrEqual(t, startedAt, answered+3600, "started_at is when it started executing, on the agent's clock")

			var listed map[string]any
			for _, r := range decode[[]map[string]any](t, s.get(t, "/sessions/q/runs")) {
				if r["run_id"] == second {
					listed = r
				}
			}
			require.NotNil(t, listed, "the session lists the run")
			require.Equal(t, float64(createdAt), listed["created_at"])
			if queued {
				job := decode[map[string]any](t, s.get(t, "/queue/jobs/"+second))
				require.LessOrEqual(t, int64(job["created_at"].(float64)), answered)
				require.GreaterOrEqual(t, int64(job["started_at"].(float64)), int64(job["created_at"].(float64)))
			}

			inline := s.runAgent(t, url.Values{"message": {"now"}, "stream": {"false"}, "session_id": {"inline"}})
			require.GreaterOrEqual(t, int64(inline["created_at"].(float64)), answered+3600, "an inline run's created_at is its start")
			metadata, _ := inline["metadata"].(map[string]any)
			require.NotContains(t, metadata, "started_at", "an inline run started when it was created")
		})
	}
}
