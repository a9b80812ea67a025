package run_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

// TestKeptToolsKeepsNestedCalls: the calls a kept call made of other tools
// (ids "<call id>.<n>") stay with it; those of a dropped call go.
func TestKeptToolsKeepsNestedCalls(t *testing.T) {
	messages := []*run.Message{{Role: run.RoleAssistant, ToolCalls: []run.ToolCall{{ID: "call_a"}}}}
	tools := []*run.ToolExecution{{ToolCallID: "call_a.1"}, {ToolCallID: "call_a.2"}, {ToolCallID: "call_a"},
		{ToolCallID: "call_b.1"}, {ToolCallID: "call_b"}, {ToolCallID: "call_a.x.1"}}
	var ids []string
	for _, kept := range run.KeptTools(tools, messages) {
		ids = append(ids, kept.ToolCallID)
	}
	require.Equal(t, []string{"call_a.1", "call_a.2", "call_a"}, ids)
}
