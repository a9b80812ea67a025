package claude_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// The driver's unit tests run it against fakeDriverCLI
// (fake_driver_cli_test.go), so they need no claude binary.

// fake is the scripted CLI of one test: its log, working directory and
// config dir.
type fake struct {
	log, cwd, config string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	return &fake{log: filepath.Join(t.TempDir(), "fake.log"), cwd: t.TempDir(), config: t.TempDir()}
}

// options are a driver's options on the fake in mode.
func (f *fake) options(mode string) claude.Options {
	return claude.Options{Bin: os.Args[0], Cwd: f.cwd, ConfigDir: f.config, InterruptGrace: 500 * time.Millisecond,
		// A race-enabled binary sleeps a second before it exits, unless told not to.
		Env: map[string]string{fakeEnv: mode, fakeLogEnv: f.log, "GORACE": "atexit_sleep_ms=0"}}
}

// driver returns a driver on the fake in mode.
func (f *fake) driver(t *testing.T, mode string, tune ...func(*claude.Options)) *claude.Driver {
	t.Helper()
	opts := f.options(mode)
	for _, fn := range tune {
		fn(&opts)
	}
	d, err := claude.NewDriver(opts)
	require.NoError(t, err)
	return d
}

// fakeProcess is what one fake CLI process was started with and received.
type fakeProcess struct {
	PID   int               `json:"pid"`
	Argv  []string          `json:"argv"`
	Env   map[string]string `json:"env"`
	Stdin []map[string]any  `json:"-"`
}

// processes returns the fake CLIs the driver started, in order.
func (f *fake) processes(t *testing.T) []*fakeProcess {
	t.Helper()
	data, err := os.ReadFile(f.log)
	require.NoError(t, err)
	var procs []*fakeProcess
	for line := range strings.Lines(string(data)) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if _, ok := m["pid"]; ok {
			p := &fakeProcess{}
			require.NoError(t, json.Unmarshal([]byte(line), p))
			procs = append(procs, p)
			continue
		}
		require.NotEmpty(t, procs)
		procs[len(procs)-1].Stdin = append(procs[len(procs)-1].Stdin, m)
	}
	return procs
}

// only returns the only process the driver started.
func (f *fake) only(t *testing.T) *fakeProcess {
	t.Helper()
	procs := f.processes(t)
	require.Len(t, procs, 1)
	return procs[0]
}

// flags are the arguments after the protocol's own.
func (p *fakeProcess) flags(t *testing.T) []string {
	t.Helper()
	require.Equal(t, []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, p.Argv[1:6])
	return p.Argv[6:]
}

// sent returns the lines of a type the process received.
func (p *fakeProcess) sent(kind string) []map[string]any {
	var lines []map[string]any
	for _, m := range p.Stdin {
		if m["type"] == kind {
			lines = append(lines, m)
		}
	}
	return lines
}

// prompts are the texts of the user messages the process received.
func (p *fakeProcess) prompts() []string {
	var prompts []string
	for _, m := range p.sent("user") {
		prompts = append(prompts, promptText(m))
	}
	return prompts
}

// controlRequests are the subtypes of the control requests it received.
func (p *fakeProcess) controlRequests() []string {
	var subtypes []string
	for _, m := range p.sent("control_request") {
		request, _ := m["request"].(map[string]any)
		subtype, _ := request["subtype"].(string)
		subtypes = append(subtypes, subtype)
	}
	return subtypes
}

// answer is the driver's response to the fake's control request id.
func (p *fakeProcess) answer(t *testing.T, requestID string) map[string]any {
	t.Helper()
	for _, m := range p.sent("control_response") {
		response, _ := m["response"].(map[string]any)
		if response["request_id"] == requestID {
			require.Equal(t, "success", response["subtype"])
			payload, _ := response["response"].(map[string]any)
			return payload
		}
	}
	t.Fatalf("the driver did not answer %s", requestID)
	return nil
}

// requireReaped checks that the process is gone.
func (p *fakeProcess) requireReaped(t *testing.T) {
	t.Helper()
	require.ErrorIs(t, syscall.Kill(p.PID, 0), syscall.ESRCH, "CLI %d was reaped", p.PID)
}

// writeTranscript writes a CLI session's transcript where the CLI keeps it.
func (f *fake) writeTranscript(t *testing.T, sessionID string, lines ...string) string {
	t.Helper()
	path := filepath.Join(claude.ProjectDir(f.config, f.cwd), sessionID+".jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	return path
}

// request is a turn request that records what the driver reports.
type request struct {
	*external.TurnRequest
	events   []run.Event
	warnings []run.Warning
	seeded   int
}

// seededPrompt is what newRequest's Seed returns.
func seededPrompt(prompt string) string {
	return "Previous conversation (for context, do not repeat it):\nuser: earlier\n\nCurrent message:\n" + prompt
}

func newRequest(prompt, harness string) *request {
	r := &request{}
	r.TurnRequest = &external.TurnRequest{RunID: "r1", SessionID: "s1", Attempt: 1, Prompt: prompt, HarnessSession: harness,
		Seed: func(context.Context) (string, error) {
			r.seeded++
			return seededPrompt(prompt), nil
		},
		Emit: func(e run.Event) { r.events = append(r.events, e) },
		Warn: func(w run.Warning) { r.warnings = append(r.warnings, w) }}
	return r
}

// names are the events' names.
func (r *request) names() []string {
	var names []string
	for _, e := range r.events {
		names = append(names, e.EventName())
	}
	return names
}

// content is the text of the RunContent events.
func (r *request) content() []string {
	var content []string
	for _, e := range r.events {
		if c, ok := e.(*run.RunContent); ok {
			s, _ := c.Content.(string)
			content = append(content, s)
		}
	}
	return content
}

// warningTypes are the warnings' types.
func (r *request) warningTypes() []string {
	var types []string
	for _, w := range r.warnings {
		types = append(types, w.Type)
	}
	return types
}

// turnContext bounds a turn of the fake.
func turnContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestDriverDefaultFlagsAndEnvironment(t *testing.T) {
	f := newFake(t)
	d := f.driver(t, "driver-ok", func(o *claude.Options) { o.Env["AGNOGO_TEST_EXTRA"] = "passed on" })
	req := newRequest("hello", "")
	res, err := d.Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)

	p := f.only(t)
	require.Equal(t, []string{"--replay-user-messages", "--model=" + claude.DefaultModel}, p.flags(t),
		"no resume, no partial messages, no permission prompt tool, no schema")
	require.Equal(t, "claude-sonnet-4-6", claude.DefaultModel)
	require.Equal(t, f.config, p.Env["CLAUDE_CONFIG_DIR"])
	require.Equal(t, "sdk-go", p.Env["CLAUDE_CODE_ENTRYPOINT"])
	require.Equal(t, "passed on", p.Env["AGNOGO_TEST_EXTRA"], "Options.Env is added")
	require.Equal(t, []string{"initialize"}, p.controlRequests())
	require.Equal(t, []string{seededPrompt("hello")}, p.prompts(), "a fresh session gets the seeded prompt")
	require.Equal(t, 1, req.seeded)

	require.Equal(t, freshSession, req.HarnessSession, "the session id of the init line")
	require.Equal(t, "fake-answer: "+seededPrompt("hello"), res.Content)
	require.Equal(t, []string{"fake-answer: " + seededPrompt("hello")}, req.content())
	require.Equal(t, claude.DefaultModel, res.Model)
	require.Len(t, res.Messages, 2)
	require.Equal(t, run.RoleUser, res.Messages[0].Role, "the CLI's echo of the prompt")
	require.Equal(t, run.RoleAssistant, res.Messages[1].Role)
	require.Equal(t, int64(100), res.Metrics.InputTokens)
	require.InDelta(t, turnCost, *res.Metrics.Cost, 1e-9)
	require.Empty(t, req.warnings)
	p.requireReaped(t)
}

func TestDriverPassesEveryOptionAsAFlag(t *testing.T) {
	f := newFake(t)
	f.writeTranscript(t, "kept-session", `{"type":"user","uuid":"u1","sessionId":"kept-session","message":{"role":"user","content":"earlier"}}`)
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	d := f.driver(t, "driver-ok", func(o *claude.Options) {
		o.Model = "claude-opus-4-7"
		o.SystemPrompt = "Be terse; --never-a-flag."
		o.PermissionMode = "acceptEdits"
		o.Tools = []string{"Bash", "Read"}
		o.AllowedTools = []string{"Bash(git log:*)", "Read"}
		o.DisallowedTools = []string{"WebFetch", "WebSearch"}
		o.MCPServers = map[string]any{"files": map[string]any{"command": "mcp-files", "args": []string{"--root", "/srv"}}}
		o.StrictMCPConfig = true
		o.SettingSources = []string{"project", "local"}
		o.MaxTurns = 7
		o.MaxBudgetUSD = 2.5
		o.ConfirmTools = true
	})
	req := newRequest("who?", "kept-session")
	req.OutputSchema = schema
	req.Stream = true
	_, err := d.Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.Equal(t, []string{
		"--replay-user-messages",
		"--model=claude-opus-4-7",
		"--system-prompt=Be terse; --never-a-flag.",
		"--permission-mode=acceptEdits",
		"--tools=Bash,Read",
		"--allowedTools=Bash(git log:*),Read",
		"--disallowedTools=WebFetch,WebSearch",
		`--mcp-config={"mcpServers":{"files":{"args":["--root","/srv"],"command":"mcp-files"}}}`,
		"--strict-mcp-config",
		"--setting-sources=project,local",
		"--max-turns=7",
		"--max-budget-usd=2.5",
		"--json-schema=" + string(schema),
		"--permission-prompt-tool=stdio",
		"--resume=kept-session",
		"--include-partial-messages",
	}, f.only(t).flags(t))
	require.Equal(t, []string{"who?"}, f.only(t).prompts(), "a resumed session gets the prompt alone")
	require.Zero(t, req.seeded)
	require.Equal(t, "kept-session", req.HarnessSession)
}

func TestNewDriverRefusesBadOptions(t *testing.T) {
	_, err := claude.NewDriver(claude.Options{MaxTurns: -1, ConfigDir: t.TempDir()})
	require.Error(t, err)
	_, err = claude.NewDriver(claude.Options{MaxBudgetUSD: -0.5, ConfigDir: t.TempDir()})
	require.Error(t, err)
	_, err = claude.NewDriver(claude.Options{Env: map[string]string{"CLAUDE_CODE_ENTRYPOINT": "cli"}, ConfigDir: t.TempDir()})
	require.ErrorContains(t, err, "CLAUDE_CODE_ENTRYPOINT")

	d, err := claude.NewDriver(claude.Options{Env: map[string]string{"CLAUDE_CONFIG_DIR": "/from/env"}, Cwd: "relative"})
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(d.Cwd()))
	id, provider := d.Model()
	require.Equal(t, claude.DefaultModel, id)
	require.Equal(t, claude.ProviderName, provider)
	require.Equal(t, claude.SessionKey, d.SessionKey())
	require.Equal(t, claude.Framework, d.SDK())
}

// TestDriverStreamsPartialMessages: only a streamed turn asks for partial
// messages; its text arrives in deltas and is not sent again whole.
func TestDriverStreamsPartialMessages(t *testing.T) {
	f := newFake(t)
	req := newRequest("hello there", "")
	req.Seed = func(context.Context) (string, error) { return "hello there", nil }
	req.Stream = true
	res, err := f.driver(t, "driver-ok").Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.Contains(t, f.only(t).flags(t), "--include-partial-messages")
	require.Equal(t, []string{"fake-answer: ", "hello ", "there"}, req.content())
	require.Equal(t, "fake-answer: hello there", res.Content)
}

// recorded returns the lines of a recorded CLI output after its init line.
func recorded(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var kept []string
	for line := range strings.Lines(string(data)) {
		if !strings.Contains(line, `"subtype":"init"`) {
			kept = append(kept, strings.TrimSpace(line))
		}
	}
	return strings.Join(kept, "\n")
}

// failedResult is a result line of a failed turn, as the CLI writes one
// (shapes recorded from claude 2.1.332 against the fake Messages API),
// with fields (a JSON object's members) set.
func failedResult(fields string) string {
	line := map[string]any{}
	for _, part := range []string{`{"type":"result","subtype":"success","is_error":true,"duration_ms":690,"duration_api_ms":0,"num_turns":1,` +
		`"stop_reason":"stop_sequence","session_id":"recorded","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0,` +
		`"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"modelUsage":{},"permission_denials":[],` +
		`"uuid":"9bf64173-0cb9-4f3e-8350-41750192e929"}`, "{" + fields + "}"} {
		if err := json.Unmarshal([]byte(part), &line); err != nil {
			panic(err)
		}
	}
	data, _ := json.Marshal(line)
	return string(data)
}

func TestDriverClassifiesFailedTurns(t *testing.T) {
	cases := []struct {
		name, lines, errorType, message string
		permanent                       bool
	}{
		{"max turns", recorded(t, "claude-max-turns-error.json"), "max_turns", "Reached maximum number of turns (1)", true},
		{"max budget", failedResult(`"subtype":"error_max_budget_usd","terminal_reason":"max_budget","errors":["Reached maximum budget ($0.01)"]`), "max_budget", "maximum budget", true},
		{"structured output retries", failedResult(`"subtype":"error_max_structured_output_retries","errors":["Failed to provide valid structured output after 5 attempts"]`), "output_validation_error", "structured output", true},
		{"authentication", failedResult(`"result":"Failed to authenticate. API Error: 401 fake error 401","api_error_status":401,"terminal_reason":"api_error"`), "authentication_error", "401", true},
		{"forbidden", failedResult(`"result":"API Error: 403 fake error 403","api_error_status":403,"terminal_reason":"api_error"`), "authentication_error", "403", true},
		{"billing", failedResult(`"result":"API Error: 402 fake error 402","api_error_status":402,"terminal_reason":"api_error"`), "billing_error", "402", true},
		{"overloaded", recorded(t, "claude-api-error-529.jsonl"), "server_error", "API Error: 529", false},
		{"rate limit", failedResult(`"result":"API Error: Request rejected (429) · fake error 429","api_error_status":429,"terminal_reason":"api_error"`), "rate_limit", "429", false},
		{"bad request", failedResult(`"result":"API Error: 400 fake error 400","api_error_status":400,"terminal_reason":"api_error"`), "bad_request", "400", true},
		{"prompt too long", failedResult(`"result":"Prompt is too long · the request is ~300000 tokens (limit 200000)","api_error_status":400,"terminal_reason":"prompt_too_long"`), "context_window_exceeded", "Prompt is too long", true},
		{"connection refused", failedResult(`"result":"API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)","api_error_status":null,"terminal_reason":"api_error"`), "connection_error", "ECONNREFUSED", false},
		{"execution error", failedResult(`"subtype":"error_during_execution","errors":["something broke"]`), "run_error", "something broke", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			req := newRequest("go", "")
			res, err := f.driver(t, "driver-lines", func(o *claude.Options) { o.Env[fakeLinesEnv] = c.lines }).Turn(turnContext(t), req.TurnRequest)
			var turnErr *external.TurnError
			require.ErrorAs(t, err, &turnErr, "%v", err)
			require.Equal(t, c.errorType, turnErr.Type, err.Error())
			require.Equal(t, c.permanent, turnErr.Permanent)
			require.ErrorContains(t, err, c.message)
			require.NotNil(t, res, "what the turn did is returned with its failure")
			require.NotNil(t, res.Metrics)
			require.Equal(t, freshSession, req.HarnessSession)
			require.Equal(t, 1, req.seeded)
			require.Len(t, f.processes(t), 1, "a failed turn that got a result is not run again by the driver")
		})
	}
}

// TestDriverWarnsOfAGarbledLine: a line the CLI garbled is a warning; the
// turn goes on.
func TestDriverWarnsOfAGarbledLine(t *testing.T) {
	f := newFake(t)
	req := newRequest("go", "")
	lines := "this is not json\n" + recorded(t, "claude-p-stream-json-tool.jsonl")
	res, err := f.driver(t, "driver-lines", func(o *claude.Options) { o.Env[fakeLinesEnv] = lines }).Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.Equal(t, "fake-final: hi from bash", res.Content)
	require.Equal(t, []string{run.EventToolCallStarted, run.EventToolCallCompleted, run.EventRunContent}, req.names())
	require.Equal(t, []string{"unreadable_cli_output"}, req.warningTypes())
	require.Contains(t, req.warnings[0].Error, "this is not json")
}

func TestDriverCLINotFoundIsPermanent(t *testing.T) {
	f := newFake(t)
	req := newRequest("go", "some-session")
	_, err := f.driver(t, "driver-ok", func(o *claude.Options) { o.Bin = filepath.Join(t.TempDir(), "no-claude-here") }).Turn(turnContext(t), req.TurnRequest)
	var turnErr *external.TurnError
	require.ErrorAs(t, err, &turnErr)
	require.Equal(t, "cli_not_found", turnErr.Type)
	require.True(t, turnErr.Permanent)
	require.ErrorIs(t, err, claude.ErrCLINotFound)
	require.Zero(t, req.seeded, "a missing CLI is no reason to start the session afresh")
	require.Equal(t, "some-session", req.HarnessSession)
}

// TestDriverSeedsAFreshSessionWhenTheCLICannotResume: the CLI fails
// before saying anything because it has no such session (as claude
// 2.1.332 does: an error result, "No conversation found" on stderr, status
// 1; or silently; or in its initialize answer), or it dies before saying
// anything: the driver starts a fresh session seeded with the
// conversation, and says so.
func TestDriverSeedsAFreshSessionWhenTheCLICannotResume(t *testing.T) {
	for _, c := range []struct{ name, mode, missing, transcript, why string }{
		{name: "error result", mode: "driver-ok", why: "No conversation found with session ID: gone-session"},
		{name: "silent exit", mode: "driver-ok", missing: "quiet", why: "No conversation found with session ID: gone-session"},
		{name: "initialize error", mode: "driver-ok", missing: "initialize-error", why: "No conversation found with session ID: gone-session"},
		{name: "crash before speaking", mode: "driver-crash", transcript: "kept", why: "out of cheese"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			if c.transcript != "" {
				f.writeTranscript(t, "gone-session", `{"type":"user","uuid":"u1","sessionId":"gone-session","message":{"role":"user","content":"earlier"}}`)
			}
			d := f.driver(t, c.mode, func(o *claude.Options) { o.Env[fakeMissingEnv] = c.missing })
			req := newRequest("what was it?", "gone-session")
			res, err := d.Turn(turnContext(t), req.TurnRequest)
			require.NoError(t, err)

			procs := f.processes(t)
			require.Len(t, procs, 2)
			require.Contains(t, procs[0].flags(t), "--resume=gone-session")
			require.NotContains(t, strings.Join(procs[1].flags(t), " "), "--resume")
			require.Equal(t, []string{seededPrompt("what was it?")}, procs[1].prompts())
			require.Equal(t, 1, req.seeded)

			require.Equal(t, []string{"session_not_resumable"}, req.warningTypes())
			require.Contains(t, req.warnings[0].Error, c.why)
			require.Equal(t, freshSession, req.HarnessSession, "the new session replaces the lost one")
			require.Equal(t, "fake-answer: "+seededPrompt("what was it?"), res.Content)
			procs[0].requireReaped(t)
			procs[1].requireReaped(t)
		})
	}
}

// TestDriverDoesNotSeedAfterTheCLISpoke: a resumed turn that fails once
// the CLI has answered keeps its session and runs one CLI only.
func TestDriverDoesNotSeedAfterTheCLISpoke(t *testing.T) {
	t.Run("error result", func(t *testing.T) {
		f := newFake(t)
		f.writeTranscript(t, "kept-session", `{"type":"user","uuid":"u1","sessionId":"kept-session","message":{"role":"user","content":"earlier"}}`)
		req := newRequest("again", "kept-session")
		_, err := f.driver(t, "driver-lines", func(o *claude.Options) { o.Env[fakeLinesEnv] = recorded(t, "claude-api-error-529.jsonl") }).
			Turn(turnContext(t), req.TurnRequest)
		var turnErr *external.TurnError
		require.ErrorAs(t, err, &turnErr)
		require.Equal(t, "server_error", turnErr.Type)
		p := f.only(t)
		require.Contains(t, p.flags(t), "--resume=kept-session")
		require.Equal(t, []string{"again"}, p.prompts())
		require.Zero(t, req.seeded)
		require.Empty(t, req.warnings)
		require.Equal(t, "kept-session", req.HarnessSession)
	})
	t.Run("crash", func(t *testing.T) {
		f := newFake(t)
		f.writeTranscript(t, "kept-session", `{"type":"user","uuid":"u1","sessionId":"kept-session","message":{"role":"user","content":"earlier"}}`)
		req := newRequest("again", "kept-session")
		res, err := f.driver(t, "driver-crash", func(o *claude.Options) { o.Env[fakeSpeakEnv] = "1" }).Turn(turnContext(t), req.TurnRequest)
		require.ErrorIs(t, err, claude.ErrExited)
		require.ErrorContains(t, err, "out of cheese", "the CLI's stderr explains the exit")
		var turnErr *external.TurnError
		require.False(t, errors.As(err, &turnErr), "unclassified: retried by the agent")
		require.Len(t, f.processes(t), 1)
		require.Zero(t, req.seeded)
		require.Empty(t, req.warnings)
		require.Equal(t, "kept-session", req.HarnessSession)
		require.Equal(t, []string{"Let me see"}, req.content())
		require.NotNil(t, res)
	})
}

// TestDriverCancelInterruptsTheTurn: a cancelled turn sends the CLI an
// interrupt, and returns ctx's error as soon as the CLI ends the turn.
func TestDriverCancelInterruptsTheTurn(t *testing.T) {
	f := newFake(t)
	d := f.driver(t, "driver-hang", func(o *claude.Options) { o.InterruptGrace = 3 * time.Second })
	ctx, cancel := context.WithCancel(turnContext(t))
	defer cancel()
	req := newRequest("take your time", "")
	var cancelled time.Time
	req.Emit = func(e run.Event) {
		if _, ok := e.(*run.RunContent); ok && cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
	}
	_, err := d.Turn(ctx, req.TurnRequest)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, cancelled.IsZero())
	require.Less(t, time.Since(cancelled), time.Second, "the CLI ended the turn at once: no waiting out the grace period")
	p := f.only(t)
	require.Equal(t, []string{"initialize", "interrupt"}, p.controlRequests())
	require.Equal(t, freshSession, req.HarnessSession, "the session can be resumed")
	p.requireReaped(t)
}

// TestDriverCancelKillsAStubbornCLI: a CLI that ignores the interrupt, the
// end of its input and SIGTERM is killed after InterruptGrace.
func TestDriverCancelKillsAStubbornCLI(t *testing.T) {
	f := newFake(t)
	const grace = 300 * time.Millisecond
	d := f.driver(t, "driver-stubborn", func(o *claude.Options) { o.InterruptGrace = grace })
	ctx, cancel := context.WithCancel(turnContext(t))
	defer cancel()
	req := newRequest("take your time", "")
	var cancelled time.Time
	req.Emit = func(e run.Event) {
		if _, ok := e.(*run.RunContent); ok && cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
	}
	_, err := d.Turn(ctx, req.TurnRequest)
	require.ErrorIs(t, err, context.Canceled)
	elapsed := time.Since(cancelled)
	require.GreaterOrEqual(t, elapsed, grace, "the CLI had its grace period")
	require.Less(t, elapsed, grace+1500*time.Millisecond, "then it was killed")
	p := f.only(t)
	require.Equal(t, []string{"initialize", "interrupt"}, p.controlRequests())
	p.requireReaped(t)
}

func TestDriverCancelledBeforeTheTurn(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := f.driver(t, "driver-ok").Turn(ctx, newRequest("go", "").TurnRequest)
	require.ErrorIs(t, err, context.Canceled)
}

// bashInput is the input of the fake's Bash call that needs permission.
var bashInput = map[string]any{"command": "touch made-by-bash", "description": "fake model runs a command"}

// decision is a user's decision on a Bash call.
func decision(input map[string]any, confirmed bool, note string) *run.ToolExecution {
	return &run.ToolExecution{ToolCallID: "toolu_earlier", ToolName: "Bash", ToolArgs: input, Confirmed: &confirmed, ConfirmationNote: note}
}

// TestDriverPausesOnAPermissionPrompt: with ConfirmTools, a call the CLI
// asks about is refused with an interrupt and the turn pauses on it.
func TestDriverPausesOnAPermissionPrompt(t *testing.T) {
	for name, decisions := range map[string][]*run.ToolExecution{"no decisions": nil, "decisions on other calls": {
		decision(map[string]any{"command": "rm -rf /", "description": "fake model runs a command"}, true, ""), // another call
		{ToolName: "Bash", ToolArgs: bashInput}, // undecided
	}} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			req := newRequest("make it", "")
			req.Decisions = decisions
			res, err := f.driver(t, "driver-permission", func(o *claude.Options) { o.ConfirmTools = true }).Turn(turnContext(t), req.TurnRequest)
			var pause *external.PauseError
			require.ErrorAs(t, err, &pause, "%v", err)
			require.Len(t, pause.Tools, 1)
			require.Equal(t, pausedToolUse, pause.Tools[0].ToolCallID)
			require.Equal(t, "Bash", pause.Tools[0].ToolName)
			require.Equal(t, bashInput, pause.Tools[0].ToolArgs)

			p := f.only(t)
			require.Contains(t, p.flags(t), "--permission-prompt-tool=stdio")
			require.Equal(t, map[string]any{"behavior": "deny", "interrupt": true,
				"message": "This call needs the user's approval; the run is paused until they decide."}, p.answer(t, "perm-req-1"))
			require.Equal(t, map[string]any{}, p.answer(t, "hook-req-1"), "a request that is not a permission prompt gets an empty success")

			require.Equal(t, []string{run.EventToolCallStarted}, req.names(), "the refusal is not shown as a failed call")
			for _, m := range res.Messages {
				require.False(t, m.Role == run.RoleTool && m.ToolCallID == pausedToolUse, "the refused result is not kept")
			}
			require.Equal(t, freshSession, req.HarnessSession)
			require.Empty(t, req.warnings)
		})
	}
}

func TestDriverAnswersAPermissionPromptWithTheUsersDecision(t *testing.T) {
	t.Run("approved", func(t *testing.T) {
		f := newFake(t)
		req := newRequest("make it", freshSession)
		f.writeTranscript(t, freshSession, `{"type":"user","uuid":"u1","sessionId":"`+freshSession+`","message":{"role":"user","content":"make it"}}`)
		req.Decisions = []*run.ToolExecution{decision(map[string]any{"description": "fake model runs a command", "command": "touch made-by-bash"}, true, "")}
		res, err := f.driver(t, "driver-permission", func(o *claude.Options) { o.ConfirmTools = true }).Turn(turnContext(t), req.TurnRequest)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"behavior": "allow", "updatedInput": bashInput}, f.only(t).answer(t, "perm-req-1"))
		require.Equal(t, "fake-final: (Bash completed with no output)", res.Content)
		require.Equal(t, []string{run.EventToolCallStarted, run.EventToolCallCompleted, run.EventRunContent}, req.names())
	})
	t.Run("declined", func(t *testing.T) {
		f := newFake(t)
		req := newRequest("make it", "")
		req.Decisions = []*run.ToolExecution{decision(bashInput, false, "Not in this directory.")}
		res, err := f.driver(t, "driver-permission", func(o *claude.Options) { o.ConfirmTools = true }).Turn(turnContext(t), req.TurnRequest)
		require.NoError(t, err)
		const told = "The user declined this call. Not in this directory."
		require.Equal(t, map[string]any{"behavior": "deny", "message": told}, f.only(t).answer(t, "perm-req-1"))
		require.Equal(t, "fake-final: "+told, res.Content)
		require.Equal(t, []string{run.EventToolCallStarted, run.EventToolCallError, run.EventRunContent}, req.names(), "a declined call failed")
		require.Equal(t, told, req.events[1].(*run.ToolCallError).Error)
	})
	t.Run("prompts not enabled", func(t *testing.T) {
		f := newFake(t)
		req := newRequest("make it", "")
		res, err := f.driver(t, "driver-permission").Turn(turnContext(t), req.TurnRequest)
		require.NoError(t, err)
		p := f.only(t)
		require.NotContains(t, p.flags(t), "--permission-prompt-tool=stdio")
		require.Equal(t, map[string]any{"behavior": "deny", "message": "permission prompts are not enabled for this agent"}, p.answer(t, "perm-req-1"))
		require.Equal(t, "fake-final: permission prompts are not enabled for this agent", res.Content)
		require.Equal(t, []string{run.EventToolCallStarted, run.EventToolCallError, run.EventRunContent}, req.names())
	})
}

var nameSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)

// TestDriverStructuredOutput: the answer of a --json-schema turn is the
// StructuredOutput call's input, sent once as the run's content; the call
// itself and the narration around it are not shown.
func TestDriverStructuredOutput(t *testing.T) {
	f := newFake(t)
	req := newRequest("who?", "")
	req.OutputSchema = nameSchema
	res, err := f.driver(t, "driver-ok").Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.Contains(t, f.only(t).flags(t), "--json-schema="+string(nameSchema))
	require.Equal(t, map[string]any{"name": "bob"}, res.Structured)
	require.JSONEq(t, `{"name":"bob"}`, res.Content)

	require.Equal(t, []string{run.EventToolCallStarted, run.EventToolCallCompleted, run.EventRunContent}, req.names(),
		"the Bash call, then the answer once")
	require.Equal(t, []string{res.Content}, req.content())
	for _, e := range req.events {
		if started, ok := e.(*run.ToolCallStarted); ok {
			require.Equal(t, "Bash", started.Tool.ToolName)
		}
	}
	require.Len(t, res.Tools, 1)
	require.Equal(t, "Bash", res.Tools[0].ToolName)
	for _, m := range res.Messages {
		require.NotEqual(t, "StructuredOutput", m.ToolName)
		for _, call := range m.ToolCalls {
			require.NotEqual(t, "StructuredOutput", call.Function.Name)
		}
	}
}

func TestDriverStructuredOutputFromARecordedResult(t *testing.T) {
	f := newFake(t)
	req := newRequest("who?", "")
	req.OutputSchema = nameSchema
	res, err := f.driver(t, "driver-lines", func(o *claude.Options) { o.Env[fakeLinesEnv] = recorded(t, "claude-p-json-schema-result.json") }).
		Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"name": "bob"}, res.Structured)
	require.Equal(t, []string{`{"name":"bob"}`}, req.content())
}

func TestDriverStructuredOutputMissing(t *testing.T) {
	f := newFake(t)
	req := newRequest("who?", "")
	req.OutputSchema = nameSchema
	_, err := f.driver(t, "driver-unstructured").Turn(turnContext(t), req.TurnRequest)
	var turnErr *external.TurnError
	require.ErrorAs(t, err, &turnErr)
	require.Equal(t, "output_validation_error", turnErr.Type)
	require.True(t, turnErr.Permanent)
	require.Empty(t, req.content(), "no answer is shown")
}

func openStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agnogo.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return store
}

// mainKey is the key of a CLI session's main transcript.
func mainKey(sessionID string) storage.TranscriptKey {
	return storage.TranscriptKey{Framework: claude.Framework, ProjectKey: "coder", SessionID: sessionID}
}

// fileLines reads a file's lines.
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestDriverMirrorsTheTranscriptAcrossReplicas: a turn's transcript is
// stored; another replica, with an empty config dir, restores it, resumes
// the session (no seeding) and stores only the lines it added. The
// resumed turn costs its own share of the session's running total.
func TestDriverMirrorsTheTranscriptAcrossReplicas(t *testing.T) {
	store := openStore(t)
	withStore := func(o *claude.Options) { o.Transcripts, o.ProjectKey = store, "coder" }
	first := newFake(t)
	req := newRequest("one", "")
	_, err := first.driver(t, "driver-ok", withStore).Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.Empty(t, req.warnings)
	file := filepath.Join(claude.ProjectDir(first.config, first.cwd), freshSession+".jsonl")
	firstLines := fileLines(t, file)
	require.Len(t, firstLines, 3, "prompt, answer, cost-state")
	stored, err := store.ReadTranscript(t.Context(), mainKey(freshSession), "", 0)
	require.NoError(t, err)
	require.Len(t, stored, 3)
	for i, e := range stored {
		require.JSONEq(t, firstLines[i], string(e.Entry))
	}

	second := &fake{log: first.log, cwd: first.cwd, config: t.TempDir()}
	req = newRequest("two", freshSession)
	res, err := second.driver(t, "driver-ok", withStore).Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.Empty(t, req.warnings, "resumed: the restored transcript was found")
	require.Zero(t, req.seeded)
	procs := first.processes(t)
	require.Len(t, procs, 2)
	require.Contains(t, procs[1].flags(t), "--resume="+freshSession)
	require.Equal(t, []string{"two"}, procs[1].prompts())
	require.InDelta(t, turnCost, *res.Metrics.Cost, 1e-9, "the turn's own cost, not the session's running total")

	secondLines := fileLines(t, filepath.Join(claude.ProjectDir(second.config, second.cwd), freshSession+".jsonl"))
	require.Len(t, secondLines, 6)
	require.Equal(t, firstLines, secondLines[:3], "restored verbatim")
	again, err := store.ReadTranscript(t.Context(), mainKey(freshSession), "", 0)
	require.NoError(t, err)
	require.Len(t, again, 6, "only the new lines were appended")
	for i := range stored {
		require.Equal(t, stored[i].EntryID, again[i].EntryID)
		require.Equal(t, stored[i].Position, again[i].Position)
	}
}

// TestDriverMirrorsFromASymlinkedCwd: the CLI keeps its transcripts under
// its physical working directory, which the mirror finds.
func TestDriverMirrorsFromASymlinkedCwd(t *testing.T) {
	store := openStore(t)
	f := newFake(t)
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(f.cwd, link))
	req := newRequest("one", "")
	_, err := f.driver(t, "driver-ok", func(o *claude.Options) { o.Cwd, o.Transcripts, o.ProjectKey = link, store, "coder" }).
		Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.Empty(t, req.warnings)
	stored, err := store.ReadTranscript(t.Context(), mainKey(freshSession), "", 0)
	require.NoError(t, err)
	require.Len(t, stored, 3, "the transcript the CLI wrote was found and stored")
}

// TestDriverResumedTurnCostsItsOwnShare: a resumed CLI reports the
// session's running totals; the turn counts the difference from the
// transcript's last cost-state, per model too.
func TestDriverResumedTurnCostsItsOwnShare(t *testing.T) {
	f := newFake(t)
	f.writeTranscript(t, "priced",
		`{"type":"user","uuid":"u1","sessionId":"priced","message":{"role":"user","content":"earlier"}}`,
		`{"type":"cost-state","sessionId":"priced","totalCostUSD":0.5,"modelUsage":{}}`,
		`{"type":"cost-state","sessionId":"priced","totalCostUSD":1.0,"modelUsage":{`+
			`"claude-sonnet-4-6":{"inputTokens":1000,"outputTokens":100,"cacheReadInputTokens":40,"cacheCreationInputTokens":0,"costUSD":0.9},`+
			`"claude-haiku-4-5":{"inputTokens":500,"outputTokens":50,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.1}}}`,
		`{"type":"user","uuid":"u2","sessionId":"priced","message":{"role":"user","content":"a \"cost-state\" mention is no cost-state"}}`)
	req := newRequest("again", "priced")
	res, err := f.driver(t, "driver-ok").Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.InDelta(t, 0.25, *res.Metrics.Cost, 1e-9, "1.25 in all, 1.0 before")
	detail := res.Metrics.Details[run.ModelTypeModel]
	require.Len(t, detail, 1, "a model used by earlier turns only is not this turn's")
	require.Equal(t, "claude-sonnet-4-6", detail[0].ID)
	require.Equal(t, claude.ProviderName, detail[0].Provider)
	require.Equal(t, int64(100), detail[0].InputTokens, "1100 (and 40 cache reads) in all, 1000 (and 40) before")
	require.Equal(t, int64(0), detail[0].CacheReadTokens)
	require.Equal(t, int64(10), detail[0].OutputTokens)
	require.Equal(t, int64(110), detail[0].TotalTokens)
	require.InDelta(t, 0.25, *detail[0].Cost, 1e-9)
	require.Equal(t, int64(100), res.Metrics.InputTokens, "the result's usage is the turn's own")
}

// failingStore is a transcript store whose appends (or reads) fail.
type failingStore struct {
	storage.TranscriptStore
	appends, reads bool
}

var errStoreDown = errors.New("the database is down")

func (s failingStore) AppendTranscript(ctx context.Context, key storage.TranscriptKey, agnoSessionID, userID string, entries []json.RawMessage) ([]storage.TranscriptEntry, error) {
	if s.appends {
		return nil, errStoreDown
	}
	return s.TranscriptStore.AppendTranscript(ctx, key, agnoSessionID, userID, entries)
}

func (s failingStore) ReadTranscript(ctx context.Context, key storage.TranscriptKey, userID string, afterPosition int64) ([]storage.TranscriptEntry, error) {
	if s.reads {
		return nil, errStoreDown
	}
	return s.TranscriptStore.ReadTranscript(ctx, key, userID, afterPosition)
}

func TestDriverMirrorFailureIsAWarning(t *testing.T) {
	f := newFake(t)
	req := newRequest("one", "")
	res, err := f.driver(t, "driver-ok", func(o *claude.Options) { o.Transcripts = failingStore{TranscriptStore: openStore(t), appends: true} }).
		Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err, "the turn itself succeeded")
	require.Equal(t, "fake-answer: "+seededPrompt("one"), res.Content)
	require.Equal(t, []string{"transcript_persistence_failed"}, req.warningTypes())
	require.Contains(t, req.warnings[0].Error, errStoreDown.Error())
}

// TestDriverRestoreFailureIsAWarning: a transcript that cannot be read
// back leaves the CLI without the session, which is then seeded afresh.
func TestDriverRestoreFailureIsAWarning(t *testing.T) {
	f := newFake(t)
	req := newRequest("two", "stored-elsewhere")
	_, err := f.driver(t, "driver-ok", func(o *claude.Options) { o.Transcripts = failingStore{TranscriptStore: openStore(t), reads: true} }).
		Turn(turnContext(t), req.TurnRequest)
	require.NoError(t, err)
	require.Equal(t, []string{"transcript_restore_failed", "session_not_resumable", "transcript_persistence_failed"}, req.warningTypes())
	require.Equal(t, freshSession, req.HarnessSession)
	require.Len(t, f.processes(t), 2)
}

// TestDriverBranch forks the CLI session of a run at its last kept
// checkpoint, into a new session the CLI can resume.
func TestDriverBranch(t *testing.T) {
	f := newFake(t)
	store := openStore(t)
	noStore, err := f.driver(t, "driver-ok").Branch(t.Context(), &external.BranchRequest{SessionID: "s1", Run: &run.Output{RunID: "r1"}})
	require.ErrorIs(t, err, run.ErrNotContinuable)
	require.Empty(t, noStore)

	d := f.driver(t, "driver-ok", func(o *claude.Options) { o.Transcripts, o.ProjectKey = store, "coder" })
	lines := []string{
		`{"type":"queue-operation","operation":"enqueue","sessionId":"orig"}`,
		`{"type":"user","uuid":"u1","sessionId":"orig","message":{"role":"user","content":"run it"}}`,
		`{"type":"assistant","uuid":"a1","sessionId":"orig","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}`,
		`{"type":"user","uuid":"r1","sessionId":"orig","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}`,
		`{"type":"assistant","uuid":"a2","sessionId":"orig","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}`,
	}
	f.writeTranscript(t, "orig", lines...)
	mirror := &claude.Mirror{Store: store, ProjectKey: "coder", ConfigDir: f.config, Cwd: f.cwd, AgnoSessionID: "s1"}
	require.NoError(t, mirror.Save(t.Context(), "orig"))

	ref := func(uuid string) map[string]any {
		return map[string]any{claude.ProviderDataKey: map[string]any{"session_id": "orig", "uuid": uuid}}
	}
	prompt := &run.Message{Role: run.RoleUser, Content: "run it", ProviderData: ref("u1")}
	call := &run.Message{Role: run.RoleAssistant, ToolCalls: []run.ToolCall{{ID: "t1"}}, ProviderData: ref("a1")}
	result := &run.Message{Role: run.RoleTool, ToolCallID: "t1", Content: "ok", CheckpointStatus: claude.CheckpointStatus, ProviderData: ref("r1")}
	answer := &run.Message{Role: run.RoleAssistant, Content: "done", ProviderData: ref("a2")}
	out := &run.Output{RunID: "r1", Messages: []*run.Message{prompt, call, result, answer}}

	branch := func(kept ...*run.Message) []string {
		t.Helper()
		id, err := d.Branch(t.Context(), &external.BranchRequest{SessionID: "s1", Run: out, Kept: kept})
		require.NoError(t, err)
		var uuids []string
		for _, line := range fileLines(t, filepath.Join(claude.ProjectDir(f.config, f.cwd), id+".jsonl")) {
			var entry struct{ UUID, SessionID, Type string }
			require.NoError(t, json.Unmarshal([]byte(line), &entry))
			require.Equal(t, id, entry.SessionID)
			uuids = append(uuids, cmp.Or(entry.UUID, entry.Type))
		}
		return uuids
	}
	require.Equal(t, []string{"queue-operation", "u1", "a1", "r1"}, branch(prompt, call, result), "at the checkpoint, included")
	require.Equal(t, []string{"queue-operation", "u1"}, branch(prompt, call), "a pending call is no place to go on from")
	require.Equal(t, []string{"queue-operation"}, branch(), "nothing kept: before the prompt")
}

// TestDriverMirrorsEachToolBatchAsItLands: the transcript reaches the
// database after each batch of tool results, not only when the turn ends,
// so a replica that dies mid-turn leaves its work where others can resume.
func TestDriverMirrorsEachToolBatchAsItLands(t *testing.T) {
	f := newFake(t)
	store := openStore(t)
	d := f.driver(t, "driver-hang", func(o *claude.Options) { o.Transcripts, o.ProjectKey = store, "coder" })
	ctx, cancel := context.WithCancel(turnContext(t))
	defer cancel()
	req := newRequest("work [[bash]]", "")
	mirrored := make(chan bool, 1)
	req.Emit = func(e run.Event) {
		if _, ok := e.(*run.RunContent); ok { // after the tool result, the turn hangs
			entries, err := store.ReadTranscript(t.Context(), storage.TranscriptKey{Framework: claude.Framework, ProjectKey: "coder", SessionID: freshSession}, "", 0)
			mirrored <- err == nil && strings.Contains(transcriptText(entries), "before-the-hang")
			cancel()
		}
	}
	_, err := d.Turn(ctx, req.TurnRequest)
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, <-mirrored, "the tool result was stored while the turn was still running")
}
