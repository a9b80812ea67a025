package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/internal/testcli"
)

// External coding agents (type: claude, type: codex) served by the agnogo
// binary: the scenarios of agentos/external_test.go, through a config file,
// the durable queue and a Postgres database shared by two servers.

// externalRig is what the servers of TestExternalAgentsServe share: a fresh
// Postgres database, the fake model APIs, the CLIs' working directories and
// Codex's home.
type externalRig struct {
	binary    string
	dbURL     string
	claudeBin string
	codexBin  string
	anthropic *fakeanthropic.Server
	openai    *fakeopenai.Server
	claudeCwd string
	codexCwd  string
	codexHome string
}

func newExternalRig(t *testing.T) *externalRig {
	t.Helper()
	r := &externalRig{claudeBin: testcli.ClaudeBin(t), codexBin: testcli.CodexBin(t)}
	r.binary = buildBinary(t)
	r.dbURL = freshDatabase(t)
	r.anthropic = fakeanthropic.New(t)
	r.anthropic.Directed()
	r.openai = fakeopenai.New(t)
	vars := testcli.CodexVars(t, r.openai.URL)
	r.codexHome = vars["CODEX_HOME"]
	require.NotEmpty(t, r.codexHome)
	r.claudeCwd, r.codexCwd = t.TempDir(), t.TempDir()
	return r
}

// server writes the config of one server — its Claude config dir fresh and
// empty, everything else shared — and starts `agnogo serve` on it with its
// own executor id.
func (r *externalRig) server(t *testing.T, name string) *process {
	t.Helper()
	config := filepath.Join(t.TempDir(), "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`name: External agents
db: %[1]q
agents:
  - id: coder
    type: claude
    claude_bin: %[2]q
    cwd: %[3]q
    permission_mode: bypassPermissions
    config_dir: %[4]q
    env: {ANTHROPIC_BASE_URL: %[5]q, ANTHROPIC_API_KEY: dummy, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_TELEMETRY: "1", DISABLE_ERROR_REPORTING: "1", DISABLE_AUTOUPDATER: "1", IS_SANDBOX: "1"}
  - id: codex
    type: codex
    codex_bin: %[6]q
    cwd: %[7]q
    codex_home: %[8]q
    model: gpt-5.5
    sandbox: read-only
    env: {FAKE_OPENAI_KEY: dummy}
`, r.dbURL, r.claudeBin, r.claudeCwd, t.TempDir(), r.anthropic.URL, r.codexBin, r.codexCwd, r.codexHome)), 0o600))
	return startReplica(t, r.binary, config, "external-"+name)
}

// extPost posts form to path and returns the status and the body.
func extPost(t *testing.T, p *process, path string, form url.Values) (int, []byte) {
	t.Helper()
	resp, err := http.PostForm(p.url+path, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// extGet reads path as JSON into out, requiring 200.
func extGet(t *testing.T, p *process, path string, out any) {
	t.Helper()
	resp, err := http.Get(p.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
	require.NoError(t, json.Unmarshal(body, out), "GET %s: %s", path, body)
}

// extRun posts a run to the agent and requires the status, returning the
// decoded JSON answer.
func extRun(t *testing.T, p *process, agent string, status int, form url.Values) map[string]any {
	t.Helper()
	code, body := extPost(t, p, "/agents/"+agent+"/runs", form)
	require.Equal(t, status, code, "POST /agents/%s/runs: %s\nserver log:\n%s", agent, body, p.log)
	var out map[string]any
	require.NoError(t, json.Unmarshal(body, &out), "%s", body)
	return out
}

// extRunStatus reads the run's status.
func extRunStatus(t *testing.T, p *process, agent, runID, sessionID string) string {
	t.Helper()
	var out map[string]any
	extGet(t, p, "/agents/"+agent+"/runs/"+runID+"?session_id="+url.QueryEscape(sessionID), &out)
	status, _ := out["status"].(string)
	return status
}

// extRunningRun waits for the session's RUNNING run of the agent, as
// GET /agents/{agent}/runs lists it, and returns its id.
func extRunningRun(t *testing.T, p *process, agent, sessionID string) string {
	t.Helper()
	var runID string
	found := poll(streamTimeout, 20*time.Millisecond, func() bool {
		var runs []map[string]any
		extGet(t, p, "/agents/"+agent+"/runs?session_id="+url.QueryEscape(sessionID), &runs)
		for _, r := range runs {
			if r["status"] == "RUNNING" {
				runID = r["run_id"].(string)
				return true
			}
		}
		return false
	})
	require.True(t, found, "no run of session %s is RUNNING:\n%s", sessionID, p.log)
	return runID
}

// extOnlyTool returns the run's one tool call.
func extOnlyTool(t *testing.T, out map[string]any) map[string]any {
	t.Helper()
	tools, _ := out["tools"].([]any)
	require.Len(t, tools, 1, "tools: %v", out["tools"])
	tool, _ := tools[0].(map[string]any)
	require.NotNil(t, tool)
	return tool
}

// extSentMessages renders the messages of a request to the fake Messages
// API.
func extSentMessages(body map[string]any) string {
	var b strings.Builder
	messages, _ := body["messages"].([]any)
	for _, m := range messages {
		data, _ := json.Marshal(m)
		b.Write(data)
	}
	return b.String()
}

// TestExternalAgentsServe is the external agents' acceptance against the
// built binary: two `agnogo serve` processes on one fresh Postgres database,
// their configs differing only in the Claude CLI's config dir. A Claude run
// returns the Bash tool's output and metrics; a second turn while one is in
// flight is refused as session_busy (JSON and SSE); the transcript is in
// agno_transcripts; the second server resumes the CLI session from the
// database; a Codex run returns its shell command's output; and cancelling
// a background Claude run on the durable queue ends it CANCELLED within a
// second.
func TestExternalAgentsServe(t *testing.T) {
	t.Parallel()
	rig := newExternalRig(t)
	a := rig.server(t, "a")
	started := time.Now()

	const session = "ext-s1"
	first := extRun(t, a, "coder", http.StatusOK,
		url.Values{"message": {"run it [[bash:echo from-the-binary]]"}, "session_id": {session}, "stream": {"false"}})
	require.Equal(t, "COMPLETED", first["status"])
	require.Equal(t, "fake-final: from-the-binary", first["content"])
	tool := extOnlyTool(t, first)
	require.Equal(t, "Bash", tool["tool_name"])
	require.Equal(t, "from-the-binary", tool["result"])
	metrics, _ := first["metrics"].(map[string]any)
	require.NotNil(t, metrics, "%v", first)
	require.Positive(t, metrics["input_tokens"])
	require.Positive(t, metrics["duration"])
	t.Logf("first Claude run: %v", time.Since(started))

	// A slow turn in flight makes the session busy.
	type answer struct {
		code int
		body []byte
		err  error
	}
	slow := make(chan answer, 1)
	go func() {
		resp, err := http.PostForm(a.url+"/agents/coder/runs",
			url.Values{"message": {"think [[sleep:3]] [[text:slow done]]"}, "session_id": {session}, "stream": {"false"}})
		if err != nil {
			slow <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		slow <- answer{code: resp.StatusCode, body: body, err: err}
	}()
	busyRun := extRunningRun(t, a, "coder", session)

	code, body := extPost(t, a, "/agents/coder/runs", url.Values{"message": {"me too"}, "session_id": {session}, "stream": {"false"}})
	require.Equal(t, http.StatusConflict, code, "%s", body)
	var refused map[string]any
	require.NoError(t, json.Unmarshal(body, &refused), "%s", body)
	require.Equal(t, map[string]any{"detail": "Session " + session + " already has run " + busyRun + " in progress",
		"error_id": "session_busy", "error_type": "session_busy", "run_id": busyRun}, refused)

	frames := a.stream(t, "/agents/coder/runs", url.Values{"message": {"me too"}, "session_id": {session}, "stream": {"true"}}).rest(t)
	require.Equal(t, []string{"RunError"}, sseNames(frames), "exactly one RunError event")
	require.Equal(t, "session_busy", frames[0].data["error_type"])

	done := <-slow
	require.NoError(t, done.err)
	require.Equal(t, http.StatusOK, done.code, "%s", done.body)
	var slowOut map[string]any
	require.NoError(t, json.Unmarshal(done.body, &slowOut))
	require.Equal(t, "slow done", slowOut["content"])
	require.Equal(t, busyRun, slowOut["run_id"], "the run listed RUNNING was the slow one")

	// The CLI's transcript is in the database.
	conn, err := pgx.Connect(t.Context(), rig.dbURL)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var entries int
	require.NoError(t, conn.QueryRow(t.Context(),
		`SELECT count(*) FROM ai.agno_transcripts WHERE agno_session_id = $1 AND entry LIKE '%from-the-binary%'`, session).Scan(&entries))
	require.Positive(t, entries, "agno_transcripts holds the session's transcript")

	// The second server, its CLI config dir empty, continues the
	// conversation from the database.
	b := rig.server(t, "b")
	second := extRun(t, b, "coder", http.StatusOK,
		url.Values{"message": {"what did the tool print? [[text:second server answer]]"}, "session_id": {session}, "stream": {"false"}})
	require.Equal(t, "second server answer", second["content"])
	requests := rig.anthropic.Requests()
	sent := extSentMessages(requests[len(requests)-1])
	require.Contains(t, sent, "echo from-the-binary", "the resumed CLI session sends the earlier turns")
	require.NotContains(t, sent, "Previous conversation", "the CLI session was resumed, not seeded")

	// A Codex run runs a shell command and returns its output.
	rig.openai.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call("exec_command", map[string]any{"cmd": "echo codex-from-the-binary"})),
		fakeopenai.Text("fake-final: codex-from-the-binary"),
	)
	codexOut := extRun(t, a, "codex", http.StatusOK, url.Values{"message": {"say it"}, "session_id": {"ext-codex"}, "stream": {"false"}})
	require.Equal(t, "COMPLETED", codexOut["status"])
	tool = extOnlyTool(t, codexOut)
	require.Equal(t, "shell", tool["tool_name"])
	require.Contains(t, tool["result"], "codex-from-the-binary")
	require.Equal(t, "codex", codexOut["metadata"].(map[string]any)["sdk"])
	openaiRequests := rig.openai.Requests()
	require.NotEmpty(t, openaiRequests)
	input, err := json.Marshal(openaiRequests[len(openaiRequests)-1].Body["input"])
	require.NoError(t, err)
	require.Contains(t, string(input), "codex-from-the-binary", "the command really ran: its output went back to the model")

	// Cancelling a background Claude run ends it CANCELLED promptly: the
	// driver interrupts the CLI and kills it after a 500 ms grace, well under
	// a second on an idle machine; the bound leaves room for a loaded one
	// and stays far below the 20 s the turn would take.
	const cancelWithin = 5 * time.Second
	const cancelSession = "ext-s2"
	accepted := extRun(t, a, "coder", http.StatusAccepted,
		url.Values{"message": {"slowly [[sleep:20]]"}, "session_id": {cancelSession}, "background": {"true"}, "stream": {"false"}})
	runID, _ := accepted["run_id"].(string)
	require.NotEmpty(t, runID, "%v", accepted)
	ran := poll(streamTimeout, 20*time.Millisecond, func() bool { return extRunStatus(t, a, "coder", runID, cancelSession) == "RUNNING" })
	require.True(t, ran, "the background run never ran:\n%s\n%s", a.log, b.log)
	// The CLI is in its turn, waiting on the model.
	asked := poll(streamTimeout, 10*time.Millisecond, func() bool {
		for _, req := range rig.anthropic.Requests() {
			if strings.Contains(extSentMessages(req), "slowly [[sleep:20]]") {
				return true
			}
		}
		return false
	})
	require.True(t, asked, "the CLI never asked the model:\n%s", a.log)

	cancelled := time.Now()
	code, body = extPost(t, a, "/agents/coder/runs/"+runID+"/cancel", url.Values{"session_id": {cancelSession}})
	require.Equal(t, http.StatusOK, code, "%s", body)
	var status string
	poll(cancelWithin, 20*time.Millisecond, func() bool {
		status = extRunStatus(t, a, "coder", runID, cancelSession)
		return status == "CANCELLED"
	})
	elapsed := time.Since(cancelled)
	t.Logf("cancel → CANCELLED in %v", elapsed)
	require.Equal(t, "CANCELLED", status, "server a:\n%s\nserver b:\n%s", a.log, b.log)
	require.Less(t, elapsed, cancelWithin, "cancel ends the run promptly")

	free := extRun(t, a, "coder", http.StatusOK,
		url.Values{"message": {"again [[text:free]]"}, "session_id": {cancelSession}, "stream": {"false"}})
	require.Equal(t, "free", free["content"], "a cancelled run frees the session")
	t.Logf("whole scenario: %v", time.Since(started))
}

// sseNames lists the frames' names.
func sseNames(frames []sseFrame) []string {
	names := make([]string, len(frames))
	for i, f := range frames {
		names[i] = f.name
	}
	return names
}
