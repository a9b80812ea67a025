package run

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// ToolExecution is one tool call and its outcome (Agno's
// models.response.ToolExecution). Runs, events and requirements hold it by
// pointer so that resolving a requirement updates the run's tool in place, as
// in Agno where both refer to one object.
//
// Agno writes every key of a tool execution, unset ones as null. Here empty
// strings and false flags are written as null, so plain Go values give the
// same JSON; the fields whose null and zero differ in meaning (Result,
// ToolCallError, Confirmed, Answered) are pointers.
type ToolExecution struct {
	ToolCallID string         `json:"tool_call_id"`
	ToolName   string         `json:"tool_name"`
	ToolArgs   map[string]any `json:"tool_args"`
	// ToolCallError is false after a successful call, true after a failed one.
	ToolCallError *bool `json:"tool_call_error"`
	// Result is the tool's output; nil until the tool ran (or, for an external
	// tool, until its result was supplied).
	Result  *string          `json:"result"`
	Metrics *ToolCallMetrics `json:"metrics"`
	// ChildRunID is the run a tool started, when it ran an agent, team or workflow.
	ChildRunID string `json:"child_run_id"`
	// StopAfterToolCall ends the model loop after this call.
	StopAfterToolCall bool  `json:"stop_after_tool_call"`
	CreatedAt         int64 `json:"created_at"`

	// Human-in-the-loop flags.
	RequiresConfirmation bool                   `json:"requires_confirmation"`
	Confirmed            *bool                  `json:"confirmed"`
	ConfirmationNote     string                 `json:"confirmation_note"`
	RequiresUserInput    bool                   `json:"requires_user_input"`
	UserInputSchema      []UserInputField       `json:"user_input_schema"`
	UserFeedbackSchema   []UserFeedbackQuestion `json:"user_feedback_schema"`
	Answered             *bool                  `json:"answered"`
	// ExternalExecutionRequired pauses the run until the caller supplies the result.
	ExternalExecutionRequired bool `json:"external_execution_required"`
	// ExternalExecutionSilent suppresses the verbose paused messages.
	ExternalExecutionSilent bool `json:"external_execution_silent"`
	// ApprovalType is "required" (blocking) or "audit" (record only).
	ApprovalType string `json:"approval_type"`
	ApprovalID   string `json:"approval_id"`

	// ParentToolCallID is agnogo's addition: for a tool called inside a
	// subagent, the id of the tool call that spawned the subagent. Left out for
	// top-level calls.
	ParentToolCallID string `json:"parent_tool_call_id,omitempty"`
}

// Paused reports whether the tool waits for a human or an external executor.
func (t *ToolExecution) Paused() bool {
	return t.RequiresConfirmation || t.RequiresUserInput || t.ExternalExecutionRequired
}

// ResultText is the call's result, "" while it has none.
func (t *ToolExecution) ResultText() string {
	if t.Result == nil {
		return ""
	}
	return *t.Result
}

// RejectionText is what the model reads of a call a person rejected: it
// says so, with the person's confirmation note when there is one.
func (t *ToolExecution) RejectionText() string {
	text := fmt.Sprintf("The user rejected the call to %s.", t.ToolName)
	if note := strings.TrimSpace(t.ConfirmationNote); note != "" {
		text += " Note: " + note
	}
	return text
}

// PrefillUserInput gives the user-input fields of a call waiting for user
// input the values its arguments already hold, as Agno does: the person
// sees them and supplies only the others (or overrides them).
func (t *ToolExecution) PrefillUserInput() {
	if !t.RequiresUserInput {
		return
	}
	for i := range t.UserInputSchema {
		if value, ok := t.ToolArgs[t.UserInputSchema[i].Name]; ok && value != nil {
			t.UserInputSchema[i].Value = value
		}
	}
}

// toolExecutionWire is the JSON form of a [ToolExecution], with null for
// every unset value.
type toolExecutionWire struct {
	ToolCallID                *string                `json:"tool_call_id"`
	ToolName                  *string                `json:"tool_name"`
	ToolArgs                  map[string]any         `json:"tool_args"`
	ToolCallError             *bool                  `json:"tool_call_error"`
	Result                    *string                `json:"result"`
	Metrics                   *ToolCallMetrics       `json:"metrics"`
	ChildRunID                *string                `json:"child_run_id"`
	StopAfterToolCall         bool                   `json:"stop_after_tool_call"`
	CreatedAt                 int64                  `json:"created_at"`
	RequiresConfirmation      *bool                  `json:"requires_confirmation"`
	Confirmed                 *bool                  `json:"confirmed"`
	ConfirmationNote          *string                `json:"confirmation_note"`
	RequiresUserInput         *bool                  `json:"requires_user_input"`
	UserInputSchema           []UserInputField       `json:"user_input_schema"`
	UserFeedbackSchema        []UserFeedbackQuestion `json:"user_feedback_schema"`
	Answered                  *bool                  `json:"answered"`
	ExternalExecutionRequired *bool                  `json:"external_execution_required"`
	ExternalExecutionSilent   *bool                  `json:"external_execution_silent"`
	ApprovalType              *string                `json:"approval_type"`
	ApprovalID                *string                `json:"approval_id"`
	ParentToolCallID          string                 `json:"parent_tool_call_id,omitempty"`
}

// MarshalJSON writes every key, unset ones as null, as Agno's asdict does.
func (t ToolExecution) MarshalJSON() ([]byte, error) {
	return marshalJSON(toolExecutionWire{
		ToolCallID:                nullString(t.ToolCallID),
		ToolName:                  nullString(t.ToolName),
		ToolArgs:                  t.ToolArgs,
		ToolCallError:             t.ToolCallError,
		Result:                    t.Result,
		Metrics:                   t.Metrics,
		ChildRunID:                nullString(t.ChildRunID),
		StopAfterToolCall:         t.StopAfterToolCall,
		CreatedAt:                 t.CreatedAt,
		RequiresConfirmation:      nullFalse(t.RequiresConfirmation),
		Confirmed:                 t.Confirmed,
		ConfirmationNote:          nullString(t.ConfirmationNote),
		RequiresUserInput:         nullFalse(t.RequiresUserInput),
		UserInputSchema:           t.UserInputSchema,
		UserFeedbackSchema:        t.UserFeedbackSchema,
		Answered:                  t.Answered,
		ExternalExecutionRequired: nullFalse(t.ExternalExecutionRequired),
		ExternalExecutionSilent:   nullFalse(t.ExternalExecutionSilent),
		ApprovalType:              nullString(t.ApprovalType),
		ApprovalID:                nullString(t.ApprovalID),
		ParentToolCallID:          t.ParentToolCallID,
	})
}

// UnmarshalJSON reads the form MarshalJSON writes; null reads as the zero value.
func (t *ToolExecution) UnmarshalJSON(data []byte) error {
	var wire toolExecutionWire
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*t = ToolExecution{
		ToolCallID:                deref(wire.ToolCallID),
		ToolName:                  deref(wire.ToolName),
		ToolArgs:                  wire.ToolArgs,
		ToolCallError:             wire.ToolCallError,
		Result:                    wire.Result,
		Metrics:                   wire.Metrics,
		ChildRunID:                deref(wire.ChildRunID),
		StopAfterToolCall:         wire.StopAfterToolCall,
		CreatedAt:                 wire.CreatedAt,
		RequiresConfirmation:      deref(wire.RequiresConfirmation),
		Confirmed:                 wire.Confirmed,
		ConfirmationNote:          deref(wire.ConfirmationNote),
		RequiresUserInput:         deref(wire.RequiresUserInput),
		UserInputSchema:           wire.UserInputSchema,
		UserFeedbackSchema:        wire.UserFeedbackSchema,
		Answered:                  wire.Answered,
		ExternalExecutionRequired: deref(wire.ExternalExecutionRequired),
		ExternalExecutionSilent:   deref(wire.ExternalExecutionSilent),
		ApprovalType:              deref(wire.ApprovalType),
		ApprovalID:                deref(wire.ApprovalID),
		ParentToolCallID:          wire.ParentToolCallID,
	}
	return nil
}

// UserInputField is one value a paused tool asks the user for.
type UserInputField struct {
	Name string `json:"name"`
	// FieldType is the Python type name: "str", "int", "float", "bool", "list"
	// or "dict".
	FieldType   string `json:"field_type"`
	Description string `json:"description"`
	// Value is nil until the user provides it.
	Value any `json:"value"`
	// Required and AllowedValues are a workflow step's (a tool's fields are
	// all required): nil Required is true.
	Required      *bool `json:"required,omitempty"`
	AllowedValues []any `json:"allowed_values,omitzero"`
}

// IsRequired reports whether the field must have a value (the default).
func (f UserInputField) IsRequired() bool { return f.Required == nil || *f.Required }

// Check reports whether value fits the field's type: a string for "str", a
// whole number for "int", a number for "float", true or false for "bool", a
// list for "list" and an object for "dict", as JSON decodes them. A field of
// any other type takes any value; nil is no value, and fits none.
func (f UserInputField) Check(value any) error {
	if value == nil {
		return fmt.Errorf("user input field %s (%s) has no value", f.Name, f.FieldType)
	}
	fits := true
	switch f.FieldType {
	case "str":
		_, fits = value.(string)
	case "int":
		fits = isWholeNumber(value)
	case "float":
		fits = isNumber(value)
	case "bool":
		_, fits = value.(bool)
	case "list":
		_, fits = value.([]any)
	case "dict":
		_, fits = value.(map[string]any)
	}
	if !fits {
		return fmt.Errorf("user input field %s is %s, and %s is not one: send %s", f.Name, f.FieldType, describeJSON(value), fieldTypeWant[f.FieldType])
	}
	return nil
}

// fieldTypeWant says, per field type, what value [UserInputField.Check] wants.
var fieldTypeWant = map[string]string{
	"str":   "a string",
	"int":   "a whole number",
	"float": "a number",
	"bool":  "true or false",
	"list":  "a JSON array",
	"dict":  "a JSON object",
}

// isNumber reports whether value is a number as JSON decodes one (or a Go
// caller passes one).
func isNumber(value any) bool {
	switch value.(type) {
	case float64, float32, int, int32, int64, json.Number:
		return true
	}
	return false
}

// isWholeNumber reports whether value is a number without a fraction.
func isWholeNumber(value any) bool {
	switch v := value.(type) {
	case float64:
		return v == math.Trunc(v) && !math.IsInf(v, 0)
	case float32:
		return float64(v) == math.Trunc(float64(v)) && !math.IsInf(float64(v), 0)
	case int, int32, int64:
		return true
	case json.Number:
		_, err := v.Int64()
		return err == nil
	}
	return false
}

// describeJSON names the JSON type of a decoded value, with the value when
// it is short, for error messages.
func describeJSON(value any) string {
	switch v := value.(type) {
	case string:
		if len(v) <= 40 {
			return fmt.Sprintf("the string %q", v)
		}
		return "a string"
	case bool:
		return fmt.Sprintf("the boolean %t", v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if isNumber(value) {
		return fmt.Sprintf("the number %v", value)
	}
	return fmt.Sprintf("a %T", value)
}

// userInputFieldWire is the JSON form of a [UserInputField], in Agno's key order.
type userInputFieldWire struct {
	Name        string  `json:"name"`
	FieldType   string  `json:"field_type"`
	Description *string `json:"description"`
	Value       any     `json:"value"`
}

// MarshalJSON writes every key, an empty description as null, as Agno does.
func (f UserInputField) MarshalJSON() ([]byte, error) {
	return marshalJSON(userInputFieldWire{Name: f.Name, FieldType: f.FieldType, Description: nullString(f.Description), Value: f.Value})
}

// UnmarshalJSON reads a null description as empty.
func (f *UserInputField) UnmarshalJSON(data []byte) error {
	var wire userInputFieldWire
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*f = UserInputField{Name: wire.Name, FieldType: wire.FieldType, Description: deref(wire.Description), Value: wire.Value}
	return nil
}

// UserFeedbackQuestion is a multiple-choice question a paused tool asks.
type UserFeedbackQuestion struct {
	Question    string `json:"question"`
	Header      string `json:"header"`
	MultiSelect bool   `json:"multi_select"`
	// SelectedOptions holds the labels chosen; nil until answered.
	SelectedOptions []string             `json:"selected_options"`
	Options         []UserFeedbackOption `json:"options,omitzero"`
}

// userFeedbackQuestionWire is the JSON form of a [UserFeedbackQuestion], in
// Agno's key order; options are left out when nil.
type userFeedbackQuestionWire struct {
	Question        string               `json:"question"`
	Header          *string              `json:"header"`
	MultiSelect     bool                 `json:"multi_select"`
	SelectedOptions []string             `json:"selected_options"`
	Options         []UserFeedbackOption `json:"options,omitzero"`
}

// MarshalJSON writes an empty header as null, as Agno does.
func (q UserFeedbackQuestion) MarshalJSON() ([]byte, error) {
	return marshalJSON(userFeedbackQuestionWire{
		Question: q.Question, Header: nullString(q.Header), MultiSelect: q.MultiSelect,
		SelectedOptions: q.SelectedOptions, Options: q.Options,
	})
}

// UnmarshalJSON reads a null header as empty.
func (q *UserFeedbackQuestion) UnmarshalJSON(data []byte) error {
	var wire userFeedbackQuestionWire
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*q = UserFeedbackQuestion{
		Question: wire.Question, Header: deref(wire.Header), MultiSelect: wire.MultiSelect,
		SelectedOptions: wire.SelectedOptions, Options: wire.Options,
	}
	return nil
}

// UserFeedbackOption is one choice of a [UserFeedbackQuestion].
type UserFeedbackOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Selected    bool   `json:"selected"`
}

// userFeedbackOptionWire is the JSON form of a [UserFeedbackOption].
type userFeedbackOptionWire struct {
	Label       string  `json:"label"`
	Description *string `json:"description"`
	Selected    bool    `json:"selected"`
}

// MarshalJSON writes an empty description as null, as Agno does.
func (o UserFeedbackOption) MarshalJSON() ([]byte, error) {
	return marshalJSON(userFeedbackOptionWire{Label: o.Label, Description: nullString(o.Description), Selected: o.Selected})
}

// UnmarshalJSON reads a null description as empty.
func (o *UserFeedbackOption) UnmarshalJSON(data []byte) error {
	var wire userFeedbackOptionWire
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*o = UserFeedbackOption{Label: wire.Label, Description: deref(wire.Description), Selected: wire.Selected}
	return nil
}

// nullString maps "" to nil, which encodes as null.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nullFalse maps false to nil, which encodes as null.
func nullFalse(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
