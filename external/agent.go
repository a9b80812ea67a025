package external

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// MetadataSDK is the run and session metadata key naming the harness.
const MetadataSDK = "sdk"

// seedRuns is how many earlier runs of the session seed a harness session
// that has to be started over (its own conversation was lost).
const seedRuns = 20

// Config configures an [Agent]. Driver is required.
type Config struct {
	// ID identifies the agent. Defaults to Name, or the driver's SDK.
	ID string
	// Name is the display name. Defaults to ID.
	Name string
	// Description says what the agent is for.
	Description string
	// Driver speaks the harness's protocol. Required.
	Driver Driver
	// Store keeps sessions, runs and transcripts. Defaults to nil: nothing
	// is persisted and sessions are busy per this process only.
	Store storage.Store
	// Cwd is the harness's working directory; attachments are staged
	// below it. Defaults to the process's working directory.
	Cwd string
	// KeepUploads leaves a run's staged attachments on disk after it.
	KeepUploads bool
	// OutputSchema asks every run for a structured answer (a JSON Schema
	// whose root is an object); a run's own output_schema replaces it.
	OutputSchema json.RawMessage
	// Retries is how many more attempts a failed turn gets. Defaults to 0.
	Retries int
	// DelayBetweenRetries is the wait before a retry. Defaults to 1s.
	DelayBetweenRetries time.Duration
	// ExponentialBackoff doubles the delay with each attempt.
	ExponentialBackoff bool
	// StoreEvents keeps the run's events on the stored run.
	StoreEvents bool
	// StaleAfter is how long a RUNNING row of another run may go without
	// an update before it no longer makes the session busy (the leftover
	// of a crashed process). Defaults to [runhost.DefaultStaleAfter]; a turn in
	// flight refreshes its own row well within it.
	StaleAfter time.Duration
	// QueuePollInterval is how often a queued run waits for a turn running
	// outside the queue to end. Defaults to 1s.
	QueuePollInterval time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// NewID generates ids. Defaults to random UUIDs.
	NewID func() string
	// Sleep waits between retries. Defaults to a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives the agent's logs. Defaults to slog.Default().
	Logger *slog.Logger
}

// Agent runs an external harness as an agnogo agent. It implements
// [run.Runner], [run.Collector] and [run.Admitter]; AgentOS runs it like a
// native agent.
type Agent struct {
	cfg   Config
	turns *runhost.Turns
	host  *runhost.Host
}

var (
	_ run.Runner        = (*Agent)(nil)
	_ run.Collector     = (*Agent)(nil)
	_ run.Admitter      = (*Agent)(nil)
	_ run.Executor      = (*Agent)(nil)
	_ run.SessionBinder = (*Agent)(nil)
)

// New checks cfg and returns the agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Driver == nil {
		return nil, errors.New("external agent: a Driver is required")
	}
	cfg.ID = cmp.Or(cfg.ID, cfg.Name, cfg.Driver.SDK())
	cfg.Name = cmp.Or(cfg.Name, cfg.ID)
	if cfg.Retries < 0 || cfg.DelayBetweenRetries < 0 {
		return nil, fmt.Errorf("external agent %s: retries and delay_between_retries must not be negative", cfg.ID)
	}
	if err := checkSchema(cfg.OutputSchema); err != nil {
		return nil, fmt.Errorf("external agent %s: %w", cfg.ID, err)
	}
	if cfg.DelayBetweenRetries == 0 {
		cfg.DelayBetweenRetries = time.Second
	}
	cfg.QueuePollInterval = cmp.Or(cfg.QueuePollInterval, time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = run.NewUUID
	}
	if cfg.Sleep == nil {
		cfg.Sleep = run.Sleep
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Agent{cfg: cfg, turns: runhost.NewTurns(runhost.TurnsConfig{Store: cfg.Store, StaleAfter: cfg.StaleAfter, Now: cfg.Now}),
		host: runhost.New(runhost.Config{Store: cfg.Store, Now: cfg.Now, Sleep: cfg.Sleep, Logger: cfg.Logger})}, nil
}

// ID implements [run.Runner].
func (a *Agent) ID() string { return a.cfg.ID }

// Name implements [run.Runner].
func (a *Agent) Name() string { return a.cfg.Name }

// Kind implements [run.Runner].
func (a *Agent) Kind() run.Kind { return run.KindAgent }

// Description says what the agent is for.
func (a *Agent) Description() string { return a.cfg.Description }

// ModelInfo names the model the agent's harness runs on, as AgentOS lists
// agents.
func (a *Agent) ModelInfo() model.Info {
	id, provider := a.cfg.Driver.Model()
	return model.Info{ID: id, Provider: provider}
}

// SessionKeys implements [run.SessionBinder]: the session_data key under
// which the driver keeps the harness session a session resumes.
func (a *Agent) SessionKeys() []string { return []string{a.cfg.Driver.SessionKey()} }

// Driver returns the agent's driver.
func (a *Agent) Driver() Driver { return a.cfg.Driver }

// Admit implements [run.Admitter]: it refuses, before anything is written,
// a run with audio or video, an output schema that is not an object, or
// (unless queued) a session with a turn in flight.
func (a *Agent) Admit(ctx context.Context, in *run.Input, queued bool) error {
	if err := a.check(in); err != nil {
		return err
	}
	if in.SessionID == "" || queued {
		return nil
	}
	// Another user's session is refused as not found before anything is
	// said about its turns.
	if _, err := a.openSession(ctx, in.SessionID, in.UserID); err != nil {
		return err
	}
	release, err := a.turns.Begin(ctx, in.SessionID, cmp.Or(in.RunID, "admission"), runhost.BeginOptions{})
	if err != nil {
		return err
	}
	release()
	return nil
}

// check refuses an input no turn can take.
func (a *Agent) check(in *run.Input) error {
	if len(in.Audios) > 0 || len(in.Videos) > 0 {
		return fmt.Errorf("%w: %w: external agents take images and files; audio and video cannot be attached", run.ErrInvalidInput, ErrUnsupportedMedia)
	}
	return checkSchema(in.OutputSchema)
}

// Stream runs one turn and yields its events; see [run.Runner]. A run that
// could not start — its session busy ([*run.SessionBusyError]), its input
// refused (run.ErrInvalidInput), its session another user's — yields only
// that error and writes nothing.
func (a *Agent) Stream(ctx context.Context, in *run.Input) iter.Seq2[run.Event, error] {
	return a.Execute(ctx, in, run.Execution{})
}

// Execute is [Agent.Stream] under an explicit execution policy; see
// [run.Executor].
func (a *Agent) Execute(ctx context.Context, in *run.Input, exec run.Execution) iter.Seq2[run.Event, error] {
	return a.host.Execute(ctx, exec, a.opener(in))
}

// Run runs one turn and returns the run, whatever its final status; the
// error is non-nil when it did not complete or could not start.
func (a *Agent) Run(ctx context.Context, in *run.Input) (*run.Output, error) {
	return a.RunWith(ctx, in, run.Execution{})
}

// RunWith is [Agent.Run] under an explicit execution policy.
func (a *Agent) RunWith(ctx context.Context, in *run.Input, exec run.Execution) (*run.Output, error) {
	return a.host.Collect(ctx, exec, a.opener(in))
}

// turn is one run in flight: the run host's [runhost.Turn].
type turn struct {
	a *Agent
	// r is the host's handle on the run, set as the host first calls in.
	r       *runhost.Run
	out     *run.Output
	schema  json.RawMessage
	staging *Staging
	prompt  string
	history func(ctx context.Context) (string, error)
	// harness is the harness session id, as the driver last reported it.
	harness string
	// decisions are the user's answers to a paused run's tool calls.
	decisions []*run.ToolExecution
	// in is the run's input, handed to the driver.
	in *run.Input
}

// opener opens a new run of in for the run host: the session claimed for
// its turn, its attachments staged.
func (a *Agent) opener(in *run.Input) runhost.Opener {
	return func(ctx context.Context, exec run.Execution) (*runhost.Spec, error) {
		if in == nil {
			in = &run.Input{}
		}
		if err := a.check(in); err != nil {
			return nil, err
		}
		sessionID := cmp.Or(in.SessionID, a.cfg.NewID())
		runID := cmp.Or(in.RunID, a.cfg.NewID())
		// Another user's session is refused before anything is said about
		// its turns.
		if _, err := a.openSession(ctx, sessionID, in.UserID); err != nil {
			return nil, err
		}
		if paused := a.pausedRun(ctx, runID, in.UserID); paused != nil {
			// Executed again while it waits for a person (a queue replaying
			// it after a restart): it is paused already, not run twice.
			return &runhost.Spec{Output: paused, Parked: true}, nil
		}
		release, session, err := a.claim(ctx, sessionID, runID, in.UserID, exec.Queued)
		if err != nil {
			return nil, err
		}
		staging, err := Stage(a.cwd(), runID, in)
		if err != nil {
			release()
			return nil, fmt.Errorf("%w: %w", run.ErrInvalidInput, err)
		}
		done := release
		if staging != nil && !a.cfg.KeepUploads {
			done = func() {
				if err := staging.Remove(); err != nil {
					a.cfg.Logger.Warn("removing staged attachments failed", "run_id", runID, "error", err)
				}
				release()
			}
		}
		t := a.open(in, session, sessionID, runID, staging)
		modelID, provider := a.cfg.Driver.Model()
		return a.spec(t, session, in, &run.RunStarted{Model: modelID, ModelProvider: provider}, done), nil
	}
}

// spec hands a turn to the run host.
func (a *Agent) spec(t *turn, session *storage.Session, in *run.Input, first run.Event, release func()) *runhost.Spec {
	t.a, t.in = a, in
	spec := &runhost.Spec{
		Output: t.out, Session: session, First: first, Turn: t, Persist: in.PersistOnStart,
		Retry:       runhost.Retry{Retries: a.cfg.Retries, Delay: a.cfg.DelayBetweenRetries, Exponential: a.cfg.ExponentialBackoff, Retryable: retryable},
		StoreEvents: a.cfg.StoreEvents, ErrorType: errorType, Release: release,
		// A turn in flight refreshes its row well within the time after
		// which another replica's busy check ignores it.
		Heartbeat: cmp.Or(a.cfg.StaleAfter, runhost.DefaultStaleAfter) / heartbeatFraction,
	}
	if a.cfg.Store != nil {
		spec.Claim = &runhost.Claim{Turns: a.turns, PollInterval: a.cfg.QueuePollInterval}
	}
	return spec
}

// pausedRun returns the stored run runID when it is PAUSED; nil otherwise.
func (a *Agent) pausedRun(ctx context.Context, runID, userID string) *run.Output {
	if a.cfg.Store == nil {
		return nil
	}
	rec, err := a.cfg.Store.GetRun(ctx, runID, userID)
	if err != nil || rec.Run == nil || rec.Run.Status != run.StatusPaused {
		return nil
	}
	return rec.Run
}

// openSession reads a run's session, or a new one; another user's is
// refused as not found.
func (a *Agent) openSession(ctx context.Context, sessionID, userID string) (*storage.Session, error) {
	return runhost.Read(ctx, a.host, "session", sessionID, func(ctx context.Context) (*storage.Session, error) {
		return storage.OpenSession(ctx, a.cfg.Store, &storage.Session{SessionID: sessionID,
			SessionType: storage.SessionTypeAgent, AgentID: a.cfg.ID, UserID: userID})
	})
}

// claim claims the session for the run's turn (see [runhost.Host.Claim];
// a run a queue elected waits for a turn running outside the queue) and
// reads it once claimed: a turn that ended meanwhile — the one a queued run
// waited for — saved its harness session and metrics, which this run
// builds on. Call release when the turn ends.
func (a *Agent) claim(ctx context.Context, sessionID, runID, userID string, queued bool) (release func(), session *storage.Session, err error) {
	release, err = a.host.Claim(ctx, a.turns, sessionID, runID, queued, a.cfg.QueuePollInterval)
	if err != nil {
		return nil, nil, err
	}
	if session, err = a.openSession(ctx, sessionID, userID); err != nil {
		release()
		return nil, nil, err
	}
	return release, session, nil
}

// open builds the run's output and what its turns need.
func (a *Agent) open(in *run.Input, session *storage.Session, sessionID, runID string, staging *Staging) *turn {
	now := a.cfg.Now()
	modelID, provider := a.cfg.Driver.Model()
	metadata := maps.Clone(in.Metadata)
	if metadata == nil {
		metadata = map[string]any{}
	}
	metadata[MetadataSDK] = a.cfg.Driver.SDK()
	out := &run.Output{
		RunID: runID, AgentID: a.cfg.ID, AgentName: a.cfg.Name, SessionID: sessionID, UserID: in.UserID, ParentRunID: in.ParentRunID,
		Input: in, Model: modelID, ModelProvider: provider, Status: run.StatusRunning, Metadata: metadata,
		CreatedAt: now.Unix(), Metrics: &run.RunMetrics{},
	}
	out.Metrics.StartTimer(now)
	if session.Metadata == nil {
		session.Metadata = map[string]any{}
	}
	session.Metadata[MetadataSDK] = a.cfg.Driver.SDK()
	out.SessionState = session.MergeState(nil, in.SessionState)
	harness, _ := session.SessionData[a.cfg.Driver.SessionKey()].(string)
	message := in.ContentString()
	prompt := message
	if staging != nil {
		prompt += staging.Prompt()
	}
	t := &turn{out: out, schema: a.cfg.OutputSchema, staging: staging, prompt: prompt, harness: harness}
	if len(in.OutputSchema) > 0 {
		t.schema = in.OutputSchema
	}
	t.history = func(ctx context.Context) (string, error) {
		if a.cfg.Store == nil || session.CreatedAt == 0 {
			return prompt, nil
		}
		runs, err := runhost.Read(ctx, a.host, "history", sessionID, func(ctx context.Context) ([]*run.Output, error) {
			return a.cfg.Store.HistoryRuns(ctx, storage.HistoryQuery{SessionID: sessionID, UserID: in.UserID, RunID: runID, N: seedRuns})
		})
		if err != nil {
			return "", fmt.Errorf("read the session's history: %w", err)
		}
		var earlier []*run.Output
		for _, r := range runs {
			if r.RunID != runID {
				earlier = append(earlier, r)
			}
		}
		return SeedPrompt(earlier, prompt), nil
	}
	return t
}

// Attempt implements [runhost.Turn]: one turn of the harness. Tool calls
// of every attempt are kept; the content is the last attempt's. A turn
// that asks for the user's confirmation pauses the run.
func (t *turn) Attempt(ctx context.Context, r *runhost.Run, attempt int) error {
	t.r = r
	a := t.a
	req := &TurnRequest{
		RunID: t.out.RunID, SessionID: t.out.SessionID, UserID: t.out.UserID, Attempt: attempt,
		Prompt: t.prompt, Input: t.in, Staging: t.staging, HarnessSession: t.harness, Seed: t.history,
		OutputSchema: t.schema, Stream: r.Streaming(), Decisions: t.decisions,
		Emit: t.emit,
		Warn: t.warn,
	}
	result, err := a.cfg.Driver.Turn(ctx, req)
	t.absorb(req, result)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	var pause *PauseError
	if errors.As(err, &pause) && ctx.Err() == nil {
		r.Lock()
		pauseOn(t.out, pause.Tools, a.cfg.Now())
		r.Unlock()
		return fmt.Errorf("%w: %w", runhost.ErrPaused, err)
	}
	return err
}

// Complete implements [runhost.Completer]: a structured answer is typed by
// its schema's title.
func (t *turn) Complete(_ context.Context, r *runhost.Run) error {
	r.Lock()
	defer r.Unlock()
	t.out.ContentType = "str"
	if _, ok := t.out.Content.(map[string]any); ok && len(t.schema) > 0 {
		t.out.ContentType = schemaTitle(t.schema)
	}
	return nil
}

// Sync implements [runhost.Syncer]: a run that ends without the harness
// having reported the user's message still records it.
func (t *turn) Sync(out *run.Output, final bool) {
	if final && !slices.ContainsFunc(out.Messages, func(m *run.Message) bool { return m.Role == run.RoleUser }) {
		user := &run.Message{Role: run.RoleUser, Content: out.Input.ContentString(), CreatedAt: out.CreatedAt}
		out.Messages = append([]*run.Message{user}, out.Messages...)
	}
}

// absorb takes a turn's result into the run: its messages and tools are
// added, its content and metrics replace the last attempt's.
func (t *turn) absorb(req *TurnRequest, result *TurnResult) {
	t.r.Lock()
	defer t.r.Unlock()
	key := t.a.cfg.Driver.SessionKey()
	if req.HarnessSession != t.harness {
		t.harness = req.HarnessSession
		session := t.r.Session()
		if session.SessionData == nil {
			session.SessionData = map[string]any{}
		}
		if t.harness == "" {
			delete(session.SessionData, key)
		} else {
			session.SessionData[key] = t.harness
		}
	}
	if result == nil {
		return
	}
	t.out.Messages = append(t.out.Messages, result.Messages...)
	t.out.Tools = append(t.out.Tools, result.Tools...)
	t.out.Content = result.Content
	t.out.ReasoningContent = result.ReasoningContent
	if result.Structured != nil {
		t.out.Content = result.Structured
	}
	if result.Model != "" {
		t.out.Model = result.Model
	}
	if m := result.Metrics; m != nil {
		// Every attempt's tokens and cost count; the run keeps its own
		// stopwatch and first-token time.
		t.out.Metrics.AddRun(m)
		t.out.Metrics.AdditionalMetrics = m.AdditionalMetrics
	}
}

// emit sends a driver's event, timing the first token.
func (t *turn) emit(e run.Event) {
	if c, ok := e.(*run.RunContent); ok && (c.Content != nil && c.Content != "" || c.ReasoningContent != "") {
		t.r.Lock()
		t.out.Metrics.SetTimeToFirstToken(t.a.cfg.Now())
		t.r.Unlock()
	}
	t.r.Emit(e)
}

// warn records a warning on the run, and sends it to a stream.
func (t *turn) warn(w run.Warning) {
	t.a.cfg.Logger.Warn("external agent warning", "run_id", t.out.RunID, "type", w.Type, "message", w.Message, "error", w.Error)
	t.r.Lock()
	_ = t.out.AppendWarning(w)
	t.r.Unlock()
	t.r.Emit(&run.CustomEvent{Fields: map[string]any{"warning_type": w.Type, "message": w.Message, "error": w.Error}})
}

// heartbeatFraction sets how often a turn in flight refreshes its RUNNING row,
// as a fraction of StaleAfter.
const heartbeatFraction = 4

// pauseOn marks the run PAUSED on tool calls awaiting the user's
// confirmation, one requirement per call.
func pauseOn(out *run.Output, calls []*run.ToolExecution, now time.Time) {
	for _, call := range calls {
		tool := call
		if i := slices.IndexFunc(out.Tools, func(t *run.ToolExecution) bool { return t.ToolCallID == call.ToolCallID }); i >= 0 {
			tool = out.Tools[i]
		} else {
			out.Tools = append(out.Tools, tool)
		}
		tool.ToolName, tool.ToolArgs = call.ToolName, call.ToolArgs
		tool.Result, tool.ToolCallError = nil, nil
		tool.RequiresConfirmation, tool.Confirmed = true, nil
		out.Requirements = append(out.Requirements, run.NewRequirement(tool, now))
	}
}

// cwd is the harness's working directory.
func (a *Agent) cwd() string { return cmp.Or(a.cfg.Cwd, ".") }

// schemaTitle names a structured answer's type: the schema's title, else
// "dict".
func schemaTitle(schema json.RawMessage) string {
	var root struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(schema, &root)
	return cmp.Or(strings.TrimSpace(root.Title), "dict")
}
