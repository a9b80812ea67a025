package agentos

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agnogo/agnogo/run"
)

// sseWriter writes Server-Sent Events frames and flushes each one.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE sends the stream's headers.
func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// event writes one run event: `event: Name`, then its compact JSON.
func (s *sseWriter) event(e run.Event) error {
	data, err := json.Marshal(e)
	if err == nil {
		data, err = dropNulls(data)
	}
	if err != nil {
		return fmt.Errorf("encode %s event: %w", e.EventName(), err)
	}
	return s.frame(e.EventName(), data)
}

// frame writes one named frame with a JSON payload.
func (s *sseWriter) frame(name string, data []byte) error {
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return err
	}
	return s.rc.Flush()
}

// errorFrame writes the `event: error` control frame.
func (s *sseWriter) errorFrame(message string) error {
	data, _ := json.Marshal(map[string]string{"event": "error", "error": message}) // strings always encode
	return s.frame("error", data)
}
