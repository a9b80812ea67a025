package run

// ToolCallStarted says a tool call started.
//
// ParentToolCallID is agnogo's addition: set on calls made inside a subagent to
// the id of the tool call that spawned it (also set on Tool), and left out for
// top-level calls.
type ToolCallStarted struct {
	BaseEvent
	Tool             *ToolExecution `json:"tool,omitempty"`
	ParentToolCallID string         `json:"parent_tool_call_id,omitempty"`
}

// EventName returns [EventToolCallStarted].
func (ToolCallStarted) EventName() string { return EventToolCallStarted }

// MarshalJSON writes the event with its name set.
func (e ToolCallStarted) MarshalJSON() ([]byte, error) {
	type wire ToolCallStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// ToolCallCompleted says a tool call finished; Content is its result and the
// media fields hold what it produced.
type ToolCallCompleted struct {
	BaseEvent
	Tool             *ToolExecution `json:"tool,omitempty"`
	Content          any            `json:"content,omitempty"`
	Images           []Image        `json:"images,omitzero"`
	Videos           []Video        `json:"videos,omitzero"`
	Audio            []Audio        `json:"audio,omitzero"`
	Files            []File         `json:"files,omitzero"`
	ParentToolCallID string         `json:"parent_tool_call_id,omitempty"`
}

// EventName returns [EventToolCallCompleted].
func (ToolCallCompleted) EventName() string { return EventToolCallCompleted }

// MarshalJSON writes the event with its name set.
func (e ToolCallCompleted) MarshalJSON() ([]byte, error) {
	type wire ToolCallCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// ToolCallError says a tool call failed.
type ToolCallError struct {
	BaseEvent
	Tool             *ToolExecution `json:"tool,omitempty"`
	Error            string         `json:"error,omitempty"`
	ParentToolCallID string         `json:"parent_tool_call_id,omitempty"`
}

// EventName returns [EventToolCallError].
func (ToolCallError) EventName() string { return EventToolCallError }

// MarshalJSON writes the event with its name set.
func (e ToolCallError) MarshalJSON() ([]byte, error) {
	type wire ToolCallError
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}
