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
	if out.WorkflowID != "" && out.AgentID == "" && out.TeamID == "" {
		return workflowTerminalEvent(out, err, errorType)
	}
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

// workflowTerminalEvent is a workflow run's final event, with its step
// results (and, paused, what it waits for).
func workflowTerminalEvent(out *Output, err error, errorType string) Event {
	switch out.Status {
	case StatusCompleted:
		return &RunCompleted{Content: out.Content, ContentType: out.ContentType, Metadata: out.Metadata,
			StepResults: out.StepResults, StepExecutorRuns: out.StepExecutorRuns}
	case StatusPaused:
		return &RunPaused{Status: StatusPaused, PausedStepIndex: out.PausedStepIndex, PausedStepName: out.PausedStepName,
			PauseKind: out.PauseKind, StepRequirements: out.StepRequirements, StepResults: out.StepResults}
	case StatusCancelled:
		return &RunCancelled{Reason: "run cancelled"}
	case StatusError:
		return &RunError{Content: err.Error(), ErrorType: errorType}
	}
	return nil
}
