// Package examples_test builds and vets every example, runs each once
// offline — on its scripted model, or against a fake model API — and
// checks what it prints, so that `go test ./...` keeps the examples
// working. The Claude Code example needs the real CLI: it runs when
// AGNOGO_CLAUDE_BIN names it, skips otherwise, and fails without it under
// CI=true.
package examples_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/config"
	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/internal/testcli"
)

// runTimeout bounds one run of an example: far beyond what each takes, so
// that one that hangs fails instead of holding the test binary.
const runTimeout = 2 * time.Minute

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built holds the examples' binaries, built once for every test.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// example returns the binary of the example in the directory name,
// building every example on first use.
func example(t *testing.T, name string) string {
	t.Helper()
	goTool := goCommand(t)
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "agnogo-examples-"); built.err != nil {
			return
		}
		// One build for all: with -o naming a directory, go build writes
		// each main package's binary there, under its directory's name.
		if out, err := exec.Command(goTool, "build", "-o", built.dir+string(filepath.Separator), "./...").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./examples/...: %w\n%s", err, out)
		}
	})
	require.NoError(t, built.err)
	path := filepath.Join(built.dir, name)
	require.FileExists(t, path, "no example %s", name)
	return path
}

// goCommand is the go tool, or a skip without one.
func goCommand(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	return goTool
}

// result is what one run of an example printed.
type result struct {
	stdout, stderr string
	err            error
}

// runExample runs the example once in a directory of its own (where its
// database goes), with env added to this process's environment and stdin
// as its input.
func runExample(t *testing.T, name, stdin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, example(t, name), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not end within %s:\nstdout:\n%s\nstderr:\n%s", name, runTimeout, &stdout, &stderr)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// requireOK checks that the run exited 0.
func requireOK(t *testing.T, got result) {
	t.Helper()
	require.NoError(t, got.err, "stdout:\n%s\nstderr:\n%s", got.stdout, got.stderr)
}

func TestExamplesVet(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(goCommand(t), "vet", "./...").CombinedOutput()
	require.NoError(t, err, "go vet ./examples/...:\n%s", out)
}

// TestEmbedding serves AgentOS from the program, sends it one run and
// stops: the answer is printed, and the server logged where it listened
// and its graceful stop.
func TestEmbedding(t *testing.T) {
	t.Parallel()
	got := runExample(t, "embedding", "", nil, "-once", "-addr", "127.0.0.1:0")
	requireOK(t, got)
	require.Equal(t, "Hello! I am an agnogo agent, served from a Go program.\n", got.stdout)
	require.Contains(t, got.stderr, `AgentOS listening addr=127.0.0.1:`)
	require.Contains(t, got.stderr, "HTTP server stopped")
}

// TestEmbeddingWithOpenAI runs the embedding example on a real provider's
// client, pointed at a fake OpenAI API by OPENAI_BASE_URL.
func TestEmbeddingWithOpenAI(t *testing.T) {
	t.Parallel()
	api := fakeopenai.New(t)
	api.Enqueue(fakeopenai.Text("Hello from the fake OpenAI API."))
	got := runExample(t, "embedding", "", []string{"OPENAI_BASE_URL=" + api.URL, "OPENAI_API_KEY=sk-fake"},
		"-once", "-addr", "127.0.0.1:0", "-model", "gpt-test")
	requireOK(t, got)
	require.Equal(t, "Hello from the fake OpenAI API.\n", got.stdout)
	require.Len(t, api.Requests(), 1)
	require.Equal(t, "gpt-test", api.Requests()[0].Body["model"])
}

func TestTypedTool(t *testing.T) {
	t.Parallel()
	got := runExample(t, "typed-tool", "", nil)
	requireOK(t, got)
	require.Contains(t, got.stdout, `"city":{"type":"string","description":"the city to look up"}`, "the schema is inferred from the struct")
	require.Contains(t, got.stdout, `tool get_weather(map[city:Paris]) -> {"city":"Paris","temperature":21.5,"units":"celsius","sky":"sunny"}`)
	require.Contains(t, got.stdout, `According to get_weather: {"city":"Paris"`)
}

func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	got := runExample(t, "structured-output", "", nil)
	requireOK(t, got)
	require.Contains(t, got.stdout, "Pancakes (20 min, content_type Recipe)\n")
	require.Contains(t, got.stdout, "ingredients: 200 g flour, 2 eggs, 300 ml milk, a pinch of salt\n")
	require.Contains(t, got.stdout, "3. Fry ladlefuls")
}

// TestHumanApproval answers the confirmation prompt both ways: the tool
// runs only when the person says yes.
func TestHumanApproval(t *testing.T) {
	t.Parallel()
	for answer, want := range map[string]string{
		"y\n": "send_email: sent to ada@example.com\n",
		"n\n": "send_email: The user rejected the call to send_email. Note: the user said no\n",
		"":    "send_email: The user rejected the call to send_email", // no answer is no
	} {
		got := runExample(t, "human-approval", answer, nil)
		requireOK(t, got)
		require.Contains(t, got.stdout, `The agent wants to call send_email({"body":"The report is ready.","subject":"Report","to":"ada@example.com"}). Allow? [y/N]`)
		require.Contains(t, got.stdout, want, "answer %q", answer)
	}
}

// TestBackground submits a background run on the durable queue, drops its
// stream, resumes it and reads the finished run and its queue job.
func TestBackground(t *testing.T) {
	t.Parallel()
	got := runExample(t, "background", "", nil)
	requireOK(t, got)
	require.Contains(t, got.stdout, "RunStarted    event_index=0")
	require.Contains(t, got.stdout, "-- stream dropped after event_index")
	// A live run answers with catch_up when events came after the last one
	// seen, and subscribed alone when none did yet; a finished one with replay.
	require.Regexp(t, `\((catch_up|replay|subscribed)\)`, got.stdout, "the resumed stream says how it picks up")
	require.Contains(t, got.stdout, `RunCompleted  event_index=7 "Background runs keep going when their client leaves, and survive a restart of the server."`)
	require.Regexp(t, `run \S+: COMPLETED: Background runs keep going`, got.stdout)
	require.Regexp(t, `queue job \S+: completed after 1 attempt\(s\)`, got.stdout)
	require.NotContains(t, got.stderr, "level=ERROR")
}

// TestClaudeCode runs the pinned Claude Code CLI against the fake Messages
// API: the CLI runs a Bash command and answers with its output.
func TestClaudeCode(t *testing.T) {
	t.Parallel()
	bin := testcli.ClaudeBin(t)
	api := fakeanthropic.New(t)
	api.Directed()
	env := []string{"AGNOGO_CLAUDE_BIN=" + bin}
	for key, value := range testcli.ClaudeVars(api.URL, t.TempDir()) {
		env = append(env, key+"="+value)
	}
	got := runExample(t, "claude-code", "", env,
		"-dir", t.TempDir(), "-permission-mode", "bypassPermissions", "-prompt", "run it [[bash:echo hello-from-bash]]")
	requireOK(t, got)
	require.Contains(t, got.stdout, "tool Bash")
	require.Contains(t, got.stdout, "fake-final: hello-from-bash\n")
}

// TestClaudeCodeWithoutTheCLI: without the claude CLI the example says
// what to install and exits 1.
func TestClaudeCodeWithoutTheCLI(t *testing.T) {
	t.Parallel()
	got := runExample(t, "claude-code", "", []string{"AGNOGO_CLAUDE_BIN=" + filepath.Join(t.TempDir(), "no-claude-here")})
	var exit *exec.ExitError
	require.ErrorAs(t, got.err, &exit)
	require.Equal(t, 1, exit.ExitCode())
	require.Contains(t, got.stderr, "the claude CLI is not installed")
	require.Contains(t, got.stderr, "AGNOGO_CLAUDE_BIN")
}

// TestConfigFiles loads the example config files as `agnogo serve` would.
func TestConfigFiles(t *testing.T) {
	t.Parallel()
	single, err := config.Load(filepath.Join("config", "single-node.yaml"))
	require.NoError(t, err)
	require.Equal(t, "sqlite://./agnogo.db", single.DB)
	require.Empty(t, single.Redis)
	require.True(t, single.Queue.Durable)
	require.Len(t, single.Agents, 2)

	replicas, err := config.Load(filepath.Join("config", "replicas.yaml"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(replicas.DB, "postgres://"), replicas.DB)
	require.True(t, strings.HasPrefix(replicas.Redis, "redis://"), replicas.Redis)
	require.True(t, strings.HasPrefix(replicas.MediaStorage, "s3://"), replicas.MediaStorage)
	require.Empty(t, replicas.Queue.ExecutorID, "each server takes its own from AGNOGO_EXECUTOR_ID")
	require.NotNil(t, replicas.Auth)
	require.True(t, replicas.Auth.UserIsolation)
}
