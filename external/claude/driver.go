package claude

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// DefaultModel is the model a Claude agent asks for when none is set.
const DefaultModel = "claude-sonnet-4-6"

// SessionKey is the session_data key of the CLI session id.
const SessionKey = "claude_sdk_session_id"

// Options configure a [Driver]: the CLI's flags and environment.
type Options struct {
	// Bin is the claude binary: a path, or a name looked up on PATH.
	// Defaults to "claude".
	Bin string
	// Model is passed as --model. Defaults to [DefaultModel].
	Model string
	// SystemPrompt replaces the CLI's system prompt (--system-prompt).
	SystemPrompt string
	// Cwd is the CLI's working directory. Defaults to the process's.
	Cwd string
	// PermissionMode is --permission-mode (default, acceptEdits,
	// bypassPermissions, plan, …).
	PermissionMode string
	// Tools restricts the tools offered to the model (--tools).
	Tools []string
	// AllowedTools and DisallowedTools are --allowedTools and
	// --disallowedTools.
	AllowedTools, DisallowedTools []string
	// MCPServers is the "mcpServers" object given as --mcp-config.
	MCPServers map[string]any
	// StrictMCPConfig uses only MCPServers (--strict-mcp-config).
	StrictMCPConfig bool
	// SettingSources is --setting-sources (user, project, local).
	SettingSources []string
	// MaxTurns and MaxBudgetUSD bound a turn (--max-turns,
	// --max-budget-usd); 0 means no bound.
	MaxTurns     int
	MaxBudgetUSD float64
	// Env is added to the CLI's environment (this process's).
	Env map[string]string
	// ConfigDir is the CLI's config dir (CLAUDE_CONFIG_DIR). Defaults to
	// Env's CLAUDE_CONFIG_DIR, this process's, or ~/.claude.
	ConfigDir string
	// ProjectKey groups the agent's transcripts in the database. Defaults
	// to the agent's id.
	ProjectKey string
	// Transcripts mirrors every transcript line into the database, so a
	// session resumes on any replica. Nil keeps transcripts on local disk.
	Transcripts storage.TranscriptStore
	// InterruptGrace is how long a cancelled turn may take to wind down
	// after its interrupt before the CLI is killed. Defaults to 500ms.
	InterruptGrace time.Duration
	// ConfirmTools routes the CLI's permission prompts to agnogo (the
	// CLI's can_use_tool requests): a tool call the permission rules do
	// not allow pauses the run for the user's confirmation, as a native
	// agent's confirmation tools do. Without it such a call is denied.
	ConfirmTools bool
}

// reservedEnv are environment variables the driver manages.
var reservedEnv = []string{"CLAUDE_CODE_ENTRYPOINT"}

// Driver runs turns on the claude CLI, one process per turn, over
// stream-json with the control protocol. It implements [external.Driver].
type Driver struct {
	opts Options
}

var _ external.Driver = (*Driver)(nil)

// NewDriver checks opts and returns the driver.
func NewDriver(opts Options) (*Driver, error) {
	if opts.MaxTurns < 0 || opts.MaxBudgetUSD < 0 {
		return nil, errors.New("claude: max_turns and max_budget_usd must not be negative")
	}
	for _, key := range reservedEnv {
		if _, set := opts.Env[key]; set {
			return nil, fmt.Errorf("claude: env %s is managed by agnogo and cannot be set", key)
		}
	}
	opts.Model = cmp.Or(opts.Model, DefaultModel)
	opts.InterruptGrace = cmp.Or(opts.InterruptGrace, 500*time.Millisecond)
	cwd, err := external.WorkDir(opts.Cwd)
	if err != nil {
		return nil, fmt.Errorf("claude: %w", err)
	}
	opts.Cwd = cwd
	if opts.ConfigDir == "" {
		opts.ConfigDir = cmp.Or(opts.Env["CLAUDE_CONFIG_DIR"], os.Getenv("CLAUDE_CONFIG_DIR"))
	}
	if opts.ConfigDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("claude: no config dir: set config_dir or HOME: %w", err)
		}
		opts.ConfigDir = filepath.Join(home, ".claude")
	}
	return &Driver{opts: opts}, nil
}

// SDK implements [external.Driver].
func (d *Driver) SDK() string { return Framework }

// Model implements [external.Driver].
func (d *Driver) Model() (string, string) { return d.opts.Model, ProviderName }

// SessionKey implements [external.Driver].
func (d *Driver) SessionKey() string { return SessionKey }

// Cwd is the CLI's working directory.
func (d *Driver) Cwd() string { return d.opts.Cwd }

// args are the flags of one process.
func (d *Driver) args(resume string, schema json.RawMessage) []string {
	o := d.opts
	args := []string{"--replay-user-messages", "--model=" + o.Model}
	if o.SystemPrompt != "" {
		args = append(args, "--system-prompt="+o.SystemPrompt)
	}
	if o.PermissionMode != "" {
		args = append(args, "--permission-mode="+o.PermissionMode)
	}
	if len(o.Tools) > 0 {
		args = append(args, "--tools="+strings.Join(o.Tools, ","))
	}
	if len(o.AllowedTools) > 0 {
		args = append(args, "--allowedTools="+strings.Join(o.AllowedTools, ","))
	}
	if len(o.DisallowedTools) > 0 {
		args = append(args, "--disallowedTools="+strings.Join(o.DisallowedTools, ","))
	}
	if len(o.MCPServers) > 0 {
		config, _ := json.Marshal(map[string]any{"mcpServers": o.MCPServers})
		args = append(args, "--mcp-config="+string(config))
	}
	if o.StrictMCPConfig {
		args = append(args, "--strict-mcp-config")
	}
	if len(o.SettingSources) > 0 {
		args = append(args, "--setting-sources="+strings.Join(o.SettingSources, ","))
	}
	if o.MaxTurns > 0 {
		args = append(args, "--max-turns="+strconv.Itoa(o.MaxTurns))
	}
	if o.MaxBudgetUSD > 0 {
		args = append(args, "--max-budget-usd="+strconv.FormatFloat(o.MaxBudgetUSD, 'f', -1, 64))
	}
	if len(schema) > 0 {
		args = append(args, "--json-schema="+string(schema))
	}
	if o.ConfirmTools {
		args = append(args, "--permission-prompt-tool=stdio")
	}
	if resume != "" {
		args = append(args, "--resume="+resume)
	}
	return args
}

// env is the process environment.
func (d *Driver) env() []string {
	env := os.Environ()
	for _, key := range slices.Sorted(maps.Keys(d.opts.Env)) {
		env = append(env, key+"="+d.opts.Env[key])
	}
	return append(env, "CLAUDE_CONFIG_DIR="+d.opts.ConfigDir, "CLAUDE_CODE_ENTRYPOINT=sdk-go")
}

// Turn implements [external.Driver]: it resumes the CLI session in
// req.HarnessSession (restoring its transcript from the database first),
// or starts a fresh one seeded with the session's history when there is
// nothing to resume, and mirrors the transcript after the turn.
func (d *Driver) Turn(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
	mirror := d.mirror(req)
	prompt := req.Prompt
	if req.HarnessSession != "" && mirror != nil {
		if _, err := mirror.Restore(ctx, req.HarnessSession); err != nil {
			req.Warn(run.Warning{Type: "transcript_restore_failed", Message: "the stored transcript could not be written back for the CLI to resume", Error: err.Error()})
		}
	}
	if req.HarnessSession == "" {
		seeded, err := req.Seed(ctx)
		if err != nil {
			return nil, err
		}
		prompt = seeded
	}
	result, spoke, err := d.turn(ctx, req, prompt, mirror)
	if err != nil && req.HarnessSession != "" && !spoke && ctx.Err() == nil && notResumable(err) {
		// The stored session is gone: start afresh, with the history.
		req.Warn(run.Warning{Type: "session_not_resumable", Message: "the CLI session could not be resumed; a new one was seeded with the conversation", Error: err.Error()})
		req.HarnessSession = ""
		seeded, seedErr := req.Seed(ctx)
		if seedErr != nil {
			return nil, seedErr
		}
		result, _, err = d.turn(ctx, req, seeded, mirror)
	}
	if mirror != nil && req.HarnessSession != "" {
		mirrorErr := mirror.Save(context.WithoutCancel(ctx), req.HarnessSession)
		if mirrorErr == nil && err == nil && !mirror.Found(req.HarnessSession) {
			mirrorErr = fmt.Errorf("the CLI wrote no transcript at %s", mirror.file(req.HarnessSession))
		}
		if mirrorErr != nil {
			req.Warn(run.Warning{Type: "transcript_persistence_failed", Message: "the CLI transcript could not be stored; other replicas cannot resume this session", Error: mirrorErr.Error()})
		}
	}
	return result, err
}

// mirror returns the turn's transcript mirror, or nil without a store.
func (d *Driver) mirror(req *external.TurnRequest) *Mirror {
	if d.opts.Transcripts == nil {
		return nil
	}
	return &Mirror{Store: d.opts.Transcripts, ProjectKey: cmp.Or(d.opts.ProjectKey, "default"), ConfigDir: d.opts.ConfigDir,
		Cwd: d.opts.Cwd, AgnoSessionID: req.SessionID, UserID: req.UserID}
}

// notResumable reports whether a failure before the CLI said anything
// means its session cannot be resumed.
func notResumable(err error) bool {
	if errors.Is(err, ErrExited) {
		return true
	}
	return strings.Contains(err.Error(), "No conversation found")
}

// turn runs one CLI process for one turn. spoke reports whether any line
// other than a system line arrived (after which no fallback is allowed).
func (d *Driver) turn(ctx context.Context, req *external.TurnRequest, prompt string, mirror *Mirror) (*external.TurnResult, bool, error) {
	var before CostState
	if req.HarnessSession != "" {
		// A resumed session reports running totals: keep where they stood.
		before, _ = LastCostState(filepath.Join(ProjectDir(d.opts.ConfigDir, d.opts.Cwd), req.HarnessSession+".jsonl"))
	}
	args := d.args(req.HarnessSession, req.OutputSchema)
	if req.Stream {
		args = append(args, "--include-partial-messages")
	}
	p, err := StartProcess(ctx, ProcessConfig{Bin: d.opts.Bin, Dir: d.opts.Cwd, Env: d.env(), Args: args, CloseGrace: d.opts.InterruptGrace})
	if errors.Is(err, ErrCLINotFound) {
		return nil, false, external.Classify(run.ClassCLINotFound, err)
	}
	if err != nil {
		return nil, false, err
	}
	defer p.Close()
	started := time.Now()
	initCtx, cancelInit := context.WithTimeout(ctx, 60*time.Second)
	_, err = p.Initialize(initCtx)
	cancelInit()
	if err != nil {
		return nil, false, d.stopped(ctx, p, fmt.Errorf("claude: initialize: %w", err))
	}
	if err := p.Send(prompt); err != nil {
		return nil, false, d.stopped(ctx, p, err)
	}
	t := NewTurn(started)
	t.Since(before)
	structured := len(req.OutputSchema) > 0
	spoke := false
	var lineErr error
	permissions := &permissions{decisions: req.Decisions, confirm: d.opts.ConfirmTools}
	for line, err := range p.Turn(ctx) {
		if err != nil {
			lineErr = err
			break
		}
		switch line.Type {
		case LineControlRequest:
			permissions.answer(p, line)
			continue
		case LineAssistant, LineUser, LineResult:
			if !isReplay(line) {
				spoke = true
			}
		}
		if line.Type == LineSystem && line.Subtype == "init" && line.SessionID != "" {
			req.HarnessSession = line.SessionID
		}
		if mirror != nil && req.HarnessSession != "" && hasToolResults(line) {
			// Each batch of tool results is stored as it lands, so a
			// crashed process leaves its work in the database, not only
			// on its disk. A failure is reported by the save after the turn.
			_ = mirror.Save(ctx, req.HarnessSession)
		}
		for _, event := range t.Apply(line, time.Now()) {
			if structured && isStructuredOutput(event) || permissions.paused.Hides(event) {
				continue
			}
			req.Emit(event)
		}
	}
	if t.SessionID != "" {
		req.HarnessSession = t.SessionID
	}
	for _, w := range t.Warnings {
		req.Warn(w)
	}
	result := d.result(t, structured)
	if lineErr != nil {
		if ctx.Err() != nil {
			return result, spoke, d.interrupt(p, t, ctx.Err())
		}
		return result, spoke, lineErr
	}
	if len(permissions.paused) > 0 {
		result.Messages = permissions.paused.Without(result.Messages)
		return result, spoke, &external.PauseError{Tools: permissions.paused}
	}
	if err := classify(t); err != nil {
		return result, spoke, err
	}
	if structured {
		if result.Structured == nil {
			return result, spoke, external.Classify(run.ClassInvalidOutput, errors.New("claude: the CLI returned no structured output"))
		}
		req.Emit(&run.RunContent{Content: result.Content, ContentType: "str"})
	}
	return result, spoke, nil
}

// stopped returns ctx's error when the turn was cancelled, else err.
func (d *Driver) stopped(ctx context.Context, p *Process, err error) error {
	if ctx.Err() != nil {
		p.Kill()
		return ctx.Err()
	}
	return err
}

// interrupt stops a cancelled turn: the interrupt control request, then
// the turn's remaining lines until its result or InterruptGrace, then the
// process is closed (and killed if it lingers). It returns cause.
func (d *Driver) interrupt(p *Process, t *Turn, cause error) error {
	grace, cancel := context.WithTimeout(context.Background(), d.opts.InterruptGrace)
	defer cancel()
	if err := p.Interrupt(grace); err != nil {
		p.Kill()
		return cause
	}
	for line, err := range p.Turn(grace) {
		if err != nil {
			p.Kill()
			break
		}
		t.Apply(line, time.Now())
	}
	return cause
}

// permissions answers the CLI's permission prompts for one turn.
type permissions struct {
	decisions []*run.ToolExecution
	confirm   bool
	// paused are the calls refused pending the user's confirmation.
	paused external.Awaiting
}

// pauseMessage is what the CLI (and the model) is told of a call that
// waits for the user.
const pauseMessage = "This call needs the user's approval; the run is paused until they decide."

// answer replies to a control request of the CLI: a permission prompt is
// allowed when the user approved that very call, denied when they
// declined it, and otherwise — with ConfirmTools — denied with an
// interrupt that pauses the run. Any other request gets an empty success.
func (ps *permissions) answer(p *Process, line Line) {
	var request struct {
		Subtype   string          `json:"subtype"`
		ToolName  string          `json:"tool_name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
	}
	_ = json.Unmarshal(line.Request, &request)
	if request.Subtype != "can_use_tool" {
		_ = p.Respond(line.RequestID, map[string]any{})
		return
	}
	args := map[string]any{}
	_ = json.Unmarshal(request.Input, &args)
	if decision := ps.decided(request.ToolName, args); decision != nil {
		if *decision.Confirmed {
			_ = p.Respond(line.RequestID, map[string]any{"behavior": "allow", "updatedInput": args})
			return
		}
		message := "The user declined this call."
		if decision.ConfirmationNote != "" {
			message += " " + decision.ConfirmationNote
		}
		_ = p.Respond(line.RequestID, map[string]any{"behavior": "deny", "message": message})
		return
	}
	if !ps.confirm {
		_ = p.Respond(line.RequestID, map[string]any{"behavior": "deny", "message": "permission prompts are not enabled for this agent"})
		return
	}
	ps.paused = append(ps.paused, &run.ToolExecution{ToolCallID: request.ToolUseID, ToolName: request.ToolName, ToolArgs: args})
	_ = p.Respond(line.RequestID, map[string]any{"behavior": "deny", "message": pauseMessage, "interrupt": true})
}

// decided returns the user's decision on a call with this name and these
// arguments, if there is one.
func (ps *permissions) decided(name string, args map[string]any) *run.ToolExecution {
	want, _ := json.Marshal(args)
	for _, d := range ps.decisions {
		if d.Confirmed == nil || d.ToolName != name {
			continue
		}
		if got, _ := json.Marshal(d.ToolArgs); string(got) == string(want) {
			return d
		}
	}
	return nil
}

// result gathers what the turn produced.
func (d *Driver) result(t *Turn, structured bool) *external.TurnResult {
	r := &external.TurnResult{Content: t.Content(), Messages: t.Messages, Tools: t.Tools, Model: t.Model}
	if t.Result != nil {
		r.Metrics = t.Metrics(time.Now())
		if structured && len(t.Result.StructuredOutput) > 0 {
			var object map[string]any
			if json.Unmarshal(t.Result.StructuredOutput, &object) == nil && object != nil {
				r.Structured = object
				r.Content = string(t.Result.StructuredOutput)
			}
		}
	}
	if structured {
		r.Messages = slices.DeleteFunc(slices.Clone(r.Messages), isStructuredOutputMessage)
		r.Tools = slices.DeleteFunc(slices.Clone(r.Tools), func(tool *run.ToolExecution) bool { return tool.ToolName == structuredOutputTool })
	}
	return r
}

// structuredOutputTool is the tool --json-schema adds for the answer.
const structuredOutputTool = "StructuredOutput"

// isStructuredOutput reports whether an event is about the answer's tool
// call, or narration a structured answer suppresses.
func isStructuredOutput(e run.Event) bool {
	switch e := e.(type) {
	case *run.RunContent:
		return true
	case *run.ToolCallStarted:
		return e.Tool != nil && e.Tool.ToolName == structuredOutputTool
	case *run.ToolCallCompleted:
		return e.Tool != nil && e.Tool.ToolName == structuredOutputTool
	case *run.ToolCallError:
		return e.Tool != nil && e.Tool.ToolName == structuredOutputTool
	}
	return false
}

func isStructuredOutputMessage(m *run.Message) bool {
	if m.ToolName == structuredOutputTool {
		return true
	}
	for _, call := range m.ToolCalls {
		if call.Function.Name == structuredOutputTool {
			return true
		}
	}
	return false
}

// hasToolResults reports whether a line carries top-level tool results.
func hasToolResults(line Line) bool {
	if line.Type != LineUser || line.Message == nil || line.ParentToolUseID != "" {
		return false
	}
	return slices.ContainsFunc(line.Message.Content, func(b Block) bool { return b.Type == "tool_result" })
}

// isReplay reports whether a user line is the CLI echoing the prompt.
func isReplay(line Line) bool {
	if line.Type != LineUser {
		return false
	}
	var echo struct {
		IsReplay bool `json:"isReplay"`
	}
	_ = json.Unmarshal(line.Raw, &echo)
	return echo.IsReplay
}

// classify turns a failed result into a classified error; nil when the
// turn succeeded.
func classify(t *Turn) error {
	r := t.Result
	if r == nil {
		return errors.New("claude: the turn ended without a result")
	}
	if !r.IsError && (r.Subtype == "success" || r.Subtype == "") {
		return nil
	}
	message := strings.TrimSpace(cmp.Or(r.ResultText(), strings.Join(r.Errors, "; "), r.Subtype))
	err := fmt.Errorf("claude: %s", message)
	switch r.Subtype {
	case "error_max_turns":
		return external.Classify(run.ClassMaxTurns, err)
	case "error_max_budget_usd":
		return external.Classify(run.ClassMaxBudget, err)
	case "error_max_structured_output_retries":
		return external.Classify(run.ClassInvalidOutput, err)
	}
	switch t.APIError {
	case "authentication_failed":
		return external.Classify(run.ClassAuthentication, err)
	case "billing_error":
		return external.Classify(run.ClassBilling, err)
	case "invalid_request":
		return external.Classify(run.ClassBadRequest, err)
	}
	lower := strings.ToLower(message)
	if strings.Contains(lower, "prompt is too long") {
		return external.Classify(run.ClassContextWindow, err)
	}
	if strings.Contains(lower, "content filtering policy") || strings.Contains(lower, "usage policy") {
		return external.Classify(run.ClassContentPolicy, err)
	}
	if r.APIErrorStatus != nil {
		switch status := *r.APIErrorStatus; {
		case status == 401 || status == 403:
			return external.Classify(run.ClassAuthentication, err)
		case status == 402:
			return external.Classify(run.ClassBilling, err)
		case status == 400 || status == 404 || status == 413 || status == 422:
			return external.Classify(run.ClassBadRequest, err)
		case status == 429:
			return external.Classify(run.ClassRateLimit, err)
		default:
			return external.Classify(run.ClassServer, err)
		}
	}
	if r.TerminalReason == "api_error" {
		return external.Classify(run.ClassConnection, err)
	}
	return external.Classify(run.ClassOther, err)
}

var _ external.Brancher = (*Driver)(nil)

// Branch implements [external.Brancher]: it forks the run's CLI session at
// the last kept message that is a safe place to go on from (a checkpoint —
// the last result of a batch of tool calls —, an answer, or the prompt),
// or before the run's prompt when none is kept.
func (d *Driver) Branch(ctx context.Context, req *external.BranchRequest) (string, error) {
	if d.opts.Transcripts == nil {
		return "", fmt.Errorf("claude: continuing a run needs its transcript in the database (transcripts are not mirrored for this agent): %w", run.ErrNotContinuable)
	}
	sessionID, uuid, before := branchPoint(req.Run.Messages, req.Kept)
	if uuid == "" {
		return "", fmt.Errorf("claude: run %s has no transcript references to continue from: %w", req.Run.RunID, run.ErrNotContinuable)
	}
	mirror := &Mirror{Store: d.opts.Transcripts, ProjectKey: cmp.Or(d.opts.ProjectKey, "default"), ConfigDir: d.opts.ConfigDir,
		Cwd: d.opts.Cwd, AgnoSessionID: req.SessionID, UserID: req.UserID}
	branch := run.NewUUID()
	if err := mirror.Branch(ctx, sessionID, uuid, before, branch); err != nil {
		return "", fmt.Errorf("claude: %w: %w", run.ErrNotContinuable, err)
	}
	return branch, nil
}

// branchPoint picks where to fork: the CLI session and uuid of the last
// kept message that is safe to go on from, or — none kept — the run's
// prompt, to be cut before.
func branchPoint(all, kept []*run.Message) (sessionID, uuid string, before bool) {
	for i := len(kept) - 1; i >= 0; i-- {
		m := kept[i]
		safe := m.CheckpointStatus != "" || m.Role == run.RoleUser || (m.Role == run.RoleAssistant && len(m.ToolCalls) == 0)
		if s, u := transcriptRef(m); safe && u != "" {
			return s, u, false
		}
	}
	for _, m := range all {
		if s, u := transcriptRef(m); m.Role == run.RoleUser && u != "" {
			return s, u, true
		}
	}
	return "", "", false
}

// transcriptRef reads a message's place in the CLI transcript.
func transcriptRef(m *run.Message) (sessionID, uuid string) {
	ref, _ := m.ProviderData[ProviderDataKey].(map[string]any)
	sessionID, _ = ref["session_id"].(string)
	uuid, _ = ref["uuid"].(string)
	return sessionID, uuid
}
