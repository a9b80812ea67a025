package agentos

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Background runs (background=true; runtime.md §15): the run is recorded as
// PENDING before the answer, then executes after the request has ended, at
// most BackgroundMaxConcurrency at a time. A client polls
// GET /agents/{id}/runs/{run_id}, or, with stream=true, follows the run's
// events through the event log; leaving the stream does not stop the run,
// and POST …/resume picks it up again. A run cancelled while it
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
	// The run outlives the request but keeps its values (the caller's identity).
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	done, ok := o.track(in.RunID, &inflightRun{agentID: runner.ID(), sessionID: in.SessionID, userID: in.UserID, cancel: cancel})
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
	items, _ := o.events.Follow(r.Context(), in.RunID, -1, 0)
	sse := startSSE(w)
	for item := range items {
		if sse.entry(item.Entry) != nil {
			return // the client left; the run goes on
		}
	}
}

// savePending writes the run's PENDING row, creating its session when it
// is new.
func (o *OS) savePending(ctx context.Context, runner run.Runner, in *run.Input) error {
	now := o.cfg.Now().Unix()
	rec := storage.RunRecord{SessionID: in.SessionID, UserID: in.UserID, Run: &run.Output{
		RunID: in.RunID, AgentID: runner.ID(), AgentName: runner.Name(), SessionID: in.SessionID, UserID: in.UserID,
		Input: in, Status: run.StatusPending, Metadata: in.Metadata, CreatedAt: now,
	}}
	_, err := o.cfg.Store.GetSession(ctx, in.SessionID, storage.GetSessionOptions{UserID: in.UserID})
	switch {
	case err == nil:
		_, err = o.cfg.Store.UpsertRun(ctx, rec)
	case errors.Is(err, storage.ErrNotFound):
		session := &storage.Session{SessionID: in.SessionID, SessionType: storage.SessionTypeAgent, AgentID: runner.ID(), UserID: in.UserID}
		_, _, err = o.cfg.Store.SaveRun(ctx, session, rec)
	}
	return err
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
	for event, err := range runner.Stream(ctx, in) {
		if err != nil {
			status = o.settle(in, runner, run.StatusError, err.Error())
			return
		}
		o.events.Append(event)
		last = event
	}
	if final, ok := terminalStatus(last); ok {
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
	rec, err := o.cfg.Store.GetRun(ctx, in.RunID, in.UserID)
	if err == nil && rec.Run.Status.Terminal() {
		return rec.Run.Status
	}
	if err == nil {
		rec.Run.Status = status
		rec.Run.Content, rec.Run.ContentType = message, "str"
		_, err = o.cfg.Store.UpsertRun(ctx, rec)
	}
	if err != nil {
		o.log.Error("background run: final state not written", slog.String("run_id", in.RunID), slog.String("error", err.Error()))
	}
	base := run.BaseEvent{RunID: in.RunID, SessionID: in.SessionID, AgentID: runner.ID(), AgentName: runner.Name(), CreatedAt: o.cfg.Now().Unix()}
	if status == run.StatusCancelled {
		o.events.Append(&run.RunCancelled{BaseEvent: base, Reason: message})
	} else {
		o.events.Append(&run.RunError{BaseEvent: base, Content: message})
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
