package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// What `agnogo serve` gives a client is bounded by the config's server key:
// the time a request body may take, the connections open at once, how long
// an idle connection stays, and how long an SSE client may stop reading.

// boundsGuard bounds every wait of these tests on the server, far beyond
// the bounds under test: a server that does not enforce them fails the test
// instead of hanging it.
const boundsGuard = time.Minute

// startBounded serves the fake assistant with server set to the YAML flow
// mapping given.
func startBounded(t *testing.T, server string) (*servingOS, *runBundle) {
	t.Helper()
	b := setupRun(t, assistantAgent)
	f, err := os.OpenFile(b.config, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(f, "server: %s\n", server)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return startServe(t, "--config", b.config), b
}

// rawConn is a client on its own TCP connection that writes its requests by
// hand, to send them as slowly, or as incompletely, as it likes.
type rawConn struct {
	net.Conn
	reader *bufio.Reader
}

func dialServer(t *testing.T, s *servingOS) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(boundsGuard)))
	return &rawConn{Conn: conn, reader: bufio.NewReader(conn)}
}

// send writes a request's head (Host and the blank line added) and the
// first part of its body.
func (c *rawConn) send(t *testing.T, head, body string) {
	t.Helper()
	_, err := fmt.Fprintf(c, "%s\r\nHost: agnogo\r\n\r\n%s", head, body)
	require.NoError(t, err)
}

// trickle writes a byte every interval until the connection fails or the
// test ends.
func (c *rawConn) trickle(t *testing.T, interval time.Duration) {
	stop, stopped := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); <-stopped })
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
}

// response reads one answer.
func (c *rawConn) response(t *testing.T) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(c.reader, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, body
}

// requireClosed checks that the server closed the connection: its end, or
// a reset when body bytes were still on their way to it.
func (c *rawConn) requireClosed(t *testing.T) {
	t.Helper()
	_, err := c.reader.ReadByte()
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		require.ErrorIs(t, err, io.EOF, "the server closes the connection")
	}
}

// TestServeCutsOffSlowBodies: with body_timeout_seconds: 1, a run request
// whose body comes a byte at a time, or stops short of its Content-Length,
// is answered 400 with a detail saying what arrived, no sooner than the
// deadline, and its connection is closed.
func TestServeCutsOffSlowBodies(t *testing.T) {
	t.Parallel()
	s, _ := startBounded(t, "{body_timeout_seconds: 1, upload_min_bytes_per_second: 1000}")
	tests := []struct {
		name        string
		contentType string
		length      int
		first       string
		trickle     bool
		detail      string
	}{
		{"a byte every 100ms", "application/x-www-form-urlencoded", 1000, "message=", true,
			`^malformed form body: request body not received in time: \d+ of 1000 bytes arrived in [0-9.]+m?s \(a request body must arrive within 1s\)$`},
		{"shorter than its Content-Length", "application/x-www-form-urlencoded", 500, "message=hi&stream=false", false,
			`^malformed form body: request body not received in time: 23 of 500 bytes arrived in [0-9.]+m?s \(a request body must arrive within 1s\)$`},
		{"an upload slower than upload_min_bytes_per_second", "multipart/form-data; boundary=b", 100000, "--b\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\n", true,
			`^malformed form body: request body not received in time: \d+ of 100000 bytes arrived in [0-9.]+m?s \(an upload may take 1s plus one second per 1000 bytes it delivers\)$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := dialServer(t, s)
			sent := time.Now() // before the server can have started on the request
			c.send(t, fmt.Sprintf("POST /agents/assistant/runs HTTP/1.1\r\nContent-Type: %s\r\nContent-Length: %d", tt.contentType, tt.length), tt.first)
			if tt.trickle {
				c.trickle(t, 100*time.Millisecond)
			}
			resp, body := c.response(t)
			require.GreaterOrEqual(t, time.Since(sent), time.Second, "not cut off before the deadline")
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
			var answer struct {
				Detail string `json:"detail"`
			}
			require.NoError(t, json.Unmarshal(body, &answer))
			require.Regexp(t, regexp.MustCompile(tt.detail), answer.Detail)
			require.True(t, resp.Close, "the answer closes the connection")
			c.requireClosed(t)
		})
	}
	t.Cleanup(func() {
		require.Equal(t, len(tests), strings.Count(s.log.String(), "request body cut off"), s.log.String())
	})
}

// TestServeUploadFasterThanTheMinimumRate: a multipart run request that
// takes longer than body_timeout_seconds, but delivers its bytes faster than
// upload_min_bytes_per_second, is served.
func TestServeUploadFasterThanTheMinimumRate(t *testing.T) {
	t.Parallel()
	s, b := startBounded(t, "{body_timeout_seconds: 1, upload_min_bytes_per_second: 10000}")
	b.fake.Enqueue(fakeopenai.Text("received"))
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	require.NoError(t, mw.WriteField("stream", "false"))
	require.NoError(t, mw.WriteField("message", strings.Repeat("long message ", 5000)))
	require.NoError(t, mw.Close())

	c := dialServer(t, s)
	sent := time.Now()
	c.send(t, fmt.Sprintf("POST /agents/assistant/runs HTTP/1.1\r\nContent-Type: %s\r\nContent-Length: %d", mw.FormDataContentType(), form.Len()), "")
	// 1,000 bytes every 20ms: five times the minimum rate, for about 1.3s.
	// Each piece earns 100ms.
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	for data := form.Bytes(); len(data) > 0; {
		<-ticker.C
		n := min(1000, len(data))
		_, err := c.Write(data[:n])
		require.NoError(t, err)
		data = data[n:]
	}
	resp, body := c.response(t)
	require.Greater(t, time.Since(sent), time.Second, "the upload outlived body_timeout_seconds")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var output map[string]any
	require.NoError(t, json.Unmarshal(body, &output))
	require.Equal(t, "received", output["content"])
	require.Equal(t, "COMPLETED", output["status"])
}

// TestServeConnectionCap: with max_connections: 2 and two connections open,
// a third is not served until one of them closes.
func TestServeConnectionCap(t *testing.T) {
	t.Parallel()
	s, _ := startBounded(t, "{max_connections: 2}")
	health := func(c *rawConn) {
		t.Helper()
		c.send(t, "GET /health HTTP/1.1", "")
	}
	first, second := dialServer(t, s), dialServer(t, s)
	for _, c := range []*rawConn{first, second} {
		health(c)
		resp, _ := c.response(t)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}

	third := dialServer(t, s) // the kernel completes the handshake; the server does not accept it
	health(third)
	require.NoError(t, third.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err := third.reader.Peek(1)
	var netErr net.Error
	require.ErrorAs(t, err, &netErr, "a third connection is not served while two are open")
	require.True(t, netErr.Timeout(), "%v", err)

	require.NoError(t, first.Close())
	require.NoError(t, third.SetReadDeadline(time.Now().Add(boundsGuard)))
	resp, body := third.response(t)
	require.Equal(t, http.StatusOK, resp.StatusCode, "served once a connection closed: %s", body)
}

// TestServeClosesIdleConnections: idle_timeout_seconds closes a keep-alive
// connection left idle.
func TestServeClosesIdleConnections(t *testing.T) {
	t.Parallel()
	s, _ := startBounded(t, "{idle_timeout_seconds: 1}")
	c := dialServer(t, s)
	sent := time.Now() // the connection is idle from some time after this
	c.send(t, "GET /health HTTP/1.1", "")
	resp, _ := c.response(t)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, resp.Close)
	c.requireClosed(t)
	require.GreaterOrEqual(t, time.Since(sent), time.Second, "not before idle_timeout_seconds")
}

// TestServeDropsSSEClientThatStopsReading: with sse_write_timeout_seconds:
// 1, a client that asks for a streamed run and never reads it is dropped
// once its connection is full and a frame has waited a second; the drop is
// logged with the run id, and the run is cancelled.
func TestServeDropsSSEClientThatStopsReading(t *testing.T) {
	t.Parallel()
	s, b := startBounded(t, "{sse_write_timeout_seconds: 1}")
	// 64 words of 64 KiB, then the model stalls until the run is cancelled:
	// 4 MiB, twice what the socket buffers between the server and a client
	// with a small receive window were seen to hold, and a run that cannot
	// complete before its client is dropped.
	b.fake.Enqueue(fakeopenai.Text(strings.Repeat(strings.Repeat("w", 64<<10)+" ", 65)).StallAfter(64))

	dialer := net.Dialer{Control: func(_, _ string, raw syscall.RawConn) error {
		var sockErr error
		if err := raw.Control(func(fd uintptr) {
			sockErr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return sockErr
	}}
	conn, err := dialer.DialContext(t.Context(), "tcp", strings.TrimPrefix(s.url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	form := url.Values{"message": {"flood me"}, "stream": {"true"}, "session_id": {"stalled"}}.Encode()
	_, err = fmt.Fprintf(conn, "POST /agents/assistant/runs HTTP/1.1\r\nHost: agnogo\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s",
		len(form), form)
	require.NoError(t, err)
	// The client reads nothing from here on.

	dropLine := regexp.MustCompile(`msg="SSE client dropped: it stopped reading" run_id=(\S+) path=/agents/assistant/runs write_timeout_s=1 dropped_total=1`)
	var runID string
	// Producing 4 MiB takes the fake model a while under the race detector.
	require.True(t, poll(3*boundsGuard, 20*time.Millisecond, func() bool {
		if m := dropLine.FindStringSubmatch(s.log.String()); m != nil {
			runID = m[1]
			return true
		}
		return false
	}), "the client was not dropped:\n%s", s.log)
	require.Contains(t, s.log.String(), "level=INFO msg=\"SSE client dropped")

	var status string
	require.True(t, poll(boundsGuard, 20*time.Millisecond, func() bool {
		resp, err := http.Get(s.url + "/agents/assistant/runs/" + runID + "?session_id=stalled")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var run struct {
			Status string `json:"status"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&run) != nil {
			return false
		}
		status = run.Status
		return status == "CANCELLED"
	}), "the run of the dropped client was not cancelled: %s", status)
}
