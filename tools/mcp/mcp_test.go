package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/tools/mcp"
)

// serverEnv makes this test binary an MCP server on stdio (see TestMain).
const serverEnv = "AGNOGO_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		if err := testServer(nil).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// testServer is an MCP server with tools of every result kind; headers
// records the Authorization header of each HTTP call.
func testServer(headers *atomic.Value) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text."}, func(_ context.Context, req *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
		if headers != nil && req.Extra != nil {
			headers.Store(req.Extra.Header.Get("Authorization") + "|" + req.Extra.Header.Get("X-User"))
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "stats", Description: "Structured only."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, map[string]int, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{}}, map[string]int{"files": 3}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Kills the server."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		os.Exit(3) // a server killed mid-call
		return nil, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "picture", Description: "Returns an image and a resource."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.ImageContent{Data: []byte("png-bytes"), MIMEType: "image/png"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "hello"}},
		}}, nil, nil
	})
	return s
}

// httpServer serves testServer over Streamable HTTP; swap replaces the
// handler (a server that restarted and forgot its sessions).
func httpServer(t *testing.T, headers *atomic.Value) (*httptest.Server, func()) {
	t.Helper()
	var handler atomic.Value
	newHandler := func() http.Handler {
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return testServer(headers) }, nil)
	}
	handler.Store(newHandler())
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, func() { handler.Store(newHandler()) }
}

func names(tools []tool.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Spec().Name)
	}
	return out
}

func find(t *testing.T, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s in %v", name, names(tools))
	return nil
}

func TestStdioServerToolsAreAgentTools(t *testing.T) {
	s, err := mcp.Connect(t.Context(), mcp.Config{Name: "local", Command: os.Args[0], Env: map[string]string{serverEnv: "1"},
		ExcludeTools: []string{"picture", "crash"}, ToolNamePrefix: "local_", RequiresConfirmationTools: []string{"fail"}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	tools := s.Tools()
	require.ElementsMatch(t, []string{"local_echo", "local_fail", "local_stats"}, names(tools))
	echo := find(t, tools, "local_echo")
	require.Equal(t, "Echoes text.", echo.Spec().Description)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(echo.Spec().Parameters, &schema))
	require.Contains(t, schema["properties"], "text", "the server's input schema")
	require.True(t, find(t, tools, "local_fail").Spec().RequiresConfirmation)
	require.False(t, echo.Spec().RequiresConfirmation)

	out, err := echo.Call(t.Context(), json.RawMessage(`{"text":"hi"}`))
	require.NoError(t, err)
	require.Equal(t, "echo: hi", out)
	out, err = find(t, tools, "local_stats").Call(t.Context(), json.RawMessage(`{}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"files":3}`, out, "no text: the structured content")
	_, err = find(t, tools, "local_fail").Call(t.Context(), json.RawMessage(`{}`))
	require.EqualError(t, err, "Error from MCP tool 'fail': disk full")
}

func TestHTTPServerHeadersResultsAndReconnect(t *testing.T) {
	var headers atomic.Value
	ts, restart := httpServer(t, &headers)
	s, err := mcp.Connect(t.Context(), mcp.Config{Name: "remote", Type: "http", URL: ts.URL,
		Headers:        map[string]string{"Authorization": "Bearer secret"},
		HeaderProvider: func(ctx context.Context) map[string]string { return map[string]string{"X-User": "ada"} },
		IncludeTools:   []string{"echo", "picture"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	tools := s.Tools()
	require.ElementsMatch(t, []string{"echo", "picture"}, names(tools), "tools keep the server's names")

	out, err := find(t, tools, "echo").Call(t.Context(), json.RawMessage(`{"text":"one"}`))
	require.NoError(t, err)
	require.Equal(t, "echo: one", out)
	require.Equal(t, "Bearer secret|ada", headers.Load())

	out, err = find(t, tools, "picture").Call(t.Context(), json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Contains(t, out, "Image has been generated and added to the response (image/png, 9 bytes).")
	require.Contains(t, out, `[Embedded resource: {"uri":"file:///a.txt","mimeType":"text/plain","text":"hello"}]`)

	// The server restarts and forgets the session: the call connects again.
	restart()
	out, err = find(t, tools, "echo").Call(t.Context(), json.RawMessage(`{"text":"two"}`))
	require.NoError(t, err)
	require.Equal(t, "echo: two", out)

	// The server is gone: the call fails with what happened, no panic.
	ts.Close()
	_, err = find(t, tools, "echo").Call(t.Context(), json.RawMessage(`{"text":"three"}`))
	require.Error(t, err)
	require.Contains(t, err.Error(), "MCP tool 'echo' failed")
}

func TestBadConfigsAreRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  mcp.Config
		want string
	}{
		"shell":       {mcp.Config{Command: "npx", Args: []string{"server; rm -rf /"}}, "shell metacharacter"},
		"neither":     {mcp.Config{}, "give a command"},
		"both":        {mcp.Config{Command: "x", URL: "http://x"}, "not both"},
		"bad url":     {mcp.Config{URL: "ftp://x"}, "want an http"},
		"bad type":    {mcp.Config{Type: "grpc", URL: "http://x"}, "not one of stdio"},
		"unreachable": {mcp.Config{URL: "http://127.0.0.1:1/mcp"}, "connect"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := mcp.Connect(t.Context(), tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestAgentCallsAnMCPTool: an agent's model calls an MCP server's tool and
// answers with its result; a failed call is a tool result the model reads,
// and the run goes on.
func TestAgentCallsAnMCPTool(t *testing.T) {
	ts, _ := httpServer(t, nil)
	s, err := mcp.Connect(t.Context(), mcp.Config{URL: ts.URL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	m := scripted.New([]scripted.Reply{
		scripted.ToolCall("echo", `{"text":"ping"}`),
		scripted.ToolCall("fail", `{}`),
		scripted.ToolCall("picture", `{}`),
		scripted.Text("done"),
	})
	a, err := agent.New(agent.Config{ID: "a", Model: m, Tools: s.Tools()})
	require.NoError(t, err)
	out, err := a.Run(t.Context(), &run.Input{InputContent: "go"})
	require.NoError(t, err)
	require.Equal(t, "done", out.Content)
	require.Len(t, out.Tools, 3)
	require.Equal(t, "echo: ping", *out.Tools[0].Result)
	require.True(t, *out.Tools[1].ToolCallError)
	require.Len(t, out.Images, 1, "the server's image is one of the run's images")
	require.Equal(t, "image/png", out.Images[0].MimeType)
	require.Equal(t, []byte("png-bytes"), out.Images[0].Content)
	requests := m.Requests()
	failed := requests[2].Messages
	require.True(t, strings.Contains(fmt.Sprint(failed[len(failed)-1].Content), "disk full"), "the model reads the failure")
}

// TestKilledServerIsAToolErrorAndTheRunCompletes: a stdio server dies in
// the middle of a call; the call is a failed tool call the model reads,
// the next call starts the server again, and the run completes.
func TestKilledServerIsAToolErrorAndTheRunCompletes(t *testing.T) {
	s, err := mcp.Connect(t.Context(), mcp.Config{Name: "local", Command: os.Args[0], Env: map[string]string{serverEnv: "1"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	m := scripted.New([]scripted.Reply{
		scripted.ToolCall("crash", `{}`),
		scripted.ToolCall("echo", `{"text":"after"}`),
		scripted.Text("done"),
	})
	a, err := agent.New(agent.Config{ID: "a", Model: m, Tools: s.Tools()})
	require.NoError(t, err)
	out, err := a.Run(t.Context(), &run.Input{InputContent: "go"})
	require.NoError(t, err)
	require.Equal(t, "done", out.Content)
	require.True(t, *out.Tools[0].ToolCallError, "the killed server's call failed")
	require.Contains(t, *out.Tools[0].Result, "MCP tool 'crash' failed")
	require.Equal(t, "echo: after", *out.Tools[1].Result, "the server was started again")
}
