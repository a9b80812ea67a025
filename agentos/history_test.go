package agentos_test

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
)

// echo answers each request with "answer to <the last user message>".
func echo() []scripted.Reply {
	return []scripted.Reply{scripted.Respond(func(req *model.Request) scripted.Reply {
		return scripted.Text("answer to " + lastUserText(req))
	})}
}

func lastUserText(req *model.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == run.RoleUser {
			return req.Messages[i].ContentString()
		}
	}
	return ""
}

// conversation is what a model request carried, one "role: content" line
// per user or assistant message.
func conversation(req *model.Request) []string {
	var lines []string
	for _, msg := range req.Messages {
		if msg.Role == run.RoleUser || msg.Role == run.RoleAssistant {
			lines = append(lines, msg.Role+": "+msg.ContentString())
		}
	}
	return lines
}

// TestQueuedBackgroundRunsSeeTheirHistory: five background runs accepted on
// one session run one after another, and each model request carries the
// runs that finished before it (the last three, the default), never the
// runs still queued with it.
func TestQueuedBackgroundRunsSeeTheirHistory(t *testing.T) {
	m := scripted.New(echo(), scripted.Loop())
	s := newQueuedReplica(t, filepath.Join(t.TempDir(), "os.db"), "test", m, func(c *agent.Config) { c.AddHistoryToContext = true }, nil)
	// The five are accepted at once: each waits for the one before it.
	var ids []string
	for k := 1; k <= 5; k++ {
		resp := s.postBackground(t, url.Values{"message": {fmt.Sprintf("m%d", k)}, "stream": {"false"}, "session_id": {"s1"}}, "")
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		ids = append(ids, decode[map[string]any](t, resp)["run_id"].(string))
	}
	for _, id := range ids {
		require.Equal(t, "COMPLETED", pollRun(t, s, id, "s1")["status"])
	}

	requests := m.Requests()
	require.Len(t, requests, 5)
	for k, req := range requests {
		var want []string
		for j := max(1, k-2); j <= k; j++ {
			want = append(want, fmt.Sprintf("user: m%d", j), fmt.Sprintf("assistant: answer to m%d", j))
		}
		want = append(want, fmt.Sprintf("user: m%d", k+1))
		require.Equal(t, want, conversation(req), "run %d sees runs %d…%d", k+1, max(1, k-2), k)
	}
}

// TestForkedHistoryNeverRepeats: after a continue that forks run B of a
// session (runs A, B, C), the fork and the turns after it carry each
// message once — the branch the conversation took: A, then the fork in
// B's place. C, after B on the branch the fork left, is not sent again.
func TestForkedHistoryNeverRepeats(t *testing.T) {
	var m *scripted.Model
	s := newServer(t, nil, func(c *agent.Config, _ *agentos.Config) {
		m = scripted.New(echo(), scripted.Loop())
		c.Model = m
	})
	runIDs := map[string]string{}
	turn := func(message string) {
		t.Helper()
		resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {message}, "stream": {"false"}, "session_id": {"s1"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		runIDs[message] = decode[map[string]any](t, resp)["run_id"].(string)
	}
	turn("A")
	turn("B")
	turn("C")

	// Fork B after its user message, with a new input.
	resp := s.postForm(t, "/agents/assistant/runs/"+runIDs["B"]+"/continue", url.Values{
		"session_id": {"s1"}, "stream": {"false"}, "continue_from": {"1"}, "input": {"B2"}, "fork": {"true"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	fork := decode[map[string]any](t, resp)
	require.NotEqual(t, runIDs["B"], fork["run_id"])
	require.Equal(t, runIDs["B"], fork["forked_from_run_id"])
	turn("D")
	turn("E")

	requests := m.Requests()
	require.Len(t, requests, 6)
	for i, req := range requests {
		seen := map[string]bool{}
		for _, line := range conversation(req) {
			require.False(t, seen[line], "request %d sends %q twice: %v", i, line, conversation(req))
			seen[line] = true
		}
	}
	require.Equal(t, []string{"user: A", "assistant: answer to A", "user: B", "user: B2"}, conversation(requests[3]),
		"the fork sees what B saw, then B's kept messages and its new input")
	require.Equal(t, []string{"user: A", "assistant: answer to A", "user: B", "user: B2", "assistant: answer to B2", "user: D"},
		conversation(requests[4]), "the next turn goes on from the fork")
	require.Equal(t, []string{"user: A", "assistant: answer to A", "user: B", "user: B2", "assistant: answer to B2",
		"user: D", "assistant: answer to D", "user: E"}, conversation(requests[5]))

	// A fork of the fork: still each message once.
	resp = s.postForm(t, "/agents/assistant/runs/"+fork["run_id"].(string)+"/continue", url.Values{
		"session_id": {"s1"}, "stream": {"false"}, "continue_from": {"2"}, "input": {"B3"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	turn("Z")
	last := m.Requests()[len(m.Requests())-1]
	require.Equal(t, []string{"user: A", "assistant: answer to A", "user: B", "user: B2", "user: B3", "assistant: answer to B3", "user: Z"},
		conversation(last), "a fork of a fork replaces the first fork and what followed it")
}

// TestContinueFromOutOfRange: a message index past the run's messages is a
// 422 naming the range, and nothing runs.
func TestContinueFromOutOfRange(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("one")}, nil)
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := decode[map[string]any](t, resp)
	messages := len(out["messages"].([]any))
	resp = s.postForm(t, "/agents/assistant/runs/"+out["run_id"].(string)+"/continue", url.Values{
		"session_id": {"s1"}, "stream": {"false"}, "continue_from": {fmt.Sprint(messages + 1)}, "input": {"again"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, detail(t, resp), fmt.Sprintf("want a message index from 0 to %d", messages))
	require.Len(t, s.model.Requests(), 1, "nothing ran")
	runs, _, err := s.store.GetRuns(t.Context(), storageQuery("s1"))
	require.NoError(t, err)
	require.Len(t, runs, 1, "no fork was stored")
}

// TestForkedSessionCountsItsOwnUsage: a session fork's metrics start empty
// (the copies' tokens were counted in the source) and count the fork's own
// runs only.
func TestForkedSessionCountsItsOwnUsage(t *testing.T) {
	usage := func(in, out int64) *run.Metrics {
		return &run.Metrics{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	}
	s := newServer(t, []scripted.Reply{{Content: "one", Usage: usage(100, 20)}, {Content: "two", Usage: usage(7, 3)}}, nil)
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	source := decode[map[string]any](t, s.get(t, "/sessions/s1?type=agent"))
	require.EqualValues(t, 120, source["total_tokens"])

	resp = s.postForm(t, "/agents/assistant/sessions/s1/fork", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	forkID := decode[map[string]any](t, resp)["session_id"].(string)
	fork := decode[map[string]any](t, s.get(t, "/sessions/"+forkID+"?type=agent"))
	require.NotContains(t, fork, "total_tokens", "the copies' usage is the source's")
	require.NotContains(t, fork, "metrics")

	resp = s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"and then?"}, "stream": {"false"}, "session_id": {forkID}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	fork = decode[map[string]any](t, s.get(t, "/sessions/"+forkID+"?type=agent"))
	require.EqualValues(t, 10, fork["total_tokens"], "the fork counts its own run only")
	source = decode[map[string]any](t, s.get(t, "/sessions/s1?type=agent"))
	require.EqualValues(t, 120, source["total_tokens"], "the source is unchanged")
}
