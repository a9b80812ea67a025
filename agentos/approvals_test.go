package agentos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/team"
	"github.com/agnogo/agnogo/tool"
)

// emailArgs are send_email's arguments.
type emailArgs struct {
	To string `json:"to" jsonschema:"the recipient"`
}

// emailTool is a tool whose calls need an admin's approval; sent counts
// the calls that ran.
func emailTool(t *testing.T, sent *atomic.Int32) tool.Tool {
	t.Helper()
	send, err := tool.New(tool.Config{Name: "send_email", RequiresApproval: true}, func(_ context.Context, args emailArgs) (string, error) {
		sent.Add(1)
		return "sent to " + args.To, nil
	})
	require.NoError(t, err)
	return send
}

// approvalCall sends one request with an optional bearer token and JSON
// body.
func approvalCall(t *testing.T, base, method, path, token string, body any) *http.Response {
	t.Helper()
	var reader *bytes.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(t, err)
		reader = bytes.NewReader(data)
	} else {
		reader = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, reader)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// approvalsPage is GET /approvals's answer.
type approvalsPage struct {
	Data []map[string]any `json:"data"`
	Meta map[string]any   `json:"meta"`
}

// pauseForApproval runs the agent for alice as token's caller until it
// pauses on send_email, and returns the run as the API answered it.
func pauseForApproval(t *testing.T, s *server, token, sessionID string) map[string]any {
	t.Helper()
	resp := authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", token,
		url.Values{"message": {"Email Bob."}, "stream": {"false"}, "session_id": {sessionID}, "user_id": {"alice"}})
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.Equal(t, "PAUSED", out["status"], body)
	return out
}

// continueRun posts /continue for a run as token's caller, with no tools:
// its approval decides.
func continueRun(t *testing.T, s *server, token, runID, sessionID string) *http.Response {
	t.Helper()
	return authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs/"+runID+"/continue", token,
		url.Values{"session_id": {sessionID}, "stream": {"false"}})
}

// TestApprovalGatesTheRunUntilAnAdminApproves: a call of a tool that needs
// approval pauses the run, its execution saying approval_type required
// and the approval's id; the approval lists pending with every column and
// counts; a caller without approvals:write can neither resolve it nor
// continue the run; an admin approves (as himself, whatever the body
// says), a second resolution is refused; the user then continues with no
// tools, the call runs, and the approval's run_status follows the run.
func TestApprovalGatesTheRunUntilAnAdminApproves(t *testing.T) {
	var sent atomic.Int32
	s := newServer(t, []scripted.Reply{scripted.ToolCall("send_email", `{"to":"bob"}`), scripted.Text("Sent.")},
		func(a *agent.Config, c *agentos.Config) {
			a.Tools = []tool.Tool{emailTool(t, &sent)}
			c.Auth = agentos.AuthConfig{JWT: rsaJWT(t)}
		})
	alice := rs256(t, "alice", "agents:run", "agents:read", "approvals:read", "sessions:read")
	admin := rs256(t, "root", "agent_os:admin")

	paused := pauseForApproval(t, s, alice, "s1")
	runID := paused["run_id"].(string)
	execution := paused["tools"].([]any)[0].(map[string]any)
	require.Equal(t, "required", execution["approval_type"])
	require.Equal(t, true, execution["requires_confirmation"], "an approval with no other pause is a confirmation")
	approvalID, _ := execution["approval_id"].(string)
	require.NotEmpty(t, approvalID)

	resp := approvalCall(t, s.URL, http.MethodGet, "/approvals?status=pending", alice, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	page := decode[approvalsPage](t, resp)
	require.Len(t, page.Data, 1)
	require.Equal(t, map[string]any{"page": 1.0, "limit": 100.0, "total_pages": 1.0, "total_count": 1.0,
		"search_time_ms": page.Meta["search_time_ms"]}, page.Meta)
	a := page.Data[0]
	createdAt := a["created_at"]
	require.IsType(t, 0.0, createdAt, "epoch seconds")
	require.Equal(t, map[string]any{
		"id": approvalID, "run_id": runID, "session_id": "s1", "status": "pending", "source_type": "agent",
		"approval_type": "required", "pause_type": "confirmation", "tool_name": "send_email", "tool_args": map[string]any{"to": "bob"},
		"expires_at": nil, "agent_id": "assistant", "team_id": nil, "workflow_id": nil, "user_id": "alice", "schedule_id": nil,
		"schedule_run_id": nil, "source_name": "Assistant", "requirements": a["requirements"],
		"context":         map[string]any{"tool_names": []any{"send_email"}, "source_name": "Assistant"},
		"resolution_data": nil, "resolved_by": nil, "resolved_at": nil, "created_at": createdAt, "updated_at": a["updated_at"],
		"run_status": "PAUSED",
	}, a)
	requirements := a["requirements"].([]any)
	require.Len(t, requirements, 1)
	require.Equal(t, "send_email", requirements[0].(map[string]any)["tool_execution"].(map[string]any)["tool_name"])
	resp = approvalCall(t, s.URL, http.MethodGet, "/approvals/count", alice, nil)
	require.Equal(t, map[string]any{"count": 1.0}, decode[map[string]any](t, resp))

	resp = continueRun(t, s, alice, runID, "s1")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, "This run requires admin approval before it can be continued", detail(t, resp))
	resp = approvalCall(t, s.URL, http.MethodPost, "/approvals/"+approvalID+"/resolve", alice, map[string]any{"status": "approved"})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "resolving needs approvals:write")
	require.Equal(t, int32(0), sent.Load())

	resp = approvalCall(t, s.URL, http.MethodPost, "/approvals/"+approvalID+"/resolve", admin,
		map[string]any{"status": "maybe"})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp = approvalCall(t, s.URL, http.MethodPost, "/approvals/"+approvalID+"/resolve", admin,
		map[string]any{"status": "approved", "resolved_by": "someone else", "resolution_data": map[string]any{"reason": "fine"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resolved := decode[map[string]any](t, resp)
	require.Equal(t, "approved", resolved["status"])
	require.Equal(t, "root", resolved["resolved_by"], "the signed-in subject, not the body's")
	require.Equal(t, map[string]any{"reason": "fine"}, resolved["resolution_data"])
	require.NotNil(t, resolved["resolved_at"])
	resp = approvalCall(t, s.URL, http.MethodPost, "/approvals/"+approvalID+"/resolve", admin, map[string]any{"status": "rejected"})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Equal(t, "Approval is already 'approved' and cannot be resolved", detail(t, resp))

	resp = approvalCall(t, s.URL, http.MethodGet, "/approvals/"+approvalID+"/status", alice, nil)
	require.Equal(t, map[string]any{"approval_id": approvalID, "status": "approved", "run_id": runID,
		"resolved_at": resolved["resolved_at"], "resolved_by": "root"}, decode[map[string]any](t, resp))
	require.Equal(t, int32(0), sent.Load(), "resolving does not continue the run")

	resp = continueRun(t, s, alice, runID, "s1")
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var done map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &done))
	require.Equal(t, "COMPLETED", done["status"])
	require.Equal(t, "Sent.", done["content"])
	require.Equal(t, int32(1), sent.Load(), "the approved call ran")
	require.Equal(t, "sent to bob", lastToolMessage(t, s.model).Content)

	resp = approvalCall(t, s.URL, http.MethodGet, "/approvals/"+approvalID, alice, nil)
	require.Equal(t, "COMPLETED", decode[map[string]any](t, resp)["run_status"], "run_status follows the run")
	resp = approvalCall(t, s.URL, http.MethodGet, "/approvals/count", alice, nil)
	require.Equal(t, map[string]any{"count": 0.0}, decode[map[string]any](t, resp))
	resp = approvalCall(t, s.URL, http.MethodGet, "/approvals?status=approved&run_id="+runID+"&agent_id=assistant", alice, nil)
	require.Len(t, decode[approvalsPage](t, resp).Data, 1)
	resp = approvalCall(t, s.URL, http.MethodGet, "/approvals?status=pending", alice, nil)
	require.Empty(t, decode[approvalsPage](t, resp).Data)
}

// TestApprovalDecidesTheCall: without authentication anyone continues, and
// a resolved approval still decides the call whatever the request sends:
// rejected, the call is not run (a confirmation or a user-input call
// alike) and the model reads the rejection; approved with values, a
// user-input call runs with them.
func TestApprovalDecidesTheCall(t *testing.T) {
	seatsWithApproval := func(t *testing.T, calls chan<- bookArgs) tool.Tool {
		booked, err := tool.WithFlags(seatsTool(t, calls), tool.Flags{RequiresApproval: new(true)})
		require.NoError(t, err)
		return booked
	}
	t.Run("rejected confirmation", func(t *testing.T) {
		var sent atomic.Int32
		s := newServer(t, []scripted.Reply{scripted.ToolCall("send_email", `{"to":"bob"}`), scripted.Text("I could not send it.")},
			func(a *agent.Config, _ *agentos.Config) { a.Tools = []tool.Tool{emailTool(t, &sent)} })
		paused := pauseForApproval(t, s, "", "s1")
		id := paused["tools"].([]any)[0].(map[string]any)["approval_id"].(string)
		resp := approvalCall(t, s.URL, http.MethodPost, "/approvals/"+id+"/resolve", "", map[string]any{"status": "rejected", "resolved_by": "ops"})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "ops", decode[map[string]any](t, resp)["resolved_by"], "without a signed-in subject, the body's")
		// The caller confirms; the approval's rejection wins.
		tools := toolsOf(t, s.runJSON(t, paused["run_id"].(string), "s1"))
		tools[0]["confirmed"] = true
		resp = s.continueWith(t, paused["run_id"].(string), "s1", tools, url.Values{"stream": {"false"}})
		body := readAll(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Contains(t, body, `"status":"COMPLETED"`)
		require.Equal(t, int32(0), sent.Load(), "a rejected call never runs")
		require.Equal(t, "The user rejected the call to send_email.", lastToolMessage(t, s.model).Content)
	})
	t.Run("rejected user input", func(t *testing.T) {
		calls := make(chan bookArgs, 1)
		s := newServer(t, []scripted.Reply{scripted.ToolCall("book_seats", `{"city":"Paris"}`), scripted.Text("Not booked.")},
			func(a *agent.Config, _ *agentos.Config) { a.Tools = []tool.Tool{seatsWithApproval(t, calls)} })
		resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"Book."}, "stream": {"false"}, "session_id": {"s1"}})
		paused := decode[map[string]any](t, resp)
		require.Equal(t, "PAUSED", paused["status"])
		page := decode[approvalsPage](t, approvalCall(t, s.URL, http.MethodGet, "/approvals", "", nil))
		require.Len(t, page.Data, 1)
		require.Equal(t, "user_input", page.Data[0]["pause_type"])
		resp = approvalCall(t, s.URL, http.MethodPost, "/approvals/"+page.Data[0]["id"].(string)+"/resolve", "", map[string]any{"status": "rejected"})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		resp = continueRun(t, s, "", paused["run_id"].(string), "s1")
		body := readAll(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Contains(t, body, `"status":"COMPLETED"`)
		require.Empty(t, calls, "a rejected user-input call never runs")
		require.Equal(t, "The user rejected the call to book_seats.", lastToolMessage(t, s.model).Content)
	})
	t.Run("approved user input", func(t *testing.T) {
		calls := make(chan bookArgs, 1)
		s := newServer(t, []scripted.Reply{scripted.ToolCall("book_seats", `{"city":"Paris"}`), scripted.Text("Booked.")},
			func(a *agent.Config, _ *agentos.Config) { a.Tools = []tool.Tool{seatsWithApproval(t, calls)} })
		resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"Book."}, "stream": {"false"}, "session_id": {"s1"}})
		paused := decode[map[string]any](t, resp)
		id := paused["tools"].([]any)[0].(map[string]any)["approval_id"].(string)
		resp = approvalCall(t, s.URL, http.MethodPost, "/approvals/"+id+"/resolve", "",
			map[string]any{"status": "approved", "resolution_data": map[string]any{"values": map[string]any{"seats": 2}}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		resp = continueRun(t, s, "", paused["run_id"].(string), "s1")
		body := readAll(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, bookArgs{City: "Paris", Seats: 2}, <-calls, "the approval's values, with the model's")
	})
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestApprovalExpires: an approval past its expires_at reads expired — in
// the listing, its status and the pending count — before any sweep ran;
// it can no longer be resolved, and continuing rejects its call, the
// model reading that the approval expired.
func TestApprovalExpires(t *testing.T) {
	var sent atomic.Int32
	c := &clock{now: time.Now()}
	s := newServer(t, []scripted.Reply{scripted.ToolCall("send_email", `{"to":"bob"}`), scripted.Text("It expired.")},
		func(a *agent.Config, o *agentos.Config) {
			a.Tools = []tool.Tool{emailTool(t, &sent)}
			a.ApprovalExpiry, a.Now, o.Now = time.Hour, c.Now, c.Now
		})
	paused := pauseForApproval(t, s, "", "s1")
	id := paused["tools"].([]any)[0].(map[string]any)["approval_id"].(string)
	a := decode[map[string]any](t, approvalCall(t, s.URL, http.MethodGet, "/approvals/"+id, "", nil))
	require.Equal(t, "pending", a["status"])
	require.Equal(t, float64(c.Now().Add(time.Hour).Unix()), a["expires_at"])

	c.advance(time.Hour + time.Second)
	status := decode[map[string]any](t, approvalCall(t, s.URL, http.MethodGet, "/approvals/"+id+"/status", "", nil))
	require.Equal(t, "expired", status["status"])
	require.Equal(t, map[string]any{"count": 0.0}, decode[map[string]any](t, approvalCall(t, s.URL, http.MethodGet, "/approvals/count", "", nil)))
	require.Len(t, decode[approvalsPage](t, approvalCall(t, s.URL, http.MethodGet, "/approvals?status=expired", "", nil)).Data, 1)
	resp := approvalCall(t, s.URL, http.MethodPost, "/approvals/"+id+"/resolve", "", map[string]any{"status": "approved"})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Equal(t, "Approval is already 'expired' and cannot be resolved", detail(t, resp))

	resp = continueRun(t, s, "", paused["run_id"].(string), "s1")
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, int32(0), sent.Load(), "an expired approval rejects its call")
	require.Contains(t, lastToolMessage(t, s.model).Content, "expired")
}

// TestApprovalOwnership: under user isolation a user sees only the
// approvals of their own runs (another's is 404, as if it did not exist,
// and counts nothing); resolving and deleting are for admins only — a
// user is answered 404 even holding the scopes; an admin deletes with 204.
func TestApprovalOwnership(t *testing.T) {
	var sent atomic.Int32
	s := newServer(t, []scripted.Reply{scripted.ToolCall("send_email", `{"to":"bob"}`)},
		func(a *agent.Config, c *agentos.Config) {
			a.Tools = []tool.Tool{emailTool(t, &sent)}
			c.Auth = agentos.AuthConfig{JWT: rsaJWT(t), UserIsolation: true}
		})
	scopes := []string{"agents:run", "agents:read", "approvals:read", "approvals:write", "approvals:delete"}
	alice, bob := rs256(t, "alice", scopes...), rs256(t, "bob", scopes...)
	admin := rs256(t, "root", "agent_os:admin")
	paused := pauseForApproval(t, s, alice, "s1")
	id := paused["tools"].([]any)[0].(map[string]any)["approval_id"].(string)

	require.Len(t, decode[approvalsPage](t, approvalCall(t, s.URL, http.MethodGet, "/approvals", alice, nil)).Data, 1)
	require.Empty(t, decode[approvalsPage](t, approvalCall(t, s.URL, http.MethodGet, "/approvals?user_id=alice", bob, nil)).Data)
	require.Equal(t, map[string]any{"count": 0.0}, decode[map[string]any](t, approvalCall(t, s.URL, http.MethodGet, "/approvals/count", bob, nil)))
	for _, path := range []string{"/approvals/" + id, "/approvals/" + id + "/status"} {
		resp := approvalCall(t, s.URL, http.MethodGet, path, bob, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.Equal(t, "Approval not found", detail(t, resp))
	}
	for _, token := range []string{alice, bob} {
		resp := approvalCall(t, s.URL, http.MethodPost, "/approvals/"+id+"/resolve", token, map[string]any{"status": "approved"})
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "resolving is for admins under isolation")
		require.Equal(t, http.StatusNotFound, approvalCall(t, s.URL, http.MethodDelete, "/approvals/"+id, token, nil).StatusCode)
	}
	require.Equal(t, "pending", decode[map[string]any](t, approvalCall(t, s.URL, http.MethodGet, "/approvals/"+id, alice, nil))["status"])

	require.Equal(t, http.StatusNoContent, approvalCall(t, s.URL, http.MethodDelete, "/approvals/"+id, admin, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, approvalCall(t, s.URL, http.MethodGet, "/approvals/"+id, admin, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, approvalCall(t, s.URL, http.MethodDelete, "/approvals/"+id, admin, nil).StatusCode)
	// With its approval gone, the call still waits for one: a user who
	// may not approve cannot continue past it.
	resp := continueRun(t, s, rs256(t, "alice", "agents:run"), paused["run_id"].(string), "s1")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, int32(0), sent.Load())
}

// TestApprovalGateOverMCP: MCP's continue_run is refused like the REST
// route while the run's approval is pending.
func TestApprovalGateOverMCP(t *testing.T) {
	var sent atomic.Int32
	s := newServer(t, []scripted.Reply{scripted.ToolCall("send_email", `{"to":"bob"}`), scripted.Text("Sent.")},
		withMCP(func(a *agent.Config, c *agentos.Config) {
			a.Tools = []tool.Tool{emailTool(t, &sent)}
			c.Auth = agentos.AuthConfig{JWT: rsaJWT(t)}
		}))
	alice := rs256(t, "alice", "agents:run", "agents:read")
	paused := pauseForApproval(t, s, alice, "s1")
	res, err := mcpClient(t, s.URL, alice).CallTool(t.Context(), &sdk.CallToolParams{Name: "continue_run",
		Arguments: map[string]any{"run_id": paused["run_id"], "agent_id": "assistant", "session_id": "s1"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "This run requires admin approval before it can be continued")
	require.Equal(t, int32(0), sent.Load())
}

// TestApprovalsRoutesAndValidation: the listing's parameters are checked
// (422), an unknown approval is 404, and without a database every
// approvals route answers 503 naming what to configure.
func TestApprovalsRoutesAndValidation(t *testing.T) {
	s := newServer(t, nil, nil)
	for _, query := range []string{"limit=0", "limit=1001", "status=done", "approval_type=maybe", "page=x"} {
		resp := approvalCall(t, s.URL, http.MethodGet, "/approvals?"+query, "", nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, query)
	}
	page := decode[approvalsPage](t, approvalCall(t, s.URL, http.MethodGet, "/approvals?limit=5&page=2", "", nil))
	require.Equal(t, []map[string]any{}, page.Data)
	require.Equal(t, 5.0, page.Meta["limit"])
	require.Equal(t, http.StatusNotFound, approvalCall(t, s.URL, http.MethodGet, "/approvals/nope", "", nil).StatusCode)
	require.Equal(t, http.StatusNotFound, approvalCall(t, s.URL, http.MethodPost, "/approvals/nope/resolve", "",
		map[string]any{"status": "approved"}).StatusCode)

	a, err := agent.New(agent.Config{ID: "assistant", Model: scripted.New(nil)})
	require.NoError(t, err)
	os, err := agentos.New(agentos.Config{Runners: []run.Runner{a}})
	require.NoError(t, err)
	bare := httptest.NewServer(os)
	t.Cleanup(bare.Close)
	for _, call := range []struct{ method, path string }{
		{http.MethodGet, "/approvals"}, {http.MethodGet, "/approvals/count"}, {http.MethodGet, "/approvals/x/status"},
		{http.MethodPost, "/approvals/x/resolve"}, {http.MethodDelete, "/approvals/x"},
	} {
		resp := approvalCall(t, bare.URL, call.method, call.path, "", nil)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, fmt.Sprint(call))
		require.Equal(t, "Approvals not available: pass a `db` to AgentOS to enable this feature.", detail(t, resp))
	}
}

// TestApprovalOfATeamMember: a member's call that needs approval pauses
// the team; the approval is the team's — its run, source_type team — and
// the member's own run records none. Approved, the team continues with no
// tools: the member's call runs and both runs complete.
func TestApprovalOfATeamMember(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	var sent atomic.Int32
	mailer, err := agent.New(agent.Config{ID: "mailer", Name: "Mailer", Store: store, Tools: []tool.Tool{emailTool(t, &sent)},
		Model: scripted.New([]scripted.Reply{scripted.ToolCall("send_email", `{"to":"bob"}`), scripted.Text("mailed")})})
	require.NoError(t, err)
	crew, _ := newTeam(t, store, team.ModeCoordinate, []scripted.Reply{delegate("mailer", "Email Bob."), scripted.Text("Bob was emailed.")}, mailer)
	s := serveRunners(t, store, crew)

	resp := s.postForm(t, "/teams/crew/runs", url.Values{"message": {"email bob"}, "session_id": {"s1"}, "stream": {"false"}})
	paused := decode[map[string]any](t, resp)
	require.Equal(t, "PAUSED", paused["status"])
	teamRun := paused["run_id"].(string)
	page := decode[approvalsPage](t, approvalCall(t, s.URL, http.MethodGet, "/approvals", "", nil))
	require.Len(t, page.Data, 1, "one approval, the team's")
	a := page.Data[0]
	require.Equal(t, teamRun, a["run_id"])
	require.Equal(t, "team", a["source_type"])
	require.Equal(t, "crew", a["team_id"])
	require.Equal(t, "Crew", a["source_name"])
	require.Equal(t, "send_email", a["tool_name"])

	resp = approvalCall(t, s.URL, http.MethodPost, "/approvals/"+a["id"].(string)+"/resolve", "", map[string]any{"status": "approved"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp = s.postForm(t, "/teams/crew/runs/"+teamRun+"/continue", url.Values{"session_id": {"s1"}, "stream": {"false"}})
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"status":"COMPLETED"`)
	require.Equal(t, int32(1), sent.Load(), "the member's approved call ran")
	require.Equal(t, "COMPLETED", decode[map[string]any](t, approvalCall(t, s.URL, http.MethodGet, "/approvals/"+a["id"].(string), "", nil))["run_status"])
}
