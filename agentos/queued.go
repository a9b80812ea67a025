package agentos

import (
	"context"
	"time"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
)

// locatePoll is how often a follower of a queued run that has not started
// yet asks where it runs.
const locatePoll = 100 * time.Millisecond

// followQueued streams the events after `after` of a run of the durable
// queue, from wherever the run executes: this process's event log while it
// executes (or waits for a person) here, live; the queue's reader —
// the database, and Redis — when another replica executes it. Until the
// run starts, it waits, with a comment named idle every heartbeatInterval.
// A run the queue no longer knows (its record was cleaned up) is replayed
// from the events stored on its row.
func (o *OS) followQueued(ctx context.Context, sse *sseWriter, runID, userID string, after int64, idle string) {
	quiet := time.Now()
	for {
		where, err := o.cfg.Queue.Locate(ctx, runID)
		if err != nil {
			if ctx.Err() == nil {
				_ = sse.errorFrame("following the run failed; resume it with POST …/runs/" + runID + "/resume")
			}
			return
		}
		switch where {
		case durable.Here:
			if items, ok := o.events.Follow(ctx, runID, after, heartbeatInterval); ok {
				_ = sse.follow(items, idle)
				return
			}
			o.followFromQueue(ctx, sse, runID, after)
			return
		case durable.Elsewhere, durable.Over:
			o.followFromQueue(ctx, sse, runID, after)
			return
		case durable.Unknown:
			if rec, err := o.cfg.Store.GetRun(ctx, runID, userID); err == nil {
				replayStored(sse, rec.Run, after)
			} else {
				_ = sse.errorFrame("the run's events are no longer available; read it with GET …/runs/" + runID)
			}
			return
		}
		if time.Since(quiet) >= heartbeatInterval {
			if sse.comment(idle) != nil {
				return
			}
			quiet = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(locatePoll):
		}
	}
}

// followFromQueue streams a queued run's events after `after` from the
// queue's reader, which works on any replica, until the run ends.
func (o *OS) followFromQueue(ctx context.Context, sse *sseWriter, runID string, after int64) {
	for entry, err := range o.cfg.Queue.Events(ctx, runID, after, true) {
		if err != nil {
			if ctx.Err() == nil {
				_ = sse.errorFrame("following the run failed; resume it with POST …/runs/" + runID + "/resume")
			}
			return
		}
		if sse.entry(entry) != nil {
			return
		}
	}
}

// producesHere reports whether this process's event log holds a run's
// events. A replica that accepted a durable run registers it in its log,
// but the run may execute on another replica (or be taken over by one):
// that log then misses events. So a run of the queue is followed in the log
// only while it executes here, or when it finished here.
func (o *OS) producesHere(ctx context.Context, runID string, info eventlog.Info, stored *run.Output) bool {
	if o.cfg.Queue == nil || stored == nil {
		return true
	}
	if info.Status.Terminal() && info.Status != run.StatusPaused {
		return info.Count > 0
	}
	where, err := o.cfg.Queue.Locate(ctx, runID)
	return err == nil && where == durable.Here
}

// lastStreamed is the index of the last event a queued run streamed so far,
// wherever it executed; -1 when none.
func (o *OS) lastStreamed(ctx context.Context, runID string) int64 {
	if info, ok := o.events.Lookup(runID); ok && info.Count > 0 {
		if where, err := o.cfg.Queue.Locate(ctx, runID); err == nil && where == durable.Here {
			return info.LastIndex
		}
	}
	last := int64(-1)
	for entry, err := range o.cfg.Queue.Events(ctx, runID, -1, false) {
		if err != nil {
			break
		}
		last = max(last, entry.Index)
	}
	return last
}
