package run

import (
	"encoding/json"
	"fmt"
)

// Output is one run as AgentOS stores and returns it (Agno's RunOutput): who
// ran it, what it was given, what it produced, the transcript and tool calls
// behind that, its metrics and status, and where it came from when it was
// forked or regenerated. Storage persists it as one row.
//
// Messages, tools and requirements are held by pointer: a requirement and the
// run's tool list refer to the same [ToolExecution], so resolving one updates
// the other.
type Output struct {
	// Identity.
	RunID       string `json:"run_id,omitempty"`
	AgentID     string `json:"agent_id,omitempty"`
	AgentName   string `json:"agent_name,omitempty"`
	TeamID      string `json:"team_id,omitempty"`
	TeamName    string `json:"team_name,omitempty"`
	WorkflowID  string `json:"workflow_id,omitempty"`
	SessionID   string `json:"session_id,omitempty"`
	ParentRunID string `json:"parent_run_id,omitempty"`
	UserID      string `json:"user_id,omitempty"`
	// WorkflowStepID points at the workflow step output this run belongs to.
	WorkflowStepID string `json:"workflow_step_id,omitempty"`
	// WorkflowName names a workflow's run's workflow.
	WorkflowName string `json:"workflow_name,omitempty"`

	// Input.
	Input *Input `json:"input,omitempty"`
	// AdditionalInput are extra messages (e.g. few-shot examples) added to the run.
	AdditionalInput []*Message `json:"additional_input,omitzero"`

	// Output.
	// Content is the answer: a string, or structured output decoded as JSON.
	Content any `json:"content,omitempty"`
	// ContentType is "str", or the output schema's name for structured output.
	ContentType       string              `json:"content_type,omitempty"`
	ReasoningContent  string              `json:"reasoning_content,omitempty"`
	ReasoningSteps    []ReasoningStepData `json:"reasoning_steps,omitzero"`
	ReasoningMessages []*Message          `json:"reasoning_messages,omitzero"`
	ModelProviderData map[string]any      `json:"model_provider_data,omitzero"`
	Citations         *Citations          `json:"citations,omitempty"`
	References        []MessageReferences `json:"references,omitzero"`
	Followups         []string            `json:"followups,omitzero"`
	Images            []Image             `json:"images,omitzero"`
	Videos            []Video             `json:"videos,omitzero"`
	Audio             []Audio             `json:"audio,omitzero"`
	Files             []File              `json:"files,omitzero"`
	ResponseAudio     *Audio              `json:"response_audio,omitempty"`

	// Model.
	Model         string           `json:"model,omitempty"`
	ModelProvider string           `json:"model_provider,omitempty"`
	Messages      []*Message       `json:"messages,omitzero"`
	Tools         []*ToolExecution `json:"tools,omitzero"`
	Metrics       *RunMetrics      `json:"metrics,omitempty"`

	// State.
	Status Status `json:"status,omitempty"`
	// TraceID is the id of the run's trace (32 lowercase hex digits) when
	// tracing is on: GET /traces/{trace_id} shows its spans.
	TraceID string `json:"trace_id,omitempty"`
	// Metadata holds free-form run metadata, including agnogo's attempt history
	// ([Output.Attempts]), warnings ([Output.Warnings]) and, when tracing is
	// on, the traceparent of the run's span.
	Metadata     map[string]any `json:"metadata,omitempty"`
	SessionState map[string]any `json:"session_state,omitzero"`
	// CreatedAt is in epoch seconds.
	CreatedAt int64 `json:"created_at,omitempty"`
	// Requirements are what a paused run waits for, in order of arrival.
	Requirements []*Requirement `json:"requirements,omitzero"`

	// MemberResponses are a team run's member runs, kept on it when the
	// team's store_member_responses is on (each is also a row of its own).
	MemberResponses []*Output `json:"member_responses,omitzero"`

	// StepResults are a workflow run's step outputs, one per top-level
	// step executed, in order (Agno's WorkflowRunOutput.step_results).
	StepResults []*StepOutput `json:"step_results,omitzero"`
	// StepExecutorRuns are the runs a workflow's steps started (agents,
	// teams, nested workflows), each also a row of its own.
	StepExecutorRuns []*Output `json:"step_executor_runs,omitzero"`
	// StepRequirements are what a paused workflow waits for.
	StepRequirements []*StepRequirement `json:"step_requirements,omitzero"`
	// PausedStepIndex and PausedStepName name the top-level step a paused
	// workflow waits at; PauseKind is "step" (a step's own review) or
	// "executor" (a tool of the step's agent or team).
	PausedStepIndex *int   `json:"paused_step_index,omitempty"`
	PausedStepName  string `json:"paused_step_name,omitempty"`
	PauseKind       string `json:"pause_kind,omitempty"`
	// WorkflowProgress keeps, while a workflow waits inside a composite
	// step (a Loop, a Condition, a Router, Steps), the outputs of the steps
	// it completed there, by execution path, so continuing does not run
	// them again.
	WorkflowProgress map[string]*StepOutput `json:"workflow_progress,omitzero"`

	// Events are the run's events, kept only when store_events is on.
	Events EventList `json:"events,omitzero"`

	// Durability.
	// QueueAttempt is the fencing stamp of the durable-queue attempt that wrote
	// this row; a terminal write from an older attempt is refused.
	QueueAttempt int `json:"queue_attempt,omitempty"`
	// LastCheckpointAtMessageIndex is the message index of the latest
	// checkpoint write (checkpoint level "tool-batch").
	LastCheckpointAtMessageIndex *int `json:"last_checkpoint_at_message_index,omitempty"`

	// Lineage.
	ForkedFromRunID        string `json:"forked_from_run_id,omitempty"`
	ForkedFromMessageIndex *int   `json:"forked_from_message_index,omitempty"`
	ForkedFromSessionID    string `json:"forked_from_session_id,omitempty"`
	// RegeneratedFrom is the run this one regenerated (its immediate predecessor).
	RegeneratedFrom string `json:"regenerated_from,omitempty"`
}

// RunnerID is the id of the agent, team or workflow that ran the run.
func (o *Output) RunnerID() string {
	switch {
	case o.AgentID != "":
		return o.AgentID
	case o.TeamID != "":
		return o.TeamID
	}
	return o.WorkflowID
}

// IDKey is the key that names a runner of kind on runs, events and log
// lines: agent_id, team_id or workflow_id.
func IDKey(kind Kind) string {
	switch kind {
	case KindTeam:
		return "team_id"
	case KindWorkflow:
		return "workflow_id"
	}
	return "agent_id"
}

// SetRunner stamps the runner an event is of, as [Output.SetRunner] does a
// run: a team's own event then goes by its Team* name.
func (b *BaseEvent) SetRunner(kind Kind, id, name string) {
	switch kind {
	case KindTeam:
		b.TeamID, b.TeamName = id, name
	case KindWorkflow:
		b.WorkflowID, b.WorkflowName = id, name
	default:
		b.AgentID, b.AgentName = id, name
	}
}

// SetRunner records who runs the run: agent_id and agent_name, or team_id
// and team_name for a team (see [Runner.Kind]).
func (o *Output) SetRunner(kind Kind, id, name string) {
	switch kind {
	case KindTeam:
		o.TeamID, o.TeamName = id, name
	case KindWorkflow:
		o.WorkflowID, o.WorkflowName = id, name
	default:
		o.AgentID, o.AgentName = id, name
	}
}

// ActiveRequirements returns the requirements not yet resolved.
func (o *Output) ActiveRequirements() []*Requirement {
	var active []*Requirement
	for _, req := range o.Requirements {
		if !req.IsResolved() {
			active = append(active, req)
		}
	}
	return active
}

// ContentString renders Content as text: a string as is, anything else as JSON.
func (o *Output) ContentString() string {
	if o.Content == nil {
		return ""
	}
	if text, ok := o.Content.(string); ok {
		return text
	}
	encoded, err := marshalJSON(o.Content)
	if err != nil {
		return ""
	}
	return string(encoded)
}

// EventList is a run's stored events. Each element decodes to its concrete
// event type through [DecodeEvent], so a stored run reads back with typed
// events and unknown ones passed through unchanged.
type EventList []Event

// UnmarshalJSON decodes every element with [DecodeEvent].
func (l *EventList) UnmarshalJSON(data []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return fmt.Errorf("decode run events: %w", err)
	}
	if raws == nil {
		*l = nil
		return nil
	}
	events := make(EventList, 0, len(raws))
	for i, raw := range raws {
		event, err := DecodeEvent(raw)
		if err != nil {
			return fmt.Errorf("decode run event %d: %w", i, err)
		}
		events = append(events, event)
	}
	*l = events
	return nil
}
