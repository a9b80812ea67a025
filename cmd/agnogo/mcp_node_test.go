package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// mcpNodeScript drives `agnogo serve`'s /mcp with the official TypeScript
// SDK (@modelcontextprotocol/sdk, StreamableHTTPClientTransport) and prints
// what it saw as one JSON object.
const mcpNodeScript = `
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

async function connect(token) {
  const client = new Client({ name: "node-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(process.env.BASE + "/mcp"),
    { requestInit: { headers: { Authorization: "Bearer " + token } } });
  await client.connect(transport);
  return client;
}

const out = {};
const alice = await connect(process.env.ALICE);
out.tools = (await alice.listTools()).tools.map((t) => t.name).sort();
const ran = await alice.callTool({ name: "run_agent", arguments: { agent_id: "writer", message: "hello", session_id: "alice-s1", user_id: "bob" } });
out.answer = ran.content[0].text;
out.ran = ran.structuredContent;
const paused = await alice.callTool({ name: "run_agent", arguments: { agent_id: "writer", message: "write it", session_id: "alice-s1" } });
out.paused = paused.structuredContent;
const reqs = paused.structuredContent.requirements.map((r) => ({ ...r, confirmation: true }));
const done = await alice.callTool({ name: "continue_run", arguments: { run_id: paused.structuredContent.run_id, agent_id: "writer", session_id: "alice-s1", requirements: reqs } });
out.continued = { text: done.content[0].text, status: done.structuredContent.status };

const reader = await connect(process.env.READER);
const refused = await reader.callTool({ name: "run_agent", arguments: { agent_id: "writer", message: "hi" } });
out.refused = { isError: refused.isError === true, text: refused.content[0].text };

const bob = await connect(process.env.BOB);
const bobSessions = await bob.callTool({ name: "get_sessions", arguments: {} });
out.bobSessions = bobSessions.structuredContent.data.map((s) => s.session_id);
const aliceSessions = await alice.callTool({ name: "get_sessions", arguments: {} });
out.aliceSessions = aliceSessions.structuredContent.data.map((s) => s.session_id);
const bobRuns = await bob.callTool({ name: "get_session_runs", arguments: { session_id: "alice-s1" } });
out.bobRuns = bobRuns.isError ? "error: " + bobRuns.content[0].text : bobRuns.structuredContent.runs;
console.log(JSON.stringify(out));
process.exit(0);
`

// TestMCPServerWithTheTypeScriptSDK: a Node client on the official MCP SDK
// lists agnogo's MCP tools, runs an agent, continues a paused run; with
// JWT RBAC and user isolation, a token without agents:run gets a tool error
// where REST answers 403, a run belongs to its caller whatever user_id the
// arguments name, and user B reads none of user A's sessions or runs.
func TestMCPServerWithTheTypeScriptSDK(t *testing.T) {
	t.Parallel()
	modules := os.Getenv("AGNOGO_MCP_NODE_MODULES")
	if modules == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGNOGO_MCP_NODE_MODULES is not set: .ci/run installs @modelcontextprotocol/sdk and sets it")
		}
		t.Skip("AGNOGO_MCP_NODE_MODULES is not set: install @modelcontextprotocol/sdk (see .ci/run) to run this test")
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed to run the TypeScript MCP client")
	public, token := jwtKeys(t)

	fake := fakeopenai.New(t)
	fake.Enqueue(
		fakeopenai.Text("hello from the writer"),
		fakeopenai.ToolCalls(fakeopenai.Call("write_file", map[string]string{"path": "out.txt", "content": "x"})),
		fakeopenai.Text("written"),
	)
	dir := t.TempDir()
	config := filepath.Join(dir, "agnogo.yaml")
	indented := "        " + strings.ReplaceAll(strings.TrimSpace(public), "\n", "\n        ")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`name: MCP test
db: sqlite://%s
auth:
  user_isolation: true
  jwt:
    authorization: true
    verification_keys:
      - |
%s
mcp_server: {enabled: true}
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - id: writer
    model: fake
    tools: [workspace, {name: write_file, requires_confirmation: true}]
    workspace: {root: %q}
`, filepath.Join(dir, "agnogo.db"), indented, fake.URL, dir)), 0o600))
	s := startServe(t, "--config", config)

	// The script resolves the SDK from a node_modules beside it.
	scriptDir := t.TempDir()
	require.NoError(t, os.Symlink(modules, filepath.Join(scriptDir, "node_modules")))
	script := filepath.Join(scriptDir, "client.mjs")
	require.NoError(t, os.WriteFile(script, []byte(mcpNodeScript), 0o600))
	user := []string{"agents:run", "agents:read", "sessions:read"}
	cmd := exec.CommandContext(t.Context(), node, script)
	cmd.Env = append(os.Environ(), "BASE="+s.url, "ALICE="+token("alice", user...), "BOB="+token("bob", user...),
		"READER="+token("carol", "agents:read", "sessions:read"))
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "node: %s\nserver log:\n%s", output, s.log)

	var got struct {
		Tools     []string       `json:"tools"`
		Answer    string         `json:"answer"`
		Ran       map[string]any `json:"ran"`
		Paused    map[string]any `json:"paused"`
		Continued struct {
			Text, Status string
		} `json:"continued"`
		Refused struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"refused"`
		BobSessions   []string `json:"bobSessions"`
		AliceSessions []string `json:"aliceSessions"`
		BobRuns       any      `json:"bobRuns"`
	}
	lines := strings.Split(strings.TrimSpace(string(output)), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got), "%s", output)
	require.Equal(t, []string{"cancel_run", "continue_run", "get_agentos_config", "get_session_runs", "get_sessions", "run_agent", "run_team", "run_workflow"}, got.Tools)
	require.Equal(t, "hello from the writer", got.Answer)
	require.Equal(t, "COMPLETED", got.Ran["status"])
	require.Equal(t, "PAUSED", got.Paused["status"])
	require.Equal(t, "written", got.Continued.Text)
	require.Equal(t, "COMPLETED", got.Continued.Status)
	require.True(t, got.Refused.IsError, "a token without agents:run gets a tool error")
	require.Contains(t, got.Refused.Text, "403")
	require.Contains(t, got.Refused.Text, "agents:run")
	require.Equal(t, []string{"alice-s1"}, got.AliceSessions, "alice's run is hers, whatever user_id it named")
	require.Empty(t, got.BobSessions, "bob sees none of alice's sessions")
	if runs, ok := got.BobRuns.([]any); ok {
		require.Empty(t, runs, "bob reads none of alice's runs")
	} else {
		require.Contains(t, fmt.Sprint(got.BobRuns), "error", "bob reads none of alice's runs")
	}
	require.FileExists(t, filepath.Join(dir, "out.txt"), "the confirmed write ran")
}

// jwtKeys makes an RS256 key pair: the public key in PEM, for the config
// file, and a function signing a token for a user with scopes.
func jwtKeys(t *testing.T) (string, func(sub string, scopes ...string) string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	public := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	return public, func(sub string, scopes ...string) string {
		signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": sub, "scopes": scopes,
			"exp": time.Now().Add(time.Hour).Unix()}).SignedString(key)
		require.NoError(t, err)
		return signed
	}
}
