package agentos_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/run"
)

// floodRunner streams RunContent events of chunk bytes, one after another,
// until its run is cancelled: a run that fills any client's buffers.
type floodRunner struct {
	chunk string
	// runs receives each run's id as it starts.
	runs chan string
	// ended receives, when a run stops, why, and when the event the run
	// was blocked on (the one whose write never finished) was handed over.
	ended chan floodEnd
}

type floodEnd struct {
	err         error
	lastHandoff time.Time
}

func (f *floodRunner) ID() string     { return "flood" }
func (f *floodRunner) Name() string   { return "Flood" }
func (f *floodRunner) Kind() run.Kind { return run.KindAgent }

func (f *floodRunner) Stream(ctx context.Context, in *run.Input) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		base := run.BaseEvent{RunID: in.RunID, SessionID: in.SessionID, AgentID: f.ID(), AgentName: f.Name()}
		f.runs <- in.RunID
		var handoff time.Time
		defer func() { f.ended <- floodEnd{err: ctx.Err(), lastHandoff: handoff} }()
		handoff = time.Now()
		if !yield(&run.RunStarted{BaseEvent: base}, nil) {
			return
		}
		for ctx.Err() == nil {
			handoff = time.Now()
			if !yield(&run.RunContent{BaseEvent: base, Content: f.chunk, ContentType: "str"}, nil) {
				return
			}
		}
	}
}

// pausingRunner streams two events and ends, waiting pause before each
// event after the first and before its end: a run slower than the SSE write
// timeout, whose client reads everything.
type pausingRunner struct{ pause time.Duration }

func (p *pausingRunner) ID() string     { return "pausing" }
func (p *pausingRunner) Name() string   { return "Pausing" }
func (p *pausingRunner) Kind() run.Kind { return run.KindAgent }

func (p *pausingRunner) Stream(ctx context.Context, in *run.Input) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		base := run.BaseEvent{RunID: in.RunID, SessionID: in.SessionID, AgentID: p.ID(), AgentName: p.Name()}
		wait := func() bool {
			select {
			case <-time.After(p.pause): // the run takes its time: the behaviour under test
				return true
			case <-ctx.Done():
				return false
			}
		}
		if !yield(&run.RunStarted{BaseEvent: base}, nil) || !wait() {
			return
		}
		if !yield(&run.RunContent{BaseEvent: base, Content: "slow", ContentType: "str"}, nil) || !wait() {
			return
		}
		yield(&run.RunCompleted{BaseEvent: base, Content: "slow", ContentType: "str"}, nil)
	}
}

// logSignal is a slog handler that passes each record with a given message
// to a channel: the server's announcement that it got there.
type logSignal struct {
	message string
	records chan map[string]any
}

func (h *logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h *logSignal) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logSignal) WithGroup(string) slog.Handler            { return h }

func (h *logSignal) Handle(_ context.Context, r slog.Record) error {
	if r.Message != h.message {
		return nil
	}
	attrs := map[string]any{"level": r.Level}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Any()
		return true
	})
	h.records <- attrs
	return nil
}

// dialSmallWindow connects with a small receive buffer, so that a client
// that does not read fills the connection after little data.
func dialSmallWindow(t *testing.T, addr string) net.Conn {
	t.Helper()
	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var sockErr error
		err := c.Control(func(fd uintptr) {
			sockErr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return sockErr
	}}
	conn, err := dialer.DialContext(t.Context(), "tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestSSEClientThatStopsReadingIsDropped: a client that sends a streamed
// run and never reads the answer is dropped once a frame has waited the
// write timeout; the drop is logged with the run id and counted, and the
// run, bound to the request, is cancelled.
func TestSSEClientThatStopsReadingIsDropped(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	drops := &logSignal{message: "SSE client dropped: it stopped reading", records: make(chan map[string]any, 4)}
	flood := &floodRunner{chunk: strings.Repeat("x", 64<<10), runs: make(chan string, 1), ended: make(chan floodEnd, 1)}
	os, err := agentos.New(agentos.Config{Runners: []run.Runner{flood}, SSEWriteTimeout: timeout, Logger: slog.New(drops)})
	require.NoError(t, err)
	srv := httptest.NewServer(os)
	t.Cleanup(srv.Close)

	conn := dialSmallWindow(t, srv.Listener.Addr().String())
	form := url.Values{"message": {"flood me"}, "stream": {"true"}}.Encode()
	_, err = fmt.Fprintf(conn, "POST /agents/flood/runs HTTP/1.1\r\nHost: agnogo\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", len(form), form)
	require.NoError(t, err)
	runID := <-flood.runs
	// The client reads nothing from here on.

	var drop map[string]any
	select {
	case drop = <-drops.records:
	case <-time.After(time.Minute):
		t.Fatal("the client that stopped reading was not dropped")
	}
	require.Equal(t, slog.LevelInfo, drop["level"])
	require.Equal(t, runID, drop["run_id"])
	require.Equal(t, "/agents/flood/runs", drop["path"])
	require.Equal(t, timeout.Seconds(), drop["write_timeout_s"])
	require.Equal(t, int64(1), drop["dropped_total"])

	var end floodEnd
	select {
	case end = <-flood.ended:
	case <-time.After(time.Minute):
		t.Fatal("the run went on after its client was dropped")
	}
	require.ErrorIs(t, end.err, context.Canceled, "the run bound to the request is cancelled")
	// The frame that never went through was handed over at lastHandoff and
	// given the write timeout from then on: the drop came no sooner.
	require.GreaterOrEqual(t, time.Since(end.lastHandoff), timeout)
	select {
	case extra := <-drops.records:
		t.Fatalf("one client, dropped twice: %v", extra)
	default:
	}
}

// TestSSEStreamSlowerThanTheWriteTimeout: the write timeout bounds each
// write, not the stream: a run that stays silent longer than the timeout,
// for a client that reads, streams to its end, the chunked body ends
// cleanly, and the connection serves the next request.
func TestSSEStreamSlowerThanTheWriteTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	os, err := agentos.New(agentos.Config{Runners: []run.Runner{&pausingRunner{pause: 3 * timeout}}, SSEWriteTimeout: timeout,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	srv := httptest.NewServer(os)
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)

	resp, err := client.PostForm(srv.URL+"/agents/pausing/runs", url.Values{"message": {"take your time"}, "stream": {"true"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var names []string
	reader := bufio.NewReader(resp.Body)
	for {
		line, err := reader.ReadString('\n')
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the stream ends cleanly, with the end of its chunked body")
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "event: "); ok {
			names = append(names, name)
		}
	}
	require.NoError(t, resp.Body.Close())
	require.Equal(t, []string{"RunStarted", "RunContent", "RunCompleted"}, names)

	// The next request on the same connection is not bound by a deadline
	// left over from the stream.
	var reused sync.Once
	connReused := false
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused.Do(func() { connReused = info.Reused }) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet, srv.URL+"/health", nil)
	require.NoError(t, err)
	health, err := client.Do(req)
	require.NoError(t, err)
	require.NoError(t, health.Body.Close())
	require.Equal(t, http.StatusOK, health.StatusCode)
	require.True(t, connReused, "the stream's connection was kept alive")
}

// TestSSEWriteTimeoutOff: with a negative SSEWriteTimeout there is no
// bound, and streams work as before.
func TestSSEWriteTimeoutOff(t *testing.T) {
	t.Parallel()
	os, err := agentos.New(agentos.Config{Runners: []run.Runner{&pausingRunner{pause: time.Millisecond}}, SSEWriteTimeout: -1,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	srv := httptest.NewServer(os)
	t.Cleanup(srv.Close)
	resp, err := http.PostForm(srv.URL+"/agents/pausing/runs", url.Values{"message": {"hi"}, "stream": {"true"}})
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Contains(t, string(body), "event: RunCompleted")
}
