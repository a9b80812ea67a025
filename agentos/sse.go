package agentos

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
)

// sseWriter writes Server-Sent Events frames and flushes each one, each
// under the write deadline of Config.SSEWriteTimeout (see deadlines.go).
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	// bound sets the write deadlines and notes a client dropped; nil (no
	// deadline) for a writer that did not come through [OS.ServeHTTP].
	bound *sseBoundWriter
	// lastData is the payload of the last frame written, whose run_id
	// names the run when a client is dropped at a comment.
	lastData []byte
}

// startSSE sends the stream's headers.
func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), bound: sseBoundOf(w)}
	s.bound.started(s.rc)
	s.bound.arm()
	if err := s.rc.Flush(); err != nil {
		_ = s.bound.failed(err, nil, nil)
	}
	return s
}

// event writes one run event: `event: Name` (its wire name, TeamRunStarted
// for a team's), then its compact JSON.
func (s *sseWriter) event(e run.Event) error {
	data, err := run.EncodeEvent(e)
	if err != nil {
		return err
	}
	return s.frame(run.NameOf(e), data)
}

// entry writes an event the event log numbered and encoded.
func (s *sseWriter) entry(e eventlog.Entry) error { return s.frame(e.Name, e.Data) }

// frame writes one named frame with a JSON payload.
func (s *sseWriter) frame(name string, data []byte) error {
	s.bound.arm()
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return s.bound.failed(err, data, s.lastData)
	}
	if err := s.rc.Flush(); err != nil {
		return s.bound.failed(err, data, s.lastData)
	}
	s.lastData = data
	return nil
}

// errorFrame writes the `event: error` control frame.
func (s *sseWriter) errorFrame(message string) error {
	data, _ := json.Marshal(map[string]string{"event": "error", "error": message}) // strings always encode
	return s.frame("error", data)
}

// control writes a control frame (replay, catch_up, subscribed): not a run
// event, but named and JSON like one.
func (s *sseWriter) control(name string, data map[string]any) error {
	data["event"] = name
	encoded, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", name, err)
	}
	return s.frame(name, encoded)
}

// comment writes an SSE comment line, which clients ignore: a heartbeat
// that keeps proxies from closing an idle stream.
func (s *sseWriter) comment(text string) error {
	s.bound.arm()
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return s.bound.failed(err, nil, s.lastData)
	}
	if err := s.rc.Flush(); err != nil {
		return s.bound.failed(err, nil, s.lastData)
	}
	return nil
}

// NewEventLog returns an in-process event log. Pass the same log as
// Config.Events and to a durable queue, so the runs the queue executes
// stream and resume like the others.
func NewEventLog() *eventlog.Memory {
	return eventlog.NewMemory(eventlog.MemoryConfig{})
}

// follow writes a run's followed events, and idleComment after each silent
// interval, until the run ends or the client leaves (an error). It reports
// how many events it wrote. A failure to read the events ends the stream
// with an error frame that says how to go on.
func (s *sseWriter) follow(ctx context.Context, runID string, items iter.Seq2[eventlog.Item, error], idleComment string) (int, error) {
	sent := 0
	for item, err := range items {
		if err != nil {
			if ctx.Err() == nil {
				_ = s.errorFrame("following the run failed; resume it with POST …/runs/" + runID + "/resume")
			}
			return sent, err
		}
		if item.Idle {
			err = s.comment(idleComment)
		} else {
			err = s.entry(item.Entry)
			sent++
		}
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}
