package team_test

import (
	"context"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/team"
	"github.com/agnogo/agnogo/tool"
)

// The team benchmarks set a coordinate team of three members beside the
// same work done by one agent, so the cost of a delegation — a member's
// whole run as a child run, its events passed on — reads off the
// difference. Every model is scripted; nothing is stored.

func benchMembers(b *testing.B, n int) []run.Runner {
	members := make([]run.Runner, n)
	for i := range members {
		a, err := agent.New(agent.Config{ID: fmt.Sprintf("m%d", i),
			Model: scripted.New([]scripted.Reply{scripted.Text(fmt.Sprintf("answer %d", i))}, scripted.Loop(), scripted.NoRecord())})
		if err != nil {
			b.Fatal(err)
		}
		members[i] = a
	}
	return members
}

// BenchmarkAgentSingleTurn is one member's run alone: one model call.
func BenchmarkAgentSingleTurn(b *testing.B) {
	a := benchMembers(b, 1)[0].(*agent.Agent)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := a.Run(ctx, &run.Input{InputContent: "task"})
		if err != nil || out.Content != "answer 0" {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkAgentThreeToolCalls is the leader's work without members: an
// agent that calls a plain tool three times, one call per turn, then
// answers (four model calls).
func BenchmarkAgentThreeToolCalls(b *testing.B) {
	echo, err := tool.New(tool.Config{Name: "delegate_task_to_member"}, func(_ context.Context, args struct {
		MemberID string `json:"member_id"`
		Task     string `json:"task"`
	}) (string, error) {
		return "answer from " + args.MemberID, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "solo", Tools: []tool.Tool{echo}, Model: scripted.New(leaderScript(), scripted.Loop(), scripted.NoRecord())})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := a.Run(ctx, &run.Input{InputContent: "go"})
		if err != nil || out.Content != "done" || len(out.Tools) != 3 {
			b.Fatal(out, err)
		}
	}
}

func leaderScript() []scripted.Reply {
	return []scripted.Reply{
		scripted.ToolCall(team.DelegateToolName, `{"member_id":"m0","task":"first"}`),
		scripted.ToolCall(team.DelegateToolName, `{"member_id":"m1","task":"second"}`),
		scripted.ToolCall(team.DelegateToolName, `{"member_id":"m2","task":"third"}`),
		scripted.Text("done"),
	}
}

// BenchmarkTeamCoordinate3 is the same leader delegating to three member
// agents: three child runs whose events are passed on.
func BenchmarkTeamCoordinate3(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%t", stream), func(b *testing.B) {
			tm, err := team.New(team.Config{ID: "team", Members: benchMembers(b, 3),
				Model: scripted.New(leaderScript(), scripted.Loop(), scripted.NoRecord())})
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if !stream {
					out, err := tm.Run(ctx, &run.Input{InputContent: "go"})
					if err != nil || out.Content != "done" || *out.Tools[2].Result != "answer 2" {
						b.Fatal(out, err)
					}
					continue
				}
				members := 0
				for e, err := range tm.Stream(ctx, &run.Input{InputContent: "go"}) {
					if err != nil {
						b.Fatal(err)
					}
					if _, ok := e.(*run.MemberEvent); ok {
						members++
					}
				}
				if members == 0 {
					b.Fatal("no member events")
				}
			}
		})
	}
}

// sleepyModel answers after a fixed wait, as a real model's latency.
type sleepyModel struct{ wait time.Duration }

func (m sleepyModel) Info() model.Info { return model.Info{ID: "sleepy", Provider: "bench"} }

func (m sleepyModel) Invoke(ctx context.Context, _ *model.Request) (*model.Response, error) {
	timer := time.NewTimer(m.wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return &model.Response{Content: "ok"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (m sleepyModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		resp, err := m.Invoke(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		yield(&model.Chunk{Response: resp}, nil)
	}
}

// BenchmarkBroadcast10 broadcasts one task to ten members whose model
// takes 20 ms each: run one after the other they would take 200 ms; at
// once, about 20 ms (the wall time is reported as ns/op).
func BenchmarkBroadcast10(b *testing.B) {
	members := make([]run.Runner, 10)
	for i := range members {
		a, err := agent.New(agent.Config{ID: fmt.Sprintf("m%d", i), Model: sleepyModel{wait: 20 * time.Millisecond}})
		if err != nil {
			b.Fatal(err)
		}
		members[i] = a
	}
	tm, err := team.New(team.Config{ID: "all", Mode: team.ModeBroadcast, Members: members,
		Model: scripted.New([]scripted.Reply{scripted.ToolCall(team.BroadcastToolName, `{"task":"go"}`), scripted.Text("done")}, scripted.Loop(), scripted.NoRecord())})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := tm.Run(ctx, &run.Input{InputContent: "go"})
		if err != nil || out.Content != "done" {
			b.Fatal(out, err)
		}
	}
}
