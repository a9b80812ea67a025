package fakeanthropic_test

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/internal/testcli"
)

// reply decodes a non-streaming answer.
func reply(t *testing.T, body string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	return m
}

func TestDirectedRepliesFollowThePrompt(t *testing.T) {
	t.Parallel()
	srv := fakeanthropic.New(t)
	srv.Directed()

	// The prompt asks for a Bash call: the first reply calls it, with the
	// text of [[say:]] before it; a <system-reminder> block is not the prompt.
	_, body := post(t, srv, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[
		{"type":"text","text":"run it [[bash:echo hi]] [[say:Running.]]"},{"type":"text","text":"<system-reminder>ignore</system-reminder>"}]}]}`)
	first := reply(t, body)
	require.Equal(t, "tool_use", first["stop_reason"])
	content := first["content"].([]any)
	require.Equal(t, "Running.", content[0].(map[string]any)["text"])
	call := content[1].(map[string]any)
	require.Equal(t, "Bash", call["name"])
	require.Equal(t, "echo hi", call["input"].(map[string]any)["command"])

	// With the tool's result as the last message, the answer quotes it.
	_, body = post(t, srv, `{"model":"m","max_tokens":9,"messages":[
		{"role":"user","content":"run it [[bash:echo hi]]"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"echo hi"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"hi\n"}]}]}]}`)
	final := reply(t, body)
	require.Equal(t, "end_turn", final["stop_reason"])
	require.Equal(t, "fake-final: hi", final["content"].([]any)[0].(map[string]any)["text"])

	// [[text:]] sets the answer; [[error:]] fails the request.
	_, body = post(t, srv, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hello [[text:Hi there.]]"}]}`)
	require.Equal(t, "Hi there.", reply(t, body)["content"].([]any)[0].(map[string]any)["text"])
	response, body := post(t, srv, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x [[error:529]]"}]}`)
	require.Equal(t, 529, response.StatusCode)
	require.Contains(t, body, "overloaded_error")

	// A declared StructuredOutput tool is called with [[json:]].
	_, body = post(t, srv, `{"model":"m","max_tokens":9,"tools":[{"name":"StructuredOutput"}],
		"messages":[{"role":"user","content":"answer [[json:{\"ok\":true}]]"}]}`)
	structured := reply(t, body)["content"].([]any)[0].(map[string]any)
	require.Equal(t, "StructuredOutput", structured["name"])
	require.Equal(t, true, structured["input"].(map[string]any)["ok"])

	// Enqueued replies still come first.
	srv.Enqueue(fakeanthropic.Text("from the queue"))
	_, body = post(t, srv, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hello"}]}`)
	require.Equal(t, "from the queue", reply(t, body)["content"].([]any)[0].(map[string]any)["text"])
}

func TestDirectedSleep(t *testing.T) {
	t.Parallel()
	srv := fakeanthropic.New(t)
	srv.Directed()
	started := time.Now()
	response, body := post(t, srv, `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"slow [[sleep:0.3]] [[text:late]]"}]}`)
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.GreaterOrEqual(t, time.Since(started), 300*time.Millisecond)
	require.Contains(t, body, `"text":"late"`)
}

// TestDirectedDrivesClaudeCode runs the real Claude Code CLI (the binary
// named by AGNOGO_CLAUDE_BIN) against the fake: a Bash call runs and its
// output comes back in the answer.
func TestDirectedDrivesClaudeCode(t *testing.T) {
	bin := testcli.ClaudeBin(t)
	srv := fakeanthropic.New(t)
	srv.Directed()
	cmd := exec.CommandContext(t.Context(), bin, "-p", "run it [[bash:echo hello-from-bash]]",
		"--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions")
	cmd.Dir = t.TempDir()
	cmd.Env = testcli.ClaudeEnv(srv.URL, t.TempDir())
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var result map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m["type"] == "result" {
			result = m
		}
	}
	require.NotNil(t, result, "%s", out)
	require.Equal(t, "fake-final: hello-from-bash", result["result"])
}
