package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// persistTimeout bounds the final save, which runs even after the run's
// context was cancelled so a cancelled run is still recorded.
const persistTimeout = 10 * time.Second

// finish turns the loop's result into the run's terminal state: it parses a
// structured answer, sets the status, saves the run and emits the terminal
// event. It returns the run and, unless it completed or paused, its error.
func (a *Agent) finish(parent context.Context, st *runState, loopErr error) (*run.Output, error) {
	out := st.out
	out.Messages = st.ownMessages()
	now := a.cfg.Now()
	out.Metrics.StopTimer(now)

	switch {
	case errors.Is(loopErr, errPaused):
		out.Status = run.StatusPaused
	case loopErr == nil:
		loopErr = a.parseAnswer(out, st.schema)
		if loopErr == nil {
			out.Status = run.StatusCompleted
		}
	}
	if loopErr != nil && run.Interrupted(parent) {
		return a.interrupted(parent, st)
	}
	if loopErr != nil && !errors.Is(loopErr, errPaused) {
		loopErr = run.Fail(parent, out, loopErr, st.em.stopped)
	}

	// The terminal event is part of the stored events, so emit first.
	if final := run.TerminalEvent(out, loopErr, errorType(loopErr)); final != nil {
		st.em.emit(final)
	}

	if err := run.SaveFinal(parent, out, persistTimeout, func(ctx context.Context) error { return a.save(ctx, st) }); err != nil {
		a.cfg.Logger.ErrorContext(parent, "saving run failed", "run_id", out.RunID, "error", err)
		return out, errors.Join(loopErr, err)
	}
	if errors.Is(loopErr, errPaused) {
		return out, nil
	}
	return out, loopErr
}

// interrupted ends a run stopped by its process shutting down: its
// progress is saved with status RUNNING and no final event goes out, so
// the run's owner can run it again.
func (a *Agent) interrupted(parent context.Context, st *runState) (*run.Output, error) {
	out := st.out
	out.Status = run.StatusRunning
	err := fmt.Errorf("run %s: %w", out.RunID, run.ErrInterrupted)
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(parent), persistTimeout)
	defer cancel()
	if saveErr := a.save(saveCtx, st); saveErr != nil {
		a.cfg.Logger.ErrorContext(saveCtx, "saving interrupted run failed", "run_id", out.RunID, "error", saveErr)
		return out, errors.Join(err, saveErr)
	}
	return out, err
}

// parseAnswer turns a structured answer into its object, or reports why it
// does not match the schema. A text answer is left as is.
func (a *Agent) parseAnswer(out *run.Output, schema *OutputSchema) error {
	if schema == nil {
		out.ContentType = "str"
		return nil
	}
	answer, err := schema.parse(out.ContentString())
	if err != nil {
		return &InvalidOutputError{Schema: schema.Name, Err: err}
	}
	out.Content, out.ContentType = answer, schema.Name
	return nil
}

// InvalidOutputError reports a structured answer that does not match the
// agent's output schema.
type InvalidOutputError struct {
	Schema string
	Err    error
}

// Error implements error.
func (e *InvalidOutputError) Error() string { return e.Err.Error() }

// Unwrap returns the validation error.
func (e *InvalidOutputError) Unwrap() error { return e.Err }

// errorType names an error's kind for RunError.error_type.
func errorType(err error) string {
	var invalid *InvalidOutputError
	if errors.As(err, &invalid) {
		return "output_validation_error"
	}
	if errors.Is(err, run.ErrTimedOut) {
		return "run_timeout"
	}
	var modelErr *model.Error
	if errors.As(err, &modelErr) {
		return modelErr.Class.String()
	}
	return "run_error"
}

// save writes the session (with its state and metrics) and the run, as one
// row, in one transaction.
func (a *Agent) save(ctx context.Context, st *runState) error {
	store := a.cfg.Store
	if store == nil {
		return nil
	}
	session := st.session
	if st.out.Status == run.StatusCompleted {
		session.AddRunMetrics(st.out.Metrics)
	}
	stored, _, err := store.SaveRun(ctx, session, storage.RunRecord{SessionID: session.SessionID, UserID: st.out.UserID, Run: st.out})
	if err != nil {
		return fmt.Errorf("save run %s: %w", st.out.RunID, err)
	}
	st.session = stored
	return nil
}

// saveRunning writes the run in flight, status RUNNING: as it starts and
// after each tool batch.
func (a *Agent) saveRunning(ctx context.Context, st *runState) error {
	st.out.Messages = st.ownMessages()
	return a.save(ctx, st)
}
