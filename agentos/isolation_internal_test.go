package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// routesFixture serves the session, memory and metrics routes of a real OS
// (an agent with a scripted model, over SQLite) to callers whose principal
// each request names: what the auth middleware hands the handlers once a
// token is verified. It mounts the routes on its own mux, so it also
// serves the metrics routes, whichever routes os.go mounts.
type routesFixture struct {
	os    *OS
	store storage.Store
	agent *agent.Agent
	mux   *http.ServeMux
}

func newRoutesFixture(t *testing.T, isolation bool, replies ...scripted.Reply) *routesFixture {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: scripted.New(replies), Store: store})
	require.NoError(t, err)
	o, err := New(Config{Store: store, Runners: []run.Runner{a}, Auth: AuthConfig{UserIsolation: isolation}})
	require.NoError(t, err)
	mux := http.NewServeMux()
	o.sessionRoutes(mux)
	o.memoryRoutes(mux)
	o.metricsRoutes(mux)
	return &routesFixture{os: o, store: store, agent: a, mux: mux}
}

// call serves one request as p; body is sent as JSON unless nil.
func (f *routesFixture) call(t *testing.T, p Principal, method, path string, body any) *httptest.ResponseRecorder {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(t, err)
		reader = bytes.NewReader(data)
	}
	ctx := context.WithValue(t.Context(), principalKey{}, p)
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, method, path, reader))
	return rec
}

// json serves one request as p, checks its status and decodes its body.
func fixtureJSON[T any](t *testing.T, f *routesFixture, p Principal, method, path string, body any, status int) T {
	t.Helper()
	rec := f.call(t, p, method, path, body)
	require.Equal(t, status, rec.Code, "%s %s: %s", method, path, rec.Body.String())
	var out T
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	return out
}

// runAs runs the assistant once for user in session.
func (f *routesFixture) runAs(t *testing.T, user, session, message string) *run.Output {
	t.Helper()
	out, err := f.agent.Run(t.Context(), &run.Input{InputContent: message, SessionID: session, UserID: user})
	require.NoError(t, err)
	return out
}

// isoScopes holds every scope the session, memory and metrics routes check.
var isoScopes = []string{
	"sessions:read", "sessions:write", "sessions:delete",
	"memories:read", "memories:write", "memories:delete",
	"metrics:read", "metrics:write",
}

var (
	isoAdmin = Principal{Admin: true}
	isoAlice = Principal{Subject: "alice", Scopes: isoScopes}
	isoBob   = Principal{Subject: "bob", Scopes: isoScopes}
)

func TestIsolationSessions(t *testing.T) {
	t.Parallel()
	f := newRoutesFixture(t, true,
		scripted.Reply{Content: "for alice", Usage: &run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}},
		scripted.Reply{Content: "for bob", Usage: &run.Metrics{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}},
	)
	aliceRun := f.runAs(t, "alice", "sa", "alice's question")
	bobRun := f.runAs(t, "bob", "sb", "bob's question")
	stateBefore, err := f.store.GetSession(t.Context(), "sa", storage.GetSessionOptions{})
	require.NoError(t, err)

	// Reads: Bob sees his session only, whatever user_id he names.
	for _, path := range []string{"/sessions", "/sessions?user_id=alice", "/sessions?component_id=assistant"} {
		page := fixtureJSON[map[string]any](t, f, isoBob, http.MethodGet, path, nil, http.StatusOK)
		require.Len(t, page["data"], 1, path)
		require.Equal(t, "sb", page["data"].([]any)[0].(map[string]any)["session_id"], path)
		require.Equal(t, 1.0, page["meta"].(map[string]any)["total_count"], path)
	}
	for _, path := range []string{
		"/sessions/sa", "/sessions/sa?user_id=alice", "/sessions/sa/runs", "/sessions/sa/runs?user_id=alice",
		"/sessions/sa/runs/" + aliceRun.RunID, "/sessions/sb/runs/" + aliceRun.RunID,
	} {
		require.Equal(t, http.StatusNotFound, f.call(t, isoBob, http.MethodGet, path, nil).Code, path)
	}
	runs := fixtureJSON[[]map[string]any](t, f, isoBob, http.MethodGet, "/sessions/sb/runs", nil, http.StatusOK)
	require.Len(t, runs, 1)
	require.Equal(t, bobRun.RunID, runs[0]["run_id"])

	// Writes: nothing of Alice's changes, and nothing says it exists
	// beyond what creating an id always reveals.
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPatch, "/sessions/sa", map[string]any{"session_state": map[string]any{"owned": "bob"}, "session_name": "bob's now"}},
		{http.MethodPatch, "/sessions/sa?user_id=alice", map[string]any{"metadata": map[string]any{"owned": "bob"}}},
		{http.MethodPost, "/sessions/sa/rename", map[string]any{"session_name": "bob's now"}},
		{http.MethodDelete, "/sessions/sa", nil},
		{http.MethodDelete, "/sessions/sa?user_id=alice", nil},
		{http.MethodPost, "/agents/assistant/sessions/sa/fork", nil},
		{http.MethodPost, "/agents/assistant/sessions/sa/fork?user_id=alice", nil},
	} {
		require.Equal(t, http.StatusNotFound, f.call(t, isoBob, tc.method, tc.path, tc.body).Code, "%s %s", tc.method, tc.path)
	}
	require.Equal(t, http.StatusConflict, f.call(t, isoBob, http.MethodPost, "/sessions", map[string]any{"session_id": "sa", "session_name": "taken"}).Code)
	require.Equal(t, http.StatusNoContent, f.call(t, isoBob, http.MethodDelete, "/sessions", map[string]any{"session_ids": []string{"sa"}}).Code)
	stateAfter, err := f.store.GetSession(t.Context(), "sa", storage.GetSessionOptions{IncludeRuns: true})
	require.NoError(t, err, "Alice's session survives Bob's deletes")
	require.Equal(t, "alice", stateAfter.UserID)
	require.Equal(t, stateBefore.SessionData, stateAfter.SessionData)
	require.Equal(t, stateBefore.Metadata, stateAfter.Metadata)
	require.Len(t, stateAfter.Runs, 1)

	// Bob's own writes are his, whatever user_id he names.
	created := fixtureJSON[map[string]any](t, f, isoBob, http.MethodPost, "/sessions", map[string]any{"session_id": "sc", "user_id": "alice"}, http.StatusCreated)
	require.Equal(t, "bob", created["user_id"])
	fork := fixtureJSON[map[string]any](t, f, isoBob, http.MethodPost, "/agents/assistant/sessions/sb/fork?user_id=alice", nil, http.StatusOK)
	forked, err := f.store.GetSession(t.Context(), fork["session_id"].(string), storage.GetSessionOptions{UserID: "bob", IncludeRuns: true})
	require.NoError(t, err)
	require.Len(t, forked.Runs, 1)
	require.Equal(t, "bob", forked.Runs[0].UserID)

	// Alice still sees and changes her own; an isoAdmin sees everyone's.
	renamed := fixtureJSON[map[string]any](t, f, isoAlice, http.MethodPost, "/sessions/sa/rename", map[string]any{"session_name": "mine"}, http.StatusOK)
	require.Equal(t, "mine", renamed["session_name"])
	page := fixtureJSON[map[string]any](t, f, isoAlice, http.MethodGet, "/sessions", nil, http.StatusOK)
	require.Equal(t, 1.0, page["meta"].(map[string]any)["total_count"])
	page = fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, "/sessions", nil, http.StatusOK)
	require.Equal(t, 4.0, page["meta"].(map[string]any)["total_count"])
	page = fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, "/sessions?user_id=alice", nil, http.StatusOK)
	require.Equal(t, 1.0, page["meta"].(map[string]any)["total_count"])

	// Bob's bulk delete removes his sessions only.
	require.Equal(t, http.StatusNoContent, f.call(t, isoBob, http.MethodDelete, "/sessions", map[string]any{"session_ids": []string{"sa", "sb", "sc"}}).Code)
	page = fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, "/sessions", nil, http.StatusOK)
	require.Equal(t, 2.0, page["meta"].(map[string]any)["total_count"], "Alice's session and Bob's fork are left")
	require.Equal(t, http.StatusOK, f.call(t, isoAlice, http.MethodGet, "/sessions/sa", nil).Code)
}

func TestIsolationMemories(t *testing.T) {
	t.Parallel()
	f := newRoutesFixture(t, true)
	mine := fixtureJSON[map[string]any](t, f, isoAlice, http.MethodPost, "/memories", map[string]any{"memory": "alice's secret", "topics": []string{"private"}}, http.StatusOK)
	require.Equal(t, "alice", mine["user_id"], "the owner comes from the principal")
	aliceID := mine["memory_id"].(string)
	spoofed := fixtureJSON[map[string]any](t, f, isoBob, http.MethodPost, "/memories", map[string]any{"memory": "bob's note", "user_id": "alice", "topics": []string{"public"}}, http.StatusOK)
	require.Equal(t, "bob", spoofed["user_id"], "a scoped caller cannot write for another user")

	for _, path := range []string{"/memories", "/memories?user_id=alice"} {
		page := fixtureJSON[map[string]any](t, f, isoBob, http.MethodGet, path, nil, http.StatusOK)
		require.Len(t, page["data"], 1, path)
		require.Equal(t, "bob's note", page["data"].([]any)[0].(map[string]any)["memory"], path)
	}
	require.Equal(t, []any{"public"}, fixtureJSON[[]any](t, f, isoBob, http.MethodGet, "/memory_topics?user_id=alice", nil, http.StatusOK))
	stats := fixtureJSON[map[string]any](t, f, isoBob, http.MethodGet, "/user_memory_stats", nil, http.StatusOK)
	require.Len(t, stats["data"], 1)
	require.Equal(t, "bob", stats["data"].([]any)[0].(map[string]any)["user_id"])

	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/memories/" + aliceID, nil},
		{http.MethodGet, "/memories/" + aliceID + "?user_id=alice", nil},
		{http.MethodPatch, "/memories/" + aliceID, map[string]any{"memory": "bob was here"}},
		{http.MethodPatch, "/memories/" + aliceID, map[string]any{"memory": "bob was here", "user_id": "alice"}},
		{http.MethodDelete, "/memories/" + aliceID, nil},
		{http.MethodDelete, "/memories/" + aliceID + "?user_id=alice", nil},
	} {
		require.Equal(t, http.StatusNotFound, f.call(t, isoBob, tc.method, tc.path, tc.body).Code, "%s %s", tc.method, tc.path)
	}
	require.Equal(t, http.StatusNoContent, f.call(t, isoBob, http.MethodDelete, "/memories", map[string]any{"memory_ids": []string{aliceID}, "user_id": "alice"}).Code)
	require.Equal(t, http.StatusNoContent, f.call(t, isoBob, http.MethodDelete, "/memories", []string{aliceID}).Code)
	stored, err := f.store.GetMemory(t.Context(), aliceID, "alice")
	require.NoError(t, err, "Alice's memory survives")
	require.Equal(t, "alice's secret", stored.Memory)

	got := fixtureJSON[map[string]any](t, f, isoAlice, http.MethodGet, "/memories/"+aliceID, nil, http.StatusOK)
	require.Equal(t, "alice's secret", got["memory"])
	all := fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, "/user_memory_stats", nil, http.StatusOK)
	require.Len(t, all["data"], 2)
	require.Equal(t, []any{"private", "public"}, fixtureJSON[[]any](t, f, isoAdmin, http.MethodGet, "/memory_topics", nil, http.StatusOK))
}

func TestIsolationMetrics(t *testing.T) {
	t.Parallel()
	f := newRoutesFixture(t, true,
		scripted.Reply{Content: "a1", Usage: &run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}},
		scripted.Reply{Content: "a2", Usage: &run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}},
		scripted.Reply{Content: "b1", Usage: &run.Metrics{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}},
	)
	f.runAs(t, "alice", "sa", "one")
	f.runAs(t, "alice", "sa", "two")
	f.runAs(t, "bob", "sb", "three")

	totals := func(p Principal, path string) (runs, sessions, users, tokens float64) {
		t.Helper()
		resp := fixtureJSON[map[string]any](t, f, p, http.MethodGet, path, nil, http.StatusOK)
		for _, item := range resp["metrics"].([]any) {
			day := item.(map[string]any)
			runs += day["agent_runs_count"].(float64)
			sessions += day["agent_sessions_count"].(float64)
			users += day["users_count"].(float64)
			tokens += day["token_metrics"].(map[string]any)["total_tokens"].(float64)
		}
		return runs, sessions, users, tokens
	}
	for _, tc := range []struct {
		p                             Principal
		path                          string
		runs, sessions, users, tokens float64
	}{
		{isoBob, "/metrics", 1, 1, 1, 2},
		{isoBob, "/metrics?user_id=alice", 1, 1, 1, 2},
		{isoAlice, "/metrics", 2, 1, 1, 30},
		{isoAdmin, "/metrics", 3, 2, 2, 32},
		{isoAdmin, "/metrics?user_id=alice", 2, 1, 1, 30},
	} {
		runs, sessions, users, tokens := totals(tc.p, tc.path)
		require.Equal(t, []float64{tc.runs, tc.sessions, tc.users, tc.tokens}, []float64{runs, sessions, users, tokens}, "%s %s", tc.p.Subject, tc.path)
	}
	refreshed := fixtureJSON[[]map[string]any](t, f, isoBob, http.MethodPost, "/metrics/refresh?user_id=alice", nil, http.StatusOK)
	require.Len(t, refreshed, 1)
	require.Equal(t, 1.0, refreshed[0]["agent_runs_count"])
}

// TestIsolationScopes checks the routes ask for the scope of what they do:
// a caller lacking it is refused with 403 before anything is read.
func TestIsolationScopes(t *testing.T) {
	t.Parallel()
	f := newRoutesFixture(t, true, scripted.Text("hi"))
	f.runAs(t, "bob", "sb", "hello")
	reader := Principal{Subject: "bob", Scopes: []string{"sessions:read", "memories:read", "metrics:read"}}
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/sessions", map[string]any{}},
		{http.MethodPatch, "/sessions/sb", map[string]any{"session_name": "x"}},
		{http.MethodPost, "/sessions/sb/rename", map[string]any{"session_name": "x"}},
		{http.MethodDelete, "/sessions/sb", nil},
		{http.MethodDelete, "/sessions", map[string]any{"session_ids": []string{"sb"}}},
		{http.MethodPost, "/agents/assistant/sessions/sb/fork", nil},
		{http.MethodPost, "/memories", map[string]any{"memory": "x"}},
		{http.MethodDelete, "/memories", []string{"x"}},
		{http.MethodPost, "/metrics/refresh", nil},
	} {
		rec := f.call(t, reader, tc.method, tc.path, tc.body)
		require.Equal(t, http.StatusForbidden, rec.Code, "%s %s: %s", tc.method, tc.path, rec.Body.String())
		require.Contains(t, rec.Body.String(), "Insufficient permissions")
	}
	require.Equal(t, http.StatusOK, f.call(t, reader, http.MethodGet, "/sessions/sb", nil).Code)
	require.Equal(t, http.StatusOK, f.call(t, reader, http.MethodGet, "/metrics", nil).Code)

	// A scope for one session grants that session only, and no listing.
	one := Principal{Subject: "bob", Scopes: []string{"sessions:sb:read"}}
	require.Equal(t, http.StatusOK, f.call(t, one, http.MethodGet, "/sessions/sb", nil).Code)
	require.Equal(t, http.StatusForbidden, f.call(t, one, http.MethodGet, "/sessions/other", nil).Code)
	require.Equal(t, http.StatusForbidden, f.call(t, one, http.MethodGet, "/sessions", nil).Code)
	require.Equal(t, http.StatusForbidden, f.call(t, one, http.MethodGet, "/memories", nil).Code)
}
