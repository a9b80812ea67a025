package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// streamTimeout bounds the wait for one SSE frame, for a stream's end and for
// the runs the replica tests poll.
const streamTimeout = 30 * time.Second

// sseFrame is one Server-Sent Events frame: its name and its JSON data.
type sseFrame struct {
	name string
	data map[string]any
}

// index is the frame's event_index; -1 for frames without one (control
// frames).
func (f sseFrame) index() int64 {
	if index, ok := f.data["event_index"].(float64); ok {
		return int64(index)
	}
	return -1
}

// String names the frame by index and name, as the tests compare them.
func (f sseFrame) String() string { return fmt.Sprintf("%d %s", f.index(), f.name) }

// controlFrames are the frames of the resume and tail code that are not
// run events (events-and-streaming.md §2).
var controlFrames = map[string]bool{"replay": true, "catch_up": true, "subscribed": true, "error": true, "stream_expired": true}

// runEvents keeps the run events of frames, dropping control frames.
func runEvents(frames []sseFrame) []sseFrame {
	var events []sseFrame
	for _, f := range frames {
		if !controlFrames[f.name] {
			events = append(events, f)
		}
	}
	return events
}

// frameNames lists frames as "index name".
func frameNames(frames []sseFrame) []string {
	names := make([]string, len(frames))
	for i, f := range frames {
		names[i] = f.String()
	}
	return names
}

// sseStream reads an SSE response as its frames arrive; comments are
// skipped.
type sseStream struct {
	body   io.Closer
	frames chan sseFrame
	quit   chan struct{}
	err    error // why the stream ended, read once frames is closed
}

// stream posts form to path and reads the answer as an SSE stream,
// closed when the test ends.
func (p *process) stream(tb testing.TB, path string, form url.Values) *sseStream {
	tb.Helper()
	resp, err := http.PostForm(p.url+path, form)
	require.NoError(tb, err)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tb.Fatalf("POST %s: %s %s, want an event stream: %s", path, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	s := &sseStream{body: resp.Body, frames: make(chan sseFrame), quit: make(chan struct{})}
	go s.read(bufio.NewReader(resp.Body))
	tb.Cleanup(s.close)
	return s
}

func (s *sseStream) read(r *bufio.Reader) {
	defer close(s.frames)
	var frame sseFrame
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if frame.name == "" {
				continue // the end of a comment
			}
			select {
			case s.frames <- frame:
			case <-s.quit:
				return
			}
			frame = sseFrame{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			frame.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &frame.data); err != nil {
				s.err = fmt.Errorf("frame %s: %w", frame.name, err)
				return
			}
		}
	}
}

// next returns the next frame; false once the stream has ended.
func (s *sseStream) next(tb testing.TB) (sseFrame, bool) {
	tb.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			require.NoError(tb, s.err, "reading the event stream")
		}
		return f, ok
	case <-time.After(streamTimeout):
		tb.Fatalf("no SSE frame within %s", streamTimeout)
		return sseFrame{}, false
	}
}

// rest reads the frames until the stream ends.
func (s *sseStream) rest(tb testing.TB) []sseFrame {
	tb.Helper()
	var frames []sseFrame
	deadline := time.Now().Add(streamTimeout)
	for {
		f, ok := s.next(tb)
		if !ok {
			return frames
		}
		frames = append(frames, f)
		require.True(tb, time.Now().Before(deadline), "the stream did not end within %s: %v", streamTimeout, frameNames(frames))
	}
}

// close drops the connection.
func (s *sseStream) close() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
		_ = s.body.Close()
	}
}
