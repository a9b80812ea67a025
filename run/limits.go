package run

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// WithTimeLimit returns a context that ends after d with a cause wrapping
// [ErrTimedOut]. A runner given it ends the run ERROR, not CANCELLED, when
// the limit strikes (see [TimedOut]).
func WithTimeLimit(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, fmt.Errorf("%w after %s", ErrTimedOut, d))
}

// Interrupt stops a run given ctx with a cause of [ErrInterrupted]: its
// process is shutting down and the run will be run again elsewhere.
func Interrupt(cancel context.CancelCauseFunc) { cancel(ErrInterrupted) }

// TimedOut returns the cause that ended ctx when it was a time limit set by
// [WithTimeLimit], and nil otherwise.
func TimedOut(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrTimedOut) {
		return cause
	}
	return nil
}

// Interrupted reports whether ctx was ended by [Interrupt].
func Interrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrInterrupted)
}

// failureDeferredKey marks a context whose run's failure its caller
// settles.
type failureDeferredKey struct{}

// WithFailureDeferred tells a runner that its caller decides whether a
// failed run is over — it may start it again, as the durable queue does
// while attempts remain. The runner still ends the run's stream with its
// RunError, but saves the run with status RUNNING rather than ERROR, so no
// reader takes a run that is about to be retried for a failed one; the
// caller stores the final status.
func WithFailureDeferred(ctx context.Context) context.Context {
	return context.WithValue(ctx, failureDeferredKey{}, true)
}

// FailureDeferred reports whether ctx came from [WithFailureDeferred].
func FailureDeferred(ctx context.Context) bool {
	deferred, _ := ctx.Value(failureDeferredKey{}).(bool)
	return deferred
}

// queuedKey marks a context whose run a queue elected among its session's
// runs.
type queuedKey struct{}

// WithQueued tells a runner that a queue which runs one run per session at
// a time elected this run: the session's other PENDING runs wait behind it
// and do not make the session busy, and a turn found busy (one running
// outside the queue) is waited for rather than refused.
func WithQueued(ctx context.Context) context.Context {
	return context.WithValue(ctx, queuedKey{}, true)
}

// Queued reports whether ctx came from [WithQueued].
func Queued(ctx context.Context) bool {
	queued, _ := ctx.Value(queuedKey{}).(bool)
	return queued
}

// Fail sets the final status of a run that stopped with err (not nil) and
// returns the error to report: ERROR with the time limit's error when ctx
// outlived its limit ([WithTimeLimit]); CANCELLED when ctx was cancelled,
// the run's consumer left (consumerLeft) or err is a cancellation; ERROR
// with err otherwise. An ERROR run's content is its error. (A run stopped
// by [Interrupt] is not over; check [Interrupted] first.)
func Fail(ctx context.Context, out *Output, err error, consumerLeft bool) error {
	switch limit := TimedOut(ctx); {
	case limit != nil:
		err = fmt.Errorf("run %s: %w", out.RunID, limit)
	case ctx.Err() != nil || consumerLeft || errors.Is(err, context.Canceled):
		out.Status = StatusCancelled
		return fmt.Errorf("run %s cancelled: %w", out.RunID, context.Canceled)
	}
	out.Status = StatusError
	out.Content = err.Error()
	return err
}

// TerminalEvent is the event that ends out's run in its status:
// RunCompleted, RunPaused, RunCancelled, or RunError with err and
// errorType; nil for a status that is not final.
func TerminalEvent(out *Output, err error, errorType string) Event {
	switch out.Status {
	case StatusCompleted:
		return &RunCompleted{Content: out.Content, ContentType: out.ContentType, ReasoningContent: out.ReasoningContent,
			Metadata: out.Metadata, Metrics: out.Metrics, SessionState: out.SessionState}
	case StatusPaused:
		return &RunPaused{BaseEvent: BaseEvent{Tools: out.Tools}, Requirements: out.ActiveRequirements()}
	case StatusCancelled:
		return &RunCancelled{Reason: "run cancelled"}
	case StatusError:
		return &RunError{Content: err.Error(), ErrorType: errorType}
	}
	return nil
}

// SaveFinal saves a run's final state with save, under a context of its
// own bounded by timeout, so that a cancelled run is still recorded. With
// [WithFailureDeferred] on ctx a failed run is saved RUNNING, for the
// caller to settle; out keeps its ERROR status.
func SaveFinal(ctx context.Context, out *Output, timeout time.Duration, save func(context.Context) error) error {
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	deferred := out.Status == StatusError && FailureDeferred(ctx)
	if deferred {
		out.Status = StatusRunning
	}
	err := save(saveCtx)
	if deferred {
		out.Status = StatusError
	}
	return err
}

// Sleep waits d or until ctx ends, whichever comes first; it returns ctx's
// error when ctx ended. The wait between retries of runners.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
