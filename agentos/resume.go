package agentos

import (
	"context"
	"errors"
	"github.com/agnogo/agnogo/eventlog"
	"net/http"
	"sort"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// POST /agents/{agent_id}/runs/{run_id}/resume, and /teams/… for a team's
// run (events-and-streaming.md §8):
// a client that lost a run's stream gets the events after the last index it
// saw. A run still in the event log is replayed (finished) or caught up and
// then followed live (in flight); otherwise the events stored on the run
// row answer. Every failure ends the stream with an error frame.

// heartbeatInterval is how long a resumed stream stays silent before a
// heartbeat comment.
const heartbeatInterval = 30 * time.Second

func (o *OS) handleResumeRun(w http.ResponseWriter, r *http.Request, runner run.Runner) {
	f, err := parseForm(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	last := int64(f.integer("last_event_index", -1))
	sessionID := f.str("session_id")
	userID := o.userScope(r, f.str("user_id"))
	if len(f.issues) > 0 {
		writeValidation(w, f.issues...)
		return
	}
	runID := r.PathValue("run_id")
	r, done := o.following(r)
	defer done()
	stored, err := o.resumableRun(r, runner, runID, sessionID, userID)
	sse := startSSE(w)
	if err != nil {
		_ = sse.errorFrame(err.Error())
		return
	}
	o.resume(r.Context(), sse, runID, stored, last)
}

// resume answers a resume from the run's event stream, wherever the run
// executes: a replay of a finished run, or a catch-up and a live tail of
// one in flight; from the events stored on its row when the stream has
// nothing for it.
func (o *OS) resume(ctx context.Context, sse *sseWriter, runID string, stored *run.Output, last int64) {
	point, ok := o.resumePoint(ctx, runID, stored, last, "resume")
	if !ok {
		_ = sse.errorFrame("Run " + runID + " not found")
		return
	}
	status, ending, all, missed, err := point.status, point.ending, point.all, point.missed, point.err
	if ending && err == nil {
		if sse.control("replay", map[string]any{"run_id": runID, "status": status, "total_events": len(all),
			"total_buffered": len(missed), "last_event_index_requested": last, "message": "Replaying the events of a finished run"}) != nil {
			return
		}
		_, _ = sse.follow(ctx, runID, o.events.Follow(ctx, runID, last, heartbeatInterval), "heartbeat")
		return
	}
	if len(missed) == 0 && stored != nil && (err != nil || status.Terminal()) {
		replayStored(sse, stored, last) // nothing streamed, or not readable: the stored events answer
		return
	}
	if status.Terminal() {
		if sse.control("replay", map[string]any{"run_id": runID, "status": status, "total_events": len(all),
			"total_buffered": len(missed), "last_event_index_requested": last, "message": "Replaying the events of a finished run"}) != nil {
			return
		}
		for _, entry := range missed {
			if sse.entry(entry) != nil {
				return
			}
		}
		return
	}
	if len(missed) > 0 {
		if sse.control("catch_up", map[string]any{"missed_events": len(missed), "current_event_count": len(all), "status": "running"}) != nil {
			return
		}
		for _, entry := range missed {
			if sse.entry(entry) != nil {
				return
			}
			last = entry.Index
		}
	}
	if sse.control("subscribed", map[string]any{"current_event_count": len(all), "status": "running", "message": "Subscribed to the run's live events"}) != nil {
		return
	}
	_, _ = sse.follow(ctx, runID, o.events.Follow(ctx, runID, last, heartbeatInterval), "heartbeat")
}

// resumableRun checks the caller may follow the run: it is this runner's, in
// the caller's scope (and session, when given). It returns the stored run
// when there is one; a run executing in this process may not be stored yet.
func (o *OS) resumableRun(r *http.Request, runner run.Runner, runID, sessionID, userID string) (*run.Output, error) {
	notFound := errors.New("Run " + runID + " not found")
	o.mu.Lock()
	live, inflight := o.inflight[runID]
	o.mu.Unlock()
	if inflight && (live.runner.ID() != runner.ID() || (sessionID != "" && live.sessionID != sessionID) || live.userID != o.userScope(r, live.userID)) {
		return nil, notFound
	}
	if o.cfg.Store == nil {
		if !inflight {
			return nil, notFound
		}
		return nil, nil
	}
	rec, err := o.cfg.Store.GetRun(r.Context(), runID, userID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		if inflight {
			return nil, nil
		}
		return nil, notFound
	case err != nil:
		o.log.Error("resume: reading the run failed", "run_id", runID, "error", err.Error())
		return nil, errors.New("the run could not be read; try again")
	case rec.Run.RunnerID() != runner.ID() || (sessionID != "" && rec.SessionID != sessionID):
		return nil, notFound
	}
	return rec.Run, nil
}

// replayStored answers from the events stored on the run row (store_events):
// those with an index above last. A run is saved before its terminal event
// is sent, so that event is stored without the index the stream gave it:
// the one after its predecessor's. Events stored with no indexed event
// before them use their position and are always sent.
func replayStored(sse *sseWriter, out *run.Output, last int64) {
	var send []run.Event
	var previous *int64
	for _, e := range out.Events {
		index := e.Base().EventIndex
		if index == nil && previous != nil {
			next := *previous + 1
			e.Base().EventIndex, index = &next, &next
		}
		previous = index
		if index == nil || *index > last {
			send = append(send, e)
		}
	}
	if sse.control("replay", map[string]any{"run_id": out.RunID, "status": out.Status, "total_events": len(out.Events),
		"last_event_index_requested": last, "message": "Replaying the events stored with the run"}) != nil {
		return
	}
	for _, e := range send {
		if sse.event(e) != nil {
			return
		}
	}
}

// resumePoint is where a client picking a run's events up again stands:
// the run's status, every event the log has of it and those after the
// client's last.
type resumePoint struct {
	status run.Status
	// ending is a run whose row is final while its last events are still
	// on their way to the log (a run saves its end before its final
	// event): it is replayed as the finished run the client may have
	// seen, its events followed up to the final one.
	ending      bool
	all, missed []eventlog.Entry
	// err is a failed read of the log: the run is answered from its row.
	err error
}

// resumePoint reads where a resume of runID after last stands, for POST
// …/resume and the WebSocket's reconnect (what names the caller in logs);
// false when neither the log nor the row knows the run.
func (o *OS) resumePoint(ctx context.Context, runID string, stored *run.Output, last int64, what string) (resumePoint, bool) {
	var p resumePoint
	info, known := o.events.Lookup(runID)
	switch {
	case known && o.events.Producing(runID):
		p.status = info.Status
		if stored != nil && stored.Status.Terminal() && stored.Status != run.StatusPaused && !p.status.Terminal() {
			p.status, p.ending = stored.Status, true
		}
	case stored != nil:
		p.status = stored.Status
	default:
		return p, false
	}
	p.all, p.err = o.events.Snapshot(ctx, runID, -1)
	if p.err != nil {
		o.log.Warn(what+": reading the run's events failed; answering from its row", "run_id", runID, "error", p.err.Error())
		p.all = nil
	}
	first := sort.Search(len(p.all), func(i int) bool { return p.all[i].Index > last })
	p.missed = p.all[first:]
	return p, true
}
