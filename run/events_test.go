package run

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// agnoAgentEventNames is Agno's RunEvent set (events-and-streaming.md §3).
var agnoAgentEventNames = []string{
	"RunStarted", "RunContent", "RunContentCompleted", "RunIntermediateContent", "RunCompleted", "RunError",
	"RunCancelled", "RunPaused", "RunContinued", "PreHookStarted", "PreHookCompleted", "PostHookStarted",
	"PostHookCompleted", "ToolCallStarted", "ToolCallCompleted", "ToolCallError", "ReasoningStarted", "ReasoningStep",
	"ReasoningContentDelta", "ReasoningCompleted", "MemoryUpdateStarted", "MemoryUpdateCompleted",
	"SessionSummaryStarted", "SessionSummaryCompleted", "ParserModelResponseStarted", "ParserModelResponseCompleted",
	"OutputModelResponseStarted", "OutputModelResponseCompleted", "ModelRequestStarted", "ModelRequestCompleted",
	"CompressionStarted", "CompressionCompleted", "FollowupsStarted", "FollowupsCompleted", "CustomEvent",
}

func TestAgentEventNamesCoverAgnoAndRunRetry(t *testing.T) {
	t.Parallel()
	want := append(slices.Clone(agnoAgentEventNames), "RunRetry")
	slices.Sort(want)
	require.Equal(t, want, AgentEventNames())
	require.Len(t, fixtureEvents(), len(want), "every event type needs a fixture")
}

// TestEventRoundTrip checks marshal → DecodeEvent → marshal is stable and
// yields the same concrete type, for every event type.
func TestEventRoundTrip(t *testing.T) {
	t.Parallel()
	for name, event := range fixtureEvents() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first, err := json.Marshal(event)
			require.NoError(t, err)

			decoded, err := DecodeEvent(first)
			require.NoError(t, err)
			require.IsType(t, event, decoded)
			require.Equal(t, name, decoded.EventName())
			require.Equal(t, name, decoded.Base().Event)

			second, err := json.Marshal(decoded)
			require.NoError(t, err)
			require.JSONEq(t, string(first), string(second))
			require.Equal(t, string(first), string(second), "key order must survive too")
		})
	}
}

func TestMarshalSetsEventNameWhenCallerForgot(t *testing.T) {
	t.Parallel()
	for name, event := range fixtureEvents() {
		require.Empty(t, event.Base().Event, "fixtures leave Event empty")
		var fields map[string]any
		data, err := json.Marshal(event)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &fields))
		require.Equal(t, name, fields["event"])
	}

	// A wrong name set by the caller is corrected too.
	data, err := json.Marshal(&RunContent{BaseEvent: BaseEvent{Event: "Wrong"}})
	require.NoError(t, err)
	require.Contains(t, string(data), `"event":"RunContent"`)
}

func TestRunContentConstructorFreeUsage(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(&RunContent{BaseEvent: BaseEvent{RunID: "r1"}, Content: "Hel", ContentType: "str"})
	require.NoError(t, err)
	require.Equal(t,
		`{"created_at":0,"event":"RunContent","run_id":"r1","nested_depth":0,"content":"Hel","workflow_agent":false,"content_type":"str"}`,
		string(data))

	// By value too, and content_type defaults to "str".
	data, err = json.Marshal(RunContent{Content: "x"})
	require.NoError(t, err)
	require.Contains(t, string(data), `"content_type":"str"`)
}

// TestExampleFrameFromReference decodes the background-stream frame of
// events-and-streaming.md §1 and re-encodes it: every key keeps its value, and
// the only keys added are ones Agno always writes.
func TestExampleFrameFromReference(t *testing.T) {
	t.Parallel()
	const frame = `{"created_at":1767000000,"event":"RunContent","agent_id":"a","run_id":"r1","session_id":"s1","content":"Hel","content_type":"str","event_index":3}`

	event, err := DecodeEvent([]byte(frame))
	require.NoError(t, err)
	content, ok := event.(*RunContent)
	require.True(t, ok, "got %T", event)
	require.Equal(t, "Hel", content.Content)
	require.Equal(t, "a", content.AgentID)
	index, indexed := content.Index()
	require.True(t, indexed)
	require.EqualValues(t, 3, index)

	encoded, err := json.Marshal(event)
	require.NoError(t, err)
	var want, got map[string]any
	require.NoError(t, json.Unmarshal([]byte(frame), &want))
	require.NoError(t, json.Unmarshal(encoded, &got))
	for key, value := range want {
		require.Equal(t, value, got[key], "key %s", key)
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			require.Contains(t, []string{"nested_depth", "workflow_agent"}, key, "unexpected key added")
		}
	}
}

func TestEventIndexZeroIsWrittenAndAbsentIsNot(t *testing.T) {
	t.Parallel()
	event := &RunContentCompleted{}
	data, err := json.Marshal(event)
	require.NoError(t, err)
	require.NotContains(t, string(data), "event_index")

	event.SetIndex(0)
	data, err = json.Marshal(event)
	require.NoError(t, err)
	require.Contains(t, string(data), `"event_index":0`)
}

func TestDecodeEventUnknownNamesPassThrough(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"team event":       `{"created_at":1767000000,"event":"TeamRunContent","team_id":"t1","team_name":"","run_id":"r1","session_id":"s1","nested_depth":0,"content":"Hi","content_type":"str","member_responses":[]}`,
		"workflow list":    `{"created_at":1,"event":"ParallelExecutionStarted","workflow_id":"w","step_index":[0,1],"parallel_step_count":2}`,
		"future agent":     `{"event":"RunTeleported","run_id":"r1","where":{"x":1.5e300,"big":12345678901234567890}}`,
		"no event key":     `{"run_id":"r1","anything":true}`,
		"non-string event": `{"event":42,"run_id":"r1"}`,
		"case variant key": `{"event":"TeamRunStarted","Run_ID":"shadow","run_id":"r1"}`,
		"team retry":       `{"created_at":5,"event":"TeamRunRetry","team_id":"t1","attempt":2,"max_attempts":3,"error":"boom","delay_seconds":0}`,
	}
	for name, input := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			event, err := DecodeEvent([]byte(input))
			require.NoError(t, err)
			require.IsType(t, &GenericEvent{}, event)

			encoded, err := json.Marshal(event)
			require.NoError(t, err)
			require.Equal(t, input, string(encoded), "a generic event re-encodes byte for byte")
		})
	}
}

func TestGenericEventReflectsBaseChanges(t *testing.T) {
	t.Parallel()
	event, err := DecodeEvent([]byte(`{"created_at":1,"event":"TeamToolCallStarted","team_id":"t1","run_id":"","nested_depth":0,"session_id":"s1"}`))
	require.NoError(t, err)
	require.Equal(t, EventTeamToolCallStarted, event.EventName())
	require.Equal(t, "s1", event.Base().SessionID)

	event.Base().RunID = "r9"     // fills a key that was decoded empty
	event.Base().SessionID = ""   // clears a key
	event.Base().SetIndex(12)     // adds a key
	event.Base().ParentRunID = "" // untouched, stays absent

	encoded, err := json.Marshal(event)
	require.NoError(t, err)
	require.Equal(t, `{"created_at":1,"event":"TeamToolCallStarted","team_id":"t1","run_id":"r9","nested_depth":0,"event_index":12}`, string(encoded))
}

func TestGenericEventBuiltByHand(t *testing.T) {
	t.Parallel()
	event := &GenericEvent{
		BaseEvent: BaseEvent{CreatedAt: 2, Event: EventWorkflowStarted, RunID: "r1"},
		Fields:    map[string]json.RawMessage{"workflow_name": json.RawMessage(`"wf"`)},
	}
	encoded, err := json.Marshal(event)
	require.NoError(t, err)
	require.Equal(t, `{"created_at":2,"event":"WorkflowStarted","run_id":"r1","workflow_name":"wf"}`, string(encoded))
}

func TestDecodeEventErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"malformed":            `{"event":"RunContent",`,
		"not an object":        `["RunContent"]`,
		"trailing data":        `{"event":"RunContent"} {}`,
		"empty":                ``,
		"known event bad type": `{"event":"RunStarted","created_at":"yesterday"}`,
	}
	for name, input := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeEvent([]byte(input))
			require.Error(t, err)
		})
	}
}

func TestCustomEventKeepsItsFields(t *testing.T) {
	t.Parallel()
	input := `{"created_at":3,"event":"CustomEvent","agent_id":"a","run_id":"r1","nested_depth":0,"tool_call_id":"c1","warning_type":"transcript_persistence_failed","count":2,"ratio":0.5}`
	event, err := DecodeEvent([]byte(input))
	require.NoError(t, err)
	custom, ok := event.(*CustomEvent)
	require.True(t, ok)
	require.Equal(t, "c1", custom.ToolCallID)
	require.Equal(t, map[string]any{
		"warning_type": "transcript_persistence_failed",
		"count":        json.Number("2"),
		"ratio":        json.Number("0.5"),
	}, custom.Fields)

	encoded, err := json.Marshal(custom)
	require.NoError(t, err)
	require.JSONEq(t, input, string(encoded))

	// Typed fields win over a colliding Fields key.
	custom.Fields["run_id"] = "ignored"
	encoded, err = json.Marshal(custom)
	require.NoError(t, err)
	require.Contains(t, string(encoded), `"run_id":"r1"`)
	require.NotContains(t, string(encoded), "ignored")
}

func TestEventEncodingLeavesHTMLToTheCaller(t *testing.T) {
	t.Parallel()
	event := &RunContent{Content: "<b>&</b>"}

	wire, err := marshalJSON(event)
	require.NoError(t, err)
	require.Contains(t, string(wire), `"content":"<b>&</b>"`, "frames are written without HTML escaping")

	escaped, err := json.Marshal(event)
	require.NoError(t, err)
	require.Contains(t, string(escaped), `\u003cb\u003e\u0026`, "json.Marshal still escapes")
}

func TestBaseEventKeysFollowTheStruct(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{
		"created_at", "event", "agent_id", "agent_name", "team_id", "team_name", "run_id", "parent_run_id", "session_id",
		"workflow_id", "workflow_name", "workflow_run_id", "step_id", "parent_step_id", "step_name", "step_index", "nested_depth",
		"tools", "content", "event_index",
	}, baseEventKeys)
}

func TestEveryEventTypeEmbedsBaseEvent(t *testing.T) {
	t.Parallel()
	for name, factory := range eventFactories {
		event := factory()
		value := reflect.ValueOf(event).Elem()
		field, ok := value.Type().FieldByName("BaseEvent")
		require.True(t, ok, name)
		require.True(t, field.Anonymous, name)
		require.Same(t, value.FieldByName("BaseEvent").Addr().Interface(), event.Base(), name)
	}
}

func TestTeamEventName(t *testing.T) {
	t.Parallel()
	require.Equal(t, EventTeamRunContent, TeamEventName(EventRunContent))
	require.Equal(t, EventTeamRunRetry, TeamEventName(EventRunRetry))
	require.Equal(t, EventCustom, TeamEventName(EventCustom))
}

func TestTeamEventsGoByTheirTeamNames(t *testing.T) {
	t.Parallel()
	e := &RunContent{BaseEvent: BaseEvent{TeamID: "research", TeamName: "Research", RunID: "r1"}, Content: "hi"}
	require.Equal(t, EventTeamRunContent, NameOf(e))
	data, err := EncodeEvent(e)
	require.NoError(t, err)
	require.JSONEq(t, `{"created_at":0,"event":"TeamRunContent","team_id":"research","team_name":"Research","run_id":"r1",
		"nested_depth":0,"content":"hi","workflow_agent":false,"content_type":"str"}`, string(data))

	decoded, err := DecodeEvent(data)
	require.NoError(t, err)
	content, ok := decoded.(*RunContent)
	require.True(t, ok, "a team event decodes to its agent event's type, got %T", decoded)
	require.Equal(t, "research", content.TeamID)
	again, err := EncodeEvent(decoded)
	require.NoError(t, err)
	require.JSONEq(t, string(data), string(again))

	// A member's event keeps its agent name, with or without a team id.
	member := &RunCompleted{BaseEvent: BaseEvent{AgentID: "writer", TeamID: "research"}}
	require.Equal(t, EventRunCompleted, NameOf(member))
	require.Equal(t, EventCustom, NameOf(&CustomEvent{BaseEvent: BaseEvent{TeamID: "research"}}))
}

func TestMemberEventsNeverEndTheirParent(t *testing.T) {
	t.Parallel()
	own := &RunCompleted{BaseEvent: BaseEvent{AgentID: "writer", RunID: "member-run"}, Content: "done"}
	member := AsMember(own)
	_, final := FinalStatus(member)
	require.False(t, final)
	member.Base().SetIndex(7)
	member.Base().ParentRunID = "team-run"
	require.Nil(t, own.EventIndex, "the member's own event is left as it was")
	require.Empty(t, own.ParentRunID)
	require.Equal(t, EventRunCompleted, NameOf(member))
	data, err := EncodeEvent(member)
	require.NoError(t, err)
	require.Contains(t, string(data), `"parent_run_id":"team-run"`)
	require.Contains(t, string(data), `"event_index":7`)

	require.True(t, EndsRun("team-run", EventTeamRunCompleted, []byte(`{"run_id":"team-run"}`)))
	require.False(t, EndsRun("team-run", EventRunCompleted, data), "a member's end in the team's stream")
	require.True(t, EndsRun("member-run", EventRunCompleted, data))
	require.False(t, EndsRun("team-run", EventRunContent, []byte(`{"run_id":"team-run"}`)))
	require.True(t, FinalEventName(EventTeamRunPaused))
	require.False(t, FinalEventName(EventTeamRunContent))
}
