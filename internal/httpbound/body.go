package httpbound

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// ErrBodyTimeout is wrapped by the error a request body's Read returns once
// the body's deadline has passed.
var ErrBodyTimeout = errors.New("request body not received in time")

// deadlineStep is the least an upload's deadline is moved forward at a time,
// so a fast upload does not reset the connection's deadline on every read.
const deadlineStep = 250 * time.Millisecond

// Config says how long request bodies may take to arrive.
type Config struct {
	// BodyTimeout bounds how long a request body may take to arrive,
	// counted from when the handler is called. Zero means no bound (the
	// handler is returned as it is).
	BodyTimeout time.Duration
	// UploadMinRate, in bytes per second, lengthens the bound of a
	// multipart/form-data body: it may take BodyTimeout plus one second for
	// every UploadMinRate bytes it has delivered, so an upload at least this
	// fast is never cut off. Zero gives uploads BodyTimeout, like any body.
	UploadMinRate int64
	// Logger receives one Info line for each body cut off. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Handler returns next with the request bodies bounded as cfg says (see the
// package documentation). A request without a body, or over HTTP/2, goes to
// next untouched.
func Handler(next http.Handler, cfg Config) (http.Handler, error) {
	if cfg.BodyTimeout < 0 {
		return nil, fmt.Errorf("httpbound: body timeout %s is negative", cfg.BodyTimeout)
	}
	if cfg.UploadMinRate < 0 {
		return nil, fmt.Errorf("httpbound: upload minimum rate %d bytes/s is negative", cfg.UploadMinRate)
	}
	if cfg.BodyTimeout == 0 {
		return next, nil
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &bodyBounder{next: next, cfg: cfg}, nil
}

// bodyBounder is the handler [Handler] returns.
type bodyBounder struct {
	next http.Handler
	cfg  Config
}

// ServeHTTP serves r with its body under a deadline.
func (h *bodyBounder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 || r.ProtoMajor != 1 {
		h.next.ServeHTTP(w, r)
		return
	}
	rc := http.NewResponseController(w)
	start := time.Now()
	if err := rc.SetReadDeadline(start.Add(h.cfg.BodyTimeout)); err != nil {
		h.next.ServeHTTP(w, r) // not a connection a deadline can be put on
		return
	}
	b := &body{
		src:      r.Body,
		w:        w,
		rc:       rc,
		start:    start,
		timeout:  h.cfg.BodyTimeout,
		length:   r.ContentLength,
		deadline: start.Add(h.cfg.BodyTimeout),
	}
	if isUpload(r) {
		b.minRate = h.cfg.UploadMinRate
	}
	bounded := *r // a handler must not modify the request it is given
	bounded.Body = b
	h.next.ServeHTTP(w, &bounded)
	if form := bounded.MultipartForm; form != nil && form != r.MultipartForm {
		// The server removes the temporary files of its own request's form
		// only.
		_ = form.RemoveAll()
	}
	if b.cut.Load() {
		h.cfg.Logger.InfoContext(r.Context(), "request body cut off: not received in time",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("remote_addr", r.RemoteAddr),
			slog.Int64("received", b.received.Load()), slog.Int64("content_length", r.ContentLength),
			slog.Float64("body_timeout_s", h.cfg.BodyTimeout.Seconds()))
	}
}

// isUpload reports a multipart/form-data request, whose body may be large.
func isUpload(r *http.Request) bool {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mediaType == "multipart/form-data"
}

// body is a request body read under the connection's read deadline. Like
// any request body, it is read by one goroutine at a time.
//
// The deadline needs no lifting: once the body has ended, the server clears
// the connection's read deadline before it starts reading the connection in
// the background (to notice a client that leaves), and a response is never
// bounded by a read deadline. What the handler leaves unread the server
// reads itself when the response starts (at most 256 KiB, still under the
// deadline), or closes the connection.
type body struct {
	src     io.ReadCloser
	w       http.ResponseWriter // the server's own, told to close the connection after a cut
	rc      *http.ResponseController
	start   time.Time
	timeout time.Duration
	minRate int64 // bytes/s that earn an upload more time; 0 for other bodies
	length  int64 // Content-Length, or -1

	deadline time.Time // the connection's read deadline
	err      error     // the timeout, returned by every later Read

	received atomic.Int64
	cut      atomic.Bool
}

// Read reads the body; past its deadline it fails with an error wrapping
// [ErrBodyTimeout], and the connection is closed after the response.
func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.src.Read(p)
	received := b.received.Add(int64(n))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.err = b.timeoutError(received)
		b.cut.Store(true)
		closeAfterResponse(b.w)
		return n, b.err
	case err == nil && n > 0 && b.minRate > 0:
		b.extend(received)
	}
	return n, err
}

// Close closes the body.
func (b *body) Close() error { return b.src.Close() }

// extend moves an upload's deadline to start + timeout + received/minRate.
func (b *body) extend(received int64) {
	next := uploadDeadline(b.start, b.timeout, received, b.minRate)
	if next.Sub(b.deadline) < deadlineStep {
		return
	}
	if b.rc.SetReadDeadline(next) == nil {
		b.deadline = next
	}
}

// uploadDeadline is when an upload that started at start and has delivered
// received bytes must have ended: timeout later, plus one second per
// minRate bytes received.
func uploadDeadline(start time.Time, timeout time.Duration, received, minRate int64) time.Time {
	earned := time.Duration(float64(received) / float64(minRate) * float64(time.Second))
	return start.Add(timeout + earned)
}

// timeoutError says how much of the body arrived before its deadline.
func (b *body) timeoutError(received int64) error {
	elapsed := time.Since(b.start).Round(time.Millisecond)
	of := ""
	if b.length > 0 {
		of = fmt.Sprintf(" of %d", b.length)
	}
	rule := fmt.Sprintf("a request body must arrive within %s", b.timeout)
	if b.minRate > 0 {
		rule = fmt.Sprintf("an upload may take %s plus one second per %d bytes it delivers", b.timeout, b.minRate)
	}
	return fmt.Errorf("%w: %d%s bytes arrived in %s (%s)", ErrBodyTimeout, received, of, elapsed, rule)
}

// closeAfterResponse has the server close the connection after the
// response: what is left of the body cannot be told from a next request. A
// MaxBytesReader past its limit tells the server's response writer so, and
// the server then closes gracefully: it ends its side of the connection and
// gives the client a moment to read the answer before the unread rest of
// the body turns the close into a reset. The header covers writers a
// MaxBytesReader cannot tell.
func closeAfterResponse(w http.ResponseWriter) {
	tooLarge := http.MaxBytesReader(w, io.NopCloser(strings.NewReader("x")), 0)
	_, _ = tooLarge.Read(make([]byte, 1))
	w.Header().Set("Connection", "close")
}
