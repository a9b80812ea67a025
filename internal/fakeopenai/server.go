package fakeopenai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a fake OpenAI API on a local port, answering each request with
// the next enqueued [Reply]. It is safe for concurrent use.
type Server struct {
	// URL is the API base URL, ending in /v1 (pass it as the client's base
	// URL).
	URL string

	httpServer *httptest.Server
	// closing is closed when the test ends, releasing stalled replies.
	closing chan struct{}

	mu          sync.Mutex
	queue       []Reply
	requests    []Request
	disconnects int
	ids         int
}

// Request is one request the server received.
type Request struct {
	// Method is the HTTP method, POST for model calls.
	Method string
	// Path is the URL path, e.g. /v1/chat/completions or /v1/responses.
	Path string
	// Header holds the request headers, Authorization included.
	Header http.Header
	// Body is the decoded JSON body; nil when the body was not a JSON object.
	Body map[string]any
	// Raw is the body as received.
	Raw []byte
}

// New starts a server that stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{closing: make(chan struct{})}
	s.httpServer = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.httpServer.URL + "/v1"
	t.Cleanup(func() {
		close(s.closing)
		s.httpServer.Close()
	})
	return s
}

// Enqueue appends replies to the queue; each model request takes the first.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Pending returns the number of replies not yet taken.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Disconnects returns how many stalled replies (see [Reply.StallAfter]) saw
// their client go away.
func (s *Server) Disconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disconnects
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "fake_bad_body", fmt.Sprintf("fakeopenai: read body: %v", err))
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &req.Body) // a non-object body stays nil; the test sees Raw

	endpoint := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodGet && endpoint == "/models":
		s.record(req)
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{}})
		return
	case r.Method != http.MethodPost || (endpoint != "/chat/completions" && endpoint != "/responses"):
		s.record(req)
		writeError(w, http.StatusNotFound, "fake_no_route", fmt.Sprintf("fakeopenai: no route %s %s", r.Method, r.URL.Path))
		return
	}

	reply, number, ok := s.take(req)
	if !ok {
		writeError(w, http.StatusInternalServerError, "fake_queue_empty",
			fmt.Sprintf("fakeopenai: no reply enqueued for request #%d (%s %s); call Server.Enqueue", number, r.Method, r.URL.Path))
		return
	}
	if reply.delay > 0 {
		select {
		case <-time.After(reply.delay):
		case <-r.Context().Done():
			return
		}
	}
	exchange := &exchange{server: s, w: w, r: r, req: req, reply: reply}
	switch {
	case reply.isHTTPError():
		if exchange.beforeAnswer() {
			return
		}
		w.Header().Set("Content-Type", reply.contentType)
		w.WriteHeader(reply.status)
		_, _ = io.WriteString(w, reply.body)
	case endpoint == "/chat/completions":
		exchange.serveChat()
	default:
		exchange.serveResponses()
	}
}

// take records req and pops the next reply; number is req's position.
func (s *Server) take(req Request) (reply Reply, number int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	number = len(s.requests)
	if len(s.queue) == 0 {
		return Reply{}, number, false
	}
	reply = s.queue[0]
	s.queue = s.queue[1:]
	return reply, number, true
}

func (s *Server) record(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
}

// nextID returns prefix followed by a number unique to this server.
func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s%d", prefix, s.ids)
}

func (s *Server) noteDisconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disconnects++
}

// exchange is one request being answered.
type exchange struct {
	server *Server
	w      http.ResponseWriter
	r      *http.Request
	req    Request
	reply  Reply
	// deltas counts streamed deltas, for StallAfter.
	deltas int
}

// streaming reports whether the request asked for a stream.
func (e *exchange) streaming() bool {
	stream, _ := e.req.Body["stream"].(bool)
	return stream
}

// model echoes the requested model id.
func (e *exchange) model() string {
	model, _ := e.req.Body["model"].(string)
	return model
}

// stall blocks, when the reply stalls at this point, until the client goes
// away or the server closes; it reports whether the reply must end. A reply
// cut at this point drops the connection instead.
func (e *exchange) stall() bool {
	if e.reply.cuts && e.deltas >= e.reply.cutAfter {
		panic(http.ErrAbortHandler) // net/http closes the connection mid-reply, quietly
	}
	if !e.reply.stalls || e.deltas < e.reply.stallAfter {
		return false
	}
	select {
	case <-e.r.Context().Done():
		e.server.noteDisconnect()
	case <-e.server.closing:
	}
	return true
}

// beforeAnswer is called before a reply that does not stream: a stalling
// reply stalls and a cut one is dropped there, whatever their delta count.
// It reports whether the reply must end.
func (e *exchange) beforeAnswer() bool {
	if e.reply.cuts {
		panic(http.ErrAbortHandler)
	}
	if !e.reply.stalls {
		return false
	}
	e.deltas = e.reply.stallAfter
	return e.stall()
}

// delta is called before each streamed delta; it reports whether the reply
// must end because it stalled.
func (e *exchange) delta() bool {
	if e.stall() {
		return true
	}
	e.deltas++
	return false
}

// startSSE writes the headers of an event stream.
func (e *exchange) startSSE() {
	header := e.w.Header()
	header.Set("Content-Type", "text/event-stream; charset=utf-8")
	header.Set("Cache-Control", "no-cache")
	header.Set("X-Request-Id", e.server.nextID("req_fake_"))
	e.w.WriteHeader(http.StatusOK)
	e.flush()
}

// data writes one `data: <json>` frame; it reports whether the client is
// still there.
func (e *exchange) data(payload any) bool {
	encoded, _ := json.Marshal(payload)
	_, err := fmt.Fprintf(e.w, "data: %s\n\n", encoded)
	e.flush()
	return err == nil
}

// event writes one `event: <type>` + `data: <json>` frame; it reports whether
// the client is still there.
func (e *exchange) event(eventType string, payload map[string]any) bool {
	payload["type"] = eventType
	encoded, _ := json.Marshal(payload)
	_, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", eventType, encoded)
	e.flush()
	return err == nil
}

func (e *exchange) flush() {
	_ = http.NewResponseController(e.w).Flush()
}

// usage is the reply's usage, derived from the sizes of the request and the
// reply when the script gave none.
func (e *exchange) usage() Usage {
	var usage Usage
	if e.reply.usage != nil {
		usage = *e.reply.usage
	} else {
		usage.InputTokens = max(1, int64(len(e.req.Raw)/4))
		usage.OutputTokens = int64(len(e.reply.text)/4 + len(e.reply.reasoning)/4 + 10*len(e.reply.toolCalls))
		usage.OutputTokens = max(1, usage.OutputTokens)
	}
	if usage.TotalTokens == 0 {
		usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	}
	return usage
}

// toolCalls returns the reply's calls with their ids filled in.
func (e *exchange) toolCalls() []ToolCall {
	calls := append([]ToolCall(nil), e.reply.toolCalls...)
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = e.server.nextID("call_fake_")
		}
	}
	return calls
}

func writeJSON(w http.ResponseWriter, status int, payload any) {
	encoded, _ := json.Marshal(payload)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(encoded)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	reply := Error(status, code, message)
	w.Header().Set("Content-Type", reply.contentType)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, reply.body)
}

func now() int64 { return time.Now().Unix() }
