package agentos

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/agnogo/agnogo/run"
)

// The access log: one line per request once it is answered, with its
// method, path, status, duration in seconds, caller and request id. A
// request id sent in X-Request-ID (printable ASCII, at most 128 bytes) is
// kept, else one is made; either way the response carries it, so a client
// can quote it. Requests answered 5xx log at error level, 4xx and 503 (a
// feature not configured, a server stopping) at warning, the rest at info.

// requestIDHeader carries a request's id both ways.
const requestIDHeader = "X-Request-ID"

// maxRequestIDLen bounds a client's request id.
const maxRequestIDLen = 128

// access is what the access log learns of a request while it is served.
type access struct {
	id   string
	user string
}

type accessKey struct{}

// accessFrom returns the access record of the request's context, or nil.
func accessFrom(ctx context.Context) *access {
	a, _ := ctx.Value(accessKey{}).(*access)
	return a
}

// requestIDFrom returns the request's id, or "" outside a request.
func requestIDFrom(ctx context.Context) string {
	if a := accessFrom(ctx); a != nil {
		return a.id
	}
	return ""
}

// withAccessLog logs each request once it is answered.
func (o *OS) withAccessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started := o.cfg.Now()
		a := &access{id: validRequestID(r.Header.Get(requestIDHeader))}
		if a.id == "" {
			a.id = run.NewUUID()
		}
		w.Header().Set(requestIDHeader, a.id)
		rec := &statusRecorder{ResponseWriter: w}
		path := r.URL.Path
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), accessKey{}, a)))
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		level := slog.LevelInfo
		switch {
		case status >= 500 && status != http.StatusServiceUnavailable:
			level = slog.LevelError
		case status >= 400:
			level = slog.LevelWarn
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", path),
			slog.Int("status", status),
			slog.Float64("duration_s", o.cfg.Now().Sub(started).Seconds()),
			slog.Int64("bytes", rec.bytes),
			slog.String("request_id", a.id),
		}
		if a.user != "" {
			attrs = append(attrs, slog.String("user", a.user))
		}
		o.log.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

// validRequestID returns id when it is usable as a request id, else "".
func validRequestID(id string) string {
	if id == "" || len(id) > maxRequestIDLen {
		return ""
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return ""
		}
	}
	return id
}

// statusRecorder notes the status and size of a response. It keeps the
// writer's other abilities (flushing, deadlines) reachable through Unwrap
// and Flush, as Server-Sent Events need them.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

// WriteHeader notes the status and sends it.
func (s *statusRecorder) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

// Write counts the bytes written.
func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client.
func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
