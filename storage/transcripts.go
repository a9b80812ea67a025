package storage

import "encoding/json"

// TranscriptKey names one mirrored transcript: the external agent framework
// (e.g. claude-agent-sdk), its project key, the CLI's own session id, and a
// subpath ("" for the main transcript, subagents/<name> for a subagent's).
type TranscriptKey struct {
	Framework  string
	ProjectKey string
	SessionID  string
	Subpath    string
}

// TranscriptEntry is one stored transcript line.
type TranscriptEntry struct {
	// Position orders entries within one transcript, from 1.
	Position int64
	// EntryID is the entry's uuid field, or a generated uuid when it has none.
	EntryID string
	// Entry is the JSON entry as the CLI wrote it.
	Entry json.RawMessage
	// AgnoSessionID is the agnogo session that owns the transcript.
	AgnoSessionID string
	// CreatedAt is epoch milliseconds.
	CreatedAt int64
}
