package agentos

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
)

// Background runs (background=true; runtime.md §15): the run is recorded as
// PENDING before the answer, then executes after the request has ended, at
// most BackgroundMaxConcurrency at a time. A client polls
// GET /agents/{id}/runs/{run_id} (a team's: /teams/…), or, with
// stream=true, follows the run's events through the event log; leaving the
// stream does not stop the run, and POST …/resume picks it up again. A run cancelled while it
// waits for a slot ends CANCELLED without starting. Every accepted run ends
// in a terminal state in the store: the runner's own, or one written here
// when the runner could not start or ended without one.
//
// These runs live in this process: a crash leaves the PENDING or RUNNING row
// behind, and Shutdown cancels them.

// defaultBackgroundMaxConcurrency is how many background runs execute at
// once when Config.BackgroundMaxConcurrency is zero.
const defaultBackgroundMaxConcurrency = 32

// settleTimeout bounds writing a background run's final state.
const settleTimeout = 10 * time.Second

// startBackground records a run as PENDING and starts it after the request.
func (o *OS) startBackground(w http.ResponseWriter, r *http.Request, runner run.Runner, in *run.Input, stream bool) {
	if o.cfg.Store == nil {
		writeError(w, http.StatusBadRequest, "background runs need a database to record them in; configure a db, or send background=false")
		return
	}
	if admitter, ok := runner.(run.Admitter); ok {
		if err := admitter.Admit(r.Context(), in, o.cfg.Queue != nil); err != nil {
			o.writeRunError(w, r, err)
			return
		}
	}
	if o.cfg.Queue != nil {
		o.startDurable(w, r, runner, in, stream)
		return
	}
	// The run outlives the request but keeps its values (the caller's identity).
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	done, ok := o.track(in.RunID, &inflightRun{runner: runner, sessionID: in.SessionID, userID: in.UserID, cancel: cancel})
	if !ok {
		cancel()
		writeError(w, http.StatusServiceUnavailable, "the server is shutting down")
		return
	}
	if err := o.savePending(r.Context(), runner, in); err != nil {
		cancel()
		done()
		o.writeRunError(w, r, err)
		return
	}
	o.events.Register(in.RunID, run.StatusPending)
	go o.runBackground(ctx, cancel, done, runner, in)
	if !stream {
		writeJSON(w, http.StatusAccepted, map[string]any{"run_id": in.RunID, "session_id": in.SessionID, "status": run.StatusPending})
		return
	}
	// A client that leaves does not stop the run.
	_, _ = startSSE(w).follow(r.Context(), in.RunID, o.events.Follow(r.Context(), in.RunID, -1, 0), "keepalive")
}

// startDurable submits a background run to the durable queue and answers
// 202, or follows the run's events with stream=true.
func (o *OS) startDurable(w http.ResponseWriter, r *http.Request, runner run.Runner, in *run.Input, stream bool) {
	key := r.Header.Get("Idempotency-Key")
	if p := textProblem(key); p != "" {
		writeValidation(w, textIssue([]string{"header", "Idempotency-Key"}, p))
		return
	}
	accepted, err := o.cfg.Queue.Submit(r.Context(), durable.Submission{AgentID: runner.ID(), Input: in, Stream: stream, IdempotencyKey: key})
	switch {
	case errors.Is(err, durable.ErrInvalidKey):
		writeValidation(w, validationIssue{Loc: []string{"header", "Idempotency-Key"}, Msg: err.Error(), Type: "string_too_long"})
		return
	case errors.Is(err, durable.ErrIdempotencyConflict):
		writeError(w, http.StatusConflict, err.Error()+"; send a new Idempotency-Key for a different request")
		return
	case errors.Is(err, durable.ErrQueueFull):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, err.Error()+"; retry later")
		return
	case err != nil:
		o.writeRunError(w, r, err)
		return
	}
	status := run.StatusPending
	if accepted.Duplicate {
		if rec, err := o.cfg.Store.GetRun(r.Context(), accepted.RunID, in.UserID); err == nil {
			status = rec.Run.Status
		}
	}
	if !stream {
		writeJSON(w, http.StatusAccepted, map[string]any{"run_id": accepted.RunID, "session_id": accepted.SessionID, "status": status})
		return
	}
	// A client that leaves does not stop the run. The run may execute on
	// another replica: its events are followed wherever it runs.
	r, done := o.following(r)
	defer done()
	o.followRun(r.Context(), startSSE(w), accepted.RunID, in.UserID, -1, "keepalive")
}

// continueDurable hands a paused run on the durable queue its continuation
// and answers 202, or follows the run's events from here with stream=true.
func (o *OS) continueDurable(w http.ResponseWriter, r *http.Request, runner run.Runner, req *run.ContinueRequest, stream bool) {
	if _, ok := o.storedRun(w, r, runner); !ok {
		return
	}
	from := o.lastStreamed(r.Context(), req.RunID)
	if err := o.cfg.Queue.Continue(r.Context(), req); err != nil {
		if errors.Is(err, durable.ErrNotParked) {
			writeError(w, http.StatusConflict, err.Error())
			return
		}
		o.writeStoreError(w, r, err)
		return
	}
	if !stream {
		writeJSON(w, http.StatusAccepted, map[string]any{"run_id": req.RunID, "session_id": req.SessionID, "status": run.StatusRunning})
		return
	}
	r, done := o.following(r)
	defer done()
	o.followRun(r.Context(), startSSE(w), req.RunID, req.UserID, from, "keepalive")
}

// savePending writes the run's PENDING row, creating its session when it
// is new.
func (o *OS) savePending(ctx context.Context, runner run.Runner, in *run.Input) error {
	return runhost.RecordPending(ctx, o.cfg.Store, runner, in, o.cfg.Now())
}

// runBackground waits for a slot, executes the run and makes sure it ends
// in a terminal state, in the store and in the event log.
func (o *OS) runBackground(ctx context.Context, cancel context.CancelFunc, done func(), runner run.Runner, in *run.Input) {
	defer done()
	defer cancel()
	status := run.StatusError
	defer func() { o.events.Finish(in.RunID, status) }()
	if !o.acquireSlot(ctx) {
		status = o.settle(in, runner, run.StatusCancelled, "the run was cancelled before it started")
		return
	}
	defer o.releaseSlot()
	var last run.Event
	meta := &inflightRun{runner: runner, sessionID: in.SessionID, userID: in.UserID}
	for event, err := range o.logFailure(ctx, meta, runner.Stream(ctx, in)) {
		if err != nil {
			status = o.settle(in, runner, run.StatusError, err.Error())
			if last == nil && status == run.StatusError { // accepted, but it could not start
				o.logFailedRun(ctx, meta, in.RunID, run.ErrorTypeOf(err), err.Error())
			}
			return
		}
		o.events.AppendTo(in.RunID, event) // a team member's events too: its stream is the team run's
		last = event
	}
	if final, ok := run.FinalStatus(last); ok {
		status = final
		return
	}
	status = o.settle(in, runner, run.StatusError, "the run ended without a final state")
}

// settle writes status onto a background run whose stored row is not
// terminal yet, with a matching final event in the event log, and returns
// the run's final status: status, or the one the runner already stored.
func (o *OS) settle(in *run.Input, runner run.Runner, status run.Status, message string) run.Status {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	stored, over, err := runhost.Settle(ctx, o.cfg.Store, in.RunID, in.UserID, status, message)
	if over {
		return stored
	}
	if err != nil {
		o.log.Error("background run: final state not written", slog.String("run_id", in.RunID), slog.String("error", err.Error()))
	}
	base := runnerBase(runner, in.RunID, in.SessionID)
	base.CreatedAt = o.cfg.Now().Unix()
	if status == run.StatusCancelled {
		o.events.AppendTo(in.RunID, &run.RunCancelled{BaseEvent: base, Reason: message})
	} else {
		o.events.AppendTo(in.RunID, &run.RunError{BaseEvent: base, Content: message})
	}
	return status
}

// acquireSlot waits for a background slot; false when ctx ends first.
func (o *OS) acquireSlot(ctx context.Context) bool {
	if o.slots == nil {
		return ctx.Err() == nil
	}
	select {
	case o.slots <- struct{}{}:
		if ctx.Err() != nil {
			<-o.slots
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// releaseSlot frees a slot taken by acquireSlot.
func (o *OS) releaseSlot() {
	if o.slots != nil {
		<-o.slots
	}
}
