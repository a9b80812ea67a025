package config

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/run"
)

// mcpServerEnv makes this test binary an MCP server on stdio (see
// TestMain); mcpPIDFileEnv names the file it writes its process id to.
const (
	mcpServerEnv  = "AGNOGO_CONFIG_MCP_TEST_SERVER"
	mcpPIDFileEnv = "AGNOGO_CONFIG_MCP_TEST_PID_FILE"
)

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerEnv) == "1" {
		if path := os.Getenv(mcpPIDFileEnv); path != "" {
			_ = os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o600)
		}
		if err := stdioMCPServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type mcpTextArgs struct {
	Text string `json:"text" jsonschema:"the text"`
}

type mcpPathArgs struct {
	Path string `json:"path" jsonschema:"the file's path"`
}

// stdioMCPServer is the stdio test server: a read_file tool (the name of a
// workspace tool).
func stdioMCPServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "fs", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "read_file", Description: "Reads a file."}, func(_ context.Context, _ *sdk.CallToolRequest, in mcpPathArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "contents of " + in.Path}}}, nil, nil
	})
	return s
}

// httpMCPServer serves an echo tool over Streamable HTTP, recording the
// Authorization header of each call.
func httpMCPServer(t *testing.T, authorization *atomic.Value) *httptest.Server {
	t.Helper()
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: "remote", Version: "1"}, nil)
		sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text."}, func(_ context.Context, req *sdk.CallToolRequest, in mcpTextArgs) (*sdk.CallToolResult, any, error) {
			if req.Extra != nil {
				authorization.Store(req.Extra.Header.Get("Authorization"))
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
		return s
	}, nil)
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	return ts
}

// mcpFileValues are the variables of the tests' files: the fake model, a
// new database, the test binary as a stdio server writing its pid to a
// file, the HTTP server's URL and a token.
func mcpFileValues(t *testing.T, fake *fakeopenai.Server, mcpURL string) (map[string]string, string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "server.pid")
	return map[string]string{
		"FAKE_URL": fake.URL, "DB": "sqlite://" + filepath.Join(t.TempDir(), "agnogo.db"),
		"SERVER_BIN": os.Args[0], "PID_FILE": pidFile, "MCP_URL": mcpURL, "TOKEN": "secret-token",
	}, pidFile
}

// mcpServersYAML is the documented example with the servers replaced by
// the test binary and the test HTTP server.
const mcpServersYAML = `
db: ${DB}
models:
  fake: {provider: openai, id: gpt-test, base_url: "${FAKE_URL}", api_key: sk-fake}
agents:
  - id: files
    model: fake
    mcp_servers:
      fs: {command: "${SERVER_BIN}", args: [-test.run=none], env: {` + mcpServerEnv + `: "1", ` + mcpPIDFileEnv + `: "${PID_FILE}"}}
      remote: {type: http, url: "${MCP_URL}", headers: {Authorization: "Bearer ${TOKEN}"}}
`

// serverPID reads the stdio server's process id from pidFile.
func serverPID(t *testing.T, pidFile string) int {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err, "the stdio server started")
	pid, err := strconv.Atoi(string(data))
	require.NoError(t, err)
	return pid
}

// running reports whether the process pid runs.
func running(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

// requireStopped waits until the process whose id is in pidFile has ended.
func requireStopped(t *testing.T, pidFile string) {
	t.Helper()
	pid := serverPID(t, pidFile)
	require.Eventually(t, func() bool { return !running(pid) }, 10*time.Second, 20*time.Millisecond,
		"the stdio server's process %d is still running", pid)
}

func TestMCPServersExampleParses(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
agents:
  - id: files
    model: fake
    mcp_servers:
      fs: {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", ./data]}
      remote: {type: http, url: "http://127.0.0.1:9000/mcp", headers: {Authorization: "Bearer ${TOKEN}"}}
models:
  fake: {provider: openai, id: gpt-test}
`, map[string]string{"TOKEN": "t0k"})
	a := file.Agents[0]
	require.Equal(t, []*MCPServer{
		{Name: "fs", Type: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "./data"}, Line: 6},
		{Name: "remote", Type: "http", URL: "http://127.0.0.1:9000/mcp", Headers: map[string]string{"Authorization": "Bearer t0k"}, Line: 7},
	}, a.MCP)
	require.Nil(t, a.MCPServers, "a native agent's servers are not the claude CLI's")
}

func TestMCPServerEveryKey(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
agents:
  - id: a
    mcp_servers:
      local:
        type: stdio
        command: ./server
        args: [--root, /srv]
        env: {ROOT: /srv}
        cwd: ./tools
        timeout_seconds: 2.5
        include_tools: [read, write, stat]
        exclude_tools: [delete]
        tool_name_prefix: fs_
        requires_confirmation_tools: [write]
        external_execution_required_tools: [stat]
        stop_after_tool_call_tools: [read]
      events: {type: sse, url: "https://example.com/sse", headers: {X-Key: k}}
      streamed: {type: streamable-http, url: "https://example.com/mcp"}
`, nil)
	local := file.Agents[0].MCP[0]
	require.Equal(t, &MCPServer{Name: "local", Type: "stdio", Command: "./server", Args: []string{"--root", "/srv"},
		Env: map[string]string{"ROOT": "/srv"}, Cwd: "./tools", Timeout: 2500 * time.Millisecond,
		IncludeTools: []string{"read", "write", "stat"}, ExcludeTools: []string{"delete"}, ToolNamePrefix: "fs_",
		RequiresConfirmationTools: []string{"write"}, ExternalExecutionRequiredTools: []string{"stat"}, StopAfterToolCallTools: []string{"read"},
		Line: 5}, local)
	require.Equal(t, "sse", file.Agents[0].MCP[1].Type)
	require.Equal(t, "http", file.Agents[0].MCP[2].Type)

	// Every key reaches tools/mcp's config (URL and Headers from the
	// remote entries).
	cfg := local.mcpConfig()
	cfg.URL, cfg.Headers = file.Agents[0].MCP[1].URL, file.Agents[0].MCP[1].Headers
	value := reflect.ValueOf(cfg)
	for i := range value.NumField() {
		name := value.Type().Field(i).Name
		switch name {
		case "HeaderProvider", "HTTPClient", "Logger":
			continue // not keys: set by code
		}
		require.False(t, value.Field(i).IsZero(), "mcp.Config.%s is not set from the file", name)
	}
}

func TestMCPServerDecodeErrors(t *testing.T) {
	t.Parallel()
	agentHead := "agents:\n  - id: a\n    mcp_servers:\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", agentHead + "      fs: {command: npx, comand: x}\n",
			`agnogo.yaml:4: unknown key "comand" in fs in mcp_servers in agent "a"; did you mean "command"?`},
		{"neither command nor url", agentHead + "      fs: {args: [x]}\n",
			`agnogo.yaml:4: fs in mcp_servers in agent "a": want a command (a stdio server) or a url (type: http or sse)`},
		{"both", agentHead + "      fs:\n        command: npx\n        url: http://x/mcp\n",
			`agnogo.yaml:6: fs in mcp_servers in agent "a": give a command (a stdio server) or a url (an http or sse server), not both`},
		{"shell command", agentHead + "      fs:\n        command: \"npx server; rm -rf /\"\n",
			`agnogo.yaml:5: command in fs in mcp_servers in agent "a": "npx server; rm -rf /" holds a shell metacharacter (one of &|;` + "`" + `$()); the command runs without a shell`},
		{"shell argument", agentHead + "      fs:\n        command: npx\n        args:\n          - ok\n          - $(whoami)\n",
			`agnogo.yaml:8: args in fs in mcp_servers in agent "a": "$(whoami)" holds a shell metacharacter`},
		{"not a mapping", agentHead + "      fs: npx server\n",
			`agnogo.yaml:4: fs in mcp_servers in agent "a": want a mapping such as {command: npx, args: [-y, my-server]} or {type: http, url: https://…}, got "npx server"`},
		{"servers not a mapping", "agents:\n  - id: a\n    mcp_servers: [fs]\n",
			`agnogo.yaml:3: mcp_servers in agent "a": want a mapping of keys, got a list`},
		{"bad type", agentHead + "      fs: {type: grpc, url: http://x/mcp}\n",
			`agnogo.yaml:4: type in fs in mcp_servers in agent "a": "grpc" is not one of stdio, http, streamable-http, sse`},
		{"http type with a command", agentHead + "      fs: {type: http, command: npx}\n",
			`agnogo.yaml:4: fs in mcp_servers in agent "a": type http takes a url, not a command`},
		{"stdio type with a url", agentHead + "      fs: {type: stdio, url: http://x/mcp}\n",
			`agnogo.yaml:4: fs in mcp_servers in agent "a": type stdio takes a command, not a url`},
		{"bad url", agentHead + "      fs: {url: ftp://x}\n",
			`agnogo.yaml:4: url in fs in mcp_servers in agent "a": "ftp://x" is not an http:// or https:// URL`},
		{"headers on stdio", agentHead + "      fs:\n        command: npx\n        headers: {A: b}\n",
			`agnogo.yaml:6: fs in mcp_servers in agent "a": headers are for an http or sse server`},
		{"env on http", agentHead + "      fs:\n        url: http://x/mcp\n        env: {A: b}\n",
			`agnogo.yaml:6: fs in mcp_servers in agent "a": env and cwd are for a stdio server`},
		{"bad env name", agentHead + "      fs:\n        command: npx\n        env: {1A: b}\n",
			`agnogo.yaml:6: env in fs in mcp_servers in agent "a": "1A" is not a variable name`},
		{"zero timeout", agentHead + "      fs:\n        command: npx\n        timeout_seconds: 0\n",
			`agnogo.yaml:6: timeout_seconds in fs in mcp_servers in agent "a": want a number from 0.001 to 86400, got 0`},
		{"bad prefix", agentHead + "      fs:\n        command: npx\n        tool_name_prefix: \"fs.\"\n",
			`agnogo.yaml:6: tool_name_prefix in fs in mcp_servers in agent "a": "fs." may hold only letters, digits`},
		{"included and excluded", agentHead + "      fs:\n        command: npx\n        include_tools: [a]\n        exclude_tools: [a]\n",
			`agnogo.yaml:7: fs in mcp_servers in agent "a": "a" is in both include_tools and exclude_tools`},
		{"flag on an excluded tool", agentHead + "      fs:\n        command: npx\n        exclude_tools: [a]\n        requires_confirmation_tools: [a]\n",
			`agnogo.yaml:7: fs in mcp_servers in agent "a": requires_confirmation_tools names "a", which include_tools or exclude_tools leaves out`},
		{"empty tool name", agentHead + "      fs:\n        command: npx\n        include_tools: [\"\"]\n",
			`agnogo.yaml:6: include_tools in fs in mcp_servers in agent "a": an item is empty`},
		{"on a codex agent", "agents:\n  - id: c\n    type: codex\n    mcp_servers: {fs: {command: npx}}\n",
			`agnogo.yaml:4: key "mcp_servers" in agent "c" is for agnogo and claude agents only; this is a codex agent`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tc.yaml), "agnogo.yaml", env(nil))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestMCPServersBuildAndRun builds the example with a stdio and an HTTP
// server: the agent's model calls a tool of each and reads their results,
// the token of the headers comes from the environment, and OS.Close stops
// the stdio server.
func TestMCPServersBuildAndRun(t *testing.T) {
	t.Parallel()
	var authorization atomic.Value
	remote := httpMCPServer(t, &authorization)
	fake := fakeopenai.New(t)
	values, pidFile := mcpFileValues(t, fake, remote.URL)
	file := mustParse(t, mcpServersYAML, values)
	built, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = built.Close()
		}
	})

	fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("read_file", `{"path":"notes.txt"}`), fakeopenai.Call("echo", `{"text":"ping"}`)))
	fake.Enqueue(fakeopenai.Text("done"))
	out, err := built.Agents["files"].Run(t.Context(), &run.Input{InputContent: "read my notes"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "done", out.Content)
	require.Len(t, out.Tools, 2)
	results := map[string]string{}
	for _, call := range out.Tools {
		require.NotNil(t, call.Result, call.ToolName)
		results[call.ToolName] = *call.Result
	}
	require.Equal(t, map[string]string{"read_file": "contents of notes.txt", "echo": "echo: ping"}, results)
	require.Equal(t, "Bearer secret-token", authorization.Load(), "${TOKEN} in headers comes from the environment")

	// The model was offered both servers' tools, with their schemas.
	tools, _ := fake.Requests()[0].Body["tools"].([]any)
	var offered []string
	for _, raw := range tools {
		function, _ := raw.(map[string]any)["function"].(map[string]any)
		offered = append(offered, fmt.Sprint(function["name"]))
	}
	require.ElementsMatch(t, []string{"read_file", "echo"}, offered)

	require.True(t, running(serverPID(t, pidFile)), "the stdio server runs until the OS is closed")
	require.NoError(t, built.Close())
	closed = true
	requireStopped(t, pidFile)
}

func TestMCPServerBuildErrors(t *testing.T) {
	t.Parallel()
	var authorization atomic.Value
	remote := httpMCPServer(t, &authorization)

	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		fake := fakeopenai.New(t)
		values, pidFile := mcpFileValues(t, fake, "http://127.0.0.1:1/mcp")
		file := mustParse(t, strings.Replace(mcpServersYAML, "headers:", "timeout_seconds: 5, headers:", 1), values)
		_, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
		require.Error(t, err)
		require.Contains(t, err.Error(), `agnogo.yaml:10: agent "files": mcp server remote: connect:`)
		// The server that did connect was closed.
		requireStopped(t, pidFile)
	})
	t.Run("tool name clash", func(t *testing.T) {
		t.Parallel()
		fake := fakeopenai.New(t)
		values, pidFile := mcpFileValues(t, fake, remote.URL)
		file := mustParse(t, strings.Replace(mcpServersYAML, "    model: fake\n", "    model: fake\n    tools: [workspace]\n", 1), values)
		_, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
		require.Error(t, err)
		require.Contains(t, err.Error(), `agnogo.yaml:10: agent "files": tool "read_file" of mcp server fs has the name of the tool "read_file" `+
			`of the workspace toolkit; set tool_name_prefix on the server, or list the tool in its exclude_tools`)
		requireStopped(t, pidFile)
	})
	t.Run("prefix and flags", func(t *testing.T) {
		t.Parallel()
		fake := fakeopenai.New(t)
		values, _ := mcpFileValues(t, fake, remote.URL)
		file := mustParse(t, strings.Replace(mcpServersYAML, `args: [-test.run=none],`,
			`args: [-test.run=none], tool_name_prefix: fs_, requires_confirmation_tools: [read_file],`, 1), values)
		built, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, built.Close()) })
		fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("fs_read_file", `{"path":"a"}`)))
		out, err := built.Agents["files"].Run(t.Context(), &run.Input{InputContent: "go"})
		require.NoError(t, err)
		require.Equal(t, run.StatusPaused, out.Status, "the flagged tool waits for a confirmation")
	})
	t.Run("missing included tool", func(t *testing.T) {
		t.Parallel()
		fake := fakeopenai.New(t)
		values, _ := mcpFileValues(t, fake, remote.URL)
		file := mustParse(t, strings.Replace(mcpServersYAML, "headers:", "include_tools: [shout], headers:", 1), values)
		_, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
		require.Error(t, err)
		require.Contains(t, err.Error(), `agnogo.yaml:10: agent "files": mcp server remote has no tool "shout" (include_tools)`)
	})
}
