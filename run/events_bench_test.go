package run

import (
	"encoding/json"
	"testing"
)

// BenchmarkRunContentRoundTrip measures the hot path of a stream: encoding a
// content delta and decoding it back, as the event log and /resume do.
func BenchmarkRunContentRoundTrip(b *testing.B) {
	event := &RunContent{BaseEvent: fixtureBase(), Content: "Hel", ContentType: "str"}
	event.SetIndex(42)
	b.ReportAllocs()
	for b.Loop() {
		data, err := json.Marshal(event)
		if err != nil {
			b.Fatal(err)
		}
		decoded, err := DecodeEvent(data)
		if err != nil {
			b.Fatal(err)
		}
		content, ok := decoded.(*RunContent)
		if !ok || content.Content != "Hel" || *content.EventIndex != 42 {
			b.Fatalf("round trip lost data: %#v", decoded)
		}
	}
}

// BenchmarkGenericEventPassThrough measures relaying an event with no typed
// counterpart (a team event) with an index stamped on it.
func BenchmarkGenericEventPassThrough(b *testing.B) {
	frame := []byte(`{"created_at":1767000000,"event":"TeamRunContent","team_id":"t1","run_id":"r1","nested_depth":0,"content":"Hel","content_type":"str"}`)
	b.ReportAllocs()
	for b.Loop() {
		event, err := DecodeEvent(frame)
		if err != nil {
			b.Fatal(err)
		}
		event.Base().SetIndex(7)
		data, err := json.Marshal(event)
		if err != nil {
			b.Fatal(err)
		}
		if len(data) != len(frame)+len(`,"event_index":7`) {
			b.Fatalf("unexpected frame %s", data)
		}
	}
}

// BenchmarkEncodeEvent: an event as it is encoded once for every
// transport. Most events carry no null member and are one json.Marshal; an
// event carrying a tool execution also has its unset members left out.
func BenchmarkEncodeEvent(b *testing.B) {
	failed := false
	result := "42 rows"
	events := map[string]Event{
		"RunContent": &RunContent{BaseEvent: BaseEvent{RunID: "r", SessionID: "s", AgentID: "a", CreatedAt: 1}, Content: "a token"},
		"ToolCallCompleted": &ToolCallCompleted{BaseEvent: BaseEvent{RunID: "r", SessionID: "s", AgentID: "a", CreatedAt: 1},
			Tool: &ToolExecution{ToolCallID: "call_1", ToolName: "query", ToolArgs: map[string]any{"sql": "select 1"}, ToolCallError: &failed, Result: &result}},
	}
	for _, name := range []string{"RunContent", "ToolCallCompleted"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodeEvent(events[name]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
