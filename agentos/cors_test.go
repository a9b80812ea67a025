package agentos_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
)

const browserOrigin = "http://localhost:3000"

// send makes a request from a browser origin and returns the response with
// its body read.
func send(t *testing.T, s *server, method, path, origin string, header http.Header, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, body)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(data)
}

// preflight sends the OPTIONS request a browser sends before a POST with
// JSON or a token.
func preflight(t *testing.T, s *server, path, origin string) *http.Response {
	t.Helper()
	resp, _ := send(t, s, http.MethodOptions, path, origin, http.Header{
		"Access-Control-Request-Method":  {"POST"},
		"Access-Control-Request-Headers": {"content-type,authorization"},
	}, nil)
	return resp
}

func withKey(_ *agent.Config, o *agentos.Config) { o.Auth.SecurityKey = "s3cret" }

func TestCORSPreflightNeedsNoAuth(t *testing.T) {
	s := newServer(t, nil, withKey)
	for _, path := range []string{"/agents/assistant/runs", "/agents", "/config", "/sessions", "/no/such/route"} {
		resp := preflight(t, s, path, browserOrigin)
		require.True(t, resp.StatusCode >= 200 && resp.StatusCode < 300, "%s: preflight answered %d", path, resp.StatusCode)
		require.Equal(t, browserOrigin, resp.Header.Get("Access-Control-Allow-Origin"), path)
		require.Equal(t, "true", resp.Header.Get("Access-Control-Allow-Credentials"), path)
		methods := resp.Header.Get("Access-Control-Allow-Methods")
		for _, m := range []string{"GET", "POST", "PATCH", "DELETE"} {
			require.Contains(t, methods, m, path)
		}
		headers := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
		require.Contains(t, headers, "content-type", path)
		require.Contains(t, headers, "authorization", path)
	}

	// A preflight that names no headers still allows the ones browser
	// clients send.
	resp, _ := send(t, s, http.MethodOptions, "/agents", browserOrigin, http.Header{"Access-Control-Request-Method": {"DELETE"}}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	headers := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	require.Contains(t, headers, "content-type")
	require.Contains(t, headers, "authorization")

	// The real request after the preflight still needs the key, and its
	// 401 carries the CORS header so that the browser shows it.
	resp, body := send(t, s, http.MethodGet, "/agents", browserOrigin, nil, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, browserOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, body, `"detail"`)
	resp, _ = send(t, s, http.MethodGet, "/agents", browserOrigin, http.Header{"Authorization": {"Bearer s3cret"}}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, browserOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestCORSOnEveryResponse(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("Hello!")}, nil)
	form := func(values url.Values) (http.Header, io.Reader) {
		return http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, strings.NewReader(values.Encode())
	}

	// An SSE run.
	header, body := form(url.Values{"message": {"hi"}})
	resp, stream := send(t, s, http.MethodPost, "/agents/assistant/runs", browserOrigin, header, body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, browserOrigin, resp.Header.Get("Access-Control-Allow-Origin"), "SSE")
	require.Contains(t, stream, "event: RunCompleted")

	// JSON.
	resp, _ = send(t, s, http.MethodGet, "/agents", browserOrigin, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, browserOrigin, resp.Header.Get("Access-Control-Allow-Origin"), "JSON")
	require.Contains(t, resp.Header.Values("Vary"), "Origin")

	// Errors: a handler's 404, the router's 404, a 422.
	resp, errBody := send(t, s, http.MethodGet, "/agents/nobody", browserOrigin, nil, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, errBody, `"detail"`)
	require.Equal(t, browserOrigin, resp.Header.Get("Access-Control-Allow-Origin"), "404")
	resp, _ = send(t, s, http.MethodGet, "/no/such/route", browserOrigin, nil, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, browserOrigin, resp.Header.Get("Access-Control-Allow-Origin"), "router 404")
	header, body = form(url.Values{"stream": {"false"}})
	resp, _ = send(t, s, http.MethodPost, "/agents/assistant/runs", browserOrigin, header, body)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, browserOrigin, resp.Header.Get("Access-Control-Allow-Origin"), "422")

	// Each default origin is allowed.
	for _, origin := range []string{"https://agno.com", "https://www.agno.com", "https://app.agno.com", "https://os-stg.agno.com", "https://os.agno.com"} {
		resp, _ = send(t, s, http.MethodGet, "/health", origin, nil, nil)
		require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	// Without an Origin (curl, servers) nothing is added.
	resp, _ = send(t, s, http.MethodGet, "/agents", "", nil, nil)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestCORSUnknownOrigin(t *testing.T) {
	s := newServer(t, nil, nil)
	resp, _ := send(t, s, http.MethodGet, "/agents", "https://evil.example", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the request is served; the browser hides the answer")
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Credentials"))

	resp = preflight(t, s, "/agents/assistant/runs", "https://evil.example")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Methods"))

	// An origin differing only by port or scheme is another origin.
	for _, origin := range []string{"http://localhost:3001", "https://localhost:3000", "http://agno.com"} {
		resp, _ = send(t, s, http.MethodGet, "/health", origin, nil, nil)
		require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), origin)
	}
}

func TestCORSConfiguredOriginsReplaceDefaults(t *testing.T) {
	const mine = "https://chat.example.com"
	s := newServer(t, []scripted.Reply{scripted.Text("Hello!")}, func(_ *agent.Config, o *agentos.Config) {
		o.CORSAllowedOrigins = []string{mine}
	})
	resp := preflight(t, s, "/agents/assistant/runs", mine)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, mine, resp.Header.Get("Access-Control-Allow-Origin"))
	resp, _ = send(t, s, http.MethodGet, "/agents", mine, nil, nil)
	require.Equal(t, mine, resp.Header.Get("Access-Control-Allow-Origin"))

	// The defaults are gone.
	resp = preflight(t, s, "/agents/assistant/runs", browserOrigin)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	resp, _ = send(t, s, http.MethodGet, "/agents", browserOrigin, nil, nil)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	resp, _ = send(t, s, http.MethodGet, "/agents", "https://os.agno.com", nil, nil)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestCORSAnyOrigin(t *testing.T) {
	s := newServer(t, nil, func(_ *agent.Config, o *agentos.Config) { o.CORSAllowedOrigins = []string{"*"} })
	resp, _ := send(t, s, http.MethodGet, "/agents", "https://anything.example", nil, nil)
	require.Equal(t, "https://anything.example", resp.Header.Get("Access-Control-Allow-Origin"), "the origin itself: credentials forbid *")
}
