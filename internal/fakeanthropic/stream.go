package fakeanthropic

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// inputJSONPieceSize is the size of the input_json_delta pieces: small, so
// that every tool call's input arrives split across several events.
const inputJSONPieceSize = 5

// event is the data of one server-sent event; its fields are those of the
// API's stream events, "type" first as the API writes it.
type event struct {
	Type         string        `json:"type"`
	Message      *message      `json:"message,omitempty"`
	Index        *int          `json:"index,omitempty"`
	ContentBlock *contentBlock `json:"content_block,omitempty"`
	Delta        any           `json:"delta,omitempty"`
	Usage        any           `json:"usage,omitempty"`
	Error        *apiError     `json:"error,omitempty"`
}

// blockDelta is the delta of a content_block_delta event.
type blockDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

// messageDelta is the delta of a message_delta event.
type messageDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// outputUsage is the usage of a message_delta event.
type outputUsage struct {
	OutputTokens int64 `json:"output_tokens"`
}

// writeStream answers a streaming request with msg as server-sent events, in
// the order the API sends them.
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, reply Reply, msg *message, requestID string) {
	for key, values := range reply.header {
		w.Header()[key] = values
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Request-Id", requestID)
	w.WriteHeader(http.StatusOK)

	stream := &eventWriter{w: w, flusher: w.(http.Flusher)}
	start := *msg
	start.Content = []contentBlock{}
	start.StopReason = nil
	start.Usage.OutputTokens = 1
	stream.send(event{Type: "message_start", Message: &start})
	stream.send(event{Type: "ping"})
	if stream.err == nil && !s.wait(r, reply.delay) {
		return
	}

	for index, block := range msg.Content {
		stream.sendBlock(index, block)
	}

	switch {
	case stream.err != nil:
		s.countDisconnect()
	case reply.streamError != nil:
		stream.send(event{Type: "error", Error: reply.streamError})
	case reply.hang:
		<-r.Context().Done()
		s.countDisconnect()
	default:
		stream.send(event{
			Type:  "message_delta",
			Delta: messageDelta{StopReason: msg.StopReason},
			Usage: outputUsage{OutputTokens: msg.Usage.OutputTokens},
		})
		stream.send(event{Type: "message_stop"})
		if stream.err != nil {
			s.countDisconnect()
		}
	}
}

// eventWriter writes server-sent events and remembers the first failure, so
// the caller checks once.
type eventWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	err     error
}

// send writes one event, named after its type, and flushes it to the client.
func (e *eventWriter) send(data event) {
	if e.err != nil {
		return
	}
	encoded, err := json.Marshal(data)
	if err != nil {
		e.err = err
		return
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", data.Type, encoded); err != nil {
		e.err = err
		return
	}
	e.flusher.Flush()
}

// sendBlock writes content_block_start, the block's deltas and
// content_block_stop.
func (e *eventWriter) sendBlock(index int, block contentBlock) {
	empty := contentBlock{Type: block.Type}
	var deltas []blockDelta
	switch block.Type {
	case BlockText:
		empty.Text = new("")
		for _, word := range words(*block.Text) {
			deltas = append(deltas, blockDelta{Type: "text_delta", Text: new(word)})
		}
	case BlockThinking:
		empty.Thinking, empty.Signature = new(""), new("")
		for _, word := range words(*block.Thinking) {
			deltas = append(deltas, blockDelta{Type: "thinking_delta", Thinking: new(word)})
		}
		deltas = append(deltas, blockDelta{Type: "signature_delta", Signature: block.Signature})
	case BlockToolUse:
		empty.ID, empty.Name, empty.Input = block.ID, block.Name, json.RawMessage("{}")
		for _, piece := range jsonPieces(string(block.Input), inputJSONPieceSize) {
			deltas = append(deltas, blockDelta{Type: "input_json_delta", PartialJSON: new(piece)})
		}
	}
	e.send(event{Type: "content_block_start", Index: &index, ContentBlock: &empty})
	for _, delta := range deltas {
		e.send(event{Type: "content_block_delta", Index: &index, Delta: delta})
	}
	e.send(event{Type: "content_block_stop", Index: &index})
}
