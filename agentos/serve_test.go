package agentos_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/internal/gatedmodel"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// jsonLog is a JSON log written from the server's goroutines.
type jsonLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *jsonLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// logger is a JSON logger into l.
func (l *jsonLog) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// lines decodes the log so far, one entry per line.
func (l *jsonLog) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []map[string]any
	scanner := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for scanner.Scan() {
		var entry map[string]any
		require.NoError(t, json.Unmarshal(scanner.Bytes(), &entry), scanner.Text())
		lines = append(lines, entry)
	}
	return lines
}

// with returns the lines whose msg is msg.
func (l *jsonLog) with(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var found []map[string]any
	for _, line := range l.lines(t) {
		if line["msg"] == msg {
			found = append(found, line)
		}
	}
	return found
}

// serving is an OS served by OS.Serve on a local port.
type serving struct {
	url    string
	addr   string
	stop   context.CancelFunc
	served chan error
}

// serveOS serves o with opts until the test ends or stopServing is called.
func serveOS(t *testing.T, o *agentos.OS, opts agentos.ServeOptions) *serving {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	s := &serving{url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), stop: stop, served: make(chan error, 1)}
	go func() { s.served <- o.Serve(ctx, ln, opts) }()
	t.Cleanup(func() {
		stop()
		<-s.served
	})
	return s
}

// stopServing ends Serve's context and returns what Serve returned.
func (s *serving) stopServing(t *testing.T) error {
	t.Helper()
	s.stop()
	select {
	case err := <-s.served:
		s.served <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its context ended")
		return nil
	}
}

// newOS is an OS over one agent on m, logging into log.
func newOS(t *testing.T, m *scripted.Model, log *jsonLog, configure func(*agentos.Config)) *agentos.OS {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	a, err := agent.New(agent.Config{ID: "assistant", Model: m, Store: store})
	require.NoError(t, err)
	cfg := agentos.Config{Runners: []run.Runner{a}, Store: store, Logger: log.logger()}
	if configure != nil {
		configure(&cfg)
	}
	o, err := agentos.New(cfg)
	require.NoError(t, err)
	return o
}

// TestServeServesUntilTheContextEnds: Serve logs where it listens, serves
// runs, and once its context ends stops and returns nil, having logged
// what it waited for; nothing is served after.
func TestServeServesUntilTheContextEnds(t *testing.T) {
	t.Parallel()
	log := &jsonLog{}
	o := newOS(t, scripted.New([]scripted.Reply{scripted.Text("served")}), log, nil)
	s := serveOS(t, o, agentos.ServeOptions{StartupAttrs: []slog.Attr{slog.String("db", "test-db")}})

	resp, err := http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"false"}})
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	resp.Body.Close()
	require.Equal(t, "served", out["content"])

	started := log.with(t, agentos.ListeningMessage)
	require.Len(t, started, 1)
	require.Equal(t, s.addr, started[0]["addr"])
	require.Equal(t, s.url, started[0]["url"])
	require.Equal(t, s.url+"/docs", started[0]["docs"])
	require.Equal(t, "assistant", started[0]["agents"])
	require.Equal(t, "test-db", started[0]["db"])
	require.Equal(t, "none", started[0]["auth"])
	require.Equal(t, "dev", started[0]["version"])

	require.NoError(t, s.stopServing(t))
	stopping := log.with(t, "shutting down: refusing new connections and runs, cancelling the runs in flight and waiting for them to be saved")
	require.Len(t, stopping, 1)
	require.Equal(t, float64(0), stopping[0]["runs_in_flight"])
	require.Equal(t, agentos.DefaultShutdownTimeout.Seconds(), stopping[0]["timeout_s"])
	require.Len(t, log.with(t, "HTTP server stopped: the runs in flight are saved"), 1)
	_, err = net.Dial("tcp", s.addr)
	require.Error(t, err, "the listener is closed")
}

// TestServeCancelsTheRunsInFlight: a run streaming when the context ends
// is cancelled, its stream ends with RunCancelled, it is saved, and the
// log counts it.
func TestServeCancelsTheRunsInFlight(t *testing.T) {
	t.Parallel()
	log := &jsonLog{}
	gate := gatedmodel.New()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	a, err := agent.New(agent.Config{ID: "assistant", Model: gate, Store: store})
	require.NoError(t, err)
	o, err := agentos.New(agentos.Config{Runners: []run.Runner{a}, Store: store, Logger: log.logger()})
	require.NoError(t, err)
	s := serveOS(t, o, agentos.ServeOptions{})

	resp, err := http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"hi"}})
	require.NoError(t, err)
	defer resp.Body.Close()
	<-gate.Streamed()
	served := make(chan error, 1)
	go func() { served <- s.stopServing(t) }()
	frames := readFrames(t, resp.Body)
	require.Equal(t, run.EventRunCancelled, frames[len(frames)-1].event, frameNames(frames))
	require.NoError(t, <-served)

	rec, err := store.GetRun(t.Context(), frames[0].data["run_id"].(string), "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, rec.Run.Status)
	stopping := log.with(t, "shutting down: refusing new connections and runs, cancelling the runs in flight and waiting for them to be saved")
	require.Equal(t, float64(1), stopping[0]["runs_in_flight"])
}

// stubborn is a runner that ignores cancellation until released: a run
// that cannot be stopped in time.
type stubborn struct {
	started, release chan struct{}
}

func (s *stubborn) ID() string     { return "stubborn" }
func (s *stubborn) Name() string   { return "Stubborn" }
func (s *stubborn) Kind() run.Kind { return run.KindAgent }
func (s *stubborn) Stream(ctx context.Context, in *run.Input) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		if !yield(&run.RunStarted{BaseEvent: run.BaseEvent{RunID: in.RunID, SessionID: in.SessionID, AgentID: "stubborn"}}, nil) {
			return
		}
		close(s.started)
		<-s.release
		yield(&run.RunCompleted{BaseEvent: run.BaseEvent{RunID: in.RunID, SessionID: in.SessionID, AgentID: "stubborn"}, Content: "late"}, nil)
	}
}

// TestServeShutdownTimeout: a run that does not stop within
// ShutdownTimeout makes Serve return an error saying so.
func TestServeShutdownTimeout(t *testing.T) {
	t.Parallel()
	runner := &stubborn{started: make(chan struct{}), release: make(chan struct{})}
	o, err := agentos.New(agentos.Config{Runners: []run.Runner{runner}, Logger: (&jsonLog{}).logger()})
	require.NoError(t, err)
	s := serveOS(t, o, agentos.ServeOptions{ShutdownTimeout: 50 * time.Millisecond})
	resp, err := http.PostForm(s.url+"/agents/stubborn/runs", url.Values{"message": {"hi"}})
	require.NoError(t, err)
	defer resp.Body.Close()
	<-runner.started

	err = s.stopServing(t)
	require.ErrorContains(t, err, "shutdown did not finish within 50ms")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(runner.release)
}

// TestServeBoundsRequestBodies: ServeOptions.BodyTimeout cuts off a body
// that does not arrive in time.
func TestServeBoundsRequestBodies(t *testing.T) {
	t.Parallel()
	o := newOS(t, scripted.New(nil), &jsonLog{}, nil)
	s := serveOS(t, o, agentos.ServeOptions{BodyTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", s.addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
	_, err = fmt.Fprint(conn, "POST /agents/assistant/runs HTTP/1.1\r\nHost: agnogo\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nmessage=h")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestServeWarnsWhenJWTScopesAreOff: with JWTConfig.ValidateOnly (Agno's
// default without authorization=True) the start warns, before the line
// that says where the server listens.
func TestServeWarnsWhenJWTScopesAreOff(t *testing.T) {
	t.Parallel()
	for _, validateOnly := range []bool{true, false} {
		log := &jsonLog{}
		jwtConfig := rsaJWT(t)
		jwtConfig.ValidateOnly = validateOnly
		o := newOS(t, scripted.New(nil), log, func(cfg *agentos.Config) { cfg.Auth = agentos.AuthConfig{JWT: jwtConfig} })
		s := serveOS(t, o, agentos.ServeOptions{})
		require.NoError(t, s.stopServing(t))
		lines := log.lines(t)
		var msgs []string
		for _, line := range lines {
			msgs = append(msgs, line["msg"].(string))
		}
		if !validateOnly {
			require.NotContains(t, strings.Join(msgs, "\n"), "JWT scopes")
			continue
		}
		require.Equal(t, "WARN", lines[0]["level"])
		require.True(t, strings.HasPrefix(msgs[0], "JWT scopes are not enforced: any valid token may call every route"), msgs[0])
		require.Equal(t, agentos.ListeningMessage, msgs[1])
		require.Equal(t, "jwt", lines[1]["auth"])
	}
}

// TestFailedRunsAreLogged: a run that fails — answered as JSON, streamed,
// or in the background without a durable queue — is logged once at Warn
// with its run id and error type; a request refused before its run
// starts is not a failed run.
func TestFailedRunsAreLogged(t *testing.T) {
	t.Parallel()
	rateLimited := func() scripted.Reply {
		return scripted.Fail(run.Classify(run.ClassRateLimit, errors.New("429 slow down")))
	}
	log := &jsonLog{}
	o := newOS(t, scripted.New([]scripted.Reply{rateLimited(), rateLimited(), rateLimited()}), log, nil)
	s := serveOS(t, o, agentos.ServeOptions{})
	post := func(fields url.Values) *http.Response {
		resp, err := http.PostForm(s.url+"/agents/assistant/runs", fields)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	var out map[string]any
	require.NoError(t, json.NewDecoder(post(url.Values{"message": {"hi"}, "stream": {"false"}}).Body).Decode(&out))
	require.Equal(t, "ERROR", out["status"])
	frames := readFrames(t, post(url.Values{"message": {"hi"}}).Body)
	require.Equal(t, run.EventRunError, frames[len(frames)-1].event)
	var accepted map[string]any
	require.NoError(t, json.NewDecoder(post(url.Values{"message": {"hi"}, "stream": {"false"}, "background": {"true"}}).Body).Decode(&accepted))
	require.Equal(t, http.StatusUnprocessableEntity, post(url.Values{"stream": {"false"}}).StatusCode, "no message: refused")

	poll(t, 10*time.Second, 5*time.Millisecond, func() bool { return len(log.with(t, "run failed")) >= 3 },
		"the background run's failure was not logged: %v", log.lines(t))
	failed := log.with(t, "run failed")
	require.Len(t, failed, 3)
	var runIDs []any
	for _, line := range failed {
		require.Equal(t, "WARN", line["level"])
		require.Equal(t, "rate_limit", line["error_type"])
		require.Equal(t, "assistant", line["agent_id"])
		require.Contains(t, line["error"], "429 slow down")
		runIDs = append(runIDs, line["run_id"])
	}
	require.ElementsMatch(t, []any{out["run_id"], frames[0].data["run_id"], accepted["run_id"]}, runIDs)
}
