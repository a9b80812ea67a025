package agentos_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/internal/testcli"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// claudeOS is an AgentOS serving a Claude Code agent ("coder") on the real
// CLI against the fake Messages API.
type claudeOS struct {
	*httptest.Server
	os *agentos.OS
}

// claudeRig holds what replicas share: the fake API, the database, the
// working directory.
type claudeRig struct {
	bin   string
	api   *fakeanthropic.Server
	store storage.Store
	path  string // the SQLite database
	cwd   string
	// durable runs background runs on the durable queue.
	durable bool
}

func newClaudeRig(t *testing.T) *claudeRig {
	t.Helper()
	bin := testcli.ClaudeBin(t)
	api := fakeanthropic.New(t)
	api.Directed()
	path := filepath.Join(t.TempDir(), "os.db")
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return &claudeRig{bin: bin, api: api, store: store, path: path, cwd: t.TempDir()}
}

// replica starts an AgentOS whose CLI has its own, empty config dir.
func (r *claudeRig) replica(t *testing.T, tune ...func(*claude.Options, *external.Config)) *claudeOS {
	t.Helper()
	opts := claude.Options{Bin: r.bin, Cwd: r.cwd, PermissionMode: "bypassPermissions",
		ProjectKey: "coder", Env: testcli.ClaudeVars(r.api.URL, t.TempDir()), Transcripts: r.store}
	cfg := external.Config{ID: "coder", Name: "Coder", Store: r.store, Cwd: r.cwd}
	for _, f := range tune {
		f(&opts, &cfg)
	}
	driver, err := claude.NewDriver(opts)
	require.NoError(t, err)
	cfg.Driver = driver
	coder, err := external.New(cfg)
	require.NoError(t, err)
	ocfg := agentos.Config{Store: r.store, Runners: []run.Runner{coder}}
	if r.durable {
		events := agentos.NewEventLog()
		q, err := durable.New(t.Context(), durable.Config{DatabaseURL: "sqlite:file:" + r.path, Store: r.store, Runners: []run.Runner{coder},
			Events: events, ExecutorID: run.NewUUID(), PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		require.NoError(t, q.Launch())
		t.Cleanup(func() { _ = q.Shutdown(time.Second) })
		ocfg.Queue, ocfg.Events = q, events
	}
	os, err := agentos.New(ocfg)
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = os.Shutdown(t.Context()) })
	return &claudeOS{Server: ts, os: os}
}

func (s *claudeOS) post(t *testing.T, fields url.Values) *http.Response {
	t.Helper()
	resp, err := http.PostForm(s.URL+"/agents/coder/runs", fields)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (s *claudeOS) getRun(t *testing.T, runID, sessionID string) map[string]any {
	t.Helper()
	resp, err := http.Get(s.URL + "/agents/coder/runs/" + runID + "?session_id=" + sessionID)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return decode[map[string]any](t, resp)
}

// TestClaudeAgentOverHTTP is the external agent's whole story over HTTP
// with the real claude CLI: a Bash run returns the tool's output and
// metrics, a second turn meanwhile is refused as session_busy (JSON, SSE
// and background), the transcript is in agno_transcripts, and a second
// server with an empty CLI config dir continues the conversation from the
// database.
func TestClaudeAgentOverHTTP(t *testing.T) {
	rig := newClaudeRig(t)
	a := rig.replica(t, func(_ *claude.Options, c *external.Config) { c.Description = "Edits the code." })

	listed, err := http.Get(a.URL + "/agents")
	require.NoError(t, err)
	agents := decode[[]map[string]any](t, listed)
	listed.Body.Close()
	require.Len(t, agents, 1)
	require.Equal(t, "coder", agents[0]["id"])
	require.Equal(t, "Edits the code.", agents[0]["description"])
	require.Equal(t, map[string]any{"name": claude.DefaultModel, "model": claude.DefaultModel, "provider": claude.ProviderName}, agents[0]["model"])

	resp := a.post(t, url.Values{"message": {"list it [[bash:echo tool-output-42]]"}, "session_id": {"s1"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusOK)
	first := decode[map[string]any](t, resp)
	require.Equal(t, "COMPLETED", first["status"])
	require.Equal(t, "fake-final: tool-output-42", first["content"])
	tools := first["tools"].([]any)
	require.Len(t, tools, 1)
	require.Equal(t, "Bash", tools[0].(map[string]any)["tool_name"])
	require.Equal(t, "tool-output-42", tools[0].(map[string]any)["result"])
	metrics := first["metrics"].(map[string]any)
	require.Positive(t, metrics["input_tokens"])
	require.Positive(t, metrics["output_tokens"])
	require.Positive(t, metrics["duration"])
	require.Equal(t, "claude-agent-sdk", first["metadata"].(map[string]any)["sdk"])

	// A slow turn in flight makes the session busy.
	slow := make(chan *http.Response, 1)
	go func() {
		resp, err := http.PostForm(a.URL+"/agents/coder/runs", url.Values{"message": {"think [[sleep:3]] [[text:slow done]]"}, "session_id": {"s1"}, "stream": {"false"}})
		if err == nil {
			slow <- resp
		}
		close(slow)
	}()
	busyRun := waitRunning(t, rig.store, "s1")

	busy := a.post(t, url.Values{"message": {"me too"}, "session_id": {"s1"}, "stream": {"false"}})
	require.Equal(t, http.StatusConflict, busy.StatusCode)
	body := decode[map[string]any](t, busy)
	require.Equal(t, map[string]any{"detail": "Session s1 already has run " + busyRun + " in progress",
		"error_id": "session_busy", "error_type": "session_busy", "run_id": busyRun}, body)

	streamed := a.post(t, url.Values{"message": {"me too"}, "session_id": {"s1"}, "stream": {"true"}})
	require.Equal(t, http.StatusOK, streamed.StatusCode)
	frames := readFrames(t, streamed.Body)
	require.Equal(t, []string{"RunError"}, frameNames(frames), "exactly one RunError event")
	require.Equal(t, "session_busy", frames[0].data["error_type"])
	require.Equal(t, "session_busy", frames[0].data["error_id"])
	require.Equal(t, map[string]any{"run_id": busyRun}, frames[0].data["additional_data"])

	before := countRuns(t, rig.store, "s1")
	background := a.post(t, url.Values{"message": {"later"}, "session_id": {"s1"}, "background": {"true"}, "stream": {"false"}})
	require.Equal(t, http.StatusConflict, background.StatusCode)
	require.Equal(t, before, countRuns(t, rig.store, "s1"), "no PENDING row is written for a refused background run")

	slowResp := <-slow
	require.NotNil(t, slowResp)
	defer slowResp.Body.Close()
	require.Equal(t, http.StatusOK, slowResp.StatusCode)
	require.Equal(t, "slow done", decode[map[string]any](t, slowResp)["content"])

	// The transcript is in the database.
	session, err := rig.store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	cliSession := session.SessionData[claude.SessionKey].(string)
	entries, err := rig.store.ReadTranscript(t.Context(), storage.TranscriptKey{Framework: claude.Framework, ProjectKey: "coder", SessionID: cliSession}, "", 0)
	require.NoError(t, err)
	var transcript strings.Builder
	for _, e := range entries {
		transcript.Write(e.Entry)
	}
	require.Contains(t, transcript.String(), "tool-output-42")
	require.Contains(t, transcript.String(), "slow done")

	// A second server, its CLI config dir empty, continues from the database.
	b := rig.replica(t)
	resp = b.post(t, url.Values{"message": {"what did the tool print? [[text:it printed tool-output-42]]"}, "session_id": {"s1"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusOK)
	require.Equal(t, "it printed tool-output-42", decode[map[string]any](t, resp)["content"])
	requests := rig.api.Requests()
	sent := requestMessages(requests[len(requests)-1])
	require.Contains(t, sent, "echo tool-output-42", "the resumed CLI session sends the earlier turns")
	require.NotContains(t, sent, "Previous conversation", "the session was resumed, not seeded")
}

// TestCancelBackgroundClaudeRun: cancelling a background run of the real
// CLI ends it CANCELLED promptly (see cancelWithin), and the session is free
// again.
func TestCancelBackgroundClaudeRun(t *testing.T) {
	rig := newClaudeRig(t)
	a := rig.replica(t)
	resp := a.post(t, url.Values{"message": {"slowly [[sleep:20]]"}, "session_id": {"s2"}, "background": {"true"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusAccepted)
	runID := decode[map[string]any](t, resp)["run_id"].(string)
	waitRunning(t, rig.store, "s2")
	waitModelCall(t, rig.api, "slowly [[sleep:20]]")

	cancelled := time.Now()
	cancel, err := http.PostForm(a.URL+"/agents/coder/runs/"+runID+"/cancel", url.Values{"session_id": {"s2"}})
	require.NoError(t, err)
	cancel.Body.Close()
	require.Equal(t, http.StatusOK, cancel.StatusCode)
	var status string
	poll(t, cancelWithin, 20*time.Millisecond, func() bool {
		status, _ = a.getRun(t, runID, "s2")["status"].(string)
		return status == "CANCELLED"
	}, "the cancelled run did not end CANCELLED")
	elapsed := time.Since(cancelled)
	require.Equal(t, "CANCELLED", status)
	require.Less(t, elapsed, cancelWithin, "cancel ends the run promptly")
	t.Logf("cancel → CANCELLED in %v", elapsed)

	next := a.post(t, url.Values{"message": {"again [[text:free]]"}, "session_id": {"s2"}, "stream": {"false"}})
	requireStatus(t, next, http.StatusOK)
	require.Equal(t, "free", decode[map[string]any](t, next)["content"], "a cancelled run frees the session")
}

// cancelWithin bounds how long a cancel of a real CLI's run takes to end
// it CANCELLED, as a client sees it. The driver interrupts the CLI and kills
// it after a 500 ms grace, so on an idle machine it takes well under a
// second; the bound leaves room for a loaded one (a CLI slow to answer, the
// race detector, busy cores) and stays far below the 20 s the turn would
// take if the cancel were not honoured.
const cancelWithin = 5 * time.Second

// waitRunning waits for the session's RUNNING run and returns its id.
func waitRunning(t *testing.T, store storage.Store, sessionID string) string {
	t.Helper()
	var runID string
	poll(t, 10*time.Second, 10*time.Millisecond, func() bool {
		recs, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: sessionID, Statuses: []run.Status{run.StatusRunning}})
		require.NoError(t, err)
		if len(recs) > 0 {
			runID = recs[0].Run.RunID
		}
		return runID != ""
	}, "no run of session %s is RUNNING", sessionID)
	return runID
}

// waitModelCall waits until the fake model API received a request whose
// messages hold marker: the CLI is in its turn, waiting on the model.
func waitModelCall(t *testing.T, api *fakeanthropic.Server, marker string) {
	t.Helper()
	poll(t, 30*time.Second, 10*time.Millisecond, func() bool {
		for _, req := range api.Requests() {
			if strings.Contains(requestMessages(req), marker) {
				return true
			}
		}
		return false
	}, "the CLI never asked the model about %q", marker)
}

// countRuns counts a session's stored runs.
func countRuns(t *testing.T, store storage.Store, sessionID string) int {
	t.Helper()
	_, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: sessionID})
	require.NoError(t, err)
	return total
}

// requestMessages renders the messages of a request to the fake.
func requestMessages(body map[string]any) string {
	var b strings.Builder
	messages, _ := body["messages"].([]any)
	for _, m := range messages {
		data, _ := json.Marshal(m)
		b.Write(data)
	}
	return b.String()
}

// requireStatus checks a response's status, showing its body when it is
// another.
func requireStatus(t *testing.T, resp *http.Response, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, readAll(t, resp))
	}
}

// TestClaudeRetriesATransientErrorButNotAuth: a 503 from the model API
// fails the CLI's turn; the run is retried in the same CLI session and
// completes, with a RunRetry event and both attempts on the run. A 401 is
// never retried.
func TestClaudeRetriesATransientErrorButNotAuth(t *testing.T) {
	rig := newClaudeRig(t)
	a := rig.replica(t, func(o *claude.Options, c *external.Config) {
		o.Env["CLAUDE_CODE_MAX_RETRIES"] = "0"
		c.Retries, c.DelayBetweenRetries = 2, 10*time.Millisecond
	})
	rig.api.Enqueue(fakeanthropic.HTTPError(http.StatusServiceUnavailable, "overloaded_error", "try later"))
	resp := a.post(t, url.Values{"message": {"flaky [[text:made it]]"}, "session_id": {"s3"}, "stream": {"true"}})
	requireStatus(t, resp, http.StatusOK)
	frames := readFrames(t, resp.Body)
	names := frameNames(frames)
	require.Contains(t, names, "RunRetry")
	require.Equal(t, "RunCompleted", names[len(names)-1])
	require.Equal(t, "made it", frames[len(frames)-1].data["content"])
	runID := frames[0].data["run_id"].(string)
	stored := a.getRun(t, runID, "s3")
	require.Len(t, stored["metadata"].(map[string]any)["attempts"], 2)

	resp = a.post(t, url.Values{"message": {"no key [[error:401]]"}, "session_id": {"s4"}, "stream": {"true"}})
	requireStatus(t, resp, http.StatusOK)
	frames = readFrames(t, resp.Body)
	names = frameNames(frames)
	require.NotContains(t, names, "RunRetry", "an authentication error is not retried")
	require.Equal(t, "RunError", names[len(names)-1])
	require.Equal(t, "authentication_error", frames[len(frames)-1].data["error_type"])
}

// TestClaudeStructuredOutput: a run's output_schema goes to the CLI as
// --json-schema; the answer is the parsed object, its content_type the
// schema's title, and a stream carries it as one RunContent.
func TestClaudeStructuredOutput(t *testing.T) {
	rig := newClaudeRig(t)
	a := rig.replica(t)
	schema := `{"title":"Verdict","type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`
	resp := a.post(t, url.Values{"message": {`decide [[json:{"answer":"yes"}]]`}, "session_id": {"s5"}, "stream": {"true"}, "output_schema": {schema}})
	requireStatus(t, resp, http.StatusOK)
	frames := readFrames(t, resp.Body)
	var contents []frame
	for _, f := range frames {
		if f.event == "RunContent" {
			contents = append(contents, f)
		}
	}
	require.Len(t, contents, 1, "one RunContent with the JSON answer")
	require.JSONEq(t, `{"answer":"yes"}`, contents[0].data["content"].(string))
	last := frames[len(frames)-1]
	require.Equal(t, "RunCompleted", last.event)
	require.Equal(t, map[string]any{"answer": "yes"}, last.data["content"])
	require.Equal(t, "Verdict", last.data["content_type"])

	bad := a.post(t, url.Values{"message": {"list"}, "session_id": {"s5"}, "stream": {"false"}, "output_schema": {`{"type":"array","items":{"type":"string"}}`}})
	requireStatus(t, bad, http.StatusUnprocessableEntity)
	require.Contains(t, readAll(t, bad), "must describe an object", "refused before the run")
}

// TestClaudeAttachments: uploaded files are staged under the working
// directory for the CLI to read — a traversing file name stays inside the
// run's uploads directory — and removed after the run; audio is refused
// with 400 unsupported_media before anything runs, and a file named by its
// path on the server with 422.
func TestClaudeAttachments(t *testing.T) {
	rig := newClaudeRig(t)
	a := rig.replica(t)
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...)
	multi := &server{Server: a.Server}
	resp := multi.postMultipart(t, "/agents/coder/runs", url.Values{"message": {"read it [[bash:cat .agnogo/uploads/*/notes.txt]]"}, "session_id": {"s6"}, "stream": {"false"}},
		upload{"../../notes.txt", "text/plain", []byte("secret-notes-7")}, upload{"pic.png", "image/png", png})
	requireStatus(t, resp, http.StatusOK)
	out := decode[map[string]any](t, resp)
	require.Equal(t, "fake-final: secret-notes-7", out["content"], "the CLI read the staged file")
	runID := out["run_id"].(string)
	prompt := requestMessages(rig.api.Requests()[len(rig.api.Requests())-1])
	uploads := filepath.Join(rig.cwd, ".agnogo", "uploads", runID)
	require.Contains(t, prompt, filepath.Join(uploads, "notes.txt"), "the prompt lists the staged file")
	require.Contains(t, prompt, "image/png")
	// "../../notes.txt" from the run's folder would land in .agnogo/ (and
	// be removed with the run's files, so only the prompt can tell).
	require.NotContains(t, prompt, filepath.Join(rig.cwd, ".agnogo", "notes.txt"), "the traversing name did not escape")
	require.NoDirExists(t, uploads, "staged files are removed after the run")

	audio := multi.postMultipart(t, "/agents/coder/runs", url.Values{"message": {"listen"}, "session_id": {"s7"}, "stream": {"true"}},
		upload{"clip.mp3", "audio/mpeg", []byte("ID3fake")})
	requireStatus(t, audio, http.StatusBadRequest)
	body := decode[map[string]any](t, audio)
	require.Equal(t, "unsupported_media", body["error_id"])
	require.Equal(t, "unsupported_media", body["error_type"])
	require.Zero(t, countRuns(t, rig.store, "s7"), "nothing ran")

	// A file named by a path on the server — a symlink here — is refused
	// outright: a client cannot make the agent read the server's files.
	target := filepath.Join(t.TempDir(), "target.txt")
	require.NoError(t, os.WriteFile(target, []byte("x"), 0o600))
	link := filepath.Join(t.TempDir(), "link.txt")
	require.NoError(t, os.Symlink(target, link))
	files, _ := json.Marshal([]map[string]any{{"filepath": link, "filename": "link.txt"}})
	linked := a.post(t, url.Values{"message": {"read"}, "session_id": {"s8"}, "stream": {"false"}, "input_files": {string(files)}})
	requireStatus(t, linked, http.StatusUnprocessableEntity)
	require.Contains(t, readAll(t, linked), "cannot be named over HTTP")
	require.Zero(t, countRuns(t, rig.store, "s8"), "nothing ran")
}

// TestClaudeCheckpointFork: the last tool result of a batch is a
// checkpoint; continuing from it forks the stored transcript there and runs
// a new turn on the branch as a sibling run, and later turns go on from the
// branch. continue_from=last_user replays the run's prompt.
func TestClaudeCheckpointFork(t *testing.T) {
	rig := newClaudeRig(t)
	a := rig.replica(t)
	resp := a.post(t, url.Values{"message": {"count [[bash:echo one-two]]"}, "session_id": {"s9"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusOK)
	first := decode[map[string]any](t, resp)
	require.Equal(t, "fake-final: one-two", first["content"])
	runID := first["run_id"].(string)

	points, err := http.Get(a.URL + "/agents/coder/runs/" + runID + "/checkpoints?session_id=s9")
	require.NoError(t, err)
	defer points.Body.Close()
	var checkpoint map[string]any
	listed := decode[struct {
		Checkpoints []map[string]any `json:"checkpoints"`
	}](t, points)
	for _, c := range listed.Checkpoints {
		if c["reason"] == "checkpoint" {
			checkpoint = c
		}
	}
	require.NotNil(t, checkpoint, "the Bash result is a checkpoint")
	require.Equal(t, "tool", checkpoint["message_role"])
	index := int(checkpoint["message_index"].(float64))

	// Another replica forks from the checkpoint, from the database alone.
	b := rig.replica(t)
	forked, err := http.PostForm(b.URL+"/agents/coder/runs/"+runID+"/continue", url.Values{"session_id": {"s9"}, "stream": {"false"},
		"continue_from": {fmt.Sprint(index)}, "input": {"now branch [[text:branched answer]]"}})
	require.NoError(t, err)
	defer forked.Body.Close()
	requireStatus(t, forked, http.StatusOK)
	fork := decode[map[string]any](t, forked)
	require.Equal(t, "branched answer", fork["content"])
	require.NotEqual(t, runID, fork["run_id"], "a finished run is continued as a new run")
	require.Equal(t, runID, fork["forked_from_run_id"])
	sent := requestMessages(rig.api.Requests()[len(rig.api.Requests())-1])
	require.Contains(t, sent, "one-two", "the branch keeps the tool call and its result")
	require.NotContains(t, sent, "fake-final", "the branch drops what came after the checkpoint")

	resp = a.post(t, url.Values{"message": {"and then? [[text:after the branch]]"}, "session_id": {"s9"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusOK)
	require.Equal(t, "after the branch", decode[map[string]any](t, resp)["content"])
	sent = requestMessages(rig.api.Requests()[len(rig.api.Requests())-1])
	require.Contains(t, sent, "branched answer", "later turns go on from the branch")
	require.NotContains(t, sent, "fake-final", "and not from the abandoned one")

	replayed, err := http.PostForm(a.URL+"/agents/coder/runs/"+runID+"/continue", url.Values{"session_id": {"s9"}, "stream": {"false"}, "continue_from": {"last_user"}})
	require.NoError(t, err)
	defer replayed.Body.Close()
	requireStatus(t, replayed, http.StatusOK)
	require.Equal(t, "fake-final: one-two", decode[map[string]any](t, replayed)["content"], "last_user sends the run's prompt again")
}

// TestClaudeCompaction: "/compact" compacts the CLI session through the
// database-backed transcript; another replica resumes the compacted
// session, and compaction waits its turn like any other.
func TestClaudeCompaction(t *testing.T) {
	rig := newClaudeRig(t)
	a := rig.replica(t)
	resp := a.post(t, url.Values{"message": {"remember [[bash:echo alpha-beta]]"}, "session_id": {"s10"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusOK)
	resp = a.post(t, url.Values{"message": {"/compact"}, "session_id": {"s10"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusOK)
	compacted := decode[map[string]any](t, resp)
	t.Logf("compaction run: %v", compacted["content"])
	require.Equal(t, "COMPLETED", compacted["status"])

	session, err := rig.store.GetSession(t.Context(), "s10", storage.GetSessionOptions{})
	require.NoError(t, err)
	cliSession := session.SessionData[claude.SessionKey].(string)
	entries, err := rig.store.ReadTranscript(t.Context(), storage.TranscriptKey{Framework: claude.Framework, ProjectKey: "coder", SessionID: cliSession}, "", 0)
	require.NoError(t, err)
	var transcript strings.Builder
	for _, e := range entries {
		transcript.Write(e.Entry)
		transcript.WriteByte('\n')
	}
	require.Contains(t, transcript.String(), "compact_boundary", "the compaction is in the stored transcript")
	require.Contains(t, transcript.String(), "isCompactSummary")

	b := rig.replica(t)
	resp = b.post(t, url.Values{"message": {"still there? [[text:yes]]"}, "session_id": {"s10"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusOK)
	require.Equal(t, "yes", decode[map[string]any](t, resp)["content"])
	sent := requestMessages(rig.api.Requests()[len(rig.api.Requests())-1])
	t.Logf("after compaction the CLI sent: %.600s", sent)
	require.NotContains(t, sent, "echo alpha-beta", "the resumed session is the compacted one")
}

// TestClaudeOnTheDurableQueue: background runs of a Claude agent on the
// durable queue. A second submission to a busy session is accepted and
// runs after the first (per-session FIFO), in the same CLI session, while
// an inline turn meanwhile is still refused; cancel ends a queued run's
// CLI turn CANCELLED promptly.
func TestClaudeOnTheDurableQueue(t *testing.T) {
	rig := newClaudeRig(t)
	rig.durable = true
	a := rig.replica(t)
	first := a.post(t, url.Values{"message": {"slow [[sleep:2]] [[text:first done]]"}, "session_id": {"q1"}, "background": {"true"}, "stream": {"false"}})
	requireStatus(t, first, http.StatusAccepted)
	firstID := decode[map[string]any](t, first)["run_id"].(string)
	second := a.post(t, url.Values{"message": {"next [[text:second done]]"}, "session_id": {"q1"}, "background": {"true"}, "stream": {"false"}})
	requireStatus(t, second, http.StatusAccepted)
	secondID := decode[map[string]any](t, second)["run_id"].(string)

	inline := a.post(t, url.Values{"message": {"now"}, "session_id": {"q1"}, "stream": {"false"}})
	requireStatus(t, inline, http.StatusConflict)
	require.Equal(t, "session_busy", decode[map[string]any](t, inline)["error_type"])

	s := &server{Server: a.Server}
	require.Equal(t, "first done", pollRunOf(t, s, "coder", firstID, "q1")["content"])
	out := pollRunOf(t, s, "coder", secondID, "q1")
	require.Equal(t, "COMPLETED", out["status"])
	require.Equal(t, "second done", out["content"])
	sent := requestMessages(rig.api.Requests()[len(rig.api.Requests())-1])
	require.Contains(t, sent, "first done", "the queued run went on in the same CLI session")

	slow := a.post(t, url.Values{"message": {"very slow [[sleep:20]]"}, "session_id": {"q2"}, "background": {"true"}, "stream": {"false"}})
	requireStatus(t, slow, http.StatusAccepted)
	slowID := decode[map[string]any](t, slow)["run_id"].(string)
	waitRunning(t, rig.store, "q2")
	waitModelCall(t, rig.api, "very slow [[sleep:20]]")
	cancelled := time.Now()
	cancel, err := http.PostForm(a.URL+"/agents/coder/runs/"+slowID+"/cancel", url.Values{"session_id": {"q2"}})
	require.NoError(t, err)
	cancel.Body.Close()
	require.Equal(t, "CANCELLED", pollRunOf(t, s, "coder", slowID, "q2")["status"])
	require.Less(t, time.Since(cancelled), cancelWithin)
}

// TestClaudeConfirmation: with confirm_tools, a tool call the CLI's
// permission rules do not allow pauses the run for the user's
// confirmation; continuing with the decision goes on in the same CLI
// session — an approved call runs, a declined one does not.
func TestClaudeConfirmation(t *testing.T) {
	rig := newClaudeRig(t)
	a := rig.replica(t, func(o *claude.Options, _ *external.Config) { o.PermissionMode, o.ConfirmTools = "default", true })
	target := filepath.Join(rig.cwd, "approved.txt")
	resp := a.post(t, url.Values{"message": {"save it [[write:" + target + "|approved-content]]"}, "session_id": {"c1"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusOK)
	paused := decode[map[string]any](t, resp)
	require.Equal(t, "PAUSED", paused["status"])
	requirements := paused["requirements"].([]any)
	require.Len(t, requirements, 1)
	tool := requirements[0].(map[string]any)["tool_execution"].(map[string]any)
	require.Equal(t, "Write", tool["tool_name"])
	require.Equal(t, true, tool["requires_confirmation"])
	require.NoFileExists(t, target, "nothing is written before the user decides")

	decision, _ := json.Marshal([]map[string]any{{"tool_call_id": tool["tool_call_id"], "confirmed": true}})
	b := rig.replica(t, func(o *claude.Options, _ *external.Config) { o.PermissionMode, o.ConfirmTools = "default", true })
	continued, err := http.PostForm(b.URL+"/agents/coder/runs/"+paused["run_id"].(string)+"/continue",
		url.Values{"session_id": {"c1"}, "stream": {"false"}, "tools": {string(decision)}})
	require.NoError(t, err)
	defer continued.Body.Close()
	requireStatus(t, continued, http.StatusOK)
	done := decode[map[string]any](t, continued)
	require.Equal(t, "COMPLETED", done["status"])
	require.Equal(t, paused["run_id"], done["run_id"], "the paused run goes on in place")
	written, err := os.ReadFile(target)
	require.NoError(t, err, "the approved call ran")
	require.Equal(t, "approved-content", string(written))

	declined := filepath.Join(rig.cwd, "declined.txt")
	resp = a.post(t, url.Values{"message": {"save this too [[write:" + declined + "|nope]]"}, "session_id": {"c2"}, "stream": {"false"}})
	requireStatus(t, resp, http.StatusOK)
	paused = decode[map[string]any](t, resp)
	require.Equal(t, "PAUSED", paused["status"])
	tool = paused["requirements"].([]any)[0].(map[string]any)["tool_execution"].(map[string]any)
	decision, _ = json.Marshal([]map[string]any{{"tool_call_id": tool["tool_call_id"], "confirmed": false, "confirmation_note": "not today"}})
	rejected, err := http.PostForm(a.URL+"/agents/coder/runs/"+paused["run_id"].(string)+"/continue",
		url.Values{"session_id": {"c2"}, "stream": {"false"}, "tools": {string(decision)}})
	require.NoError(t, err)
	defer rejected.Body.Close()
	requireStatus(t, rejected, http.StatusOK)
	require.Equal(t, "COMPLETED", decode[map[string]any](t, rejected)["status"])
	require.NoFileExists(t, declined, "a declined call does not run")
	require.Contains(t, requestMessages(rig.api.Requests()[len(rig.api.Requests())-1]), "not today", "the harness is told why")
}
