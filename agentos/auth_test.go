package agentos_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
)

// authKeys are the test's signing keys, generated once per test binary:
// no private key is ever committed.
type authKeys struct {
	rsa1, rsa2, rsaOther *rsa.PrivateKey
	ec                   *ecdsa.PrivateKey
}

var testAuthKeys = sync.OnceValue(func() authKeys {
	gen := func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		return k
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return authKeys{rsa1: gen(), rsa2: gen(), rsaOther: gen(), ec: ec}
})

const (
	testAudience = "agnogo-test-os"
	testHMAC     = "a-shared-secret-of-at-least-32-bytes!"
)

// publicPEM encodes a public key as PKIX PEM.
func publicPEM(t *testing.T, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// claims are a token's claims with a valid exp and the test audience,
// plus extra.
func claims(sub string, scopes any, extra ...any) jwt.MapClaims {
	c := jwt.MapClaims{"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "aud": testAudience}
	if sub != "" {
		c["sub"] = sub
	}
	if scopes != nil {
		c["scopes"] = scopes
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == nil {
			delete(c, extra[i].(string))
		} else {
			c[extra[i].(string)] = extra[i+1]
		}
	}
	return c
}

// sign signs claims with method and key.
func sign(t *testing.T, method jwt.SigningMethod, key any, c jwt.MapClaims, header ...string) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	for i := 0; i+1 < len(header); i += 2 {
		tok.Header[header[i]] = header[i+1]
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// rs256 is a token signed with the first RSA key.
func rs256(t *testing.T, sub string, scopes ...string) string {
	return sign(t, jwt.SigningMethodRS256, testAuthKeys().rsa1, claims(sub, scopes))
}

// authCall sends one request with an optional bearer token and form.
func authCall(t *testing.T, base, method, path, token string, form url.Values) *http.Response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// detail reads an error body's detail.
func detail(t *testing.T, resp *http.Response) string {
	t.Helper()
	body := decode[map[string]any](t, resp)
	d, _ := body["detail"].(string)
	return d
}

// rsaJWT is the usual JWT config of these tests: RS256 with two keys
// (rotation) and an audience.
func rsaJWT(t *testing.T) *agentos.JWTConfig {
	keys := testAuthKeys()
	return &agentos.JWTConfig{
		VerificationKeys: []string{publicPEM(t, &keys.rsa1.PublicKey), publicPEM(t, &keys.rsa2.PublicKey)},
		Audience:         testAudience,
	}
}

func withAuth(auth agentos.AuthConfig) func(*agent.Config, *agentos.Config) {
	return func(_ *agent.Config, c *agentos.Config) { c.Auth = auth }
}

func TestAuthOpenRoutes(t *testing.T) {
	s := newServer(t, nil, withAuth(agentos.AuthConfig{SecurityKey: "sk-test", JWT: rsaJWT(t)}))
	for _, path := range []string{"/", "/health", "/info"} {
		require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, path, "", nil).StatusCode, path)
	}
	pre, err := http.NewRequestWithContext(t.Context(), http.MethodOptions, s.URL+"/agents", nil)
	require.NoError(t, err)
	pre.Header.Set("Origin", "http://localhost:3000")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	resp, err := http.DefaultClient.Do(pre)
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, http.StatusUnauthorized, resp.StatusCode)
	require.Less(t, resp.StatusCode, 300)

	resp = authCall(t, s.URL, http.MethodGet, "/agents", "", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "Bearer", resp.Header.Get("WWW-Authenticate"))
}

func TestAuthSecurityKey(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("ok")}, withAuth(agentos.AuthConfig{SecurityKey: "sk-test"}))
	resp := authCall(t, s.URL, http.MethodGet, "/agents", "", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "Authorization header required", detail(t, resp))

	resp = authCall(t, s.URL, http.MethodGet, "/agents", "sk-wrong", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "Invalid authentication token", detail(t, resp))
	require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/agents", "sk-test-longer", nil).StatusCode)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/agents", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Basic sk-test")
	basic, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	basic.Body.Close()
	require.Equal(t, http.StatusUnauthorized, basic.StatusCode)

	resp = authCall(t, s.URL, http.MethodGet, "/agents", "sk-test", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, decode[[]map[string]any](t, resp), 1)
	// Security-key callers are admins: runs and config need no scope.
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/config", "sk-test", nil).StatusCode)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", "sk-test",
		url.Values{"message": {"hi"}, "stream": {"false"}}).StatusCode)
}

func TestAuthJWTVerification(t *testing.T) {
	keys := testAuthKeys()
	s := newServer(t, nil, withAuth(agentos.AuthConfig{SecurityKey: "sk-test", JWT: rsaJWT(t)}))
	read := []string{"agents:read"}
	valid := rs256(t, "alice", read...)
	tampered := func() string {
		parts := strings.Split(valid, ".")
		payload, err := json.Marshal(claims("alice", []string{"agent_os:admin"}))
		require.NoError(t, err)
		parts[1] = base64.RawURLEncoding.EncodeToString(payload)
		return strings.Join(parts, ".")
	}()
	none := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims("alice", []string{"agent_os:admin"}))
	// Algorithm confusion: HS256 keyed with the RSA public key the server trusts.
	confused := sign(t, jwt.SigningMethodHS256, []byte(publicPEM(t, &keys.rsa1.PublicKey)), claims("alice", []string{"agent_os:admin"}))
	past := time.Now().Add(-time.Hour).Unix()
	future := time.Now().Add(time.Hour).Unix()

	cases := []struct {
		name   string
		token  string
		status int
		detail string
	}{
		{"no token", "", http.StatusUnauthorized, "Authorization header missing"},
		{"security key under JWT", "sk-test", http.StatusUnauthorized, "Invalid token"},
		{"malformed", "not.a.jwt", http.StatusUnauthorized, "Invalid token"},
		{"valid RS256", valid, http.StatusOK, ""},
		{"scopes as a string", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("alice", "agents:read sessions:read")), http.StatusOK, ""},
		{"rotation: second key", sign(t, jwt.SigningMethodRS256, keys.rsa2, claims("alice", read)), http.StatusOK, ""},
		{"unknown key", sign(t, jwt.SigningMethodRS256, keys.rsaOther, claims("alice", read)), http.StatusUnauthorized, "signature is invalid"},
		{"tampered payload", tampered, http.StatusUnauthorized, "signature is invalid"},
		{"alg none", none, http.StatusUnauthorized, "Invalid token"},
		{"HS256 with the RSA public key as secret", confused, http.StatusUnauthorized, "Invalid token"},
		{"ES256 when RS256 is configured", sign(t, jwt.SigningMethodES256, keys.ec, claims("alice", read)), http.StatusUnauthorized, "Invalid token"},
		{"RS512 when RS256 is configured", sign(t, jwt.SigningMethodRS512, keys.rsa1, claims("alice", read)), http.StatusUnauthorized, "Invalid token"},
		{"expired", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("alice", read, "exp", past)), http.StatusUnauthorized, "Token has expired"},
		{"no exp", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("alice", read, "exp", nil)), http.StatusUnauthorized, "exp"},
		{"not yet valid", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("alice", read, "nbf", future)), http.StatusUnauthorized, "not valid yet"},
		{"issued in the future", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("alice", read, "iat", future)), http.StatusUnauthorized, "before issued"},
		{"wrong audience", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("alice", read, "aud", "another-os")), http.StatusUnauthorized, "Invalid token audience"},
		{"no audience", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("alice", read, "aud", nil)), http.StatusUnauthorized, "aud claim is required"},
		{"audience list", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("alice", read, "aud", []string{"x", testAudience})), http.StatusOK, ""},
		{"non-string subject", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("", read, "sub", 42)), http.StatusUnauthorized, "must be a string"},
		{"bad scopes claim", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("alice", 7)), http.StatusUnauthorized, "scopes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := authCall(t, s.URL, http.MethodGet, "/agents", tc.token, nil)
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.detail != "" {
				require.Contains(t, detail(t, resp), tc.detail)
			}
		})
	}
}

func TestAuthJWTOtherAlgorithms(t *testing.T) {
	keys := testAuthKeys()
	t.Run("ES256", func(t *testing.T) {
		s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: &agentos.JWTConfig{
			Algorithm: "ES256", VerificationKeys: []string{publicPEM(t, &keys.ec.PublicKey)},
		}}))
		require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents", sign(t, jwt.SigningMethodES256, keys.ec, claims("a", []string{"agents:read"})), nil).StatusCode)
		require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/agents", rs256(t, "a", "agents:read"), nil).StatusCode)
	})
	t.Run("HS256", func(t *testing.T) {
		s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: &agentos.JWTConfig{
			Algorithm: "HS256", VerificationKeys: []string{"an-old-secret-also-at-least-32-bytes", testHMAC},
		}}))
		require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents", sign(t, jwt.SigningMethodHS256, []byte(testHMAC), claims("a", []string{"agents:read"})), nil).StatusCode)
		require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/agents", sign(t, jwt.SigningMethodHS256, []byte("a-wrong-secret-of-at-least-32-bytes!!"), claims("a", []string{"agents:read"})), nil).StatusCode)
		require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/agents", rs256(t, "a", "agents:read"), nil).StatusCode)
	})
	t.Run("VerifyAudience defaults to the OS id", func(t *testing.T) {
		cfg := rsaJWT(t)
		cfg.Audience, cfg.VerifyAudience = "", true
		s := newServer(t, nil, func(_ *agent.Config, c *agentos.Config) {
			c.ID = "my-os"
			c.Auth = agentos.AuthConfig{JWT: cfg}
		})
		require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", []string{"agents:read"}, "aud", "my-os")), nil).StatusCode)
		require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/agents", rs256(t, "a", "agents:read"), nil).StatusCode)
	})
	t.Run("issuer and leeway", func(t *testing.T) {
		cfg := rsaJWT(t)
		cfg.Issuer, cfg.Leeway = "https://auth.example.com", time.Minute
		s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: cfg}))
		read := []string{"agents:read"}
		ours := sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", read, "iss", "https://auth.example.com"))
		require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents", ours, nil).StatusCode)
		for name, token := range map[string]string{
			"another issuer": sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", read, "iss", "https://evil.example.com")),
			"no issuer":      sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", read)),
		} {
			require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/agents", token, nil).StatusCode, name)
		}
		skewed := sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", read, "iss", "https://auth.example.com",
			"exp", time.Now().Add(-30*time.Second).Unix()))
		require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents", skewed, nil).StatusCode, "expired within the leeway")
		stale := sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", read, "iss", "https://auth.example.com",
			"exp", time.Now().Add(-2*time.Minute).Unix()))
		require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, http.MethodGet, "/agents", stale, nil).StatusCode, "expired past the leeway")
	})
	t.Run("no audience configured", func(t *testing.T) {
		cfg := rsaJWT(t)
		cfg.Audience = ""
		s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: cfg}))
		require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", []string{"agents:read"}, "aud", nil)), nil).StatusCode)
	})
}

// jwkOf is the public JWK of an RSA key.
func jwkOf(kid string, pub *rsa.PublicKey) map[string]any {
	return map[string]any{
		"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}
}

func TestAuthJWKSFile(t *testing.T) {
	keys := testAuthKeys()
	path := filepath.Join(t.TempDir(), "jwks.json")
	data, err := json.Marshal(map[string]any{"keys": []any{
		map[string]any{"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"}, // not for RS256: skipped
		jwkOf("k1", &keys.rsa1.PublicKey),
		jwkOf("k2", &keys.rsa2.PublicKey),
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: &agentos.JWTConfig{JWKSFile: path}}))
	scopes := []string{"agents:read"}
	for name, tc := range map[string]struct {
		token  string
		status int
	}{
		"kid k2":        {sign(t, jwt.SigningMethodRS256, keys.rsa2, claims("a", scopes), "kid", "k2"), http.StatusOK},
		"no kid":        {sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", scopes)), http.StatusOK},
		"wrong kid":     {sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", scopes), "kid", "k2"), http.StatusOK},
		"unknown key":   {sign(t, jwt.SigningMethodRS256, keys.rsaOther, claims("a", scopes), "kid", "k1"), http.StatusUnauthorized},
		"HS256 with n":  {sign(t, jwt.SigningMethodHS256, keys.rsa1.PublicKey.N.Bytes(), claims("a", scopes)), http.StatusUnauthorized},
		"expired by k1": {sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("a", scopes, "exp", time.Now().Add(-time.Minute).Unix()), "kid", "k1"), http.StatusUnauthorized},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.status, authCall(t, s.URL, http.MethodGet, "/agents", tc.token, nil).StatusCode)
		})
	}
}

func TestAuthConfigRefused(t *testing.T) {
	keys := testAuthKeys()
	rsaPEM := publicPEM(t, &keys.rsa1.PublicKey)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	for name, cfg := range map[string]agentos.JWTConfig{
		"alg none":               {Algorithm: "none", VerificationKeys: []string{rsaPEM}},
		"alg PS256":              {Algorithm: "PS256", VerificationKeys: []string{rsaPEM}},
		"no keys":                {},
		"HS256 with a PEM key":   {Algorithm: "HS256", VerificationKeys: []string{rsaPEM}},
		"HS256 short secret":     {Algorithm: "HS256", VerificationKeys: []string{"secret"}},
		"RS256 with a secret":    {VerificationKeys: []string{testHMAC}},
		"RS256 with an EC key":   {VerificationKeys: []string{publicPEM(t, &keys.ec.PublicKey)}},
		"RS256 with 1024 bits":   {VerificationKeys: []string{publicPEM(t, &small.PublicKey)}},
		"ES256 with a P-384 key": {Algorithm: "ES256", VerificationKeys: []string{publicPEM(t, &p384.PublicKey)}},
		"missing JWKS file":      {JWKSFile: filepath.Join(t.TempDir(), "nope.json")},
		"negative leeway":        {VerificationKeys: []string{rsaPEM}, Leeway: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := agentos.New(agentos.Config{Auth: agentos.AuthConfig{JWT: &cfg}})
			require.Error(t, err)
		})
	}
}

func TestAuthScopes(t *testing.T) {
	replies := []scripted.Reply{scripted.Text("1"), scripted.Text("2"), scripted.Text("3"), scripted.Text("4")}
	s := newServer(t, replies, withAuth(agentos.AuthConfig{JWT: rsaJWT(t)}))
	runForm := url.Values{"message": {"hi"}, "stream": {"false"}}

	resp := authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", rs256(t, "alice", "agents:read"), runForm)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope agents:assistant:run")

	resp = authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", rs256(t, "alice", "agents:other:run", "agents:assistant:read"), runForm)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope agents:assistant:run")

	for _, scopes := range [][]string{{"agents:run"}, {"agents:*:run"}, {"agents:assistant:run"}, {"agent_os:admin"}} {
		resp := authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", rs256(t, "alice", scopes...), runForm)
		require.Equal(t, http.StatusOK, resp.StatusCode, scopes)
	}
	// Cancel and continue need run too; reading a run needs read.
	resp = authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs/r1/cancel", rs256(t, "alice", "agents:read"), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope agents:assistant:run")
	resp = authCall(t, s.URL, http.MethodGet, "/agents/assistant/runs?session_id=s", rs256(t, "alice", "agents:run"), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope agents:assistant:read")

	// Routes outside the agent family need their global scope.
	resp = authCall(t, s.URL, http.MethodGet, "/config", rs256(t, "alice", "agents:read"), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope config:read")
	require.Equal(t, http.StatusForbidden, authCall(t, s.URL, http.MethodHead, "/config", rs256(t, "alice", "agents:read"), nil).StatusCode)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/config", rs256(t, "alice", "config:read"), nil).StatusCode)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/config", rs256(t, "alice", "system:read"), nil).StatusCode, "legacy alias")
	require.Equal(t, http.StatusForbidden, authCall(t, s.URL, http.MethodGet, "/config", rs256(t, "alice", "config:*:read:x", "config:write"), nil).StatusCode)
	resp = authCall(t, s.URL, http.MethodGet, "/sessions", rs256(t, "alice", "agents:read"), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope sessions:read")

	// A scope for one session passes the gate for that session only, and
	// lists nothing.
	one := rs256(t, "alice", "sessions:s1:read")
	require.NotEqual(t, http.StatusForbidden, authCall(t, s.URL, http.MethodGet, "/sessions/s1", one, nil).StatusCode)
	resp = authCall(t, s.URL, http.MethodGet, "/sessions/s2", one, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope sessions:s2:read")
	require.Equal(t, http.StatusForbidden, authCall(t, s.URL, http.MethodGet, "/sessions", one, nil).StatusCode)
	require.Equal(t, http.StatusForbidden, authCall(t, s.URL, http.MethodDelete, "/sessions", rs256(t, "alice", "sessions:*:read", "sessions:s1:delete"), nil).StatusCode)

	// The queue is admin only.
	resp = authCall(t, s.URL, http.MethodGet, "/queue/jobs", rs256(t, "alice", "agents:read", "config:read"), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "agent_os:admin")
	require.Equal(t, http.StatusServiceUnavailable, authCall(t, s.URL, http.MethodGet, "/queue/jobs", rs256(t, "root", "agent_os:admin"), nil).StatusCode,
		"an admin gets through to the route, which needs a durable queue")
}

func TestAuthCustomClaimsAndAdminScope(t *testing.T) {
	cfg := rsaJWT(t)
	cfg.UserIDClaim, cfg.ScopesClaim, cfg.AdminScope = "uid", "permissions", "root"
	s := newServer(t, nil, withAuth(agentos.AuthConfig{JWT: cfg}))
	keys := testAuthKeys()
	tok := sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("", nil, "permissions", []string{"config:read"}, "uid", "alice"))
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/config", tok, nil).StatusCode)
	// The default claim names mean nothing now.
	require.Equal(t, http.StatusForbidden, authCall(t, s.URL, http.MethodGet, "/config", rs256(t, "alice", "config:read"), nil).StatusCode)
	require.Equal(t, http.StatusForbidden, authCall(t, s.URL, http.MethodGet, "/config", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("", nil, "permissions", "agent_os:admin")), nil).StatusCode)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/config", sign(t, jwt.SigningMethodRS256, keys.rsa1, claims("", nil, "permissions", "root")), nil).StatusCode)
}

// twoAgentServer serves agents "assistant" and "helper" under auth.
func twoAgentServer(t *testing.T, auth agentos.AuthConfig) *httptest.Server {
	t.Helper()
	var runners []run.Runner
	for _, id := range []string{"assistant", "helper"} {
		a, err := agent.New(agent.Config{ID: id, Name: id, Model: scripted.New(nil)})
		require.NoError(t, err)
		runners = append(runners, a)
	}
	srv, err := agentos.New(agentos.Config{Runners: runners, Auth: auth})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

func TestAuthAgentListFiltered(t *testing.T) {
	ts := twoAgentServer(t, agentos.AuthConfig{JWT: rsaJWT(t)})
	ids := func(scopes ...string) []string {
		resp := authCall(t, ts.URL, http.MethodGet, "/agents", rs256(t, "alice", scopes...), nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		out := []string{}
		for _, a := range decode[[]map[string]any](t, resp) {
			out = append(out, a["id"].(string))
		}
		return out
	}
	require.Equal(t, []string{"assistant", "helper"}, ids("agents:read"))
	require.Equal(t, []string{"assistant", "helper"}, ids("agents:*:read"))
	require.Equal(t, []string{"assistant", "helper"}, ids("agent_os:admin"))
	require.Equal(t, []string{"helper"}, ids("agents:helper:read"))
	require.Equal(t, []string{"assistant", "helper"}, ids("agents:helper:read", "agents:assistant:read"))
	require.Empty(t, ids("agents:helper:run"), "listing needs read")
	require.Empty(t, ids("sessions:read"))
	require.Empty(t, ids())

	require.Equal(t, http.StatusOK, authCall(t, ts.URL, http.MethodGet, "/agents/helper", rs256(t, "alice", "agents:helper:read"), nil).StatusCode)
	resp := authCall(t, ts.URL, http.MethodGet, "/agents/assistant", rs256(t, "alice", "agents:helper:read"), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "missing scope agents:assistant:read")
	// An escaped slash does not let one agent's scope reach another path.
	resp = authCall(t, ts.URL, http.MethodGet, "/agents/helper%2Fx", rs256(t, "alice", "agents:helper:read"), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestAuthUserIsolation(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, []scripted.Reply{
		scripted.Text("hello alice"),
		scripted.Respond(func(*model.Request) scripted.Reply { <-release; return scripted.Text("slow") }),
	}, withAuth(agentos.AuthConfig{JWT: rsaJWT(t), UserIsolation: true}))
	user := []string{"agents:run", "agents:read", "sessions:read"}
	alice, bob := rs256(t, "alice", user...), rs256(t, "bob", user...)
	admin := rs256(t, "root", "agent_os:admin")

	// Alice's run is hers, whatever user_id the form names.
	resp := authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", alice,
		url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}, "user_id": {"bob"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := decode[map[string]any](t, resp)
	runID := out["run_id"].(string)
	require.Equal(t, "alice", out["user_id"])
	rec, err := s.store.GetRun(t.Context(), runID, "alice")
	require.NoError(t, err)
	require.Equal(t, "alice", rec.UserID)
	_, err = s.store.GetRun(t.Context(), runID, "bob")
	require.Error(t, err)

	runPath := "/agents/assistant/runs/" + runID + "?session_id=s1"
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, runPath, alice, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, authCall(t, s.URL, http.MethodGet, runPath, bob, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, authCall(t, s.URL, http.MethodGet, runPath+"&user_id=alice", bob, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs/"+runID+"/cancel?session_id=s1", bob, nil).StatusCode)
	runs := decode[[]map[string]any](t, authCall(t, s.URL, http.MethodGet, "/agents/assistant/runs?session_id=s1", bob, nil))
	require.Empty(t, runs)
	runs = decode[[]map[string]any](t, authCall(t, s.URL, http.MethodGet, "/agents/assistant/runs?session_id=s1", alice, nil))
	require.Len(t, runs, 1)
	// Admins are never scoped.
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, runPath, admin, nil).StatusCode)

	// Bob cannot cancel Alice's run while it is in flight either.
	live := authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", alice, url.Values{"message": {"again"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, live.StatusCode)
	reader := bufio.NewReader(live.Body)
	var liveRunID string
	for liveRunID == "" {
		line, err := reader.ReadString('\n')
		require.NoError(t, err)
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			var event map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &event))
			liveRunID, _ = event["run_id"].(string)
		}
	}
	require.Equal(t, http.StatusNotFound, authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs/"+liveRunID+"/cancel?session_id=s1", bob, nil).StatusCode)
	close(release)
	rest, err := io.ReadAll(reader)
	require.NoError(t, err)
	require.Contains(t, string(rest), "RunCompleted")
	require.NotContains(t, string(rest), "RunCancelled")

	// A token without identity is refused on every route needing credentials.
	anonymous := rs256(t, "", user...)
	for _, call := range []struct{ method, path string }{
		{http.MethodGet, "/agents"},
		{http.MethodGet, "/agents/assistant/runs?session_id=s1"},
		{http.MethodPost, "/agents/assistant/runs"},
		{http.MethodGet, "/sessions"},
	} {
		resp := authCall(t, s.URL, call.method, call.path, anonymous, url.Values{"message": {"hi"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, call.path)
		require.Contains(t, detail(t, resp), "no user identity")
	}
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/health", anonymous, nil).StatusCode)
	// An admin needs no identity.
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents", rs256(t, "", "agent_os:admin"), nil).StatusCode)
}

func TestAuthNoIsolationByDefault(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("hi")}, withAuth(agentos.AuthConfig{JWT: rsaJWT(t)}))
	user := []string{"agents:run", "agents:read"}
	resp := authCall(t, s.URL, http.MethodPost, "/agents/assistant/runs", rs256(t, "alice", user...),
		url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}, "user_id": {"carol"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := decode[map[string]any](t, resp)
	require.Equal(t, "carol", out["user_id"], "without isolation the form's user_id is kept")
	// Any caller with the scope may read it (Agno's documented default).
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents/assistant/runs/"+out["run_id"].(string)+"?session_id=s1", rs256(t, "bob", user...), nil).StatusCode)
	// And a token without a subject is fine.
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents", rs256(t, "", user...), nil).StatusCode)
}

func TestAuthNoneIsAdmin(t *testing.T) {
	s := newServer(t, nil, withAuth(agentos.AuthConfig{UserIsolation: true}))
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/config", "", nil).StatusCode)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/agents", "anything", nil).StatusCode)
}

func TestAuthValidateOnly(t *testing.T) {
	cfg := rsaJWT(t)
	cfg.ValidateOnly = true
	ts := twoAgentServer(t, agentos.AuthConfig{JWT: cfg})
	noScopes := rs256(t, "alice")
	require.Equal(t, http.StatusUnauthorized, authCall(t, ts.URL, http.MethodGet, "/agents", "", nil).StatusCode)
	resp := authCall(t, ts.URL, http.MethodGet, "/agents", noScopes, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, decode[[]map[string]any](t, resp), 2)
	require.Equal(t, http.StatusOK, authCall(t, ts.URL, http.MethodGet, "/config", noScopes, nil).StatusCode)
	// The queue stays admin only.
	require.Equal(t, http.StatusForbidden, authCall(t, ts.URL, http.MethodGet, "/queue/jobs", noScopes, nil).StatusCode)
}
