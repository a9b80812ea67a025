package run

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGoldenEvents pins the JSON of every agent event type, one file each.
func TestGoldenEvents(t *testing.T) {
	t.Parallel()
	for name, event := range fixtureEvents() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := marshalJSON(event)
			require.NoError(t, err)
			assertGolden(t, "event_"+name, got)
		})
	}
}

// TestGoldenTypes pins the JSON of the data types.
func TestGoldenTypes(t *testing.T) {
	t.Parallel()
	session := &SessionMetrics{}
	session.AccumulateFromRun(fixtureRunMetrics())
	session.AccumulateFromRun(fixtureRunMetrics())

	cases := map[string]any{
		"output":               fixtureOutput(),
		"output_minimal":       &Output{RunID: "run-1", Status: StatusRunning, CreatedAt: fixedCreatedAt},
		"messages":             fixtureMessages(),
		"input":                fixtureInput(),
		"tool_execution":       fixtureTool(),
		"tool_execution_empty": &ToolExecution{},
		"requirement":          fixtureRequirement(),
		"requirement_user_input": func() *Requirement {
			tool := &ToolExecution{
				ToolCallID: "call-3", ToolName: "book_flight", CreatedAt: fixedCreatedAt, RequiresUserInput: true,
				UserInputSchema: []UserInputField{{Name: "date", FieldType: "str", Description: "Departure date"}, {Name: "seats", FieldType: "int"}},
				UserFeedbackSchema: []UserFeedbackQuestion{{
					Question: "Which class?", Options: []UserFeedbackOption{{Label: "economy"}, {Label: "business", Description: "lie-flat"}},
				}},
			}
			req := NewRequirement(tool, fixedTime)
			req.ID = "req-2"
			req.MemberAgentID, req.MemberAgentName, req.MemberRunID = "member-1", "Booker", "member-run-1"
			return req
		}(),
		"run_metrics":     fixtureRunMetrics(),
		"session_metrics": session,
		"model_metrics":   fixtureModelMetrics(),
		"message_metrics": MessageMetrics{Metrics: Metrics{InputTokens: 5, Cost: new(0.0)}, Duration: 0.5},
		"metrics_empty":   Metrics{},
		"media": map[string]any{
			"image":     Image{ID: "img-1", Format: "png", MimeType: "image/png", Detail: "high", AltText: "a <cat> & a dog", Content: []byte{0x89, 'P', 'N', 'G'}},
			"audio":     Audio{ID: "aud-1", Format: "wav", MimeType: "audio/wav", Duration: 1.5, SampleRate: 24000, Channels: 1, Transcript: "hello", Content: []byte("RIFF")},
			"video":     Video{ID: "vid-1", URL: "https://example.com/v.mp4", Format: "mp4", Width: 640, Height: 480, FPS: 29.97, ETA: "30s"},
			"file_text": File{ID: "file-1", Filename: "notes.txt", MimeType: "text/plain", Content: []byte("line one\nline two"), Size: 17},
			"file_bin":  File{ID: "file-2", Filepath: "/tmp/report.pdf", MimeType: "application/pdf", Format: "pdf", Content: []byte{0x25, 0x50, 0x44, 0x46}},
		},
		"reasoning_step": []ReasoningStepData{
			{Title: new("Plan"), Action: new("I will look it up"), NextAction: new(NextActionContinue), Confidence: new(0.8)},
			{},
		},
		"session_summary": SessionSummary{Summary: "Weather chat", UpdatedAt: fixedTime},
		"attempts": []Attempt{
			{Attempt: 1, Error: new("overloaded"), StartedAt: fixedCreatedAt, EndedAt: fixedCreatedAt + 2},
			{Attempt: 2, StartedAt: fixedCreatedAt + 3, EndedAt: fixedCreatedAt + 9},
		},
		"generic_team_event": func() Event {
			event, err := DecodeEvent([]byte(`{"created_at":1767000000,"event":"TeamRunContent","team_id":"team-1","team_name":"","run_id":"run-1","nested_depth":0,"content":"Hi","content_type":"str"}`))
			require.NoError(t, err)
			event.Base().SetIndex(7)
			return event
		}(),
	}
	for name, value := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := marshalJSON(value)
			require.NoError(t, err)
			assertGolden(t, name, got)
		})
	}
}
