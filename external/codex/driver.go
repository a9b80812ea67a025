package codex

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/run"
)

// DefaultModel is the model a Codex agent asks for when none is set.
const DefaultModel = "gpt-5.6-luna"

// SDK names the harness: the runs' and sessions' metadata.sdk.
const SDK = "codex"

// SessionKey is the session_data key of the Codex thread id.
const SessionKey = "codex_thread_id"

// ClientName is the clientInfo name the driver introduces itself with; the
// app-server sends it to the model API as the originator header.
const ClientName = "agnogo"

// Sandbox modes of [Options.Sandbox].
const (
	// SandboxReadOnly lets commands read, not write.
	SandboxReadOnly = "read-only"
	// SandboxWorkspaceWrite lets commands write in the working directory.
	SandboxWorkspaceWrite = "workspace-write"
	// SandboxFullAccess runs commands unsandboxed (danger-full-access on
	// the wire).
	SandboxFullAccess = "full-access"
)

// Approval modes of [Options.ApprovalMode].
const (
	// ApprovalAutoReview routes escalation requests to Codex's auto_review
	// reviewer (approvalPolicy "on-request", approvalsReviewer
	// "auto_review"); an approval request that still reaches the driver is
	// accepted.
	ApprovalAutoReview = "auto_review"
	// ApprovalDenyAll declines every approval request of the app-server
	// (approvalPolicy "on-request", approvalsReviewer "user").
	ApprovalDenyAll = "deny_all"
	// ApprovalAsk asks a person: a command or file change that needs
	// approval pauses the run (status PAUSED, a confirmation requirement per
	// call), and continuing it with the decision goes on in the same
	// thread — an approved call made again runs, a declined one does not.
	ApprovalAsk = "ask"
)

// DefaultInterruptGrace is how long a cancelled turn may take to wind down
// after its turn/interrupt before the app-server is killed.
const DefaultInterruptGrace = 500 * time.Millisecond

// initializeTimeout bounds the handshake and the thread's start or resume.
const initializeTimeout = 60 * time.Second

// Options configure a [Driver]: the app-server's thread and turn settings
// and its process.
type Options struct {
	// Bin is the codex binary: a path, or a name looked up on PATH.
	// Defaults to "codex".
	Bin string
	// Model is the thread's model. Defaults to [DefaultModel].
	Model string
	// Instructions are developer instructions, added to Codex's system
	// prompt (developerInstructions).
	Instructions string
	// BaseInstructions replace Codex's built-in system prompt
	// (baseInstructions).
	BaseInstructions string
	// Sandbox is read-only, workspace-write or full-access (aliases:
	// read_only, readonly, workspace_write, full_access,
	// danger-full-access, danger_full_access). Empty leaves Codex's
	// configured default.
	Sandbox string
	// ApprovalMode is [ApprovalAutoReview] (the default) or
	// [ApprovalDenyAll].
	ApprovalMode string
	// ReasoningEffort is the turns' effort (minimal … xhigh); empty leaves
	// the model's default.
	ReasoningEffort string
	// Cwd is the app-server's working directory and the thread's cwd.
	// Defaults to the process's; made absolute.
	Cwd string
	// Ephemeral starts threads that write no rollout; they cannot be
	// resumed, so every turn starts a thread seeded with the session's
	// history.
	Ephemeral bool
	// Config are Codex config overrides for every thread (the thread's
	// config param), e.g. {"mcp_servers": {…}}.
	Config map[string]any
	// Env is added to the app-server's environment (this process's).
	Env map[string]string
	// CodexHome is the app-server's CODEX_HOME (configuration, auth,
	// rollouts). Defaults to Env's CODEX_HOME, then this process's; unset,
	// Codex uses ~/.codex.
	CodexHome string
	// InterruptGrace is how long a cancelled turn may take to wind down
	// after its interrupt before the app-server is killed. Defaults to
	// [DefaultInterruptGrace].
	InterruptGrace time.Duration
}

// Driver runs turns on `codex app-server`, one process per turn, over
// JSON-RPC. It implements [external.Driver].
type Driver struct {
	opts    Options
	sandbox string // on the wire
}

var _ external.Driver = (*Driver)(nil)

// sandboxes maps the accepted sandbox names to the wire's.
var sandboxes = map[string]string{
	"read-only": "read-only", "read_only": "read-only", "readonly": "read-only",
	"workspace-write": "workspace-write", "workspace_write": "workspace-write",
	"full-access": "danger-full-access", "full_access": "danger-full-access",
	"danger-full-access": "danger-full-access", "danger_full_access": "danger-full-access",
}

// NewDriver checks opts and returns the driver.
func NewDriver(opts Options) (*Driver, error) {
	d := &Driver{}
	if opts.Sandbox != "" {
		wire, ok := sandboxes[strings.ToLower(strings.TrimSpace(opts.Sandbox))]
		if !ok {
			return nil, fmt.Errorf("codex: unknown sandbox %q: use %s, %s or %s", opts.Sandbox, SandboxReadOnly, SandboxWorkspaceWrite, SandboxFullAccess)
		}
		d.sandbox = wire
	}
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(opts.ApprovalMode)), "-", "_") {
	case "", ApprovalAutoReview:
		opts.ApprovalMode = ApprovalAutoReview
	case ApprovalDenyAll, ApprovalAsk:
	default:
		return nil, fmt.Errorf("codex: unknown approval_mode %q: use %s, %s or %s", opts.ApprovalMode, ApprovalAutoReview, ApprovalDenyAll, ApprovalAsk)
	}
	if opts.InterruptGrace < 0 {
		return nil, errors.New("codex: interrupt_grace must not be negative")
	}
	opts.Bin = cmp.Or(opts.Bin, "codex")
	opts.Model = cmp.Or(opts.Model, DefaultModel)
	opts.InterruptGrace = cmp.Or(opts.InterruptGrace, DefaultInterruptGrace)
	cwd, err := external.WorkDir(opts.Cwd)
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	opts.Cwd = cwd
	opts.CodexHome = cmp.Or(opts.CodexHome, opts.Env["CODEX_HOME"], os.Getenv("CODEX_HOME"))
	d.opts = opts
	return d, nil
}

// SDK implements [external.Driver].
func (d *Driver) SDK() string { return SDK }

// Model implements [external.Driver].
func (d *Driver) Model() (string, string) { return d.opts.Model, ProviderName }

// SessionKey implements [external.Driver].
func (d *Driver) SessionKey() string { return SessionKey }

// Cwd is the app-server's working directory.
func (d *Driver) Cwd() string { return d.opts.Cwd }

// env is the process environment.
func (d *Driver) env() []string {
	env := os.Environ()
	for _, key := range slices.Sorted(maps.Keys(d.opts.Env)) {
		env = append(env, key+"="+d.opts.Env[key])
	}
	if d.opts.CodexHome != "" {
		env = append(env, "CODEX_HOME="+d.opts.CodexHome)
	}
	return env
}

// threadParams are the params of thread/start (start) or thread/resume.
func (d *Driver) threadParams(start bool) map[string]any {
	o := d.opts
	params := map[string]any{"cwd": o.Cwd, "model": o.Model, "approvalPolicy": "on-request"}
	if o.ApprovalMode == ApprovalDenyAll || o.ApprovalMode == ApprovalAsk {
		params["approvalsReviewer"] = "user"
	} else {
		params["approvalsReviewer"] = "auto_review"
	}
	if d.sandbox != "" {
		params["sandbox"] = d.sandbox
	}
	if o.Instructions != "" {
		params["developerInstructions"] = o.Instructions
	}
	if o.BaseInstructions != "" {
		params["baseInstructions"] = o.BaseInstructions
	}
	if len(o.Config) > 0 {
		params["config"] = o.Config
	}
	if start && o.Ephemeral {
		params["ephemeral"] = true
	}
	return params
}

// Turn implements [external.Driver]: it resumes the Codex thread in
// req.HarnessSession, or starts one seeded with the session's history when
// there is none or it is gone ("no rollout found", "invalid session id"),
// then runs one turn on it.
func (d *Driver) Turn(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
	s, err := StartServer(ctx, ServerConfig{Bin: d.opts.Bin, Dir: d.opts.Cwd, Env: d.env(), CloseGrace: d.opts.InterruptGrace})
	if errors.Is(err, ErrCLINotFound) {
		return nil, external.Classify(run.ClassCLINotFound, err)
	}
	if err != nil {
		return nil, err
	}
	defer s.Close()
	setup, cancelSetup := context.WithTimeout(ctx, initializeTimeout)
	th, prompt, err := d.open(setup, s, req)
	cancelSetup()
	if err != nil {
		return nil, d.stopped(ctx, s, err)
	}
	if !d.opts.Ephemeral {
		req.HarnessSession = th.id
	}
	return d.turn(ctx, s, req, th, prompt)
}

// thread is the thread a turn runs on.
type thread struct {
	id    string
	model string
}

// open performs the handshake and resumes or starts the thread; it returns
// the thread and the prompt to send.
func (d *Driver) open(ctx context.Context, s *Server, req *external.TurnRequest) (thread, string, error) {
	if _, err := s.Initialize(ctx, ClientName, clientVersion()); err != nil {
		return thread{}, "", callError("initialize", err)
	}
	if d.opts.Ephemeral {
		req.HarnessSession = "" // an ephemeral thread is never resumed
	}
	if req.HarnessSession != "" {
		params := d.threadParams(false)
		params["threadId"], params["excludeTurns"] = req.HarnessSession, true
		result, err := s.Call(ctx, "thread/resume", params)
		if err == nil {
			t, err := readThread(result)
			return t, req.Prompt, err
		}
		if !notResumable(err) {
			return thread{}, "", callError("resume thread "+req.HarnessSession, err)
		}
		// The stored thread is gone: start afresh, with the history.
		req.Warn(run.Warning{Type: "session_not_resumable", Message: "the Codex thread could not be resumed; a new one was seeded with the conversation", Error: err.Error()})
		req.HarnessSession = ""
	}
	prompt, err := req.Seed(ctx)
	if err != nil {
		return thread{}, "", err
	}
	result, err := s.Call(ctx, "thread/start", d.threadParams(true))
	if err != nil {
		return thread{}, "", callError("start a thread", err)
	}
	t, err := readThread(result)
	return t, prompt, err
}

// readThread reads the result of thread/start or thread/resume.
func readThread(result json.RawMessage) (thread, error) {
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
		Model string `json:"model"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.Thread.ID == "" {
		return thread{}, fmt.Errorf("codex: the app-server answered no thread: %s", external.Clip(result))
	}
	return thread{id: r.Thread.ID, model: r.Model}, nil
}

// callError describes a failed call; an error answer names its method
// already.
func callError(what string, err error) error {
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) {
		return err
	}
	return fmt.Errorf("codex: %s: %w", what, err)
}

// notResumable reports whether a failed thread/resume means the thread is
// gone, so that a fresh one may take its place.
func notResumable(err error) bool {
	message := strings.ToLower(err.Error())
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) {
		message = strings.ToLower(rpcErr.Message)
	}
	return strings.Contains(message, "no rollout found") || strings.Contains(message, "invalid session id")
}

// clientVersion is agnogo's version, as the build knows it.
func clientVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/agnogo/agnogo" {
				return dep.Version
			}
		}
		if info.Main.Path == "github.com/agnogo/agnogo" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			return info.Main.Version
		}
	}
	return "dev"
}

// input is the turn's input: the prompt, and the staged images as local
// images the model sees natively.
func input(req *external.TurnRequest, prompt string) []any {
	items := []any{map[string]any{"type": "text", "text": prompt, "text_elements": []any{}}}
	if req.Staging == nil {
		return items
	}
	for _, f := range req.Staging.Files {
		if f.Path != "" && strings.HasPrefix(f.MimeType, "image/") {
			items = append(items, map[string]any{"type": "localImage", "path": f.Path})
		}
	}
	return items
}

// turn starts the turn and follows it to turn/completed.
func (d *Driver) turn(ctx context.Context, s *Server, req *external.TurnRequest, th thread, prompt string) (*external.TurnResult, error) {
	structured := len(req.OutputSchema) > 0
	params := map[string]any{"threadId": th.id, "input": input(req, prompt)}
	if d.opts.ReasoningEffort != "" {
		params["effort"] = d.opts.ReasoningEffort
	}
	if structured {
		params["outputSchema"] = req.OutputSchema
	}
	started := time.Now()
	f := &follower{driver: d, server: s, thread: th.id, t: NewTurn(started), decisions: req.Decisions}
	if strings.TrimSpace(prompt) == external.CompactInput && req.HarnessSession != "" {
		// Compaction is the app-server's own turn on the thread, whose id
		// the first turn/started of the thread names.
		if _, err := s.Call(ctx, "thread/compact/start", map[string]any{"threadId": th.id}); err != nil {
			return nil, d.stopped(ctx, s, callError("compact the thread", err))
		}
	} else {
		result, err := s.Call(ctx, "turn/start", params)
		if err != nil {
			return nil, d.stopped(ctx, s, callError("start the turn", err))
		}
		var r struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		if err := json.Unmarshal(result, &r); err != nil || r.Turn.ID == "" {
			return nil, fmt.Errorf("codex: the app-server answered no turn: %s", external.Clip(result))
		}
		f.turn = r.Turn.ID
	}
	var readErr error
	for m, err := range s.Messages(ctx, f.done) {
		if err != nil {
			readErr = err
			break
		}
		for _, event := range f.take(m) {
			if f.paused.Hides(event) {
				continue
			}
			if structured {
				if _, content := event.(*run.RunContent); content {
					continue
				}
			}
			req.Emit(event)
		}
	}
	if readErr != nil && ctx.Err() != nil {
		readErr = f.interrupt(ctx.Err())
	}
	t := f.t
	res := &external.TurnResult{Content: t.Content, ReasoningContent: t.Reasoning, Messages: t.Messages, Tools: t.Tools,
		Metrics: t.Metrics(time.Now(), cmp.Or(th.model, d.opts.Model)), Model: th.model}
	if len(f.paused) > 0 && ctx.Err() == nil {
		res.Messages = f.paused.Without(res.Messages)
		return res, &external.PauseError{Tools: f.paused}
	}
	if readErr != nil {
		return res, readErr
	}
	switch t.Status {
	case TurnCompleted:
	case TurnInterrupted:
		return res, fmt.Errorf("codex: the turn was interrupted: %w", context.Canceled)
	default:
		return res, classify(t)
	}
	if structured {
		var object map[string]any
		text := strings.TrimSpace(t.LastMessage)
		if err := json.Unmarshal([]byte(text), &object); err != nil || object == nil {
			return res, external.Classify(run.ClassInvalidOutput,
				fmt.Errorf("codex: the answer is not a JSON object as the output schema asks: %q", external.Clip([]byte(text))))
		}
		res.Structured, res.Content = object, text
		req.Emit(&run.RunContent{Content: text, ContentType: "str"})
	}
	return res, nil
}

// stopped returns ctx's error when the turn was cancelled (killing the
// app-server, which may be stuck), else err.
func (d *Driver) stopped(ctx context.Context, s *Server, err error) error {
	if ctx.Err() != nil {
		s.Kill()
		return ctx.Err()
	}
	return err
}

// follower follows one turn's messages: those of the turn go to the Turn,
// requests are answered, anything else is let by.
type follower struct {
	driver       *Driver
	server       *Server
	thread, turn string
	t            *Turn
	// decisions are the user's answers to the calls a paused run asked
	// about; paused are the calls this turn asks about (ApprovalAsk).
	decisions []*run.ToolExecution
	paused    external.Awaiting
}

// scope names the thread and turn a notification is about, when it says.
type scope struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Turn     struct {
		ID string `json:"id"`
	} `json:"turn"`
}

// scopeOf reads a message's scope.
func scopeOf(m Message) scope {
	var sc scope
	_ = json.Unmarshal(m.Params, &sc)
	if sc.TurnID == "" {
		sc.TurnID = sc.Turn.ID
	}
	return sc
}

// ours reports whether a notification belongs to the turn: it names no
// other thread or turn. (After a resume the app-server repeats the previous
// turn's token usage, which must not count; a subagent's thread has turns
// of its own.)
func (f *follower) ours(m Message) bool {
	sc := scopeOf(m)
	if sc.ThreadID != "" && sc.ThreadID != f.thread {
		return false
	}
	if f.turn == "" && m.Method == "turn/started" && sc.TurnID != "" {
		f.turn = sc.TurnID // the thread's compaction turn
	}
	return sc.TurnID == "" || sc.TurnID == f.turn
}

// done reports whether m ends the turn.
func (f *follower) done(m Message) bool {
	return m.Method == "turn/completed" && !m.IsRequest() && f.ours(m)
}

// take handles one message and returns the events it gives.
func (f *follower) take(m Message) []run.Event {
	if m.IsRequest() {
		if f.ask(m) {
			return nil
		}
		f.driver.answer(f.server, m, f.driver.opts.ApprovalMode == ApprovalDenyAll)
		return nil
	}
	if !f.ours(m) {
		return nil
	}
	return f.t.Apply(m, time.Now())
}

// ask answers an approval request for a command or a file change from the
// user's decisions, or — with ApprovalAsk — declines it, records the call
// as awaiting confirmation and interrupts the turn, which then ends the run
// PAUSED. It reports whether it answered.
func (f *follower) ask(m Message) bool {
	if m.Method != "item/commandExecution/requestApproval" && m.Method != "item/fileChange/requestApproval" {
		return false
	}
	var p struct {
		ItemID  string `json:"itemId"`
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
	}
	_ = json.Unmarshal(m.Params, &p)
	call := &run.ToolExecution{ToolCallID: p.ItemID, ToolName: "apply_patch"}
	if tool, ok := f.t.byID[p.ItemID]; ok {
		call.ToolName, call.ToolArgs = tool.ToolName, tool.ToolArgs
	}
	if m.Method == "item/commandExecution/requestApproval" {
		call.ToolName, call.ToolArgs = "shell", map[string]any{"command": p.Command, "cwd": p.Cwd}
	}
	if decision := decided(f.decisions, call); decision != nil {
		verdict := "decline"
		if *decision.Confirmed {
			verdict = "accept"
		}
		_ = f.server.Respond(m.ID, map[string]any{"decision": verdict})
		return true
	}
	if f.driver.opts.ApprovalMode != ApprovalAsk {
		return false
	}
	f.paused = append(f.paused, call)
	_ = f.server.Respond(m.ID, map[string]any{"decision": "decline"})
	go func() { // the reply comes through the reader this loop waits on
		ctx, cancel := context.WithTimeout(context.Background(), initializeTimeout)
		defer cancel()
		_, _ = f.server.Call(ctx, "turn/interrupt", map[string]any{"threadId": f.thread, "turnId": f.turn})
	}()
	return true
}

// decided returns the user's decision on a call like this one: the same
// tool, and for a command the same command line.
func decided(decisions []*run.ToolExecution, call *run.ToolExecution) *run.ToolExecution {
	for _, d := range decisions {
		if d.Confirmed == nil || d.ToolName != call.ToolName {
			continue
		}
		if call.ToolName == "shell" && d.ToolArgs["command"] != call.ToolArgs["command"] {
			continue
		}
		return d
	}
	return nil
}

// interrupt stops a cancelled turn: turn/interrupt, then the turn's
// remaining messages until turn/completed or InterruptGrace, then the
// app-server is killed if the turn did not end. It returns cause.
func (f *follower) interrupt(cause error) error {
	grace, cancel := context.WithTimeout(context.Background(), f.driver.opts.InterruptGrace)
	defer cancel()
	if _, err := f.server.Call(grace, "turn/interrupt", map[string]any{"threadId": f.thread, "turnId": f.turn}); err != nil {
		f.server.Kill()
		return cause
	}
	ended := false
	for m, err := range f.server.Messages(grace, f.done) {
		if err != nil {
			break
		}
		if m.IsRequest() {
			f.driver.answer(f.server, m, true)
			continue
		}
		if f.ours(m) {
			f.t.Apply(m, time.Now())
		}
		ended = f.done(m)
	}
	if !ended {
		f.server.Kill()
	}
	return cause
}

// answer replies to a request of the app-server, so that it never waits
// on the client: approvals are accepted, or declined when decline is set;
// requests for input the driver cannot give are declined; anything else
// gets a JSON-RPC error.
func (d *Driver) answer(s *Server, m Message, decline bool) {
	accept := "accept"
	if decline {
		accept = "decline"
	}
	var err error
	switch m.Method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		err = s.Respond(m.ID, map[string]any{"decision": accept})
	case "item/permissions/requestApproval":
		var p struct {
			Permissions json.RawMessage `json:"permissions"`
		}
		_ = json.Unmarshal(m.Params, &p)
		granted := any(map[string]any{})
		if !decline && len(p.Permissions) > 0 && string(p.Permissions) != "null" {
			granted = p.Permissions
		}
		err = s.Respond(m.ID, map[string]any{"permissions": granted, "scope": "turn"})
	case "execCommandApproval", "applyPatchApproval":
		decision := any("approved")
		if decline {
			decision = map[string]any{"denied": map[string]any{"rejection": "declined by the agent's approval mode"}}
		}
		err = s.Respond(m.ID, map[string]any{"decision": decision})
	case "mcpServer/elicitation/request":
		err = s.Respond(m.ID, map[string]any{"action": "decline"})
	case "item/tool/requestUserInput":
		err = s.Respond(m.ID, map[string]any{"answers": map[string]any{}})
	case "item/tool/call":
		err = s.Respond(m.ID, map[string]any{"success": false,
			"contentItems": []any{map[string]any{"type": "inputText", "text": "agnogo registered no dynamic tools"}}})
	default:
		err = s.RespondError(m.ID, -32601, "agnogo does not handle "+m.Method)
	}
	_ = err // a failed write means the app-server is gone; the turn sees it exit
}

// statusPattern finds an HTTP status in an error message.
var statusPattern = regexp.MustCompile(`\b(400|401|402|403|404|413|422|429)\b`)

// classify turns a failed turn into a classified error.
func classify(t *Turn) error {
	message := cmp.Or(strings.TrimSpace(t.Error), "the turn ended with status "+cmp.Or(t.Status, "unknown"))
	err := fmt.Errorf("codex: %s", message)
	if kind := classifyInfo(t.ErrorInfo); kind != nil {
		return kind(err)
	}
	lower := strings.ToLower(message)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(lower, w) {
				return true
			}
		}
		return false
	}
	status := statusPattern.FindString(message)
	switch {
	case status == "401" || status == "403" || has("unauthorized", "invalid api key", "incorrect api key", "invalid_api_key", "authentication"):
		return external.Classify(run.ClassAuthentication, err)
	case has("context window", "context_length_exceeded", "context length"):
		return external.Classify(run.ClassContextWindow, err)
	case has("content policy", "content_policy", "content_filter", "safety policy"):
		return external.Classify(run.ClassContentPolicy, err)
	case status == "402" || has("insufficient_quota", "billing", "quota exceeded"):
		return external.Classify(run.ClassBilling, err)
	case status == "400" || status == "404" || status == "413" || status == "422" || has("bad request", "invalid_request"):
		return external.Classify(run.ClassBadRequest, err)
	case status == "429" || has("rate limit", "rate_limit"):
		return external.Classify(run.ClassRateLimit, err)
	case has("stream disconnected", "connection", "reconnecting", "network"):
		return external.Classify(run.ClassConnection, err)
	}
	return external.Classify(run.ClassServer, err)
}

// classifyInfo maps a codexErrorInfo to a classification; nil when it
// says nothing decisive.
func classifyInfo(raw json.RawMessage) func(error) error {
	if len(raw) == 0 {
		return nil
	}
	classed := func(class run.ErrorClass) func(error) error {
		return func(err error) error { return external.Classify(class, err) }
	}
	var code string
	if json.Unmarshal(raw, &code) == nil {
		switch code {
		case "unauthorized":
			return classed(run.ClassAuthentication)
		case "badRequest", "modelNotFound":
			return classed(run.ClassBadRequest)
		case "contextWindowExceeded":
			return classed(run.ClassContextWindow)
		case "usageLimitExceeded", "sessionBudgetExceeded":
			return classed(run.ClassBilling)
		case "cyberPolicy", "bioPolicy", "misalignmentPolicyViolation", "inferenceHookDenied":
			return classed(run.ClassContentPolicy)
		case "rateLimitExceeded":
			return classed(run.ClassRateLimit)
		case "serverOverloaded", "internalServerError", "flexUnavailable", "policyCapacityUnavailable":
			return classed(run.ClassServer)
		}
		return nil
	}
	var variants map[string]struct {
		HTTPStatusCode *int `json:"httpStatusCode"`
	}
	if json.Unmarshal(raw, &variants) != nil {
		return nil
	}
	for _, v := range variants {
		if v.HTTPStatusCode == nil {
			continue
		}
		switch status := *v.HTTPStatusCode; {
		case status == 401 || status == 403:
			return classed(run.ClassAuthentication)
		case status == 402:
			return classed(run.ClassBilling)
		case status == 400 || status == 404 || status == 413 || status == 422:
			return classed(run.ClassBadRequest)
		case status == 429:
			return classed(run.ClassRateLimit)
		case status >= 500:
			return classed(run.ClassServer)
		}
	}
	return nil
}
