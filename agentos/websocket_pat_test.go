package agentos_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// TestWebSocketServiceAccountOpenServer: on a server without
// authentication, a service account's token names the socket's caller as
// it names a request's — the account, held to its scopes and its own
// data — whether it comes in the upgrade's header or an authenticate
// action; an unknown one is refused, not taken for an anonymous admin.
func TestWebSocketServiceAccountOpenServer(t *testing.T) {
	store := wsStore(t)
	s := wsServe(t, store, agentos.AuthConfig{}, twoSteps(t, store))
	other := seedAccount(t, store, "other", "workflows:elsewhere:run")
	runner := seedAccount(t, store, "runner", "workflows:flow:run")

	// In the upgrade's header: the account's scopes bind.
	h := dialWS(t, s, http.Header{"Authorization": {"Bearer " + other}})
	require.Equal(t, false, h.expect(t, "connected", "").data["requires_auth"])
	h.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic"})
	h.expect(t, "error", "Insufficient permissions: missing scope workflows:flow:run")

	// Sent with authenticate on an anonymous (admin) connection: from then
	// on the connection is the account.
	c := dialWS(t, s, nil)
	require.Equal(t, false, c.expect(t, "connected", "").data["requires_auth"])
	c.send(t, map[string]any{"action": "authenticate", "token": other})
	require.Equal(t, "sa:other", c.expect(t, "authenticated", "").data["user_id"])
	c.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic"})
	c.expect(t, "error", "Insufficient permissions: missing scope workflows:flow:run")

	// An account that may run the workflow runs it as itself, whatever
	// user_id it names.
	r := dialWS(t, s, http.Header{"Authorization": {"Bearer " + runner}})
	r.expect(t, "connected", "")
	r.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic", "user_id": "alice"})
	msgs := r.runEnd(t)
	done := msgs[len(msgs)-1]
	require.Equal(t, "WorkflowCompleted", done.event(), done.raw)
	runID := done.data["run_id"].(string)
	rec, err := store.GetRun(t.Context(), runID, "sa:runner")
	require.NoError(t, err, "the run is the account's")
	require.Equal(t, run.StatusCompleted, rec.Run.Status)
	_, err = store.GetRun(t.Context(), runID, "alice")
	require.True(t, errors.Is(err, storage.ErrNotFound), "not alice's: %v", err)

	// An unknown token is refused, in the header or sent; the connection
	// waits for a valid one.
	u := dialWS(t, s, http.Header{"Authorization": {"Bearer agno_pat_unknown"}})
	hello := u.expect(t, "connected", "")
	require.Equal(t, true, hello.data["requires_auth"])
	require.Contains(t, hello.data["message"], "Invalid service account token")
	u.send(t, map[string]any{"action": "ping"})
	u.expect(t, "auth_required", "")
	u.send(t, map[string]any{"action": "authenticate", "token": "agno_pat_unknown"})
	require.Equal(t, "invalid_token", u.expect(t, "auth_error", "Invalid service account token").data["error_type"])
	u.send(t, map[string]any{"action": "authenticate", "token": runner})
	u.expect(t, "authenticated", "")
	u.send(t, map[string]any{"action": "ping"})
	u.expect(t, "pong", "")
}

// TestWebSocketServiceAccountWithAuth: with a security key or JWT, a
// service account's token is accepted on the socket as on the REST routes,
// with the account's scopes only.
func TestWebSocketServiceAccountWithAuth(t *testing.T) {
	for name, auth := range map[string]agentos.AuthConfig{
		"security key": {SecurityKey: "sekret"},
		"jwt":          {JWT: rsaJWT(t), UserIsolation: true},
	} {
		t.Run(name, func(t *testing.T) {
			store := wsStore(t)
			s := wsServe(t, store, auth, twoSteps(t, store))
			reader := seedAccount(t, store, "reader", "sessions:read")

			h := dialWS(t, s, http.Header{"Authorization": {"Bearer " + reader}})
			require.Equal(t, false, h.expect(t, "connected", "").data["requires_auth"], "the account's token authenticates the upgrade")
			h.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic"})
			h.expect(t, "error", "Insufficient permissions: missing scope workflows:flow:run")

			c := dialWS(t, s, nil)
			require.Equal(t, true, c.expect(t, "connected", "").data["requires_auth"])
			c.send(t, map[string]any{"action": "authenticate", "token": reader})
			require.Equal(t, "sa:reader", c.expect(t, "authenticated", "").data["user_id"])
			c.send(t, map[string]any{"action": "start-workflow", "workflow_id": "flow", "message": "topic"})
			c.expect(t, "error", "Insufficient permissions: missing scope workflows:flow:run")
		})
	}
}
