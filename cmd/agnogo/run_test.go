package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	agnorun "github.com/agnogo/agnogo/run"
)

// runBundle is a config file whose agents talk to a fake OpenAI server.
type runBundle struct {
	fake   *fakeopenai.Server
	config string
	dir    string
}

// setupRun writes a config file with a "fake" model on a fake OpenAI server,
// a new database, and the agents given (YAML list items).
func setupRun(t *testing.T, agents string) *runBundle {
	t.Helper()
	fake := fakeopenai.New(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "agnogo.yaml")
	yaml := fmt.Sprintf(`name: Test OS
db: sqlite://%s
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
%s`, filepath.Join(dir, "agnogo.db"), fake.URL, agents)
	require.NoError(t, os.WriteFile(config, []byte(yaml), 0o600))
	return &runBundle{fake: fake, config: config, dir: dir}
}

// agnogo runs `agnogo run --config <config> args…`.
func (b *runBundle) agnogo(t *testing.T, args ...string) result {
	t.Helper()
	return agnogo(t, append([]string{"run", "--config", b.config}, args...)...)
}

// decodeOutput reads the RunOutput JSON that --json prints.
func decodeOutput(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var output map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &output), stdout)
	return output
}

// chatMessages returns the role and content of each message of a Chat
// Completions request.
func chatMessages(request fakeopenai.Request) [][2]string {
	var messages [][2]string
	raw, _ := request.Body["messages"].([]any)
	for _, item := range raw {
		message, _ := item.(map[string]any)
		content, _ := message["content"].(string)
		role, _ := message["role"].(string)
		messages = append(messages, [2]string{role, content})
	}
	return messages
}

const assistantAgent = `  - id: assistant
    model: fake
    add_history_to_context: true
`

func TestRunJSONAndSession(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent+"  - {id: plain, model: fake}\n")

	b.fake.Enqueue(fakeopenai.Text("Hello there!").WithUsage(fakeopenai.Usage{InputTokens: 21, OutputTokens: 4}))
	got := b.agnogo(t, "assistant", "hi", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Empty(t, got.stderr)
	first := decodeOutput(t, got.stdout)
	require.Equal(t, "COMPLETED", first["status"])
	require.Equal(t, "Hello there!", first["content"])
	require.Equal(t, "assistant", first["agent_id"])
	require.Equal(t, map[string]any{"input_content": "hi"}, first["input"])
	metrics, _ := first["metrics"].(map[string]any)
	require.Equal(t, float64(21), metrics["input_tokens"])
	require.Equal(t, float64(4), metrics["output_tokens"])
	require.Equal(t, float64(25), metrics["total_tokens"])
	sessionID, _ := first["session_id"].(string)
	require.NotEmpty(t, sessionID)

	// --session continues the conversation: the stored first turn is sent
	// as history.
	b.fake.Enqueue(fakeopenai.Text("Still here."))
	got = b.agnogo(t, "assistant", "are you there?", "--session", sessionID, "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	second := decodeOutput(t, got.stdout)
	require.Equal(t, sessionID, second["session_id"])
	require.NotEqual(t, first["run_id"], second["run_id"])
	require.Equal(t, [][2]string{{"user", "hi"}, {"assistant", "Hello there!"}, {"user", "are you there?"}},
		chatMessages(b.fake.Requests()[1]))

	// --user owns the run.
	b.fake.Enqueue(fakeopenai.Text("Hi Ana."))
	got = b.agnogo(t, "plain", "hi", "--user", "ana", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, "ana", decodeOutput(t, got.stdout)["user_id"])
}

func TestRunText(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	b.fake.Enqueue(fakeopenai.Text("Paris.").WithUsage(fakeopenai.Usage{InputTokens: 9, OutputTokens: 2}))
	got := b.agnogo(t, "assistant", "Capital of France?")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, "Paris.\n", got.stdout)
	require.Regexp(t, `^COMPLETED  session [0-9a-f-]{36}  run [0-9a-f-]{36}  tokens 9 in / 2 out\n$`, got.stderr)
}

func TestRunStructuredOutput(t *testing.T) {
	t.Parallel()
	b := setupRun(t, `  - id: capital
    model: fake
    output_schema: {type: object, properties: {city: {type: string}}, required: [city]}
`)
	b.fake.Enqueue(fakeopenai.JSON(map[string]any{"city": "Paris"}))
	got := b.agnogo(t, "capital", "France?")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, `{"city":"Paris"}`+"\n", got.stdout, "structured output is printed as JSON")
}

// workspaceAgent reads files under root; writes need confirmation.
func workspaceAgent(root string) string {
	return fmt.Sprintf(`  - id: coder
    model: fake
    tools: [workspace]
    workspace: {root: %q, confirm_writes: true}
`, root)
}

func TestRunWorkspaceTools(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello from a.txt\nsecond line\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte("OPENAI_API_KEY=sk-secret\n"), 0o600))
	b := setupRun(t, workspaceAgent(root))

	b.fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("read_file", map[string]any{"path": "a.txt"})),
		fakeopenai.Text("It says hello."),
	)
	got := b.agnogo(t, "coder", "What is in a.txt?", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	output := decodeOutput(t, got.stdout)
	require.Equal(t, "It says hello.", output["content"])
	toolResult := lastToolMessage(t, b.fake.Requests()[1])
	require.Contains(t, toolResult, "hello from a.txt", "the file's text goes back to the model")

	b.fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("read_file", map[string]any{"path": ".env"})),
		fakeopenai.Text("I may not read it."),
	)
	got = b.agnogo(t, "coder", "What is in .env?", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	toolResult = lastToolMessage(t, b.fake.Requests()[3])
	require.Contains(t, toolResult, "refused")
	require.NotContains(t, toolResult, "sk-secret")
	require.NotContains(t, got.stdout, "sk-secret")
}

// lastToolMessage returns the content of the last tool message of a request.
func lastToolMessage(t *testing.T, request fakeopenai.Request) string {
	t.Helper()
	messages := chatMessages(request)
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i][0] == "tool" {
			return messages[i][1]
		}
	}
	require.Failf(t, "no tool message", "%v", messages)
	return ""
}

func TestRunStream(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("first line of a\nsecond\n"), 0o600))
	b := setupRun(t, workspaceAgent(root))

	b.fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("read_file", map[string]any{"path": "a.txt"})).WithText("Let me look."),
		fakeopenai.Text("The file starts with first line of a."),
	)
	got := b.agnogo(t, "coder", "Read a.txt", "--stream")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, `Let me look.
→ tool read_file {"path":"a.txt"}
← read_file: 1	first line of a
The file starts with first line of a.
`, strings.ReplaceAll(got.stdout, "     ", ""))
	require.Contains(t, got.stderr, "COMPLETED  session ")
	require.True(t, b.fake.Requests()[0].Body["stream"] == true, "--stream streams from the model")

	b.fake.Enqueue(fakeopenai.Text("Hi there, friend."))
	got = b.agnogo(t, "coder", "hi", "--stream", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Empty(t, got.stderr)
	var names []string
	var deltas strings.Builder
	scanner := bufio.NewScanner(strings.NewReader(got.stdout))
	for scanner.Scan() {
		var event map[string]any
		require.NoError(t, json.Unmarshal(scanner.Bytes(), &event), scanner.Text())
		name, _ := event["event"].(string)
		names = append(names, name)
		if name == agnorun.EventRunContent {
			deltas.WriteString(event["content"].(string))
		}
	}
	require.Equal(t, agnorun.EventRunStarted, names[0])
	require.Equal(t, agnorun.EventRunCompleted, names[len(names)-1])
	require.Contains(t, names, agnorun.EventRunContent)
	require.Equal(t, "Hi there, friend.", deltas.String())
}

func TestRunPaused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	b := setupRun(t, workspaceAgent(root))
	b.fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("write_file", map[string]any{"path": "b.txt", "content": "new"})))

	got := b.agnogo(t, "coder", "Write b.txt")
	require.Equal(t, exitFailure, got.code, got.stderr)
	require.Regexp(t, `^paused: confirm write_file \{"content":"new","path":"b.txt"\} \(requirement [0-9a-f-]{36}\)\n$`, got.stdout)
	require.Regexp(t, `^agnogo: run ([0-9a-f-]{36}) paused for 1 requirement; continue it with agnogo run --continue ([0-9a-f-]{36}) --approve \(or --reject\)\n$`, got.stderr)
	require.NoFileExists(t, filepath.Join(root, "b.txt"))

	b.fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("write_file", map[string]any{"path": "b.txt", "content": "new"})))
	got = b.agnogo(t, "coder", "Write b.txt", "--json")
	require.Equal(t, exitFailure, got.code)
	output := decodeOutput(t, got.stdout)
	require.Equal(t, "PAUSED", output["status"])
	require.Len(t, output["requirements"], 1)
}

func TestRunModelError(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	b.fake.Enqueue(fakeopenai.Error(400, "invalid_request", "bad things"))
	got := b.agnogo(t, "assistant", "hi")
	require.Equal(t, exitFailure, got.code)
	require.Empty(t, got.stdout)
	require.Regexp(t, `^agnogo: run [0-9a-f-]{36} failed: .*bad things`, got.stderr)

	b.fake.Enqueue(fakeopenai.Error(400, "invalid_request", "bad things"))
	got = b.agnogo(t, "assistant", "hi", "--stream")
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "failed: ")
	require.Contains(t, got.stderr, "bad things")
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	b.fake.Enqueue(fakeopenai.Text("never finished").StallAfter(0))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Ctrl-C once the model call is under way (or after 10 s, when
		// the run fails below without it).
		poll(10*time.Second, 5*time.Millisecond, func() bool { return len(b.fake.Requests()) > 0 })
		cancel()
	}()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"run", "--config", b.config, "assistant", "hi"}, &stdout, &stderr)
	require.NotEmpty(t, b.fake.Requests(), "cancelled during the model call")
	require.Equal(t, exitFailure, code, stderr.String())
	require.Regexp(t, `^agnogo: run [0-9a-f-]{36} cancelled\n$`, stderr.String())
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent+"  - id: coder\n    type: claude\n    claude_bin: /nonexistent/claude\n")

	got := b.agnogo(t, "nobody", "hi")
	require.Equal(t, exitUsage, got.code)
	require.Equal(t, "agnogo: unknown agent \"nobody\"; known agents: assistant, coder\nRun 'agnogo run --help' for usage.\n", got.stderr)

	got = b.agnogo(t, "coder", "hi")
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, `claude CLI not found`, "a claude agent runs its CLI, and says when it is missing")

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("agents:\n  - id: assistant\n    model: openai:gpt-5\n    modle: x\n"), 0o600))
	got = agnogo(t, "run", "--config", bad, "assistant", "hi")
	require.Equal(t, exitUsage, got.code)
	require.Contains(t, got.stderr, "agnogo: "+bad+`:4: unknown key "modle" in agent "assistant"; did you mean "model"?`)

	tests := []struct {
		name     string
		args     []string
		mentions string
	}{
		{"no message", []string{"run", "assistant"}, "run takes AGENT and MESSAGE, got 1 argument(s)"},
		{"missing config", []string{"run", "--config", filepath.Join(b.dir, "nope.yaml"), "a", "hi"}, "--config: read config: open "},
		{"bad db", []string{"run", "--config", b.config, "--db", "mysql://x", "assistant", "hi"}, `--db: invalid request: database URL scheme "mysql"`},
	}
	for _, tt := range tests {
		got := agnogo(t, tt.args...)
		require.Equal(t, exitUsage, got.code, tt.name)
		require.Contains(t, got.stderr, tt.mentions, tt.name)
	}
	require.Empty(t, b.fake.Requests())
}

// TestRunDefaultConfig runs without a config file: the default assistant on
// $AGNOGO_MODEL. It sets environment variables, so it is not parallel.
func TestRunDefaultConfig(t *testing.T) {
	fake := fakeopenai.New(t)
	t.Setenv("AGNOGO_MODEL", "")
	t.Setenv("OPENAI_BASE_URL", fake.URL)
	t.Setenv("OPENAI_API_KEY", "sk-env")
	db := "sqlite://" + filepath.Join(t.TempDir(), "agnogo.db")

	fake.Enqueue(fakeopenai.Text("Hi!"))
	got := agnogo(t, "run", "--db", db, "assistant", "hello", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	output := decodeOutput(t, got.stdout)
	require.Equal(t, "Hi!", output["content"])
	require.Equal(t, "gpt-5-mini", output["model"])
	require.Equal(t, "Bearer sk-env", fake.Requests()[0].Header.Get("Authorization"))

	// Without credentials the agent is still there; its run fails naming
	// the variable to set.
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "")
	got = agnogo(t, "run", "--db", db, "assistant", "hello")
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "set OPENAI_API_KEY")

	t.Setenv("AGNOGO_MODEL", "gpt-5")
	got = agnogo(t, "run", "--db", db, "assistant", "hello")
	require.Equal(t, exitUsage, got.code)
	require.Contains(t, got.stderr, `agnogo: AGNOGO_MODEL="gpt-5": want provider:id`)
}
