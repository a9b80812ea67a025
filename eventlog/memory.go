package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sort"
	"sync"
	"time"

	"github.com/agnogo/agnogo/run"
)

// Defaults of [MemoryConfig].
const (
	// DefaultRetain is how long a finished run's stream stays resumable.
	DefaultRetain = 5 * time.Minute
	// DefaultMaxFinished is how many finished runs' streams are kept at most.
	DefaultMaxFinished = 256
)

// MemoryConfig tunes [NewMemory].
type MemoryConfig struct {
	// Retain is how long a finished run's events stay after it ends.
	// Defaults to [DefaultRetain].
	Retain time.Duration
	// MaxFinished caps the finished runs kept; the oldest go first.
	// Defaults to [DefaultMaxFinished].
	MaxFinished int
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Encode renders an event (its index already set) as a frame's data.
	// Defaults to [run.EncodeEvent].
	Encode func(run.Event) ([]byte, error)
}

// Entry is one numbered event, encoded once when it was appended: followers
// in other goroutines never read the event object, which its run may still
// be changing.
type Entry struct {
	// Index is the event's event_index.
	Index int64
	// Name is the event's wire name ([run.NameOf]), such as RunContent or
	// TeamRunContent.
	Name string
	// Data is the event encoded by [MemoryConfig.Encode].
	Data []byte
}

// Memory is an in-process event log. The zero value is not usable; call
// [NewMemory]. It is safe for concurrent use.
type Memory struct {
	cfg MemoryConfig

	mu       sync.Mutex
	streams  map[string]*stream
	finished []string // run ids in the order they finished, for eviction
	// started is closed, and replaced, whenever a run starts producing its
	// events in this process: followers reading another source switch.
	started chan struct{}
}

// stream is one run's events and status.
type stream struct {
	status   run.Status
	entries  []Entry
	next     int64     // the index the next event gets
	ended    time.Time // when the status became terminal
	changed  chan struct{}
	finished bool
	// local: this process produces the run's events (it executes, or
	// executed, the run here), so its entries from the first on are all
	// the run has streamed since it started here.
	local bool
}

// NewMemory returns an empty log.
func NewMemory(cfg MemoryConfig) *Memory {
	if cfg.Retain <= 0 {
		cfg.Retain = DefaultRetain
	}
	if cfg.MaxFinished <= 0 {
		cfg.MaxFinished = DefaultMaxFinished
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Encode == nil {
		cfg.Encode = run.EncodeEvent
	}
	return &Memory{cfg: cfg, streams: map[string]*stream{}, started: make(chan struct{})}
}

// Info is what the log knows of a run.
type Info struct {
	// Status is the run's status as last reported: PENDING or RUNNING while
	// it executes, then its terminal status.
	Status run.Status
	// Count is how many events the run has.
	Count int
	// LastIndex is the index of its latest event; -1 when it has none.
	LastIndex int64
}

// streamFor returns a run's stream, creating it; m.mu is held.
func (m *Memory) streamFor(runID string, status run.Status) *stream {
	s, ok := m.streams[runID]
	if !ok {
		s = &stream{status: status, changed: make(chan struct{})}
		m.streams[runID] = s
	}
	return s
}

// Register makes a run known with a status (PENDING for an accepted
// background run) before it has events. Registering a run the log knows
// reopens it: a continued run goes on from its last index. A run registered
// PENDING is queued anew and may execute in any process: until it appends
// here, the log does not claim to produce its events.
func (m *Memory) Register(runID string, status run.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evict()
	s := m.streamFor(runID, status)
	s.status, s.finished = status, false
	if status == run.StatusPending {
		s.local = false
	}
	s.notify()
}

// produce marks a run's events as produced here; m.mu is held.
func (m *Memory) produce(s *stream) {
	if s.local {
		return
	}
	s.local = true
	close(m.started)
	m.started = make(chan struct{})
}

// Append is [Memory.AppendTo] the stream of the event's own run_id. A
// stream that passes on its members' events (a team's) is written with
// AppendTo, naming the stream.
func (m *Memory) Append(e run.Event) Entry { return m.AppendTo(e.Base().RunID, e) }

// AppendTo numbers e with the next index of runID's stream, writes the
// index onto it, encodes it and keeps the entry. A run not registered yet
// becomes RUNNING. e is the run's own event, or one of a member run that
// the run's stream passes on ([run.MemberEvent]), which keeps its own
// run_id and never ends the stream. An event that cannot be encoded is
// kept as an encoded error message, so its index is never reused.
func (m *Memory) AppendTo(runID string, e run.Event) Entry {
	base := e.Base()
	m.mu.Lock()
	s := m.streamFor(runID, run.StatusRunning)
	index := s.next
	s.next++
	m.produce(s)
	m.mu.Unlock()

	base.EventIndex = &index
	name := run.NameOf(e)
	data, err := m.cfg.Encode(e)
	if err != nil {
		data, _ = json.Marshal(map[string]any{"event": name, "run_id": base.RunID, "event_index": index,
			"error": fmt.Sprintf("event could not be encoded: %v", err)})
	}
	entry := Entry{Index: index, Name: name, Data: data}

	m.mu.Lock()
	defer m.mu.Unlock()
	if s.status == run.StatusPending || s.finished {
		s.status, s.finished = run.StatusRunning, false
	}
	// Appends of one run come from its one producer, in index order.
	s.entries = append(s.entries, entry)
	if status, final := run.FinalStatus(e); final {
		// The run's final event ends its stream; followers stop here (a
		// member's, a *run.MemberEvent, is not final).
		m.finish(runID, s, status)
	}
	s.notify()
	return entry
}

// Seed makes the run's next event index at least next: a run resumed in
// another process goes on numbering after the events it streamed there.
// The run is produced here from now on.
func (m *Memory) Seed(runID string, next int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.streamFor(runID, run.StatusRunning)
	s.next = max(s.next, next)
	m.produce(s)
	s.notify()
}

// Finish records a run's terminal status (its final event, when appended,
// already did). Its events stay replayable for the configured retention.
func (m *Memory) Finish(runID string, status run.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.streamFor(runID, status)
	if s.finished && s.status == status {
		return // its final event said so already
	}
	m.finish(runID, s, status)
	s.notify()
	m.evict()
}

// finish marks a stream ended; the log's mutex is held.
func (m *Memory) finish(runID string, s *stream, status run.Status) {
	s.status, s.finished, s.ended = status, true, m.cfg.Now()
	m.finished = append(m.finished, runID)
}

// producer reports whether this process produces a run's events, the
// lowest index it holds or will hold (above it, the log has every event
// the run streamed; below, another process streamed them before this one
// took the run over), and a channel closed when any run next starts
// producing here.
func (m *Memory) producer(runID string) (local bool, first int64, started <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.streams[runID]
	if !ok {
		return false, 0, m.started
	}
	first = s.next
	if len(s.entries) > 0 {
		first = s.entries[0].Index
	}
	return s.local, first, m.started
}

// Lookup reports what the log knows of a run.
func (m *Memory) Lookup(runID string) (Info, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.streams[runID]
	if !ok {
		return Info{}, false
	}
	return s.info(), true
}

// Snapshot returns a copy of the run's events with an index greater than
// after, as the log holds them now; false when the log does not know the
// run.
func (m *Memory) Snapshot(runID string, after int64) ([]Entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.streams[runID]
	if !ok {
		return nil, false
	}
	return append([]Entry(nil), s.entries[s.firstAfter(after):]...), true
}

// CountAfter is how many of a run's events have an index greater than after
// (indices may have gaps, so this is not a difference of indices).
func (m *Memory) CountAfter(runID string, after int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.streams[runID]
	if !ok {
		return 0
	}
	return len(s.entries) - s.firstAfter(after)
}

// firstAfter is the position of the first event with an index greater
// than after; the log's mutex is held.
func (s *stream) firstAfter(after int64) int {
	return sort.Search(len(s.entries), func(i int) bool { return s.entries[i].Index > after })
}

func (s *stream) info() Info {
	last := int64(-1)
	if n := len(s.entries); n > 0 {
		last = s.entries[n-1].Index
	}
	return Info{Status: s.status, Count: len(s.entries), LastIndex: last}
}

// notify wakes the run's followers; the log's mutex is held.
func (s *stream) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// evict drops finished streams past their retention or beyond the cap;
// m.mu is held.
func (m *Memory) evict() {
	now := m.cfg.Now()
	drop := 0
	for drop < len(m.finished) {
		id := m.finished[drop]
		s, ok := m.streams[id]
		switch {
		case !ok || !s.finished:
			// Gone already, or reopened: no longer this entry's to evict.
		case len(m.finished)-drop > m.cfg.MaxFinished || now.Sub(s.ended) >= m.cfg.Retain:
			delete(m.streams, id)
		default:
			m.finished = m.finished[drop:]
			return
		}
		drop++
	}
	m.finished = m.finished[:0]
}

// Item is one step of following a run: an entry, or a report that the run
// has been silent for the idle interval (for SSE heartbeats).
type Item struct {
	Entry Entry
	Idle  bool
}

// Follow yields the run's events whose index is greater than after (-1 for
// all), then, while the run has not finished, each new event as it comes,
// and an idle Item after every idle interval without one (idle ≤ 0: none).
// It ends when the run has finished and every event was yielded, when ctx
// ends, or when the run is evicted. ok is false when the log does not know
// the run.
func (m *Memory) Follow(ctx context.Context, runID string, after int64, idle time.Duration) (items iter.Seq[Item], ok bool) {
	m.mu.Lock()
	s, ok := m.streams[runID]
	m.mu.Unlock()
	if !ok {
		return nil, false
	}
	return func(yield func(Item) bool) {
		for {
			m.mu.Lock()
			first := s.firstAfter(after)
			pending := s.entries[first:len(s.entries):len(s.entries)]
			finished, changed := s.finished, s.changed
			m.mu.Unlock()
			for _, e := range pending {
				if !yield(Item{Entry: e}) {
					return
				}
				after = e.Index
			}
			if len(pending) > 0 {
				continue
			}
			if finished {
				return
			}
			if !wait(ctx, changed, idle, yield) {
				return
			}
		}
	}, true
}

// wait blocks until the stream changes, reporting idle intervals to yield
// meanwhile. It returns false when ctx ended or the follower stopped.
func wait(ctx context.Context, changed <-chan struct{}, idle time.Duration, yield func(Item) bool) bool {
	var tick <-chan time.Time
	if idle > 0 {
		timer := time.NewTimer(idle)
		defer timer.Stop()
		tick = timer.C
	}
	select {
	case <-changed:
		return true
	case <-tick:
		return yield(Item{Idle: true})
	case <-ctx.Done():
		return false
	}
}
