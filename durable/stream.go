package durable

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
)

// A run's events also go to its workflow's durable stream, so a replica
// other than the one executing the run can replay and follow them. The
// workflow writes the events gathered since the last write after every step,
// before it parks and when it ends — at fixed points, so a re-executed
// workflow finds its earlier writes recorded and does not repeat them.

// streamKey is the workflow stream holding a run's events.
const streamKey = "events"

// streamEntry is one event in the durable stream: its index, name and
// encoded data, as the event log produced them.
type streamEntry struct {
	Index int64           `json:"i"`
	Name  string          `json:"n"`
	Data  json.RawMessage `json:"d"`
}

// record keeps an event for the next write to the stream.
func (j *journal) record(e eventlog.Entry) {
	j.mu.Lock()
	j.pending = append(j.pending, streamEntry{Index: e.Index, Name: e.Name, Data: e.Data})
	j.mu.Unlock()
}

// flush writes the events gathered since the last write, as one stream
// value. It writes even when there are none, so the workflow's steps are
// the same on every execution.
func (j *journal) flush() {
	j.mu.Lock()
	batch := j.pending
	j.pending = nil
	j.mu.Unlock()
	if batch == nil {
		batch = []streamEntry{}
	}
	if err := dbos.WriteStream(j.wf, streamKey, batch); err != nil {
		j.log.Warn("durable: writing run events to the stream failed", slog.String("run_id", j.runID), slog.String("error", err.Error()))
	}
}

// lostEventsGap is the room left, after the last event a lost execution
// wrote to the durable stream, for the events it sent its followers before
// it was lost: written to the stream at step boundaries and to Redis in the
// background, they may be recorded nowhere. The next execution numbers its
// events above them, so no index is sent twice (gaps are allowed).
const lostEventsGap = 1 << 20

// seedIndices makes a resumed run's event numbering go on after the events
// it already streamed: to the durable stream, and to Redis, which may hold
// events of the execution that was lost and that its followers saw. After a
// lost execution (lost), numbering also skips lostEventsGap.
func (q *Queue) seedIndices(runID string, lost bool) {
	batches, _, err := dbos.ReadStream[[]streamEntry](q.dbos, runID, streamKey, dbos.WithReadStreamSnapshot())
	if err != nil {
		q.log.Warn("durable: reading the run's stream failed", slog.String("run_id", runID), slog.String("error", err.Error()))
		return
	}
	next := int64(0)
	for _, batch := range batches {
		for _, e := range batch {
			next = max(next, e.Index+1)
		}
	}
	if last, err := q.redis.lastIndex(context.Background(), runID); err != nil {
		// Redis refuses an index it holds already, so the live view of
		// this run may stall; the durable stream is unaffected.
		q.log.Warn("durable: reading the run's last live event failed", slog.String("run_id", runID), slog.String("error", err.Error()))
	} else {
		next = max(next, last+1)
	}
	if lost {
		next += lostEventsGap
	}
	q.cfg.Events.Seed(runID, next)
}

// Events yields the run's streamed events whose index is above after, in
// order, each index once: what was streamed so far and, with follow, the
// rest as the run streams it, until its workflow ends or ctx does. It reads
// the database, so it works on any replica. With Redis it also reads the
// run's live events there, which arrive as they happen rather than step by
// step, and a follow also ends once Redis shows the run's final event with
// a final status (for a paused run: its RunPaused).
//
// The two sources are merged by index (see [merge]): the durable stream is
// complete, so its events are taken as they come; an event from Redis is
// taken only when it follows the last one taken without a gap, so a
// missing or trimmed Redis entry is waited for in the durable stream,
// which is then read too. The durable stream is read from the start when
// Redis does not know the run or fails, and as soon as Redis shows a gap
// or stays silent for a whole blocking read.
func (q *Queue) Events(ctx context.Context, runID string, after int64, follow bool) iter.Seq2[eventlog.Entry, error] {
	return func(yield func(eventlog.Entry, error) bool) {
		m := &merge{after: after}
		if !follow {
			q.snapshotEvents(ctx, runID, m, yield)
			return
		}
		q.followEvents(ctx, runID, m, yield)
	}
}

// snapshotEvents yields what the durable stream and Redis hold now.
func (q *Queue) snapshotEvents(ctx context.Context, runID string, m *merge, yield func(eventlog.Entry, error) bool) {
	emit := func(e eventlog.Entry) bool { return yield(e, nil) }
	batches, _, err := dbos.ReadStream[[]streamEntry](q.dbos, runID, streamKey, dbos.WithReadStreamSnapshot())
	if err != nil {
		yield(eventlog.Entry{}, err)
		return
	}
	for _, batch := range batches {
		for _, e := range batch {
			if !m.durable(e.entry(), emit) {
				return
			}
		}
	}
	live, err := q.redis.snapshot(ctx, runID, m.after)
	if err != nil {
		q.log.Debug("durable: reading a run's live events failed; the database answered", slog.String("run_id", runID), slog.String("error", err.Error()))
	}
	for _, e := range live {
		if !m.live(e, emit) {
			return
		}
	}
}

// followEvents yields the run's events as they come, from Redis and the durable
// stream (see [Queue.Events]).
func (q *Queue) followEvents(ctx context.Context, runID string, m *merge, yield func(eventlog.Entry, error) bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ended bool // the last event taken ends the run
	emit := func(e eventlog.Entry) bool {
		// A member's final event, passed on in a team's stream, does not
		// end the team's run.
		ended = run.EndsRun(runID, e.Name, e.Data)
		return yield(e, nil)
	}

	var values <-chan dbos.StreamValue[[]streamEntry]
	durableStarted, durableClosed := false, false
	readDurable := func() bool {
		if durableStarted {
			return true
		}
		durableStarted = true
		var err error
		values, err = dbos.ReadStreamAsync[[]streamEntry](q.dbos, runID, streamKey)
		if err != nil {
			yield(eventlog.Entry{}, err)
			return false
		}
		return true
	}
	// The engine's reader ends when the workflow does; a follower that stops
	// early leaves it drained, not blocked.
	defer func() {
		if values != nil {
			go func() {
				for range values {
				}
			}()
		}
	}()

	live, known := q.redis.tail(ctx, runID, m.after)
	if !known && !readDurable() {
		return
	}
	over := false // Redis reported the run over and delivered what it has
	for {
		if over && ended && !m.gap() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case item, ok := <-live:
			switch {
			case !ok:
				live = nil
				if durableClosed {
					return
				}
				if !readDurable() {
					return
				}
			case item.over:
				over = true
				if !ended || m.gap() {
					if !readDurable() {
						return
					}
				}
			case item.idle:
				if durableClosed {
					return
				}
				if !readDurable() {
					return
				}
			default:
				if !m.live(item.entry, emit) {
					return
				}
				if m.gap() && !readDurable() {
					return
				}
			}
		case v, ok := <-values:
			if !ok || v.Closed {
				// The workflow is over. Redis may still bring the final
				// event of a run cancelled while it was executing.
				values, durableClosed = nil, true
				if live == nil || ended {
					return
				}
				continue
			}
			if v.Err != nil {
				yield(eventlog.Entry{}, v.Err)
				return
			}
			for _, e := range v.Value {
				if !m.durable(e.entry(), emit) {
					return
				}
			}
		}
	}
}

// entry is the stream entry as the event log's entry.
func (e streamEntry) entry() eventlog.Entry {
	return eventlog.Entry{Index: e.Index, Name: e.Name, Data: e.Data}
}

// maxHeld bounds the Redis events a follower holds while it waits for the
// durable stream to fill a gap before them; past it they are read from the
// durable stream too.
const maxHeld = redisMaxLen

// merge orders a run's events from its two sources without losing or
// repeating an index. after is the index of the last event taken (or the
// follower's starting point). The durable stream is complete: any of its
// events above after is next. Redis may miss events (writes dropped while
// it failed, entries trimmed or expired): one of its events is next only
// when its index is exactly after+1, the one index nothing can sit
// before; any other is held until the durable stream has caught up to it.
type merge struct {
	after int64
	held  []eventlog.Entry // Redis events above after+1, in index order
}

// durable takes an event of the durable stream. emit returns false to stop;
// so does durable then.
func (m *merge) durable(e eventlog.Entry, emit func(eventlog.Entry) bool) bool {
	if e.Index <= m.after {
		return true
	}
	m.after = e.Index
	return emit(e) && m.release(emit)
}

// live takes an event from Redis.
func (m *merge) live(e eventlog.Entry, emit func(eventlog.Entry) bool) bool {
	switch {
	case e.Index <= m.after:
		return true
	case e.Index == m.after+1:
		m.after = e.Index
		return emit(e) && m.release(emit)
	case len(m.held) < maxHeld && (len(m.held) == 0 || e.Index > m.held[len(m.held)-1].Index):
		m.held = append(m.held, e)
	}
	return true
}

// release takes the held events that are next now and forgets those the
// durable stream delivered.
func (m *merge) release(emit func(eventlog.Entry) bool) bool {
	for len(m.held) > 0 {
		e := m.held[0]
		switch {
		case e.Index <= m.after:
			m.held = m.held[1:]
		case e.Index == m.after+1:
			m.held = m.held[1:]
			m.after = e.Index
			if !emit(e) {
				return false
			}
		default:
			return true
		}
	}
	m.held = nil
	return true
}

// gap reports whether Redis events wait for earlier ones.
func (m *merge) gap() bool { return len(m.held) > 0 }
