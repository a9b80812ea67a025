package durable

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agnogo/agnogo/eventlog"
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

// seedIndices makes a resumed run's event numbering go on after the events
// it already streamed.
func (q *Queue) seedIndices(runID string) {
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
	q.cfg.Events.Seed(runID, next)
}

// Events yields the run's streamed events whose index is above after, in
// order: what was streamed so far and, with follow, the rest as the run
// streams it, until its workflow ends (or parks, or ctx ends). It reads the
// database, so it works on any replica.
func (q *Queue) Events(ctx context.Context, runID string, after int64, follow bool) iter.Seq2[eventlog.Entry, error] {
	return func(yield func(eventlog.Entry, error) bool) {
		emit := func(batch []streamEntry) bool {
			for _, e := range batch {
				if e.Index <= after {
					continue
				}
				after = e.Index
				if !yield(eventlog.Entry{Index: e.Index, Name: e.Name, Data: e.Data}, nil) {
					return false
				}
			}
			return true
		}
		if !follow {
			batches, _, err := dbos.ReadStream[[]streamEntry](q.dbos, runID, streamKey, dbos.WithReadStreamSnapshot())
			if err != nil {
				yield(eventlog.Entry{}, err)
				return
			}
			for _, batch := range batches {
				if !emit(batch) {
					return
				}
			}
			return
		}
		values, err := dbos.ReadStreamAsync[[]streamEntry](q.dbos, runID, streamKey)
		if err != nil {
			yield(eventlog.Entry{}, err)
			return
		}
		// The engine's reader ends when the workflow does; a follower that
		// stops early leaves it drained, not blocked.
		defer func() {
			go func() {
				for range values {
				}
			}()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case v, ok := <-values:
				if !ok || v.Closed {
					return
				}
				if v.Err != nil {
					yield(eventlog.Entry{}, v.Err)
					return
				}
				if !emit(v.Value) {
					return
				}
			}
		}
	}
}
