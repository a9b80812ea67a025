package agentos_test

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// server is one test's AgentOS over HTTP, with its scripted model and store.
type server struct {
	*httptest.Server
	model *scripted.Model
	store storage.Store
	os    *agentos.OS
}

func newServer(t *testing.T, replies []scripted.Reply, configure func(*agent.Config, *agentos.Config)) *server {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	m := scripted.New(replies)
	acfg := agent.Config{ID: "assistant", Name: "Assistant", Model: m, Store: store, AddHistoryToContext: true}
	ocfg := agentos.Config{Store: store}
	if configure != nil {
		configure(&acfg, &ocfg)
	}
	a, err := agent.New(acfg)
	require.NoError(t, err)
	ocfg.Runners = []run.Runner{a}
	os, err := agentos.New(ocfg)
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	return &server{Server: ts, model: m, store: store, os: os}
}

func (s *server) postForm(t *testing.T, path string, fields url.Values) *http.Response {
	t.Helper()
	resp, err := http.PostForm(s.URL+path, fields)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (s *server) get(t *testing.T, path string) *http.Response {
	t.Helper()
	resp, err := http.Get(s.URL + path)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decode[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	var v T
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

// frame is one SSE frame.
type frame struct {
	event string
	data  map[string]any
	raw   string
	err   error // decoding data
}

func readFrames(t *testing.T, body io.Reader) []frame {
	t.Helper()
	var frames []frame
	scanFrames(body, func(f frame) {
		require.NoError(t, f.err)
		frames = append(frames, f)
	})
	return frames
}

// scanFrames calls yield with each SSE frame of body, in order.
func scanFrames(body io.Reader, yield func(frame)) {
	scanner := bufio.NewScanner(body)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	var current frame
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			current.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			current.raw = strings.TrimPrefix(line, "data: ")
			current.err = json.Unmarshal([]byte(current.raw), &current.data)
		case line == "":
			if current.event != "" {
				yield(current)
			}
			current = frame{}
		}
	}
}

// liveFrames reads an SSE body as it arrives, in a goroutine: each frame
// goes to the channel, which is closed at the end of the body.
func liveFrames(t *testing.T, body io.Reader) <-chan frame {
	t.Helper()
	ch := make(chan frame, 64)
	go func() {
		defer close(ch)
		scanFrames(body, func(f frame) {
			if f.err != nil {
				t.Errorf("frame %s: %v", f.event, f.err)
			}
			ch <- f
		})
	}()
	return ch
}

// framesUntil collects frames from a live stream up to the first one named
// name, included; with name empty, up to the end of the stream. It fails
// after within.
func framesUntil(t *testing.T, frames <-chan frame, name string, within time.Duration) []frame {
	t.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	var got []frame
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				if name != "" {
					t.Fatalf("the stream ended before %s: %v", name, frameNames(got))
				}
				return got
			}
			got = append(got, f)
			if name != "" && f.event == name {
				return got
			}
		case <-timeout.C:
			t.Fatalf("no %q within %v: %v", cmp.Or(name, "end of the stream"), within, frameNames(got))
		}
	}
}

// poll calls check every tick until it reports true, and fails the test
// with msg when within passes first. Unlike require.Eventually it calls
// check on the test's goroutine, so check may use require.
func poll(t *testing.T, within, tick time.Duration, check func() bool, msg string, args ...any) {
	t.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for !check() {
		select {
		case <-ticker.C:
		case <-timeout.C:
			if !check() {
				t.Fatalf(msg, args...)
			}
			return
		}
	}
}

func frameNames(frames []frame) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = f.event
	}
	return out
}

func TestHealthInfoAndAgents(t *testing.T) {
	s := newServer(t, nil, nil)
	resp := s.get(t, "/health")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", decode[map[string]any](t, resp)["status"])

	agents := decode[[]map[string]any](t, s.get(t, "/agents"))
	require.Len(t, agents, 1)
	require.Equal(t, "assistant", agents[0]["id"])
	require.Equal(t, "agnogo-db", agents[0]["db_id"])
	require.Equal(t, "scripted", agents[0]["model"].(map[string]any)["model"])

	require.Equal(t, http.StatusNotFound, s.get(t, "/agents/nobody").StatusCode)
}

func TestRunAsJSON(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("Hello!")}, nil)
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := decode[map[string]any](t, resp)
	require.Equal(t, "Hello!", out["content"])
	require.Equal(t, "COMPLETED", out["status"])
	require.Equal(t, "hi", out["run_input"])
	require.Equal(t, "s1", out["session_id"])

	runs := decode[[]map[string]any](t, s.get(t, "/agents/assistant/runs?session_id=s1"))
	require.Len(t, runs, 1)
	one := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+out["run_id"].(string)+"?session_id=s1"))
	require.Equal(t, "Hello!", one["content"])
	require.Equal(t, http.StatusNotFound, s.get(t, "/agents/assistant/runs/"+out["run_id"].(string)+"?session_id=other").StatusCode)
}

func TestRunAsSSE(t *testing.T) {
	s := newServer(t, []scripted.Reply{{Content: "Hello there!", Chunks: 2}}, nil)
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	frames := readFrames(t, resp.Body)
	require.Equal(t, []string{"RunStarted", "RunContent", "RunContent", "RunCompleted"}, frameNames(frames))
	require.Equal(t, "Hello there!", frames[3].data["content"])
	require.NotContains(t, frames[1].raw, "null", "null fields are dropped")
	require.NotContains(t, frames[1].raw, ": ", "frames are compact JSON")
}

func TestRunValidation(t *testing.T) {
	s := newServer(t, nil, nil)
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"stream": {"false"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	body := decode[map[string]any](t, resp)
	require.Contains(t, body["detail"].([]any)[0].(map[string]any)["loc"], "message")

	resp = s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "session_state": {"{not json"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, readAll(t, resp), "session_state")

	resp = s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"maybe"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)

	require.Equal(t, http.StatusNotFound, s.postForm(t, "/agents/nobody/runs", url.Values{"message": {"hi"}}).StatusCode)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(data)
}

func storageQuery(sessionID string) storage.RunQuery { return storage.RunQuery{SessionID: sessionID} }

// onBackends runs test on a SQLite store and on a Postgres one (skipped
// without Postgres, failed under CI=true).
func onBackends(t *testing.T, test func(t *testing.T, store storage.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
		require.NoError(t, err)
		t.Cleanup(func() { store.Close() })
		test(t, store)
	})
	t.Run("postgres", func(t *testing.T) {
		store, err := postgres.Open(t.Context(), postgres.Config{URL: testdb.PostgresURL(t), Schema: testdb.UniqueName(t, "agentos"), AutoMigrate: true})
		require.NoError(t, err)
		t.Cleanup(func() { store.Close() })
		test(t, store)
	})
}
