package agentos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/workflow"
)

// wsWait bounds every wait of these tests.
const wsWait = 15 * time.Second

// wsStore is a test's database.
func wsStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return store
}

// wsServe serves runners with auth; the server shuts down (its runs
// cancelled and saved) before the store closes.
func wsServe(t *testing.T, store storage.Store, auth agentos.AuthConfig, runners ...run.Runner) *server {
	t.Helper()
	os, err := agentos.New(agentos.Config{Store: store, Runners: runners, Auth: auth})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wsWait)
		defer cancel()
		_ = os.Shutdown(ctx)
	})
	return &server{Server: ts, store: store, os: os}
}

// twoSteps is the workflow "flow": writer then checker.
func twoSteps(t *testing.T, store storage.Store) *workflow.Workflow {
	t.Helper()
	writer, _ := echoAgent(t, store, "writer", "w")
	checker, _ := echoAgent(t, store, "checker", "c")
	wf, err := workflow.New("flow", workflow.WithStore(store), workflow.Step("draft", writer), workflow.Step("polish", checker))
	require.NoError(t, err)
	return wf
}

// wsClient is one WebSocket connection of a test.
type wsClient struct {
	conn *websocket.Conn
}

// wsMsg is one message the server sent.
type wsMsg struct {
	data map[string]any
	raw  string
}

func (m wsMsg) event() string { s, _ := m.data["event"].(string); return s }

// index is the message's event_index; -1 for a control message.
func (m wsMsg) index() int64 {
	if f, ok := m.data["event_index"].(float64); ok {
		return int64(f)
	}
	return -1
}

// dialWS opens a connection to the server's WebSocket with header.
func dialWS(t *testing.T, s *server, header http.Header) *wsClient {
	t.Helper()
	c, resp, err := tryDialWS(t, s, header)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	return c
}

func tryDialWS(t *testing.T, s *server, header http.Header) (*wsClient, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wsWait)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/workflows/ws", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		return nil, resp, err
	}
	conn.SetReadLimit(-1)
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &wsClient{conn: conn}, resp, nil
}

// send writes v as a JSON text message.
func (c *wsClient) send(t *testing.T, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	c.sendRaw(t, websocket.MessageText, data)
}

func (c *wsClient) sendRaw(t *testing.T, typ websocket.MessageType, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wsWait)
	defer cancel()
	require.NoError(t, c.conn.Write(ctx, typ, data))
}

// read reads the next message.
func (c *wsClient) read(t *testing.T) wsMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wsWait)
	defer cancel()
	typ, data, err := c.conn.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, websocket.MessageText, typ)
	m := wsMsg{raw: string(data)}
	require.NoError(t, json.Unmarshal(data, &m.data), string(data))
	return m
}

// expect reads the next message and checks its event, and that its error
// (if any) contains want.
func (c *wsClient) expect(t *testing.T, event, want string) wsMsg {
	t.Helper()
	m := c.read(t)
	require.Equal(t, event, m.event(), m.raw)
	if want != "" {
		require.Contains(t, m.data["error"], want, m.raw)
	}
	return m
}

// until reads messages up to the first whose event is one of names,
// included.
func (c *wsClient) until(t *testing.T, names ...string) []wsMsg {
	t.Helper()
	var got []wsMsg
	for {
		m := c.read(t)
		got = append(got, m)
		for _, name := range names {
			if m.event() == name {
				return got
			}
		}
		require.NotEqual(t, "error", m.event(), m.raw)
	}
}

// runEnd reads a workflow run's messages up to its final event.
func (c *wsClient) runEnd(t *testing.T) []wsMsg {
	t.Helper()
	return c.until(t, "WorkflowCompleted", "WorkflowError", "WorkflowCancelled", "WorkflowPaused")
}

// ownEvents names the workflow's own events among msgs (not its agents').
func ownEvents(msgs []wsMsg) []string {
	var out []string
	for _, m := range msgs {
		if _, agentEvent := m.data["agent_id"]; !agentEvent && m.index() >= 0 {
			out = append(out, m.event())
		}
	}
	return out
}

// requireIndexed checks that every message is a run event numbered from
// first on, one by one.
func requireIndexed(t *testing.T, msgs []wsMsg, first int64) {
	t.Helper()
	for i, m := range msgs {
		require.Equal(t, first+int64(i), m.index(), "event %d: %s", i, m.raw)
	}
}

// runEvents drops the control messages.
func runEvents(msgs []wsMsg) []wsMsg {
	var out []wsMsg
	for _, m := range msgs {
		if m.index() >= 0 {
			out = append(out, m)
		}
	}
	return out
}

// TestWebSocketStartsAWorkflowRun: a workflow started over the socket
// streams each of its events as the JSON its SSE frame carries, numbered
// in order, up to WorkflowCompleted; ping answers pong.
func TestWebSocketStartsAWorkflowRun(t *testing.T) {
	store := wsStore(t)
	s := wsServe(t, store, agentos.AuthConfig{}, twoSteps(t, store))
	c := dialWS(t, s, nil)
	connected := c.expect(t, "connected", "")
	require.Equal(t, false, connected.data["requires_auth"])

	c.send(t, map[string]any{"action": "ping"})
	c.expect(t, "pong", "")

	c.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic", "session_id": "s1", "version": "v2"})
	msgs := c.runEnd(t)
	requireIndexed(t, msgs, 0)
	require.Equal(t, []string{"WorkflowStarted", "StepStarted", "StepCompleted", "StepStarted", "StepCompleted", "WorkflowCompleted"}, ownEvents(msgs))
	require.Greater(t, len(msgs), 6, "the agents' events are in the stream")
	done := msgs[len(msgs)-1].data
	runID := done["run_id"].(string)
	require.Equal(t, "s1", done["session_id"])
	require.Equal(t, "c(w(topic))", done["content"])
	for _, m := range msgs {
		if _, agentEvent := m.data["agent_id"]; !agentEvent {
			require.Equal(t, runID, m.data["run_id"], m.raw)
		}
	}

	// The run is stored, and the messages are exactly the run's SSE frames.
	stored := decode[map[string]any](t, s.get(t, "/workflows/flow/runs/"+runID))
	require.Equal(t, "COMPLETED", stored["status"])
	frames := readFrames(t, s.postForm(t, "/workflows/flow/runs/"+runID+"/resume", url.Values{"last_event_index": {"-1"}}).Body)
	require.Equal(t, "replay", frames[0].event)
	require.Len(t, frames[1:], len(msgs))
	for i, f := range frames[1:] {
		require.Equal(t, f.raw, msgs[i].raw)
		require.Equal(t, f.event, msgs[i].event())
	}

	// The connection serves another run, and a message as JSON text.
	c.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": map[string]any{"topic": "cats"}})
	second := c.runEnd(t)
	requireIndexed(t, second, 0)
	require.Contains(t, second[len(second)-1].data["content"], `{"topic":"cats"}`)
	require.NotEqual(t, runID, second[len(second)-1].data["run_id"])
	c.send(t, map[string]any{"action": "ping"})
	c.expect(t, "pong", "")
}

// TestWebSocketRefusesBadMessages: every malformed or refused action
// answers an error event naming what to fix, and the connection stays
// open.
func TestWebSocketRefusesBadMessages(t *testing.T) {
	store := wsStore(t)
	s := wsServe(t, store, agentos.AuthConfig{}, twoSteps(t, store))

	// A plain GET is not a WebSocket.
	resp := s.get(t, "/workflows/ws")
	require.Equal(t, http.StatusUpgradeRequired, resp.StatusCode)
	require.Contains(t, readAll(t, resp), "WebSocket client")
	// A browser origin CORS does not allow is refused.
	_, resp, err := tryDialWS(t, s, http.Header{"Origin": {"https://evil.example"}})
	require.Error(t, err)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	dialWS(t, s, http.Header{"Origin": {"http://localhost:3000"}}).expect(t, "connected", "")

	c := dialWS(t, s, nil)
	c.expect(t, "connected", "")
	for _, tc := range []struct {
		message, want string
	}{
		{`{"action":`, "not valid JSON"},
		{`[1,2]`, "JSON object with an action"},
		{`{}`, "action is required"},
		{`{"action":"dance"}`, "Unknown action: dance"},
		{`{"action":"start-workflow","workflow_id":5}`, "field workflow_id must be a string"},
		{`{"action":"start-workflow","message":"hi"}`, "workflow_id is required"},
		{`{"action":"start-workflow","workflow_id":"nope","message":"hi"}`, "Workflow nope not found"},
		{`{"action":"start-workflow","workflow_id":"flow"}`, "message is required"},
		{`{"action":"start-workflow","workflow_id":"flow","message":"a\u0000b"}`, "NUL"},
		{`{"action":"start-workflow","workflow_id":"flow","message":"hi","session_state":"x"}`, "field session_state must be an object"},
		{`{"action":"reconnect"}`, "run_id is required"},
		{`{"action":"reconnect","run_id":"r-1","workflow_id":"flow"}`, "Run r-1 not found"},
		{`{"action":"reconnect","run_id":"r-1"}`, "Run r-1 not found"},
		{`{"action":"continue-workflow","workflow_id":"flow"}`, "run_id is required"},
		{`{"action":"continue-workflow","workflow_id":"flow","run_id":"r-1","step_requirements":5}`, "step_requirements must be a JSON array"},
		{`{"action":"continue-workflow","workflow_id":"flow","run_id":"r-1","step_requirements":"[{"}`, "step_requirements must be a JSON array"},
		{`{"action":"continue-workflow","workflow_id":"flow","run_id":"r-1","step_requirements":[]}`, "r-1"},
	} {
		c.sendRaw(t, websocket.MessageText, []byte(tc.message))
		c.expect(t, "error", tc.want)
	}
	c.sendRaw(t, websocket.MessageBinary, []byte(`{"action":"ping"}`))
	c.expect(t, "error", "binary messages")
	big := `{"action":"ping","pad":"` + strings.Repeat("x", 1<<20) + `"}`
	c.sendRaw(t, websocket.MessageText, []byte(big))
	c.expect(t, "error", "message too large")

	c.send(t, map[string]any{"action": "ping"})
	c.expect(t, "pong", "")
}

// TestWebSocketSecurityKey: with a security key, every action but
// authenticate is refused until the key is sent, a wrong key is an
// auth_error, and an upgrade carrying the key is authenticated at once.
func TestWebSocketSecurityKey(t *testing.T) {
	store := wsStore(t)
	s := wsServe(t, store, agentos.AuthConfig{SecurityKey: "sekret"}, twoSteps(t, store))

	c := dialWS(t, s, nil)
	require.Equal(t, true, c.expect(t, "connected", "").data["requires_auth"])
	c.send(t, map[string]any{"action": "ping"})
	c.expect(t, "auth_required", "authenticate")
	c.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic"})
	c.expect(t, "auth_required", "authenticate")
	c.send(t, map[string]any{"action": "authenticate"})
	c.expect(t, "auth_error", "Token is required")
	c.send(t, map[string]any{"action": "authenticate", "token": "wrong"})
	c.expect(t, "auth_error", "Invalid token")
	c.send(t, map[string]any{"action": "ping"})
	c.expect(t, "auth_required", "")
	c.send(t, map[string]any{"action": "authenticate", "token": "sekret"})
	c.expect(t, "authenticated", "")
	c.send(t, map[string]any{"action": "ping"})
	c.expect(t, "pong", "")
	c.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic"})
	ran := c.runEnd(t)
	require.Equal(t, "WorkflowCompleted", ran[len(ran)-1].event())

	// The key in the upgrade's Authorization header authenticates it.
	h := dialWS(t, s, http.Header{"Authorization": {"Bearer sekret"}})
	require.Equal(t, false, h.expect(t, "connected", "").data["requires_auth"])
	h.send(t, map[string]any{"action": "ping"})
	h.expect(t, "pong", "")
	// A wrong one does not, and says so.
	w := dialWS(t, s, http.Header{"Authorization": {"Bearer nope"}})
	hello := w.expect(t, "connected", "")
	require.Equal(t, true, hello.data["requires_auth"])
	require.Contains(t, hello.data["message"], "not accepted")
	w.send(t, map[string]any{"action": "ping"})
	w.expect(t, "auth_required", "")

	// The route stays closed to plain requests without the key.
	require.Equal(t, http.StatusUnauthorized, s.get(t, "/workflows").StatusCode)
	require.Equal(t, http.StatusUpgradeRequired, s.get(t, "/workflows/ws").StatusCode)
}

// TestWebSocketJWTAndIsolation: JWT callers authenticate with their token;
// runs are theirs whatever user_id they send, RBAC decides which
// workflows they may run, and another user's run is not found.
func TestWebSocketJWTAndIsolation(t *testing.T) {
	store := wsStore(t)
	s := wsServe(t, store, agentos.AuthConfig{JWT: rsaJWT(t), UserIsolation: true}, twoSteps(t, store))

	alice := dialWS(t, s, nil)
	require.Equal(t, true, alice.expect(t, "connected", "").data["requires_auth"])
	alice.send(t, map[string]any{"action": "authenticate", "token": "not.a.jwt"})
	require.Equal(t, "invalid_token", alice.expect(t, "auth_error", "Invalid token").data["error_type"])
	alice.send(t, map[string]any{"action": "authenticate", "token": rs256(t, "", "workflows:run")})
	alice.expect(t, "auth_error", "no user identity")
	alice.send(t, map[string]any{"action": "authenticate", "token": rs256(t, "alice", "workflows:run")})
	require.Equal(t, "alice", alice.expect(t, "authenticated", "").data["user_id"])
	alice.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic", "user_id": "mallory", "session_id": "sa"})
	msgs := alice.runEnd(t)
	done := msgs[len(msgs)-1]
	require.Equal(t, "WorkflowCompleted", done.event())
	runID := done.data["run_id"].(string)
	rec, err := store.GetRun(t.Context(), runID, "alice")
	require.NoError(t, err, "the run is alice's, whatever user_id she sent")
	require.Equal(t, run.StatusCompleted, rec.Run.Status)

	// Alice reconnects to her finished run from event 2 on.
	alice.send(t, map[string]any{"action": "reconnect", "run_id": runID, "workflow_id": "flow", "last_event_index": 2})
	replay := alice.expect(t, "replay", "")
	require.Equal(t, "COMPLETED", replay.data["status"])
	rest := alice.runEnd(t)
	requireIndexed(t, rest, 3)
	require.Len(t, rest, len(msgs)-3)

	// Bob, authenticated by his upgrade's header, cannot see it.
	bob := dialWS(t, s, http.Header{"Authorization": {"Bearer " + rs256(t, "bob", "workflows:run")}})
	require.Equal(t, false, bob.expect(t, "connected", "").data["requires_auth"])
	bob.send(t, map[string]any{"action": "reconnect", "run_id": runID, "workflow_id": "flow", "session_id": "sa", "user_id": "alice"})
	bob.expect(t, "error", "Run "+runID+" not found")
	bob.send(t, map[string]any{"action": "reconnect", "run_id": runID, "last_event_index": -1})
	bob.expect(t, "error", "Run "+runID+" not found")
	bob.send(t, map[string]any{"action": "continue-workflow", "workflow_id": "flow", "run_id": runID, "user_id": "alice", "step_requirements": []any{}})
	bob.expect(t, "error", runID)

	// Carol may run another workflow only.
	carol := dialWS(t, s, nil)
	carol.expect(t, "connected", "")
	carol.send(t, map[string]any{"action": "authenticate", "token": rs256(t, "carol", "workflows:other:run")})
	carol.expect(t, "authenticated", "")
	carol.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic"})
	carol.expect(t, "error", "Insufficient permissions: missing scope workflows:flow:run")
	carol.send(t, map[string]any{"action": "reconnect", "run_id": runID, "workflow_id": "flow"})
	carol.expect(t, "error", "Insufficient permissions")
}

// TestWebSocketContinuesAPausedWorkflow: a run that pauses for a
// confirmation is continued over the socket, its events numbered on from
// the pause.
func TestWebSocketContinuesAPausedWorkflow(t *testing.T) {
	store := wsStore(t)
	writer, writes := echoAgent(t, store, "writer", "w")
	checker, checks := echoAgent(t, store, "checker", "c")
	wf, err := workflow.New("review", workflow.WithStore(store),
		workflow.Step("draft", writer),
		workflow.Step("publish", checker).Review(workflow.HumanReview{RequiresConfirmation: true, ConfirmationMessage: "Publish?"}))
	require.NoError(t, err)
	s := wsServe(t, store, agentos.AuthConfig{}, wf)
	c := dialWS(t, s, nil)
	c.expect(t, "connected", "")

	c.send(t, map[string]any{"action": "start-workflow", "workflow_id": "review", "message": "topic", "session_id": "s1"})
	first := c.runEnd(t)
	requireIndexed(t, first, 0)
	paused := first[len(first)-1]
	require.Equal(t, "WorkflowPaused", paused.event())
	runID := paused.data["run_id"].(string)
	reqs := paused.data["step_requirements"].([]any)
	require.Len(t, reqs, 1)
	require.Equal(t, "Publish?", reqs[0].(map[string]any)["confirmation_message"])
	require.EqualValues(t, 0, checks.Load())

	// Unresolved, as a JSON string: refused with what to send.
	c.send(t, map[string]any{"action": "continue-workflow", "workflow_id": "review", "run_id": runID, "step_requirements": "[]"})
	c.expect(t, "error", "confirmed")

	req := reqs[0].(map[string]any)
	req["confirmed"] = true
	c.send(t, map[string]any{"action": "continue-workflow", "workflow_id": "review", "run_id": runID, "session_id": "s1", "step_requirements": []any{req}})
	cont := c.runEnd(t)
	requireIndexed(t, cont, paused.index()+1)
	require.Equal(t, []string{"WorkflowStarted", "StepContinued", "StepStarted", "StepCompleted", "WorkflowCompleted"}, ownEvents(cont))
	done := cont[len(cont)-1].data
	require.Equal(t, runID, done["run_id"])
	require.Equal(t, "c(w(topic))", done["content"])
	require.EqualValues(t, 1, writes.Load())
	require.EqualValues(t, 1, checks.Load())
	stored := decode[map[string]any](t, s.get(t, "/workflows/review/runs/"+runID))
	require.Equal(t, "COMPLETED", stored["status"])

	// Over, it does not continue again.
	c.send(t, map[string]any{"action": "continue-workflow", "workflow_id": "review", "run_id": runID, "step_requirements": []any{req}})
	c.expect(t, "error", "PAUSED")
}

// gatedAgent answers "g(<input>)" once open is closed.
func gatedAgent(t *testing.T, store storage.Store, id string, open <-chan struct{}) *agent.Agent {
	t.Helper()
	m := scripted.New([]scripted.Reply{scripted.Respond(func(req *model.Request) scripted.Reply {
		<-open
		return scripted.Reply{Content: fmt.Sprintf("g(%v)", req.Messages[len(req.Messages)-1].Content)}
	})}, scripted.Loop())
	a, err := agent.New(agent.Config{ID: id, Name: id, Model: m, Store: store})
	require.NoError(t, err)
	return a
}

// TestWebSocketReconnectAfterDrop: a client that drops mid-run leaves the
// run going; another connection catches up on what it missed and follows
// the rest live, and once the run is over a reconnect replays what came
// after the last event the first client saw.
func TestWebSocketReconnectAfterDrop(t *testing.T) {
	store := wsStore(t)
	writer, _ := echoAgent(t, store, "writer", "w")
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	wf, err := workflow.New("slow", workflow.WithStore(store),
		workflow.Step("draft", writer), workflow.Step("wait", gatedAgent(t, store, "gated", gate)))
	require.NoError(t, err)
	s := wsServe(t, store, agentos.AuthConfig{}, wf)
	t.Cleanup(release) // before the server shuts down

	first := dialWS(t, s, nil)
	first.expect(t, "connected", "")
	first.send(t, map[string]any{"action": "start-workflow", "workflow_id": "slow", "message": "topic"})
	var seen []wsMsg
	for {
		m := first.read(t)
		require.NotEqual(t, "error", m.event(), m.raw)
		seen = append(seen, m)
		if m.event() == "StepStarted" && m.data["step_name"] == "wait" {
			break
		}
	}
	requireIndexed(t, seen, 0)
	runID := seen[0].data["run_id"].(string)
	last := seen[len(seen)-1].index()
	require.NoError(t, first.conn.CloseNow()) // the client drops

	// Another connection catches up and follows the run live.
	second := dialWS(t, s, nil)
	second.expect(t, "connected", "")
	second.send(t, map[string]any{"action": "reconnect", "run_id": runID, "last_event_index": last})
	caughtUp := second.until(t, "subscribed")
	if len(caughtUp) > 1 {
		require.Equal(t, "catch_up", caughtUp[0].event())
	}
	release()
	live := append(runEvents(caughtUp), second.runEnd(t)...)
	requireIndexed(t, live, last+1)
	require.Equal(t, "WorkflowCompleted", live[len(live)-1].event())
	require.Equal(t, "g(w(topic))", live[len(live)-1].data["content"])

	// The run completed; a reconnect replays the rest.
	rec, err := store.GetRun(t.Context(), runID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, rec.Run.Status)
	third := dialWS(t, s, nil)
	third.expect(t, "connected", "")
	third.send(t, map[string]any{"action": "reconnect", "run_id": runID, "workflow_id": "slow", "last_event_index": last})
	replay := third.expect(t, "replay", "")
	require.Equal(t, "COMPLETED", replay.data["status"])
	rest := third.runEnd(t)
	require.Len(t, rest, len(live))
	for i := range rest {
		require.Equal(t, live[i].raw, rest[i].raw)
	}
}

// TestWebSocketClosesOnShutdown: a shutdown closes the connections with
// 1001 (going away) and refuses new ones.
func TestWebSocketClosesOnShutdown(t *testing.T) {
	store := wsStore(t)
	s := wsServe(t, store, agentos.AuthConfig{}, twoSteps(t, store))
	c := dialWS(t, s, nil)
	c.expect(t, "connected", "")

	ctx, cancel := context.WithTimeout(t.Context(), wsWait)
	defer cancel()
	require.NoError(t, s.os.Shutdown(ctx))
	_, _, err := c.conn.Read(ctx)
	require.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), "%v", err)

	_, resp, err := tryDialWS(t, s, nil)
	require.Error(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}
