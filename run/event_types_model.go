package run

import "cmp"

// ReasoningStarted says the reasoning phase started.
type ReasoningStarted struct{ BaseEvent }

// EventName returns [EventReasoningStarted].
func (ReasoningStarted) EventName() string { return EventReasoningStarted }

// MarshalJSON writes the event with its name set.
func (e ReasoningStarted) MarshalJSON() ([]byte, error) {
	type wire ReasoningStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// ReasoningStep carries one reasoning step (usually a [ReasoningStepData]) in
// Content.
type ReasoningStep struct {
	BaseEvent
	Content any `json:"content,omitempty"`
	// ContentType is "str" (the default when empty) or the step type's name.
	ContentType      string `json:"content_type"`
	ReasoningContent string `json:"reasoning_content"`
}

// EventName returns [EventReasoningStep].
func (ReasoningStep) EventName() string { return EventReasoningStep }

// MarshalJSON writes the event with its name and a default content type set.
func (e ReasoningStep) MarshalJSON() ([]byte, error) {
	type wire ReasoningStep
	index := e.stamp(e.EventName())
	e.ContentType = cmp.Or(e.ContentType, contentTypeText)
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// ReasoningContentDelta is one streamed chunk of reasoning text.
type ReasoningContentDelta struct {
	BaseEvent
	ReasoningContent string `json:"reasoning_content"`
}

// EventName returns [EventReasoningContentDelta].
func (ReasoningContentDelta) EventName() string { return EventReasoningContentDelta }

// MarshalJSON writes the event with its name set.
func (e ReasoningContentDelta) MarshalJSON() ([]byte, error) {
	type wire ReasoningContentDelta
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// ReasoningCompleted closes the reasoning phase with its result in Content.
type ReasoningCompleted struct {
	BaseEvent
	Content any `json:"content,omitempty"`
	// ContentType is "str" (the default when empty) or the result type's name.
	ContentType string `json:"content_type"`
}

// EventName returns [EventReasoningCompleted].
func (ReasoningCompleted) EventName() string { return EventReasoningCompleted }

// MarshalJSON writes the event with its name and a default content type set.
func (e ReasoningCompleted) MarshalJSON() ([]byte, error) {
	type wire ReasoningCompleted
	index := e.stamp(e.EventName())
	e.ContentType = cmp.Or(e.ContentType, contentTypeText)
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// MemoryUpdateStarted says user memories are being updated.
type MemoryUpdateStarted struct{ BaseEvent }

// EventName returns [EventMemoryUpdateStarted].
func (MemoryUpdateStarted) EventName() string { return EventMemoryUpdateStarted }

// MarshalJSON writes the event with its name set.
func (e MemoryUpdateStarted) MarshalJSON() ([]byte, error) {
	type wire MemoryUpdateStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// MemoryUpdateCompleted says user memories were updated; Memories lists them as
// stored (user memory objects).
type MemoryUpdateCompleted struct {
	BaseEvent
	Memories []any `json:"memories,omitzero"`
}

// EventName returns [EventMemoryUpdateCompleted].
func (MemoryUpdateCompleted) EventName() string { return EventMemoryUpdateCompleted }

// MarshalJSON writes the event with its name set.
func (e MemoryUpdateCompleted) MarshalJSON() ([]byte, error) {
	type wire MemoryUpdateCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// SessionSummaryStarted says the session summary is being written.
type SessionSummaryStarted struct{ BaseEvent }

// EventName returns [EventSessionSummaryStarted].
func (SessionSummaryStarted) EventName() string { return EventSessionSummaryStarted }

// MarshalJSON writes the event with its name set.
func (e SessionSummaryStarted) MarshalJSON() ([]byte, error) {
	type wire SessionSummaryStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// SessionSummaryCompleted carries the new session summary.
type SessionSummaryCompleted struct {
	BaseEvent
	SessionSummary *SessionSummary `json:"session_summary,omitempty"`
}

// EventName returns [EventSessionSummaryCompleted].
func (SessionSummaryCompleted) EventName() string { return EventSessionSummaryCompleted }

// MarshalJSON writes the event with its name set.
func (e SessionSummaryCompleted) MarshalJSON() ([]byte, error) {
	type wire SessionSummaryCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// ParserModelResponseStarted says the parser model started structuring the answer.
type ParserModelResponseStarted struct{ BaseEvent }

// EventName returns [EventParserModelResponseStarted].
func (ParserModelResponseStarted) EventName() string { return EventParserModelResponseStarted }

// MarshalJSON writes the event with its name set.
func (e ParserModelResponseStarted) MarshalJSON() ([]byte, error) {
	type wire ParserModelResponseStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// ParserModelResponseCompleted says the parser model finished.
type ParserModelResponseCompleted struct{ BaseEvent }

// EventName returns [EventParserModelResponseCompleted].
func (ParserModelResponseCompleted) EventName() string { return EventParserModelResponseCompleted }

// MarshalJSON writes the event with its name set.
func (e ParserModelResponseCompleted) MarshalJSON() ([]byte, error) {
	type wire ParserModelResponseCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// OutputModelResponseStarted says the output model started writing the answer.
type OutputModelResponseStarted struct{ BaseEvent }

// EventName returns [EventOutputModelResponseStarted].
func (OutputModelResponseStarted) EventName() string { return EventOutputModelResponseStarted }

// MarshalJSON writes the event with its name set.
func (e OutputModelResponseStarted) MarshalJSON() ([]byte, error) {
	type wire OutputModelResponseStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// OutputModelResponseCompleted says the output model finished.
type OutputModelResponseCompleted struct{ BaseEvent }

// EventName returns [EventOutputModelResponseCompleted].
func (OutputModelResponseCompleted) EventName() string { return EventOutputModelResponseCompleted }

// MarshalJSON writes the event with its name set.
func (e OutputModelResponseCompleted) MarshalJSON() ([]byte, error) {
	type wire OutputModelResponseCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// ModelRequestStarted says a request to the model provider is about to be made.
type ModelRequestStarted struct {
	BaseEvent
	Model         string `json:"model,omitempty"`
	ModelProvider string `json:"model_provider,omitempty"`
}

// EventName returns [EventModelRequestStarted].
func (ModelRequestStarted) EventName() string { return EventModelRequestStarted }

// MarshalJSON writes the event with its name set.
func (e ModelRequestStarted) MarshalJSON() ([]byte, error) {
	type wire ModelRequestStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// ModelRequestCompleted reports one provider request's usage. The counts are
// pointers because Agno writes a reported zero and leaves out an unreported one.
type ModelRequestCompleted struct {
	BaseEvent
	Model            string   `json:"model,omitempty"`
	ModelProvider    string   `json:"model_provider,omitempty"`
	InputTokens      *int64   `json:"input_tokens,omitempty"`
	OutputTokens     *int64   `json:"output_tokens,omitempty"`
	TotalTokens      *int64   `json:"total_tokens,omitempty"`
	TimeToFirstToken *float64 `json:"time_to_first_token,omitempty"`
	ReasoningTokens  *int64   `json:"reasoning_tokens,omitempty"`
	CacheReadTokens  *int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens *int64   `json:"cache_write_tokens,omitempty"`
}

// EventName returns [EventModelRequestCompleted].
func (ModelRequestCompleted) EventName() string { return EventModelRequestCompleted }

// MarshalJSON writes the event with its name set.
func (e ModelRequestCompleted) MarshalJSON() ([]byte, error) {
	type wire ModelRequestCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// CompressionStarted says tool-result compression started.
type CompressionStarted struct{ BaseEvent }

// EventName returns [EventCompressionStarted].
func (CompressionStarted) EventName() string { return EventCompressionStarted }

// MarshalJSON writes the event with its name set.
func (e CompressionStarted) MarshalJSON() ([]byte, error) {
	type wire CompressionStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// CompressionCompleted reports how many tool results were compressed and the
// sizes before and after, in characters.
type CompressionCompleted struct {
	BaseEvent
	ToolResultsCompressed *int `json:"tool_results_compressed,omitempty"`
	OriginalSize          *int `json:"original_size,omitempty"`
	CompressedSize        *int `json:"compressed_size,omitempty"`
}

// EventName returns [EventCompressionCompleted].
func (CompressionCompleted) EventName() string { return EventCompressionCompleted }

// MarshalJSON writes the event with its name set.
func (e CompressionCompleted) MarshalJSON() ([]byte, error) {
	type wire CompressionCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// FollowupsStarted says follow-up suggestions are being generated.
type FollowupsStarted struct{ BaseEvent }

// EventName returns [EventFollowupsStarted].
func (FollowupsStarted) EventName() string { return EventFollowupsStarted }

// MarshalJSON writes the event with its name set.
func (e FollowupsStarted) MarshalJSON() ([]byte, error) {
	type wire FollowupsStarted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// FollowupsCompleted carries short follow-up prompts for the user.
type FollowupsCompleted struct {
	BaseEvent
	Followups []string `json:"followups,omitzero"`
}

// EventName returns [EventFollowupsCompleted].
func (FollowupsCompleted) EventName() string { return EventFollowupsCompleted }

// MarshalJSON writes the event with its name set.
func (e FollowupsCompleted) MarshalJSON() ([]byte, error) {
	type wire FollowupsCompleted
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}
