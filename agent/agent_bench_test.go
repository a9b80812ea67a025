package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tool"
)

func benchTool(b *testing.B) tool.Tool {
	weather, err := tool.New(tool.Config{Name: "get_weather", Description: "Current weather of a city."},
		func(ctx context.Context, args weatherArgs) (string, error) { return "sunny in " + args.City, nil })
	if err != nil {
		b.Fatal(err)
	}
	return weather
}

// BenchmarkNew builds a one-tool agent; the tool is built once, outside the timer.
func BenchmarkNew(b *testing.B) {
	m := scripted.New([]scripted.Reply{scripted.Text("hi")}, scripted.Loop(), scripted.NoRecord())
	tools := []tool.Tool{benchTool(b)}
	b.ReportAllocs()
	for b.Loop() {
		a, err := agent.New(agent.Config{ID: "assistant", Model: m, Instructions: "You are helpful.", Tools: tools})
		if err != nil || a.ID() != "assistant" {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunSingleTurn runs one turn against a scripted model, no store.
func BenchmarkRunSingleTurn(b *testing.B) {
	m := scripted.New([]scripted.Reply{scripted.Text("Hello!")}, scripted.Loop(), scripted.NoRecord())
	a, err := agent.New(agent.Config{ID: "assistant", Model: m, Instructions: "You are helpful.", Tools: []tool.Tool{benchTool(b)}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := a.Run(ctx, &run.Input{InputContent: "hi"})
		if err != nil || out.Content != "Hello!" {
			b.Fatalf("run: %v %v", out.Content, err)
		}
	}
}

// BenchmarkRunToolCall runs a turn with one tool call: two model calls.
func BenchmarkRunToolCall(b *testing.B) {
	m := scripted.New([]scripted.Reply{scripted.ToolCall("get_weather", `{"city":"Paris"}`), scripted.Text("It is sunny.")}, scripted.Loop(), scripted.NoRecord())
	a, err := agent.New(agent.Config{ID: "assistant", Model: m, Instructions: "You are helpful.", Tools: []tool.Tool{benchTool(b)}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := a.Run(ctx, &run.Input{InputContent: "weather?"})
		if err != nil || out.Content != "It is sunny." || *out.Tools[0].Result != "sunny in Paris" {
			b.Fatalf("run: %v %v", out.Content, err)
		}
	}
}

// BenchmarkConversation25 persists a 25-turn conversation with history to
// SQLite, turn by turn; one op is the whole conversation.
func BenchmarkConversation25(b *testing.B) {
	store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	m := scripted.New([]scripted.Reply{scripted.Text("Noted.")}, scripted.Loop(), scripted.NoRecord())
	a, err := agent.New(agent.Config{ID: "assistant", Model: m, Instructions: "You are helpful.", Store: store, AddHistoryToContext: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		session := fmt.Sprintf("s%d", i)
		for turn := range 25 {
			out, err := a.Run(ctx, &run.Input{InputContent: fmt.Sprintf("turn %d", turn), SessionID: session})
			if err != nil || out.Status != run.StatusCompleted {
				b.Fatal(err)
			}
		}
	}
}
