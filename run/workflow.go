package run

import (
	"fmt"
	"slices"
	"strings"
)

// StepOutput is what one workflow step produced (Agno's StepOutput): its
// content, the run its agent or team made, and, for a composite step (a
// Loop, a Parallel, a Condition, a Router, Steps), the outputs of the steps
// it ran.
type StepOutput struct {
	Content      any    `json:"content"`
	StepName     string `json:"step_name,omitempty"`
	StepID       string `json:"step_id,omitempty"`
	StepType     string `json:"step_type,omitempty"`
	ExecutorType string `json:"executor_type,omitempty"`
	ExecutorName string `json:"executor_name,omitempty"`
	// StepRunID is the run the step's executor made.
	StepRunID string      `json:"step_run_id,omitempty"`
	Images    []Image     `json:"images,omitzero"`
	Videos    []Video     `json:"videos,omitzero"`
	Audio     []Audio     `json:"audio,omitzero"`
	Files     []File      `json:"files,omitzero"`
	Metrics   *RunMetrics `json:"metrics,omitempty"`
	Success   bool        `json:"success"`
	Error     string      `json:"error,omitempty"`
	// Stop ends the workflow after this step.
	Stop     bool `json:"stop"`
	IsPaused bool `json:"is_paused"`
	// Steps are a composite step's inner outputs.
	Steps []*StepOutput `json:"steps,omitzero"`
}

// ContentString renders Content as text: a string as is, anything else as
// JSON.
func (s *StepOutput) ContentString() string {
	if s == nil || s.Content == nil {
		return ""
	}
	return (&Output{Content: s.Content}).ContentString()
}

// StepRequirement is what a paused workflow waits for at one step (Agno's
// StepRequirement), and what a client sends back resolved in
// step_requirements: a confirmation (confirmed), user input (user_input),
// a route selection (selected_choices), an output review (confirmed, with
// rejection_feedback or edited_output), or the step's agent's or team's own
// requirements (executor_requirements).
type StepRequirement struct {
	StepID    string `json:"step_id"`
	StepName  string `json:"step_name,omitempty"`
	StepIndex any    `json:"step_index,omitempty"`
	StepType  string `json:"step_type,omitempty"`

	RequiresConfirmation bool   `json:"requires_confirmation"`
	ConfirmationMessage  string `json:"confirmation_message,omitempty"`
	Confirmed            *bool  `json:"confirmed"`
	OnReject             string `json:"on_reject,omitempty"`

	RequiresUserInput bool             `json:"requires_user_input"`
	UserInputMessage  string           `json:"user_input_message,omitempty"`
	UserInputSchema   []UserInputField `json:"user_input_schema,omitzero"`
	UserInput         map[string]any   `json:"user_input,omitzero"`

	RequiresRouteSelection  bool     `json:"requires_route_selection"`
	AvailableChoices        []string `json:"available_choices,omitzero"`
	AllowMultipleSelections bool     `json:"allow_multiple_selections"`
	SelectedChoices         []string `json:"selected_choices,omitzero"`

	RequiresExecutorInput bool           `json:"requires_executor_input,omitempty"`
	ExecutorRequirements  []*Requirement `json:"executor_requirements,omitzero"`
	ExecutorID            string         `json:"executor_id,omitempty"`
	ExecutorName          string         `json:"executor_name,omitempty"`
	ExecutorRunID         string         `json:"executor_run_id,omitempty"`
	ExecutorType          string         `json:"executor_type,omitempty"`
	ExecutorSessionID     string         `json:"executor_session_id,omitempty"`

	RequiresOutputReview bool        `json:"requires_output_review"`
	OutputReviewMessage  string      `json:"output_review_message,omitempty"`
	StepOutput           *StepOutput `json:"step_output,omitempty"`
	IsPostExecution      bool        `json:"is_post_execution"`
	RejectionFeedback    string      `json:"rejection_feedback,omitempty"`
	EditedOutput         any         `json:"edited_output,omitempty"`

	RetryCount int    `json:"retry_count"`
	MaxRetries *int   `json:"max_retries,omitempty"`
	TimeoutAt  string `json:"timeout_at,omitempty"`
	OnTimeout  string `json:"on_timeout,omitempty"`
}

// IsResolved reports whether the requirement has its answer.
func (s *StepRequirement) IsResolved() bool {
	switch {
	case (s.RequiresConfirmation || s.RequiresOutputReview) && s.Confirmed == nil:
		return false
	case s.RequiresUserInput && s.NeedsUserInput():
		return false
	case s.RequiresRouteSelection && len(s.SelectedChoices) == 0:
		return false
	case s.RequiresExecutorInput:
		for _, r := range s.ExecutorRequirements {
			if !r.IsResolved() {
				return false
			}
		}
	}
	return true
}

// NeedsUserInput reports whether user input the step asks for is missing:
// a required field of its schema without a value, or, with no schema, no
// input at all.
func (s *StepRequirement) NeedsUserInput() bool {
	if !s.RequiresUserInput {
		return false
	}
	if len(s.UserInputSchema) == 0 {
		return len(s.UserInput) == 0
	}
	for _, f := range s.UserInputSchema {
		if _, given := s.UserInput[f.Name]; f.IsRequired() && !given && f.Value == nil {
			return true
		}
	}
	return false
}

// CheckUserInput checks the user input given against the schema: required
// fields present, values of the field's type and among its allowed values.
// The error lists every problem.
func (s *StepRequirement) CheckUserInput() error {
	var problems []string
	for _, f := range s.UserInputSchema {
		value, given := s.UserInput[f.Name]
		if !given || value == nil {
			value, given = f.Value, f.Value != nil
		}
		if !given || value == "" {
			if f.IsRequired() {
				problems = append(problems, fmt.Sprintf("field %q is required", f.Name))
			}
			continue
		}
		if err := f.Check(value); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if len(f.AllowedValues) > 0 && !slices.ContainsFunc(f.AllowedValues, func(a any) bool { return fmt.Sprint(a) == fmt.Sprint(value) }) {
			problems = append(problems, fmt.Sprintf("field %q: %v is not one of %v", f.Name, value, f.AllowedValues))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("user input for step %s: %s", s.StepName, strings.Join(problems, "; "))
	}
	return nil
}

// WorkflowEvent is one of a workflow's step events — StepStarted,
// StepCompleted, StepPaused, StepContinued, StepExecutorPaused,
// StepExecutorContinued, StepOutputReview, StepError, the Loop*, Parallel*,
// Condition*, Router* and Steps* events and StepOutput (Agno's
// WorkflowRunEvent, besides the workflow's own run events, which are the run
// events of this package under their Workflow* names). Name is the event's
// name; each event sets the fields Agno's event of that name has.
type WorkflowEvent struct {
	BaseEvent
	// Name is the event's wire name, one of the Event* workflow constants.
	Name string `json:"-"`

	ContentType  string      `json:"content_type,omitempty"`
	StepResponse *StepOutput `json:"step_response,omitempty"`
	StepOutput   *StepOutput `json:"step_output,omitempty"`
	Error        string      `json:"error,omitempty"`

	// Step reviews.
	RequiresConfirmation *bool            `json:"requires_confirmation,omitempty"`
	ConfirmationMessage  string           `json:"confirmation_message,omitempty"`
	RequiresUserInput    *bool            `json:"requires_user_input,omitempty"`
	UserInputMessage     string           `json:"user_input_message,omitempty"`
	UserInputSchema      []UserInputField `json:"user_input_schema,omitzero"`
	RequiresOutputReview *bool            `json:"requires_output_review,omitempty"`
	OutputReviewMessage  string           `json:"output_review_message,omitempty"`

	// A step's agent or team paused for its own requirements.
	ExecutorID           string         `json:"executor_id,omitempty"`
	ExecutorName         string         `json:"executor_name,omitempty"`
	ExecutorRunID        string         `json:"executor_run_id,omitempty"`
	ExecutorType         string         `json:"executor_type,omitempty"`
	ExecutorRequirements []*Requirement `json:"executor_requirements,omitzero"`

	// Loops.
	Iteration        *int            `json:"iteration,omitempty"`
	MaxIterations    *int            `json:"max_iterations,omitempty"`
	ShouldContinue   *bool           `json:"should_continue,omitempty"`
	IterationResults []*StepOutput   `json:"iteration_results,omitempty"`
	TotalIterations  *int            `json:"total_iterations,omitempty"`
	AllResults       [][]*StepOutput `json:"all_results,omitempty"`

	// Parallel, Condition, Router, Steps.
	ParallelStepCount       *int          `json:"parallel_step_count,omitempty"`
	ConditionResult         *bool         `json:"condition_result,omitempty"`
	Branch                  string        `json:"branch,omitempty"`
	SelectedSteps           []string      `json:"selected_steps,omitempty"`
	AvailableChoices        []string      `json:"available_choices,omitempty"`
	AllowMultipleSelections *bool         `json:"allow_multiple_selections,omitempty"`
	StepsCount              *int          `json:"steps_count,omitempty"`
	ExecutedSteps           *int          `json:"executed_steps,omitempty"`
	StepResults             []*StepOutput `json:"step_results,omitempty"`
}

// EventName returns the event's Name.
func (e WorkflowEvent) EventName() string { return e.Name }

// MarshalJSON writes the event with its name set.
func (e WorkflowEvent) MarshalJSON() ([]byte, error) {
	type wire WorkflowEvent
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}
