package run

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOutputRoundTrip(t *testing.T) {
	t.Parallel()
	out := fixtureOutput()
	out.Events = append(out.Events, mustDecodeEvent(t, `{"created_at":1,"event":"TeamRunContent","team_id":"t1","nested_depth":0,"content":"x"}`))

	first, err := json.Marshal(out)
	require.NoError(t, err)

	var back Output
	require.NoError(t, json.Unmarshal(first, &back))
	require.Len(t, back.Events, 4)
	require.IsType(t, &RunStarted{}, back.Events[0])
	require.IsType(t, &RunContent{}, back.Events[1])
	require.IsType(t, &RunRetry{}, back.Events[2])
	require.IsType(t, &GenericEvent{}, back.Events[3])
	index, ok := back.Events[1].Base().Index()
	require.True(t, ok, "stored events keep their index")
	require.EqualValues(t, 3, index)

	second, err := json.Marshal(&back)
	require.NoError(t, err)
	// Metadata decodes into plain maps, so only its key order may change.
	require.JSONEq(t, string(first), string(second))
}

func TestOutputPlaceholderFieldsKeepTheirTags(t *testing.T) {
	t.Parallel()
	// Storage relies on these names and tags.
	out := Output{
		RunID: "r", AgentID: "a", AgentName: "n", TeamID: "t", WorkflowID: "w", SessionID: "s",
		ParentRunID: "p", UserID: "u", Content: "c", Status: StatusCompleted,
		Metadata: map[string]any{"k": "v"}, CreatedAt: 7,
	}
	data, err := json.Marshal(out)
	require.NoError(t, err)
	require.JSONEq(t, `{"run_id":"r","agent_id":"a","agent_name":"n","team_id":"t","workflow_id":"w","session_id":"s",
		"parent_run_id":"p","user_id":"u","content":"c","status":"COMPLETED","metadata":{"k":"v"},"created_at":7}`, string(data))

	data, err = json.Marshal(Output{})
	require.NoError(t, err)
	require.Equal(t, `{}`, string(data))
}

func TestOutputKeepsEmptyListsButNotNilOnes(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(Output{Tools: []*ToolExecution{}, Requirements: nil})
	require.NoError(t, err)
	require.Equal(t, `{"tools":[]}`, string(data))
}

func TestOutputRejectsCorruptEvents(t *testing.T) {
	t.Parallel()
	var out Output
	err := json.Unmarshal([]byte(`{"run_id":"r","events":[{"event":"RunStarted","created_at":"soon"}]}`), &out)
	require.ErrorContains(t, err, "decode run event 0")
}

func TestOutputAttempts(t *testing.T) {
	t.Parallel()
	var out Output
	attempts, err := out.Attempts()
	require.NoError(t, err)
	require.Nil(t, attempts)

	failed := Attempt{Attempt: 1, Error: new("overloaded"), StartedAt: 10, EndedAt: 12}
	succeeded := Attempt{Attempt: 2, StartedAt: 13, EndedAt: 20}
	require.NoError(t, out.AppendAttempt(failed))
	require.NoError(t, out.AppendAttempt(succeeded))

	attempts, err = out.Attempts()
	require.NoError(t, err)
	require.Equal(t, []Attempt{failed, succeeded}, attempts)
	require.True(t, attempts[0].Failed())
	require.False(t, attempts[1].Failed())

	data, err := json.Marshal(out)
	require.NoError(t, err)
	require.Equal(t, `{"metadata":{"attempts":[{"attempt":1,"error":"overloaded","started_at":10,"ended_at":12},{"attempt":2,"error":null,"started_at":13,"ended_at":20}]}}`, string(data))

	// After a storage round trip the list is plain maps; reading and appending still work.
	var stored Output
	require.NoError(t, json.Unmarshal(data, &stored))
	require.IsType(t, []any{}, stored.Metadata[MetadataAttempts])
	third := Attempt{Attempt: 3, StartedAt: 21, EndedAt: 22}
	require.NoError(t, stored.AppendAttempt(third))
	attempts, err = stored.Attempts()
	require.NoError(t, err)
	require.Equal(t, []Attempt{failed, succeeded, third}, attempts)

	stored.Metadata[MetadataAttempts] = "garbage"
	_, err = stored.Attempts()
	require.ErrorContains(t, err, `read run metadata "attempts"`)
	require.Error(t, stored.AppendAttempt(third))
}

func TestOutputWarnings(t *testing.T) {
	t.Parallel()
	out := Output{Metadata: map[string]any{"other": 1}}
	warning := Warning{Type: "transcript_persistence_failed", Message: "mirror failed", Error: "disk full"}
	require.NoError(t, out.AppendWarning(warning))
	warnings, err := out.Warnings()
	require.NoError(t, err)
	require.Equal(t, []Warning{warning}, warnings)
	require.Equal(t, 1, out.Metadata["other"])
}

func TestOutputAndInputContentString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "hi", (&Output{Content: "hi"}).ContentString())
	require.Equal(t, `{"answer":42}`, (&Output{Content: map[string]any{"answer": 42}}).ContentString())
	require.Empty(t, (&Output{}).ContentString())
	require.Equal(t, `[{"text":"<hi>","type":"text"}]`, (&Input{InputContent: []any{map[string]any{"type": "text", "text": "<hi>"}}}).ContentString())
	require.Empty(t, (*Input)(nil).ContentString())
}

func TestMessageJSON(t *testing.T) {
	t.Parallel()
	message := NewMessage(RoleUser, "hello", time.Unix(fixedCreatedAt, 0))
	require.Len(t, message.ID, 36)
	require.EqualValues(t, fixedCreatedAt, message.CreatedAt)

	for _, original := range fixtureMessages() {
		data, err := json.Marshal(original)
		require.NoError(t, err)
		var back Message
		require.NoError(t, json.Unmarshal(data, &back))
		again, err := json.Marshal(&back)
		require.NoError(t, err)
		require.Equal(t, string(data), string(again))
	}

	data, err := json.Marshal(ToolCall{ID: "c", Function: ToolCallFunction{Name: "f", Arguments: "{}"}})
	require.NoError(t, err)
	require.Equal(t, `{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}`, string(data))
}

func TestMessageContentString(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		content any
		want    string
	}{
		"string":           {"hi", "hi"},
		"nil":              {nil, ""},
		"empty list":       {[]any{}, ""},
		"text part first":  {[]any{map[string]any{"type": "text", "text": "a"}, "b"}, "a"},
		"no text part":     {[]any{map[string]any{"type": "image"}}, `[{"type":"image"}]`},
		"other value kind": {42, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, (&Message{Content: tc.content}).ContentString())
		})
	}
}

func TestMediaContent(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(Image{ID: "i", Content: []byte{1, 2, 3}})
	require.NoError(t, err)
	require.Equal(t, `{"id":"i","content":"AQID"}`, string(data))

	var image Image
	require.NoError(t, json.Unmarshal([]byte(`{"id":"i","content":"not base64!"}`), &image))
	require.Equal(t, []byte("not base64!"), image.Content, "invalid base64 is kept as text")

	var audio Audio
	require.NoError(t, json.Unmarshal([]byte(`{"content":"AQID","sample_rate":24000,"channels":1}`), &audio))
	require.Equal(t, Audio{Content: []byte{1, 2, 3}, SampleRate: 24000, Channels: 1}, audio)

	var video Video
	require.NoError(t, json.Unmarshal([]byte(`{"url":"u"}`), &video))
	require.Nil(t, video.Content)

	text := File{MimeType: "text/csv", Content: []byte("a,b\n1,2")}
	data, err = json.Marshal(text)
	require.NoError(t, err)
	require.Equal(t, `{"content":"a,b\n1,2","mime_type":"text/csv"}`, string(data))
	var file File
	require.NoError(t, json.Unmarshal(data, &file))
	require.Equal(t, text, file)

	binary := File{MimeType: "application/pdf", Content: []byte{0xff, 0x00}}
	data, err = json.Marshal(binary)
	require.NoError(t, err)
	require.Equal(t, `{"content":"/wA=","mime_type":"application/pdf"}`, string(data))
	file = File{}
	require.NoError(t, json.Unmarshal(data, &file))
	require.Equal(t, binary, file)

	invalidText := File{MimeType: "text/plain", Content: []byte{0xff}}
	data, err = json.Marshal(invalidText)
	require.NoError(t, err)
	require.Equal(t, `{"content":"/w==","mime_type":"text/plain"}`, string(data), "non-UTF-8 text falls back to base64")
}

func mustDecodeEvent(t *testing.T, data string) Event {
	t.Helper()
	event, err := DecodeEvent([]byte(data))
	require.NoError(t, err)
	return event
}
