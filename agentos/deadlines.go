package agentos

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/agnogo/agnogo/observe"
)

// A client that stops reading an SSE stream would hold its handler (and,
// for a streamed run, the run) for as long as its connection lives: the
// server's writes block once the socket's buffers are full. Each frame is
// therefore written under a deadline, Config.SSEWriteTimeout after the frame
// starts; a client that has not taken it by then is dropped — the write
// fails, the stream ends and, as when a client leaves, a run bound to the
// request is cancelled. http.Server.WriteTimeout cannot do this: it bounds a
// whole response, and a run's stream lasts as long as the run.

// defaultSSEWriteTimeout is Config.SSEWriteTimeout when zero.
const defaultSSEWriteTimeout = 30 * time.Second

// sseWriteTimeout is the SSE write timeout for a configured value: the
// default for zero; a negative value (no bound) stays as it is.
func sseWriteTimeout(configured time.Duration) time.Duration {
	if configured == 0 {
		return defaultSSEWriteTimeout
	}
	return configured
}

// sseDeadlines is what the streams of one server share: the write timeout,
// where drops are logged, and how many there were.
type sseDeadlines struct {
	timeout time.Duration // 0: no deadline
	log     *slog.Logger
	dropped atomic.Int64
	metrics *observe.Metrics // counts the streams open
}

// withSSEWriteTimeout hands every request's SSE writer the write timeout,
// and counts the streams open for the Prometheus metrics. With neither it
// returns next.
func (o *OS) withSSEWriteTimeout(next http.Handler) http.Handler {
	metrics := o.cfg.Observer.Metrics()
	if o.cfg.SSEWriteTimeout <= 0 && metrics == nil {
		return next
	}
	shared := &sseDeadlines{timeout: max(o.cfg.SSEWriteTimeout, 0), log: o.log, metrics: metrics}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bounded := &sseBoundWriter{ResponseWriter: w, shared: shared, r: r}
		next.ServeHTTP(bounded, r)
		bounded.finish()
	})
}

// sseBoundWriter is a request's response writer carrying the SSE write
// deadline to [startSSE]. Every other use of the writer passes through it.
type sseBoundWriter struct {
	http.ResponseWriter
	shared *sseDeadlines
	r      *http.Request

	rc      *http.ResponseController // set when a stream starts
	dropped bool
}

// Unwrap lets http.ResponseController reach the server's response.
func (w *sseBoundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// FlushError flushes the response.
func (w *sseBoundWriter) FlushError() error {
	switch f := w.ResponseWriter.(type) {
	case interface{ FlushError() error }:
		return f.FlushError()
	case http.Flusher:
		f.Flush()
		return nil
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush implements http.Flusher.
func (w *sseBoundWriter) Flush() { _ = w.FlushError() }

// sseBoundOf finds the SSE write bound among the writers w wraps; nil when
// there is none (a handler called without [OS.ServeHTTP], or no timeout).
func sseBoundOf(w http.ResponseWriter) *sseBoundWriter {
	for {
		switch t := w.(type) {
		case *sseBoundWriter:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}

// started records that the stream began, written through rc.
func (w *sseBoundWriter) started(rc *http.ResponseController) {
	if w != nil {
		w.rc = rc
		w.shared.metrics.SSEClient(1)
	}
}

// arm sets the deadline of the next write. A nil bound does nothing.
func (w *sseBoundWriter) arm() {
	if w != nil && w.rc != nil && w.shared.timeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.shared.timeout))
	}
}

// failed notes a failed write and returns err. A write that ran out of time
// is a client that stopped reading: it is counted and logged once, with the
// run id of the frame (data) or of the last frame written (last).
func (w *sseBoundWriter) failed(err error, data, last []byte) error {
	if w == nil || w.dropped || !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	w.dropped = true
	total := w.shared.dropped.Add(1)
	runID := frameRunID(data)
	if runID == "" {
		runID = frameRunID(last)
	}
	w.shared.log.InfoContext(w.r.Context(), "SSE client dropped: it stopped reading",
		slog.String("run_id", runID), slog.String("path", w.r.URL.Path),
		slog.Float64("write_timeout_s", w.shared.timeout.Seconds()), slog.Int64("dropped_total", total))
	return err
}

// finish gives the end of a stream — the last bytes, which the server writes
// after the handler returns — a deadline of its own; the server lifts it
// afterwards.
func (w *sseBoundWriter) finish() {
	if w.rc == nil {
		return
	}
	w.shared.metrics.SSEClient(-1)
	if !w.dropped && w.shared.timeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.shared.timeout))
	}
}

// frameRunID is the run_id of a frame's JSON payload, or "".
func frameRunID(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	var frame struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(data, &frame) // a payload without one names no run
	return frame.RunID
}
