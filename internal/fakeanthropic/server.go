package fakeanthropic

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
	"unicode/utf8"
)

// messagesPath is the one endpoint the fake serves.
const messagesPath = "/v1/messages"

// Server is a fake Anthropic Messages API. Create it with [New].
type Server struct {
	// URL is the base URL to give a client, without /v1.
	URL string

	httpServer *httptest.Server

	mu          sync.Mutex
	queue       []Reply
	requests    []map[string]any
	headers     []http.Header
	toolUses    int
	disconnects int
	directed    bool // answer from directives when the queue is empty
}

// New starts a fake server that is closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	s.httpServer = httptest.NewServer(s)
	s.URL = s.httpServer.URL
	t.Cleanup(s.httpServer.Close)
	return s
}

// Enqueue appends replies to the queue; each request to /v1/messages takes
// the first one.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Requests returns the decoded JSON bodies of the requests to /v1/messages
// so far, in arrival order. Numbers decode as float64.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

// Headers returns the headers of the requests to /v1/messages so far, in the
// order of [Server.Requests].
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	headers := make([]http.Header, len(s.headers))
	for i, header := range s.headers {
		headers[i] = header.Clone()
	}
	return headers
}

// Pending returns how many enqueued replies no request has taken yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Disconnects returns how many replies the client abandoned before they were
// complete: a reply held by Reply.ThenHang whose client went away, or a
// stream the client stopped reading.
func (s *Server) Disconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disconnects
}

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.isDirected() && r.Method == http.MethodPost && strings.TrimSuffix(r.URL.Path, "/") == messagesPath+"/count_tokens" {
		raw, _ := io.ReadAll(r.Body)
		writeJSON(w, nil, "", http.StatusOK, map[string]int{"input_tokens": max(1, len(raw)/4)})
		return
	}
	if r.Method != http.MethodPost || strings.TrimSuffix(r.URL.Path, "/") != messagesPath {
		writeError(w, nil, "", http.StatusNotFound, apiError{
			Type:    "not_found_error",
			Message: fmt.Sprintf("fakeanthropic: no route %s %s; only POST %s is served", r.Method, r.URL.Path, messagesPath),
		})
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		writeError(w, nil, "", http.StatusBadRequest, apiError{
			Type:    "invalid_request_error",
			Message: fmt.Sprintf("fakeanthropic: request body is not a JSON object: %v", err),
		})
		return
	}

	s.mu.Lock()
	s.requests = append(s.requests, body)
	s.headers = append(s.headers, r.Header.Clone())
	number := len(s.requests)
	reply, ok := s.pop()
	if !ok && s.directed {
		reply, ok = directedReply(body), true
	}
	s.mu.Unlock()

	requestID := fmt.Sprintf("req_fake_%03d", number)
	if !ok {
		writeError(w, nil, requestID, http.StatusInternalServerError, apiError{
			Type:    "api_error",
			Message: fmt.Sprintf("fakeanthropic: no reply enqueued for request %d; call Server.Enqueue before the request", number),
		})
		return
	}
	if reply.status != 0 {
		writeError(w, reply.header, requestID, reply.status, apiError{Type: reply.errorType, Message: reply.errorMessage})
		return
	}

	message, err := s.message(reply, body, raw, number)
	if err != nil {
		writeError(w, nil, requestID, http.StatusInternalServerError, apiError{Type: "api_error", Message: err.Error()})
		return
	}
	if stream, _ := body["stream"].(bool); stream {
		s.writeStream(w, r, reply, message, requestID)
		return
	}
	if !s.wait(r, reply.delay) {
		return
	}
	switch {
	case reply.hang:
		<-r.Context().Done()
		s.countDisconnect()
	case reply.streamError != nil:
		writeError(w, reply.header, requestID, statusForErrorType(reply.streamError.Type), *reply.streamError)
	default:
		writeJSON(w, reply.header, requestID, http.StatusOK, message)
	}
}

// isDirected reports whether the server is in directed mode.
func (s *Server) isDirected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.directed
}

// wait waits d, or until the client goes away (a disconnect): false then.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		s.countDisconnect()
		return false
	}
}

// pop takes the first queued reply; s.mu must be held.
func (s *Server) pop() (Reply, bool) {
	if len(s.queue) == 0 {
		return Reply{}, false
	}
	reply := s.queue[0]
	s.queue = s.queue[1:]
	return reply, true
}

func (s *Server) countDisconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disconnects++
}

// message is the wire form of a complete reply, as a non-streaming request
// gets it.
type message struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        wireUsage      `json:"usage"`
}

// wireUsage is the usage object of a message.
type wireUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// contentBlock is the wire form of a [Block].
type contentBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// message renders reply for request number, filling in defaults.
func (s *Server) message(reply Reply, body map[string]any, raw []byte, number int) (*message, error) {
	modelID, _ := body["model"].(string)
	out := &message{
		ID:      fmt.Sprintf("msg_fake_%03d", number),
		Type:    "message",
		Role:    "assistant",
		Model:   modelID,
		Content: []contentBlock{},
	}
	toolUse := false
	contentBytes := 0
	for i, block := range reply.blocks {
		switch block.Type {
		case BlockText:
			out.Content = append(out.Content, contentBlock{Type: BlockText, Text: new(block.Text)})
			contentBytes += len(block.Text)
		case BlockThinking:
			signature := block.Signature
			if signature == "" {
				signature = "sig_fake"
			}
			out.Content = append(out.Content, contentBlock{Type: BlockThinking, Thinking: new(block.Thinking), Signature: &signature})
			contentBytes += len(block.Thinking)
		case BlockToolUse:
			toolUse = true
			input := block.Input
			if input == "" {
				input = "{}"
			}
			if !json.Valid([]byte(input)) {
				return nil, fmt.Errorf("fakeanthropic: block %d: tool_use input of %s is not JSON: %q", i, block.Name, input)
			}
			id := block.ID
			if id == "" {
				id = s.nextToolUseID()
			}
			out.Content = append(out.Content, contentBlock{Type: BlockToolUse, ID: id, Name: block.Name, Input: json.RawMessage(input)})
			contentBytes += len(input)
		default:
			return nil, fmt.Errorf("fakeanthropic: block %d: unknown block type %q", i, block.Type)
		}
	}
	stopReason := reply.stopReason
	if stopReason == "" {
		stopReason = "end_turn"
		if toolUse {
			stopReason = "tool_use"
		}
	}
	out.StopReason = &stopReason
	usage := Usage{InputTokens: max(1, int64(len(raw))/4), OutputTokens: max(1, int64(contentBytes)/4)}
	if reply.usage != nil {
		usage = *reply.usage
	}
	out.Usage = wireUsage{
		InputTokens:              usage.InputTokens,
		CacheCreationInputTokens: usage.CacheCreationInputTokens,
		CacheReadInputTokens:     usage.CacheReadInputTokens,
		OutputTokens:             usage.OutputTokens,
	}
	return out, nil
}

func (s *Server) nextToolUseID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.toolUses++
	return fmt.Sprintf("toolu_fake_%02d", s.toolUses)
}

// writeJSON answers with value as JSON.
func writeJSON(w http.ResponseWriter, header http.Header, requestID string, status int, value any) {
	data, err := json.Marshal(value)
	if err != nil {
		http.Error(w, "fakeanthropic: "+err.Error(), http.StatusInternalServerError)
		return
	}
	for key, values := range header {
		w.Header()[key] = values
	}
	w.Header().Set("Content-Type", "application/json")
	if requestID != "" {
		w.Header().Set("Request-Id", requestID)
	}
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// writeError answers with the API's error body.
func writeError(w http.ResponseWriter, header http.Header, requestID string, status int, apiErr apiError) {
	body := map[string]any{"type": "error", "error": apiErr}
	if requestID != "" {
		body["request_id"] = requestID
	}
	writeJSON(w, header, requestID, status, body)
}

// words splits text into words with their trailing spaces, as the API's text
// deltas roughly arrive; it always returns at least one piece.
func words(text string) []string {
	var pieces []string
	start := 0
	inSpace := false
	for i, r := range text {
		space := r == ' ' || r == '\n' || r == '\t'
		if inSpace && !space {
			pieces = append(pieces, text[start:i])
			start = i
		}
		inSpace = space
	}
	return append(pieces, text[start:])
}

// jsonPieces splits a JSON text into pieces of at most size bytes, never
// inside a UTF-8 sequence, as input_json_delta events carry it.
func jsonPieces(text string, size int) []string {
	var pieces []string
	for len(text) > size {
		cut := size
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if cut == 0 {
			cut = size
		}
		pieces = append(pieces, text[:cut])
		text = text[cut:]
	}
	if text != "" {
		pieces = append(pieces, text)
	}
	return pieces
}
