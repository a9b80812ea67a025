package agentos_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tool"
)

// newDurableServer is newServer with background runs on the durable queue.
func newDurableServer(t *testing.T, replies []scripted.Reply, tools []tool.Tool, configure func(*durable.Config)) *server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "os.db")
	return newReplica(t, path, "test", scripted.New(replies), tools, configure)
}

// newReplica is one server with its own durable queue (executor) on the
// SQLite database at path; several share a database as replicas do.
func newReplica(t *testing.T, path, executor string, m *scripted.Model, tools []tool.Tool, configure func(*durable.Config)) *server {
	t.Helper()
	return newQueuedReplica(t, path, executor, m, func(c *agent.Config) { c.Tools = tools }, configure)
}

// newQueuedReplica is [newReplica] with a hook on the agent's config too
// (configureAgent and configureQueue may be nil).
func newQueuedReplica(t *testing.T, path, executor string, m *scripted.Model, configureAgent func(*agent.Config), configureQueue func(*durable.Config)) *server {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	acfg := agent.Config{ID: "assistant", Name: "Assistant", Model: m, Store: store}
	if configureAgent != nil {
		configureAgent(&acfg)
	}
	a, err := agent.New(acfg)
	require.NoError(t, err)
	events := agentos.NewEventLog()
	qcfg := durable.Config{DatabaseURL: "sqlite:file:" + path, Store: store, Runners: []run.Runner{a}, Events: events,
		ExecutorID: executor, PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if configureQueue != nil {
		configureQueue(&qcfg)
	}
	q, err := durable.New(t.Context(), qcfg)
	require.NoError(t, err)
	require.NoError(t, q.Launch())
	t.Cleanup(func() { _ = q.Shutdown(time.Second) })
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{a}, Queue: q, Events: events})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	return &server{Server: ts, model: m, store: store, os: os}
}

// postBackground submits a background run with an optional Idempotency-Key.
func (s *server) postBackground(t *testing.T, fields url.Values, key string) *http.Response {
	t.Helper()
	fields.Set("background", "true")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/agents/assistant/runs", strings.NewReader(fields.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestDurableBackgroundRunOverHTTP(t *testing.T) {
	s := newDurableServer(t, []scripted.Reply{{Content: "queued and done", Chunks: 3}}, nil, nil)
	resp := s.postBackground(t, url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}}, "key-1")
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	accepted := decode[map[string]any](t, resp)
	require.Equal(t, "PENDING", accepted["status"])
	runID := accepted["run_id"].(string)

	again := s.postBackground(t, url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}}, "key-1")
	require.Equal(t, http.StatusAccepted, again.StatusCode)
	require.Equal(t, runID, decode[map[string]any](t, again)["run_id"], "the same Idempotency-Key names the same run")

	out := pollRun(t, s, runID, "s1")
	require.Equal(t, "COMPLETED", out["status"])
	require.Equal(t, "queued and done", out["content"])
	require.Len(t, s.model.Requests(), 1, "one run, one model call")

	conflict := s.postBackground(t, url.Values{"message": {"hi"}, "session_id": {"s1"}}, "key-1")
	require.Equal(t, http.StatusConflict, conflict.StatusCode, "the same key in the other stream mode")
	long := s.postBackground(t, url.Values{"message": {"hi"}, "stream": {"false"}}, strings.Repeat("k", 513))
	require.Equal(t, http.StatusUnprocessableEntity, long.StatusCode)

	// Resume returns exactly the events after last_event_index.
	frames := readFrames(t, s.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"last_event_index": {"1"}, "session_id": {"s1"}}).Body)
	require.Equal(t, "replay", frames[0].event)
	got := indices(t, frames)
	require.Equal(t, int64(2), got[0])
	require.Equal(t, "RunCompleted", frames[len(frames)-1].event)
}

func TestDurableQueueDepthFIFOAndCancel(t *testing.T) {
	var mu sync.Mutex
	var order []string
	started, release := make(chan struct{}, 8), make(chan struct{})
	work, err := tool.New(tool.Config{Name: "work"}, func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "ok", nil
	})
	require.NoError(t, err)
	reply := func(text string) scripted.Reply {
		return scripted.Respond(func(*model.Request) scripted.Reply {
			mu.Lock()
			order = append(order, text)
			mu.Unlock()
			return scripted.Text(text)
		})
	}
	s := newDurableServer(t, []scripted.Reply{scripted.ToolCall("work", `{}`), reply("first"), reply("second"), reply("third")},
		[]tool.Tool{work}, func(c *durable.Config) { c.MaxQueueDepth = 3 })
	var ids []string
	for i, msg := range []string{"one", "two", "three"} {
		resp := s.postBackground(t, url.Values{"message": {msg}, "stream": {"false"}, "session_id": {"fifo"}}, "")
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		ids = append(ids, decode[map[string]any](t, resp)["run_id"].(string))
		if i == 0 {
			<-started
		}
	}
	full := s.postBackground(t, url.Values{"message": {"four"}, "stream": {"false"}, "session_id": {"other"}}, "")
	require.Equal(t, http.StatusTooManyRequests, full.StatusCode)
	require.NotEmpty(t, full.Header.Get("Retry-After"))

	// Cancel the last queued run; the first two finish in order.
	require.Equal(t, http.StatusOK, s.postForm(t, "/agents/assistant/runs/"+ids[2]+"/cancel", url.Values{"session_id": {"fifo"}}).StatusCode)
	require.Equal(t, "CANCELLED", pollRun(t, s, ids[2], "fifo")["status"])
	close(release)
	require.Equal(t, "first", pollRun(t, s, ids[0], "fifo")["content"])
	require.Equal(t, "second", pollRun(t, s, ids[1], "fifo")["content"])
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"first", "second"}, order, "one session's runs execute in submission order")
}

// TestDurableHITLOverHTTP: a background run pauses for a confirmation; an
// inline continue is refused with 409, a background one resumes the run
// through the queue.
func TestDurableHITLOverHTTP(t *testing.T) {
	deploy, err := tool.New(tool.Config{Name: "deploy", RequiresConfirmation: true}, func(context.Context, struct{}) (string, error) {
		return "deployed", nil
	})
	require.NoError(t, err)
	s := newDurableServer(t, []scripted.Reply{scripted.ToolCall("deploy", `{}`), scripted.Text("Deployed.")}, []tool.Tool{deploy}, nil)
	accepted := decode[map[string]any](t, s.postBackground(t, url.Values{"message": {"deploy"}, "stream": {"false"}, "session_id": {"h"}}, ""))
	runID := accepted["run_id"].(string)
	paused := pollRun(t, s, runID, "h")
	require.Equal(t, "PAUSED", paused["status"])
	tools := paused["tools"].([]any)
	tools[0].(map[string]any)["confirmed"] = true
	encoded, err := json.Marshal(tools)
	require.NoError(t, err)

	inline := s.postForm(t, "/agents/assistant/runs/"+runID+"/continue", url.Values{"tools": {string(encoded)}, "session_id": {"h"}, "stream": {"false"}})
	require.Equal(t, http.StatusConflict, inline.StatusCode)
	require.Contains(t, readAll(t, inline), "background=true")

	resp := s.postForm(t, "/agents/assistant/runs/"+runID+"/continue", url.Values{"tools": {string(encoded)}, "session_id": {"h"}, "stream": {"false"}, "background": {"true"}})
	require.Equal(t, http.StatusAccepted, resp.StatusCode, readAll(t, resp))
	require.Eventually(t, func() bool {
		out := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID+"?session_id=h"))
		return out["status"] == "COMPLETED" && out["content"] == "Deployed."
	}, 20*time.Second, 20*time.Millisecond)
}

// TestResumeOnAnotherReplica: a run executing on replica A is resumed on
// replica B, which never saw it: B catches up from the durable stream and
// follows the run to its end, with the same indices A assigned.
func TestResumeOnAnotherReplica(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	gate, err := tool.New(tool.Config{Name: "gate"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-release
		return "open", nil
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "shared.db")
	m := scripted.New([]scripted.Reply{scripted.ToolCall("gate", `{}`), {Content: "through both", Chunks: 2}})
	a := newReplica(t, path, "replica-a", m, []tool.Tool{gate}, nil)
	accepted := decode[map[string]any](t, a.postBackground(t, url.Values{"message": {"go"}, "stream": {"false"}, "session_id": {"x"}}, ""))
	runID := accepted["run_id"].(string)
	<-started
	b := newReplica(t, path, "replica-b", m, []tool.Tool{gate}, nil)

	// The stream holds what A wrote after the run's first step (RunStarted):
	// events reach the durable stream step by step.
	resp := b.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"last_event_index": {"-1"}, "session_id": {"x"}})
	live := liveFrames(t, resp.Body)
	frames := framesUntil(t, live, "subscribed", 30*time.Second) // B follows the run
	close(release)
	frames = append(frames, framesUntil(t, live, "", 30*time.Second)...)
	names := frameNames(frames)
	require.Equal(t, "catch_up", names[0], names)
	require.Contains(t, names, "subscribed")
	require.Equal(t, "RunCompleted", names[len(names)-1], names)

	onA := readFrames(t, a.postForm(t, "/agents/assistant/runs/"+runID+"/resume", url.Values{"last_event_index": {"-1"}, "session_id": {"x"}}).Body)
	require.Equal(t, indices(t, onA), indices(t, frames), "the same events with the same indices on both replicas")
}

// TestShutdownEndsBackgroundFollowers: a client following a background run
// (stream=true) does not hold the server's shutdown: its stream ends at
// once while the run goes on, to be resumed.
func TestShutdownEndsBackgroundFollowers(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	t.Cleanup(func() { close(release) })
	work, err := tool.New(tool.Config{Name: "work"}, func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "ok", nil
	})
	require.NoError(t, err)
	s := newDurableServer(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("done")}, []tool.Tool{work}, nil)
	resp := s.postBackground(t, url.Values{"message": {"go"}, "stream": {"true"}, "session_id": {"s1"}}, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	<-started
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, resp.Body); close(ended) }()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.os.Shutdown(ctx))
	select {
	case <-ended:
	case <-time.After(2 * time.Second):
		t.Fatal("the follower's stream is still open after Shutdown")
	}
}

// TestStreamedSubmissionFollowsTheRunWhereverItStarts: a streamed
// submission waits in the queue behind another run; the stream reads the
// queue's record meanwhile, and when the run starts on this replica it goes
// on from the replica's own log, live: the tool call is seen while the tool
// still runs (the durable stream would hold it until the step ends), and no
// event is missed or repeated.
func TestStreamedSubmissionFollowsTheRunWhereverItStarts(t *testing.T) {
	firstStarted, releaseFirst := make(chan struct{}), make(chan struct{})
	secondStarted, releaseSecond := make(chan struct{}), make(chan struct{})
	gate := func(name string, started, release chan struct{}) tool.Tool {
		g, err := tool.New(tool.Config{Name: name}, func(ctx context.Context, _ struct{}) (string, error) {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "open", nil
		})
		require.NoError(t, err)
		return g
	}
	m := scripted.New([]scripted.Reply{scripted.ToolCall("first", `{}`), scripted.Text("one"),
		scripted.ToolCall("second", `{}`), {Content: "two, in pieces", Chunks: 3}})
	s := newReplica(t, filepath.Join(t.TempDir(), "os.db"), "one-worker", m,
		[]tool.Tool{gate("first", firstStarted, releaseFirst), gate("second", secondStarted, releaseSecond)},
		func(c *durable.Config) { c.MaxConcurrency = 1 })

	s.postBackground(t, url.Values{"message": {"first"}, "stream": {"false"}, "session_id": {"s1"}}, "")
	waitClosed(t, firstStarted, "the first run's tool")
	resp := s.postBackground(t, url.Values{"message": {"second"}, "stream": {"true"}, "session_id": {"s2"}}, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	live := liveFrames(t, resp.Body)
	close(releaseFirst) // the worker is free: the second run starts here

	waitClosed(t, secondStarted, "the second run's tool")
	frames := framesUntil(t, live, "ToolCallStarted", 30*time.Second)
	close(releaseSecond)
	frames = append(frames, framesUntil(t, live, "", 30*time.Second)...)
	names := frameNames(frames)
	require.Equal(t, "RunStarted", names[0], names)
	require.Equal(t, "RunCompleted", names[len(names)-1], names)
	got := indices(t, frames)
	for i := range got {
		require.Equal(t, int64(i), got[i], "every index once, in order: %v", got)
	}
	var text strings.Builder
	for _, f := range frames {
		if f.event == "RunContent" {
			content, _ := f.data["content"].(string)
			text.WriteString(content)
		}
	}
	require.Equal(t, "two, in pieces", text.String())
}

// waitClosed waits for ch to close, failing the test after a while.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start", what)
	}
}

// TestIdempotencyKeyThatIsNotText: an Idempotency-Key that is not UTF-8 is
// refused with 422 naming the header, and nothing is queued.
func TestIdempotencyKeyThatIsNotText(t *testing.T) {
	s := newDurableServer(t, nil, nil, nil)
	resp := s.postBackground(t, url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}}, "key-\xff")
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, decode[map[string]any](t, resp)["detail"].([]any)[0].(map[string]any)["loc"], "Idempotency-Key")
	counts := decode[map[string]any](t, s.get(t, "/queue/stats"))["counts"].(map[string]any)
	for status, n := range counts {
		require.Equal(t, float64(0), n, "nothing queued: %s %v", status, counts)
	}
}
