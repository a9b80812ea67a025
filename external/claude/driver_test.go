package claude_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/internal/testcli"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// rig is a Claude agent on the real CLI against the fake Messages API,
// with a SQLite store.
type rig struct {
	api   *fakeanthropic.Server
	store storage.Store
	cwd   string
	bin   string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	bin := testcli.ClaudeBin(t)
	api := fakeanthropic.New(t)
	api.Directed()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agnogo.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return &rig{api: api, store: store, cwd: t.TempDir(), bin: bin}
}

// agent builds an agent whose CLI keeps its config in configDir.
func (r *rig) agent(t *testing.T, configDir string, tune ...func(*claude.Options, *external.Config)) *external.Agent {
	t.Helper()
	opts := claude.Options{Bin: r.bin, Cwd: r.cwd, PermissionMode: "bypassPermissions", ProjectKey: "coder",
		Env: testcli.ClaudeVars(r.api.URL, configDir), Transcripts: r.store}
	cfg := external.Config{ID: "coder", Store: r.store, Cwd: r.cwd, DelayBetweenRetries: 10 * time.Millisecond}
	for _, f := range tune {
		f(&opts, &cfg)
	}
	driver, err := claude.NewDriver(opts)
	require.NoError(t, err)
	cfg.Driver = driver
	a, err := external.New(cfg)
	require.NoError(t, err)
	return a
}

func TestAgentRunsABashTurnAndResumesFromTheDatabase(t *testing.T) {
	r := newRig(t)
	first := r.agent(t, t.TempDir())
	var names []string
	var streamed strings.Builder
	var out *run.Output
	for event, err := range first.Stream(t.Context(), &run.Input{InputContent: "run it [[bash:echo hello-from-bash]]", SessionID: "s1", PersistOnStart: true}) {
		require.NoError(t, err)
		if c, ok := event.(*run.RunContent); ok {
			streamed.WriteString(c.Content.(string))
			if names[len(names)-1] == run.EventRunContent {
				continue // the answer streams in deltas
			}
		}
		names = append(names, event.EventName())
	}
	require.Equal(t, []string{run.EventRunStarted, run.EventToolCallStarted, run.EventToolCallCompleted, run.EventRunContent, run.EventRunCompleted}, names)
	require.Equal(t, "fake-final: hello-from-bash", streamed.String(), "the streamed deltas make the answer")
	rec, err := r.store.GetRun(t.Context(), firstRunID(t, r.store, "s1"), "")
	require.NoError(t, err)
	out = rec.Run
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "fake-final: hello-from-bash", out.Content)
	require.Len(t, out.Tools, 1)
	require.Equal(t, "Bash", out.Tools[0].ToolName)
	require.Equal(t, "hello-from-bash", *out.Tools[0].Result)
	require.Equal(t, "claude-agent-sdk", out.Metadata["sdk"])
	require.Equal(t, claude.DefaultModel, out.Model)
	require.Positive(t, out.Metrics.InputTokens)
	require.Positive(t, out.Metrics.Duration)
	require.NotNil(t, out.Metrics.Cost)

	session, err := r.store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	cliSession, _ := session.SessionData[claude.SessionKey].(string)
	require.NotEmpty(t, cliSession, "the CLI session id is kept on the session")
	entries, err := r.store.ReadTranscript(t.Context(), storage.TranscriptKey{Framework: claude.Framework, ProjectKey: "coder", SessionID: cliSession}, "", 0)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the transcript is mirrored into the database")
	require.Contains(t, transcriptText(entries), "hello-from-bash")

	// Another replica: a fresh config dir, the same database.
	second := r.agent(t, t.TempDir())
	out2, err := second.Run(t.Context(), &run.Input{InputContent: "and again [[text:second turn]]", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "second turn", out2.Content)
	last := r.api.Requests()[len(r.api.Requests())-1]
	require.Contains(t, requestText(last), "hello-from-bash", "the resumed CLI session sends the first turn's conversation")
	require.NotContains(t, requestText(last), "Previous conversation", "resumed, not seeded")
	session, err = r.store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Equal(t, cliSession, session.SessionData[claude.SessionKey], "the same CLI session goes on")

	// The resumed CLI reports the session's running cost; the run counts
	// its own turn only.
	require.Less(t, *out2.Metrics.Cost, *out.Metrics.Cost, "one model call costs less than the first turn's two: the cost is the turn's own, not the session's total")
	detail := out2.Metrics.Details[run.ModelTypeModel]
	require.Len(t, detail, 1)
	require.Less(t, detail[0].InputTokens, out.Metrics.InputTokens*3/2)
}

// firstRunID returns the id of the session's only run.
func firstRunID(t *testing.T, store storage.Store, sessionID string) string {
	t.Helper()
	recs, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: sessionID, Page: storage.Page{Limit: 10, Page: 1}})
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	return recs[0].Run.RunID
}

// transcriptText joins the stored entries.
func transcriptText(entries []storage.TranscriptEntry) string {
	var b strings.Builder
	for _, e := range entries {
		b.Write(e.Entry)
		b.WriteByte('\n')
	}
	return b.String()
}

// requestText renders a request body's messages.
func requestText(body map[string]any) string {
	var b strings.Builder
	messages, _ := body["messages"].([]any)
	for _, m := range messages {
		data, _ := json.Marshal(m)
		b.Write(data)
	}
	return b.String()
}

// TestAgentSeedsAFreshSessionWhenItCannotResume: without mirrored
// transcripts, a replica whose config dir lacks the CLI session cannot
// resume it; only then does it start a fresh CLI session seeded with the
// conversation so far, and say so in a warning.
func TestAgentSeedsAFreshSessionWhenItCannotResume(t *testing.T) {
	r := newRig(t)
	noMirror := func(o *claude.Options, _ *external.Config) { o.Transcripts = nil }
	first := r.agent(t, t.TempDir(), noMirror)
	out, err := first.Run(t.Context(), &run.Input{InputContent: "note [[text:the code word is saffron]]", SessionID: "s2"})
	require.NoError(t, err)
	require.Equal(t, "the code word is saffron", out.Content)
	session, err := r.store.GetSession(t.Context(), "s2", storage.GetSessionOptions{})
	require.NoError(t, err)
	lost := session.SessionData[claude.SessionKey].(string)

	second := r.agent(t, t.TempDir(), noMirror)
	out, err = second.Run(t.Context(), &run.Input{InputContent: "what was it? [[text:saffron]]", SessionID: "s2"})
	require.NoError(t, err)
	require.Equal(t, "saffron", out.Content)
	warnings, err := out.Warnings()
	require.NoError(t, err)
	require.Len(t, warnings, 1)
	require.Equal(t, "session_not_resumable", warnings[0].Type)
	sent := requestText(r.api.Requests()[len(r.api.Requests())-1])
	require.Contains(t, sent, "Previous conversation", "the fresh session is seeded")
	require.Contains(t, sent, "the code word is saffron", "with the earlier answer")
	session, err = r.store.GetSession(t.Context(), "s2", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.NotEqual(t, lost, session.SessionData[claude.SessionKey], "the new CLI session replaces the lost one")
}

// TestDriverRealCLIMirrorsFromAnyCwd: the transcript of a CLI working in a
// directory reached through a symbolic link, whose path has a character
// outside the Basic Multilingual Plane and is longer than the CLI keeps
// whole in a project directory's name, is found and stored.
func TestDriverRealCLIMirrorsFromAnyCwd(t *testing.T) {
	r := newRig(t)
	dir := filepath.Join(r.cwd, "d😀é", strings.Repeat("deep-directory/", 14))
	require.NoError(t, os.MkdirAll(dir, 0o700))
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	d, err := claude.NewDriver(claude.Options{Bin: r.bin, Cwd: link, PermissionMode: "bypassPermissions", ProjectKey: "coder",
		Env: testcli.ClaudeVars(r.api.URL, t.TempDir()), Transcripts: r.store})
	require.NoError(t, err)
	req := newRequest("say [[text:mirrored]]", "")
	res, err := d.Turn(t.Context(), req.TurnRequest)
	require.NoError(t, err)
	require.Equal(t, "mirrored", res.Content)
	require.Empty(t, req.warnings)
	entries, err := r.store.ReadTranscript(t.Context(), mainKey(req.HarnessSession), "", 0)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the CLI's transcript was found")
	require.Contains(t, transcriptText(entries), "mirrored")
}
