package agentos_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// TestCancelEndsAStreamingRun: a run whose tool blocks is cancelled over
// HTTP; the stream ends with RunCancelled within a second and the row is
// CANCELLED.
func TestCancelEndsAStreamingRun(t *testing.T) {
	started := make(chan struct{})
	slow, err := tool.New(tool.Config{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.ToolCall("slow", `{}`), scripted.Text("never")},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{slow} })

	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"go"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := make(chan []frame, 1)
	go func() { frames <- readFrames(t, resp.Body) }()
	<-started

	// The run is listed while in flight.
	runs := decode[[]map[string]any](t, s.get(t, "/agents/assistant/runs?session_id=s1"))
	require.Len(t, runs, 1)
	require.Equal(t, "RUNNING", runs[0]["status"])
	runID := runs[0]["run_id"].(string)

	cancelled := time.Now()
	cancelResp := s.postForm(t, "/agents/assistant/runs/"+runID+"/cancel", url.Values{"session_id": {"s1"}})
	require.Equal(t, http.StatusOK, cancelResp.StatusCode)
	var got []frame
	select {
	case got = <-frames:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end after cancel")
	}
	require.Less(t, time.Since(cancelled), time.Second)
	require.Equal(t, "RunCancelled", got[len(got)-1].event)

	one := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID+"?session_id=s1"))
	require.Equal(t, "CANCELLED", one["status"])
	require.Equal(t, http.StatusNotFound, s.postForm(t, "/agents/assistant/runs/nope/cancel", nil).StatusCode)
}

// TestContinueAPausedRunOverHTTP: a tool that needs confirmation pauses the
// run; /continue with the confirmed tool finishes it.
func TestContinueAPausedRunOverHTTP(t *testing.T) {
	weather, err := tool.New(tool.Config{Name: "get_weather", RequiresConfirmation: true},
		func(ctx context.Context, args struct {
			City string `json:"city"`
		}) (string, error) {
			return "sunny in " + args.City, nil
		})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.ToolCall("get_weather", `{"city":"Paris"}`), scripted.Text("It is sunny.")},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{weather} })

	paused := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"weather?"}, "stream": {"false"}, "session_id": {"s1"}}))
	require.Equal(t, "PAUSED", paused["status"])
	require.Len(t, paused["requirements"], 1)
	runID := paused["run_id"].(string)

	tools := paused["tools"].([]any)
	tools[0].(map[string]any)["confirmed"] = true
	encoded, err := json.Marshal(tools)
	require.NoError(t, err)

	bad := s.postForm(t, "/agents/assistant/runs/"+runID+"/continue", url.Values{"tools": {"[not json"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusUnprocessableEntity, bad.StatusCode)
	require.Contains(t, readAll(t, bad), "tools")

	resp := s.postForm(t, "/agents/assistant/runs/"+runID+"/continue", url.Values{"tools": {string(encoded)}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := readFrames(t, resp.Body)
	require.Equal(t, "RunContinued", frames[0].event)
	require.Equal(t, "RunCompleted", frames[len(frames)-1].event)
	require.Equal(t, "It is sunny.", frames[len(frames)-1].data["content"])

	done := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID+"?session_id=s1"))
	require.Equal(t, "COMPLETED", done["status"])

	again := s.postForm(t, "/agents/assistant/runs/"+runID+"/continue", url.Values{"session_id": {"other"}, "stream": {"false"}})
	require.Equal(t, http.StatusNotFound, again.StatusCode, "a run of another session is not found")
}

// TestShutdownCancelsRunsInFlight: Shutdown cancels a streaming run and waits
// for it to be saved.
func TestShutdownCancelsRunsInFlight(t *testing.T) {
	started := make(chan struct{})
	slow, err := tool.New(tool.Config{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.ToolCall("slow", `{}`)},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{slow} })
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"go"}, "session_id": {"s1"}})
	go func() { readFrames(t, resp.Body) }()
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.os.Shutdown(ctx))
	runs, _, err := s.store.GetRuns(t.Context(), storageQuery("s1"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, run.StatusCancelled, runs[0].Run.Status, "the cancelled run is saved before Shutdown returns")

	refused := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"late"}, "stream": {"false"}})
	require.Equal(t, http.StatusServiceUnavailable, refused.StatusCode)
	require.True(t, strings.Contains(readAll(t, refused), "shutting down"))
}

// TestCancelAForkedRunByItsNewID: continuing a completed run goes on as a
// new run (a fork); cancelling it by that new id stops it.
func TestCancelAForkedRunByItsNewID(t *testing.T) {
	started := make(chan struct{})
	slow, err := tool.New(tool.Config{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.Text("first"), scripted.ToolCall("slow", `{}`), scripted.Text("never")},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{slow} })
	first := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"go"}, "session_id": {"s1"}, "stream": {"false"}}))
	runID := first["run_id"].(string)

	resp := s.postForm(t, "/agents/assistant/runs/"+runID+"/continue", url.Values{"session_id": {"s1"}, "input": {"again"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := bufio.NewReader(resp.Body)
	var forkID string
	for forkID == "" {
		line, err := body.ReadString('\n')
		require.NoError(t, err)
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var event map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &event))
			forkID, _ = event["run_id"].(string)
		}
	}
	require.NotEqual(t, runID, forkID, "the continuation is a new run")
	frames := make(chan []frame, 1)
	go func() { frames <- readFrames(t, body) }()
	<-started
	cancelled := time.Now()
	require.Equal(t, http.StatusOK, s.postForm(t, "/agents/assistant/runs/"+forkID+"/cancel", url.Values{"session_id": {"s1"}}).StatusCode)
	var got []frame
	select {
	case got = <-frames:
	case <-time.After(5 * time.Second):
		t.Fatal("the forked run did not stop")
	}
	require.Less(t, time.Since(cancelled), time.Second)
	require.Equal(t, "RunCancelled", got[len(got)-1].event)
}
