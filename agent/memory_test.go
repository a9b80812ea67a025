package agent_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

func TestMemoriesAreLearnedAndRecalled(t *testing.T) {
	b := setup(t, []scripted.Reply{
		scripted.Text("Nice to meet you, Ada."),
		scripted.Text(`{"memories":[{"memory":"The user's name is Ada","topics":["name"]},{"memory":"The user likes tea","topics":["drinks"]}]}`),
		scripted.Text("Tea, of course."),
		scripted.Text(`{"memories":[{"memory":"The user likes tea","topics":["drinks"]}]}`),
		scripted.Text("Hello, Bob."),
		scripted.Text(`{"memories":[]}`),
	}, func(c *agent.Config) {
		c.UpdateMemoryOnRun = true
		c.AddMemoriesToContext = true
	})
	events := collect(t, b.agent.Stream(t.Context(), &run.Input{InputContent: "I'm Ada and I love tea", SessionID: "s1", UserID: "ada"}))
	require.Equal(t, []string{"RunStarted", "RunContent", "MemoryUpdateStarted", "MemoryUpdateCompleted", "RunCompleted"}, names(events))
	require.Len(t, events[3].(*run.MemoryUpdateCompleted).Memories, 2)

	memories, total, err := b.store.ListMemories(t.Context(), storage.MemoryQuery{UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, "assistant", memories[0].AgentID)

	// A new session of the same user: the memories are in the system message,
	// and the repeated fact is not stored twice.
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "What do I drink?", SessionID: "s2", UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, "Tea, of course.", out.Content)
	system := b.model.Requests()[2].Messages[0].ContentString()
	require.Contains(t, system, "The user's name is Ada")
	require.Contains(t, system, "The user likes tea")
	_, total, err = b.store.ListMemories(t.Context(), storage.MemoryQuery{UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, out.Metrics.Details[run.ModelTypeMemoryModel], 1, "the memory model's usage is on the run")

	// Another user sees none of it.
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "hi", SessionID: "s3", UserID: "bob"})
	require.NoError(t, err)
	require.NotContains(t, b.model.Requests()[4].Messages[0].ContentString(), "Ada")
}

func TestMemoryFailureDoesNotFailTheRun(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.Text("Hello."), scripted.Text("not json at all")}, func(c *agent.Config) { c.UpdateMemoryOnRun = true })
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "hi", SessionID: "s1", UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	warnings, err := out.Warnings()
	require.NoError(t, err)
	require.Len(t, warnings, 1)
	require.Equal(t, "memory_update_failed", warnings[0].Type)
}

func TestMemoryModelUsageIsPriced(t *testing.T) {
	usage := run.Metrics{InputTokens: 1000, OutputTokens: 100, TotalTokens: 1100}
	b := setup(t, []scripted.Reply{
		{Content: "Hello.", Usage: &usage},
		{Content: `{"memories":[{"memory":"The user is called Ada","topics":["name"]}]}`, Usage: &usage},
	}, func(c *agent.Config) {
		c.UpdateMemoryOnRun = true
		c.Prices = agent.PriceTable{"scripted": {Input: 1, Output: 10}}
	})
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "I'm Ada", SessionID: "s1", UserID: "ada"})
	require.NoError(t, err)
	memoryUsage := out.Metrics.Details[run.ModelTypeMemoryModel]
	require.Len(t, memoryUsage, 1)
	require.NotNil(t, memoryUsage[0].Cost)
	require.InDelta(t, 0.002, *memoryUsage[0].Cost, 1e-12)
	require.InDelta(t, 0.004, *out.Metrics.Cost, 1e-12, "the run's cost counts both calls")
}
