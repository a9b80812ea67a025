package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// terminalInput is stdin read from a terminal.
type terminalInput struct{ io.Reader }

func (terminalInput) IsTerminal() bool { return true }

// agnogoWithStdin runs agnogo with args, reading stdin from stdin, and
// returns its output and exit status as run does.
func agnogoWithStdin(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	app := &cli{stdout: &stdout, stderr: &stderr}
	root := app.rootCommand()
	root.SetIn(stdin)
	root.SetArgs(args)
	code := exitOK
	if _, err := root.ExecuteContextC(t.Context()); err != nil {
		fmt.Fprintf(&stderr, "agnogo: %v\n", err)
		code = exitFailure
		var usage *usageError
		if errors.As(err, &usage) || !app.started {
			code = exitUsage
		}
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// listedSessions is what `agnogo sessions list --json` prints.
type listedSessions struct {
	Data []struct {
		SessionID   string `json:"session_id"`
		SessionName string `json:"session_name"`
		SessionType string `json:"session_type"`
		AgentID     string `json:"agent_id"`
		UserID      string `json:"user_id"`
		Runs        int    `json:"runs"`
		CreatedAt   int64  `json:"created_at"`
		UpdatedAt   int64  `json:"updated_at"`
	} `json:"data"`
	Page       int `json:"page"`
	Limit      int `json:"limit"`
	TotalCount int `json:"total_count"`
}

// sessionsJSON runs an `agnogo sessions` command with --json and decodes stdout.
func sessionsJSON[T any](t *testing.T, b *runBundle, args ...string) T {
	t.Helper()
	got := agnogo(t, append([]string{"sessions", "--config", b.config, "--json"}, args...)...)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Empty(t, got.stderr)
	var v T
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &v), got.stdout)
	return v
}

// sessionsBundle is a database with two sessions made by agnogo run: ana's
// with the assistant (two runs), bob's with plain (one run).
type sessionsBundle struct {
	*runBundle
	ana, bob string
}

func setupSessions(t *testing.T) *sessionsBundle {
	t.Helper()
	b := setupRun(t, assistantAgent+"  - {id: plain, model: fake}\n")
	b.fake.Enqueue(fakeopenai.Text("Hello Ana!"), fakeopenai.Text("Paris, as before."), fakeopenai.Text("Hi Bob."))
	got := b.agnogo(t, "assistant", "hi, I am Ana", "--user", "ana", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	ana := decodeOutput(t, got.stdout)["session_id"].(string)
	got = b.agnogo(t, "assistant", "What is the capital of France?", "--session", ana, "--user", "ana")
	require.Equal(t, exitOK, got.code, got.stderr)
	got = b.agnogo(t, "plain", "hello from Bob", "--user", "bob", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	bob := decodeOutput(t, got.stdout)["session_id"].(string)
	return &sessionsBundle{runBundle: b, ana: ana, bob: bob}
}

func TestSessionsList(t *testing.T) {
	t.Parallel()
	b := setupSessions(t)

	all := sessionsJSON[listedSessions](t, b.runBundle, "list")
	require.Equal(t, 2, all.TotalCount)
	require.Equal(t, 1, all.Page)
	require.Equal(t, 20, all.Limit)
	require.Len(t, all.Data, 2)
	byID := map[string]int{}
	for i, s := range all.Data {
		byID[s.SessionID] = i
		require.Equal(t, "agent", s.SessionType)
		require.NotZero(t, s.CreatedAt)
		require.GreaterOrEqual(t, s.UpdatedAt, s.CreatedAt)
	}
	ana, bob := all.Data[byID[b.ana]], all.Data[byID[b.bob]]
	require.Equal(t, "assistant", ana.AgentID)
	require.Equal(t, "ana", ana.UserID)
	require.Equal(t, 2, ana.Runs)
	require.Equal(t, "hi, I am Ana", ana.SessionName, "an unnamed session is named by its first message")
	require.Equal(t, "plain", bob.AgentID)
	require.Equal(t, "bob", bob.UserID)
	require.Equal(t, 1, bob.Runs)

	// The raw shape: every key a script reads is there.
	got := agnogo(t, "sessions", "list", "--config", b.config, "--json", "--user", "bob")
	require.Equal(t, exitOK, got.code, got.stderr)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &raw))
	require.Equal(t, []any{map[string]any{"session_id": b.bob, "session_name": "hello from Bob", "session_type": "agent", "agent_id": "plain",
		"user_id": "bob", "runs": 1.0, "created_at": float64(bob.CreatedAt), "updated_at": float64(bob.UpdatedAt)}},
		normalizeNumbers(raw["data"]))
	require.Equal(t, 1.0, raw["total_count"])

	mine := sessionsJSON[listedSessions](t, b.runBundle, "list", "--user", "ana")
	require.Equal(t, 1, mine.TotalCount)
	require.Equal(t, b.ana, mine.Data[0].SessionID)
	plain := sessionsJSON[listedSessions](t, b.runBundle, "list", "--agent", "plain")
	require.Equal(t, 1, plain.TotalCount)
	require.Equal(t, b.bob, plain.Data[0].SessionID)
	none := sessionsJSON[listedSessions](t, b.runBundle, "list", "--user", "carol")
	require.Equal(t, 0, none.TotalCount)
	require.NotNil(t, none.Data, "an empty page is [], not null")

	table := agnogo(t, "sessions", "list", "--config", b.config)
	require.Equal(t, exitOK, table.code, table.stderr)
	lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
	require.Len(t, lines, 4, table.stdout)
	require.Regexp(t, `^ID\s+NAME\s+AGENT\s+USER\s+RUNS\s+UPDATED$`, lines[0])
	anaLine := lines[1+byID[b.ana]]
	require.Regexp(t, "^"+regexp.QuoteMeta(b.ana)+`\s+hi, I am Ana\s+assistant\s+ana\s+2\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$`, anaLine)
	require.Equal(t, strings.Index(lines[0], "AGENT"), strings.Index(anaLine, "assistant"), "the columns are aligned")
	require.Equal(t, "2 sessions", lines[3])

	paged := agnogo(t, "sessions", "list", "--config", b.config, "--limit", "1", "--page", "2")
	require.Equal(t, exitOK, paged.code, paged.stderr)
	require.True(t, strings.HasSuffix(paged.stdout, "\n2–2 of 2 sessions (--page, --limit for more)\n"), paged.stdout)
	empty := agnogo(t, "sessions", "list", "--config", b.config, "--user", "carol")
	require.Equal(t, "no sessions\n", empty.stdout)
}

// normalizeNumbers decodes v again so that numbers compare as float64.
func normalizeNumbers(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

func TestSessionsShow(t *testing.T) {
	t.Parallel()
	b := setupSessions(t)

	type shown struct {
		SessionID string `json:"session_id"`
		AgentID   string `json:"agent_id"`
		UserID    string `json:"user_id"`
		Runs      []struct {
			RunID     string `json:"run_id"`
			AgentID   string `json:"agent_id"`
			Status    string `json:"status"`
			Input     string `json:"input"`
			Content   any    `json:"content"`
			CreatedAt int64  `json:"created_at"`
		} `json:"runs"`
	}
	detail := sessionsJSON[shown](t, b.runBundle, "show", b.ana)
	require.Equal(t, b.ana, detail.SessionID)
	require.Equal(t, "assistant", detail.AgentID)
	require.Equal(t, "ana", detail.UserID)
	require.Len(t, detail.Runs, 2)
	require.Equal(t, "hi, I am Ana", detail.Runs[0].Input)
	require.Equal(t, "Hello Ana!", detail.Runs[0].Content)
	require.Equal(t, "What is the capital of France?", detail.Runs[1].Input)
	require.Equal(t, "Paris, as before.", detail.Runs[1].Content)
	for _, r := range detail.Runs {
		require.Equal(t, "COMPLETED", r.Status)
		require.Equal(t, "assistant", r.AgentID)
		require.NotEmpty(t, r.RunID)
		require.NotZero(t, r.CreatedAt)
	}
	// The count in a show is the same as in the list.
	var raw map[string]any
	got := agnogo(t, "sessions", "show", b.ana, "--config", b.config, "--json", "--user", "ana")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &raw))
	require.Len(t, raw["runs"], 2)

	text := agnogo(t, "sessions", "show", b.ana, "--config", b.config)
	require.Equal(t, exitOK, text.code, text.stderr)
	require.Regexp(t, "^session +"+regexp.QuoteMeta(b.ana)+"\nname +hi, I am Ana\nagent +assistant\nuser +ana\ncreated +\\S+ \\S+\nupdated +\\S+ \\S+\n\n", text.stdout)
	require.Regexp(t, `(?m)^RUN\s+STATUS\s+CREATED\s+INPUT\s+ANSWER$`, text.stdout)
	require.Regexp(t, "(?m)^"+regexp.QuoteMeta(detail.Runs[1].RunID)+`\s+COMPLETED\s+\S+ \S+\s+What is the capital of France\?\s+Paris, as before\.$`, text.stdout)
	require.True(t, strings.HasSuffix(text.stdout, "\n2 runs\n"), text.stdout)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{b.ana, "--user", "bob"}, "agnogo: no session " + b.ana + " for user bob\n"},
		{[]string{"no-such-session"}, "agnogo: no session no-such-session\n"},
	} {
		got := agnogo(t, append([]string{"sessions", "show", "--config", b.config}, tt.args...)...)
		require.Equal(t, exitFailure, got.code, got.stderr)
		require.Equal(t, tt.want, got.stderr)
		require.Empty(t, got.stdout)
	}
}

func TestSessionsShowPausedRun(t *testing.T) {
	t.Parallel()
	b := setupRun(t, workspaceAgent(t.TempDir()))
	b.fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("write_file", map[string]any{"path": "b.txt", "content": "new"})))
	got := b.agnogo(t, "coder", "Write b.txt", "--json")
	require.Equal(t, exitFailure, got.code)
	sessionID := decodeOutput(t, got.stdout)["session_id"].(string)

	text := agnogo(t, "sessions", "show", sessionID, "--config", b.config)
	require.Equal(t, exitOK, text.code, text.stderr)
	require.Regexp(t, `(?m)\s+PAUSED\s+\S+ \S+\s+Write b\.txt\s+waiting to confirm write_file$`, text.stdout)

	var detail struct {
		Runs []struct {
			Requirements []map[string]any `json:"requirements"`
		} `json:"runs"`
	}
	got = agnogo(t, "sessions", "show", sessionID, "--config", b.config, "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &detail))
	require.Len(t, detail.Runs[0].Requirements, 1, "a paused run lists what it waits for")
}

func TestSessionsDelete(t *testing.T) {
	t.Parallel()
	b := setupSessions(t)
	deleteArgs := func(id string, more ...string) []string {
		return append([]string{"sessions", "delete", id, "--config", b.config}, more...)
	}

	// Without --yes and without a terminal to ask on, nothing is deleted.
	got := agnogoWithStdin(t, strings.NewReader("y\n"), deleteArgs(b.ana)...)
	require.Equal(t, exitUsage, got.code, got.stderr)
	require.Contains(t, got.stderr, "stdin is not a terminal: add --yes to delete session "+b.ana)

	// On a terminal it asks; anything but yes keeps the session.
	for _, answer := range []string{"n\n", "\n", ""} {
		got = agnogoWithStdin(t, terminalInput{strings.NewReader(answer)}, deleteArgs(b.ana)...)
		require.Equal(t, exitFailure, got.code, got.stderr)
		require.True(t, strings.HasPrefix(got.stderr, `Delete session `+b.ana+` ("hi, I am Ana") with its 2 runs? [y/N] `), got.stderr)
		require.True(t, strings.HasSuffix(got.stderr, "agnogo: session "+b.ana+" not deleted\n"), got.stderr)
	}
	require.Equal(t, 2, sessionsJSON[listedSessions](t, b.runBundle, "list").TotalCount)

	// Another user's session is not found, and not deleted.
	got = agnogo(t, deleteArgs(b.ana, "--user", "bob", "--yes")...)
	require.Equal(t, exitFailure, got.code)
	require.Equal(t, "agnogo: no session "+b.ana+" for user bob\n", got.stderr)

	got = agnogo(t, deleteArgs(b.ana, "--user", "ana", "--yes")...)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, "deleted session "+b.ana+" (2 runs)\n", got.stdout)
	shown := agnogo(t, "sessions", "show", b.ana, "--config", b.config)
	require.Equal(t, exitFailure, shown.code)
	got = agnogo(t, deleteArgs(b.ana, "--yes")...)
	require.Equal(t, exitFailure, got.code)
	require.Equal(t, "agnogo: no session "+b.ana+"\n", got.stderr)

	got = agnogoWithStdin(t, terminalInput{strings.NewReader("yes\n")}, deleteArgs(b.bob, "--json")...)
	require.Equal(t, exitOK, got.code, got.stderr)
	var deleted map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &deleted), got.stdout)
	require.Equal(t, b.bob, deleted["session_id"])
	require.Equal(t, 0, sessionsJSON[listedSessions](t, b.runBundle, "list").TotalCount)
}

// TestSessionsUsageErrors: bad command lines exit 2 before any database is
// opened or created.
func TestSessionsUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	tests := []struct {
		name     string
		args     []string
		mentions string
	}{
		{"no command", []string{"sessions"}, "name a command: list, show or delete"},
		{"limit", []string{"sessions", "list", "--db", "sqlite://" + missing, "--limit", "0"}, "--limit 0: want 1 to 1000"},
		{"page", []string{"sessions", "list", "--db", "sqlite://" + missing, "--page", "0"}, "--page 0: want 1 or more"},
		{"show without id", []string{"sessions", "show", "--db", "sqlite://" + missing}, "show takes one SESSION_ID, got 0 argument(s)"},
		{"delete two ids", []string{"sessions", "delete", "a", "b", "--yes"}, "delete takes one SESSION_ID, got 2 argument(s)"},
		{"unknown flag", []string{"sessions", "list", "--nope"}, "unknown flag: --nope"},
		{"bad db", []string{"sessions", "list", "--db", "mysql://x"}, `--db: invalid request: database URL scheme "mysql"`},
		{"missing db", []string{"sessions", "list", "--db", "sqlite://" + missing}, "--db: no database at " + missing},
	}
	for _, tt := range tests {
		got := agnogo(t, tt.args...)
		require.Equal(t, exitUsage, got.code, tt.name)
		require.Contains(t, got.stderr, tt.mentions, tt.name)
		require.Contains(t, got.stderr, "--help' for usage.", tt.name)
	}
	require.NoFileExists(t, missing)
}
