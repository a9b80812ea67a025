package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CustomEvent is an application-defined event (Agno's CustomEvent and its
// subclasses, e.g. the external agents' ExternalRunWarningEvent). Its own
// fields travel in Fields, written beside the base fields; a Fields key that
// names a base field or tool_call_id is ignored, the typed field winning.
// Decoded numbers in Fields are [json.Number] values.
type CustomEvent struct {
	BaseEvent
	// ToolCallID ties the event to the tool call that emitted it.
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Fields     map[string]any `json:"-"`
}

// customEventKeys are the keys CustomEvent holds in typed fields.
var customEventKeys = append(slices.Clone(baseEventKeys), "tool_call_id")

// EventName returns [EventCustom].
func (CustomEvent) EventName() string { return EventCustom }

// MarshalJSON writes the base fields, tool_call_id, then Fields sorted by key,
// and event_index last.
func (e CustomEvent) MarshalJSON() ([]byte, error) {
	type wire CustomEvent
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	if err != nil {
		return nil, err
	}
	for _, key := range slices.Sorted(maps.Keys(e.Fields)) {
		if slices.Contains(customEventKeys, key) {
			continue
		}
		name, err := marshalJSON(key)
		if err != nil {
			return nil, err
		}
		value, err := marshalJSON(e.Fields[key])
		if err != nil {
			return nil, fmt.Errorf("encode custom event field %q: %w", key, err)
		}
		// data always ends with '}' after at least created_at and event.
		data = append(append(append(append(data[:len(data)-1], ','), name...), ':'), value...)
		data = append(data, '}')
	}
	return withIndex(data, nil, index)
}

// UnmarshalJSON reads the typed fields and keeps every other key in Fields.
func (e *CustomEvent) UnmarshalJSON(data []byte) error {
	type wire CustomEvent
	if err := json.Unmarshal(data, (*wire)(e)); err != nil {
		return err
	}
	obj, err := decodeObject(data)
	if err != nil {
		return err
	}
	e.Fields = nil
	for _, key := range obj.keys {
		if slices.Contains(customEventKeys, key) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(obj.fields[key]))
		dec.UseNumber()
		var value any
		if err := dec.Decode(&value); err != nil {
			return err
		}
		if e.Fields == nil {
			e.Fields = map[string]any{}
		}
		e.Fields[key] = value
	}
	return nil
}

// RunRetry is agnogo's retry notice (not in Agno; teams use "TeamRunRetry"):
// the run is about to be attempted again. Clients drop the content they
// gathered for the failed attempt; tool events already shown stay valid. The
// same history is kept in metadata["attempts"] (see [Attempt]).
type RunRetry struct {
	BaseEvent
	// Attempt is the 1-based number of the attempt about to start; the first
	// retry is 2.
	Attempt int `json:"attempt"`
	// MaxAttempts is retries+1 for agent, model and external retries, or the
	// queue's max_attempts for queue re-attempts.
	MaxAttempts int `json:"max_attempts"`
	// Error is the failed attempt's message.
	Error string `json:"error"`
	// DelaySeconds is the wait before the new attempt; 0 when none.
	DelaySeconds float64 `json:"delay_seconds"`
}

// EventName returns [EventRunRetry].
func (RunRetry) EventName() string { return EventRunRetry }

// MarshalJSON writes the event with its name set.
func (e RunRetry) MarshalJSON() ([]byte, error) {
	type wire RunRetry
	index := e.stamp(e.EventName())
	data, err := marshalJSON(wire(e))
	return withIndex(data, err, index)
}

// GenericEvent is any event with no concrete type here: team and workflow
// events, and names added after this package was written. It re-encodes what
// it was decoded from — same keys, same order, same values — except for the
// base fields the caller changed, so stamping an event index or run id on a
// passing event works as for typed ones.
type GenericEvent struct {
	BaseEvent
	// Fields holds every key that is not a base field, as raw JSON. A base key
	// whose value did not fit the base field's type is kept here too.
	Fields map[string]json.RawMessage

	keys    []string                   // document order of the decoded keys
	baseRaw map[string]json.RawMessage // decoded values of the base keys
}

// EventName returns the decoded "event" name (BaseEvent.Event).
func (e GenericEvent) EventName() string { return e.Event }

// fromObject fills e from data, already decoded as obj. Base keys are read
// leniently: one whose value does not fit (a workflow's list-valued
// step_index, say) stays raw in Fields instead of failing the decode.
func (e *GenericEvent) fromObject(data []byte, obj jsonObject) error {
	*e = GenericEvent{keys: obj.keys, baseRaw: map[string]json.RawMessage{}}
	// Usually every base key fits, and one pass reads them all. encoding/json
	// matches keys without regard to case, so a key that differs from a base
	// key only in case forces the key-by-key path too.
	lenient := hasCaseVariantOfBaseKey(obj.keys) || json.Unmarshal(data, &e.BaseEvent) != nil
	if lenient {
		e.BaseEvent = BaseEvent{}
	}
	for _, key := range obj.keys {
		raw := obj.fields[key]
		if slices.Contains(baseEventKeys, key) {
			if !lenient {
				e.baseRaw[key] = raw
				continue
			}
			var w objectWriter
			if err := w.add(key, raw); err != nil {
				return err
			}
			single := w.bytes()
			var probe BaseEvent
			if json.Unmarshal(single, &probe) == nil {
				if err := json.Unmarshal(single, &e.BaseEvent); err != nil {
					return err
				}
				e.baseRaw[key] = raw
				continue
			}
		}
		if e.Fields == nil {
			e.Fields = map[string]json.RawMessage{}
		}
		e.Fields[key] = raw
	}
	return nil
}

// UnmarshalJSON reads any JSON object.
func (e *GenericEvent) UnmarshalJSON(data []byte) error {
	obj, err := decodeObject(data)
	if err != nil {
		return err
	}
	return e.fromObject(data, obj)
}

// MarshalJSON writes the decoded keys in their order with the base fields'
// current values, then base fields set since, then new Fields keys sorted.
// A base key that was decoded empty and is still empty keeps its empty value,
// so a team event's "agent_id" never appears and a given "" never vanishes.
func (e GenericEvent) MarshalJSON() ([]byte, error) {
	encodedBase, err := marshalJSON(e.BaseEvent)
	if err != nil {
		return nil, err
	}
	base, err := decodeObject(encodedBase)
	if err != nil {
		return nil, err
	}
	var w objectWriter
	written := map[string]bool{}
	for _, key := range e.keys {
		if raw, ok := e.Fields[key]; ok {
			written[key] = true
			if err := w.add(key, raw); err != nil {
				return nil, err
			}
			continue
		}
		original, wasBase := e.baseRaw[key]
		if !wasBase {
			continue // removed from Fields by the caller
		}
		written[key] = true
		value, ok := base.fields[key]
		if !ok {
			if !isEmptyJSON(original) {
				continue // cleared by the caller
			}
			value = original
		}
		if err := w.add(key, value); err != nil {
			return nil, err
		}
	}
	for _, key := range base.keys {
		if written[key] || isEmptyJSON(base.fields[key]) {
			continue
		}
		written[key] = true
		if err := w.add(key, base.fields[key]); err != nil {
			return nil, err
		}
	}
	for _, key := range slices.Sorted(maps.Keys(e.Fields)) {
		if written[key] {
			continue
		}
		if err := w.add(key, e.Fields[key]); err != nil {
			return nil, err
		}
	}
	return w.bytes(), nil
}

// hasCaseVariantOfBaseKey reports whether some key equals a base key only
// when case is ignored.
func hasCaseVariantOfBaseKey(keys []string) bool {
	for _, key := range keys {
		for _, baseKey := range baseEventKeys {
			if key != baseKey && strings.EqualFold(key, baseKey) {
				return true
			}
		}
	}
	return false
}
