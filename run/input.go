package run

import (
	"encoding/json"
	"time"
)

// Input is what the caller passed to a run, kept apart from the messages built
// from it (Agno's RunInput).
type Input struct {
	// InputContent is the literal input: usually a string, but a list of
	// content parts or messages, or a structured object, are kept as given.
	InputContent any     `json:"input_content,omitempty"`
	Images       []Image `json:"images,omitempty"`
	Videos       []Video `json:"videos,omitempty"`
	Audios       []Audio `json:"audios,omitempty"`
	Files        []File  `json:"files,omitempty"`
	// OutputSchema asks this run for a structured answer: a JSON Schema whose
	// root is an object. It replaces the runner's own schema for the run and
	// is kept with the input, so a continued run keeps answering in it.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`

	// Where the run goes. These route the call and are not stored with the
	// input (the run row has its own columns for them).

	// SessionID continues a session; empty starts a new one.
	SessionID string `json:"-"`
	// UserID owns the run and scopes every read and write it makes.
	UserID string `json:"-"`
	// RunID preassigns the run's id (as a background acceptance does);
	// empty generates one.
	RunID string `json:"-"`
	// ParentRunID makes the run a child run of another (a team's
	// delegation to a member): it is stored with the run and stamped on its
	// events.
	ParentRunID string `json:"-"`
	// Metadata is stored on the run.
	Metadata map[string]any `json:"-"`
	// PersistOnStart saves the run as RUNNING before the model is first
	// called, so the run is listed while in flight and a crash leaves
	// evidence. AgentOS sets it; by default a run is saved when it ends.
	PersistOnStart bool `json:"-"`
	// PersistDelay, with PersistOnStart, lets a new run go this long
	// before its RUNNING row is written: the row is written at the run's
	// first progress save after that (once a batch of tool results is in),
	// and a run that ends sooner, or makes no progress save, writes only
	// its final row — one commit instead of two. Nobody sees the run in
	// flight meanwhile, so a caller that streams its events leaves it zero
	// (RunStarted then follows the row). AgentOS sets it for runs answered
	// with stream=false.
	PersistDelay time.Duration `json:"-"`
	// NewSession says the caller made SessionID up for this run (AgentOS,
	// for a request without a session_id): no session of that id can be
	// stored, so the run does not look for one.
	NewSession bool `json:"-"`
	// Accepted is set when the run's PENDING row was written as it was
	// accepted, before it started (a background run): the run keeps that
	// row's created_at. runhost.RecordPending sets it.
	Accepted bool `json:"-"`
	// SessionState is merged into the session's state (key by key) before
	// the run; the merged state is saved with the session.
	SessionState map[string]any `json:"-"`
}

// ContentString renders InputContent as text: a string as is, anything else as
// its JSON, which is how Agno shows a structured input in run listings.
func (in *Input) ContentString() string {
	if in == nil || in.InputContent == nil {
		return ""
	}
	if text, ok := in.InputContent.(string); ok {
		return text
	}
	encoded, err := marshalJSON(in.InputContent)
	if err != nil {
		return ""
	}
	return string(encoded)
}
