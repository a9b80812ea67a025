package agentos_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/storage"
)

// jsonCall sends one request with a JSON body (nil: none) and an optional
// bearer token.
func jsonCall(t *testing.T, base, method, path, token string, body any) *http.Response {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(t, err)
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, reader)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// grants is the scopes field of a create request.
func grants(scopes ...string) []map[string]string {
	out := []map[string]string{}
	for _, s := range scopes {
		out = append(out, map[string]string{"scope": s, "effect": "allow"})
	}
	return out
}

// mint creates a service account as caller and returns the 201 answer.
func mint(t *testing.T, base, caller string, body map[string]any) map[string]any {
	t.Helper()
	resp := jsonCall(t, base, http.MethodPost, "/service-accounts", caller, body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%v", body)
	return decode[map[string]any](t, resp)
}

// listAccounts lists the accounts caller sees.
func listAccounts(t *testing.T, base, caller, query string) []map[string]any {
	t.Helper()
	resp := jsonCall(t, base, http.MethodGet, "/service-accounts"+query, caller, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	page := decode[struct {
		Data []map[string]any `json:"data"`
	}](t, resp)
	return page.Data
}

// seedAccount stores an account with a token of the test's making, as a
// server sharing the database would, and returns the token.
func seedAccount(t *testing.T, store storage.Store, name string, scopes ...string) string {
	t.Helper()
	token := "agno_pat_" + strings.Repeat("x", 20) + name
	sum := sha256.Sum256([]byte(token))
	_, err := store.(storage.ServiceAccountStore).CreateServiceAccount(t.Context(), &storage.ServiceAccount{
		Name: name, UserID: "root", TokenHash: hex.EncodeToString(sum[:]), TokenPrefix: token[:16], Scopes: scopes,
	})
	require.NoError(t, err)
	return token
}

func TestServiceAccountLifecycle(t *testing.T) {
	s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: rsaJWT(t)}))
	admin := rs256(t, "root", "agent_os:admin")

	created := mint(t, s.URL, admin, map[string]any{"name": "ci-runner"})
	token, _ := created["token"].(string)
	require.True(t, strings.HasPrefix(token, "agno_pat_"), token)
	require.Equal(t, token[:16], created["token_prefix"])
	require.Equal(t, "sa:ci-runner", created["principal"])
	require.Equal(t, "root", created["user_id"])
	require.Equal(t, "root", created["created_by"])
	require.Nil(t, created["revoked_at"])
	require.Nil(t, created["last_used_at"])
	createdAt := created["created_at"].(float64)
	require.Equal(t, createdAt+90*24*3600, created["expires_at"], "90 days by default")
	var raws []string
	for _, sc := range created["scopes"].([]any) {
		raws = append(raws, sc.(map[string]any)["raw"].(string))
	}
	require.Equal(t, []string{"agents:run", "teams:run", "workflows:run", "sessions:read", "config:read"}, raws)
	require.Equal(t, map[string]any{"id": nil, "raw": "agents:run", "namespace": "agents", "sub_namespace": nil, "permission": "run", "value": "allow"},
		created["scopes"].([]any)[0])

	// The token works within its scopes, and only there.
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/sessions", token, nil).StatusCode)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/config", token, nil).StatusCode)
	resp := authCall(t, s.URL, http.MethodDelete, "/sessions/x", token, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope sessions:x:delete")
	require.Equal(t, http.StatusForbidden, authCall(t, s.URL, http.MethodGet, "/service-accounts", token, nil).StatusCode)

	// The listing never shows the token again, and records the use.
	resp = jsonCall(t, s.URL, http.MethodGet, "/service-accounts", admin, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NotContains(t, string(raw), token)
	require.NotContains(t, string(raw), `"token"`)
	var page struct {
		Data []map[string]any `json:"data"`
		Meta map[string]any   `json:"meta"`
	}
	require.NoError(t, json.Unmarshal(raw, &page))
	require.Len(t, page.Data, 1)
	require.Equal(t, created["id"], page.Data[0]["id"])
	require.NotNil(t, page.Data[0]["last_used_at"])
	require.Equal(t, float64(1), page.Meta["total_count"])
	require.Equal(t, float64(20), page.Meta["limit"])

	// Revoked, it is refused at once (the cache is evicted), and revoking
	// again changes nothing.
	id := created["id"].(string)
	require.Equal(t, http.StatusNoContent, jsonCall(t, s.URL, http.MethodDelete, "/service-accounts/"+id, admin, nil).StatusCode)
	resp = authCall(t, s.URL, http.MethodGet, "/sessions", token, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, detail(t, resp), "revoked")
	require.Equal(t, http.StatusNoContent, jsonCall(t, s.URL, http.MethodDelete, "/service-accounts/"+id, admin, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, jsonCall(t, s.URL, http.MethodDelete, "/service-accounts/no-such-id", admin, nil).StatusCode)

	all := listAccounts(t, s.URL, admin, "")
	require.Len(t, all, 1)
	require.NotNil(t, all[0]["revoked_at"])
	require.Empty(t, listAccounts(t, s.URL, admin, "?include_revoked=false"))

	// A token that was never minted, or is not a token at all.
	for _, bad := range []string{"agno_pat_" + strings.Repeat("A", 43), "agno_pat_", "agno_pat_not-base62!"} {
		resp = authCall(t, s.URL, http.MethodGet, "/sessions", bad, nil)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, bad)
		require.Equal(t, "Invalid service account token", detail(t, resp))
	}
}

func TestServiceAccountMintingRules(t *testing.T) {
	s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: rsaJWT(t)}))
	admin := rs256(t, "root", "agent_os:admin")
	alice := rs256(t, "alice", "service_accounts:write", "service_accounts:read", "service_accounts:delete", "agents:run", "sessions:read")

	status := func(caller string, body map[string]any) (int, string) {
		resp := jsonCall(t, s.URL, http.MethodPost, "/service-accounts", caller, body)
		if resp.StatusCode == http.StatusUnprocessableEntity {
			raw, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, string(raw)
		}
		return resp.StatusCode, detail(t, resp)
	}

	code, msg := status(admin, map[string]any{"name": "a", "scopes": grants("agents:fly")})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, `Unknown scopes: "agents:fly"`)
	code, _ = status(admin, map[string]any{"name": "a", "scopes": grants("nonsense")})
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = status(admin, map[string]any{"name": "a", "scopes": grants("agents:run extra")})
	require.Equal(t, http.StatusBadRequest, code)

	code, msg = status(admin, map[string]any{"name": "a", "scopes": grants("sessions:delete")})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "allow_privileged_scopes")
	for _, privileged := range []string{"agent_os:admin", "service_accounts:read", "config:write"} {
		code, _ = status(admin, map[string]any{"name": "a", "scopes": grants(privileged)})
		require.Equal(t, http.StatusBadRequest, code, privileged)
	}
	sa := mint(t, s.URL, admin, map[string]any{"name": "janitor", "scopes": grants("sessions:delete", "agents:assistant:run", "system:read"),
		"allow_privileged_scopes": true, "never_expires": true})
	require.Nil(t, sa["expires_at"])
	perID := sa["scopes"].([]any)[1].(map[string]any)
	require.Equal(t, "assistant", perID["sub_namespace"])
	require.Equal(t, "run", perID["permission"])

	// A caller grants only what it holds: agents:run covers one agent's
	// run, not sessions:delete, and not the defaults (teams:run …).
	mint(t, s.URL, alice, map[string]any{"name": "alice-bot", "scopes": grants("agents:run", "agents:assistant:run")})
	code, msg = status(alice, map[string]any{"name": "b", "scopes": grants("sessions:delete"), "allow_privileged_scopes": true})
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, msg, "does not hold: sessions:delete")
	code, _ = status(alice, map[string]any{"name": "b"})
	require.Equal(t, http.StatusForbidden, code)
	code, _ = status(alice, map[string]any{"name": "b", "scopes": grants("agent_os:admin"), "allow_privileged_scopes": true})
	require.Equal(t, http.StatusForbidden, code)
	// Without service_accounts:write nobody mints.
	code, _ = status(rs256(t, "bob", "agents:run"), map[string]any{"name": "b", "scopes": grants("agents:run")})
	require.Equal(t, http.StatusForbidden, code)

	// Names and expiry are validated.
	for _, body := range []map[string]any{
		{"name": "Bad Name"}, {"name": "-lead"}, {"name": strings.Repeat("a", 64)}, {},
		{"name": "ok", "expires_in_days": 0}, {"name": "ok", "expires_in_days": 3651}, {"name": "ok", "expires_in_days": 1.5},
		{"name": "ok", "scopes": []any{}}, {"name": "ok", "scopes": []any{map[string]any{"scope": "agents:run", "effect": "deny"}}},
	} {
		code, _ = status(admin, body)
		require.Equal(t, http.StatusUnprocessableEntity, code, "%v", body)
	}
	long := mint(t, s.URL, admin, map[string]any{"name": strings.Repeat("a", 63), "expires_in_days": 3650})
	require.Equal(t, long["created_at"].(float64)+3650*24*3600, long["expires_at"])

	// An active name is taken until it is revoked.
	code, msg = status(admin, map[string]any{"name": "janitor"})
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, "An active service account named 'janitor' already exists. Revoke it first to rotate.", msg)
	require.Equal(t, http.StatusNoContent, jsonCall(t, s.URL, http.MethodDelete, "/service-accounts/"+sa["id"].(string), admin, nil).StatusCode)
	mint(t, s.URL, admin, map[string]any{"name": "janitor"})

	// Alice sees and revokes only her own accounts; an admin sees all.
	mine := listAccounts(t, s.URL, alice, "")
	require.Len(t, mine, 1)
	require.Equal(t, "alice-bot", mine[0]["name"])
	require.Len(t, listAccounts(t, s.URL, admin, ""), 4)
	require.Len(t, listAccounts(t, s.URL, admin, "?include_revoked=false&sort_by=name&sort_order=asc&limit=2"), 2)
	require.Equal(t, http.StatusNotFound, jsonCall(t, s.URL, http.MethodDelete, "/service-accounts/"+long["id"].(string), alice, nil).StatusCode)
	for _, query := range []string{"?limit=101", "?limit=0", "?sort_by=token_hash", "?include_revoked=maybe"} {
		require.Equal(t, http.StatusUnprocessableEntity, jsonCall(t, s.URL, http.MethodGet, "/service-accounts"+query, admin, nil).StatusCode, query)
	}
}

func TestServiceAccountSecurityKeyMints(t *testing.T) {
	s := newServer(t, nil, withAuth(agentos.AuthConfig{SecurityKey: "sk-test"}))
	created := mint(t, s.URL, "sk-test", map[string]any{"name": "root-bot", "scopes": grants("agent_os:admin"), "allow_privileged_scopes": true})
	require.Nil(t, created["user_id"])
	token := created["token"].(string)
	// An admin service account may do anything, admin-only routes included.
	for _, call := range []struct{ method, path string }{{http.MethodDelete, "/sessions/x"}, {http.MethodGet, "/queue/stats"}} {
		code := authCall(t, s.URL, call.method, call.path, token, nil).StatusCode
		require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, code, call.path)
	}
	require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/sessions", "sk-wrong", nil).StatusCode)
}

func TestServiceAccountExpiry(t *testing.T) {
	clock := &offsetClock{}
	s := newServer(t, nil, func(_ *agent.Config, c *agentos.Config) {
		c.Auth = agentos.AuthConfig{JWT: rsaJWT(t)}
		c.Now = clock.now
	})
	created := mint(t, s.URL, rs256(t, "root", "agent_os:admin"), map[string]any{"name": "short", "expires_in_days": 1})
	token := created["token"].(string)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/sessions", token, nil).StatusCode)
	clock.ahead.Store(int64(25 * time.Hour))
	resp := authCall(t, s.URL, http.MethodGet, "/sessions", token, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "Service account token has expired", detail(t, resp))
}

// TestServiceAccountCacheTTL: a revoke made elsewhere (another server on
// the database) is seen once the cached verification is older than the
// TTL, and at once with the cache off.
func TestServiceAccountCacheTTL(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ttl          time.Duration
		staleAllowed bool
	}{{"default", 0, true}, {"off", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &offsetClock{}
			s := newServer(t, nil, func(_ *agent.Config, c *agentos.Config) {
				c.Auth = agentos.AuthConfig{SecurityKey: "sk-test", ServiceAccountCacheTTL: tc.ttl}
				c.Now = clock.now
			})
			token := seedAccount(t, s.store, "elsewhere", "sessions:read")
			require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/sessions", token, nil).StatusCode)
			accounts, _, err := s.store.(storage.ServiceAccountStore).ListServiceAccounts(t.Context(), storage.ServiceAccountQuery{IncludeRevoked: true})
			require.NoError(t, err)
			require.Len(t, accounts, 1)
			require.NotNil(t, accounts[0].LastUsedAt)
			require.NoError(t, s.store.(storage.ServiceAccountStore).RevokeServiceAccount(t.Context(), accounts[0].ID, "", time.Now().Unix()))

			want := http.StatusUnauthorized
			if tc.staleAllowed {
				want = http.StatusOK
			}
			require.Equal(t, want, authCall(t, s.URL, http.MethodGet, "/sessions", token, nil).StatusCode)
			clock.ahead.Store(int64(31 * time.Second))
			require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/sessions", token, nil).StatusCode)
		})
	}
}

func TestServiceAccountReservedPrincipalJWT(t *testing.T) {
	s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: rsaJWT(t)}))
	for _, sub := range []string{"__scheduler__", "sa:ci-runner", "sa:"} {
		token := sign(t, jwt.SigningMethodRS256, testAuthKeys().rsa1, claims(sub, []string{"agent_os:admin"}))
		resp := authCall(t, s.URL, http.MethodGet, "/sessions", token, nil)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, sub)
		require.Contains(t, detail(t, resp), "is reserved for the scheduler and service accounts", sub)
	}
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/sessions", rs256(t, "sam", "sessions:read"), nil).StatusCode)
}

// TestServiceAccountOpenServer: without authentication, anonymous callers
// stay admins, but a service account's token is checked and held to its
// scopes and its own data; nobody anonymous mints.
func TestServiceAccountOpenServer(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("for alice"), scripted.Text("for the bot")}, nil)
	resp := jsonCall(t, s.URL, http.MethodPost, "/service-accounts", "", map[string]any{"name": "x", "scopes": grants("agents:run")})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, detail(t, resp), "anonymous caller cannot create service accounts")

	resp = authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", "",
		url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"alice-session"}, "user_id": {"alice"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)

	token := seedAccount(t, s.store, "bot", "sessions:read", "agents:run", "service_accounts:write", "service_accounts:read")
	sessions := func(caller string) int {
		resp := authCall(t, s.URL, http.MethodGet, "/sessions", caller, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return len(decode[struct {
			Data []map[string]any `json:"data"`
		}](t, resp).Data)
	}
	require.Equal(t, 1, sessions(""), "anonymous is an admin")
	require.Equal(t, 0, sessions(token), "the bot sees only its own sessions")

	resp = authCall(t, s.URL, http.MethodDelete, "/sessions/alice-session", token, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope sessions:alice-session:delete")

	// The bot's run is its own, whatever user_id it names.
	resp = authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", token,
		url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"bot-session"}, "user_id": {"alice"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "sa:bot", decode[map[string]any](t, resp)["user_id"])
	require.Equal(t, 1, sessions(token))

	// A service account mints within its own scopes, and owns what it mints.
	created := mint(t, s.URL, token, map[string]any{"name": "bot-child", "scopes": grants("sessions:read")})
	require.Equal(t, "sa:bot", created["user_id"])
	require.Len(t, listAccounts(t, s.URL, token, ""), 1)
	require.Len(t, listAccounts(t, s.URL, "", ""), 2)
	resp = jsonCall(t, s.URL, http.MethodPost, "/service-accounts", token, map[string]any{"name": "y", "scopes": grants("teams:run")})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// An unknown token is refused, not taken for anonymous.
	require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/sessions", "agno_pat_unknown", nil).StatusCode)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/health", "agno_pat_unknown", nil).StatusCode)
}

// TestServiceAccountValidateOnly: a JWT server that checks no scopes still
// holds service accounts to theirs.
func TestServiceAccountValidateOnly(t *testing.T) {
	cfg := rsaJWT(t)
	cfg.ValidateOnly = true
	s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: cfg}))
	token := seedAccount(t, s.store, "reader", "sessions:read")
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/sessions", token, nil).StatusCode)
	require.Equal(t, http.StatusForbidden, authCall(t, s.URL, http.MethodDelete, "/sessions/x", token, nil).StatusCode)
	require.NotEqual(t, http.StatusForbidden, authCall(t, s.URL, http.MethodDelete, "/sessions/x", rs256(t, "alice"), nil).StatusCode)
}

// TestServiceAccountThrottle: a client that keeps sending unknown tokens is
// answered 429 before any lookup; a token verified before goes on working.
func TestServiceAccountThrottle(t *testing.T) {
	s := newServer(t, nil, withAuth(agentos.AuthConfig{SecurityKey: "sk-test"}))
	good := seedAccount(t, s.store, "good", "sessions:read")
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/sessions", good, nil).StatusCode)
	for i := range 20 {
		require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/sessions", "agno_pat_guess"+strings.Repeat("0", i), nil).StatusCode)
	}
	resp := authCall(t, s.URL, http.MethodGet, "/sessions", "agno_pat_guessagain", nil)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "60", resp.Header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/sessions", good, nil).StatusCode)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/sessions", "sk-test", nil).StatusCode)
}

// httptestRecord serves one request on h without a network.
func httptestRecord(h http.Handler, method, path, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestServiceAccountNoStore(t *testing.T) {
	srv, err := agentos.New(agentos.Config{})
	require.NoError(t, err)
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		rec := httptestRecord(srv, method, "/service-accounts", "")
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.JSONEq(t, `{"detail":"Service Accounts not available: pass a `+"`db`"+` to AgentOS to enable this feature."}`, rec.Body.String())
	}
	require.Equal(t, http.StatusServiceUnavailable, httptestRecord(srv, http.MethodDelete, "/service-accounts/x", "").Code)
	rec := httptestRecord(srv, http.MethodGet, "/config", "agno_pat_abc")
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Contains(t, rec.Body.String(), "keeps no service accounts")
}
