package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// pausedRunID is the id of the run a paused `agnogo run` names on stderr.
var pausedRunID = regexp.MustCompile(`agnogo: run ([0-9a-f-]{36}) paused for \d+ requirements?; continue it with agnogo run --continue ([0-9a-f-]{36}) --approve \(or --reject\)`)

// pauseWrite runs the coder until it pauses to confirm writing path, and
// returns the paused run's id.
func pauseWrite(t *testing.T, b *runBundle, path string, args ...string) string {
	t.Helper()
	b.fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("write_file", map[string]any{"path": path, "content": "new"})))
	got := b.agnogo(t, append([]string{"coder", "Write " + path}, args...)...)
	require.Equal(t, exitFailure, got.code, got.stderr)
	match := pausedRunID.FindStringSubmatch(got.stderr)
	require.NotNil(t, match, got.stderr)
	require.Equal(t, match[1], match[2])
	return match[1]
}

func TestRunContinueApprove(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	b := setupRun(t, workspaceAgent(root))
	runID := pauseWrite(t, b, "b.txt")
	require.NoFileExists(t, filepath.Join(root, "b.txt"))

	b.fake.Enqueue(fakeopenai.Text("I wrote b.txt."))
	got := b.agnogo(t, "--continue", runID, "--approve")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, "I wrote b.txt.\n", got.stdout)
	require.Regexp(t, `^COMPLETED  session [0-9a-f-]{36}  run `+regexp.QuoteMeta(runID)+`  tokens \d+ in / \d+ out\n$`, got.stderr, "the run goes on under its own id")
	written, err := os.ReadFile(filepath.Join(root, "b.txt"))
	require.NoError(t, err)
	require.Equal(t, "new", string(written))
	require.Contains(t, lastToolMessage(t, b.fake.Requests()[1]), "b.txt", "the tool's result goes back to the model")

	// It is over: continuing it again says so.
	again := b.agnogo(t, "--continue", runID, "--approve")
	require.Equal(t, exitFailure, again.code)
	require.Equal(t, "agnogo: run "+runID+" is COMPLETED, not paused: it waits for no confirmation\n", again.stderr)
	require.Len(t, b.fake.Requests(), 2)
}

func TestRunContinueReject(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	b := setupRun(t, workspaceAgent(root))
	runID := pauseWrite(t, b, "c.txt", "--user", "ana")

	// Another user's run is not found.
	other := b.agnogo(t, "--continue", runID, "--reject", "--user", "bob")
	require.Equal(t, exitFailure, other.code)
	require.Equal(t, "agnogo: no run "+runID+" for user bob\n", other.stderr)
	wrongSession := b.agnogo(t, "--continue", runID, "--reject", "--session", "elsewhere")
	require.Equal(t, exitFailure, wrongSession.code)
	require.Regexp(t, `^agnogo: run `+regexp.QuoteMeta(runID)+` is in session [0-9a-f-]{36}, not elsewhere\n$`, wrongSession.stderr)

	b.fake.Enqueue(fakeopenai.Text("Understood, I left c.txt alone."))
	got := b.agnogo(t, "--continue", runID, "--reject", "--user", "ana", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	output := decodeOutput(t, got.stdout)
	require.Equal(t, runID, output["run_id"])
	require.Equal(t, "COMPLETED", output["status"])
	require.Equal(t, "ana", output["user_id"])
	require.Equal(t, "Understood, I left c.txt alone.", output["content"])
	require.NoFileExists(t, filepath.Join(root, "c.txt"))
	require.Contains(t, lastToolMessage(t, b.fake.Requests()[1]), "rejected", "the model is told the call was rejected")

	// The stored session shows the run completed.
	shown := agnogo(t, "sessions", "show", output["session_id"].(string), "--config", b.config, "--user", "ana")
	require.Equal(t, exitOK, shown.code, shown.stderr)
	require.Regexp(t, regexp.QuoteMeta(runID)+`\s+COMPLETED\s+\S+ \S+\s+Write c\.txt\s+Understood, I left c\.txt alone\.`, shown.stdout)
}

func TestRunContinueStream(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	b := setupRun(t, workspaceAgent(root))
	runID := pauseWrite(t, b, "d.txt")

	b.fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("write_file", map[string]any{"path": "e.txt", "content": "more"})),
	)
	got := b.agnogo(t, "--continue", runID, "--approve", "--stream")
	require.Equal(t, exitFailure, got.code, "it pauses again, for the next write")
	require.FileExists(t, filepath.Join(root, "d.txt"))
	require.Regexp(t, `(?m)^paused: confirm write_file \{"content":"more","path":"e.txt"\} \(requirement [0-9a-f-]{36}\)$`, got.stdout)
	require.Regexp(t, `run `+regexp.QuoteMeta(runID)+` paused for 1 requirement; continue it with agnogo run --continue`, got.stderr)

	b.fake.Enqueue(fakeopenai.Text("Both written."))
	got = b.agnogo(t, "--continue", runID, "--approve", "--stream")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, "← write_file: Wrote 4 bytes to e.txt\nBoth written.\n", got.stdout, "the approved call runs first")
	require.FileExists(t, filepath.Join(root, "e.txt"))
}

func TestRunContinueErrors(t *testing.T) {
	t.Parallel()
	b := setupRun(t, workspaceAgent(t.TempDir()))
	runID := pauseWrite(t, b, "b.txt")

	usage := []struct {
		name     string
		args     []string
		mentions string
	}{
		{"no resolution", []string{"--continue", runID}, "--continue needs --approve (run the tool calls the run waits for) or --reject (refuse them)"},
		{"both", []string{"--continue", runID, "--approve", "--reject"}, "--approve and --reject cannot both be given"},
		{"agent given", []string{"--continue", runID, "--approve", "coder", "hi"}, "--continue takes no AGENT or MESSAGE (the run names its agent), got 2 argument(s)"},
		{"approve alone", []string{"coder", "hi", "--approve"}, "--approve and --reject go with --continue RUN_ID"},
		{"missing db", []string{"--continue", runID, "--approve", "--db", "sqlite://" + filepath.Join(b.dir, "other.db")}, "--db: no database at "},
	}
	for _, tt := range usage {
		got := b.agnogo(t, tt.args...)
		require.Equal(t, exitUsage, got.code, tt.name)
		require.Contains(t, got.stderr, tt.mentions, tt.name)
	}
	require.NoFileExists(t, filepath.Join(b.dir, "other.db"))

	got := b.agnogo(t, "--continue", "no-such-run", "--reject")
	require.Equal(t, exitFailure, got.code)
	require.Equal(t, "agnogo: no run no-such-run\n", got.stderr)

	// A config without the run's agent cannot continue it.
	other := filepath.Join(b.dir, "other.yaml")
	require.NoError(t, os.WriteFile(other, []byte("db: sqlite://"+filepath.Join(b.dir, "agnogo.db")+"\nagents:\n  - {id: assistant, model: openai:gpt-5}\n"), 0o600))
	got = agnogo(t, "run", "--config", other, "--continue", runID, "--approve")
	require.Equal(t, exitUsage, got.code)
	require.Contains(t, got.stderr, `agnogo: run `+runID+` belongs to unknown agent "coder"; known agents: assistant`)

	require.Len(t, b.fake.Requests(), 1, "only the first run called the model")
}

// TestRunContinueQueuedRun: a background run a server parked on its durable
// queue is the server's to continue; agnogo run --continue refuses it and
// runs nothing.
func TestRunContinueQueuedRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	b := setupRun(t, workspaceAgent(root))
	s := startServe(t, "--config", b.config)
	b.fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("write_file", map[string]any{"path": "b.txt", "content": "new"})))
	resp, err := http.PostForm(s.url+"/agents/coder/runs", url.Values{"message": {"Write b.txt"}, "stream": {"false"}, "background": {"true"}, "session_id": {"s1"}})
	require.NoError(t, err)
	var accepted map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%v", accepted)
	runID := accepted["run_id"].(string)
	require.Eventually(t, func() bool {
		got := agnogo(t, "sessions", "show", "s1", "--config", b.config)
		return got.code == exitOK && strings.Contains(got.stdout, "PAUSED")
	}, 30*time.Second, 20*time.Millisecond, "the background run pauses")

	got := b.agnogo(t, "--continue", runID, "--approve")
	require.Equal(t, exitFailure, got.code, got.stderr)
	require.Equal(t, "agnogo: run "+runID+" is paused on the durable queue of a server: continue it through that server's AgentOS API (POST /agents/coder/runs/"+runID+"/continue with background=true)\n", got.stderr)
	require.NoFileExists(t, filepath.Join(root, "b.txt"))
	require.Len(t, b.fake.Requests(), 1)
	require.Equal(t, exitOK, s.shutdown(t), s.log.String())
}
