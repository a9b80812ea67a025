package eventlog_test

import (
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
)

// recorded is a source of events streamed by another process: the durable
// stream as a replica that does not execute the run reads it. Its follow
// yields what is recorded, then each event recorded later, until the run's
// record is closed.
type recorded struct {
	mu      sync.Mutex
	entries map[string][]eventlog.Entry
	closed  map[string]bool
	changed chan struct{}
}

func newRecorded() *recorded {
	return &recorded{entries: map[string][]eventlog.Entry{}, closed: map[string]bool{}, changed: make(chan struct{})}
}

// add records events of a run, as another replica streams them.
func (r *recorded) add(runID string, entries ...eventlog.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[runID] = append(r.entries[runID], entries...)
	close(r.changed)
	r.changed = make(chan struct{})
}

// close ends the run's record: its workflow is over.
func (r *recorded) close(runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed[runID] = true
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorded) Events(ctx context.Context, runID string, after int64, follow bool) iter.Seq2[eventlog.Entry, error] {
	return func(yield func(eventlog.Entry, error) bool) {
		for {
			r.mu.Lock()
			var next []eventlog.Entry
			for _, e := range r.entries[runID] {
				if e.Index > after {
					next = append(next, e)
				}
			}
			closed, changed := r.closed[runID], r.changed
			r.mu.Unlock()
			for _, e := range next {
				if !yield(e, nil) {
					return
				}
				after = e.Index
			}
			if !follow || closed {
				return
			}
			if len(next) > 0 {
				continue
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}
}

func entry(i int64, name string) eventlog.Entry {
	return eventlog.Entry{Index: i, Name: name, Data: []byte(`{}`)}
}

func completed(runID string) run.Event {
	return &run.RunCompleted{BaseEvent: run.BaseEvent{RunID: runID}}
}

// follower collects a Follow's events in the background.
type follower struct {
	got  chan eventlog.Item
	done chan error
}

func follow(t *testing.T, log *eventlog.Log, runID string, after int64, idle time.Duration) *follower {
	t.Helper()
	f := &follower{got: make(chan eventlog.Item, 100), done: make(chan error, 1)}
	go func() {
		for item, err := range log.Follow(t.Context(), runID, after, idle) {
			if err != nil {
				f.done <- err
				return
			}
			f.got <- item
		}
		f.done <- nil
	}()
	return f
}

// next is the follower's next event (idle items skipped).
func (f *follower) next(t *testing.T) eventlog.Entry {
	t.Helper()
	for {
		select {
		case item := <-f.got:
			if !item.Idle {
				return item.Entry
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event came")
		}
	}
}

func (f *follower) ended(t *testing.T) {
	t.Helper()
	select {
	case err := <-f.done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the follow did not end")
	}
}

// TestFollowSwitchesWhenTheRunStartsHere: a follower of a queued run this
// process does not produce reads the source; when the run starts here it
// goes on from this process's log, missing and repeating nothing.
func TestFollowSwitchesWhenTheRunStartsHere(t *testing.T) {
	src := newRecorded()
	log := eventlog.NewLog(eventlog.NewMemory(eventlog.MemoryConfig{}), src)
	log.Register("r1", run.StatusPending)
	require.False(t, log.Producing("r1"), "a queued run is not produced here yet")

	f := follow(t, log, "r1", -1, 0)
	src.add("r1", entry(0, run.EventRunStarted), entry(1, run.EventRunContent)) // a first attempt elsewhere
	require.Equal(t, int64(0), f.next(t).Index)
	require.Equal(t, int64(1), f.next(t).Index)

	log.Seed("r1", 2) // taken over here
	require.True(t, log.Producing("r1"))
	log.Append(content("r1", "x"))
	log.Append(completed("r1"))
	second := f.next(t)
	require.Equal(t, int64(2), second.Index)
	require.Equal(t, run.EventRunContent, second.Name)
	last := f.next(t)
	require.Equal(t, int64(3), last.Index)
	require.Equal(t, run.EventRunCompleted, last.Name)
	f.ended(t)
}

// TestFollowAfterATakeoverReadsEarlierEventsFromTheSource: a run this
// process took over holds only the events streamed since; a follower from
// the start gets the earlier ones from the source first.
func TestFollowAfterATakeoverReadsEarlierEventsFromTheSource(t *testing.T) {
	src := newRecorded()
	src.add("r1", entry(0, run.EventRunStarted), entry(1, run.EventRunContent), entry(2, run.EventRunContent))
	log := eventlog.NewLog(eventlog.NewMemory(eventlog.MemoryConfig{}), src)
	log.Seed("r1", 10)
	log.Append(content("r1", "x"))
	log.Append(completed("r1"))

	var indices []int64
	for item, err := range log.Follow(t.Context(), "r1", 0, 0) {
		require.NoError(t, err)
		indices = append(indices, item.Entry.Index)
	}
	require.Equal(t, []int64{1, 2, 10, 11}, indices)

	snap, err := log.Snapshot(t.Context(), "r1", -1)
	require.NoError(t, err)
	require.Len(t, snap, 5)
	require.Equal(t, int64(11), snap[4].Index)
}

// TestFollowOfARunElsewhere: a run another process produces is read from
// the source until its record ends, with idle items while it is silent.
func TestFollowOfARunElsewhere(t *testing.T) {
	src := newRecorded()
	log := eventlog.NewLog(eventlog.NewMemory(eventlog.MemoryConfig{}), src)
	f := follow(t, log, "r2", -1, 5*time.Millisecond)
	select {
	case item := <-f.got:
		require.True(t, item.Idle, "a silent run reports idle intervals")
	case <-time.After(10 * time.Second):
		t.Fatal("no idle item")
	}
	src.add("r2", entry(0, run.EventRunStarted), entry(1, run.EventRunCompleted))
	require.Equal(t, int64(0), f.next(t).Index)
	require.Equal(t, int64(1), f.next(t).Index)
	src.close("r2")
	f.ended(t)

	snap, err := log.Snapshot(t.Context(), "r2", 0)
	require.NoError(t, err)
	require.Equal(t, []eventlog.Entry{entry(1, run.EventRunCompleted)}, snap)
}

// TestRequeuedRunIsNotClaimedHere: a run this process executed and that is
// queued again may execute anywhere: the log stops claiming it.
func TestRequeuedRunIsNotClaimedHere(t *testing.T) {
	log := eventlog.NewLog(eventlog.NewMemory(eventlog.MemoryConfig{}), newRecorded())
	log.Append(content("r3", "x"))
	log.Finish("r3", run.StatusError)
	require.True(t, log.Producing("r3"))
	log.Register("r3", run.StatusRunning) // continued where it is parked
	require.True(t, log.Producing("r3"))
	log.Register("r3", run.StatusPending) // requeued
	require.False(t, log.Producing("r3"))
}

// TestLogWithoutSource: with no source every run is produced here.
func TestLogWithoutSource(t *testing.T) {
	log := eventlog.NewLog(eventlog.NewMemory(eventlog.MemoryConfig{}), nil)
	log.Register("r4", run.StatusPending)
	f := follow(t, log, "r4", -1, 0)
	log.Append(content("r4", "x"))
	log.Append(completed("r4"))
	require.Equal(t, int64(0), f.next(t).Index)
	require.Equal(t, int64(1), f.next(t).Index)
	f.ended(t)

	var none int
	for range log.Follow(t.Context(), "unknown", -1, 0) {
		none++
	}
	require.Zero(t, none, "a run unknown everywhere yields nothing")
}
