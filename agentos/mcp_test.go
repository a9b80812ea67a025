package agentos_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/tool"
)

// mcpClient connects an MCP client to the server's /mcp with an optional
// bearer token.
func mcpClient(t *testing.T, base, token string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	httpClient := &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
	session, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: httpClient}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	return session
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

func callTool(t *testing.T, s *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func withMCP(configure func(*agent.Config, *agentos.Config)) func(*agent.Config, *agentos.Config) {
	return func(a *agent.Config, c *agentos.Config) {
		c.MCPServer = &agentos.MCPServerConfig{Enabled: true}
		if configure != nil {
			configure(a, c)
		}
	}
}

// TestMCPServerRunsAgentsLikeREST: an MCP client lists the built-in
// tools, runs the agent (answer as text, {run_id, session_id, status} as
// structured content), pauses and continues it, reads its session's runs
// and the config; /info reports the server.
func TestMCPServerRunsAgentsLikeREST(t *testing.T) {
	deploy, err := tool.New(tool.Config{Name: "deploy", RequiresConfirmation: true}, func(context.Context, struct{}) (string, error) {
		return "deployed", nil
	})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.Text("hello from the agent"), scripted.ToolCall("deploy", `{}`), scripted.Text("Deployed.")},
		withMCP(func(a *agent.Config, _ *agentos.Config) { a.Tools = []tool.Tool{deploy} }))
	info := decode[map[string]any](t, s.get(t, "/info"))
	require.Equal(t, map[string]any{"enabled": true, "path": "/mcp", "oauth": nil}, info["mcp"])

	c := mcpClient(t, s.URL, "")
	var names []string
	for tl, err := range c.Tools(t.Context(), nil) {
		require.NoError(t, err)
		names = append(names, tl.Name)
	}
	require.ElementsMatch(t, []string{"get_agentos_config", "run_agent", "run_team", "run_workflow", "continue_run", "cancel_run",
		"get_sessions", "get_session_runs"}, names)

	res := callTool(t, c, "run_agent", map[string]any{"agent_id": "assistant", "message": "hi", "session_id": "s1"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "hello from the agent", text(res))
	structured := res.StructuredContent.(map[string]any)
	require.Equal(t, "COMPLETED", structured["status"])
	require.Equal(t, "s1", structured["session_id"])
	runID := structured["run_id"].(string)
	stored := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID))
	require.Equal(t, "hello from the agent", stored["content"], "the run is a run like any other")

	paused := callTool(t, c, "run_agent", map[string]any{"agent_id": "assistant", "message": "deploy", "session_id": "s1"})
	require.Equal(t, "Run paused: 1 requirement(s) awaiting resolution.", text(paused))
	pausedRun := paused.StructuredContent.(map[string]any)
	require.Equal(t, "PAUSED", pausedRun["status"])
	reqs := pausedRun["requirements"].([]any)
	reqs[0].(map[string]any)["confirmation"] = true
	done := callTool(t, c, "continue_run", map[string]any{"run_id": pausedRun["run_id"], "agent_id": "assistant", "session_id": "s1", "requirements": reqs})
	require.False(t, done.IsError, text(done))
	require.Equal(t, "Deployed.", text(done))

	runs := callTool(t, c, "get_session_runs", map[string]any{"session_id": "s1"})
	require.False(t, runs.IsError, text(runs))
	list := runs.StructuredContent.(map[string]any)["runs"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, runID, list[0].(map[string]any)["run_id"])
	require.NotContains(t, list[0], "messages", "trimmed to the run's summary")

	config := callTool(t, c, "get_agentos_config", nil)
	require.False(t, config.IsError, text(config))
	require.Len(t, config.StructuredContent.(map[string]any)["agents"], 1)

	bad := callTool(t, c, "cancel_run", map[string]any{"run_id": "x"})
	require.True(t, bad.IsError)
	require.Contains(t, text(bad), "exactly one of agent_id, team_id, workflow_id")
	missing := callTool(t, c, "run_agent", map[string]any{"agent_id": "nobody", "message": "hi"})
	require.True(t, missing.IsError)
	require.Contains(t, text(missing), "404")
}

// TestMCPServerChecksTheRESTScopes: each tool is allowed exactly what its
// REST route allows the caller, and under user isolation a run belongs to
// the caller whatever user_id the arguments name.
func TestMCPServerChecksTheRESTScopes(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("for alice")},
		withMCP(withAuth(agentos.AuthConfig{JWT: rsaJWT(t), UserIsolation: true})))
	reader := mcpClient(t, s.URL, rs256(t, "carol", "agents:read", "sessions:read"))
	refused := callTool(t, reader, "run_agent", map[string]any{"agent_id": "assistant", "message": "hi"})
	require.True(t, refused.IsError)
	require.Contains(t, text(refused), "403")
	require.Contains(t, text(refused), "agents:run")
	require.Empty(t, s.model.Requests(), "the refused tool ran nothing")

	alice := mcpClient(t, s.URL, rs256(t, "alice", "agents:run", "agents:read", "sessions:read"))
	res := callTool(t, alice, "run_agent", map[string]any{"agent_id": "assistant", "message": "hi", "session_id": "s1", "user_id": "bob"})
	require.False(t, res.IsError, text(res))
	runID := res.StructuredContent.(map[string]any)["run_id"].(string)
	rec, err := s.store.GetRun(t.Context(), runID, "alice")
	require.NoError(t, err, "the run is alice's")
	require.Equal(t, "alice", rec.UserID)

	bob := mcpClient(t, s.URL, rs256(t, "bob", "agents:run", "agents:read", "sessions:read"))
	theirs := callTool(t, bob, "get_session_runs", map[string]any{"session_id": "s1"})
	require.NotContains(t, text(theirs), "for alice", "bob never reads alice's answers")
	require.NotContains(t, text(theirs), runID, "bob never sees alice's runs")
	require.True(t, theirs.IsError || len(theirs.StructuredContent.(map[string]any)["runs"].([]any)) == 0, "bob never sees alice's runs: %s", text(theirs))
	mine := callTool(t, alice, "get_session_runs", map[string]any{"session_id": "s1"})
	require.Contains(t, text(mine), runID, "the same call shows alice her own run")

	// No token: the MCP route itself is refused like any other.
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	_, err = client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: s.URL + "/mcp"}, nil)
	require.Error(t, err)
}

// TestMCPServerRefusesForeignOrigins: a server without auth answers this
// machine only, and no browser origin but localhost's; when MCP is off,
// /mcp answers 503.
func TestMCPServerRefusesForeignOrigins(t *testing.T) {
	s := newServer(t, nil, withMCP(nil))
	post := func(origin, host string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/mcp", strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post("https://evil.example", "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var body map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "invalid_origin", body["error"])
	require.Equal(t, http.StatusBadRequest, post("", "agents.example.com").StatusCode, "an open server answers localhost only")
	local := post("http://localhost:3000", "")
	require.NotContains(t, readAll(t, local), "invalid_origin", "a localhost origin reaches the MCP server")

	off := newServer(t, nil, nil)
	require.Equal(t, http.StatusServiceUnavailable, off.postForm(t, "/mcp", nil).StatusCode)
	info := decode[map[string]any](t, off.get(t, "/info"))
	require.Equal(t, map[string]any{"enabled": false, "path": nil, "oauth": nil}, info["mcp"])
}

// TestMCPServerCustomTools: a custom Go tool is served beside the built-in
// ones; its calls are validated, need mcp_tools:<name>:run under JWT
// scopes, and know their caller.
func TestMCPServerCustomTools(t *testing.T) {
	type greetArgs struct {
		Name string `json:"name"`
	}
	greet := tool.MustNew(tool.Config{Name: "greet", Description: "Greet someone."}, func(ctx context.Context, a greetArgs) (string, error) {
		caller, _ := agentos.CallerFromContext(ctx)
		return "hello " + a.Name + " from " + caller.Subject, nil
	})
	confirm := tool.MustNew(tool.Config{Name: "deploy", RequiresConfirmation: true}, func(context.Context, struct{}) (string, error) {
		return "deployed", nil
	})
	s := newServer(t, nil, func(a *agent.Config, c *agentos.Config) {
		withAuth(agentos.AuthConfig{JWT: rsaJWT(t)})(a, c)
		c.MCPServer = &agentos.MCPServerConfig{Enabled: true, Tools: []tool.Tool{greet, confirm}}
	})
	granted := mcpClient(t, s.URL, rs256(t, "alice", "mcp_tools:greet:run", "mcp_tools:deploy:run"))
	tools, err := granted.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var names []string
	for _, listed := range tools.Tools {
		names = append(names, listed.Name)
	}
	require.Contains(t, names, "greet")
	require.Contains(t, names, "run_agent")

	res := callTool(t, granted, "greet", map[string]any{"name": "Bob"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "hello Bob from alice", text(res))
	bad := callTool(t, granted, "greet", map[string]any{"name": 7})
	require.True(t, bad.IsError)
	require.Contains(t, text(bad), `property "name"`)
	waits := callTool(t, granted, "deploy", nil)
	require.True(t, waits.IsError)
	require.Contains(t, text(waits), "waits for a person")

	refused := callTool(t, mcpClient(t, s.URL, rs256(t, "carol", "agents:run")), "greet", map[string]any{"name": "Bob"})
	require.True(t, refused.IsError)
	require.Contains(t, text(refused), "403 Forbidden: Insufficient permissions: missing scope mcp_tools:greet:run")
}
