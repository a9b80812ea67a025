package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/agnogo/agnogo/run"
)

// SessionType is the kind of component a session belongs to.
type SessionType string

// The session types.
const (
	SessionTypeAgent    SessionType = "agent"
	SessionTypeTeam     SessionType = "team"
	SessionTypeWorkflow SessionType = "workflow"
)

// Valid reports whether t is a known session type.
func (t SessionType) Valid() bool {
	switch t {
	case SessionTypeAgent, SessionTypeTeam, SessionTypeWorkflow:
		return true
	}
	return false
}

// SessionNameKey is the session_data key that holds a session's display name.
const SessionNameKey = "session_name"

// Session is one row of agno_sessions: a conversation with one agent, team or
// workflow. Its runs live in agno_runs; Runs is filled only by reads that ask
// for them.
type Session struct {
	SessionID    string         `json:"session_id"`
	SessionType  SessionType    `json:"session_type"`
	AgentID      string         `json:"agent_id,omitempty"`
	TeamID       string         `json:"team_id,omitempty"`
	WorkflowID   string         `json:"workflow_id,omitempty"`
	UserID       string         `json:"user_id,omitempty"`
	SessionData  map[string]any `json:"session_data,omitempty"`
	AgentData    map[string]any `json:"agent_data,omitempty"`
	TeamData     map[string]any `json:"team_data,omitempty"`
	WorkflowData map[string]any `json:"workflow_data,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Summary      map[string]any `json:"summary,omitempty"`
	// CreatedAt and UpdatedAt are epoch seconds. A zero CreatedAt is set to
	// the store's clock on first insert; UpdatedAt is set on every write.
	CreatedAt int64 `json:"created_at"`
	UpdatedAt int64 `json:"updated_at"`
	// UpdateCount counts the writes of the session row and of its runs
	// since it was created; see [SessionVersion]. Reads fill it; writes
	// ignore it.
	UpdateCount int64 `json:"-"`
	// Runs holds the session's runs in run_index order when the read asked for them.
	Runs []*run.Output `json:"runs,omitempty"`
}

// Version is the session's version as read or written: see [SessionVersion].
func (s *Session) Version() SessionVersion {
	return SessionVersion{UpdateCount: s.UpdateCount, UpdatedAt: s.UpdatedAt}
}

// SessionVersion tells whether a session or its runs changed since it was
// read: every write of the session row, and every write or deletion of one
// of its runs, adds one to its update count in the same transaction (a run
// row's liveness touch, [RunToucher], does not). updated_at also changes
// with a write made by a program that does not count its writes, such as
// Agno, though only to the second.
type SessionVersion struct {
	UpdateCount int64
	UpdatedAt   int64
}

// SessionVersioner reads a session's version without reading the session.
// It is an optional ability of a [Store], discovered by type assertion;
// both SQL adapters implement it. The run host uses it to tell whether
// what it keeps of a session in memory is still what the database holds.
type SessionVersioner interface {
	// SessionVersion returns the version of a session, and whether runID
	// (when non-empty) is a stored run of it, in one read; a session that
	// does not exist, or is not userID's when userID is non-empty, is
	// [ErrNotFound].
	SessionVersion(ctx context.Context, sessionID, userID, runID string) (v SessionVersion, runStored bool, err error)
}

// Name returns the session's display name from session_data, or "".
func (s *Session) Name() string {
	name, _ := s.SessionData[SessionNameKey].(string)
	return name
}

// NewSession is a new session of a runner: an agent's, a team's or a
// workflow's by kind, with the runner's id in its column.
func NewSession(kind run.Kind, runnerID, sessionID, userID string) *Session {
	s := &Session{SessionID: sessionID, UserID: userID}
	switch kind {
	case run.KindTeam:
		s.SessionType, s.TeamID = SessionTypeTeam, runnerID
	case run.KindWorkflow:
		s.SessionType, s.WorkflowID = SessionTypeWorkflow, runnerID
	default:
		s.SessionType, s.AgentID = SessionTypeAgent, runnerID
	}
	return s
}

// ComponentID returns the id of the agent, team or workflow the session belongs to.
func (s *Session) ComponentID() string {
	switch s.SessionType {
	case SessionTypeTeam:
		return s.TeamID
	case SessionTypeWorkflow:
		return s.WorkflowID
	}
	return s.AgentID
}

// SortOrder is the direction of a sorted listing.
type SortOrder string

// The sort orders.
const (
	SortAsc  SortOrder = "asc"
	SortDesc SortOrder = "desc"
)

// Page selects one page of a listing. Page is 1-indexed, and 0 also means the
// first page; a zero Limit means no limit (and Page is then ignored). A
// negative Limit or Page is [ErrInvalid].
type Page struct {
	Limit int
	Page  int
}

// SessionQuery filters, sorts and pages [SessionStore.ListSessions].
type SessionQuery struct {
	// UserID scopes the listing to one user; "" lists every user's sessions.
	UserID string
	// Type keeps sessions of one type; "" keeps all.
	Type SessionType
	// ComponentID keeps sessions of one agent, team or workflow id.
	ComponentID string
	// Name keeps sessions whose name contains this text, case-insensitively.
	Name string
	// SortBy is created_at, updated_at, session_id or session_name.
	// Defaults to created_at.
	SortBy string
	// SortOrder defaults to desc.
	SortOrder SortOrder
	Page
}

// GetSessionOptions controls what [SessionStore.GetSession] loads.
type GetSessionOptions struct {
	// UserID scopes the read; a session of another user is [ErrNotFound].
	UserID string
	// IncludeRuns loads the session's runs in run_index order.
	IncludeRuns bool
	// ContextRuns, when positive, loads only the last N context runs instead
	// of all runs (see [RunStore.ContextRuns]). It implies IncludeRuns.
	ContextRuns int
}

// SessionMetricsKey is the session_data key that holds a session's
// accumulated metrics.
const SessionMetricsKey = "session_metrics"

// AddRunMetrics adds a completed run's metrics to the session's
// session_data["session_metrics"]. An unreadable stored record starts over
// rather than failing the run.
func (s *Session) AddRunMetrics(metrics *run.RunMetrics) {
	if s.SessionData == nil {
		s.SessionData = map[string]any{}
	}
	var total run.SessionMetrics
	switch stored := s.SessionData[SessionMetricsKey].(type) {
	case *run.SessionMetrics:
		total = *stored
	case map[string]any:
		if data, err := json.Marshal(stored); err == nil {
			_ = json.Unmarshal(data, &total)
		}
	}
	total.AccumulateFromRun(metrics)
	s.SessionData[SessionMetricsKey] = &total
}

// OpenSession reads a run's session from store, or returns fresh when the
// session does not exist yet (or store is nil). A session id that exists
// for another user is refused: the error wraps [ErrNotFound], so a run can
// never overwrite someone else's session.
func OpenSession(ctx context.Context, store SessionStore, fresh *Session) (*Session, error) {
	if store == nil {
		return fresh, nil
	}
	session, err := store.GetSession(ctx, fresh.SessionID, GetSessionOptions{UserID: fresh.UserID})
	if errors.Is(err, ErrNotFound) {
		if fresh.UserID == "" {
			return fresh, nil
		}
		if _, err := store.GetSession(ctx, fresh.SessionID, GetSessionOptions{}); err == nil {
			return nil, fmt.Errorf("session %s: %w", fresh.SessionID, ErrNotFound)
		}
		return fresh, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", fresh.SessionID, err)
	}
	return session, nil
}

// SessionStateKey is the session_data key that holds a session's state.
const SessionStateKey = "session_state"

// MergeState returns the session's state — initial for a session that has
// none yet — with updates applied key by key, and records it in
// session_data so that the next save stores it. It returns nil when the
// session has no state and gets none.
func (s *Session) MergeState(initial, updates map[string]any) map[string]any {
	state, _ := s.SessionData[SessionStateKey].(map[string]any)
	if state == nil && len(initial) > 0 {
		state = maps.Clone(initial)
	}
	if len(updates) > 0 {
		if state == nil {
			state = map[string]any{}
		}
		maps.Copy(state, updates)
	}
	if state != nil {
		if s.SessionData == nil {
			s.SessionData = map[string]any{}
		}
		s.SessionData[SessionStateKey] = state
	}
	return state
}
