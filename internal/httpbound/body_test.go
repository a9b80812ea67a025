package httpbound

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestUploadDeadline(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		name     string
		received int64
		minRate  int64
		want     time.Duration
	}{
		{"nothing received yet: the base", 0, 1000, 60 * time.Second},
		{"one second earned per minRate bytes", 1000, 1000, 61 * time.Second},
		{"a fraction of a second", 1500, 1000, 61500 * time.Millisecond},
		{"64 MiB at 64 KiB/s", 64 << 20, 64 << 10, 60*time.Second + 1024*time.Second},
		{"more bytes than nanoseconds times bytes can hold", 20 << 30, 1 << 20, 60*time.Second + 20480*time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, start.Add(tt.want), uploadDeadline(start, 60*time.Second, tt.received, tt.minRate))
		})
	}
}

func TestHandlerConfig(t *testing.T) {
	t.Parallel()
	next := http.NotFoundHandler()
	_, err := Handler(next, Config{BodyTimeout: -time.Second})
	require.ErrorContains(t, err, "body timeout -1s is negative")
	_, err = Handler(next, Config{BodyTimeout: time.Second, UploadMinRate: -1})
	require.ErrorContains(t, err, "upload minimum rate -1 bytes/s is negative")
	h, err := Handler(next, Config{})
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(next), fmt.Sprint(h), "no timeout: next as it is")
}

// readAllHandler reads the body and answers how much it read, or 400 with
// the read error.
var readAllHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "read %d bytes", n)
})

// boundedServer serves h bounded by cfg, logging into the returned buffer.
func boundedServer(t *testing.T, h http.Handler, cfg Config) (*httptest.Server, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	bounded, err := Handler(h, cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(bounded)
	t.Cleanup(srv.Close)
	return srv, log
}

// syncBuffer is a buffer safe for a server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// rawClient is a client on its own TCP connection, writing the request by
// hand.
type rawClient struct {
	conn   net.Conn
	reader *bufio.Reader
	sent   time.Time // just before the headers went out
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	// A guard for a broken server, far beyond any deadline under test.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	return &rawClient{conn: conn, reader: bufio.NewReader(conn)}
}

// post sends a POST's headers and the first bytes of its body.
func (c *rawClient) post(t *testing.T, contentType string, contentLength int, first string) {
	t.Helper()
	c.sent = time.Now() // before the server can have started on the request
	_, err := fmt.Fprintf(c.conn, "POST /upload HTTP/1.1\r\nHost: test\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", contentType, contentLength, first)
	require.NoError(t, err)
}

// trickle sends a byte of body every interval until the connection fails
// or the test ends.
func (c *rawClient) trickle(t *testing.T, interval time.Duration) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				if _, err := c.conn.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
}

// response reads the answer, then checks the server closed the connection.
func (c *rawClient) response(t *testing.T) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(c.reader, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, string(body)
}

// requireClosed checks that the server closed the connection: the client
// reads its end, or, when the client still had body bytes on their way, a
// reset.
func (c *rawClient) requireClosed(t *testing.T) {
	t.Helper()
	_, err := c.reader.ReadByte()
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		require.ErrorIs(t, err, io.EOF, "the server closes the connection")
	}
}

func TestSlowBodiesAreCutOff(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	srv, log := boundedServer(t, readAllHandler, Config{BodyTimeout: timeout, UploadMinRate: 1000})
	for _, tt := range []struct {
		name        string
		contentType string
		length      int
		first       string
		trickle     bool
		want        string
	}{
		{"a byte every 20ms", "application/x-www-form-urlencoded", 1000, "a", true,
			"request body not received in time: %d of 1000 bytes arrived in"},
		{"shorter than its Content-Length", "application/json", 100, `{"message": "hi"}`, false,
			"request body not received in time: 17 of 100 bytes arrived in"},
		{"an upload slower than the minimum rate", "multipart/form-data; boundary=b", 100000, "--b\r\n", true,
			"an upload may take 300ms plus one second per 1000 bytes it delivers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := dialRaw(t, srv.Listener.Addr().String())
			c.post(t, tt.contentType, tt.length, tt.first)
			if tt.trickle {
				c.trickle(t, 20*time.Millisecond)
			}
			resp, body := c.response(t)
			elapsed := time.Since(c.sent)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
			require.Contains(t, body, ErrBodyTimeout.Error())
			if !strings.Contains(tt.want, "%d") {
				require.Contains(t, body, tt.want)
			}
			require.GreaterOrEqual(t, elapsed, timeout, "not before the deadline")
			require.True(t, resp.Close, "the answer closes the connection")
			c.requireClosed(t)
		})
	}
	t.Cleanup(func() {
		require.Equal(t, 3, strings.Count(log.String(), "request body cut off"), log.String())
	})
}

// TestUploadAtTheMinimumRateIsNotCutOff: an upload that takes longer than
// the body timeout, but delivers its bytes faster than the minimum rate,
// arrives whole.
func TestUploadAtTheMinimumRateIsNotCutOff(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	srv, _ := boundedServer(t, readAllHandler, Config{BodyTimeout: timeout, UploadMinRate: 1000})

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	part, err := mw.CreateFormFile("files", "big.bin")
	require.NoError(t, err)
	_, err = part.Write(bytes.Repeat([]byte("u"), 12000))
	require.NoError(t, err)
	require.NoError(t, mw.Close())

	c := dialRaw(t, srv.Listener.Addr().String())
	c.post(t, mw.FormDataContentType(), form.Len(), "")
	// 600 bytes every 20ms: 30 times the minimum rate, for about 400ms,
	// twice the body timeout. Each piece earns 600ms.
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	data := form.Bytes()
	for len(data) > 0 {
		<-ticker.C
		n := min(600, len(data))
		_, err := c.conn.Write(data[:n])
		require.NoError(t, err)
		data = data[n:]
	}
	resp, body := c.response(t)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, fmt.Sprintf("read %d bytes", form.Len()), body)
	require.Greater(t, time.Since(c.sent), timeout, "the upload outlived the body timeout")
	require.False(t, resp.Close, "the connection is kept")
}

// TestDeadlineLiftedOnceTheBodyIsRead: a handler that read its body — to
// its end, or, for a multipart form, to its closing boundary — and streams
// its answer long past the body deadline is not cut short: the server's
// background read of the connection does not run into the deadline.
func TestDeadlineLiftedOnceTheBodyIsRead(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	srv, _ := boundedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		if isUpload(r) {
			err = r.ParseMultipartForm(1 << 20)
		} else {
			_, err = io.Copy(io.Discard, r.Body)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, "started, ")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-time.After(5 * timeout): // a long answer, such as a run's stream: the behaviour under test
			fmt.Fprint(w, "still here")
		case <-r.Context().Done():
			fmt.Fprint(w, "request context ended")
		}
	}), Config{BodyTimeout: timeout, UploadMinRate: 1000})

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	require.NoError(t, mw.WriteField("message", "hello"))
	require.NoError(t, mw.Close())
	for contentType, body := range map[string][]byte{"text/plain": []byte("hello"), mw.FormDataContentType(): form.Bytes()} {
		resp, err := http.Post(srv.URL, contentType, bytes.NewReader(body))
		require.NoError(t, err)
		answer, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "started, still here", string(answer), contentType)
	}
}

// TestUnreadBodies: a handler that answers without reading the body gets
// the connection ready for the next request when the rest is small and
// has arrived; a rest that does not arrive is waited for no longer than the
// deadline, and the connection is closed.
func TestUnreadBodies(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	ignoreBody := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ignored") })
	srv, _ := boundedServer(t, ignoreBody, Config{BodyTimeout: timeout})

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	var reused []bool
	var mu sync.Mutex
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		mu.Lock()
		defer mu.Unlock()
		reused = append(reused, info.Reused)
	}}
	for range 2 {
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPost, srv.URL,
			strings.NewReader(strings.Repeat("b", 10000)))
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	mu.Lock()
	require.Equal(t, []bool{false, true}, reused, "the unread body was drained and the connection kept")
	mu.Unlock()

	c := dialRaw(t, srv.Listener.Addr().String())
	c.post(t, "text/plain", 100, "only part")
	resp, body := c.response(t)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ignored", body)
	require.GreaterOrEqual(t, time.Since(c.sent), timeout, "the rest was waited for until the deadline")
	require.True(t, resp.Close)
	c.requireClosed(t)
}

func TestErrBodyTimeoutIsWrapped(t *testing.T) {
	t.Parallel()
	b := &body{start: time.Now(), timeout: time.Second, length: -1}
	err := b.timeoutError(42)
	require.ErrorIs(t, err, ErrBodyTimeout)
	require.True(t, strings.HasPrefix(err.Error(), "request body not received in time: 42 bytes arrived in "), err.Error())
	require.True(t, strings.HasSuffix(err.Error(), "(a request body must arrive within 1s)"), err.Error())
	require.False(t, errors.Is(err, io.EOF))
}
