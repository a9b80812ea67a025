package agentos_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// indices returns the event_index of each run-event frame; control frames
// are left out.
func indices(t *testing.T, frames []frame) []int64 {
	t.Helper()
	var out []int64
	for _, f := range frames {
		if index, ok := f.data["event_index"].(float64); ok {
			out = append(out, int64(index))
		}
	}
	return out
}

// TestStreamedEventsCarryIndicesAndResume: every frame of a streamed run has
// an increasing event_index; /resume of the finished run replays exactly the
// events after last_event_index behind a replay frame.
func TestStreamedEventsCarryIndicesAndResume(t *testing.T) {
	s := newServer(t, []scripted.Reply{{Content: "Hello there", Chunks: 3}}, nil)
	frames := readFrames(t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "session_id": {"s1"}}).Body)
	got := indices(t, frames)
	require.Len(t, got, len(frames))
	for i, index := range got {
		require.Equal(t, int64(i), index)
	}
	runID := frames[0].data["run_id"].(string)

	resumed := readFrames(t, s.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"last_event_index": {"2"}, "session_id": {"s1"}}).Body)
	require.Equal(t, "replay", resumed[0].event)
	require.Equal(t, "COMPLETED", resumed[0].data["status"])
	require.Equal(t, got[3:], indices(t, resumed[1:]))
	require.Equal(t, frameNames(frames[3:]), frameNames(resumed[1:]))
	require.Equal(t, frames[len(frames)-1].raw, resumed[len(resumed)-1].raw, "the same bytes as the first time")

	all := readFrames(t, s.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"session_id": {"s1"}}).Body)
	require.Len(t, all, len(frames)+1, "no last_event_index: every event")

	unknown := readFrames(t, s.postForm(t, "/agents/assistant/runs/nope/resume", url.Values{"session_id": {"s1"}}).Body)
	require.Equal(t, []string{"error"}, frameNames(unknown))
	other := readFrames(t, s.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"session_id": {"other"}}).Body)
	require.Equal(t, []string{"error"}, frameNames(other), "a run of another session is not found")
	require.Equal(t, http.StatusNotFound, s.postForm(t, "/agents/nobody/runs/"+runID+"/resume", nil).StatusCode)
	require.Equal(t, http.StatusUnprocessableEntity, s.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"last_event_index": {"x"}}).StatusCode)
}

// TestResumeFollowsARunInFlight: resuming a background run that is blocked
// in a tool sends catch_up with the missed events, then subscribed, then the
// rest live until the run completes.
func TestResumeFollowsARunInFlight(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	gate, err := tool.New(tool.Config{Name: "gate"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-release
		return "open", nil
	})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.ToolCall("gate", `{}`), scripted.Text("through")},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{gate} })
	accepted := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"go"}, "stream": {"false"}, "background": {"true"}, "session_id": {"s1"}}))
	runID := accepted["run_id"].(string)
	<-started

	resp := s.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"last_event_index": {"0"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	live := liveFrames(t, resp.Body)
	frames := framesUntil(t, live, "subscribed", 10*time.Second) // the resumed stream follows the run
	close(release)
	frames = append(frames, framesUntil(t, live, "", 10*time.Second)...)
	names := frameNames(frames)
	require.Equal(t, "catch_up", names[0])
	require.Equal(t, []string{"ToolCallStarted"}, names[1:2], "the event missed after index 0 (RunStarted)")
	require.Equal(t, "subscribed", names[2])
	require.Equal(t, "RunCompleted", names[len(names)-1])
	require.Equal(t, "through", frames[len(frames)-1].data["content"])
	got := indices(t, frames)
	require.Equal(t, int64(1), got[0])
	for i := 1; i < len(got); i++ {
		require.Equal(t, got[i-1]+1, got[i], "no event lost or repeated between catch-up and live")
	}
}

// TestResumeFallsBackToStoredEvents: a server that never saw the run (a
// restart) answers from the events stored on the run row, with their
// original indices.
func TestResumeFallsBackToStoredEvents(t *testing.T) {
	s := newServer(t, []scripted.Reply{{Content: "kept", Chunks: 2}}, func(c *agent.Config, _ *agentos.Config) { c.StoreEvents = true })
	frames := readFrames(t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "session_id": {"s1"}}).Body)
	runID := frames[0].data["run_id"].(string)

	a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: s.model, Store: s.store})
	require.NoError(t, err)
	restarted, err := agentos.New(agentos.Config{Store: s.store, Runners: []run.Runner{a}})
	require.NoError(t, err)
	ts := httptest.NewServer(restarted)
	t.Cleanup(ts.Close)
	resp, err := http.PostForm(ts.URL+"/agents/assistant/runs/"+runID+"/resume", url.Values{"last_event_index": {"1"}, "session_id": {"s1"}})
	require.NoError(t, err)
	defer resp.Body.Close()
	resumed := readFrames(t, resp.Body)
	require.Equal(t, "replay", resumed[0].event)
	require.Equal(t, indices(t, frames)[2:], indices(t, resumed[1:]))
	require.Equal(t, "RunCompleted", resumed[len(resumed)-1].event)
}
