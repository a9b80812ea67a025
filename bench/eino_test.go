package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/components/model"
	einotool "github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// eino: the agent is the ReAct agent of flow/agent/react (a compiled
// compose graph: ChatModel node -> branch -> Tools node -> ChatModel),
// reused across runs; the model is a mock model.ToolCallingChatModel, so
// eino's own graph runs the loop and its ToolsNode executes the tool built
// with utils.InferTool. eino's ReAct agent has no instructions or session
// concept: the caller passes the system message and the history as input
// messages, as eino's docs do.

// einoModel is a mock model.ToolCallingChatModel. With toolCall set it asks
// for get_weather whenever the last message is the user's, and answers
// reply once the last message is the tool's result; every response carries
// fixed token usage.
type einoModel struct {
	reply    string
	toolCall bool
	tools    []*schema.ToolInfo
	// seen, when set, records how many messages the last request carried.
	seen *atomic.Int64
}

var _ model.ToolCallingChatModel = (*einoModel)(nil)

func einoUsage(finish string) *schema.ResponseMeta {
	return &schema.ResponseMeta{FinishReason: finish, Usage: &schema.TokenUsage{PromptTokens: usageInput, CompletionTokens: usageOutput, TotalTokens: usageTotal}}
}

func (m *einoModel) Generate(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.seen != nil {
		m.seen.Store(int64(len(input)))
	}
	last := input[len(input)-1]
	if m.toolCall && last.Role == schema.User {
		return &schema.Message{Role: schema.Assistant, ResponseMeta: einoUsage("tool_calls"),
			ToolCalls: []schema.ToolCall{{ID: toolCallID, Type: "function", Function: schema.FunctionCall{Name: toolName, Arguments: toolArgs}}}}, nil
	}
	if m.toolCall && last.Role != schema.Tool {
		return nil, fmt.Errorf("eino mock: unexpected last message role %q", last.Role)
	}
	return &schema.Message{Role: schema.Assistant, Content: m.reply, ResponseMeta: einoUsage("stop")}, nil
}

func (m *einoModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

// WithTools returns a copy bound to tools, as real eino models do.
func (m *einoModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	c := *m
	c.tools = tools
	return &c, nil
}

func einoTool(b *testing.B, w *weather) einotool.BaseTool {
	t, err := utils.InferTool(toolName, toolDesc, func(ctx context.Context, args weatherArgs) (string, error) { return w.run(args.City), nil })
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// einoAgent builds the ReAct agent. NewAgent appends to the config's tool
// middlewares, so every agent gets a fresh config.
func einoAgent(ctx context.Context, m model.ToolCallingChatModel, tools []einotool.BaseTool) (*react.Agent, error) {
	return react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: m, ToolsConfig: compose.ToolsNodeConfig{Tools: tools}})
}

func mustEinoAgent(b *testing.B, m model.ToolCallingChatModel, w *weather) *react.Agent {
	a, err := einoAgent(b.Context(), m, []einotool.BaseTool{einoTool(b, w)})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

func benchEinoConstruct(b *testing.B) {
	m := &einoModel{reply: singleReply}
	tools := []einotool.BaseTool{einoTool(b, new(weather))}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		a, err := einoAgent(ctx, m, tools)
		if err != nil || a == nil {
			b.Fatal(err)
		}
	}
}

func benchEinoSingleTurn(b *testing.B) {
	a := mustEinoAgent(b, &einoModel{reply: singleReply}, new(weather))
	system := schema.SystemMessage(instructions)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := a.Generate(ctx, []*schema.Message{system, schema.UserMessage(singlePrompt)})
		if err != nil || out.Content != singleReply || out.ResponseMeta.Usage.TotalTokens != usageTotal {
			b.Fatalf("generate: %v %v", out, err)
		}
	}
}

func benchEinoToolCall(b *testing.B) {
	w := new(weather)
	a := mustEinoAgent(b, &einoModel{reply: toolReply, toolCall: true}, w)
	system := schema.SystemMessage(instructions)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		before := w.calls.Load()
		out, err := a.Generate(ctx, []*schema.Message{system, schema.UserMessage(toolPrompt)})
		if err != nil || out.Content != toolReply || w.calls.Load() != before+1 {
			b.Fatalf("generate: %v %v", out, err)
		}
	}
}

// benchEinoConversation25: 25 Generate calls; the caller keeps the history
// in memory and sends the system message, the last 3 turns (6 messages) and
// the new user message, the window agnogo's default sends. Each turn is
// persisted with turnStore: the session row plus the user and assistant
// schema.Message as JSON, one row each, in one transaction.
func benchEinoConversation25(b *testing.B) {
	store := openTurnStore(b)
	seen := new(atomic.Int64)
	a := mustEinoAgent(b, &einoModel{reply: convReply, seen: seen}, new(weather))
	system := schema.SystemMessage(instructions)
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		session := fmt.Sprintf("%s%d", sessionPrefix, i)
		var history []*schema.Message
		for turn := range convTurns {
			user := schema.UserMessage(fmt.Sprintf("turn %d", turn))
			window := lastTurns(history, historyTurns, 2)
			input := make([]*schema.Message, 0, len(window)+2)
			input = append(append(append(input, system), window...), user)
			out, err := a.Generate(ctx, input)
			if err != nil || out.Content != convReply {
				b.Fatal(out, err)
			}
			// The model saw the system message, up to 3 earlier turns and
			// this turn's input.
			if got, want := seen.Load(), int64(2+2*min(turn, historyTurns)); got != want {
				b.Fatalf("turn %d: model saw %d messages, want %d", turn, got, want)
			}
			history = append(history, user, out)
			if err := persistEinoTurn(ctx, store, session, turn, user, out); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func persistEinoTurn(ctx context.Context, store *turnStore, session string, turn int, msgs ...*schema.Message) error {
	rows := make([]storedMessage, len(msgs))
	for i, m := range msgs {
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		rows[i] = storedMessage{role: string(m.Role), json: data}
	}
	usage := msgs[len(msgs)-1].ResponseMeta.Usage
	return store.saveTurn(ctx, "eino", session, turn, usage.PromptTokens, usage.CompletionTokens, usage.TotalTokens, rows)
}
