package eventlog

import (
	"context"
	"iter"
	"time"
)

// Source is where the events of runs that execute in other processes can
// be read: the durable queue's stream of each run, merged with its live
// events in Redis. Any replica can read it.
type Source interface {
	// Events yields the run's events whose index is above after, in order,
	// each index once: what was streamed so far and, with follow, the rest
	// as the run streams it, until the run ends or ctx does. A run the
	// source has no record of yields nothing.
	Events(ctx context.Context, runID string, after int64, follow bool) iter.Seq2[Entry, error]
}

// Log is every way a run's events travel, behind one [Log.Follow] and one
// [Log.Snapshot] that work on any replica: this process's [Memory] for the
// runs it produces (live, event by event), and a [Source] for runs another
// process produces. A follower never asks where a run executes: it reads
// the source until the run starts producing here, and then this process's
// log, which has every event from that point on; a run taken over from a
// lost process has its earlier events read from the source first.
//
// The embedded Memory is what producers write to (Register, Append, Seed,
// Finish).
type Log struct {
	*Memory
	source Source
}

// NewLog joins an in-process log and the source of other processes'
// events. source may be nil: then every run is produced here.
func NewLog(mem *Memory, source Source) *Log {
	return &Log{Memory: mem, source: source}
}

// Follow yields the run's events whose index is above after, then each new
// one as it comes, and an idle Item after every idle interval without one
// (idle ≤ 0: none). It ends when the run's stream ends (its final event,
// or, for a run another process produced, its durable record ending), when
// ctx ends, or with an error from the source. A run unknown everywhere
// yields nothing.
func (l *Log) Follow(ctx context.Context, runID string, after int64, idle time.Duration) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		for {
			local, first, started := l.producer(runID)
			if local || l.source == nil {
				l.followHere(ctx, runID, after, first, idle, yield)
				return
			}
			next, switched := l.followSource(ctx, runID, after, idle, started, yield)
			if !switched {
				return
			}
			after = next
		}
	}
}

// followHere yields a run this process produces from its in-process log,
// after the events below first, which another process streamed, from the
// source.
func (l *Log) followHere(ctx context.Context, runID string, after, first int64, idle time.Duration, yield func(Item, error) bool) {
	if l.source != nil && first > after+1 {
		for e, err := range l.source.Events(ctx, runID, after, false) {
			if err != nil {
				yield(Item{}, err)
				return
			}
			if e.Index >= first {
				break
			}
			if !yield(Item{Entry: e}, nil) {
				return
			}
			after = e.Index
		}
	}
	items, ok := l.Memory.Follow(ctx, runID, after, idle)
	if !ok {
		return
	}
	for item := range items {
		if !yield(item, nil) {
			return
		}
	}
}

// sourced is one step of reading the source in the background.
type sourced struct {
	entry Entry
	err   error
}

// followSource yields the run's events from the source until the run's
// stream ends there, or until it starts producing here (switched, with the
// index of the last event yielded).
func (l *Log) followSource(ctx context.Context, runID string, after int64, idle time.Duration, started <-chan struct{}, yield func(Item, error) bool) (last int64, switched bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan sourced)
	go func() {
		defer close(items)
		for e, err := range l.source.Events(ctx, runID, after, true) {
			select {
			case items <- sourced{entry: e, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var tick <-chan time.Time
	var timer *time.Timer
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		tick = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			return after, false
		case item, ok := <-items:
			switch {
			case !ok:
				return after, false
			case item.err != nil:
				yield(Item{}, item.err)
				return after, false
			case item.entry.Index <= after:
				continue
			}
			if !yield(Item{Entry: item.entry}, nil) {
				return after, false
			}
			after = item.entry.Index
			if timer != nil {
				timer.Reset(idle)
			}
		case <-tick:
			if !yield(Item{Idle: true}, nil) {
				return after, false
			}
			timer.Reset(idle)
		case <-started:
			var local bool
			local, _, started = l.producer(runID)
			if local {
				return after, true
			}
		}
	}
}

// Snapshot returns the run's events with an index above after that were
// streamed so far, wherever it executes.
func (l *Log) Snapshot(ctx context.Context, runID string, after int64) ([]Entry, error) {
	local, first, _ := l.producer(runID)
	if l.source == nil || local {
		var entries []Entry
		if l.source != nil && first > after+1 {
			for e, err := range l.source.Events(ctx, runID, after, false) {
				if err != nil {
					return nil, err
				}
				if e.Index >= first {
					break
				}
				entries = append(entries, e)
				after = e.Index
			}
		}
		here, _ := l.Memory.Snapshot(runID, after)
		return append(entries, here...), nil
	}
	var entries []Entry
	for e, err := range l.source.Events(ctx, runID, after, false) {
		if err != nil {
			return entries, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// Producing reports whether this process produces the run's events.
func (l *Log) Producing(runID string) bool {
	local, _, _ := l.producer(runID)
	return local || l.source == nil
}
