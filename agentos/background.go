package agentos

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Background runs (background=true; runtime.md §15): the run is recorded as
// PENDING before the answer, then executes after the request has ended, at
// most BackgroundMaxConcurrency at a time. A client polls
// GET /agents/{id}/runs/{run_id}, or, with stream=true, follows the run's
// events; leaving the stream does not stop the run. A run cancelled while it
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
	var live *liveRun
	if stream {
		live = newLiveRun()
	}
	go o.runBackground(ctx, cancel, done, runner, in, live)
	if !stream {
		writeJSON(w, http.StatusAccepted, map[string]any{"run_id": in.RunID, "session_id": in.SessionID, "status": run.StatusPending})
		return
	}
	sse := startSSE(w)
	for event, err := range live.follow(r.Context()) {
		if err != nil {
			_ = sse.errorFrame(err.Error())
			return
		}
		if sse.event(event) != nil {
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
// in a terminal state.
func (o *OS) runBackground(ctx context.Context, cancel context.CancelFunc, done func(), runner run.Runner, in *run.Input, live *liveRun) {
	defer done()
	defer cancel()
	defer live.close()
	if !o.acquireSlot(ctx) {
		live.add(o.settle(in, runner, run.StatusCancelled, "the run was cancelled before it started"))
		return
	}
	defer o.releaseSlot()
	var last run.Event
	for event, err := range runner.Stream(ctx, in) {
		if err != nil {
			if final := o.settle(in, runner, run.StatusError, err.Error()); final != nil {
				live.add(final)
			} else {
				live.fail(err)
			}
			return
		}
		last = event
		live.add(event)
	}
	if !terminalEvent(last) {
		live.add(o.settle(in, runner, run.StatusError, "the run ended without a final state"))
	}
}

// settle writes status onto a background run whose stored row is not
// terminal yet, and returns the matching final event; nil when the row
// already ended (the runner stored its own outcome).
func (o *OS) settle(in *run.Input, runner run.Runner, status run.Status, message string) run.Event {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	rec, err := o.cfg.Store.GetRun(ctx, in.RunID, in.UserID)
	if err != nil {
		o.log.Error("background run: final state not written", slog.String("run_id", in.RunID), slog.String("error", err.Error()))
		return nil
	}
	if rec.Run.Status.Terminal() {
		return nil
	}
	rec.Run.Status = status
	rec.Run.Content, rec.Run.ContentType = message, "str"
	if _, err := o.cfg.Store.UpsertRun(ctx, rec); err != nil {
		o.log.Error("background run: final state not written", slog.String("run_id", in.RunID), slog.String("error", err.Error()))
	}
	base := run.BaseEvent{RunID: in.RunID, SessionID: in.SessionID, AgentID: runner.ID(), AgentName: runner.Name(), CreatedAt: o.cfg.Now().Unix()}
	if status == run.StatusCancelled {
		return &run.RunCancelled{BaseEvent: base, Reason: message}
	}
	return &run.RunError{BaseEvent: base, Content: message}
}

// terminalEvent reports whether e ends a run.
func terminalEvent(e run.Event) bool {
	switch e.(type) {
	case *run.RunCompleted, *run.RunError, *run.RunCancelled, *run.RunPaused:
		return true
	}
	return false
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

// liveRun holds a background run's events for whoever follows it; the zero
// of *liveRun (nil) drops them.
type liveRun struct {
	mu     sync.Mutex
	events []run.Event
	err    error
	closed bool
	wake   chan struct{} // closed and replaced at every change
}

func newLiveRun() *liveRun { return &liveRun{wake: make(chan struct{})} }

// add appends an event; nil events are ignored.
func (l *liveRun) add(e run.Event) {
	if l == nil || e == nil {
		return
	}
	l.mu.Lock()
	l.events = append(l.events, e)
	l.notify()
	l.mu.Unlock()
}

// fail ends the run's events with an error.
func (l *liveRun) fail(err error) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.err = err
	l.notify()
	l.mu.Unlock()
}

// close marks the end of the run's events.
func (l *liveRun) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.closed = true
	l.notify()
	l.mu.Unlock()
}

// notify wakes the followers; l.mu is held.
func (l *liveRun) notify() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// follow yields every event of the run from the first, waiting for new ones
// until the run ends or ctx does.
func (l *liveRun) follow(ctx context.Context) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		next := 0
		for {
			l.mu.Lock()
			pending := l.events[next:]
			err, closed, wake := l.err, l.closed, l.wake
			l.mu.Unlock()
			for _, e := range pending {
				if !yield(e, nil) {
					return
				}
			}
			next += len(pending)
			if len(pending) > 0 {
				continue
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if closed {
				return
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}
}
