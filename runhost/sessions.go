package runhost

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// DefaultSessionCacheSize is how many sessions a host keeps in memory by
// default (see [Config.SessionCacheSize]).
const DefaultSessionCacheSize = 1024

// The session cache. A conversation's next turn needs its session and the
// runs that make its history; when the turn before ran here, the host
// already has both. It keeps them per session together with the
// session's version ([storage.SessionVersion]) as of its own last read or
// write, and serves a turn from memory when one cheap read of the version
// shows the database holds the same: any write elsewhere — another
// replica's turn, a deleted run, a renamed session — moves the version
// and the next turn reads the database again.
//
// What the host writes itself moves the version by exactly one, so it
// applies its own save to what it keeps when the version it gets back is
// the one it had plus one; any other gap means someone else wrote in
// between and the entry is dropped. A run the host inserted within that
// unbroken chain of versions is newer than every run the entry holds, and
// joins the history by its run_index when it completes; a run it did not
// insert (a continued run, a fork, a run accepted before it started)
// makes the history unknown until it is read again.

// sessionCache is a bounded LRU of [cachedSession]s by session id. It is
// safe for concurrent use.
type sessionCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element // of *cachedSession
	order   list.List                // most recently used first
}

// cachedSession is what the host keeps of one session.
type cachedSession struct {
	id      string
	version storage.SessionVersion
	// session is the row as of version; callers get deep copies.
	session *storage.Session
	// history holds, when known, the last completed top-level runs of the
	// session's current branch, oldest first: those read from the
	// database (index -1) before the runs inserted here, in run_index
	// order. depth is how many runs it was read for; all is set when the
	// session holds no more.
	history      []cachedRun
	historyKnown bool
	depth        int
	all          bool
	// inserted holds the run_index of the runs inserted here since the
	// entry was read and not final yet, by run id.
	inserted map[string]int64
}

// cachedRun is one run of a history.
type cachedRun struct {
	index int64
	out   *run.Output
}

// enabled reports whether the cache keeps anything.
func (c *sessionCache) enabled() bool { return c.max > 0 }

// get returns the entry of sessionID, marking it used; nil when none.
// c.mu is held.
func (c *sessionCache) get(sessionID string) *cachedSession {
	el, ok := c.entries[sessionID]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*cachedSession)
}

// put stores e, evicting the least recently used entry beyond the bound.
// c.mu is held.
func (c *sessionCache) put(e *cachedSession) {
	if el, ok := c.entries[e.id]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	if c.entries == nil {
		c.entries = map[string]*list.Element{} // on first use: a host that never caches allocates nothing
	}
	c.entries[e.id] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cachedSession).id)
	}
}

// drop forgets sessionID. c.mu is held.
func (c *sessionCache) drop(sessionID string) {
	if el, ok := c.entries[sessionID]; ok {
		c.order.Remove(el)
		delete(c.entries, sessionID)
	}
}

// Row is what a run's opener learnt of the run's row while it opened the
// session ([Host.OpenSession]); the host reads the row itself when it is
// unknown.
type Row int

// The states of a run's row.
const (
	// RowUnknown: not looked at.
	RowUnknown Row = iota
	// RowAbsent: the run is not stored.
	RowAbsent
	// RowStored: the run is stored (accepted before it started, or
	// executed again).
	RowStored
)

// OpenSession reads the session a new run of fresh's id continues, or
// returns fresh when there is none, as [storage.OpenSession] does: a
// session of another user is refused as not found. It also tells whether
// runID is stored already, for [Spec.Row]. When the host holds the session
// as of the version the database reports, it is served from memory after
// that one read. A database failing transiently is waited for, as [Read]
// does.
func (h *Host) OpenSession(ctx context.Context, fresh *storage.Session, runID string) (*storage.Session, Row, error) {
	type opened struct {
		session *storage.Session
		row     Row
	}
	o, err := Read(ctx, h, "session", fresh.SessionID, func(ctx context.Context) (opened, error) {
		session, row, err := h.openSession(ctx, fresh, runID)
		return opened{session, row}, err
	})
	return o.session, o.row, err
}

// openSession is [Host.OpenSession] without its retries.
func (h *Host) openSession(ctx context.Context, fresh *storage.Session, runID string) (*storage.Session, Row, error) {
	store := h.cfg.Store
	if store == nil {
		return fresh, RowAbsent, nil
	}
	versioner, ok := store.(storage.SessionVersioner)
	if !h.sessions.enabled() || !ok {
		session, err := storage.OpenSession(ctx, store, fresh)
		return session, RowUnknown, err
	}
	v, stored, err := versioner.SessionVersion(ctx, fresh.SessionID, fresh.UserID, runID)
	if errors.Is(err, storage.ErrNotFound) {
		if fresh.UserID == "" {
			return fresh, RowAbsent, nil // no session of this id at all
		}
		// A new session, or another user's: the read tells which.
		session, err := storage.OpenSession(ctx, store, fresh)
		if err != nil || session.CreatedAt != 0 {
			return session, RowUnknown, err
		}
		return session, RowAbsent, nil
	}
	if err != nil {
		return nil, RowUnknown, fmt.Errorf("load session %s: %w", fresh.SessionID, err)
	}
	row := RowAbsent
	if stored {
		row = RowStored
	}
	c := &h.sessions
	c.mu.Lock()
	if e := c.get(fresh.SessionID); e != nil && e.version == v {
		session := cloneSession(e.session)
		c.mu.Unlock()
		return session, row, nil
	}
	c.mu.Unlock()
	session, err := storage.OpenSession(ctx, store, fresh)
	if err != nil || session.CreatedAt == 0 {
		return session, RowUnknown, err
	}
	if session.Version() != v {
		row = RowUnknown // written in between: the probe may be out of date
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.get(session.SessionID); e == nil || e.version != session.Version() {
		c.put(&cachedSession{id: session.SessionID, version: session.Version(), session: cloneSession(session)})
	}
	return session, row, nil
}

// History returns the runs that make the history of the run, as
// [storage.RunStore.HistoryRuns] does for q, whose SessionID, RunID and
// ForkedFromRunID are the run's own. A new run inserted after every stored
// one is served from memory when the host holds the history of the
// session as of the version the run opened it at. The runs returned are
// shared: the caller must not change them.
func (r *Run) History(ctx context.Context, q storage.HistoryQuery) ([]*run.Output, error) {
	store := r.host.cfg.Store
	if store == nil {
		return nil, nil
	}
	c := &r.host.sessions
	cacheable := c.enabled() && r.fresh && q.ForkedFromRunID == "" && q.N > 0 && r.session != nil && r.session.CreatedAt != 0
	if cacheable {
		c.mu.Lock()
		if e := c.get(q.SessionID); e != nil && e.version == r.session.Version() && e.historyKnown && (e.all || e.depth >= q.N) {
			runs := e.historyRuns(q.N)
			c.mu.Unlock()
			return runs, nil
		}
		c.mu.Unlock()
	}
	runs, err := Read(ctx, r.host, "history", q.SessionID, func(ctx context.Context) ([]*run.Output, error) {
		return store.HistoryRuns(ctx, q)
	})
	if err != nil || !cacheable {
		return runs, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.get(q.SessionID); e != nil && e.version == r.session.Version() {
		e.history = e.history[:0]
		for _, out := range runs {
			e.history = append(e.history, cachedRun{index: -1, out: historyCopy(out)})
		}
		e.historyKnown, e.depth, e.all = true, q.N, len(runs) < q.N
	}
	return runs, nil
}

// historyRuns returns the last n runs of the history. c.mu is held.
func (e *cachedSession) historyRuns(n int) []*run.Output {
	from := max(0, len(e.history)-n)
	runs := make([]*run.Output, 0, len(e.history)-from)
	for _, h := range e.history[from:] {
		runs = append(runs, h.out)
	}
	return runs
}

// saved applies the host's own save of r — which wrote stored, the
// session's row, and gave the run index — to what the host keeps of its
// session. prior is the session as the run held it before the save.
func (c *sessionCache) saved(r *Run, prior, stored *storage.Session, index int64) {
	if !c.enabled() || stored == nil {
		return
	}
	out := r.out
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.get(stored.SessionID)
	switch {
	case e != nil && stored.UpdateCount == e.version.UpdateCount+1:
		// Only this save happened since the entry's version.
	case stored.UpdateCount == 0 && prior.CreatedAt == 0:
		// The save created the session: there is nothing else in it.
		e = &cachedSession{id: stored.SessionID, historyKnown: true, all: true}
		c.put(e)
	default:
		c.drop(stored.SessionID)
		return
	}
	e.version, e.session = stored.Version(), cloneSession(stored)
	if !normalizeState(e.session) {
		c.drop(stored.SessionID)
		return
	}
	insertedIndex, inserted := e.inserted[out.RunID]
	if !inserted && r.fresh && !r.saved {
		// The run's first save inserted it, after every stored run.
		insertedIndex, inserted = index, true
		if e.inserted == nil {
			e.inserted = map[string]int64{}
		}
		e.inserted[out.RunID] = index
	}
	if !inserted {
		// A run stored before: where it stands in the history is not
		// known here.
		e.history, e.historyKnown = nil, false
		return
	}
	if !out.Status.Terminal() {
		return
	}
	delete(e.inserted, out.RunID)
	if out.Status != run.StatusCompleted || out.ParentRunID != "" || !e.historyKnown {
		return
	}
	at, _ := slices.BinarySearchFunc(e.history, insertedIndex, func(h cachedRun, index int64) int {
		if h.index < index {
			return -1
		}
		return 1
	})
	e.history = slices.Insert(e.history, at, cachedRun{index: insertedIndex, out: historyCopy(out)})
	limit := e.depth
	if limit == 0 {
		limit = defaultHistoryKeep
	}
	if len(e.history) > limit {
		e.history = slices.Delete(e.history, 0, len(e.history)-limit)
		e.depth, e.all = limit, false
	}
}

// defaultHistoryKeep is how many runs the history of a session created
// here keeps before a turn asked for a number.
const defaultHistoryKeep = 8

// historyCopy is what a history needs of a run, shared by the turns that
// read it: the run with its own slice of message copies, so a later change
// of the run's messages by its caller is not seen.
func historyCopy(out *run.Output) *run.Output {
	copied := *out
	copied.Messages = make([]*run.Message, len(out.Messages))
	for i, msg := range out.Messages {
		m := *msg
		copied.Messages[i] = &m
	}
	copied.Events = nil
	return &copied
}

// normalizeState gives a session's state the values a read of the
// database would (numbers as float64, structs as maps), so a turn served
// from memory sees what one served from the database does. It reports
// false for a state that does not encode.
func normalizeState(s *storage.Session) bool {
	state, ok := s.SessionData[storage.SessionStateKey]
	if !ok || state == nil {
		return true
	}
	data, err := json.Marshal(state)
	if err != nil {
		return false
	}
	var decoded any
	if err := json.Unmarshal(data, &decoded); err != nil {
		return false
	}
	s.SessionData[storage.SessionStateKey] = decoded
	return true
}

// cloneSession copies a session deeply enough that its user may change
// its documents.
func cloneSession(s *storage.Session) *storage.Session {
	copied := *s
	copied.SessionData = cloneDoc(s.SessionData)
	copied.AgentData = cloneDoc(s.AgentData)
	copied.TeamData = cloneDoc(s.TeamData)
	copied.WorkflowData = cloneDoc(s.WorkflowData)
	copied.Metadata = cloneDoc(s.Metadata)
	copied.Summary = cloneDoc(s.Summary)
	copied.Runs = nil
	return &copied
}

// cloneDoc deep-copies a JSON document's maps and slices.
func cloneDoc(doc map[string]any) map[string]any {
	if doc == nil {
		return nil
	}
	copied := make(map[string]any, len(doc))
	for k, v := range doc {
		copied[k] = cloneValue(v)
	}
	return copied
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneDoc(v)
	case []any:
		copied := make([]any, len(v))
		for i, item := range v {
			copied[i] = cloneValue(item)
		}
		return copied
	}
	return v
}
