package workflow_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/internal/journaltest"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/workflow"
)

// The workflow benchmarks set a three-step workflow of agents beside the
// same three agent runs called one after the other, so the cost of a
// workflow step — the step's events, its output, the child run's events
// passed on — reads off the difference. Models are scripted; nothing is
// stored.

func benchAgents(b *testing.B, n int) []*agent.Agent {
	agents := make([]*agent.Agent, n)
	for i := range agents {
		a, err := agent.New(agent.Config{ID: fmt.Sprintf("a%d", i),
			Model: scripted.New([]scripted.Reply{scripted.Text(fmt.Sprintf("answer %d", i))}, scripted.Loop(), scripted.NoRecord())})
		if err != nil {
			b.Fatal(err)
		}
		agents[i] = a
	}
	return agents
}

// BenchmarkThreeAgentsByHand runs three agents one after the other, each
// on the answer of the one before.
func BenchmarkThreeAgentsByHand(b *testing.B) {
	agents := benchAgents(b, 3)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		input := "go"
		for _, a := range agents {
			out, err := a.Run(ctx, &run.Input{InputContent: input})
			if err != nil {
				b.Fatal(err)
			}
			input = out.ContentString()
		}
		if input != "answer 2" {
			b.Fatal(input)
		}
	}
}

// BenchmarkWorkflowThreeSteps is the same as a workflow of three Steps,
// collected, streamed with the agents' events, and journaled (an
// in-memory journal: the cost of encoding each step's output, not of a
// database).
func BenchmarkWorkflowThreeSteps(b *testing.B) {
	agents := benchAgents(b, 3)
	wf, err := workflow.New("three", workflow.Step("s0", agents[0]), workflow.Step("s1", agents[1]), workflow.Step("s2", agents[2]))
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.Run("collected", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := wf.Run(ctx, &run.Input{InputContent: "go"})
			if err != nil || out.Content != "answer 2" {
				b.Fatal(out, err)
			}
		}
	})
	b.Run("streamed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for _, err := range wf.Stream(ctx, &run.Input{InputContent: "go"}) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n < 10 {
				b.Fatal("too few events", n)
			}
		}
	})
	b.Run("journaled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			j := journaltest.New("run")
			var last run.Event
			for e, err := range wf.Execute(ctx, &run.Input{InputContent: "go", RunID: "run"}, run.Execution{Journal: j}) {
				if err != nil {
					b.Fatal(err)
				}
				last = e
			}
			if done, ok := last.(*run.RunCompleted); !ok || done.Content != "answer 2" {
				b.Fatal(last)
			}
		}
	})
}

// BenchmarkWorkflowFunctions is a workflow of three Function steps: the
// engine alone, with no agent.
func BenchmarkWorkflowFunctions(b *testing.B) {
	step := func(name string) *workflow.Node {
		return workflow.Function(name, func(_ context.Context, in *workflow.StepInput) (*run.StepOutput, error) {
			return &run.StepOutput{Content: name}, nil
		})
	}
	wf, err := workflow.New("fns", step("f0"), step("f1"), step("f2"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := wf.Run(ctx, &run.Input{InputContent: "go"})
		if err != nil || out.Content != "f2" {
			b.Fatal(out, err)
		}
	}
}
