package agentos

import (
	"context"
)

// followRun streams the events after `after` of a background run, from
// wherever it executes (the event log reads this process's events while the
// run executes here and the durable queue's otherwise), with a comment
// named idle every heartbeatInterval of silence. A run whose events are
// not available any more (the queue's record of it was cleaned up) and
// that streamed nothing is replayed from the events stored on its row.
func (o *OS) followRun(ctx context.Context, sse *sseWriter, runID, userID string, after int64, idle string) {
	sent, err := sse.follow(ctx, runID, o.events.Follow(ctx, runID, after, heartbeatInterval), idle)
	if sent > 0 || err != nil || ctx.Err() != nil || o.cfg.Store == nil {
		return
	}
	rec, err := o.cfg.Store.GetRun(ctx, runID, userID)
	if err != nil || !rec.Run.Status.Terminal() {
		_ = sse.errorFrame("the run's events are not available; read it with GET …/runs/" + runID)
		return
	}
	replayStored(sse, rec.Run, after)
}

// lastStreamed is the index of the last event a run streamed so far,
// wherever it executed; -1 when none.
func (o *OS) lastStreamed(ctx context.Context, runID string) int64 {
	entries, _ := o.events.Snapshot(ctx, runID, -1)
	if n := len(entries); n > 0 {
		return entries[n-1].Index
	}
	return -1
}
