package agentos

import (
	"errors"
	"net/http"
	"time"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// POST /agents/{agent_id}/runs/{run_id}/resume (events-and-streaming.md §8):
// a client that lost a run's stream gets the events after the last index it
// saw. A run still in the event log is replayed (finished) or caught up and
// then followed live (in flight); otherwise the events stored on the run
// row answer. Every failure ends the stream with an error frame.

// heartbeatInterval is how long a resumed stream stays silent before a
// heartbeat comment.
const heartbeatInterval = 30 * time.Second

func (o *OS) handleResumeRun(w http.ResponseWriter, r *http.Request) {
	runner, ok := o.pathAgent(w, r)
	if !ok {
		return
	}
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
	if info, known := o.events.Lookup(runID); known && o.producesHere(r.Context(), runID, info, stored) {
		o.resumeFromLog(r, sse, runID, last, info.Status)
		return
	}
	if stored == nil {
		_ = sse.errorFrame("Run " + runID + " not found")
		return
	}
	if o.cfg.Queue != nil && o.resumeFromQueue(r, sse, stored, last) {
		return
	}
	replayStored(sse, stored, last)
}

// resumeFromQueue answers from the durable stream of a run of the queue,
// which any replica can read; false when the queue has no events for it.
func (o *OS) resumeFromQueue(r *http.Request, sse *sseWriter, stored *run.Output, last int64) bool {
	var missed []eventlog.Entry
	for entry, err := range o.cfg.Queue.Events(r.Context(), stored.RunID, last, false) {
		if err != nil {
			return false
		}
		missed = append(missed, entry)
	}
	if len(missed) == 0 && stored.Status.Terminal() {
		return false // nothing streamed: the stored events answer
	}
	if stored.Status.Terminal() {
		if sse.control("replay", map[string]any{"run_id": stored.RunID, "status": stored.Status, "total_events": len(missed),
			"last_event_index_requested": last, "message": "Replaying the events of a finished run"}) != nil {
			return true
		}
		for _, entry := range missed {
			if sse.entry(entry) != nil {
				return true
			}
		}
		return true
	}
	if len(missed) > 0 {
		if sse.control("catch_up", map[string]any{"missed_events": len(missed), "current_event_count": len(missed), "status": "running"}) != nil {
			return true
		}
		for _, entry := range missed {
			if sse.entry(entry) != nil {
				return true
			}
			last = entry.Index
		}
	}
	if sse.control("subscribed", map[string]any{"current_event_count": len(missed), "status": "running", "message": "Subscribed to the run's live events"}) != nil {
		return true
	}
	o.followFromQueue(r.Context(), sse, stored.RunID, last)
	return true
}

// resumableRun checks the caller may follow the run: it is this agent's, in
// the caller's scope (and session, when given). It returns the stored run
// when there is one; a run executing in this process may not be stored yet.
func (o *OS) resumableRun(r *http.Request, runner run.Runner, runID, sessionID, userID string) (*run.Output, error) {
	notFound := errors.New("Run " + runID + " not found")
	o.mu.Lock()
	live, inflight := o.inflight[runID]
	o.mu.Unlock()
	if inflight && (live.agentID != runner.ID() || (sessionID != "" && live.sessionID != sessionID) || live.userID != o.userScope(r, live.userID)) {
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
	case rec.Run.AgentID != runner.ID() || (sessionID != "" && rec.SessionID != sessionID):
		return nil, notFound
	}
	return rec.Run, nil
}

// resumeFromLog answers from the event log: a replay of a finished run, or a
// catch-up and a live tail of one in flight.
func (o *OS) resumeFromLog(r *http.Request, sse *sseWriter, runID string, last int64, status run.Status) {
	info, _ := o.events.Lookup(runID)
	items, ok := o.events.Follow(r.Context(), runID, last, heartbeatInterval)
	if !ok {
		_ = sse.errorFrame("the run's event stream expired; read the run with GET …/runs/" + runID)
		return
	}
	if status.Terminal() {
		missed := o.events.CountAfter(runID, last)
		if sse.control("replay", map[string]any{"run_id": runID, "status": status, "total_events": info.Count,
			"total_buffered": missed, "last_event_index_requested": last, "message": "Replaying the events of a finished run"}) != nil {
			return
		}
		_ = sse.follow(items, "heartbeat") // a finished run has no idle intervals
		return
	}
	subscribed := map[string]any{"current_event_count": info.Count, "status": "running", "message": "Subscribed to the run's live events"}
	if info.LastIndex > last {
		if sse.control("catch_up", map[string]any{"missed_events": o.events.CountAfter(runID, last), "current_event_count": info.Count, "status": "running"}) != nil {
			return
		}
	} else if sse.control("subscribed", subscribed) != nil {
		return
	}
	caughtUp := info.LastIndex <= last
	for item := range items {
		var err error
		switch {
		case item.Idle:
			err = sse.comment("heartbeat")
		default:
			err = sse.entry(item.Entry)
			if !caughtUp && item.Entry.Index >= info.LastIndex {
				caughtUp = true
				if err == nil {
					err = sse.control("subscribed", subscribed)
				}
			}
		}
		if err != nil {
			return
		}
	}
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
