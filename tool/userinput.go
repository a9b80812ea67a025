package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agnogo/agnogo/run"
)

// UserInputAsker is an optional ability of a [Tool] that requires user
// input: deciding from each call's arguments which fields a person is asked
// for, instead of [Spec.UserInputSchema]. [Execute] puts the fields on the
// paused call's user_input_schema; an error fails the call, and the model
// reads it.
type UserInputAsker interface {
	// UserInputFields returns the fields to ask for, given the call's
	// arguments (a JSON object).
	UserInputFields(args json.RawMessage) ([]run.UserInputField, error)
}

// GetUserInputName is the name of the tool [GetUserInput] returns, Agno's.
const GetUserInputName = "get_user_input"

// GetUserInputInstructions tell the model when to use [GetUserInput]; add
// them to the agent's instructions alongside the tool.
const GetUserInputInstructions = "When a task needs information you do not have, do not guess it and do not ask for it in " +
	"your answer: call get_user_input with one entry per missing field (field_name, field_type — str, int, float, bool, " +
	"list or dict — and field_description), and only the fields you lack. The user answers each field once: take the " +
	"values you receive, treat an empty boolean as false, and carry on with the task without asking again."

// userInputFieldTypes are the field types get_user_input accepts, Python's
// names as Agno uses them.
var userInputFieldTypes = []string{"str", "int", "float", "bool", "list", "dict"}

// getUserInputParameters is get_user_input's parameters schema. Further
// properties are allowed: the person's answers are merged into the
// arguments under the fields' names before the call runs.
var getUserInputParameters = json.RawMessage(`{"type":"object","properties":{"user_input_fields":{"type":"array",` +
	`"description":"the fields the user must fill in, as in a form","items":{"type":"object","properties":{` +
	`"field_name":{"type":"string","description":"the field's name"},` +
	`"field_type":{"type":"string","description":"the field's type: str, int, float, bool, list or dict"},` +
	`"field_description":{"type":"string","description":"what the user should enter"}},` +
	`"required":["field_name","field_type","field_description"]}}},"required":["user_input_fields"]}`)

// GetUserInput returns Agno's get_user_input tool (UserControlFlowTools):
// the model names the fields it needs, the run pauses with those fields as
// the call's user_input_schema, and once a person filled them in (a
// continue with the values) the model reads them as the call's result:
// "User inputs retrieved: [{"name": …, "value": …}]".
func GetUserInput() Tool {
	t, err := Func(Config{
		Name: GetUserInputName,
		Description: "Ask the user to fill in the fields you need, as in a form. Give every field a name, a type " +
			"(str, int, float, bool, list or dict) and a description. The run waits for the user's answers, which " +
			"come back as this call's result.",
		RequiresUserInput: true,
	}, getUserInputParameters, answerUserInput)
	if err != nil {
		panic(err) // the schema is fixed in code
	}
	return &userInputTool{Tool: t}
}

// userInputTool is get_user_input: its fields come from each call.
type userInputTool struct{ Tool }

// ValidateArgs implements [Validator].
func (t *userInputTool) ValidateArgs(args json.RawMessage) error {
	return t.Tool.(Validator).ValidateArgs(args)
}

// requestedField is one entry of get_user_input's user_input_fields.
type requestedField struct {
	Name        string `json:"field_name"`
	Type        string `json:"field_type"`
	Description string `json:"field_description"`
}

// UserInputFields implements [UserInputAsker]: the fields the model asked
// for. An unknown type is read as str, as Agno does.
func (t *userInputTool) UserInputFields(args json.RawMessage) ([]run.UserInputField, error) {
	requested, err := requestedFields(args)
	if err != nil {
		return nil, err
	}
	fields := make([]run.UserInputField, 0, len(requested))
	for _, r := range requested {
		fieldType := r.Type
		if !slices.Contains(userInputFieldTypes, fieldType) {
			fieldType = "str"
		}
		fields = append(fields, run.UserInputField{Name: r.Name, FieldType: fieldType, Description: r.Description})
	}
	return fields, nil
}

// requestedFields reads and checks get_user_input's arguments.
func requestedFields(args json.RawMessage) ([]requestedField, error) {
	var parsed struct {
		Fields []requestedField `json:"user_input_fields"`
	}
	if err := json.Unmarshal(normalizeArgs(args), &parsed); err != nil {
		return nil, &ArgumentError{Tool: GetUserInputName, Reason: "user_input_fields must be a list of {field_name, field_type, field_description}", Err: err}
	}
	if len(parsed.Fields) == 0 {
		return nil, &ArgumentError{Tool: GetUserInputName, Reason: "user_input_fields is empty: name at least one field to ask for"}
	}
	for _, f := range parsed.Fields {
		if strings.TrimSpace(f.Name) == "" {
			return nil, &ArgumentError{Tool: GetUserInputName, Reason: "every user input field needs a field_name"}
		}
	}
	return parsed.Fields, nil
}

// answerUserInput is get_user_input's result once the person answered: the
// values, merged into the arguments under the fields' names.
func answerUserInput(_ context.Context, args json.RawMessage) (string, error) {
	requested, err := requestedFields(args)
	if err != nil {
		return "", err
	}
	var values map[string]any
	if err := json.Unmarshal(args, &values); err != nil {
		return "", fmt.Errorf("get_user_input: %w", err)
	}
	type answer struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
	}
	answers := make([]answer, len(requested))
	for i, r := range requested {
		answers[i] = answer{Name: r.Name, Value: values[r.Name]}
	}
	encoded, err := json.Marshal(answers)
	if err != nil {
		return "", fmt.Errorf("get_user_input: %w", err)
	}
	return "User inputs retrieved: " + string(encoded), nil
}
