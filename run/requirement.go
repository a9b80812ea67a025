package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// PauseType says what a paused run waits for on one [Requirement].
type PauseType string

// The pause types, from the most to the least specific.
const (
	PauseUserFeedback      PauseType = "user_feedback"
	PauseExternalExecution PauseType = "external_execution"
	PauseUserInput         PauseType = "user_input"
	PauseConfirmation      PauseType = "confirmation"
)

// ErrResolutionNotNeeded is returned when a requirement is resolved in a way it
// does not ask for, e.g. confirming a tool that needs no confirmation.
var ErrResolutionNotNeeded = errors.New("requirement does not need this resolution")

// Requirement is one thing a paused run needs before it can continue: a
// confirmation, user input, user feedback or an external tool result (Agno's
// run.requirement.RunRequirement). The resolving methods update the tool
// execution too, since continuing a run reads the tool.
type Requirement struct {
	ID string `json:"id,omitempty"`
	// CreatedAt is written as Python's isoformat (e.g. 2026-01-02T03:04:05.000006+00:00).
	CreatedAt time.Time `json:"created_at,omitzero"`

	// Confirmation is nil until the tool is confirmed (true) or rejected (false).
	Confirmation     *bool  `json:"confirmation,omitempty"`
	ConfirmationNote string `json:"confirmation_note,omitempty"`
	// ExternalExecutionResult is nil until the caller supplies the result; an
	// empty result is still a result.
	ExternalExecutionResult *string `json:"external_execution_result,omitempty"`

	// Member fields are set when the requirement comes from a team member's run.
	MemberAgentID   string `json:"member_agent_id,omitempty"`
	MemberAgentName string `json:"member_agent_name,omitempty"`
	MemberRunID     string `json:"member_run_id,omitempty"`

	ToolExecution      *ToolExecution         `json:"tool_execution,omitempty"`
	UserInputSchema    []UserInputField       `json:"user_input_schema,omitzero"`
	UserFeedbackSchema []UserFeedbackQuestion `json:"user_feedback_schema,omitzero"`
}

// requirementWire is the JSON form of a [Requirement]: created_at as text.
type requirementWire struct {
	ID                      string                 `json:"id,omitempty"`
	CreatedAt               string                 `json:"created_at,omitempty"`
	Confirmation            *bool                  `json:"confirmation,omitempty"`
	ConfirmationNote        string                 `json:"confirmation_note,omitempty"`
	ExternalExecutionResult *string                `json:"external_execution_result,omitempty"`
	MemberAgentID           string                 `json:"member_agent_id,omitempty"`
	MemberAgentName         string                 `json:"member_agent_name,omitempty"`
	MemberRunID             string                 `json:"member_run_id,omitempty"`
	ToolExecution           *ToolExecution         `json:"tool_execution,omitempty"`
	UserInputSchema         []UserInputField       `json:"user_input_schema,omitzero"`
	UserFeedbackSchema      []UserFeedbackQuestion `json:"user_feedback_schema,omitzero"`
}

// NewRequirement returns a requirement for tool with a fresh id, created at
// now, sharing the tool's input and feedback schemas.
func NewRequirement(tool *ToolExecution, now time.Time) *Requirement {
	req := &Requirement{ID: NewUUID(), ToolExecution: tool, CreatedAt: now.UTC()}
	if tool != nil {
		req.UserInputSchema = tool.UserInputSchema
		req.UserFeedbackSchema = tool.UserFeedbackSchema
	}
	return req
}

// NeedsConfirmation reports whether the tool still waits for a confirm or reject.
func (r *Requirement) NeedsConfirmation() bool {
	if r.Confirmation != nil || r.ToolExecution == nil || r.ToolExecution.Confirmed != nil {
		return false
	}
	return r.ToolExecution.RequiresConfirmation
}

// NeedsUserInput reports whether some user input field is still missing.
func (r *Requirement) NeedsUserInput() bool {
	tool := r.ToolExecution
	if tool == nil || isTrue(tool.Answered) {
		return false
	}
	if tool.RequiresUserInput {
		return true
	}
	for _, field := range r.UserInputSchema {
		if field.Value == nil {
			return true
		}
	}
	return false
}

// NeedsUserFeedback reports whether some feedback question is still unanswered.
func (r *Requirement) NeedsUserFeedback() bool {
	tool := r.ToolExecution
	if tool == nil || isTrue(tool.Answered) {
		return false
	}
	for _, question := range r.UserFeedbackSchema {
		if question.SelectedOptions == nil {
			return true
		}
	}
	return false
}

// NeedsExternalExecution reports whether the tool's result must still be supplied.
func (r *Requirement) NeedsExternalExecution() bool {
	if r.ToolExecution == nil || r.ExternalExecutionResult != nil {
		return false
	}
	return r.ToolExecution.ExternalExecutionRequired
}

// IsResolved reports whether nothing is left to provide.
func (r *Requirement) IsResolved() bool {
	return !r.NeedsConfirmation() && !r.NeedsUserInput() && !r.NeedsUserFeedback() && !r.NeedsExternalExecution()
}

// PauseType says what the requirement waits for, the most specific kind
// winning: feedback, then external execution, then input, then confirmation.
func (r *Requirement) PauseType() PauseType {
	tool := r.ToolExecution
	switch {
	case tool == nil:
		return PauseConfirmation
	case len(tool.UserFeedbackSchema) > 0:
		return PauseUserFeedback
	case tool.ExternalExecutionRequired:
		return PauseExternalExecution
	case tool.RequiresUserInput:
		return PauseUserInput
	}
	return PauseConfirmation
}

// Confirm approves the tool call.
func (r *Requirement) Confirm() error {
	if !r.NeedsConfirmation() {
		return fmt.Errorf("confirm requirement %s: %w", r.ID, ErrResolutionNotNeeded)
	}
	r.Confirmation = new(true)
	r.ToolExecution.Confirmed = new(true)
	return nil
}

// Reject refuses the tool call; note, if not empty, tells the model why.
func (r *Requirement) Reject(note string) error {
	if !r.NeedsConfirmation() {
		return fmt.Errorf("reject requirement %s: %w", r.ID, ErrResolutionNotNeeded)
	}
	r.Confirmation = new(false)
	r.ConfirmationNote = note
	r.ToolExecution.Confirmed = new(false)
	r.ToolExecution.ConfirmationNote = note
	return nil
}

// ProvideUserInput fills the input fields named in values, on the requirement
// and on the tool; the tool counts as answered once every field has a value.
func (r *Requirement) ProvideUserInput(values map[string]any) error {
	if !r.NeedsUserInput() {
		return fmt.Errorf("provide user input to requirement %s: %w", r.ID, ErrResolutionNotNeeded)
	}
	if len(r.UserInputSchema) == 0 {
		return nil
	}
	fillInputs(r.UserInputSchema, values)
	fillInputs(r.ToolExecution.UserInputSchema, values)
	for _, field := range r.UserInputSchema {
		if field.Value == nil {
			return nil
		}
	}
	r.ToolExecution.Answered = new(true)
	return nil
}

// ProvideUserFeedback records the option labels chosen per question text, on
// the requirement and on the tool; the tool counts as answered once every
// question has a selection.
func (r *Requirement) ProvideUserFeedback(selections map[string][]string) error {
	if !r.NeedsUserFeedback() {
		return fmt.Errorf("provide user feedback to requirement %s: %w", r.ID, ErrResolutionNotNeeded)
	}
	selectOptions(r.UserFeedbackSchema, selections)
	selectOptions(r.ToolExecution.UserFeedbackSchema, selections)
	for _, question := range r.UserFeedbackSchema {
		if question.SelectedOptions == nil {
			return nil
		}
	}
	r.ToolExecution.Answered = new(true)
	return nil
}

// SetExternalExecutionResult supplies the result of a tool the caller ran.
func (r *Requirement) SetExternalExecutionResult(result string) error {
	if !r.NeedsExternalExecution() {
		return fmt.Errorf("set external execution result of requirement %s: %w", r.ID, ErrResolutionNotNeeded)
	}
	r.ExternalExecutionResult = new(result)
	r.ToolExecution.Result = new(result)
	return nil
}

// PendingTools returns the tool calls of a run that wait for a person or an
// external executor: paused calls whose result is not yet in the run's
// messages, in call order. Continuing the run resolves them.
func PendingTools(out *Output) []*ToolExecution {
	answered := map[string]bool{}
	for _, msg := range out.Messages {
		if msg != nil && msg.Role == RoleTool {
			answered[msg.ToolCallID] = true
		}
	}
	var pending []*ToolExecution
	for _, t := range out.Tools {
		if t != nil && (t.Paused() || out.WaitsOnChild(t)) && !answered[t.ToolCallID] {
			pending = append(pending, t)
		}
	}
	return pending
}

// WaitsOnChild reports whether a tool call of the run waits on a child run
// that waits for a person (a team's delegation to a member paused for a
// confirmation): the call has no result yet and the run holds the child's
// requirements ([Requirement.MemberRunID] is the call's ChildRunID).
func (o *Output) WaitsOnChild(t *ToolExecution) bool {
	if t.ChildRunID == "" || t.Result != nil {
		return false
	}
	for _, r := range o.Requirements {
		if r != nil && r.MemberRunID == t.ChildRunID {
			return true
		}
	}
	return false
}

// ChildRequirements returns the requirements of the child run childRunID
// the run holds, in order.
func (o *Output) ChildRequirements(childRunID string) []*Requirement {
	var reqs []*Requirement
	for _, r := range o.Requirements {
		if r != nil && r.MemberRunID == childRunID && childRunID != "" {
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// WaitingCalls returns the tool calls a caller resolves to continue the
// run: its paused calls, and in place of a call that waits on a child run,
// the child's own paused calls, as its requirements carry them.
func WaitingCalls(out *Output) []*ToolExecution {
	var calls []*ToolExecution
	for _, t := range PendingTools(out) {
		if !out.WaitsOnChild(t) {
			calls = append(calls, t)
			continue
		}
		for _, r := range out.ChildRequirements(t.ChildRunID) {
			if r.ToolExecution != nil && r.ToolExecution.Paused() {
				calls = append(calls, r.ToolExecution)
			}
		}
	}
	return calls
}

// CheckResolutions reports what is wrong with the tool executions a caller
// sends to continue run out (the continue route's tools field): an entry
// that is null, has no tool_call_id, repeats one, or names a call the run
// never made; a user-input value for a field the call did not ask for, or
// whose type is not the field's. Entries for calls that do not wait — the
// rest of the run's tools, sent back as the run listed them — are not
// checked. Calls left unresolved are not reported here: a continuation
// that cuts them off needs no resolution, so that is for the runner to
// decide. The error wraps [ErrInvalidContinue] and names every problem,
// with what to send instead.
func CheckResolutions(out *Output, updates []*ToolExecution) error {
	pending := WaitingCalls(out)
	waiting := map[string]*ToolExecution{}
	for _, t := range pending {
		waiting[t.ToolCallID] = t
	}
	made := map[string]bool{}
	for _, t := range out.Tools {
		if t != nil {
			made[t.ToolCallID] = true
		}
	}
	for _, r := range out.Requirements {
		if r != nil && r.MemberRunID != "" && r.ToolExecution != nil {
			made[r.ToolExecution.ToolCallID] = true // a member's call
		}
	}
	first := map[string]int{}
	var problems []string
	for i, u := range updates {
		at := fmt.Sprintf("tools[%d]", i)
		switch {
		case u == nil:
			problems = append(problems, at+" is null: send the tool execution as the paused run lists it")
			continue
		case u.ToolCallID == "":
			problems = append(problems, at+" has no tool_call_id: send each tool execution with the tool_call_id the paused run gives it")
			continue
		}
		if j, seen := first[u.ToolCallID]; seen {
			problems = append(problems, fmt.Sprintf("%s repeats tool_call_id %s of tools[%d]: send each call once", at, u.ToolCallID, j))
			continue
		}
		first[u.ToolCallID] = i
		if !made[u.ToolCallID] {
			problems = append(problems, fmt.Sprintf("%s: run %s has no tool call %s; %s", at, out.RunID, u.ToolCallID, describeWaiting(pending)))
			continue
		}
		if t, ok := waiting[u.ToolCallID]; ok && t.RequiresUserInput {
			problems = append(problems, checkUserInput(fmt.Sprintf("%s (%s, %s)", at, t.ToolName, t.ToolCallID), t.UserInputSchema, u.UserInputSchema)...)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidContinue, strings.Join(problems, "; "))
}

// checkUserInput reports the given user-input values that do not fit the
// fields asked: an unknown field name, or a value of another type.
func checkUserInput(at string, asked, given []UserInputField) []string {
	byName := map[string]UserInputField{}
	names := make([]string, 0, len(asked))
	for _, field := range asked {
		byName[field.Name] = field
		names = append(names, field.Name)
	}
	var problems []string
	for _, field := range given {
		want, ok := byName[field.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: user_input_schema has a field %q the call does not ask for; it asks for %s", at, field.Name, strings.Join(names, ", ")))
		case field.Value != nil:
			if err := want.Check(field.Value); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", at, err))
			}
		}
	}
	return problems
}

// describeWaiting says which calls of a run wait, for an error message.
func describeWaiting(pending []*ToolExecution) string {
	if len(pending) == 0 {
		return "no tool call of the run waits for a resolution"
	}
	calls := make([]string, len(pending))
	for i, t := range pending {
		calls[i] = fmt.Sprintf("%s (%s)", t.ToolName, t.ToolCallID)
	}
	return "the calls that wait are " + strings.Join(calls, ", ")
}

func fillInputs(fields []UserInputField, values map[string]any) {
	for i := range fields {
		if value, ok := values[fields[i].Name]; ok {
			fields[i].Value = value
		}
	}
}

func selectOptions(questions []UserFeedbackQuestion, selections map[string][]string) {
	for i := range questions {
		chosen, ok := selections[questions[i].Question]
		if !ok {
			continue
		}
		questions[i].SelectedOptions = chosen
		for j := range questions[i].Options {
			option := &questions[i].Options[j]
			option.Selected = false
			for _, label := range chosen {
				if label == option.Label {
					option.Selected = true
				}
			}
		}
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// MarshalJSON writes created_at the way Python's isoformat does.
func (r Requirement) MarshalJSON() ([]byte, error) {
	wire := requirementWire{
		ID:                      r.ID,
		Confirmation:            r.Confirmation,
		ConfirmationNote:        r.ConfirmationNote,
		ExternalExecutionResult: r.ExternalExecutionResult,
		MemberAgentID:           r.MemberAgentID,
		MemberAgentName:         r.MemberAgentName,
		MemberRunID:             r.MemberRunID,
		ToolExecution:           r.ToolExecution,
		UserInputSchema:         r.UserInputSchema,
		UserFeedbackSchema:      r.UserFeedbackSchema,
	}
	if !r.CreatedAt.IsZero() {
		wire.CreatedAt = formatPythonISO(r.CreatedAt)
	}
	return marshalJSON(wire)
}

// UnmarshalJSON reads a stored requirement. Like Agno, a top-level resolution
// (confirmation, external result, filled-in schemas) is carried onto the tool
// execution when the tool does not already hold one, because continuing a run
// reads only the tool. An unreadable created_at is dropped, as Agno does.
func (r *Requirement) UnmarshalJSON(data []byte) error {
	var wire requirementWire
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*r = Requirement{
		ID:                      wire.ID,
		Confirmation:            wire.Confirmation,
		ConfirmationNote:        wire.ConfirmationNote,
		ExternalExecutionResult: wire.ExternalExecutionResult,
		MemberAgentID:           wire.MemberAgentID,
		MemberAgentName:         wire.MemberAgentName,
		MemberRunID:             wire.MemberRunID,
		ToolExecution:           wire.ToolExecution,
		UserInputSchema:         wire.UserInputSchema,
		UserFeedbackSchema:      wire.UserFeedbackSchema,
	}
	if wire.CreatedAt != "" {
		if parsed, err := parsePythonISO(wire.CreatedAt); err == nil {
			r.CreatedAt = parsed
		}
	}
	r.carryResolutionToTool()
	return nil
}

// carryResolutionToTool copies what was resolved on the requirement onto its
// tool, never overwriting a value the tool already has.
func (r *Requirement) carryResolutionToTool() {
	tool := r.ToolExecution
	if tool == nil {
		return
	}
	if r.Confirmation != nil && tool.Confirmed == nil {
		tool.Confirmed = new(*r.Confirmation)
		if !*r.Confirmation && r.ConfirmationNote != "" {
			tool.ConfirmationNote = r.ConfirmationNote
		}
	}
	if r.ExternalExecutionResult != nil && tool.Result == nil {
		tool.Result = new(*r.ExternalExecutionResult)
	}
	if len(r.UserInputSchema) > 0 {
		if tool.UserInputSchema == nil {
			tool.UserInputSchema = r.UserInputSchema
		} else if mergeInputs(tool.UserInputSchema, r.UserInputSchema) && tool.Answered == nil && allInputsFilled(tool.UserInputSchema) {
			tool.Answered = new(true)
		}
	}
	if len(r.UserFeedbackSchema) > 0 {
		if tool.UserFeedbackSchema == nil {
			tool.UserFeedbackSchema = r.UserFeedbackSchema
		} else if mergeSelections(tool.UserFeedbackSchema, r.UserFeedbackSchema) && tool.Answered == nil && allQuestionsAnswered(tool.UserFeedbackSchema) {
			tool.Answered = new(true)
		}
	}
}

// mergeInputs fills the tool's empty fields from the requirement's values and
// reports whether it filled any.
func mergeInputs(toolFields, reqFields []UserInputField) bool {
	values := map[string]any{}
	for _, field := range reqFields {
		if field.Value != nil {
			values[field.Name] = field.Value
		}
	}
	merged := false
	for i := range toolFields {
		if value, ok := values[toolFields[i].Name]; ok && toolFields[i].Value == nil {
			toolFields[i].Value = value
			merged = true
		}
	}
	return merged
}

// mergeSelections fills the tool's unanswered questions from the
// requirement's selections and reports whether it filled any.
func mergeSelections(toolQuestions, reqQuestions []UserFeedbackQuestion) bool {
	selections := map[string][]string{}
	for _, question := range reqQuestions {
		if question.SelectedOptions != nil {
			selections[question.Question] = question.SelectedOptions
		}
	}
	merged := false
	for i := range toolQuestions {
		if chosen, ok := selections[toolQuestions[i].Question]; ok && toolQuestions[i].SelectedOptions == nil {
			selectOptions(toolQuestions[i:i+1], map[string][]string{toolQuestions[i].Question: chosen})
			merged = true
		}
	}
	return merged
}

func allInputsFilled(fields []UserInputField) bool {
	for _, field := range fields {
		if field.Value == nil {
			return false
		}
	}
	return true
}

func allQuestionsAnswered(questions []UserFeedbackQuestion) bool {
	for _, question := range questions {
		if question.SelectedOptions == nil {
			return false
		}
	}
	return true
}
