// Package runhost owns the lifecycle of a run for every runner kind. A
// runner kind — the native agent, an external coding agent, and next teams
// and workflows — opens a run ([Spec]) and does its work in attempts
// ([Turn]); it produces events and the run's content and nothing else. The
// [Host] does everything around that work, once for every kind:
//
//   - admission: one turn per session for kinds that need it ([Turns],
//     [Claim]), settled against other replicas once the run's row is
//     written;
//   - the run's rows: RUNNING before the first event, progress saves, a
//     heartbeat that refreshes the row while a long turn runs, the final
//     save ([Host.Settle] and [RecordPending] for the rows written outside
//     a run);
//   - attempts: retries of failed attempts with RunRetry and
//     metadata.attempts, decided by the run's error class;
//   - the caller's policy ([run.Execution]): time limit, journal, a failure
//     deferred to the caller, a run elected by a queue;
//   - the end: the one place that decides the final status (completed,
//     paused, cancelled, failed, interrupted by a shutdown), records the
//     terminal event, commits the final row and only then sends the event,
//     so a client that reacts to RunCompleted reads the finished run;
//   - admin approvals: the approval a run paused on an approval-gated tool
//     waits for, and its run_status as the run moves on (approvals.go).
//
// The shape is that of an agent/runner split: the agent yields, the host
// persists.
package runhost

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"time"

	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// persistTimeout bounds the final save, which runs even after the run's
// context was cancelled so a cancelled run is still recorded.
const persistTimeout = 10 * time.Second

// ErrPaused is what a [Turn]'s attempt returns when the run waits for a
// person: the turn has put the run's requirements on its output. The host
// ends the run PAUSED.
var ErrPaused = errors.New("run paused")

// Config configures a [Host].
type Config struct {
	// Store keeps sessions and runs; nil persists nothing.
	Store storage.Store
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Sleep waits between attempts. Defaults to [run.Sleep].
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives the host's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// SaveRetry is how long a save of a run keeps being tried again while
	// the database fails transiently (a restart, a dropped connection).
	// Defaults to [DefaultSaveRetry].
	SaveRetry time.Duration
	// TouchInterval is how often a persisted run without a heartbeat of its
	// own ([Spec.Heartbeat]) marks its RUNNING row alive, when the store can
	// ([storage.RunToucher]): other replicas then tell a run in flight from
	// the leftover of a process that died (see [DefaultStaleAfter]).
	// Defaults to [DefaultTouchInterval]; negative never touches.
	TouchInterval time.Duration
	// ApprovalExpiry is how long an approval the host records for a paused
	// run stays pending before it expires (see [ApprovalCalls]). Defaults
	// to 0: approvals never expire.
	ApprovalExpiry time.Duration
	// SessionCacheSize is how many sessions the host keeps in memory with
	// the runs that make their history, so a conversation's next turn
	// reads neither back (see [Host.OpenSession] and [Run.History]).
	// Zero or negative keeps none; [DefaultSessionCacheSize] is the size
	// the native agent uses by default.
	SessionCacheSize int
}

// DefaultTouchInterval is how often a running run's row is marked alive by
// default: a quarter of [DefaultStaleAfter].
const DefaultTouchInterval = DefaultStaleAfter / 4

// DefaultSaveRetry is how long a run's save is tried again by default.
const DefaultSaveRetry = 2 * time.Minute

// Host drives runs. A runner kind keeps one, configured with its store and
// clock. It is safe for concurrent use.
type Host struct {
	cfg Config
	// sessions is the session cache (see [Config.SessionCacheSize]).
	sessions sessionCache
}

// New returns a host.
func New(cfg Config) *Host {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = run.Sleep
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SaveRetry <= 0 {
		cfg.SaveRetry = DefaultSaveRetry
	}
	if cfg.TouchInterval == 0 {
		cfg.TouchInterval = DefaultTouchInterval
	}
	return &Host{cfg: cfg, sessions: sessionCache{max: cfg.SessionCacheSize}}
}

// Store is the host's store; nil when runs are not persisted.
func (h *Host) Store() storage.Store { return h.cfg.Store }

// Retry is a runner kind's policy for attempts within one execution of a
// run.
type Retry struct {
	// Retries is how many more attempts a failed one gets.
	Retries int
	// Delay is the wait before the first retry.
	Delay time.Duration
	// Exponential doubles the delay with each attempt.
	Exponential bool
	// Retryable reports whether a failed attempt may be tried again.
	// Defaults to [run.Retryable].
	Retryable func(error) bool
}

// delay is the wait after the given failed attempt (1-based).
func (r Retry) delay(attempt int) time.Duration {
	if r.Exponential {
		return time.Duration(float64(r.Delay) * math.Pow(2, float64(attempt-1)))
	}
	return r.Delay
}

// retryable reports whether err may be tried again.
func (r Retry) retryable(err error) bool {
	if r.Retryable != nil {
		return r.Retryable(err)
	}
	return run.Retryable(err)
}

// Spec is a run a runner kind has opened, for the host to drive.
type Spec struct {
	// Output is the run, status RUNNING.
	Output *run.Output
	// Session is the run's session; the host saves it with the run.
	// Required when the host has a store.
	Session *storage.Session
	// First is the run's first event: RunStarted, or RunContinued.
	First run.Event
	// Turn does the run's work.
	Turn Turn
	// Persist saves the run RUNNING before its first event, and its
	// progress as it goes ([run.Input.PersistOnStart]).
	Persist bool
	// PersistDelay defers a new run's RUNNING save until the run has
	// lasted this long: the row is written by the turn's first
	// [Run.SaveProgress] after that, on the turn's own goroutine, so the
	// save never reads the output while the turn changes it. A run that
	// ends sooner, or makes no progress save, is written once, as it ends.
	// Ignored for a run that claims its session or was stored before it
	// started.
	PersistDelay time.Duration
	// Retry is the kind's policy for failed attempts.
	Retry Retry
	// StoreEvents keeps the run's events on the stored run.
	StoreEvents bool
	// Heartbeat saves a persisted run's RUNNING row whole this often while
	// its attempts run, so other replicas see it alive with its progress;
	// zero only marks the row alive every [Config.TouchInterval] (its
	// updated_at, nothing read from the output).
	// A turn that mutates Output or Session from other goroutines than the
	// one running its attempt does so under [Run.Lock].
	Heartbeat time.Duration
	// Claim is the run's claim on its session, when the kind runs one turn
	// per session; the host settles it with other replicas once the
	// run's row is written.
	Claim *Claim
	// Row is what the opener knows of the run's row: a new run known not
	// to be stored spares the host a read of it. Defaults to
	// [RowUnknown].
	Row Row
	// Parked marks a run executed again while it waits for a person (a
	// queue replaying it after a restart): the host sends its terminal
	// event again and does no work.
	Parked bool
	// Release is called once the run has ended, its final row written.
	Release func()
	// ErrorType names a failure for RunError.error_type. Defaults to
	// [run.ErrorTypeOf].
	ErrorType func(error) string
}

// Turn is the work of one run. Optional abilities are the interfaces
// [Preparer], [Beginner], [Completer], [Retrier] and [Syncer].
type Turn interface {
	// Attempt runs attempt n (from 1) of the run, emitting its events and
	// setting its content through r. It returns nil when the run has its
	// answer, an error wrapping [ErrPaused] when the run waits for a
	// person, or the failure.
	Attempt(ctx context.Context, r *Run, n int) error
}

// Preparer is a [Turn] with work before the run's row is first written and
// its first event sent (the native agent builds its messages). A failure
// fails the run.
type Preparer interface {
	Prepare(ctx context.Context, r *Run) error
}

// Beginner is a [Turn] with work after the run's first event and before its
// first attempt, done once (a continued run resolves its paused calls). A
// failure fails the run.
type Beginner interface {
	Begin(ctx context.Context, r *Run) error
}

// Completer is a [Turn] that finishes a successful run before it is marked
// COMPLETED: it may update memories, parse a structured answer and set
// the content type. A failure fails the run.
type Completer interface {
	Complete(ctx context.Context, r *Run) error
}

// Retrier is a [Turn] that prepares another attempt after a failed one (the
// native agent starts again from the messages the run began with).
type Retrier interface {
	Retry()
}

// Syncer is a [Turn] that keeps part of its run outside the output (the
// native agent's conversation): Sync writes it onto the output before
// every save, with final set for the last one. The run's lock is held.
type Syncer interface {
	Sync(out *run.Output, final bool)
}

// StartError is a run that could not start: nothing was written and no
// event sent. Its cause is returned by [Host.Execute] and [Host.Collect].
type StartError struct{ Err error }

// Error implements error.
func (e *StartError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// Opener opens a run under an execution: it reads the session, builds the
// output and the turn, claims the session when the kind needs one. Its
// error refuses the run before anything is written.
type Opener func(ctx context.Context, exec run.Execution) (*Spec, error)

// Execute drives the run open opens to its end and yields its events, like
// [run.Runner.Stream]: a run that could not start yields only its error; one
// interrupted by a shutdown ends with [run.ErrInterrupted] after its events.
func (h *Host) Execute(ctx context.Context, exec run.Execution, open Opener) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		more := true // a consumer that stopped ranging must not be yielded to again
		_, err := h.drive(ctx, exec, open, func(e run.Event, err error) bool {
			more = yield(e, err)
			return more
		})
		if !more {
			return
		}
		var start *StartError
		if errors.As(err, &start) {
			yield(nil, start.Err)
		} else if errors.Is(err, run.ErrInterrupted) {
			yield(nil, err)
		}
	}
}

// Collect drives the run open opens to its end with no consumer of its
// events and returns it, whatever its final status. The error is non-nil
// when it did not complete or pause, or could not start (then the run is
// nil).
func (h *Host) Collect(ctx context.Context, exec run.Execution, open Opener) (*run.Output, error) {
	out, err := h.drive(ctx, exec, open, nil)
	var start *StartError
	if errors.As(err, &start) {
		return nil, start.Err
	}
	return out, err
}

// drive opens a run and runs it to its end.
func (h *Host) drive(parent context.Context, exec run.Execution, open Opener, yield func(run.Event, error) bool) (*run.Output, error) {
	parent, stop := exec.Context(parent)
	defer stop()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	spec, err := open(ctx, exec)
	if err != nil {
		return nil, &StartError{err}
	}
	if spec.Release != nil {
		defer spec.Release()
	}
	if spec.Parked {
		r := newRun(h, spec, yield, cancel)
		r.Emit(run.TerminalEvent(spec.Output, nil, ""))
		return spec.Output, nil
	}
	// The run's span is its trace's (a member's: under its delegation); its
	// trace id is on the output before the run's row is first written.
	ctx, span := observe.StartRun(ctx, spec.Output)
	r := newRun(h, spec, yield, cancel)
	ctx = withRun(ctx, r)
	h.keepAcceptance(ctx, exec, r)
	_, started := spec.First.(*run.RunStarted)
	r.fresh = started && !r.stored && r.out.ForkedFromRunID == ""
	if p, ok := spec.Turn.(Preparer); ok {
		err = p.Prepare(ctx, r)
	}
	if err == nil && spec.Persist && spec.PersistDelay > 0 && spec.Claim == nil && r.fresh {
		r.deferredUntil = h.cfg.Now().Add(spec.PersistDelay)
	} else if err == nil && spec.Persist {
		err = r.saveRetrying(ctx)
		if err == nil && spec.Claim != nil {
			if err = h.settleClaim(ctx, r, exec.Queued); err != nil {
				var busy *run.SessionBusyError
				if errors.As(err, &busy) {
					return nil, &StartError{busy}
				}
			}
		}
	}
	if err == nil && spec.Persist {
		h.syncApprovals(ctx, r.out) // a continued run: its approvals see it running
	}
	r.Emit(spec.First)
	if b, ok := spec.Turn.(Beginner); ok && err == nil {
		err = b.Begin(ctx, r)
	}
	if err == nil {
		stop := r.heartbeat(ctx)
		err = h.attempts(ctx, r)
		stop()
	}
	if c, ok := spec.Turn.(Completer); ok && err == nil {
		err = c.Complete(ctx, r)
	}
	out, err := h.finish(parent, exec, r, err)
	errorType := ""
	if err != nil && spec.ErrorType != nil {
		errorType = spec.ErrorType(err)
	}
	span.EndRun(ctx, out, err, errorType)
	return out, err
}

// attempts runs the turn, again after a retryable failure while retries
// remain. Every attempt after the first, and a failed one that is
// retried, is recorded in metadata.attempts.
func (h *Host) attempts(ctx context.Context, r *Run) error {
	policy := r.spec.Retry
	maxAttempts := policy.Retries + 1
	for attempt := 1; ; attempt++ {
		started := h.cfg.Now()
		err := r.spec.Turn.Attempt(ctx, r, attempt)
		paused := errors.Is(err, ErrPaused)
		again := err != nil && !paused && attempt < maxAttempts && ctx.Err() == nil && policy.retryable(err)
		if attempt > 1 || again {
			record := run.Attempt{Attempt: attempt, StartedAt: started.Unix(), EndedAt: h.cfg.Now().Unix()}
			if err != nil && !paused {
				msg := err.Error()
				record.Error = &msg
			}
			r.Lock()
			_ = r.out.AppendAttempt(record) // fails only on a corrupt metadata list, which a new run cannot have
			r.Unlock()
		}
		if !again {
			return err
		}
		delay := policy.delay(attempt)
		r.Emit(&run.RunRetry{Attempt: attempt + 1, MaxAttempts: maxAttempts, Error: err.Error(), DelaySeconds: delay.Seconds()})
		h.cfg.Logger.WarnContext(ctx, "retrying run", "run_id", r.out.RunID, "attempt", attempt+1, "max_attempts", maxAttempts, "error", err)
		if err := h.cfg.Sleep(ctx, delay); err != nil {
			return err
		}
		if retrier, ok := r.spec.Turn.(Retrier); ok {
			retrier.Retry()
		}
	}
}

// finish is the one place that decides a run's final status: it sets it,
// records the terminal event, commits the final row and then sends the
// event. It returns the run and, unless it completed or paused, its error.
func (h *Host) finish(parent context.Context, exec run.Execution, r *Run, err error) (*run.Output, error) {
	out := r.out
	r.Lock()
	r.sync(true)
	if out.Metrics == nil {
		out.Metrics = &run.RunMetrics{}
	}
	out.Metrics.StopTimer(h.cfg.Now())
	r.Unlock()
	paused := errors.Is(err, ErrPaused) && parent.Err() == nil
	switch {
	case paused:
		out.Status, err = run.StatusPaused, nil
	case err == nil:
		out.Status = run.StatusCompleted
	case run.Interrupted(parent):
		return h.interrupted(parent, r)
	default:
		err = run.Fail(parent, out, err, r.stopped())
	}
	errorType := run.ErrorTypeOf
	if r.spec.ErrorType != nil {
		errorType = r.spec.ErrorType
	}
	recorded := ""
	if paused {
		// Before the terminal event and the final row, which then carry
		// the approval's id on its calls.
		recorded = h.recordApproval(parent, r)
	}
	final := run.TerminalEvent(out, err, errorType(err))
	r.record(final)
	if saveErr := r.saveFinal(parent, exec.DeferFailure); saveErr != nil {
		// The run's end is not in the database: say so instead of an end a
		// reader of the run could not find. A store out of reach is a
		// failure another attempt may not meet (the durable queue runs it
		// again, its completed steps taken from the journal).
		h.cfg.Logger.ErrorContext(parent, "saving the finished run failed", "run_id", out.RunID, "status", out.Status, "error", saveErr)
		failure := fmt.Errorf("run %s ended %s but could not be saved: %w", out.RunID, out.Status, saveErr)
		if storage.Transient(saveErr) || errors.Is(saveErr, context.DeadlineExceeded) {
			failure = run.Classify(run.ClassStorageUnavailable, failure)
		}
		r.Emit(&run.RunError{Content: failure.Error(), ErrorType: run.ErrorTypeOf(failure)})
		return out, errors.Join(err, failure)
	}
	settled := !(exec.DeferFailure && out.Status == run.StatusError) // else its caller settles it (Settle)
	if ids := ApprovalIDs(out); settled && (len(ids) > 1 || (len(ids) == 1 && ids[0] != recorded)) {
		// An approval recorded just now already says PAUSED.
		h.syncApprovals(parent, out)
	}
	r.deliver(final)
	return out, err
}

// interrupted ends a run stopped by its process shutting down: its progress
// is saved with status RUNNING and no final event goes out, so the run's
// owner can run it again. A run whose execution was taken over by another
// ([run.ErrDisowned]) saves nothing.
func (h *Host) interrupted(parent context.Context, r *Run) (*run.Output, error) {
	r.out.Status = run.StatusRunning
	if cause := context.Cause(parent); errors.Is(cause, run.ErrDisowned) {
		// Another execution owns the run now: its row is that one's to
		// write, and may already show the run over.
		return r.out, fmt.Errorf("run %s: %w", r.out.RunID, cause)
	}
	err := fmt.Errorf("run %s: %w", r.out.RunID, run.ErrInterrupted)
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(parent), persistTimeout)
	defer cancel()
	if saveErr := r.save(saveCtx); saveErr != nil {
		h.cfg.Logger.ErrorContext(saveCtx, "saving interrupted run failed", "run_id", r.out.RunID, "error", saveErr)
		return r.out, errors.Join(err, saveErr)
	}
	return r.out, err
}
