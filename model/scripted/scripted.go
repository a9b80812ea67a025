package scripted

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"sync"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// Reply is one scripted answer.
type Reply struct {
	// Content is the reply text.
	Content string
	// Reasoning is streamed as reasoning before the content.
	Reasoning string
	// ToolCalls are the calls the reply asks for.
	ToolCalls []run.ToolCall
	// Err, when set, is returned instead of a reply.
	Err error
	// Usage is the reply's token accounting. Defaults to a small fixed count
	// derived from the request, so metrics are never empty.
	Usage *run.Metrics
	// Chunks splits Content into this many streamed deltas. Defaults to 1.
	Chunks int
	// Func, when set, computes the reply from the request instead.
	Func func(req *model.Request) Reply
}

// Respond is a reply computed from the request, for scripts that must read
// what the agent sent (say, an id in a tool result).
func Respond(fn func(req *model.Request) Reply) Reply { return Reply{Func: fn} }

// Text is a plain text reply.
func Text(content string) Reply { return Reply{Content: content} }

// ToolCall is a reply asking for one tool call with JSON arguments. Its id is
// assigned from the request count, so it is deterministic.
func ToolCall(name, argsJSON string) Reply {
	return Reply{ToolCalls: []run.ToolCall{{Type: "function", Function: run.ToolCallFunction{Name: name, Arguments: argsJSON}}}}
}

// ToolCalls is a reply asking for several tool calls at once.
func ToolCalls(calls ...Reply) Reply {
	var reply Reply
	for _, c := range calls {
		reply.ToolCalls = append(reply.ToolCalls, c.ToolCalls...)
	}
	return reply
}

// Fail is a reply that fails with err.
func Fail(err error) Reply { return Reply{Err: err} }

// Model replays its script. It is safe for concurrent use; concurrent
// requests take replies in arrival order.
type Model struct {
	info    model.Info
	loop    bool
	mu      sync.Mutex
	script  []Reply
	next    int
	history []*model.Request
	record  bool
}

// Option configures a [Model].
type Option func(*Model)

// Loop makes the script start over after its last reply, for benchmarks.
func Loop() Option { return func(m *Model) { m.loop = true } }

// WithInfo sets the model id and provider it reports. Defaults to
// scripted / Scripted.
func WithInfo(info model.Info) Option { return func(m *Model) { m.info = info } }

// NoRecord stops the model from keeping the requests it receives, so a
// benchmark's memory stays flat.
func NoRecord() Option { return func(m *Model) { m.record = false } }

// New returns a model that answers with replies, in order.
func New(replies []Reply, opts ...Option) *Model {
	m := &Model{info: model.Info{ID: "scripted", Provider: "Scripted"}, script: replies, record: true}
	for _, opt := range opts {
		opt(m)
	}
	return m
}

// Info implements [model.Model].
func (m *Model) Info() model.Info { return m.info }

// Requests returns the requests received so far, oldest first.
func (m *Model) Requests() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.Request(nil), m.history...)
}

// take returns the next reply and the 1-based number of the request.
func (m *Model) take(req *model.Request) (Reply, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.record {
		m.history = append(m.history, req)
	}
	if m.next >= len(m.script) {
		if !m.loop || len(m.script) == 0 {
			return Reply{}, 0, fmt.Errorf("scripted model: no reply left for request %d (script has %d)", m.next+1, len(m.script))
		}
		m.next = 0
	}
	reply := m.script[m.next]
	m.next++
	return reply, m.next, nil
}

// Invoke implements [model.Model].
func (m *Model) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	reply, n, err := m.take(req)
	if err != nil {
		return nil, err
	}
	if reply.Func != nil {
		reply = reply.Func(req)
	}
	if reply.Err != nil {
		return nil, reply.Err
	}
	return m.response(reply, n, req), nil
}

// Stream implements [model.Model].
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		resp, err := m.Invoke(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		if resp.ReasoningContent != "" && !yield(&model.Chunk{ReasoningDelta: resp.ReasoningContent}, nil) {
			return
		}
		for _, piece := range split(resp.Content, m.chunksFor(resp)) {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(&model.Chunk{ContentDelta: piece}, nil) {
				return
			}
		}
		yield(&model.Chunk{Response: resp}, nil)
	}
}

func (m *Model) chunksFor(resp *model.Response) int {
	if n, ok := resp.ProviderData["chunks"].(int); ok && n > 0 {
		return n
	}
	return 1
}

func (m *Model) response(reply Reply, n int, req *model.Request) *model.Response {
	resp := &model.Response{Content: reply.Content, ReasoningContent: reply.Reasoning, StopReason: "stop"}
	if reply.Chunks > 1 {
		resp.ProviderData = map[string]any{"chunks": reply.Chunks}
	}
	if len(reply.ToolCalls) > 0 {
		resp.StopReason = "tool_calls"
		resp.ToolCalls = make([]run.ToolCall, len(reply.ToolCalls))
		for i, call := range reply.ToolCalls {
			if call.ID == "" {
				call.ID = "call_" + strconv.Itoa(n) + "_" + strconv.Itoa(i+1)
			}
			if call.Type == "" {
				call.Type = "function"
			}
			resp.ToolCalls[i] = call
		}
	}
	if reply.Usage != nil {
		resp.Usage = *reply.Usage
	} else {
		// A cheap, deterministic stand-in for token counting.
		input := int64(10 * len(req.Messages))
		output := int64(len(reply.Content)/4 + 1)
		resp.Usage = run.Metrics{InputTokens: input, OutputTokens: output, TotalTokens: input + output}
	}
	return resp
}

// split cuts s into n nearly equal pieces (fewer when s is short).
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n <= 1 || n > len(s) {
		return []string{s}
	}
	size := (len(s) + n - 1) / n
	pieces := make([]string, 0, n)
	for start := 0; start < len(s); start += size {
		pieces = append(pieces, s[start:min(start+size, len(s))])
	}
	return pieces
}
