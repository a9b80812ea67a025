package agentos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// sessionRoutes mounts the session routes (agentos-api.md §8) and the
// session fork of an agent or a team.
func (o *OS) sessionRoutes(mux *http.ServeMux) { o.mount(mux, o.sessionEndpoints()) }

// sessionEndpoints lists the session routes with the scope each needs.
func (o *OS) sessionEndpoints() []endpoint {
	return []endpoint{
		{"GET /sessions", "sessions", "read", "", o.handleListSessions},
		{"POST /sessions", "sessions", "write", "", o.handleCreateSession},
		{"DELETE /sessions", "sessions", "delete", "", o.handleDeleteSessions},
		{"GET /sessions/{session_id}", "sessions", "read", "session_id", o.handleGetSession},
		{"PATCH /sessions/{session_id}", "sessions", "write", "session_id", o.handleUpdateSession},
		{"DELETE /sessions/{session_id}", "sessions", "delete", "session_id", o.handleDeleteSession},
		{"POST /sessions/{session_id}/rename", "sessions", "write", "session_id", o.handleRenameSession},
		{"GET /sessions/{session_id}/runs", "sessions", "read", "session_id", o.handleListSessionRuns},
		{"GET /sessions/{session_id}/runs/{run_id}", "sessions", "read", "session_id", o.handleGetSessionRun},
		{"POST /agents/{agent_id}/sessions/{session_id}/fork", "sessions", "write", "session_id", o.withRunner(agentComponent, o.handleForkSession)},
		{"POST /teams/{team_id}/sessions/{session_id}/fork", "sessions", "write", "session_id", o.withRunner(teamComponent, o.handleForkSession)},
	}
}

// sessionTypes are the accepted values of the type / session_type query
// parameter and of CreateSessionRequest.session_type.
var sessionTypes = []string{string(storage.SessionTypeAgent), string(storage.SessionTypeTeam), string(storage.SessionTypeWorkflow)}

// sessionSortColumns are the sort_by values GET /sessions accepts.
var sessionSortColumns = []string{"created_at", "updated_at", "session_id", "session_name"}

// boundSessionKeys are the session_data keys that bind a session to one
// conversation of an outside harness, as the runners served here name them
// ([run.SessionBinder]; storage.md §6). A fork drops them: two agnogo
// sessions resuming one CLI session would interleave their turns.
func (o *OS) boundSessionKeys() []string {
	var keys []string
	var add func(r run.Runner)
	add = func(r run.Runner) {
		if binder, ok := r.(run.SessionBinder); ok {
			keys = append(keys, binder.SessionKeys()...)
		}
		if t, ok := r.(interface{ Members() []run.Runner }); ok {
			for _, member := range t.Members() { // a team's members, which may not be served themselves
				add(member)
			}
		}
	}
	for _, id := range o.order {
		add(o.runners[id])
	}
	return keys
}

func (o *OS) handleListSessions(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	q := newQueryReader(r)
	sessionType, _ := q.sessionType()
	page := q.pagination()
	sortBy := q.enum("sort_by", "created_at", sessionSortColumns...)
	sortOrder := q.sortOrder()
	if q.failed(w) {
		return
	}
	userID := o.userScope(r, q.str("user_id"))
	sessions, total, err := o.cfg.Store.ListSessions(r.Context(), storage.SessionQuery{
		UserID:      userID,
		Type:        sessionType,
		ComponentID: q.str("component_id"),
		Name:        q.str("session_name"),
		SortBy:      sortBy,
		SortOrder:   sortOrder,
		Page:        page.store(),
	})
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	items := make([]map[string]any, 0, len(sessions))
	for _, s := range sessions {
		items = append(items, sessionSchema(s, o.sessionName(r.Context(), s, userID)))
	}
	writeJSON(w, http.StatusOK, paginate(items, page, total, started))
}

func (o *OS) handleCreateSession(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSONObject(w, r, false)
	if !ok {
		return
	}
	q := newQueryReader(r)
	sessionType, fromQuery := q.sessionType()
	if q.failed(w) {
		return
	}
	if !fromQuery && body.has("session_type") {
		sessionType = storage.SessionType(body.enum("session_type", sessionTypes...))
	}
	sessionType = cmp.Or(sessionType, storage.SessionTypeAgent)
	sessionID := body.str("session_id")
	name := body.str("session_name")
	state := body.object("session_state")
	metadata := body.object("metadata")
	requestedUser := body.str("user_id")
	componentID := body.str("component_id")
	agentID, teamID, workflowID := body.str("agent_id"), body.str("team_id"), body.str("workflow_id")
	if body.failed(w) {
		return
	}
	userID := o.userScope(r, requestedUser)
	if sessionID == "" {
		sessionID = newID()
	}
	ctx := r.Context()
	// Creating never overwrites: an id already taken (by this caller or, in
	// the store's scoped upsert below, by anyone else) is a conflict.
	_, err := o.cfg.Store.GetSession(ctx, sessionID, storage.GetSessionOptions{UserID: userID})
	switch {
	case err == nil:
		writeError(w, http.StatusConflict, fmt.Sprintf("Session with id '%s' already exists", sessionID))
		return
	case !errors.Is(err, storage.ErrNotFound):
		o.writeStoreError(w, r, err)
		return
	}
	session := &storage.Session{SessionID: sessionID, SessionType: sessionType, UserID: userID, Metadata: metadata}
	switch sessionType {
	case storage.SessionTypeTeam:
		session.TeamID = cmp.Or(teamID, componentID)
	case storage.SessionTypeWorkflow:
		session.WorkflowID = cmp.Or(workflowID, componentID)
	default:
		session.AgentID = cmp.Or(agentID, componentID)
	}
	if state != nil || name != "" {
		session.SessionData = map[string]any{}
		if state != nil {
			session.SessionData[storage.SessionStateKey] = state
		}
		if name != "" {
			session.SessionData[storage.SessionNameKey] = name
		}
	}
	stored, err := o.cfg.Store.UpsertSession(ctx, session)
	if errors.Is(err, storage.ErrNotFound) {
		writeError(w, http.StatusConflict, fmt.Sprintf("Session with id '%s' already exists", sessionID))
		return
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sessionDetail(stored, stored.Name()))
}

func (o *OS) handleGetSession(w http.ResponseWriter, r *http.Request) {
	session, userID, ok := o.pathSession(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, sessionDetail(session, o.sessionName(r.Context(), session, userID)))
}

func (o *OS) handleUpdateSession(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSONObject(w, r, true)
	if !ok {
		return
	}
	// Agno's UpdateSessionRequest names it session_name; name is accepted too.
	nameField := "session_name"
	if !body.has(nameField) && body.has("name") {
		nameField = "name"
	}
	name, setName := body.str(nameField), body.has(nameField)
	state, setState := body.object("session_state"), body.has("session_state")
	metadata, setMetadata := body.object("metadata"), body.has("metadata")
	summary, setSummary := body.object("summary"), body.has("summary")
	if body.failed(w) {
		return
	}
	session, userID, ok := o.pathSession(w, r)
	if !ok {
		return
	}
	if setName || setState {
		if session.SessionData == nil {
			session.SessionData = map[string]any{}
		}
	}
	switch {
	case setName && name == "":
		delete(session.SessionData, storage.SessionNameKey)
	case setName:
		session.SessionData[storage.SessionNameKey] = name
	}
	if setState {
		session.SessionData[storage.SessionStateKey] = state
	}
	if setMetadata {
		session.Metadata = metadata
	}
	if setSummary {
		session.Summary = summary
	}
	stored, err := o.cfg.Store.UpsertSession(r.Context(), session)
	if err != nil {
		o.writeSessionError(w, r, session.SessionID, err)
		return
	}
	writeJSON(w, http.StatusOK, sessionDetail(stored, o.sessionName(r.Context(), stored, userID)))
}

func (o *OS) handleRenameSession(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSONObject(w, r, true)
	if !ok {
		return
	}
	name := body.required("session_name")
	if body.failed(w) {
		return
	}
	sessionID := r.PathValue("session_id")
	userID := o.userScope(r, r.URL.Query().Get("user_id"))
	stored, err := o.cfg.Store.RenameSession(r.Context(), sessionID, userID, name)
	if err != nil {
		o.writeSessionError(w, r, sessionID, err)
		return
	}
	writeJSON(w, http.StatusOK, sessionDetail(stored, stored.Name()))
}

func (o *OS) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	sessionID := r.PathValue("session_id")
	userID := o.userScope(r, r.URL.Query().Get("user_id"))
	if o.sessionInFlight(sessionID, userID) {
		writeError(w, http.StatusConflict, sessionInFlightDetail(sessionID))
		return
	}
	err := o.cfg.Store.DeleteSession(r.Context(), sessionID, userID)
	if err != nil {
		o.writeSessionError(w, r, sessionID, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (o *OS) handleDeleteSessions(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSONObject(w, r, true)
	if !ok {
		return
	}
	ids := body.requiredList("session_ids")
	// Agno requires session_types beside the ids; agnogo takes it as optional
	// (a session id names one row whatever its type) but checks it when sent.
	types := body.strings("session_types")
	for i, t := range types {
		if !storage.SessionType(t).Valid() {
			body.issue(enumIssue([]string{"body", "session_types", fmt.Sprint(i)}, sessionTypes))
		}
	}
	if body.failed(w) {
		return
	}
	if types != nil && len(types) != len(ids) {
		writeError(w, http.StatusBadRequest, "Session IDs and session types must have the same length")
		return
	}
	userID := o.userScope(r, r.URL.Query().Get("user_id"))
	for _, id := range ids {
		if o.sessionInFlight(id, userID) {
			writeError(w, http.StatusConflict, sessionInFlightDetail(id))
			return
		}
	}
	for _, id := range ids {
		// Sessions that are gone, or not the caller's, are skipped as Agno does.
		if err := o.cfg.Store.DeleteSession(r.Context(), id, userID); err != nil && !errors.Is(err, storage.ErrNotFound) {
			o.writeStoreError(w, r, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// sessionInFlight reports whether a run of the session, in the caller's
// user scope, is executing in this process. Deleting such a session would
// not stick: the run saves its session when it ends, which writes the row
// again (without the runs the delete removed).
func (o *OS) sessionInFlight(sessionID, userID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, live := range o.inflight {
		if live.sessionID == sessionID && (userID == "" || live.userID == userID) {
			return true
		}
	}
	return false
}

func sessionInFlightDetail(sessionID string) string {
	return fmt.Sprintf("Session with id '%s' has a run in progress: cancel it or let it finish, then delete the session", sessionID)
}

// handleListSessionRuns answers a session's runs, oldest first, as the bare
// array Agno's clients read. It is paged by limit and page, as the
// listings are, but limit defaults to the largest page ([maxPageLimit]),
// so a client that sends neither gets every run of a session of up to that
// many runs, as it always did; the X-Total-Count header says how many runs
// match in all, so that a client can ask for the next page. The member runs
// of a team run in flight are left out until it ends, as in Agno
// ([OS.withoutMembersInFlight]).
func (o *OS) handleListSessionRuns(w http.ResponseWriter, r *http.Request) {
	q := newQueryReader(r)
	createdAfter := q.epoch("created_after")
	createdBefore := q.epoch("created_before")
	page := q.paginationFrom(maxPageLimit)
	if q.failed(w) {
		return
	}
	session, userID, ok := o.pathSession(w, r)
	if !ok {
		return
	}
	records, total, err := o.cfg.Store.GetRuns(r.Context(), storage.RunQuery{
		SessionID: session.SessionID, UserID: userID, CreatedAfter: createdAfter, CreatedBefore: createdBefore, Page: page.store(),
	})
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	records, left := o.withoutMembersInFlight(r.Context(), records, userID)
	runs := make([]json.RawMessage, 0, len(records))
	for _, rec := range records {
		runs = append(runs, runSchema(o.withStreamed(r.Context(), rec.Run)))
	}
	w.Header().Set(totalCountHeader, strconv.Itoa(total-left))
	writeJSON(w, http.StatusOK, runs)
}

// totalCountHeader carries, beside a bare array that is one page of a
// listing, how many items the listing has in all.
const totalCountHeader = "X-Total-Count"

func (o *OS) handleGetSessionRun(w http.ResponseWriter, r *http.Request) {
	session, userID, ok := o.pathSession(w, r)
	if !ok {
		return
	}
	runID := r.PathValue("run_id")
	rec, err := o.cfg.Store.GetRun(r.Context(), runID, userID)
	if err == nil && rec.SessionID != session.SessionID {
		err = storage.ErrNotFound
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("Run with ID %s not found in session %s", runID, session.SessionID))
	case err != nil:
		o.writeStoreError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, runSchema(o.withStreamed(r.Context(), rec.Run)))
	}
}

// handleForkSession copies a session of the path's agent or team, with
// every run (a team's member runs too) under a fresh run_id, into a new
// session (runtime.md §12).
func (o *OS) handleForkSession(w http.ResponseWriter, r *http.Request, runner run.Runner) {
	source, userID, ok := o.pathSession(w, r)
	if !ok {
		return
	}
	// A session of another component is reported as missing, never forked
	// (auth-and-isolation.md §5: component matching fails closed).
	if !sessionOf(source, runner) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Session with id '%s' not found", source.SessionID))
		return
	}
	forkID, err := o.forkSession(context.WithoutCancel(r.Context()), source, userID)
	if err != nil {
		o.writeSessionError(w, r, source.SessionID, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session_id": forkID, "forked_from_session_id": source.SessionID})
}

// sessionOf reports whether s is a session of runner: of its kind's
// session type, and its agent_id or team_id.
func sessionOf(s *storage.Session, runner run.Runner) bool {
	switch kindOf(runner) {
	case run.KindTeam:
		return s.SessionType == storage.SessionTypeTeam && s.TeamID == runner.ID()
	case run.KindWorkflow:
		return s.SessionType == storage.SessionTypeWorkflow && s.WorkflowID == runner.ID()
	}
	return cmp.Or(s.SessionType, storage.SessionTypeAgent) == storage.SessionTypeAgent && s.AgentID == runner.ID()
}

// forkSession writes the copy of source and of its runs in userID's scope
// and returns the new session's id. The store copies the session and its
// runs in one transaction, relinking the copies to the fork (new run ids,
// the fork's session id, lineage, parent and child run ids, stored events
// left out; see [storage.SessionFork]), so a fork is all or nothing. The
// session_data keys that bind the source to a harness conversation are
// left out. It runs to completion even when the client leaves.
func (o *OS) forkSession(ctx context.Context, source *storage.Session, userID string) (string, error) {
	fork, err := o.cfg.Store.ForkSession(ctx, storage.SessionFork{
		SessionID: source.SessionID,
		UserID:    userID,
		ForkID:    newID(),
		// The copies' usage was counted in the source session: the fork's
		// session metrics count only its own runs.
		DropSessionData: append(o.boundSessionKeys(), storage.SessionMetricsKey),
	})
	if err != nil {
		return "", fmt.Errorf("fork session %s: %w", source.SessionID, err)
	}
	return fork.SessionID, nil
}

// pathSession reads the path's session in the caller's scope (query
// user_id for admins), or answers 404. A type / session_type query, when
// sent, must match the session's type, as Agno reads sessions by type.
func (o *OS) pathSession(w http.ResponseWriter, r *http.Request) (*storage.Session, string, bool) {
	q := newQueryReader(r)
	sessionType, typed := q.sessionType()
	if q.failed(w) {
		return nil, "", false
	}
	sessionID := r.PathValue("session_id")
	userID := o.userScope(r, q.str("user_id"))
	session, err := o.cfg.Store.GetSession(r.Context(), sessionID, storage.GetSessionOptions{UserID: userID})
	if err == nil && typed && session.SessionType != sessionType {
		err = storage.ErrNotFound
	}
	if err != nil {
		o.writeSessionError(w, r, sessionID, err)
		return nil, "", false
	}
	return session, userID, true
}

// writeSessionError answers a failed session call, wording not-found as
// Agno does.
func (o *OS) writeSessionError(w http.ResponseWriter, r *http.Request, sessionID string, err error) {
	if errors.Is(err, storage.ErrNotFound) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Session with id '%s' not found", sessionID))
		return
	}
	o.writeStoreError(w, r, err)
}

// sessionName is the session's display name: the stored one, else the text
// of its first run's user message, as Agno's get_session_name falls back.
// Only that one run is read, so listings stay free of runs (upstream issue
// 10328). A failed lookup leaves the name empty: it is cosmetic.
func (o *OS) sessionName(ctx context.Context, s *storage.Session, userID string) string {
	if name := s.Name(); name != "" {
		return name
	}
	records, _, err := o.cfg.Store.GetRuns(ctx, storage.RunQuery{SessionID: s.SessionID, UserID: userID, Page: storage.Page{Limit: 1}})
	if err != nil || len(records) == 0 {
		return ""
	}
	return firstUserText(records[0].Run)
}

// firstUserText is the text a run's user sent: its first own user message,
// else its input.
func firstUserText(out *run.Output) string {
	if out == nil {
		return ""
	}
	for _, m := range out.Messages {
		if m != nil && m.Role == "user" && !m.FromHistory {
			if text := m.ContentString(); text != "" {
				return text
			}
		}
	}
	return out.Input.ContentString()
}

// sessionSchema is a session as listings return it (Agno's SessionSchema):
// absent values are left out, as Agno's response_model_exclude_none does.
// Timestamps are epoch seconds (agentos-api.md §1).
func sessionSchema(s *storage.Session, name string) map[string]any {
	out := map[string]any{
		"session_id":   s.SessionID,
		"session_name": name,
		"session_type": cmp.Or(s.SessionType, storage.SessionTypeAgent),
		"created_at":   s.CreatedAt,
		"updated_at":   cmp.Or(s.UpdatedAt, s.CreatedAt),
	}
	putNonEmpty(out, "user_id", s.UserID)
	putNonEmpty(out, "agent_id", s.AgentID)
	putNonEmpty(out, "team_id", s.TeamID)
	putNonEmpty(out, "workflow_id", s.WorkflowID)
	if state, ok := s.SessionData[storage.SessionStateKey]; ok && state != nil {
		out["session_state"] = state
	}
	if s.Summary != nil {
		out["session_summary"] = s.Summary
	}
	if metrics, total, ok := sessionMetrics(s); ok {
		out["metrics"] = metrics
		if total != nil {
			out["total_tokens"] = *total
		}
	}
	if s.Metadata != nil {
		out["metadata"] = s.Metadata
	}
	return out
}

// sessionDetail is one session as GET /sessions/{id} returns it (Agno's
// Agent/Team/WorkflowSessionDetailSchema, without the chat history: runs
// are read from /sessions/{id}/runs).
func sessionDetail(s *storage.Session, name string) map[string]any {
	out := sessionSchema(s, name)
	switch s.SessionType {
	case storage.SessionTypeTeam:
		putNonNil(out, "team_data", s.TeamData)
	case storage.SessionTypeWorkflow:
		putNonNil(out, "workflow_data", s.WorkflowData)
	default:
		out["agent_session_id"] = s.SessionID
		putNonNil(out, "agent_data", s.AgentData)
	}
	return out
}

// sessionMetrics returns session_data["session_metrics"] and its total
// token count.
func sessionMetrics(s *storage.Session) (metrics any, totalTokens *int64, ok bool) {
	metrics, ok = s.SessionData["session_metrics"]
	if !ok || metrics == nil {
		return nil, nil, false
	}
	switch m := metrics.(type) {
	case map[string]any:
		if total, isNumber := m["total_tokens"].(float64); isNumber {
			totalTokens = new(int64(total))
		} else {
			totalTokens = new(int64(0)) // zero counts are left out of stored metrics
		}
	case *run.SessionMetrics:
		totalTokens = new(m.TotalTokens)
	}
	return metrics, totalTokens, true
}

func putNonEmpty(m map[string]any, key, value string) {
	if value != "" {
		m[key] = value
	}
}

func putNonNil(m map[string]any, key string, value map[string]any) {
	if value != nil {
		m[key] = value
	}
}
