package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tools/workspace"
)

// openaiAgent is an agent on the real OpenAI provider, talking to a fake
// OpenAI-compatible server over HTTP.
func openaiAgent(t *testing.T, configure func(*agent.Config)) (*agent.Agent, *fakeopenai.Server) {
	t.Helper()
	server := fakeopenai.New(t)
	m, err := openai.New(openai.Config{ID: "gpt-test", BaseURL: server.URL, APIKey: "test-key"})
	require.NoError(t, err)
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agent.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	cfg := agent.Config{ID: "assistant", Model: m, Store: store, DelayBetweenRetries: time.Millisecond}
	if configure != nil {
		configure(&cfg)
	}
	a, err := agent.New(cfg)
	require.NoError(t, err)
	return a, server
}

// sentMessages returns the chat messages of the n-th request (0-based).
func sentMessages(t *testing.T, server *fakeopenai.Server, n int) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range server.Requests()[n].Body["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

func TestOpenAIRunWithMetricsAndHistory(t *testing.T) {
	a, server := openaiAgent(t, func(c *agent.Config) { c.AddHistoryToContext = true })
	server.Enqueue(fakeopenai.Text("Hello Ada!").WithUsage(fakeopenai.Usage{InputTokens: 12, OutputTokens: 3, TotalTokens: 15}),
		fakeopenai.Text("You are Ada."))
	out, err := a.Run(t.Context(), &run.Input{InputContent: "I am Ada", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "Hello Ada!", out.Content)
	require.EqualValues(t, 12, out.Metrics.InputTokens)
	require.EqualValues(t, 15, out.Metrics.TotalTokens)

	_, err = a.Run(t.Context(), &run.Input{InputContent: "Who am I?", SessionID: "s1"})
	require.NoError(t, err)
	second := sentMessages(t, server, 1)
	require.Len(t, second, 3, "the first turn travels as history")
	require.Equal(t, "I am Ada", second[0]["content"])
	require.Equal(t, "Hello Ada!", second[1]["content"])
}

func TestOpenAIRetriesServerErrors(t *testing.T) {
	a, server := openaiAgent(t, func(c *agent.Config) { c.Retries = 2 })
	server.Enqueue(fakeopenai.Error(503, "unavailable", "try later"), fakeopenai.Error(503, "unavailable", "try later"), fakeopenai.Text("made it"))
	out, err := a.Run(t.Context(), &run.Input{InputContent: "hi"})
	require.NoError(t, err)
	require.Equal(t, "made it", out.Content)
	require.Len(t, server.Requests(), 3)
	attempts, err := out.Attempts()
	require.NoError(t, err)
	require.Len(t, attempts, 3)
}

func TestOpenAIAuthFailureEndsAfterOneRequest(t *testing.T) {
	a, server := openaiAgent(t, func(c *agent.Config) { c.Retries = 3 })
	server.Enqueue(fakeopenai.Error(401, "invalid_api_key", "Incorrect API key"), fakeopenai.Text("never"))
	out, err := a.Run(t.Context(), &run.Input{InputContent: "hi"})
	require.Error(t, err)
	require.Equal(t, run.StatusError, out.Status)
	require.Len(t, server.Requests(), 1, "an auth failure is never retried")
}

func TestOpenAIToolCallThroughWorkspace(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the launch is on Tuesday\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte("OPENAI_API_KEY=sk-secret\n"), 0o600))
	kit, err := workspace.New(workspace.Config{Root: root})
	require.NoError(t, err)
	a, server := openaiAgent(t, func(c *agent.Config) { c.Tools = kit.Tools() })
	server.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("read_file", map[string]any{"path": "notes.txt"}), fakeopenai.Call("read_file", map[string]any{"path": ".env"})),
		fakeopenai.Text("Tuesday."),
	)
	out, err := a.Run(t.Context(), &run.Input{InputContent: "when is the launch?"})
	require.NoError(t, err)
	require.Equal(t, "Tuesday.", out.Content)

	var results []string
	for _, m := range sentMessages(t, server, 1) {
		if m["role"] == "tool" {
			results = append(results, m["content"].(string))
		}
	}
	require.Len(t, results, 2)
	require.Contains(t, results[0], "the launch is on Tuesday")
	require.Contains(t, results[1], "refused")
	require.NotContains(t, strings.Join(results, ""), "sk-secret", "credential files never reach the model")
}

func TestOpenAIStructuredOutput(t *testing.T) {
	schema, err := agent.SchemaFor[answer]()
	require.NoError(t, err)
	a, server := openaiAgent(t, func(c *agent.Config) { c.OutputSchema = schema })
	server.Enqueue(fakeopenai.JSON(map[string]any{"city": "Paris", "temp_c": 21}))
	out, err := a.Run(t.Context(), &run.Input{InputContent: "weather?"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"city": "Paris", "temp_c": float64(21)}, out.Content)
	format := server.Requests()[0].Body["response_format"].(map[string]any)
	require.Equal(t, "json_schema", format["type"])
}
