package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// terminalOutput is stdout or stderr shown on a terminal.
type terminalOutput struct{ bytes.Buffer }

func (*terminalOutput) IsTerminal() bool { return true }

// spinnerFrame matches what the spinner draws and erases.
var spinnerFrame = regexp.MustCompile("\r\x1b\\[K(?:[" + string(spinnerFrames) + "] [^\r\x1b]*)?")

// TestRunProgressOnTerminal: on a terminal, agnogo run shows the answer and
// tool calls as they come and a spinner on stderr while the model or a tool
// works, erased before anything else is printed.
func TestRunProgressOnTerminal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("first line of a\nsecond\n"), 0o600))
	b := setupRun(t, workspaceAgent(root))
	b.fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("read_file", map[string]any{"path": "a.txt"})),
		fakeopenai.Text("The file starts with first line of a."),
	)

	var stdout, stderr terminalOutput
	code := run(t.Context(), []string{"run", "--config", b.config, "coder", "Read a.txt"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.Equal(t, "→ tool read_file {\"path\":\"a.txt\"}\n← read_file: 1\tfirst line of a\nThe file starts with first line of a.\n",
		strings.ReplaceAll(stdout.String(), "     ", ""), "the run is shown as --stream shows it")
	require.True(t, b.fake.Requests()[0].Body["stream"] == true, "the model streams")

	progress := stderr.String()
	require.True(t, strings.HasPrefix(progress, eraseLine+"⠋ thinking…"), "the spinner starts at once: %q", progress)
	require.Regexp(t, regexp.QuoteMeta(eraseLine)+"["+string(spinnerFrames)+"] running read_file…", progress, "a tool call is shown while it runs")
	require.Regexp(t, `^COMPLETED  session [0-9a-f-]{36}  run [0-9a-f-]{36}  tokens \d+ in / \d+ out\n$`, spinnerFrame.ReplaceAllString(progress, ""),
		"the spinner is erased before the status line")
	require.True(t, strings.HasPrefix(progress[strings.LastIndex(progress, eraseLine):], eraseLine+"COMPLETED"), "the last frame is erased: %q", progress)

	// --json is for programs: no spinner, the same output as in a pipe.
	b.fake.Enqueue(fakeopenai.Text("Hi."))
	var jsonOut, jsonErr terminalOutput
	code = run(t.Context(), []string{"run", "--config", b.config, "coder", "hi", "--json"}, &jsonOut, &jsonErr)
	require.Equal(t, exitOK, code, jsonErr.String())
	require.Empty(t, jsonErr.String())
	require.Equal(t, "Hi.", decodeOutput(t, jsonOut.String())["content"])
}

// TestRunProgressStderrRedirected: with stdout on a terminal and stderr in a
// file, the run is shown live but no spinner is written to the file.
func TestRunProgressStderrRedirected(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	b.fake.Enqueue(fakeopenai.Text("Paris."))
	var stdout terminalOutput
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--config", b.config, "assistant", "Capital of France?"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.Equal(t, "Paris.\n", stdout.String())
	require.Regexp(t, `^COMPLETED  session \S+  run \S+  tokens \d+ in / \d+ out\n$`, stderr.String())
}

// TestRunProgressPaused: a run that pauses on a terminal erases the spinner
// and says how to continue it.
func TestRunProgressPaused(t *testing.T) {
	t.Parallel()
	b := setupRun(t, workspaceAgent(t.TempDir()))
	b.fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("write_file", map[string]any{"path": "b.txt", "content": "new"})))
	var stdout, stderr terminalOutput
	code := run(t.Context(), []string{"run", "--config", b.config, "coder", "Write b.txt"}, &stdout, &stderr)
	require.Equal(t, exitFailure, code)
	require.Regexp(t, `^→ tool write_file \{"content":"new","path":"b.txt"\}\npaused: confirm write_file \{"content":"new","path":"b.txt"\} \(requirement [0-9a-f-]{36}\)\n$`, stdout.String())
	require.Regexp(t, `^agnogo: run [0-9a-f-]{36} paused for 1 requirement; continue it with agnogo run --continue [0-9a-f-]{36} --approve \(or --reject\)\n$`,
		spinnerFrame.ReplaceAllString(stderr.String(), ""))
}

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	require.False(t, isTerminal(null), "the null device is a character device, not a terminal")
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer file.Close()
	require.False(t, isTerminal(file))
	require.False(t, isTerminal(&bytes.Buffer{}))
	require.True(t, isTerminal(&terminalOutput{}))
}
