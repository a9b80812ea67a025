package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

type addressArgs struct {
	Street string `json:"street" jsonschema:"the street and number"`
	City   string `json:"city" jsonschema:"the city"`
	Zip    int    `json:"zip,omitempty"`
}

func TestWithFlagsChangesACopy(t *testing.T) {
	t.Parallel()
	calls := 0
	original := tool.MustNew(tool.Config{Name: "ship"}, func(ctx context.Context, args addressArgs) (string, error) {
		calls++
		return args.Street + ", " + args.City, nil
	})
	flagged, err := tool.WithFlags(original, tool.Flags{RequiresUserInput: new(true), UserInputFields: []string{"city", "zip"},
		StopAfterToolCall: new(true)})
	require.NoError(t, err)

	spec := flagged.Spec()
	require.True(t, spec.RequiresUserInput)
	require.True(t, spec.StopAfterToolCall)
	require.False(t, spec.RequiresConfirmation)
	require.Equal(t, []run.UserInputField{{Name: "city", FieldType: "str", Description: "the city"}, {Name: "zip", FieldType: "int"}},
		spec.UserInputSchema)
	require.Equal(t, original.Spec().Parameters, spec.Parameters)
	require.False(t, original.Spec().RequiresUserInput, "the original is unchanged")

	// The call pauses with the fields; resolved, it runs the original.
	set := mustSet(t, flagged)
	paused := tool.Execute(t.Context(), set, []run.ToolCall{call("c1", "ship", `{"street":"1 Rue de Rivoli"}`)}, tool.ExecuteOptions{})[0]
	require.True(t, paused.Paused())
	require.Equal(t, spec.UserInputSchema, paused.Execution.UserInputSchema)
	require.Zero(t, calls)
	done := tool.Execute(t.Context(), set, []run.ToolCall{call("c1", "ship", `{"street":"1 Rue de Rivoli","city":"Paris"}`)},
		tool.ExecuteOptions{Resolved: true})[0]
	require.NoError(t, done.Err)
	require.Equal(t, "1 Rue de Rivoli, Paris", *done.Execution.Result)
	require.True(t, done.Execution.StopAfterToolCall)

	// Validation still goes to the original: a confirmation is not asked
	// for a call bound to fail.
	confirm, err := tool.WithFlags(original, tool.Flags{RequiresConfirmation: new(true)})
	require.NoError(t, err)
	bad := tool.Execute(t.Context(), mustSet(t, confirm), []run.ToolCall{call("c2", "ship", `{"street":1}`)}, tool.ExecuteOptions{})[0]
	require.False(t, bad.Paused())
	var argErr *tool.ArgumentError
	require.ErrorAs(t, bad.Err, &argErr)

	// Turning a flag off works too, and drops the user-input schema.
	off, err := tool.WithFlags(flagged, tool.Flags{RequiresUserInput: new(false)})
	require.NoError(t, err)
	require.False(t, off.Spec().RequiresUserInput)
	require.Empty(t, off.Spec().UserInputSchema)
}

func TestWithFlagsRejectsUnknownUserInputField(t *testing.T) {
	t.Parallel()
	original := tool.MustNew(tool.Config{Name: "ship"}, func(ctx context.Context, args addressArgs) (string, error) { return "", nil })
	_, err := tool.WithFlags(original, tool.Flags{RequiresUserInput: new(true), UserInputFields: []string{"country"}})
	require.ErrorContains(t, err, `user input field "country" is not one of its arguments`)

	// Without names, every argument is asked for.
	all, err := tool.WithFlags(original, tool.Flags{RequiresUserInput: new(true)})
	require.NoError(t, err)
	require.Len(t, all.Spec().UserInputSchema, 3)
}

func TestGetUserInputAsksForTheModelsFields(t *testing.T) {
	t.Parallel()
	set := mustSet(t, tool.GetUserInput())
	args := `{"user_input_fields":[{"field_name":"destination","field_type":"str","field_description":"where to"},` +
		`{"field_name":"nights","field_type":"int","field_description":"how long"},{"field_name":"pets","field_type":"animal","field_description":"any?"}]}`
	paused := tool.Execute(t.Context(), set, []run.ToolCall{call("c1", tool.GetUserInputName, args)}, tool.ExecuteOptions{})[0]
	require.NoError(t, paused.Err)
	require.True(t, paused.Paused())
	require.True(t, paused.Execution.RequiresUserInput)
	require.Equal(t, []run.UserInputField{
		{Name: "destination", FieldType: "str", Description: "where to"},
		{Name: "nights", FieldType: "int", Description: "how long"},
		{Name: "pets", FieldType: "str", Description: "any?"},
	}, paused.Execution.UserInputSchema)

	// The answers, merged into the arguments, are the result.
	var merged map[string]any
	require.NoError(t, json.Unmarshal([]byte(args), &merged))
	merged["destination"], merged["nights"] = "Lisbon", 3
	answered, err := json.Marshal(merged)
	require.NoError(t, err)
	done := tool.Execute(t.Context(), set, []run.ToolCall{call("c1", tool.GetUserInputName, string(answered))}, tool.ExecuteOptions{Resolved: true})[0]
	require.NoError(t, done.Err)
	require.Equal(t, `User inputs retrieved: [{"name":"destination","value":"Lisbon"},{"name":"nights","value":3},{"name":"pets","value":null}]`,
		*done.Execution.Result)

	// A call that names no field fails at once: nobody is asked.
	empty := tool.Execute(t.Context(), set, []run.ToolCall{call("c2", tool.GetUserInputName, `{"user_input_fields":[]}`)}, tool.ExecuteOptions{})[0]
	require.False(t, empty.Paused())
	require.ErrorContains(t, empty.Err, "user_input_fields is empty")
}

func TestGetUserInputWithConfirmationFailsRatherThanPauses(t *testing.T) {
	t.Parallel()
	confirmed, err := tool.WithFlags(tool.GetUserInput(), tool.Flags{RequiresConfirmation: new(true)})
	require.NoError(t, err)
	out := tool.Execute(t.Context(), mustSet(t, confirmed), []run.ToolCall{call("c1", tool.GetUserInputName, `{"user_input_fields":[]}`)},
		tool.ExecuteOptions{})[0]
	require.Error(t, out.Err)
	require.False(t, out.Paused(), "a call whose fields cannot be read fails; nobody is asked to confirm it")
}
