package run

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Event is one typed event of a run, as streamed over SSE and stored on the run
// when store_events is on.
//
// Every concrete event embeds [BaseEvent], which supplies Base, and encodes
// with its "event" key set to EventName whatever BaseEvent.Event holds, so a
// caller never has to fill it in. Keys with no value are left out, as Agno
// drops None.
type Event interface {
	// EventName is the wire name, e.g. "RunContent"; it is also the SSE
	// frame's event: line.
	EventName() string
	// Base returns the fields every event shares, for stamping run ids and
	// event indices without knowing the concrete type.
	Base() *BaseEvent
	json.Marshaler
}

// BaseEvent holds the fields every agent event carries (Agno's
// BaseAgentRunEvent), plus the event_index an event stream stamps on it.
//
// created_at, event and nested_depth are always written. agent_id and
// agent_name are left out when empty, where Agno writes "": clients read the
// two alike, and Agno's own decoder tells agent from team events by the
// presence of agent_id.
//
// Events with a content of their own (RunContent, RunCompleted, …) declare a
// Content field that hides BaseEvent.Content; for those, set the event's field.
type BaseEvent struct {
	// CreatedAt is in epoch seconds.
	CreatedAt int64 `json:"created_at"`
	// Event is the wire name. Encoding always writes the event type's name;
	// decoding fills this in.
	Event     string `json:"event"`
	AgentID   string `json:"agent_id,omitempty"`
	AgentName string `json:"agent_name,omitempty"`
	// TeamID and TeamName identify a team's own events; with TeamID set
	// and no AgentID the event is a team event and goes by its Team* name
	// ([TeamEventName]). A member's events keep their agent_id.
	TeamID      string `json:"team_id,omitempty"`
	TeamName    string `json:"team_name,omitempty"`
	RunID       string `json:"run_id,omitempty"`
	ParentRunID string `json:"parent_run_id,omitempty"`
	SessionID   string `json:"session_id,omitempty"`

	// Workflow step context, set when the agent runs inside a workflow.
	// WorkflowID and WorkflowName alone (no agent_id or team_id) make the
	// event a workflow's own: its run events go by their Workflow* names
	// ([WorkflowEventName]).
	WorkflowID    string `json:"workflow_id,omitempty"`
	WorkflowName  string `json:"workflow_name,omitempty"`
	WorkflowRunID string `json:"workflow_run_id,omitempty"`
	StepID        string `json:"step_id,omitempty"`
	ParentStepID  string `json:"parent_step_id,omitempty"`
	StepName      string `json:"step_name,omitempty"`
	// StepIndex is the step's position: an int at the top level, a list
	// of ints for a step nested in another.
	StepIndex any `json:"step_index,omitempty"`
	// NestedDepth is 0 for a top-level run, 1 inside one nested workflow, etc.
	NestedDepth int `json:"nested_depth"`

	Tools []*ToolExecution `json:"tools,omitzero"`
	// Content is the shared, backwards-compatible content slot; see the type doc.
	Content any `json:"content,omitempty"`

	// EventIndex is the per-run index an event stream assigns; nil until the
	// event went through one. Indices increase strictly but may have gaps.
	// Typed events write it last, where AgentOS appends it.
	EventIndex *int64 `json:"event_index,omitempty"`
}

// Base returns b itself, so every type embedding BaseEvent provides
// [Event.Base].
func (b *BaseEvent) Base() *BaseEvent { return b }

// SetIndex stamps the event-stream index on the event.
func (b *BaseEvent) SetIndex(index int64) { b.EventIndex = &index }

// Index returns the event-stream index and whether one was stamped.
func (b *BaseEvent) Index() (int64, bool) {
	if b.EventIndex == nil {
		return 0, false
	}
	return *b.EventIndex, true
}

// stamp prepares a copy of an event for encoding: it sets the wire name and
// takes the event index out, so [withIndex] can write it last, where AgentOS's
// event stream appends it.
func (b *BaseEvent) stamp(name string) (index *int64) {
	b.Event = b.wireName(name)
	index, b.EventIndex = b.EventIndex, nil
	return index
}

// wireName is the name an event of type name goes by: its Team* name for
// a team's own event.
func (b *BaseEvent) wireName(name string) string {
	if b.AgentID != "" {
		return name
	}
	if b.TeamID != "" {
		return TeamEventName(name)
	}
	if b.WorkflowID != "" {
		return WorkflowEventName(name)
	}
	return name
}

// NameOf is an event's wire name, the "event" key of its JSON and its SSE
// frame's event line: [Event.EventName], or its Team* counterpart for a
// team's own event (one with team_id and no agent_id).
func NameOf(e Event) string { return e.Base().wireName(e.EventName()) }

// withIndex appends "event_index" to an encoded event object when there is one.
func withIndex(data []byte, err error, index *int64) ([]byte, error) {
	if err != nil || index == nil {
		return data, err
	}
	return fmt.Appendf(data[:len(data)-1], `,"event_index":%d}`, *index), nil
}

// baseEventKeys are the JSON keys BaseEvent encodes.
var baseEventKeys = jsonKeys(reflect.TypeFor[BaseEvent]())

// eventFactories maps each agent event name to a constructor of its type.
var eventFactories = map[string]func() Event{
	EventRunStarted:                   func() Event { return new(RunStarted) },
	EventRunContent:                   func() Event { return new(RunContent) },
	EventRunContentCompleted:          func() Event { return new(RunContentCompleted) },
	EventRunIntermediateContent:       func() Event { return new(RunIntermediateContent) },
	EventRunCompleted:                 func() Event { return new(RunCompleted) },
	EventRunError:                     func() Event { return new(RunError) },
	EventRunCancelled:                 func() Event { return new(RunCancelled) },
	EventRunPaused:                    func() Event { return new(RunPaused) },
	EventRunContinued:                 func() Event { return new(RunContinued) },
	EventPreHookStarted:               func() Event { return new(PreHookStarted) },
	EventPreHookCompleted:             func() Event { return new(PreHookCompleted) },
	EventPostHookStarted:              func() Event { return new(PostHookStarted) },
	EventPostHookCompleted:            func() Event { return new(PostHookCompleted) },
	EventToolCallStarted:              func() Event { return new(ToolCallStarted) },
	EventToolCallCompleted:            func() Event { return new(ToolCallCompleted) },
	EventToolCallError:                func() Event { return new(ToolCallError) },
	EventReasoningStarted:             func() Event { return new(ReasoningStarted) },
	EventReasoningStep:                func() Event { return new(ReasoningStep) },
	EventReasoningContentDelta:        func() Event { return new(ReasoningContentDelta) },
	EventReasoningCompleted:           func() Event { return new(ReasoningCompleted) },
	EventMemoryUpdateStarted:          func() Event { return new(MemoryUpdateStarted) },
	EventMemoryUpdateCompleted:        func() Event { return new(MemoryUpdateCompleted) },
	EventSessionSummaryStarted:        func() Event { return new(SessionSummaryStarted) },
	EventSessionSummaryCompleted:      func() Event { return new(SessionSummaryCompleted) },
	EventParserModelResponseStarted:   func() Event { return new(ParserModelResponseStarted) },
	EventParserModelResponseCompleted: func() Event { return new(ParserModelResponseCompleted) },
	EventOutputModelResponseStarted:   func() Event { return new(OutputModelResponseStarted) },
	EventOutputModelResponseCompleted: func() Event { return new(OutputModelResponseCompleted) },
	EventModelRequestStarted:          func() Event { return new(ModelRequestStarted) },
	EventModelRequestCompleted:        func() Event { return new(ModelRequestCompleted) },
	EventCompressionStarted:           func() Event { return new(CompressionStarted) },
	EventCompressionCompleted:         func() Event { return new(CompressionCompleted) },
	EventFollowupsStarted:             func() Event { return new(FollowupsStarted) },
	EventFollowupsCompleted:           func() Event { return new(FollowupsCompleted) },
	EventCustom:                       func() Event { return new(CustomEvent) },
	EventRunRetry:                     func() Event { return new(RunRetry) },

	EventTeamTaskIterationStarted:   func() Event { return new(TeamTaskIterationStarted) },
	EventTeamTaskIterationCompleted: func() Event { return new(TeamTaskIterationCompleted) },
	EventTeamTaskStateUpdated:       func() Event { return new(TeamTaskStateUpdated) },
	EventTeamTaskCreated:            func() Event { return new(TeamTaskCreated) },
	EventTeamTaskUpdated:            func() Event { return new(TeamTaskUpdated) },
}

// DecodeEvent reads one event, choosing the concrete type from its "event" key.
// A name with no type here — team and workflow events, or names added later —
// decodes to a [GenericEvent] that re-encodes every key it was given; that is
// never an error. Only input that is not a JSON object, or a known event whose
// fields have the wrong JSON types, is an error.
func DecodeEvent(data []byte) (Event, error) {
	// A struct target makes encoding/json reject non-objects and trailing data
	// while reading only the one key needed to pick the type.
	var head struct {
		Event json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("decode run event: %w", err)
	}
	var name string
	if json.Unmarshal(head.Event, &name) != nil {
		name = "" // no string name: pass the event through
	}
	factory, known := eventFactories[name]
	if !known && name != EventCustom && strings.HasPrefix(name, teamPrefix) {
		if typed, ok := decodeOwnEvent(data, strings.TrimPrefix(name, teamPrefix), KindTeam); ok {
			return typed, nil
		}
	}
	if runName, ok := workflowRunNames[name]; ok && !known {
		if typed, ok := decodeOwnEvent(data, runName, KindWorkflow); ok {
			return typed, nil
		}
	}
	if !known {
		obj, err := decodeObject(data)
		if err != nil {
			return nil, fmt.Errorf("decode run event %q: %w", name, err)
		}
		generic := &GenericEvent{}
		if err := generic.fromObject(data, obj); err != nil {
			return nil, fmt.Errorf("decode run event %q: %w", name, err)
		}
		return generic, nil
	}
	event := factory()
	if err := json.Unmarshal(data, event); err != nil {
		return nil, fmt.Errorf("decode run event %s: %w", name, err)
	}
	return event, nil
}

// workflowRunNames maps a workflow's own run event names back to the run
// events' ([WorkflowEventName] undone; WorkflowStarted reads as RunStarted).
var workflowRunNames = map[string]string{
	EventWorkflowStarted:   EventRunStarted,
	EventWorkflowCompleted: EventRunCompleted,
	EventWorkflowError:     EventRunError,
	EventWorkflowCancelled: EventRunCancelled,
	EventWorkflowPaused:    EventRunPaused,
}

// decodeOwnEvent decodes a team's or a workflow's own event to its run
// event's type, told apart by its team_id or workflow_id — when that type
// holds all of it: the typed event must encode back to the same JSON.
// Anything else (an event written by another implementation, with keys of
// its own) passes through as a [GenericEvent].
func decodeOwnEvent(data []byte, runName string, kind Kind) (Event, bool) {
	factory, ok := eventFactories[runName]
	if !ok {
		return nil, false
	}
	event := factory()
	if json.Unmarshal(data, event) != nil || event.Base().AgentID != "" {
		return nil, false
	}
	switch b := event.Base(); kind {
	case KindTeam:
		if b.TeamID == "" {
			return nil, false
		}
	default:
		if b.WorkflowID == "" || b.TeamID != "" {
			return nil, false
		}
	}
	encoded, err := EncodeEvent(event)
	if err != nil {
		return nil, false
	}
	var given, typed any
	if json.Unmarshal(data, &given) != nil || json.Unmarshal(encoded, &typed) != nil || !reflect.DeepEqual(given, typed) {
		return nil, false
	}
	return event, true
}

// AgentEventNames lists the agent event names [DecodeEvent] decodes to a
// concrete type: Agno's RunEvent set plus agnogo's RunRetry.
func AgentEventNames() []string {
	names := make([]string, 0, len(eventFactories))
	for name := range eventFactories {
		if !strings.HasPrefix(name, teamPrefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// MemberEvent is an event of a member's run passed on in its parent's
// stream (a team's member agent, say): it keeps the member's identity
// (agent_id, run_id, parent_run_id) and its own name, and it is not one of
// the parent's own events — [FinalStatus] never sees a member's end as the
// parent's.
type MemberEvent struct {
	// Event is a copy of the member's event: the parent stamps its own
	// event_index on it.
	Event
}

// AsMember wraps a member run's event for its parent's stream, on a
// shallow copy so the member's own record of it is left as it was.
func AsMember(e Event) *MemberEvent {
	if m, ok := e.(*MemberEvent); ok {
		e = m.Event
	}
	v := reflect.ValueOf(e)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		copied := reflect.New(v.Elem().Type())
		copied.Elem().Set(v.Elem())
		if c, ok := copied.Interface().(Event); ok {
			e = c
		}
	}
	return &MemberEvent{Event: e}
}
