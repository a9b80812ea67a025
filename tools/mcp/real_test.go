package mcp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tools/mcp"
)

// The reference MCP servers, from npm (@modelcontextprotocol/server-filesystem
// and server-everything, installed by .ci/run into a cache):
// AGNOGO_MCP_NODE_MODULES names their node_modules directory.
func nodeServer(t *testing.T, pkg string) string {
	t.Helper()
	dir := os.Getenv("AGNOGO_MCP_NODE_MODULES")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGNOGO_MCP_NODE_MODULES is not set: .ci/run installs the reference MCP servers and sets it")
		}
		t.Skip("AGNOGO_MCP_NODE_MODULES is not set: install @modelcontextprotocol/server-filesystem and server-everything (see .ci/run) to run this test")
	}
	script := filepath.Join(dir, "@modelcontextprotocol", pkg, "dist", "index.js")
	_, err := os.Stat(script)
	require.NoError(t, err, "the %s server is not installed in %s", pkg, dir)
	return script
}

// TestRealFilesystemServer: an agent lists and calls the tools of the
// reference filesystem server over stdio.
func TestRealFilesystemServer(t *testing.T) {
	script := nodeServer(t, "server-filesystem")
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the answer is 42"), 0o600))
	s, err := mcp.Connect(t.Context(), mcp.Config{Name: "fs", Command: "node", Args: []string{script, root}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	names := map[string]bool{}
	for _, tl := range s.Tools() {
		names[tl.Spec().Name] = true
	}
	require.True(t, names["read_text_file"], "the filesystem server's tools: %v", names)
	require.True(t, names["list_directory"], "the filesystem server's tools: %v", names)

	args, err := json.Marshal(map[string]string{"path": filepath.Join(root, "notes.txt")})
	require.NoError(t, err)
	listArgs, err := json.Marshal(map[string]string{"path": root})
	require.NoError(t, err)
	m := scripted.New([]scripted.Reply{
		scripted.ToolCall("list_directory", string(listArgs)),
		scripted.ToolCall("read_text_file", string(args)),
		scripted.ToolCall("read_text_file", `{"path":"/etc/passwd"}`),
		scripted.Text("done"),
	})
	a, err := agent.New(agent.Config{ID: "files", Model: m, Tools: s.Tools()})
	require.NoError(t, err)
	out, err := a.Run(t.Context(), &run.Input{InputContent: "read my notes"})
	require.NoError(t, err)
	require.Equal(t, "done", out.Content)
	require.Contains(t, *out.Tools[0].Result, "notes.txt")
	require.Equal(t, "the answer is 42", *out.Tools[1].Result)
	require.True(t, *out.Tools[2].ToolCallError, "a path outside the allowed directory is the server's error")
	require.True(t, strings.Contains(*out.Tools[2].Result, "Error from MCP tool 'read_text_file'"), *out.Tools[2].Result)
}

// TestRealEverythingServer: the reference "everything" server's echo and
// sum tools, through an agent.
func TestRealEverythingServer(t *testing.T) {
	script := nodeServer(t, "server-everything")
	s, err := mcp.Connect(t.Context(), mcp.Config{Name: "everything", Command: "node", Args: []string{script, "stdio"},
		IncludeTools: []string{"echo", "get-sum"}, ToolNamePrefix: "ev_"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.Len(t, s.Tools(), 2)
	m := scripted.New([]scripted.Reply{
		scripted.ToolCalls(scripted.ToolCall("ev_echo", `{"message":"hello"}`), scripted.ToolCall("ev_get-sum", `{"a":2,"b":3}`)),
		scripted.Text("done"),
	})
	a, err := agent.New(agent.Config{ID: "ev", Model: m, Tools: s.Tools()})
	require.NoError(t, err)
	out, err := a.Run(t.Context(), &run.Input{InputContent: "go"})
	require.NoError(t, err)
	require.Equal(t, "done", out.Content)
	require.Contains(t, *out.Tools[0].Result, "hello")
	require.Contains(t, *out.Tools[1].Result, "5")
}
