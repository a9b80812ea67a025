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
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// MetadataSDK is the run and session metadata key naming the harness.
const MetadataSDK = "sdk"

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
	// of a crashed process). Defaults to [DefaultStaleAfter]; a turn in
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
	turns *Turns
}

var (
	_ run.Runner    = (*Agent)(nil)
	_ run.Collector = (*Agent)(nil)
	_ run.Admitter  = (*Agent)(nil)
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
	return &Agent{cfg: cfg, turns: NewTurns(TurnsConfig{Store: cfg.Store, StaleAfter: cfg.StaleAfter, Now: cfg.Now})}, nil
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
	release, err := a.turns.Begin(ctx, in.SessionID, cmp.Or(in.RunID, "admission"), BeginOptions{})
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
	return stream(func(yield func(run.Event, error) bool) error {
		_, err := a.execute(ctx, in, yield)
		return err
	})
}

// stream turns an execution into a run's event sequence: its events, then
// the error of a run that could not start or was interrupted.
func stream(execute func(yield func(run.Event, error) bool) error) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		more := true // a consumer that stopped ranging must not be yielded to again
		err := execute(func(e run.Event, err error) bool {
			more = yield(e, err)
			return more
		})
		if !more {
			return
		}
		var start *startError
		if errors.As(err, &start) {
			yield(nil, start.err)
		} else if errors.Is(err, run.ErrInterrupted) {
			yield(nil, err)
		}
	}
}

// Run runs one turn and returns the run, whatever its final status; the
// error is non-nil when it did not complete or could not start.
func (a *Agent) Run(ctx context.Context, in *run.Input) (*run.Output, error) {
	out, err := a.execute(ctx, in, nil)
	var start *startError
	if errors.As(err, &start) {
		return nil, start.err
	}
	return out, err
}

// startError marks a failure before the run existed.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }

// turn is one run in flight.
type turn struct {
	out     *run.Output
	session *storage.Session
	schema  json.RawMessage
	staging *Staging
	prompt  string
	history func(ctx context.Context) (string, error)
	em      *emitter
	// harness is the harness session id, as the driver last reported it.
	harness string
	// decisions are the user's answers to a paused run's tool calls.
	decisions []*run.ToolExecution
	// contested is set for a new run that claimed its session outside a
	// queue: once its RUNNING row is written, it checks again for another
	// replica's turn that claimed the session at the same moment.
	contested bool
	// queued is set for a run a queue elected: it makes the same check,
	// but waits rather than being refused.
	queued bool
	// mu guards out and session against the heartbeat's saves.
	mu sync.Mutex
}

func (a *Agent) execute(parent context.Context, in *run.Input, yield func(run.Event, error) bool) (*run.Output, error) {
	if in == nil {
		in = &run.Input{}
	}
	if err := a.check(in); err != nil {
		return nil, &startError{err}
	}
	sessionID := cmp.Or(in.SessionID, a.cfg.NewID())
	runID := cmp.Or(in.RunID, a.cfg.NewID())
	// Another user's session is refused before anything is said about its
	// turns.
	if _, err := a.openSession(parent, sessionID, in.UserID); err != nil {
		return nil, &startError{err}
	}
	if paused := a.pausedRun(parent, runID, in.UserID); paused != nil {
		// Executed again while it waits for a person (a queue replaying
		// it after a restart): it is paused already, not run twice.
		em := &emitter{yield: yield, cancel: func() {}, now: a.cfg.Now, out: paused, outMu: &sync.Mutex{}}
		em.emit(run.TerminalEvent(paused, nil, ""))
		return paused, nil
	}
	release, session, err := a.claim(parent, sessionID, runID, in.UserID)
	if err != nil {
		return nil, &startError{err}
	}
	defer release()
	staging, err := Stage(a.cwd(), runID, in)
	if err != nil {
		return nil, &startError{fmt.Errorf("%w: %w", run.ErrInvalidInput, err)}
	}
	if staging != nil && !a.cfg.KeepUploads {
		defer func() {
			if err := staging.Remove(); err != nil {
				a.cfg.Logger.Warn("removing staged attachments failed", "run_id", runID, "error", err)
			}
		}()
	}

	t := a.open(in, session, sessionID, runID, staging)
	t.contested = a.cfg.Store != nil && !run.Queued(parent)
	t.queued = a.cfg.Store != nil && run.Queued(parent)
	modelID, provider := a.cfg.Driver.Model()
	return a.drive(parent, t, in, &run.RunStarted{Model: modelID, ModelProvider: provider}, yield)
}

// drive runs a prepared turn to its terminal state: the row saved RUNNING
// (when the input asks), the first event, the attempts, the final save.
func (a *Agent) drive(parent context.Context, t *turn, in *run.Input, first run.Event, yield func(run.Event, error) bool) (*run.Output, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	t.em = &emitter{yield: yield, cancel: cancel, now: a.cfg.Now, keep: a.cfg.StoreEvents, out: t.out, outMu: &t.mu}
	var err error
	if in.PersistOnStart {
		err = a.save(ctx, t)
		if err == nil && t.contested {
			if busy := a.contest(ctx, t); busy != nil {
				return nil, &startError{busy}
			}
		}
		if err == nil && t.queued {
			err = a.awaitUncontested(ctx, t)
		}
	}
	t.em.emit(first)
	if err != nil {
		return a.finish(parent, t, err)
	}
	stop := a.heartbeat(ctx, t, in.PersistOnStart)
	err = a.attempts(ctx, t, in)
	stop()
	return a.finish(parent, t, err)
}

// contest settles a race between replicas: two turns on one session may
// both pass the busy check before either row is written. Each checks again
// once its own RUNNING row is there; one that sees another unfinished run
// withdraws its row and is refused as busy, so two turns never run at once
// (in the rarest interleaving both withdraw, and both are refused).
func (a *Agent) contest(ctx context.Context, t *turn) error {
	other, err := a.turns.unfinished(ctx, t.out.SessionID, t.out.RunID, BeginOptions{})
	if err != nil || other == "" {
		return nil // a failed check does not stop a turn the first check allowed
	}
	if err := a.cfg.Store.DeleteRun(context.WithoutCancel(ctx), t.out.RunID, t.out.UserID); err != nil {
		a.cfg.Logger.Warn("withdrawing a contested run failed", "run_id", t.out.RunID, "error", err)
	}
	return &run.SessionBusyError{SessionID: t.out.SessionID, RunID: other}
}

// awaitUncontested is contest for a run a queue elected: while another
// replica's turn outside the queue is RUNNING on the session, the run steps
// back to PENDING and waits, then claims the session again.
func (a *Agent) awaitUncontested(ctx context.Context, t *turn) error {
	for {
		other, err := a.turns.unfinished(ctx, t.out.SessionID, t.out.RunID, BeginOptions{QueuedBehind: true})
		if err != nil || other == "" {
			return nil
		}
		t.mu.Lock()
		t.out.Status = run.StatusPending
		t.mu.Unlock()
		if err := a.save(ctx, t); err != nil {
			return err
		}
		if err := a.cfg.Sleep(ctx, a.cfg.QueuePollInterval); err != nil {
			return err
		}
		t.mu.Lock()
		t.out.Status = run.StatusRunning
		t.mu.Unlock()
		if err := a.save(ctx, t); err != nil {
			return err
		}
	}
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
	return storage.OpenSession(ctx, a.cfg.Store, &storage.Session{SessionID: sessionID,
		SessionType: storage.SessionTypeAgent, AgentID: a.cfg.ID, UserID: userID})
}

// claim claims the session for the run's turn (see begin) and reads it
// once claimed: a turn that ended meanwhile — the one a queued run waited
// for — saved its harness session and metrics, which this run builds on.
// Call release when the turn ends.
func (a *Agent) claim(ctx context.Context, sessionID, runID, userID string) (release func(), session *storage.Session, err error) {
	release, err = a.begin(ctx, sessionID, runID)
	if err != nil {
		return nil, nil, err
	}
	if session, err = a.openSession(ctx, sessionID, userID); err != nil {
		release()
		return nil, nil, err
	}
	return release, session, nil
}

// begin claims the session for the run. A run a queue elected waits for a
// turn running outside the queue instead of being refused.
func (a *Agent) begin(ctx context.Context, sessionID, runID string) (func(), error) {
	queued := run.Queued(ctx)
	for {
		release, err := a.turns.Begin(ctx, sessionID, runID, BeginOptions{QueuedBehind: queued})
		if err == nil || !queued || !errors.Is(err, run.ErrSessionBusy) {
			return release, err
		}
		if err := a.cfg.Sleep(ctx, a.cfg.QueuePollInterval); err != nil {
			return nil, err
		}
	}
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
		RunID: runID, AgentID: a.cfg.ID, AgentName: a.cfg.Name, SessionID: sessionID, UserID: in.UserID,
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
	t := &turn{out: out, session: session, schema: a.cfg.OutputSchema, staging: staging,
		prompt: prompt, harness: harness}
	if len(in.OutputSchema) > 0 {
		t.schema = in.OutputSchema
	}
	t.history = func(ctx context.Context) (string, error) {
		if a.cfg.Store == nil || session.CreatedAt == 0 {
			return prompt, nil
		}
		runs, err := a.cfg.Store.ContextRuns(ctx, sessionID, in.UserID, 20)
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

// attempts runs the turn, again after a retryable failure while retries
// remain. Tool calls of every attempt are kept; the content is the last
// attempt's.
func (a *Agent) attempts(ctx context.Context, t *turn, in *run.Input) error {
	maxAttempts := a.cfg.Retries + 1
	for attempt := 1; ; attempt++ {
		started := a.cfg.Now()
		req := &TurnRequest{
			RunID: t.out.RunID, SessionID: t.out.SessionID, UserID: t.out.UserID, Attempt: attempt,
			Prompt: t.prompt, Input: in, Staging: t.staging, HarnessSession: t.harness, Seed: t.history,
			OutputSchema: t.schema, Stream: t.em.streaming(), Decisions: t.decisions,
			Emit: func(e run.Event) { a.emit(t, e) },
			Warn: func(w run.Warning) { a.warn(t, w) },
		}
		result, err := a.cfg.Driver.Turn(ctx, req)
		a.absorb(t, req, result)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		again := err != nil && attempt < maxAttempts && ctx.Err() == nil && retryable(err)
		if attempt > 1 || again {
			record := run.Attempt{Attempt: attempt, StartedAt: started.Unix(), EndedAt: a.cfg.Now().Unix()}
			if err != nil {
				msg := err.Error()
				record.Error = &msg
			}
			t.mu.Lock()
			_ = t.out.AppendAttempt(record) // fails only on a corrupt metadata list, which a new run cannot have
			t.mu.Unlock()
		}
		if !again {
			return err
		}
		delay := a.retryDelay(attempt)
		t.em.emit(&run.RunRetry{Attempt: attempt + 1, MaxAttempts: maxAttempts, Error: err.Error(), DelaySeconds: delay.Seconds()})
		a.cfg.Logger.WarnContext(ctx, "retrying external agent turn", "run_id", t.out.RunID, "attempt", attempt+1, "error", err)
		if err := a.cfg.Sleep(ctx, delay); err != nil {
			return err
		}
	}
}

// absorb takes a turn's result into the run: its messages and tools are
// added, its content and metrics replace the last attempt's.
func (a *Agent) absorb(t *turn, req *TurnRequest, result *TurnResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if req.HarnessSession != t.harness {
		t.harness = req.HarnessSession
		if t.session.SessionData == nil {
			t.session.SessionData = map[string]any{}
		}
		if t.harness == "" {
			delete(t.session.SessionData, a.cfg.Driver.SessionKey())
		} else {
			t.session.SessionData[a.cfg.Driver.SessionKey()] = t.harness
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
func (a *Agent) emit(t *turn, e run.Event) {
	if c, ok := e.(*run.RunContent); ok && (c.Content != nil && c.Content != "" || c.ReasoningContent != "") {
		t.mu.Lock()
		t.out.Metrics.SetTimeToFirstToken(a.cfg.Now())
		t.mu.Unlock()
	}
	t.em.emit(e)
}

// warn records a warning on the run, and sends it to a stream.
func (a *Agent) warn(t *turn, w run.Warning) {
	a.cfg.Logger.Warn("external agent warning", "run_id", t.out.RunID, "type", w.Type, "message", w.Message, "error", w.Error)
	t.mu.Lock()
	_ = t.out.AppendWarning(w)
	t.mu.Unlock()
	t.em.emit(&run.CustomEvent{Fields: map[string]any{"warning_type": w.Type, "message": w.Message, "error": w.Error}})
}

// retryDelay is the wait after the given failed attempt (1-based).
func (a *Agent) retryDelay(attempt int) time.Duration {
	delay := a.cfg.DelayBetweenRetries
	if a.cfg.ExponentialBackoff {
		delay = time.Duration(float64(delay) * math.Pow(2, float64(attempt-1)))
	}
	return delay
}

// heartbeatFraction sets how often a turn in flight refreshes its RUNNING row,
// as a fraction of StaleAfter.
const heartbeatFraction = 4

// heartbeat refreshes the run's RUNNING row while the turn is in flight,
// so other replicas keep taking the session for busy, and saves its
// progress. It returns a function that stops it.
func (a *Agent) heartbeat(ctx context.Context, t *turn, persisted bool) func() {
	if a.cfg.Store == nil || !persisted {
		return func() {}
	}
	every := cmp.Or(a.cfg.StaleAfter, DefaultStaleAfter) / heartbeatFraction
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if err := a.save(ctx, t); err != nil && ctx.Err() == nil {
					a.cfg.Logger.Warn("refreshing a running turn's row failed", "run_id", t.out.RunID, "error", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// persistTimeout bounds the final save, which runs even after the run's
// context was cancelled so a cancelled run is still recorded.
const persistTimeout = 10 * time.Second

// finish sets the run's terminal state, emits its terminal event and saves
// it.
func (a *Agent) finish(parent context.Context, t *turn, err error) (*run.Output, error) {
	out := t.out
	now := a.cfg.Now()
	t.mu.Lock()
	out.Metrics.StopTimer(now)
	if !slices.ContainsFunc(out.Messages, func(m *run.Message) bool { return m.Role == run.RoleUser }) {
		user := &run.Message{Role: run.RoleUser, Content: out.Input.ContentString(), CreatedAt: out.CreatedAt}
		out.Messages = append([]*run.Message{user}, out.Messages...)
	}
	t.mu.Unlock()
	var pause *PauseError
	switch {
	case errors.As(err, &pause) && parent.Err() == nil:
		t.mu.Lock()
		a.pause(out, pause.Tools, now)
		t.mu.Unlock()
		err = nil
	case err == nil:
		out.Status = run.StatusCompleted
		out.ContentType = "str"
		if _, ok := out.Content.(map[string]any); ok && len(t.schema) > 0 {
			out.ContentType = schemaTitle(t.schema)
		}
	case run.Interrupted(parent):
		return a.interrupted(parent, t)
	default:
		err = run.Fail(parent, out, err, t.em.isStopped())
	}
	t.em.emit(run.TerminalEvent(out, err, errorType(err)))
	if saveErr := run.SaveFinal(parent, out, persistTimeout, func(ctx context.Context) error { return a.save(ctx, t) }); saveErr != nil {
		a.cfg.Logger.ErrorContext(parent, "saving run failed", "run_id", out.RunID, "error", saveErr)
		return out, errors.Join(err, saveErr)
	}
	return out, err
}

// pause marks the run PAUSED on tool calls awaiting the user's
// confirmation, one requirement per call.
func (a *Agent) pause(out *run.Output, calls []*run.ToolExecution, now time.Time) {
	out.Status = run.StatusPaused
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

// interrupted ends a run stopped by its process shutting down: saved as
// RUNNING with no final event, for its owner to run again.
func (a *Agent) interrupted(parent context.Context, t *turn) (*run.Output, error) {
	t.out.Status = run.StatusRunning
	err := fmt.Errorf("run %s: %w", t.out.RunID, run.ErrInterrupted)
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(parent), persistTimeout)
	defer cancel()
	if saveErr := a.save(saveCtx, t); saveErr != nil {
		return t.out, errors.Join(err, saveErr)
	}
	return t.out, err
}

// save writes the session and the run in one transaction.
func (a *Agent) save(ctx context.Context, t *turn) error {
	if a.cfg.Store == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.out.Status == run.StatusCompleted {
		t.session.AddRunMetrics(t.out.Metrics)
	}
	stored, _, err := a.cfg.Store.SaveRun(ctx, t.session, storage.RunRecord{SessionID: t.session.SessionID, UserID: t.out.UserID, Run: t.out})
	if err != nil {
		return fmt.Errorf("save run %s: %w", t.out.RunID, err)
	}
	t.session = stored
	return nil
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

// emitter hands a run's events to the stream's consumer and keeps them
// when store_events is on; a consumer that stops ranging cancels the run.
type emitter struct {
	yield  func(run.Event, error) bool
	cancel context.CancelFunc
	now    func() time.Time
	keep   bool
	out    *run.Output
	// outMu is the turn's mutex: kept events are appended to out under it,
	// as the heartbeat saves out concurrently.
	outMu   *sync.Mutex
	mu      sync.Mutex
	stopped bool
}

// emit stamps e with the run's identity and delivers it.
func (em *emitter) emit(e run.Event) {
	em.mu.Lock()
	defer em.mu.Unlock()
	base := e.Base()
	base.CreatedAt = em.now().Unix()
	base.AgentID, base.AgentName = em.out.AgentID, em.out.AgentName
	base.RunID, base.SessionID = em.out.RunID, em.out.SessionID
	if em.keep {
		em.outMu.Lock()
		em.out.Events = append(em.out.Events, e)
		em.outMu.Unlock()
	}
	if em.yield == nil || em.stopped {
		return
	}
	if !em.yield(e, nil) {
		em.stopped = true
		em.cancel()
	}
}

// isStopped reports whether the consumer stopped ranging.
func (em *emitter) isStopped() bool {
	em.mu.Lock()
	defer em.mu.Unlock()
	return em.stopped
}

// streaming reports whether someone consumes the events.
func (em *emitter) streaming() bool {
	em.mu.Lock()
	defer em.mu.Unlock()
	return em.yield != nil && !em.stopped
}
