package codex_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/codex"
	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/internal/testcli"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// realRig is a Codex agent on the real app-server (AGNOGO_CODEX_BIN)
// against the fake Responses API.
type realRig struct {
	bin  string
	api  *fakeopenai.Server
	vars map[string]string // CODEX_HOME and the fake's key
	cwd  string
}

func newRealRig(t *testing.T) *realRig {
	t.Helper()
	bin := testcli.CodexBin(t)
	api := fakeopenai.New(t)
	return &realRig{bin: bin, api: api, vars: testcli.CodexVars(t, api.URL), cwd: t.TempDir()}
}

func (r *realRig) driver(t *testing.T, tune ...func(*codex.Options)) *codex.Driver {
	t.Helper()
	opts := codex.Options{Bin: r.bin, Model: "gpt-5.5", Cwd: r.cwd, Sandbox: codex.SandboxReadOnly, Env: r.vars}
	for _, fn := range tune {
		fn(&opts)
	}
	d, err := codex.NewDriver(opts)
	require.NoError(t, err)
	return d
}

// shell is the fake model's call of Codex's shell tool.
func shell(command string, escalate bool) fakeopenai.Reply {
	args := map[string]any{"cmd": command}
	if escalate {
		args["sandbox_permissions"], args["justification"] = "require_escalated", "the test needs to write"
	}
	return fakeopenai.ToolCalls(fakeopenai.Call("exec_command", args))
}

// inputText renders a Responses request's input.
func inputText(t *testing.T, req fakeopenai.Request) string {
	t.Helper()
	data, err := json.Marshal(req.Body["input"])
	require.NoError(t, err)
	return string(data)
}

func TestDriverRealCLIRunsAShellTurnAndResumesTheThread(t *testing.T) {
	r := newRealRig(t)
	store := openStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	r.api.Enqueue(shell("echo codex-says-hi", false), fakeopenai.Text("fake-final: codex-says-hi"))
	out, err := newAgent(t, r.driver(t), store).Run(ctx, &run.Input{InputContent: "say hi", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Contains(t, out.Content, "codex-says-hi")
	require.Equal(t, "codex", out.Metadata["sdk"])
	require.Len(t, out.Tools, 1)
	require.Equal(t, "shell", out.Tools[0].ToolName)
	require.Contains(t, out.Tools[0].ToolArgs["command"], "echo codex-says-hi")
	require.Contains(t, *out.Tools[0].Result, "codex-says-hi")
	require.False(t, *out.Tools[0].ToolCallError)
	require.Positive(t, out.Metrics.InputTokens)
	require.Positive(t, out.Metrics.OutputTokens)
	requests := r.api.Requests()
	require.Len(t, requests, 2)
	require.Contains(t, inputText(t, requests[1]), "codex-says-hi", "the command really ran: its output went back to the model")

	session, err := store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	thread, _ := session.SessionData[codex.SessionKey].(string)
	require.NotEmpty(t, thread)

	// Another agent, the same CODEX_HOME and database: the thread goes on.
	r.api.Enqueue(fakeopenai.Text("second answer"))
	out, err = newAgent(t, r.driver(t), store).Run(ctx, &run.Input{InputContent: "and again", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "second answer", out.Content)
	warnings, err := out.Warnings()
	require.NoError(t, err)
	require.Empty(t, warnings)
	last := inputText(t, r.api.Requests()[2])
	require.Contains(t, last, "echo codex-says-hi", "the resumed thread resends the earlier conversation")
	require.NotContains(t, last, "Previous conversation", "resumed, not seeded")
	session, err = store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Equal(t, thread, session.SessionData[codex.SessionKey])
}

func TestDriverRealCLIDenyAllDeclinesAnEscalation(t *testing.T) {
	r := newRealRig(t)
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	target := filepath.Join(r.cwd, "made.txt")
	r.api.Enqueue(shell("touch "+target+" && echo made", true), fakeopenai.Text("fake-final: declined"))
	req := newRequest("write it", "")
	res, err := r.driver(t, func(o *codex.Options) { o.ApprovalMode = codex.ApprovalDenyAll }).Turn(ctx, req.TurnRequest)
	require.NoError(t, err)
	require.Equal(t, "fake-final: declined", res.Content)
	require.NoFileExists(t, target, "the escalation was declined")
	require.Len(t, r.api.Requests(), 2)
	require.Contains(t, inputText(t, r.api.Requests()[1]), "rejected by user", "the model was told")
	require.Len(t, res.Tools, 1)
	require.True(t, *res.Tools[0].ToolCallError)
	require.Equal(t, "the command was declined", *res.Tools[0].Result)
}

func TestDriverRealCLIAuthenticationFailureIsPermanent(t *testing.T) {
	r := newRealRig(t)
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	r.api.Enqueue(fakeopenai.Error(401, "invalid_api_key", "Incorrect API key provided: dummy."))
	_, err := r.driver(t).Turn(ctx, newRequest("hello", "").TurnRequest)
	var turnErr *external.TurnError
	require.ErrorAs(t, err, &turnErr, "%v", err)
	require.Equal(t, "authentication_error", turnErr.Type, err.Error())
	require.True(t, turnErr.Permanent)
}

func TestDriverRealCLICancelInterruptsTheTurn(t *testing.T) {
	r := newRealRig(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r.api.Enqueue(fakeopenai.Text("one two three four five six").StallAfter(2))
	req := newRequest("slow", "")
	var cancelled time.Time
	req.Emit = func(e run.Event) {
		if c, ok := e.(*run.RunContent); ok && c.Content != nil && cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.driver(t).Turn(ctx, req.TurnRequest)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(cancelled), 1500*time.Millisecond)
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled turn did not end")
	}
	require.NotEmpty(t, req.HarnessSession)
}

func TestDriverRealCLIDeadlineStopsAnUnreachableAPI(t *testing.T) {
	bin := testcli.CodexBin(t)
	vars := testcli.CodexVars(t, "http://127.0.0.1:1/v1") // nothing listens: Codex reconnects forever
	d, err := codex.NewDriver(codex.Options{Bin: bin, Model: "gpt-5.5", Cwd: t.TempDir(), Env: vars})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err = d.Turn(ctx, newRequest("hello", "").TurnRequest)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(deadline(ctx)), 1500*time.Millisecond, "the turn ends soon after the deadline")
}

// deadline is ctx's deadline.
func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// TestDriverRealCLICompactsTheThread: /compact runs the app-server's
// compaction on the stored thread; the next turn of the session goes on
// from the compacted thread.
func TestDriverRealCLICompactsTheThread(t *testing.T) {
	r := newRealRig(t)
	store := openStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	r.api.Enqueue(fakeopenai.Text("remembered alpha-omega"))
	_, err := newAgent(t, r.driver(t), store).Run(ctx, &run.Input{InputContent: "remember alpha-omega", SessionID: "s1"})
	require.NoError(t, err)

	r.api.Enqueue(fakeopenai.Text("SUMMARY: the user asked to remember a word"))
	agent := newAgent(t, r.driver(t), store)
	out, err := agent.Compact(ctx, "s1", "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	compaction := inputText(t, r.api.Requests()[len(r.api.Requests())-1])
	require.Contains(t, compaction, "alpha-omega", "the compaction summarised the thread")
	require.NotContains(t, compaction, "/compact", "a compaction, not a turn whose prompt is /compact")

	r.api.Enqueue(fakeopenai.Text("still here"))
	out, err = newAgent(t, r.driver(t), store).Run(ctx, &run.Input{InputContent: "and now?", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "still here", out.Content)
	last := inputText(t, r.api.Requests()[len(r.api.Requests())-1])
	t.Logf("after compaction: %.800s", last)
	require.Contains(t, last, "SUMMARY: the user asked to remember a word", "the thread goes on from its summary")
	require.NotContains(t, last, "remembered alpha-omega", "the summary replaced the earlier answer")
}

// TestDriverRealCLIAskPausesForApproval: with approval_mode ask, a command
// that needs approval pauses the run; continuing with the user's approval
// goes on in the same thread, and the command made again runs.
func TestDriverRealCLIAskPausesForApproval(t *testing.T) {
	r := newRealRig(t)
	store := openStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	target := filepath.Join(r.cwd, "approved.txt")
	command := "touch " + target + " && echo made"
	ask := func(o *codex.Options) { o.ApprovalMode = codex.ApprovalAsk }
	r.api.Enqueue(shell(command, true))
	out, err := newAgent(t, r.driver(t, ask), store).Run(ctx, &run.Input{InputContent: "make the file", SessionID: "s1", RunID: "r1", PersistOnStart: true})
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, out.Status, "%v", out.Content)
	require.Len(t, out.Requirements, 1)
	call := out.Requirements[0].ToolExecution
	require.Equal(t, "shell", call.ToolName)
	require.Contains(t, call.ToolArgs["command"], "approved.txt")
	require.NoFileExists(t, target, "nothing runs before the user decides")

	r.api.Enqueue(shell(command, true), fakeopenai.Text("fake-final: made"))
	confirmed := true
	done, err := newAgent(t, r.driver(t, ask), store).ContinueRun(ctx, &run.ContinueRequest{RunID: "r1",
		Tools: []*run.ToolExecution{{ToolCallID: call.ToolCallID, Confirmed: &confirmed}}})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, done.Status, "%v", done.Content)
	require.Equal(t, "r1", done.RunID)
	require.FileExists(t, target, "the approved command ran")
	require.Contains(t, inputText(t, r.api.Requests()[len(r.api.Requests())-2]), "approved your call to shell", "the model was told")
}
