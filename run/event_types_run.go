package run

import "cmp"

// contentTypeText is the content_type of plain-text content; structured output
// uses the output schema's name instead.
const contentTypeText = "str"

// RunStarted opens a run's stream.
type RunStarted struct {
	BaseEvent
	Model         string `json:"model"`
	ModelProvider string `json:"model_provider"`
}

// EventName returns [EventRunStarted].
func (RunStarted) EventName() string { return EventRunStarted }

// MarshalJSON writes the event with its name set.
func (e RunStarted) MarshalJSON() ([]byte, error) {
	type wire RunStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// RunContent is one delta of the run's answer.
type RunContent struct {
	BaseEvent
	// Content is the delta: text, or a structured value.
	Content any `json:"content,omitempty"`
	// WorkflowAgent marks content from a workflow's own agent.
	WorkflowAgent bool `json:"workflow_agent"`
	// ContentType is "str" (the default when empty) or the output schema's name.
	ContentType       string              `json:"content_type"`
	ReasoningContent  string              `json:"reasoning_content,omitempty"`
	ModelProviderData map[string]any      `json:"model_provider_data,omitzero"`
	Citations         *Citations          `json:"citations,omitempty"`
	ResponseAudio     *Audio              `json:"response_audio,omitempty"`
	Image             *Image              `json:"image,omitempty"`
	References        []MessageReferences `json:"references,omitzero"`
	AdditionalInput   []*Message          `json:"additional_input,omitzero"`
	ReasoningSteps    []ReasoningStepData `json:"reasoning_steps,omitzero"`
	ReasoningMessages []*Message          `json:"reasoning_messages,omitzero"`
}

// EventName returns [EventRunContent].
func (RunContent) EventName() string { return EventRunContent }

// MarshalJSON writes the event with its name and a default content type set.
func (e RunContent) MarshalJSON() ([]byte, error) {
	type wire RunContent
	index := e.stamp(e.EventName())
	e.ContentType = cmp.Or(e.ContentType, contentTypeText)
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// RunContentCompleted says the answer's content is complete.
type RunContentCompleted struct{ BaseEvent }

// EventName returns [EventRunContentCompleted].
func (RunContentCompleted) EventName() string { return EventRunContentCompleted }

// MarshalJSON writes the event with its name set.
func (e RunContentCompleted) MarshalJSON() ([]byte, error) {
	type wire RunContentCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// RunIntermediateContent is content produced before the final answer, e.g. by
// the main model when an output model writes the answer.
type RunIntermediateContent struct {
	BaseEvent
	Content any `json:"content,omitempty"`
	// ContentType is "str" (the default when empty) or the output schema's name.
	ContentType string `json:"content_type"`
}

// EventName returns [EventRunIntermediateContent].
func (RunIntermediateContent) EventName() string { return EventRunIntermediateContent }

// MarshalJSON writes the event with its name and a default content type set.
func (e RunIntermediateContent) MarshalJSON() ([]byte, error) {
	type wire RunIntermediateContent
	index := e.stamp(e.EventName())
	e.ContentType = cmp.Or(e.ContentType, contentTypeText)
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// RunCompleted closes a successful run with its full result.
type RunCompleted struct {
	BaseEvent
	Content any `json:"content,omitempty"`
	// ContentType is "str" (the default when empty) or the output schema's name.
	ContentType       string              `json:"content_type"`
	ReasoningContent  string              `json:"reasoning_content,omitempty"`
	Citations         *Citations          `json:"citations,omitempty"`
	ModelProviderData map[string]any      `json:"model_provider_data,omitzero"`
	Images            []Image             `json:"images,omitzero"`
	Videos            []Video             `json:"videos,omitzero"`
	Audio             []Audio             `json:"audio,omitzero"`
	Files             []File              `json:"files,omitzero"`
	ResponseAudio     *Audio              `json:"response_audio,omitempty"`
	References        []MessageReferences `json:"references,omitzero"`
	AdditionalInput   []*Message          `json:"additional_input,omitzero"`
	ReasoningSteps    []ReasoningStepData `json:"reasoning_steps,omitzero"`
	ReasoningMessages []*Message          `json:"reasoning_messages,omitzero"`
	Metadata          map[string]any      `json:"metadata,omitzero"`
	Metrics           *RunMetrics         `json:"metrics,omitempty"`
	SessionState      map[string]any      `json:"session_state,omitzero"`
	// StepResults and StepExecutorRuns are a workflow's (WorkflowCompleted).
	StepResults      []*StepOutput `json:"step_results,omitzero"`
	StepExecutorRuns []*Output     `json:"step_executor_runs,omitzero"`
}

// EventName returns [EventRunCompleted].
func (RunCompleted) EventName() string { return EventRunCompleted }

// MarshalJSON writes the event with its name and a default content type set.
func (e RunCompleted) MarshalJSON() ([]byte, error) {
	type wire RunCompleted
	index := e.stamp(e.EventName())
	e.ContentType = cmp.Or(e.ContentType, contentTypeText)
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// RunError ends a failed run. A streamed turn refused because the session is
// busy is a single RunError with ErrorType "session_busy".
type RunError struct {
	BaseEvent
	// Content is the error message.
	Content        string         `json:"content,omitempty"`
	ErrorType      string         `json:"error_type,omitempty"`
	ErrorID        string         `json:"error_id,omitempty"`
	AdditionalData map[string]any `json:"additional_data,omitzero"`
	// Error is the message again, under the key a workflow's WorkflowError
	// carries it; set from Content when the event is encoded as one.
	Error string `json:"error,omitempty"`
}

// EventName returns [EventRunError].
func (RunError) EventName() string { return EventRunError }

// MarshalJSON writes the event with its name set.
func (e RunError) MarshalJSON() ([]byte, error) {
	type wire RunError
	index := e.stamp(e.EventName())
	if e.Event == EventWorkflowError && e.Error == "" {
		e.Error = e.Content
	}
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// RunCancelled ends a cancelled run.
type RunCancelled struct {
	BaseEvent
	Reason string `json:"reason,omitempty"`
}

// EventName returns [EventRunCancelled].
func (RunCancelled) EventName() string { return EventRunCancelled }

// MarshalJSON writes the event with its name set.
func (e RunCancelled) MarshalJSON() ([]byte, error) {
	type wire RunCancelled
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// RunPaused ends a stream whose run waits for human input; Tools (in the base)
// lists the paused tools and Requirements what must be resolved.
type RunPaused struct {
	BaseEvent
	Requirements []*Requirement `json:"requirements,omitzero"`

	// A workflow's pause (WorkflowPaused): what it waits for, where, and
	// what its steps produced so far.
	Status           Status             `json:"status,omitempty"`
	PausedStepIndex  *int               `json:"paused_step_index,omitempty"`
	PausedStepName   string             `json:"paused_step_name,omitempty"`
	PauseKind        string             `json:"pause_kind,omitempty"`
	StepRequirements []*StepRequirement `json:"step_requirements,omitzero"`
	StepResults      []*StepOutput      `json:"step_results,omitzero"`
}

// EventName returns [EventRunPaused].
func (RunPaused) EventName() string { return EventRunPaused }

// MarshalJSON writes the event with its name set.
func (e RunPaused) MarshalJSON() ([]byte, error) {
	type wire RunPaused
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// RunContinued opens the stream of a run resumed by continue_run.
type RunContinued struct{ BaseEvent }

// EventName returns [EventRunContinued].
func (RunContinued) EventName() string { return EventRunContinued }

// MarshalJSON writes the event with its name set.
func (e RunContinued) MarshalJSON() ([]byte, error) {
	type wire RunContinued
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// PreHookStarted says a pre-hook (or input guardrail) started.
type PreHookStarted struct {
	BaseEvent
	PreHookName string `json:"pre_hook_name,omitempty"`
	RunInput    *Input `json:"run_input,omitempty"`
}

// EventName returns [EventPreHookStarted].
func (PreHookStarted) EventName() string { return EventPreHookStarted }

// MarshalJSON writes the event with its name set.
func (e PreHookStarted) MarshalJSON() ([]byte, error) {
	type wire PreHookStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// PreHookCompleted says a pre-hook finished.
type PreHookCompleted struct {
	BaseEvent
	PreHookName string `json:"pre_hook_name,omitempty"`
	RunInput    *Input `json:"run_input,omitempty"`
}

// EventName returns [EventPreHookCompleted].
func (PreHookCompleted) EventName() string { return EventPreHookCompleted }

// MarshalJSON writes the event with its name set.
func (e PreHookCompleted) MarshalJSON() ([]byte, error) {
	type wire PreHookCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// PostHookStarted says a post-hook (or output guardrail) started.
type PostHookStarted struct {
	BaseEvent
	PostHookName string `json:"post_hook_name,omitempty"`
	RunInput     *Input `json:"run_input,omitempty"`
}

// EventName returns [EventPostHookStarted].
func (PostHookStarted) EventName() string { return EventPostHookStarted }

// MarshalJSON writes the event with its name set.
func (e PostHookStarted) MarshalJSON() ([]byte, error) {
	type wire PostHookStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// PostHookCompleted says a post-hook finished.
type PostHookCompleted struct {
	BaseEvent
	PostHookName string `json:"post_hook_name,omitempty"`
	RunInput     *Input `json:"run_input,omitempty"`
}

// EventName returns [EventPostHookCompleted].
func (PostHookCompleted) EventName() string { return EventPostHookCompleted }

// MarshalJSON writes the event with its name set.
func (e PostHookCompleted) MarshalJSON() ([]byte, error) {
	type wire PostHookCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}
