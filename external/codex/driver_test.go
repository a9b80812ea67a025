package codex_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/codex"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// Variables of the scripted app-server the driver tests re-execute this
// binary as (modes starting with "driver-").
const (
	// fakeLogEnv names the file the fake appends every line it receives
	// to, after a first line with its pid.
	fakeLogEnv = "AGNOGO_FAKE_CODEX_LOG"
	// fakeErrorEnv is the turn error a "driver-failed" turn ends with.
	fakeErrorEnv = "AGNOGO_FAKE_CODEX_ERROR"
)

// fakeDriverServer is a scripted app-server. Its modes:
//
//	driver-ok            thread/start or resume, then a turn with a command and an answer
//	driver-resume-gone   thread/resume fails with "no rollout found"
//	driver-resume-broken thread/resume fails with another error
//	driver-approvals     the turn asks every kind of approval first
//	driver-hang          the turn never ends by itself; turn/interrupt ends it
//	driver-stubborn      the turn never ends, turn/interrupt is ignored, EOF too
//	driver-crash         the app-server dies during the turn
//	driver-failed        the turn fails with the error in AGNOGO_FAKE_CODEX_ERROR
//	driver-structured    the answer is {"answer":42}
//	driver-unstructured  the answer is not JSON
func fakeDriverServer(mode string) int {
	log, err := os.OpenFile(os.Getenv(fakeLogEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer log.Close()
	fmt.Fprintf(log, "{\"pid\":%d}\n", os.Getpid())
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		data, _ := json.Marshal(v)
		out.Write(append(data, '\n'))
		out.Flush()
	}
	notify := func(method string, params map[string]any) { send(map[string]any{"method": method, "params": params}) }
	const turnID = "turn-2"
	var threadID string
	pending, decision := 0, ""

	finish := func(answer string) {
		status, output := "completed", "hi\n"
		if decision != "" && decision != "accept" {
			status, output = "declined", ""
		}
		call := map[string]any{"type": "commandExecution", "id": "call-1", "command": "/bin/bash -lc 'echo hi'", "cwd": "/w", "status": "inProgress"}
		notify("item/started", map[string]any{"threadId": threadID, "turnId": turnID, "item": call})
		done := map[string]any{"type": "commandExecution", "id": "call-1", "command": "/bin/bash -lc 'echo hi'", "cwd": "/w", "status": status, "aggregatedOutput": output}
		if status == "completed" {
			done["exitCode"] = 0
		}
		notify("item/completed", map[string]any{"threadId": threadID, "turnId": turnID, "item": done})
		notify("thread/tokenUsage/updated", map[string]any{"threadId": threadID, "turnId": turnID, "tokenUsage": map[string]any{
			"total": map[string]any{"inputTokens": 1100, "outputTokens": 50}, "last": map[string]any{"inputTokens": 100, "outputTokens": 30}}})
		notify("item/agentMessage/delta", map[string]any{"threadId": "thread-subagent", "turnId": "turn-9", "itemId": "msg-9", "delta": "NOISE"})
		notify("item/started", map[string]any{"threadId": threadID, "turnId": turnID, "item": map[string]any{"type": "agentMessage", "id": "msg-1", "text": ""}})
		if !strings.HasPrefix(answer, "{") && answer != "not json at all" {
			first, rest, _ := strings.Cut(answer, " ")
			notify("item/agentMessage/delta", map[string]any{"threadId": threadID, "turnId": turnID, "itemId": "msg-1", "delta": first + " "})
			notify("item/agentMessage/delta", map[string]any{"threadId": threadID, "turnId": turnID, "itemId": "msg-1", "delta": rest})
		} else {
			notify("item/agentMessage/delta", map[string]any{"threadId": threadID, "turnId": turnID, "itemId": "msg-1", "delta": answer})
		}
		notify("item/completed", map[string]any{"threadId": threadID, "turnId": turnID, "item": map[string]any{"type": "agentMessage", "id": "msg-1", "text": answer}})
		notify("turn/completed", map[string]any{"threadId": threadID, "turn": map[string]any{"id": turnID, "status": "completed", "error": nil, "durationMs": 12}})
	}

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		fmt.Fprintf(log, "%s\n", in.Bytes())
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ThreadID string `json:"threadId"`
			} `json:"params"`
			Result struct {
				Decision any `json:"decision"`
			} `json:"result"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			continue
		}
		reply := func(result any) { send(map[string]any{"id": msg.ID, "result": result}) }
		fail := func(code int, message string) {
			send(map[string]any{"id": msg.ID, "error": map[string]any{"code": code, "message": message}})
		}
		switch msg.Method {
		case "initialize":
			reply(map[string]any{"userAgent": "fake/0.171.0", "platformOs": "linux"})
		case "thread/start":
			threadID = "thread-new"
			if mode == "driver-resume-gone" {
				threadID = "thread-fresh"
			}
			notify("thread/started", map[string]any{"thread": map[string]any{"id": threadID}})
			reply(map[string]any{"thread": map[string]any{"id": threadID}, "model": "gpt-fake"})
		case "thread/resume":
			switch mode {
			case "driver-resume-gone":
				fail(-32600, "no rollout found for thread id "+msg.Params.ThreadID)
			case "driver-resume-broken":
				fail(-32603, "failed to read the rollout: permission denied")
			default:
				threadID = msg.Params.ThreadID
				reply(map[string]any{"thread": map[string]any{"id": threadID}, "model": "gpt-fake"})
			}
		case "turn/start":
			reply(map[string]any{"turn": map[string]any{"id": turnID, "status": "inProgress"}})
			// After a resume the app-server repeats the previous turn's usage.
			notify("thread/tokenUsage/updated", map[string]any{"threadId": threadID, "turnId": "turn-1", "tokenUsage": map[string]any{
				"total": map[string]any{"inputTokens": 1000, "outputTokens": 20}, "last": map[string]any{"inputTokens": 400, "outputTokens": 20}}})
			notify("turn/started", map[string]any{"threadId": threadID, "turn": map[string]any{"id": turnID, "status": "inProgress"}})
			switch mode {
			case "driver-approvals":
				requests := []string{"item/commandExecution/requestApproval", "item/fileChange/requestApproval", "item/permissions/requestApproval",
					"execCommandApproval", "applyPatchApproval", "item/tool/requestUserInput", "mcpServer/elicitation/request", "attestation/generate"}
				for i, method := range requests {
					send(map[string]any{"id": i, "method": method, "params": map[string]any{"threadId": threadID, "turnId": turnID,
						"permissions": map[string]any{"network": map[string]any{"enabled": true}}}})
				}
				pending = len(requests)
			case "driver-hang", "driver-stubborn":
				notify("item/agentMessage/delta", map[string]any{"threadId": threadID, "turnId": turnID, "itemId": "msg-1", "delta": "thinking…"})
			case "driver-crash":
				out.Flush()
				fmt.Fprintln(os.Stderr, "panic: the fake app-server fell over mid-turn")
				return 3
			case "driver-failed":
				var turnErr any
				_ = json.Unmarshal([]byte(os.Getenv(fakeErrorEnv)), &turnErr)
				notify("error", map[string]any{"threadId": threadID, "turnId": turnID, "willRetry": false, "error": turnErr})
				notify("turn/completed", map[string]any{"threadId": threadID, "turn": map[string]any{"id": turnID, "status": "failed", "error": turnErr}})
			case "driver-structured":
				finish(`{"answer":42}`)
			case "driver-unstructured":
				finish("not json at all")
			default:
				finish("All done.")
			}
		case "turn/interrupt":
			if mode == "driver-hang" {
				reply(map[string]any{})
				notify("turn/completed", map[string]any{"threadId": threadID, "turn": map[string]any{"id": turnID, "status": "interrupted"}})
			}
		case "":
			if pending > 0 {
				if decision == "" {
					decision, _ = msg.Result.Decision.(string)
				}
				if pending--; pending == 0 {
					finish("All done.")
				}
			}
		}
	}
	if mode == "driver-stubborn" {
		time.Sleep(time.Hour) // not a wait: it ignores the end of its input too, and hangs until it is killed
	}
	return 0
}

// fake is a scripted app-server for a driver.
type fake struct {
	log string
	cwd string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	return &fake{log: filepath.Join(t.TempDir(), "fake.log"), cwd: t.TempDir()}
}

// driver returns a driver on the fake in the given mode.
func (f *fake) driver(t *testing.T, mode string, tune ...func(*codex.Options)) *codex.Driver {
	t.Helper()
	opts := codex.Options{Bin: os.Args[0], Cwd: f.cwd, InterruptGrace: 500 * time.Millisecond,
		// A race-enabled binary sleeps a second before it exits, unless told not to.
		Env: map[string]string{fakeEnv: mode, fakeLogEnv: f.log, "GORACE": "atexit_sleep_ms=0"}}
	for _, fn := range tune {
		fn(&opts)
	}
	d, err := codex.NewDriver(opts)
	require.NoError(t, err)
	return d
}

// received returns what the fake received, in order, and its pids.
func (f *fake) received(t *testing.T) (messages []map[string]any, pids []int) {
	t.Helper()
	data, err := os.ReadFile(f.log)
	require.NoError(t, err)
	for line := range strings.Lines(string(data)) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if pid, ok := m["pid"].(float64); ok {
			pids = append(pids, int(pid))
			continue
		}
		messages = append(messages, m)
	}
	return messages, pids
}

// calls returns the params of the requests of a method the fake received.
func (f *fake) calls(t *testing.T, method string) []map[string]any {
	t.Helper()
	messages, _ := f.received(t)
	var params []map[string]any
	for _, m := range messages {
		if m["method"] == method {
			p, _ := m["params"].(map[string]any)
			params = append(params, p)
		}
	}
	return params
}

// answers returns the fake's requests' answers by id.
func (f *fake) answers(t *testing.T) map[int]map[string]any {
	t.Helper()
	messages, _ := f.received(t)
	answers := map[int]map[string]any{}
	for _, m := range messages {
		if id, ok := m["id"].(float64); ok && m["method"] == nil {
			answers[int(id)] = m
		}
	}
	return answers
}

// requireReaped checks that every app-server the fake ran is gone.
func (f *fake) requireReaped(t *testing.T) {
	t.Helper()
	_, pids := f.received(t)
	require.NotEmpty(t, pids)
	for _, pid := range pids {
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "app-server %d was reaped", pid)
	}
}

// request is a turn request that records what the driver reports.
type request struct {
	*external.TurnRequest
	events   []run.Event
	warnings []run.Warning
	seeded   int
}

func newRequest(prompt, harness string) *request {
	r := &request{}
	r.TurnRequest = &external.TurnRequest{RunID: "r1", SessionID: "s1", Attempt: 1, Prompt: prompt, HarnessSession: harness,
		Seed: func(context.Context) (string, error) {
			r.seeded++
			return "Previous conversation (for context, do not repeat it):\nuser: earlier\n\nCurrent message:\n" + prompt, nil
		},
		Emit: func(e run.Event) { r.events = append(r.events, e) },
		Warn: func(w run.Warning) { r.warnings = append(r.warnings, w) }}
	return r
}

// names are the events' names.
func names(events []run.Event) []string {
	var names []string
	for _, e := range events {
		names = append(names, e.EventName())
	}
	return names
}

func openStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agnogo.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return store
}

func newAgent(t *testing.T, d *codex.Driver, store storage.Store) *external.Agent {
	t.Helper()
	a, err := external.New(external.Config{ID: "coder", Driver: d, Store: store, Cwd: d.Cwd(), DelayBetweenRetries: 10 * time.Millisecond})
	require.NoError(t, err)
	return a
}

// png is a 1x1 PNG.
var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

func TestDriverRunsTurnsThroughTheAgent(t *testing.T) {
	f := newFake(t)
	store := openStore(t)
	d := f.driver(t, "driver-ok", func(o *codex.Options) {
		o.Sandbox, o.Instructions, o.ReasoningEffort = "full_access", "Be brief.", "low"
		o.Config = map[string]any{"mcp_servers": map[string]any{}}
	})
	agent := newAgent(t, d, store)

	var events []run.Event
	for event, err := range agent.Stream(t.Context(), &run.Input{InputContent: "look at this", SessionID: "s1",
		Images: []run.Image{{Content: png, MimeType: "image/png"}}}) {
		require.NoError(t, err)
		events = append(events, event)
	}
	require.Equal(t, []string{run.EventRunStarted, run.EventToolCallStarted, run.EventToolCallCompleted,
		run.EventRunContent, run.EventRunContent, run.EventRunCompleted}, names(events), "the subagent's delta is not the run's")
	completed := events[len(events)-1].(*run.RunCompleted)
	require.Equal(t, "All done.", completed.Content)
	require.Equal(t, "codex", completed.Metadata["sdk"])
	require.Equal(t, int64(100), completed.Metrics.InputTokens, "the previous turn's usage, repeated, does not count")
	require.Equal(t, int64(30), completed.Metrics.OutputTokens)

	starts := f.calls(t, "thread/start")
	require.Len(t, starts, 1)
	require.Equal(t, f.cwd, starts[0]["cwd"])
	require.Equal(t, codex.DefaultModel, starts[0]["model"])
	require.Equal(t, "danger-full-access", starts[0]["sandbox"], "full-access is danger-full-access on the wire")
	require.Equal(t, "on-request", starts[0]["approvalPolicy"])
	require.Equal(t, "auto_review", starts[0]["approvalsReviewer"])
	require.Equal(t, "Be brief.", starts[0]["developerInstructions"])
	require.Equal(t, map[string]any{"mcp_servers": map[string]any{}}, starts[0]["config"])
	turns := f.calls(t, "turn/start")
	require.Len(t, turns, 1)
	require.Equal(t, "thread-new", turns[0]["threadId"])
	require.Equal(t, "low", turns[0]["effort"])
	input := turns[0]["input"].([]any)
	require.Len(t, input, 2, "the text and the image")
	text := input[0].(map[string]any)
	require.Equal(t, "text", text["type"])
	require.True(t, strings.HasPrefix(text["text"].(string), "look at this"), text["text"])
	image := input[1].(map[string]any)
	require.Equal(t, "localImage", image["type"])
	require.True(t, strings.HasPrefix(image["path"].(string), filepath.Join(f.cwd, external.UploadsDir)), image["path"])

	session, err := store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Equal(t, "thread-new", session.SessionData[codex.SessionKey])
	require.Equal(t, "codex", session.Metadata["sdk"])

	// The next run resumes the thread.
	out, err := agent.Run(t.Context(), &run.Input{InputContent: "and now?", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "All done.", out.Content)
	require.Equal(t, "gpt-fake", out.Model, "the model the app-server reported")
	require.Len(t, out.Tools, 1)
	require.Equal(t, "shell", out.Tools[0].ToolName)
	require.Equal(t, "hi\n[exit code 0]", *out.Tools[0].Result)
	messages := slices.DeleteFunc(slices.Clone(out.Messages), func(m *run.Message) bool { return m.Role == run.RoleUser })
	require.Len(t, messages, 3, "the tool call, its result and the answer")
	require.Equal(t, "shell", messages[0].ToolCalls[0].Function.Name)
	require.Equal(t, run.RoleTool, messages[1].Role)
	require.Equal(t, "hi\n[exit code 0]", messages[1].Content)
	require.Equal(t, "All done.", messages[2].Content)
	resumes := f.calls(t, "thread/resume")
	require.Len(t, resumes, 1)
	require.Equal(t, "thread-new", resumes[0]["threadId"])
	require.Nil(t, resumes[0]["ephemeral"], "start-only keys are not sent on resume")
	require.Len(t, f.calls(t, "thread/start"), 1, "no new thread")
	turns = f.calls(t, "turn/start")
	require.Equal(t, "and now?", turns[1]["input"].([]any)[0].(map[string]any)["text"], "resumed, not seeded")
	f.requireReaped(t)
}

func TestDriverStartsAFreshThreadWhenTheOldOneIsGone(t *testing.T) {
	f := newFake(t)
	store := openStore(t)
	_, err := newAgent(t, f.driver(t, "driver-ok"), store).Run(t.Context(), &run.Input{InputContent: "first", SessionID: "s1"})
	require.NoError(t, err)

	out, err := newAgent(t, f.driver(t, "driver-resume-gone"), store).Run(t.Context(), &run.Input{InputContent: "second", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "All done.", out.Content)
	warnings, err := out.Warnings()
	require.NoError(t, err)
	require.Len(t, warnings, 1)
	require.Equal(t, "session_not_resumable", warnings[0].Type)
	require.Contains(t, warnings[0].Error, "no rollout found")

	require.Len(t, f.calls(t, "thread/resume"), 1)
	require.Len(t, f.calls(t, "thread/start"), 2)
	turns := f.calls(t, "turn/start")
	seeded := turns[1]["input"].([]any)[0].(map[string]any)["text"].(string)
	require.Contains(t, seeded, "Previous conversation")
	require.Contains(t, seeded, "All done.", "the history of the session seeds the new thread")
	require.True(t, strings.HasSuffix(seeded, "second"), seeded)
	session, err := store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Equal(t, "thread-fresh", session.SessionData[codex.SessionKey])
}

func TestDriverKeepsTheThreadWhenResumeFailsOtherwise(t *testing.T) {
	f := newFake(t)
	req := newRequest("hello", "thread-old")
	_, err := f.driver(t, "driver-resume-broken").Turn(t.Context(), req.TurnRequest)
	var rpcErr *codex.RPCError
	require.ErrorAs(t, err, &rpcErr)
	require.Contains(t, err.Error(), "permission denied")
	require.Equal(t, "thread-old", req.HarnessSession, "the stored thread id is kept")
	require.Empty(t, req.warnings)
	require.Zero(t, req.seeded)
	require.Empty(t, f.calls(t, "thread/start"), "no fresh thread")
	require.Empty(t, f.calls(t, "turn/start"))
	f.requireReaped(t)
}

func TestDriverAnswersEveryServerRequest(t *testing.T) {
	for _, tc := range []struct {
		mode                 string
		decision, legacy     any
		permissions          any
		toolFailed           bool
		toolResult, reviewer string
	}{
		{mode: codex.ApprovalAutoReview, decision: "accept", legacy: "approved", reviewer: "auto_review",
			permissions: map[string]any{"network": map[string]any{"enabled": true}}, toolResult: "hi\n[exit code 0]"},
		{mode: codex.ApprovalDenyAll, decision: "decline", legacy: map[string]any{"denied": map[string]any{"rejection": "declined by the agent's approval mode"}},
			reviewer: "user", permissions: map[string]any{}, toolFailed: true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			f := newFake(t)
			req := newRequest("do it", "")
			res, err := f.driver(t, "driver-approvals", func(o *codex.Options) { o.ApprovalMode = tc.mode }).Turn(t.Context(), req.TurnRequest)
			require.NoError(t, err)
			require.Equal(t, "All done.", res.Content)
			require.Equal(t, tc.reviewer, f.calls(t, "thread/start")[0]["approvalsReviewer"])

			answers := f.answers(t)
			require.Len(t, answers, 8, "every request is answered")
			result := func(id int) map[string]any { r, _ := answers[id]["result"].(map[string]any); return r }
			require.Equal(t, tc.decision, result(0)["decision"], "command approval")
			require.Equal(t, tc.decision, result(1)["decision"], "file change approval")
			require.Equal(t, tc.permissions, result(2)["permissions"], "permissions")
			require.Equal(t, tc.legacy, result(3)["decision"], "legacy exec approval")
			require.Equal(t, tc.legacy, result(4)["decision"], "legacy patch approval")
			require.Equal(t, map[string]any{}, result(5)["answers"], "user input")
			require.Equal(t, "decline", result(6)["action"], "elicitation")
			require.NotNil(t, answers[7]["error"], "an unknown request gets an error")
			require.Nil(t, answers[7]["result"])

			require.Len(t, res.Tools, 1)
			require.Equal(t, tc.toolFailed, *res.Tools[0].ToolCallError)
			if tc.toolResult != "" {
				require.Equal(t, tc.toolResult, *res.Tools[0].Result)
			}
		})
	}
}

func TestDriverCancelInterruptsTheTurn(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := newRequest("slow", "")
	var cancelled time.Time
	req.Emit = func(e run.Event) {
		req.events = append(req.events, e)
		cancelled = time.Now()
		cancel()
	}
	res, err := f.driver(t, "driver-hang").Turn(ctx, req.TurnRequest)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(cancelled), 400*time.Millisecond, "the interrupted turn ends at once")
	require.Equal(t, "thinking…", res.Content, "what came before the cancel is kept")
	interrupts := f.calls(t, "turn/interrupt")
	require.Equal(t, []map[string]any{{"threadId": "thread-new", "turnId": "turn-2"}}, interrupts)
	require.Equal(t, "thread-new", req.HarnessSession)
	f.requireReaped(t)
}

func TestDriverKillsAnAppServerThatIgnoresTheInterrupt(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := newRequest("slow", "")
	var cancelled time.Time
	req.Emit = func(run.Event) {
		cancelled = time.Now()
		cancel()
	}
	_, err := f.driver(t, "driver-stubborn").Turn(ctx, req.TurnRequest)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(cancelled), 1200*time.Millisecond, "the interrupt grace, then a kill")
	require.Len(t, f.calls(t, "turn/interrupt"), 1)
	f.requireReaped(t)
}

func TestDriverCancelBeforeTheTurnStarts(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithCancel(t.Context())
	req := newRequest("hello", "")
	req.Seed = func(context.Context) (string, error) {
		cancel()
		return "hello", nil
	}
	_, err := f.driver(t, "driver-ok").Turn(ctx, req.TurnRequest)
	require.ErrorIs(t, err, context.Canceled)
	f.requireReaped(t)
}

func TestDriverAppServerExitingEarly(t *testing.T) {
	f := newFake(t)
	_, err := f.driver(t, "driver-crash").Turn(t.Context(), newRequest("hello", "").TurnRequest)
	require.ErrorIs(t, err, codex.ErrExited)
	require.Contains(t, err.Error(), "fell over mid-turn", "the app-server's stderr explains the exit")
	var turnErr *external.TurnError
	require.False(t, errors.As(err, &turnErr) && turnErr.Permanent, "a crash may be retried")
	f.requireReaped(t)
}

func TestDriverClassifiesFailedTurns(t *testing.T) {
	for _, tc := range []struct {
		turnError string
		errorType string
		permanent bool
	}{
		{`{"message":"unexpected status 401 Unauthorized","codexErrorInfo":{"responseStreamConnectionFailed":{"httpStatusCode":401}}}`, "authentication_error", true},
		{`{"message":"Incorrect API key provided (invalid api key)"}`, "authentication_error", true},
		{`{"message":"Codex ran out of room in the model's context window.","codexErrorInfo":"contextWindowExceeded"}`, "context_window_exceeded", true},
		{`{"message":"context_length_exceeded: too long"}`, "context_window_exceeded", true},
		{`{"message":"insufficient_quota: check your plan and billing details"}`, "billing_error", true},
		{`{"message":"unexpected status 400 Bad Request: unknown parameter"}`, "bad_request", true},
		{`{"message":"flagged by the content policy"}`, "content_policy", true},
		{`{"message":"stream disconnected before completion: rate limit reached (429)"}`, "rate_limit", false},
		{`{"message":"Selected model is at capacity. Please try a different model.","codexErrorInfo":"serverOverloaded"}`, "server_error", false},
		{`{"message":"We're currently experiencing high demand, which may cause temporary errors."}`, "server_error", false},
	} {
		t.Run(tc.errorType, func(t *testing.T) {
			f := newFake(t)
			d := f.driver(t, "driver-failed", func(o *codex.Options) { o.Env[fakeErrorEnv] = tc.turnError })
			_, err := d.Turn(t.Context(), newRequest("hello", "").TurnRequest)
			var turnErr *external.TurnError
			require.ErrorAs(t, err, &turnErr)
			require.Equal(t, tc.errorType, turnErr.Type, err.Error())
			require.Equal(t, tc.permanent, turnErr.Permanent)
			var message struct{ Message string }
			require.NoError(t, json.Unmarshal([]byte(tc.turnError), &message))
			require.Contains(t, err.Error(), message.Message)
		})
	}
}

func TestDriverStructuredOutput(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}`)
	f := newFake(t)
	req := newRequest("answer", "")
	req.OutputSchema = schema
	res, err := f.driver(t, "driver-structured").Turn(t.Context(), req.TurnRequest)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"answer": float64(42)}, res.Structured)
	require.Equal(t, `{"answer":42}`, res.Content)
	sent, err := json.Marshal(f.calls(t, "turn/start")[0]["outputSchema"])
	require.NoError(t, err)
	require.JSONEq(t, string(schema), string(sent))

	var contents []string
	for _, e := range req.events {
		if c, ok := e.(*run.RunContent); ok {
			contents = append(contents, c.Content.(string))
		}
	}
	require.Equal(t, []string{`{"answer":42}`}, contents, "one RunContent: the JSON, no deltas")

	// Through the agent, the run's content is the object.
	out, err := newAgent(t, f.driver(t, "driver-structured"), nil).Run(t.Context(), &run.Input{InputContent: "answer", OutputSchema: schema})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"answer": float64(42)}, out.Content)

	bad := newRequest("answer", "")
	bad.OutputSchema = schema
	_, err = newFake(t).driver(t, "driver-unstructured").Turn(t.Context(), bad.TurnRequest)
	var turnErr *external.TurnError
	require.ErrorAs(t, err, &turnErr)
	require.Equal(t, "output_validation_error", turnErr.Type)
	require.True(t, turnErr.Permanent)
}

func TestDriverEphemeralThreadsAreNotKept(t *testing.T) {
	f := newFake(t)
	req := newRequest("hello", "thread-old")
	_, err := f.driver(t, "driver-ok", func(o *codex.Options) { o.Ephemeral = true }).Turn(t.Context(), req.TurnRequest)
	require.NoError(t, err)
	require.Empty(t, req.HarnessSession, "an ephemeral thread cannot be resumed")
	require.Empty(t, f.calls(t, "thread/resume"))
	require.Equal(t, true, f.calls(t, "thread/start")[0]["ephemeral"])
	require.Equal(t, 1, req.seeded, "a fresh thread is seeded with the history")
}

func TestDriverCLINotFound(t *testing.T) {
	d, err := codex.NewDriver(codex.Options{Bin: "/nonexistent/codex"})
	require.NoError(t, err)
	_, err = d.Turn(t.Context(), newRequest("hello", "").TurnRequest)
	var turnErr *external.TurnError
	require.ErrorAs(t, err, &turnErr)
	require.Equal(t, "cli_not_found", turnErr.Type)
	require.True(t, turnErr.Permanent)
	require.ErrorIs(t, err, codex.ErrCLINotFound)
}

func TestNewDriverOptions(t *testing.T) {
	_, err := codex.NewDriver(codex.Options{Sandbox: "yolo"})
	require.ErrorContains(t, err, `unknown sandbox "yolo"`)
	require.ErrorContains(t, err, "read-only, workspace-write or full-access")
	_, err = codex.NewDriver(codex.Options{ApprovalMode: "sometimes"})
	require.ErrorContains(t, err, "auto_review, deny_all or ask")

	d, err := codex.NewDriver(codex.Options{Cwd: "."})
	require.NoError(t, err)
	require.Equal(t, "codex", d.SDK())
	require.Equal(t, "codex_thread_id", d.SessionKey())
	model, provider := d.Model()
	require.Equal(t, "gpt-5.6-luna", model)
	require.Equal(t, "OpenAI", provider)
	require.True(t, filepath.IsAbs(d.Cwd()))
}
