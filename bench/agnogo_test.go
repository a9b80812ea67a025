package bench

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tool"
)

// agnogo: the model is model/scripted (agnogo's model.Model mock) looping
// over its script, with fixed token usage; the agent is agent.New and runs
// go through Agent.Run, as in agent/agent_bench_test.go.

var agnogoUsage = &run.Metrics{InputTokens: usageInput, OutputTokens: usageOutput, TotalTokens: usageTotal}

func agnogoText(content string) scripted.Reply {
	return scripted.Reply{Content: content, Usage: agnogoUsage}
}

func agnogoModel(replies ...scripted.Reply) *scripted.Model {
	return scripted.New(replies, scripted.Loop(), scripted.NoRecord())
}

// seenModel records how many messages the last request carried, so the
// conversation benchmark can assert the history reached the model.
type seenModel struct {
	*scripted.Model
	seen atomic.Int64
}

func (m *seenModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.seen.Store(int64(len(req.Messages)))
	return m.Model.Invoke(ctx, req)
}

func (m *seenModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.seen.Store(int64(len(req.Messages)))
	return m.Model.Stream(ctx, req)
}

func agnogoTool(b *testing.B, w *weather) tool.Tool {
	t, err := tool.New(tool.Config{Name: toolName, Description: toolDesc},
		func(ctx context.Context, args weatherArgs) (string, error) { return w.run(args.City), nil })
	if err != nil {
		b.Fatal(err)
	}
	return t
}

func agnogoAgent(b *testing.B, cfg agent.Config) *agent.Agent {
	a, err := agent.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

func benchAgnogoConstruct(b *testing.B) {
	m := agnogoModel(agnogoText(singleReply))
	tools := []tool.Tool{agnogoTool(b, new(weather))}
	b.ReportAllocs()
	for b.Loop() {
		a, err := agent.New(agent.Config{ID: "assistant", Model: m, Instructions: instructions, Tools: tools})
		if err != nil || a.ID() != "assistant" {
			b.Fatal(err)
		}
	}
}

func benchAgnogoSingleTurn(b *testing.B) {
	m := agnogoModel(agnogoText(singleReply))
	a := agnogoAgent(b, agent.Config{ID: "assistant", Model: m, Instructions: instructions, Tools: []tool.Tool{agnogoTool(b, new(weather))}})
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := a.Run(ctx, &run.Input{InputContent: singlePrompt})
		if err != nil || out.Content != singleReply || out.Metrics.TotalTokens != usageTotal {
			b.Fatalf("run: %v %v", out, err)
		}
	}
}

func benchAgnogoToolCall(b *testing.B) {
	call := scripted.ToolCall(toolName, toolArgs)
	call.Usage = agnogoUsage
	m := agnogoModel(call, agnogoText(toolReply))
	w := new(weather)
	a := agnogoAgent(b, agent.Config{ID: "assistant", Model: m, Instructions: instructions, Tools: []tool.Tool{agnogoTool(b, w)}})
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		before := w.calls.Load()
		out, err := a.Run(ctx, &run.Input{InputContent: toolPrompt})
		if err != nil || out.Content != toolReply || len(out.Tools) != 1 || out.Tools[0].Result == nil ||
			*out.Tools[0].Result != toolResult || w.calls.Load() != before+1 || out.Metrics.TotalTokens != 2*usageTotal {
			b.Fatalf("run: %v %v", out, err)
		}
	}
}

// benchAgnogoConversation25: 25 runs in one session, AddHistoryToContext with
// the default 3 history runs, the sqlite store. Per turn agnogo reads the
// session row and the last 3 runs (run JSON) back from SQLite, then writes
// the session row (session_data with accumulated metrics) and the run row
// (the whole run.Output as JSON: input, messages including the history
// copies, tool executions, metrics) in two transactions.
func benchAgnogoConversation25(b *testing.B) {
	store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "agnogo.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	m := &seenModel{Model: agnogoModel(agnogoText(convReply))}
	a := agnogoAgent(b, agent.Config{ID: "assistant", Model: m, Instructions: instructions, Store: store, AddHistoryToContext: true})
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		session := fmt.Sprintf("%s%d", sessionPrefix, i)
		for turn := range convTurns {
			out, err := a.Run(ctx, &run.Input{InputContent: fmt.Sprintf("turn %d", turn), SessionID: session})
			if err != nil || out.Status != run.StatusCompleted || out.Content != convReply {
				b.Fatal(out, err)
			}
			// The model saw the system message, up to 3 earlier turns and
			// this turn's input.
			if got, want := m.seen.Load(), int64(2+2*min(turn, historyTurns)); got != want {
				b.Fatalf("turn %d: model saw %d messages, want %d", turn, got, want)
			}
		}
	}
}
