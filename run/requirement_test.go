package run

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRequirementConfirmAndReject(t *testing.T) {
	t.Parallel()
	req := fixtureRequirement()
	require.True(t, req.NeedsConfirmation())
	require.False(t, req.IsResolved())
	require.Equal(t, PauseConfirmation, req.PauseType())

	require.NoError(t, req.Confirm())
	require.True(t, req.IsResolved())
	require.True(t, *req.Confirmation)
	require.True(t, *req.ToolExecution.Confirmed, "the tool sees the confirmation")
	require.ErrorIs(t, req.Confirm(), ErrResolutionNotNeeded)
	require.ErrorIs(t, req.Reject("no"), ErrResolutionNotNeeded)

	rejected := fixtureRequirement()
	require.NoError(t, rejected.Reject("too risky"))
	require.True(t, rejected.IsResolved())
	require.False(t, *rejected.ToolExecution.Confirmed)
	require.Equal(t, "too risky", rejected.ToolExecution.ConfirmationNote)
	require.Equal(t, "too risky", rejected.ConfirmationNote)
}

func TestRequirementSharesTheRunsTool(t *testing.T) {
	t.Parallel()
	out := fixtureOutput()
	require.Len(t, out.ActiveRequirements(), 1)
	require.NoError(t, out.Requirements[0].Confirm())
	require.Empty(t, out.ActiveRequirements())
	require.True(t, *out.Tools[1].Confirmed, "resolving the requirement updates the run's tool")
}

func TestRequirementUserInput(t *testing.T) {
	t.Parallel()
	tool := &ToolExecution{
		ToolName: "book", RequiresUserInput: true,
		UserInputSchema: []UserInputField{{Name: "date", FieldType: "str"}, {Name: "seats", FieldType: "int"}},
	}
	req := NewRequirement(tool, fixedTime)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`), req.ID)
	require.Equal(t, PauseUserInput, req.PauseType())
	require.True(t, req.NeedsUserInput())
	require.ErrorIs(t, req.Confirm(), ErrResolutionNotNeeded)

	require.NoError(t, req.ProvideUserInput(map[string]any{"date": "2026-02-01", "unknown": 1}))
	require.Nil(t, tool.Answered, "not answered until every field has a value")
	require.False(t, req.IsResolved())

	require.NoError(t, req.ProvideUserInput(map[string]any{"seats": 2}))
	require.True(t, *tool.Answered)
	require.True(t, req.IsResolved())
	require.Equal(t, "2026-02-01", tool.UserInputSchema[0].Value)
	require.Equal(t, 2, tool.UserInputSchema[1].Value)
	require.ErrorIs(t, req.ProvideUserInput(map[string]any{"seats": 3}), ErrResolutionNotNeeded)
}

func TestRequirementUserFeedback(t *testing.T) {
	t.Parallel()
	tool := &ToolExecution{
		ToolName: "ask",
		UserFeedbackSchema: []UserFeedbackQuestion{
			{Question: "Class?", Options: []UserFeedbackOption{{Label: "economy"}, {Label: "business"}}},
			{Question: "Meal?", Options: []UserFeedbackOption{{Label: "veg"}}},
		},
	}
	req := NewRequirement(tool, fixedTime)
	require.Equal(t, PauseUserFeedback, req.PauseType())
	require.True(t, req.NeedsUserFeedback())

	require.NoError(t, req.ProvideUserFeedback(map[string][]string{"Class?": {"business"}}))
	require.False(t, req.IsResolved())
	require.False(t, tool.UserFeedbackSchema[0].Options[0].Selected)
	require.True(t, tool.UserFeedbackSchema[0].Options[1].Selected)

	require.NoError(t, req.ProvideUserFeedback(map[string][]string{"Meal?": {}}))
	require.True(t, req.IsResolved(), "an empty selection still answers the question")
	require.True(t, *tool.Answered)
}

func TestRequirementExternalExecution(t *testing.T) {
	t.Parallel()
	tool := &ToolExecution{ToolName: "run_locally", ExternalExecutionRequired: true, RequiresUserInput: true}
	req := NewRequirement(tool, fixedTime)
	require.Equal(t, PauseExternalExecution, req.PauseType(), "external execution outranks user input")
	require.True(t, req.NeedsExternalExecution())

	require.NoError(t, req.SetExternalExecutionResult(""))
	require.False(t, req.NeedsExternalExecution(), "an empty result is a result")
	require.Equal(t, "", *tool.Result)
	require.ErrorIs(t, req.SetExternalExecutionResult("again"), ErrResolutionNotNeeded)
}

func TestRequirementWithoutTool(t *testing.T) {
	t.Parallel()
	req := &Requirement{ID: "r"}
	require.True(t, req.IsResolved())
	require.Equal(t, PauseConfirmation, req.PauseType())
	require.ErrorIs(t, req.Confirm(), ErrResolutionNotNeeded)
}

func TestRequirementJSON(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(fixtureRequirement())
	require.NoError(t, err)
	require.Contains(t, string(data), `"created_at":"2026-01-02T03:04:05.000006+00:00"`)
	require.NotContains(t, string(data), `"confirmation"`, "None is left out")

	var back Requirement
	require.NoError(t, json.Unmarshal(data, &back))
	require.True(t, back.CreatedAt.Equal(fixedTime))
	require.Equal(t, *fixtureRequirement(), back)

	whole := &Requirement{ID: "r", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	data, err = json.Marshal(whole)
	require.NoError(t, err)
	require.Contains(t, string(data), `"created_at":"2026-01-02T03:04:05+00:00"`)
}

// TestRequirementDecodeCarriesResolutionToTool mirrors Agno's from_dict: a
// resolution given at the requirement level must reach the tool.
func TestRequirementDecodeCarriesResolutionToTool(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		input string
		check func(t *testing.T, tool *ToolExecution)
	}{
		{
			name:  "bare confirmation",
			input: `{"id":"r","confirmation":false,"confirmation_note":"no","tool_execution":{"tool_name":"x","requires_confirmation":true}}`,
			check: func(t *testing.T, tool *ToolExecution) {
				require.False(t, *tool.Confirmed)
				require.Equal(t, "no", tool.ConfirmationNote)
			},
		},
		{
			name:  "nested confirmation stays authoritative",
			input: `{"id":"r","confirmation":false,"tool_execution":{"tool_name":"x","confirmed":true}}`,
			check: func(t *testing.T, tool *ToolExecution) { require.True(t, *tool.Confirmed) },
		},
		{
			name:  "external result",
			input: `{"id":"r","external_execution_result":"42","tool_execution":{"tool_name":"x","external_execution_required":true}}`,
			check: func(t *testing.T, tool *ToolExecution) { require.Equal(t, "42", *tool.Result) },
		},
		{
			name: "input values merged, answered once complete",
			input: `{"id":"r","user_input_schema":[{"name":"a","field_type":"str","description":null,"value":"1"}],` +
				`"tool_execution":{"tool_name":"x","requires_user_input":true,"user_input_schema":[{"name":"a","field_type":"str","description":null,"value":null}]}}`,
			check: func(t *testing.T, tool *ToolExecution) {
				require.Equal(t, "1", tool.UserInputSchema[0].Value)
				require.True(t, *tool.Answered)
			},
		},
		{
			name: "a stored pause with prefilled values is not answered",
			input: `{"id":"r","user_input_schema":[{"name":"a","field_type":"str","value":"1"}],` +
				`"tool_execution":{"tool_name":"x","requires_user_input":true,"user_input_schema":[{"name":"a","field_type":"str","value":"1"}]}}`,
			check: func(t *testing.T, tool *ToolExecution) { require.Nil(t, tool.Answered) },
		},
		{
			name: "feedback selections merged",
			input: `{"id":"r","user_feedback_schema":[{"question":"Q","selected_options":["b"]}],` +
				`"tool_execution":{"tool_name":"x","user_feedback_schema":[{"question":"Q","options":[{"label":"a"},{"label":"b"}],"selected_options":null}]}}`,
			check: func(t *testing.T, tool *ToolExecution) {
				require.Equal(t, []string{"b"}, tool.UserFeedbackSchema[0].SelectedOptions)
				require.True(t, tool.UserFeedbackSchema[0].Options[1].Selected)
				require.True(t, *tool.Answered)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var req Requirement
			require.NoError(t, json.Unmarshal([]byte(tc.input), &req))
			tc.check(t, req.ToolExecution)
		})
	}
}

func TestToolExecutionWritesNullForUnset(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(&ToolExecution{ToolName: "x", StopAfterToolCall: true, ToolCallError: new(false)})
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(data, &fields))
	require.Len(t, fields, 20, "every Agno key is written")
	require.Equal(t, "x", fields["tool_name"])
	require.Equal(t, false, fields["tool_call_error"], "a reported success is false, not null")
	require.Nil(t, fields["requires_confirmation"])
	require.Nil(t, fields["result"])
	require.NotContains(t, fields, "parent_tool_call_id", "top-level calls leave it out")

	var back ToolExecution
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, ToolExecution{ToolName: "x", StopAfterToolCall: true, ToolCallError: new(false)}, back)
}
