package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/cloudwego/eino/components/model"
	einoagent "github.com/cloudwego/eino/flow/agent"
	"github.com/cloudwego/eino/flow/agent/multiagent/host"
	"github.com/cloudwego/eino/schema"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/team"
)

// The team workload: a leader routes the request to one of three member
// agents, whose answer is the answer (agnogo's route mode, eino's host
// multi-agent with one specialist chosen). Each member is a full agent
// (agnogo: a native agent; eino: a ReAct agent as the specialist's
// Invokable) answering one model call; the leader makes one model call,
// a tool call naming the member.
const (
	teamMembers = 3
	teamTarget  = 1 // the member the leader picks
	teamPrompt  = "route me"
)

func memberName(i int) string  { return fmt.Sprintf("member%d", i) }
func memberReply(i int) string { return fmt.Sprintf("answer from member %d", i) }

// BenchmarkRouteTeam routes one request to one of three member agents.
func BenchmarkRouteTeam(b *testing.B) {
	runAll(b,
		framework{"agnogo", benchAgnogoRouteTeam},
		framework{"eino", benchEinoRouteTeam},
	)
}

func benchAgnogoRouteTeam(b *testing.B) {
	members := make([]run.Runner, teamMembers)
	for i := range members {
		a, err := agent.New(agent.Config{ID: memberName(i), Instructions: instructions,
			Model: scripted.New([]scripted.Reply{{Content: memberReply(i), Usage: fixedUsage()}}, scripted.Loop(), scripted.NoRecord())})
		if err != nil {
			b.Fatal(err)
		}
		members[i] = a
	}
	pick := scripted.ToolCall(team.DelegateToolName, fmt.Sprintf(`{"member_id":%q,"task":%q}`, memberName(teamTarget), teamPrompt))
	pick.Usage = fixedUsage()
	tm, err := team.New(team.Config{ID: "router", Mode: team.ModeRoute, Members: members,
		Model: scripted.New([]scripted.Reply{pick}, scripted.Loop(), scripted.NoRecord())})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := tm.Run(ctx, &run.Input{InputContent: teamPrompt})
		if err != nil || out.Content != memberReply(teamTarget) || out.Metrics.TotalTokens != 2*usageTotal {
			b.Fatal(out, err)
		}
	}
}

func fixedUsage() *run.Metrics {
	return &run.Metrics{InputTokens: usageInput, OutputTokens: usageOutput, TotalTokens: usageTotal}
}

// einoHostModel is the host's mock model: it hands off to the target
// specialist with a tool call named after it, as eino's host expects.
type einoHostModel struct{ tools []*schema.ToolInfo }

func (m *einoHostModel) Generate(ctx context.Context, _ []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &schema.Message{Role: schema.Assistant, ResponseMeta: einoUsage("tool_calls"),
		ToolCalls: []schema.ToolCall{{ID: toolCallID, Type: "function", Function: schema.FunctionCall{Name: memberName(teamTarget), Arguments: `{"reason":"route me"}`}}}}, nil
}

func (m *einoHostModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *einoHostModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	c := *m
	c.tools = tools
	return &c, nil
}

func benchEinoRouteTeam(b *testing.B) {
	ctx := b.Context()
	specialists := make([]*host.Specialist, teamMembers)
	for i := range specialists {
		a := mustEinoAgent(b, &einoModel{reply: memberReply(i)}, new(weather))
		system := schema.SystemMessage(instructions)
		specialists[i] = &host.Specialist{
			AgentMeta: host.AgentMeta{Name: memberName(i), IntendedUse: "answers as member " + fmt.Sprint(i)},
			Invokable: func(ctx context.Context, input []*schema.Message, opts ...einoagent.AgentOption) (*schema.Message, error) {
				return a.Generate(ctx, append([]*schema.Message{system}, input...), opts...)
			},
		}
	}
	ma, err := host.NewMultiAgent(ctx, &host.MultiAgentConfig{Host: host.Host{ToolCallingModel: &einoHostModel{}, SystemPrompt: instructions},
		Specialists: specialists})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := ma.Generate(ctx, []*schema.Message{schema.UserMessage(teamPrompt)})
		if err != nil || out.Content != memberReply(teamTarget) {
			b.Fatal(out, err)
		}
	}
}
