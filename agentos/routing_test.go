package agentos_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
)

func call(t *testing.T, method, url string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

// A path no route serves is a JSON 404, a method a path does not allow a
// JSON 405 naming the methods it does, as FastAPI answers them; a trailing
// slash is not part of a route.
func TestUnroutedRequestsAnswerJSON(t *testing.T) {
	s := newServer(t, nil, nil)

	resp, body := call(t, http.MethodGet, s.URL+"/no/such/route", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.JSONEq(t, `{"detail":"Not Found"}`, string(body))

	resp, body = call(t, http.MethodDelete, s.URL+"/agents", nil)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.JSONEq(t, `{"detail":"Method Not Allowed"}`, string(body))
	require.Contains(t, resp.Header.Get("Allow"), "GET")

	resp, body = call(t, http.MethodGet, s.URL+"/agents/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var agents []map[string]any
	require.NoError(t, json.Unmarshal(body, &agents))
	require.Len(t, agents, 1)

	resp, body = call(t, http.MethodGet, s.URL+"/agents/assistant/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))

	// A route's own 404 keeps its detail.
	resp, body = call(t, http.MethodGet, s.URL+"/agents/nobody", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.NotContains(t, string(body), `"Not Found"`)
}

// Every method and sub-path of a feature this server does not run answers
// 503 with a detail naming it, never a bare 404.
func TestFeaturesNotRunAnswer503(t *testing.T) {
	s := newServer(t, nil, nil)
	for _, c := range []struct{ method, path, tag string }{
		{http.MethodGet, "/knowledge/content", "Knowledge"},
		{http.MethodPost, "/knowledge/content", "Knowledge"},
		{http.MethodGet, "/eval-runs", "Evals"},
		{http.MethodGet, "/components/c1/configs", "Components"},
		{http.MethodGet, "/registry", "Registry"},
		{http.MethodGet, "/learnings", "Learnings"},
		{http.MethodPost, "/mcp", "MCP"},
	} {
		resp, body := call(t, c.method, s.URL+c.path, nil)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s %s", c.method, c.path)
		var got struct{ Detail string }
		require.NoError(t, json.Unmarshal(body, &got))
		require.True(t, strings.HasPrefix(got.Detail, c.tag+" not available"), "%s %s: %s", c.method, c.path, got.Detail)
	}
}

// lockedBuffer is a log sink several requests write to at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Each request is logged once answered, with its method, path, status,
// duration in seconds and request id; a client's X-Request-ID is kept and
// echoed, else one is made.
func TestAccessLog(t *testing.T) {
	var logs lockedBuffer
	s := newServer(t, []scripted.Reply{scripted.Text("hi")}, func(_ *agent.Config, c *agentos.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})

	resp, _ := call(t, http.MethodGet, s.URL+"/health", http.Header{"X-Request-Id": {"req-42"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "req-42", resp.Header.Get("X-Request-ID"))

	resp, _ = call(t, http.MethodGet, s.URL+"/no/such/route", http.Header{"X-Request-Id": {"bad id with spaces"}})
	made := resp.Header.Get("X-Request-ID")
	require.NotEmpty(t, made)
	require.NotEqual(t, "bad id with spaces", made)

	var health, missing map[string]any
	for _, l := range logs.lines() {
		if l["msg"] != "request" {
			continue
		}
		switch l["path"] {
		case "/health":
			health = l
		case "/no/such/route":
			missing = l
		}
	}
	require.NotNil(t, health, "the /health request is logged")
	require.Equal(t, "GET", health["method"])
	require.EqualValues(t, 200, health["status"])
	require.Equal(t, "req-42", health["request_id"])
	require.Equal(t, "INFO", health["level"])
	d, ok := health["duration_s"].(float64)
	require.True(t, ok, "duration in seconds, a number: %v", health["duration_s"])
	require.Less(t, d, 60.0)
	require.NotNil(t, missing)
	require.EqualValues(t, 404, missing["status"])
	require.Equal(t, "WARN", missing["level"])
	require.Equal(t, made, missing["request_id"])
}
