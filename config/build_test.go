package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// buildBundle is a built OS over a fake OpenAI server and a temporary
// SQLite database.
type buildBundle struct {
	os   *OS
	fake *fakeopenai.Server
	db   string
}

// build parses yaml, in which FAKE_URL stands for the fake server's base URL
// and DB for a new database, and builds it with an empty environment.
func build(t *testing.T, yaml string) *buildBundle {
	t.Helper()
	fake := fakeopenai.New(t)
	db := "sqlite://" + filepath.Join(t.TempDir(), "agnogo.db")
	file := mustParse(t, yaml, map[string]string{"FAKE_URL": fake.URL, "DB": db})
	agentOS, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, agentOS.Close()) })
	return &buildBundle{os: agentOS, fake: fake, db: db}
}

// runAgent runs agent id on message in session.
func (b *buildBundle) runAgent(t *testing.T, id, message, session string) (*run.Output, error) {
	t.Helper()
	runner, err := b.os.Runner(id)
	require.NoError(t, err)
	a, ok := b.os.Agents[id]
	require.True(t, ok)
	require.Same(t, a, runner)
	return a.Run(t.Context(), &run.Input{InputContent: message, SessionID: session})
}

// messageTexts returns "role: content" for each message of a chat request.
func messageTexts(request fakeopenai.Request) []string {
	var texts []string
	messages, _ := request.Body["messages"].([]any)
	for _, raw := range messages {
		message, _ := raw.(map[string]any)
		texts = append(texts, fmt.Sprintf("%v: %v", message["role"], message["content"]))
	}
	return texts
}

func TestBuildRunsAgents(t *testing.T) {
	t.Parallel()
	b := build(t, `
name: Test OS
db: ${DB}
models:
  fake: {provider: openai, id: gpt-test, base_url: "${FAKE_URL}", api_key: sk-fake}
agents:
  - id: helper
    name: Helper
    model: fake
    instructions: Answer in one word.
    add_history_to_context: true
  - id: coder
    type: claude
  - id: codex
    type: codex
`)
	require.Equal(t, "Test OS", b.os.Name)
	require.Equal(t, []string{"helper", "coder", "codex"}, b.os.AgentIDs)
	require.Len(t, b.os.Agents, 1)
	require.Len(t, b.os.External, 2)
	require.Empty(t, b.os.Warnings)
	require.Equal(t, "Helper", b.os.Agents["helper"].Name())

	b.fake.Enqueue(fakeopenai.Text("Paris").WithUsage(fakeopenai.Usage{InputTokens: 12, OutputTokens: 3}))
	first, err := b.runAgent(t, "helper", "Capital of France?", "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, first.Status)
	require.Equal(t, "Paris", first.Content)
	require.Equal(t, int64(12), first.Metrics.InputTokens)
	require.Equal(t, int64(3), first.Metrics.OutputTokens)

	request := b.fake.Requests()[0]
	require.Equal(t, "/v1/chat/completions", request.Path)
	require.Equal(t, "gpt-test", request.Body["model"])
	require.Equal(t, "Bearer sk-fake", request.Header.Get("Authorization"))
	require.Equal(t, []string{"system: Answer in one word.", "user: Capital of France?"}, messageTexts(request))

	// The run was stored: a second turn in the session carries the first.
	b.fake.Enqueue(fakeopenai.Text("Rome"))
	second, err := b.runAgent(t, "helper", "And of Italy?", first.SessionID)
	require.NoError(t, err)
	require.Equal(t, first.SessionID, second.SessionID)
	require.Equal(t, []string{"system: Answer in one word.", "user: Capital of France?", "assistant: Paris", "user: And of Italy?"},
		messageTexts(b.fake.Requests()[1]))

	for id, wantName := range map[string]string{"coder": "coder", "codex": "codex"} {
		runner, err := b.os.Runner(id)
		require.NoError(t, err, "external agents are built and runnable")
		require.Same(t, b.os.External[id], runner)
		require.Equal(t, wantName, runner.Name())
	}
	_, err = b.os.Runner("nobody")
	require.ErrorIs(t, err, ErrUnknownAgent)
	require.EqualError(t, err, `unknown agent "nobody"; known agents: helper, coder, codex`)
}

func TestBuildWithoutCredentials(t *testing.T) {
	t.Parallel()
	b := build(t, `
db: ${DB}
agents:
  - {id: gpt, model: openai:gpt-5-mini}
  - {id: claude, model: anthropic:claude-sonnet-4-6}
  - {id: gpt2, model: openai:gpt-5-mini}
`)
	require.Equal(t, []string{
		`model "openai:gpt-5-mini" has no API key: set OPENAI_API_KEY (or api_key under models); its agents' runs fail until then`,
		`model "anthropic:claude-sonnet-4-6" has no API key: set ANTHROPIC_API_KEY (or api_key under models); its agents' runs fail until then`,
	}, b.os.Warnings, "one warning per model, however many agents use it")

	for id, variable := range map[string]string{"gpt": "OPENAI_API_KEY", "claude": "ANTHROPIC_API_KEY"} {
		out, err := b.runAgent(t, id, "hi", "")
		require.Error(t, err)
		require.ErrorContains(t, err, "set "+variable)
		require.Equal(t, model.ClassAuth, model.ClassOf(err))
		require.Equal(t, run.StatusError, out.Status)
		require.Contains(t, out.ContentString(), variable)
	}
	require.Empty(t, b.fake.Requests())
}

func TestBuildCredentialsFromEnvironment(t *testing.T) {
	t.Parallel()
	fake := fakeopenai.New(t)
	file := mustParse(t, "db: sqlite://"+filepath.Join(t.TempDir(), "a.db")+"\nagents:\n  - {id: a, model: openai:gpt-5-mini}\n", nil)
	agentOS, err := file.Build(t.Context(), BuildOptions{Getenv: env(map[string]string{
		"OPENAI_API_KEY":  "sk-env",
		"OPENAI_BASE_URL": fake.URL,
	})})
	require.NoError(t, err)
	defer agentOS.Close()
	require.Empty(t, agentOS.Warnings)

	fake.Enqueue(fakeopenai.Text("ok"))
	out, err := agentOS.Agents["a"].Run(t.Context(), &run.Input{InputContent: "hi"})
	require.NoError(t, err)
	require.Equal(t, "ok", out.Content)
	require.Equal(t, "Bearer sk-env", fake.Requests()[0].Header.Get("Authorization"))
}

func TestBuildOllama(t *testing.T) {
	t.Parallel()
	b := build(t, "db: ${DB}\nmodels:\n  local: {provider: ollama, id: llama3, base_url: \"${FAKE_URL}\"}\nagents:\n  - {id: a, model: local}\n")
	b.fake.Enqueue(fakeopenai.Text("hello"))
	out, err := b.runAgent(t, "a", "hi", "")
	require.NoError(t, err)
	require.Equal(t, "Ollama", out.ModelProvider)
	require.Equal(t, "llama3", out.Model)
	require.Equal(t, "Bearer ollama", b.fake.Requests()[0].Header.Get("Authorization"),
		"ollama gets a placeholder key, never $OPENAI_API_KEY")
}

func TestBuildStructuredOutput(t *testing.T) {
	t.Parallel()
	b := build(t, `
db: ${DB}
models:
  fake: {provider: openai, id: gpt-test, base_url: "${FAKE_URL}", api_key: k}
agents:
  - id: a
    model: fake
    output_schema:
      title: Capital
      type: object
      properties: {city: {type: string}}
      required: [city]
`)
	b.fake.Enqueue(fakeopenai.JSON(map[string]any{"city": "Paris"}))
	out, err := b.runAgent(t, "a", "Capital of France?", "")
	require.NoError(t, err)
	require.Equal(t, map[string]any{"city": "Paris"}, out.Content)
	require.Equal(t, "Capital", out.ContentType)

	format, _ := b.fake.Requests()[0].Body["response_format"].(map[string]any)
	require.Equal(t, "json_schema", format["type"], "the schema is sent to the model")
}

func TestBuildWorkspace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("remember the milk\n"), 0o600))
	b := build(t, fmt.Sprintf(`
db: ${DB}
models:
  fake: {provider: openai, id: gpt-test, base_url: "${FAKE_URL}", api_key: k}
agents:
  - id: a
    model: fake
    instructions: Be brief.
    tools: [workspace]
    workspace: {root: %q}
`, root))
	b.fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("read_file", map[string]any{"path": "notes.txt"})),
		fakeopenai.Text("Milk."),
	)
	out, err := b.runAgent(t, "a", "What should I remember?", "")
	require.NoError(t, err)
	require.Equal(t, "Milk.", out.Content)
	require.Len(t, out.Tools, 1)
	require.Contains(t, *out.Tools[0].Result, "remember the milk")

	request := b.fake.Requests()[0]
	var names []string
	tools, _ := request.Body["tools"].([]any)
	for _, raw := range tools {
		function, _ := raw.(map[string]any)["function"].(map[string]any)
		names = append(names, fmt.Sprint(function["name"]))
	}
	require.Equal(t, []string{"read_file", "list_files", "search_files", "write_file", "edit_file", "run_shell"}, names)
	system := messageTexts(request)[0]
	require.True(t, strings.HasPrefix(system, "system: Be brief.\n\nWorkspace paths are relative"), system)
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	file := mustParse(t, fmt.Sprintf("db: sqlite://%s/a.db\nagents:\n  - id: a\n    model: ollama:x\n    tools: [workspace]\n    workspace:\n      root: %s\n", dir, missing), nil)
	_, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	var configErr *Error
	require.ErrorAs(t, err, &configErr)
	require.Equal(t, 7, configErr.Line, "the error points at the workspace settings")
	require.ErrorContains(t, err, `agnogo.yaml:7: agent "a": workspace: root `+missing)

	// --db overrides the file's database.
	override := filepath.Join(dir, "override.db")
	file = mustParse(t, "db: sqlite://"+filepath.Join(dir, "unused.db")+"\n", nil)
	agentOS, err := file.Build(t.Context(), BuildOptions{DB: "sqlite://" + override})
	require.NoError(t, err)
	require.NoError(t, agentOS.Close())
	require.FileExists(t, override)
	require.NoFileExists(t, filepath.Join(dir, "unused.db"))

	_, err = file.Build(t.Context(), BuildOptions{DB: "mysql://x"})
	require.ErrorContains(t, err, `scheme "mysql" is not supported`)
}
