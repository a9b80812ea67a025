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

// submitBackground posts a background run to a served OS and returns its id.
func submitBackground(t *testing.T, s *servingOS, session string) string {
	t.Helper()
	resp, err := http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"work"}, "stream": {"false"}, "background": {"true"}, "session_id": {session}})
	require.NoError(t, err)
	defer resp.Body.Close()
	var accepted map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&accepted))
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%v", accepted)
	return accepted["run_id"].(string)
}

// waitRun polls a run of a served OS until its status is one of want.
func waitRun(t *testing.T, s *servingOS, runID, session string, want ...string) map[string]any {
	t.Helper()
	var out map[string]any
	require.Eventually(t, func() bool {
		resp, err := http.Get(s.url + "/agents/assistant/runs/" + runID + "?session_id=" + session)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		out = nil
		return json.NewDecoder(resp.Body).Decode(&out) == nil && strings.Contains(strings.Join(want, " "), out["status"].(string))
	}, 30*time.Second, 20*time.Millisecond, "run %s never became %v (last %v)", runID, want, out)
	return out
}

// queueJSON runs an `agnogo queue` command with --json and decodes stdout.
func queueJSON[T any](t *testing.T, args ...string) T {
	t.Helper()
	got := agnogo(t, append([]string{"queue"}, append(args, "--json")...)...)
	require.Equal(t, exitOK, got.code, got.stderr)
	var v T
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &v), got.stdout)
	return v
}

// TestQueueCommands: a background run fails on a served OS; agnogo queue,
// in its own process role on the same database, lists it, counts it and
// requeues it, and the server runs it to completion.
func TestQueueCommands(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	s := startServe(t, "--config", b.config)
	b.fake.Enqueue(fakeopenai.Error(400, "invalid_request", "the model refused"))
	runID := submitBackground(t, s, "s1")
	require.Contains(t, waitRun(t, s, runID, "s1", "ERROR")["content"], "the model refused")

	type listed struct {
		Data []struct {
			ID        string `json:"id"`
			Status    string `json:"status"`
			RunStatus string `json:"run_status"`
			Attempts  int    `json:"attempts"`
			Error     string `json:"error"`
		} `json:"data"`
		TotalCount int `json:"total_count"`
	}
	var failed listed
	require.Eventually(t, func() bool {
		failed = queueJSON[listed](t, "list", "--config", b.config, "--status", "failed")
		return failed.TotalCount == 1
	}, 10*time.Second, 20*time.Millisecond, "the job is listed failed")
	require.Equal(t, runID, failed.Data[0].ID)
	require.Equal(t, "ERROR", failed.Data[0].RunStatus)
	require.Equal(t, 1, failed.Data[0].Attempts)
	require.Contains(t, failed.Data[0].Error, "the model refused")

	table := agnogo(t, "queue", "list", "--config", b.config)
	require.Equal(t, exitOK, table.code, table.stderr)
	lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
	require.Len(t, lines, 3, table.stdout)
	require.Regexp(t, `^ID\s+STATUS\s+RUN STATUS\s+AGENT\s+SESSION\s+ATTEMPTS\s+CREATED\s+ERROR$`, lines[0])
	require.Regexp(t, "^"+regexp.QuoteMeta(runID)+`\s+failed\s+ERROR\s+assistant\s+s1\s+1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+.*the model refused`, lines[1])
	require.Equal(t, strings.Index(lines[0], "STATUS"), strings.Index(lines[1], "failed"), "the columns are aligned")
	require.Equal(t, "1 job", lines[2])

	stats := queueJSON[map[string]any](t, "stats", "--config", b.config)
	require.Equal(t, map[string]any{"queued": 0.0, "running": 0.0, "paused": 0.0, "completed": 0.0, "failed": 1.0, "cancelled": 0.0}, stats["counts"])
	require.Nil(t, stats["oldest_queued_age_seconds"])
	human := agnogo(t, "queue", "stats", "--config", b.config)
	require.Equal(t, exitOK, human.code, human.stderr)
	require.Regexp(t, `(?m)^failed\s+1$`, human.stdout)
	require.Regexp(t, `(?m)^oldest queued\s+none waiting$`, human.stdout)

	// Within the lock grace a requeue needs --force.
	early := agnogo(t, "queue", "requeue", runID, "--config", b.config)
	require.Equal(t, exitFailure, early.code)
	require.Contains(t, early.stderr, "ended too recently")
	require.Contains(t, early.stderr, "--force")

	b.fake.Enqueue(fakeopenai.Text("done the second time"))
	requeued := agnogo(t, "queue", "requeue", runID, "--config", b.config, "--force")
	require.Equal(t, exitOK, requeued.code, requeued.stderr)
	require.True(t, strings.HasPrefix(requeued.stdout, "requeued "+runID+": "), requeued.stdout)
	out := waitRun(t, s, runID, "s1", "COMPLETED", "ERROR")
	require.Equal(t, "COMPLETED", out["status"], "%v", out)
	require.Equal(t, "done the second time", out["content"])

	var completed listed
	require.Eventually(t, func() bool {
		completed = queueJSON[listed](t, "list", "--config", b.config, "--status", "completed")
		return completed.TotalCount == 1
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 2, completed.Data[0].Attempts)
	require.Equal(t, "COMPLETED", completed.Data[0].RunStatus)

	again := agnogo(t, "queue", "requeue", runID, "--config", b.config, "--force")
	require.Equal(t, exitFailure, again.code)
	require.Contains(t, again.stderr, "only failed or cancelled jobs are requeued")
	unknown := agnogo(t, "queue", "requeue", "no-such-run", "--config", b.config)
	require.Equal(t, exitFailure, unknown.code)
	require.Contains(t, unknown.stderr, "no job no-such-run")

	require.Equal(t, exitOK, s.shutdown(t), s.log.String())
}

// TestQueueCommandErrors: usage errors exit 2 before any database is
// opened or created; a config without the durable queue exits 1 saying so.
func TestQueueCommandErrors(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)
	for _, tt := range []struct {
		args     []string
		mentions string
	}{
		{[]string{"queue"}, "name a command: list, stats or requeue"},
		{[]string{"queue", "list", "--db", dbURL, "--status", "stuck"}, `--status "stuck": want queued, running, paused, completed, failed, cancelled`},
		{[]string{"queue", "list", "--db", dbURL, "--limit", "0"}, "--limit 0: want 1 to 1000"},
		{[]string{"queue", "list", "--db", dbURL, "--page", "0"}, "--page 0: want 1 or more"},
		{[]string{"queue", "requeue", "--db", dbURL}, "accepts 1 arg(s), received 0"},
		{[]string{"queue", "stats", "--db", "mysql://u@h/db"}, `scheme "mysql" is not supported`},
		{[]string{"queue", "stats", "--db", dbURL}, "--db: no database at " + path},
	} {
		got := agnogo(t, tt.args...)
		require.Equal(t, exitUsage, got.code, "%v: %s", tt.args, got.stderr)
		require.Empty(t, got.stdout)
		require.Contains(t, got.stderr, tt.mentions)
		require.Contains(t, got.stderr, "--help' for usage")
	}
	require.NoFileExists(t, path, "a refused command line creates no database")

	b := setupRun(t, assistantAgent)
	config, err := os.ReadFile(b.config)
	require.NoError(t, err)
	off := filepath.Join(b.dir, "off.yaml")
	require.NoError(t, os.WriteFile(off, append(config, []byte("queue: {durable: false}\n")...), 0o600))
	got := agnogo(t, "queue", "stats", "--config", off)
	require.Equal(t, exitFailure, got.code, got.stderr)
	require.Contains(t, got.stderr, "queue.durable: false")
}
