package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// bareTool is a Tool implemented by hand, whose spec is exactly what it
// says.
type bareTool struct{ spec tool.Spec }

func (b bareTool) Spec() tool.Spec                                       { return b.spec }
func (b bareTool) Call(context.Context, json.RawMessage) (string, error) { return "ran", nil }

// TestRequiresApprovalPausesForAConfirmation: a tool that requires
// approval and no other pause waits for a confirmation — built with New,
// flagged with WithFlags, or implemented by hand — and its paused call
// says approval_type required; with user input or external execution it
// pauses that way instead, still asking for approval. A confirmed call
// runs.
func TestRequiresApprovalPausesForAConfirmation(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, struct{}) (string, error) { return "ran", nil }
	plain := tool.MustNew(tool.Config{Name: "plain"}, noop)
	flagged, err := tool.WithFlags(plain, tool.Flags{RequiresApproval: new(true)})
	require.NoError(t, err)
	input, err := tool.WithFlags(tool.MustNew(tool.Config{Name: "input"}, func(context.Context, addressArgs) (string, error) { return "ran", nil }),
		tool.Flags{RequiresApproval: new(true), RequiresUserInput: new(true), UserInputFields: []string{"city"}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name                         string
		tool                         tool.Tool
		confirm, userInput, external bool
	}{
		{"built with New", tool.MustNew(tool.Config{Name: "built", RequiresApproval: true}, noop), true, false, false},
		{"flagged", flagged, true, false, false},
		{"by hand", bareTool{tool.Spec{Name: "by_hand", Parameters: json.RawMessage(`{"type":"object"}`), RequiresApproval: true}}, true, false, false},
		{"user input", input, false, true, false},
		{"external", tool.MustNew(tool.Config{Name: "external", RequiresApproval: true, ExternalExecution: true}, noop), false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := tc.tool.Spec().Name
			set := mustSet(t, tc.tool)
			out := tool.Execute(t.Context(), set, []run.ToolCall{call("c1", name, `{}`)}, tool.ExecuteOptions{})[0]
			require.True(t, out.Paused())
			exec := out.Execution
			require.Equal(t, "required", exec.ApprovalType)
			require.Equal(t, tc.confirm, exec.RequiresConfirmation)
			require.Equal(t, tc.userInput, exec.RequiresUserInput)
			require.Equal(t, tc.external, exec.ExternalExecutionRequired)
			require.Empty(t, exec.ApprovalID, "the run host stamps the approval's id")
			if tc.confirm {
				done := tool.Execute(t.Context(), set, []run.ToolCall{call("c1", name, `{}`)}, tool.ExecuteOptions{Resolved: true})[0]
				require.NoError(t, done.Err)
				require.Equal(t, "ran", *done.Execution.Result)
				require.Empty(t, done.Execution.ApprovalType, "a call that runs waits for nothing")
			}
		})
	}
	require.False(t, plain.Spec().RequiresApproval, "WithFlags changes a copy")
}
