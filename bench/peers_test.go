package bench

import "testing"

// Each benchmark runs the same workload on every framework as a
// sub-benchmark, so `go test -bench . -benchmem | benchstat` prints them
// side by side. See README.md for what each framework does per op.

type framework struct {
	name  string
	bench func(*testing.B)
}

func runAll(b *testing.B, fws ...framework) {
	for _, fw := range fws {
		b.Run(fw.name, fw.bench)
	}
}

// BenchmarkConstruct builds a one-tool agent; the tool and the mock model
// are built once, outside the timer.
func BenchmarkConstruct(b *testing.B) {
	runAll(b,
		framework{"agnogo", benchAgnogoConstruct},
		framework{"eino", benchEinoConstruct},
		framework{"genkit", benchGenkitConstruct},
	)
}

// BenchmarkSingleTurn runs one turn: one model call that answers text.
func BenchmarkSingleTurn(b *testing.B) {
	runAll(b,
		framework{"agnogo", benchAgnogoSingleTurn},
		framework{"eino", benchEinoSingleTurn},
		framework{"genkit", benchGenkitSingleTurn},
	)
}

// BenchmarkToolCall runs one turn with a tool call: the model asks for
// get_weather{"city":"Paris"}, the framework runs the tool, the model
// answers from its result.
func BenchmarkToolCall(b *testing.B) {
	runAll(b,
		framework{"agnogo", benchAgnogoToolCall},
		framework{"eino", benchEinoToolCall},
		framework{"genkit", benchGenkitToolCall},
	)
}

// BenchmarkConversation25 runs 25 turns of one session with history,
// persisted to SQLite turn by turn; one op is the whole conversation.
func BenchmarkConversation25(b *testing.B) {
	runAll(b,
		framework{"agnogo", benchAgnogoConversation25},
		framework{"eino", benchEinoConversation25},
		framework{"genkit", benchGenkitConversation25},
	)
}
