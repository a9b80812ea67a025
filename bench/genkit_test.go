package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// genkit: genkit.Init runs once per process, outside every timer (and not
// with GENKIT_ENV=dev, which would start the reflection server). The mock
// models are registered with genkit.DefineModel, so genkit.Generate runs its
// real request path: option resolution, model and tool lookup in the
// registry, the model middleware chain (system-prompt simulation, context,
// support validation, telemetry), tracing spans and the tool loop, which
// runs the tool registered with genkit.DefineTool.

type genkitEnv struct {
	g       *genkit.Genkit
	single  ai.Model // answers singleReply
	tooling ai.Model // asks for get_weather, then answers toolReply
	conv    ai.Model // answers convReply
	tool    ai.Tool
	weather *weather
}

var (
	genkitOnce sync.Once
	genkitVal  *genkitEnv
	genkitErr  error
)

func genkitUsage() *ai.GenerationUsage {
	return &ai.GenerationUsage{InputTokens: usageInput, OutputTokens: usageOutput, TotalTokens: usageTotal}
}

// genkitMock is a mock model function. With toolCall set it asks for
// get_weather whenever the last message is the user's, and answers reply
// once the last message is the tool's response; every response carries
// fixed token usage. The tool request's input is a fresh map, as a
// provider plugin hands genkit the arguments it decoded.
func genkitMock(reply string, toolCall bool) ai.ModelFunc {
	return func(ctx context.Context, req *ai.ModelRequest, cb ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		last := req.Messages[len(req.Messages)-1]
		if toolCall && last.Role == ai.RoleUser {
			return &ai.ModelResponse{FinishReason: ai.FinishReasonStop, Usage: genkitUsage(), Request: req,
				Message: &ai.Message{Role: ai.RoleModel, Content: []*ai.Part{ai.NewToolRequestPart(&ai.ToolRequest{
					Name: toolName, Ref: toolCallID, Input: map[string]any{"city": "Paris"}})}}}, nil
		}
		if toolCall && last.Role != ai.RoleTool {
			return nil, fmt.Errorf("genkit mock: unexpected last message role %q", last.Role)
		}
		return &ai.ModelResponse{FinishReason: ai.FinishReasonStop, Usage: genkitUsage(), Request: req,
			Message: ai.NewModelTextMessage(reply)}, nil
	}
}

func genkitSetup(b *testing.B) *genkitEnv {
	b.Helper()
	genkitOnce.Do(func() {
		if os.Getenv("GENKIT_ENV") == "dev" {
			genkitErr = errors.New("unset GENKIT_ENV: in dev mode genkit.Init starts its reflection server")
			return
		}
		g := genkit.Init(context.Background())
		opts := &ai.ModelOptions{Label: "mock", Supports: &ai.ModelSupports{Multiturn: true, Tools: true, SystemRole: true}}
		w := new(weather)
		genkitVal = &genkitEnv{
			g:       g,
			single:  genkit.DefineModel(g, "mock/single", opts, genkitMock(singleReply, false)),
			tooling: genkit.DefineModel(g, "mock/tooling", opts, genkitMock(toolReply, true)),
			conv:    genkit.DefineModel(g, "mock/conv", opts, genkitMock(convReply, false)),
			tool: genkit.DefineTool(g, toolName, toolDesc, func(tc *ai.ToolContext, args weatherArgs) (string, error) {
				return w.run(args.City), nil
			}),
			weather: w,
		}
	})
	if genkitErr != nil {
		b.Fatal(genkitErr)
	}
	return genkitVal
}

// genkitAgent is what genkit needs per agent: it has no agent object; an
// "agent" is a Generate call configured with a model, a system prompt and
// tools. The reusable alternative, genkit.DefinePrompt, registers an action
// under a unique name in the process-wide registry, which has no way to
// unregister, so building it in a loop would grow the registry for the rest
// of the process. BenchmarkConstruct/genkit therefore measures building
// these options, the per-request configuration genkit.Generate consumes.
func genkitAgent(m ai.Model, t ai.Tool) []ai.GenerateOption {
	return []ai.GenerateOption{ai.WithModel(m), ai.WithSystem(instructions), ai.WithTools(t)}
}

func benchGenkitConstruct(b *testing.B) {
	env := genkitSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		opts := genkitAgent(env.single, env.tool)
		if len(opts) != 3 {
			b.Fatal(opts)
		}
	}
}

func benchGenkitSingleTurn(b *testing.B) {
	env := genkitSetup(b)
	agent := genkitAgent(env.single, env.tool)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := genkit.Generate(ctx, env.g, append(agent[:len(agent):len(agent)], ai.WithPrompt(singlePrompt))...)
		if err != nil || resp.Text() != singleReply || resp.Usage.TotalTokens != usageTotal {
			b.Fatalf("generate: %v %v", resp, err)
		}
	}
}

func benchGenkitToolCall(b *testing.B) {
	env := genkitSetup(b)
	agent := genkitAgent(env.tooling, env.tool)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		before := env.weather.calls.Load()
		resp, err := genkit.Generate(ctx, env.g, append(agent[:len(agent):len(agent)], ai.WithPrompt(toolPrompt))...)
		if err != nil || resp.Text() != toolReply || env.weather.calls.Load() != before+1 {
			b.Fatalf("generate: %v %v", resp, err)
		}
	}
}

// benchGenkitConversation25: 25 Generate calls; the caller keeps the
// history in memory and passes the last 3 turns (6 messages) with
// ai.WithMessages between the system prompt and the new user prompt, the
// window agnogo's default sends. Each turn is persisted with turnStore: the
// session row plus the user and model ai.Message as JSON, one row each, in
// one transaction.
func benchGenkitConversation25(b *testing.B) {
	env := genkitSetup(b)
	store := openTurnStore(b)
	agent := genkitAgent(env.conv, env.tool)
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		session := fmt.Sprintf("%s%d", sessionPrefix, i)
		var history []*ai.Message
		for turn := range convTurns {
			prompt := fmt.Sprintf("turn %d", turn)
			window := lastTurns(history, historyTurns, 2)
			resp, err := genkit.Generate(ctx, env.g, append(agent[:len(agent):len(agent)], ai.WithMessages(window...), ai.WithPrompt(prompt))...)
			if err != nil || resp.Text() != convReply {
				b.Fatal(resp, err)
			}
			// The model saw the system message, up to 3 earlier turns and
			// this turn's input.
			if got, want := len(resp.Request.Messages), 2+2*min(turn, historyTurns); got != want {
				b.Fatalf("turn %d: model saw %d messages, want %d", turn, got, want)
			}
			user := ai.NewUserTextMessage(prompt)
			history = append(history, user, resp.Message)
			if err := persistGenkitTurn(ctx, store, session, turn, resp.Usage, user, resp.Message); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func persistGenkitTurn(ctx context.Context, store *turnStore, session string, turn int, usage *ai.GenerationUsage, msgs ...*ai.Message) error {
	rows := make([]storedMessage, len(msgs))
	for i, m := range msgs {
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		rows[i] = storedMessage{role: string(m.Role), json: data}
	}
	return store.saveTurn(ctx, "genkit", session, turn, usage.InputTokens, usage.OutputTokens, usage.TotalTokens, rows)
}
