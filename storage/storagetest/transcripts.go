package storagetest

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

func transcriptTests() []conformanceTest {
	return []conformanceTest{
		{"PositionsFromOne", testTranscriptPositions},
		{"IndependentNumbering", testTranscriptIndependentNumbering},
		{"EntryIDs", testTranscriptEntryIDs},
		{"EntriesRoundTrip", testTranscriptRoundTrip},
		{"ReadAfterPosition", testTranscriptAfterPosition},
		{"ReadMissing", testTranscriptReadMissing},
		{"ListSessionsAndSubpaths", testTranscriptLists},
		{"Delete", testTranscriptDelete},
	}
}

// mainTranscript is the key most transcript tests write to.
var mainTranscript = storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-1"}

// entrySeq makes transcript uuids unique across the whole suite run.
var entrySeq atomic.Int64

// transcriptLines returns n JSONL-style entries, each with its own uuid.
func transcriptLines(n int) []json.RawMessage {
	lines := make([]json.RawMessage, n)
	for i := range lines {
		seq := entrySeq.Add(1)
		lines[i] = json.RawMessage(fmt.Sprintf(`{"type":"assistant","uuid":"entry-%d","message":{"content":"line %d"}}`, seq, seq))
	}
	return lines
}

// appendEntries appends n entries to key and returns what the store numbered.
func appendEntries(t *testing.T, store storage.Store, key storage.TranscriptKey, agnoSessionID, userID string, n int) []storage.TranscriptEntry {
	t.Helper()
	stored, err := store.AppendTranscript(t.Context(), key, agnoSessionID, userID, transcriptLines(n))
	require.NoError(t, err, "append to %+v", key)
	require.Len(t, stored, n)
	return stored
}

// positions returns the positions of entries, in order.
func positions(entries []storage.TranscriptEntry) []int64 {
	out := make([]int64, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Position)
	}
	return out
}

// readPositions reads a whole transcript and returns its positions.
func readPositions(t *testing.T, store storage.Store, key storage.TranscriptKey) []int64 {
	t.Helper()
	entries, err := store.ReadTranscript(t.Context(), key, "", 0)
	require.NoError(t, err)
	return positions(entries)
}

// withSubpath returns key for the subagent transcript at subpath.
func withSubpath(key storage.TranscriptKey, subpath string) storage.TranscriptKey {
	key.Subpath = subpath
	return key
}

func testTranscriptPositions(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	first := appendEntries(t, store, mainTranscript, "s-1", "", 3)
	require.Equal(t, []int64{1, 2, 3}, positions(first), "positions start at 1")
	for _, e := range first {
		require.Equal(t, "s-1", e.AgnoSessionID)
		require.Positive(t, e.CreatedAt)
	}
	second := appendEntries(t, store, mainTranscript, "s-1", "", 2)
	require.Equal(t, []int64{4, 5}, positions(second), "a later append continues after the last position")

	read, err := store.ReadTranscript(t.Context(), mainTranscript, "", 0)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4, 5}, positions(read))
	for i, e := range append(first, second...) {
		require.Equal(t, e.EntryID, read[i].EntryID)
		require.JSONEq(t, string(e.Entry), string(read[i].Entry))
		require.Equal(t, "s-1", read[i].AgnoSessionID)
	}

	empty, err := store.AppendTranscript(t.Context(), mainTranscript, "s-1", "", nil)
	require.NoError(t, err, "appending nothing is not an error")
	require.Empty(t, empty)
	require.Equal(t, []int64{6}, positions(appendEntries(t, store, mainTranscript, "s-1", "", 1)))
}

func testTranscriptIndependentNumbering(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	newSession(t, store, "s-2", "")
	appendEntries(t, store, mainTranscript, "s-1", "", 2)

	variants := map[string]struct {
		key           storage.TranscriptKey
		agnoSessionID string
	}{
		"Subpath":    {withSubpath(mainTranscript, "subagents/agent-a"), "s-1"},
		"Subpath2":   {withSubpath(mainTranscript, "subagents/agent-b"), "s-1"},
		"SessionID":  {storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-2"}, "s-2"},
		"ProjectKey": {storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-2", SessionID: "cli-1"}, "s-2"},
		"Framework":  {storage.TranscriptKey{Framework: "codex", ProjectKey: "agent-1", SessionID: "cli-1"}, "s-2"},
	}
	for name, v := range variants {
		stored := appendEntries(t, store, v.key, v.agnoSessionID, "", 2)
		require.Equal(t, []int64{1, 2}, positions(stored), "%s: each transcript numbers from 1", name)
	}
	require.Equal(t, []int64{3}, positions(appendEntries(t, store, mainTranscript, "s-1", "", 1)),
		"the main transcript is not disturbed by the others")
	for name, v := range variants {
		require.Equal(t, []int64{1, 2}, readPositions(t, store, v.key), name)
	}
}

func testTranscriptEntryIDs(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	entries := []json.RawMessage{
		json.RawMessage(`{"type":"user","uuid":"3f0c2a4e-uuid-from-cli","message":"hi"}`),
		json.RawMessage(`{"type":"summary","summary":"no uuid here"}`),
		json.RawMessage(`{"type":"summary","summary":"nor here"}`),
	}
	stored, err := store.AppendTranscript(t.Context(), mainTranscript, "s-1", "", entries)
	require.NoError(t, err)
	require.Len(t, stored, 3)
	require.Equal(t, "3f0c2a4e-uuid-from-cli", stored[0].EntryID, "entry_id is the entry's uuid")
	require.NotEmpty(t, stored[1].EntryID, "an entry without uuid gets a generated id")
	require.NotEmpty(t, stored[2].EntryID)
	require.NotEqual(t, stored[1].EntryID, stored[2].EntryID, "generated ids are unique")
	require.NotEqual(t, stored[0].EntryID, stored[1].EntryID)

	read, err := store.ReadTranscript(t.Context(), mainTranscript, "", 0)
	require.NoError(t, err)
	require.Len(t, read, 3)
	for i := range stored {
		require.Equal(t, stored[i].EntryID, read[i].EntryID, "entry_id is stored, not regenerated on read")
	}

	more, err := store.AppendTranscript(t.Context(), mainTranscript, "s-1", "", entries[1:2])
	require.NoError(t, err)
	require.NotContains(t, []string{stored[1].EntryID, stored[2].EntryID}, more[0].EntryID)
}

func testTranscriptRoundTrip(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	entries := []json.RawMessage{
		json.RawMessage(`{"type":"user","uuid":"u-1","message":{"role":"user","content":[{"type":"text","text":"héllo \"quoted\" \\ 漢字 \u2028 😀"}]}}`),
		json.RawMessage(`{
			"type": "assistant",
			"uuid": "u-2",
			"parentUuid": "u-1",
			"usage": {"input_tokens": 12, "output_tokens": 3.5, "cache": null},
			"flags": [true, false, null, 0, -1e3],
			"empty": {}
		}`),
		json.RawMessage(`{"type":"system","subtype":"init","tools":[],"cwd":"/tmp/x y"}`),
	}
	stored, err := store.AppendTranscript(t.Context(), mainTranscript, "s-1", "", entries)
	require.NoError(t, err)
	read, err := store.ReadTranscript(t.Context(), mainTranscript, "", 0)
	require.NoError(t, err)
	require.Len(t, stored, len(entries))
	require.Len(t, read, len(entries))
	for i, entry := range entries {
		require.JSONEq(t, string(entry), string(stored[i].Entry), "stored entry %d", i)
		require.JSONEq(t, string(entry), string(read[i].Entry), "read entry %d", i)
	}
}

func testTranscriptAfterPosition(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	stored := appendEntries(t, store, mainTranscript, "s-1", "", 5)
	cases := []struct {
		after int64
		want  []int64
	}{
		{0, []int64{1, 2, 3, 4, 5}},
		{2, []int64{3, 4, 5}},
		{4, []int64{5}},
		{5, nil},
		{99, nil},
	}
	for _, tc := range cases {
		read, err := store.ReadTranscript(t.Context(), mainTranscript, "", tc.after)
		require.NoError(t, err)
		require.Equal(t, tc.want, nilIfEmpty(positions(read)), "after %d", tc.after)
		for _, e := range read {
			require.JSONEq(t, string(stored[e.Position-1].Entry), string(e.Entry))
		}
	}
}

func testTranscriptReadMissing(t *testing.T, store storage.Store) {
	read, err := store.ReadTranscript(t.Context(), mainTranscript, "", 0)
	require.NoError(t, err, "a transcript that was never written is empty, not an error")
	require.Empty(t, read)
	subpaths, err := store.ListTranscriptSubpaths(t.Context(), "claude-agent-sdk", "agent-1", "cli-missing", "")
	require.NoError(t, err)
	require.Empty(t, subpaths)
	sessions, err := store.ListTranscriptSessions(t.Context(), "claude-agent-sdk", "agent-1", "")
	require.NoError(t, err)
	require.Empty(t, sessions)
}

// transcriptListFixture stores transcripts of several CLI sessions, projects
// and frameworks, all owned by agno session s-1.
func transcriptListFixture(t *testing.T, store storage.Store) {
	t.Helper()
	newSession(t, store, "s-1", "")
	cli := func(framework, project, sessionID, subpath string) storage.TranscriptKey {
		return storage.TranscriptKey{Framework: framework, ProjectKey: project, SessionID: sessionID, Subpath: subpath}
	}
	for _, key := range []storage.TranscriptKey{
		cli("claude-agent-sdk", "agent-1", "cli-1", ""),
		cli("claude-agent-sdk", "agent-1", "cli-1", "subagents/agent-a"),
		cli("claude-agent-sdk", "agent-1", "cli-1", "subagents/agent-b"),
		cli("claude-agent-sdk", "agent-1", "cli-2", ""),
		cli("claude-agent-sdk", "agent-1", "cli-3", "subagents/agent-c"),
		cli("claude-agent-sdk", "agent-2", "cli-1", ""),
		cli("claude-agent-sdk", "agent-2", "cli-4", "subagents/agent-d"),
		cli("codex", "agent-1", "cli-1", "subagents/agent-e"),
		cli("codex", "agent-1", "cli-5", ""),
	} {
		appendEntries(t, store, key, "s-1", "", 2)
	}
}

func testTranscriptLists(t *testing.T, store storage.Store) {
	transcriptListFixture(t, store)
	sessions, err := store.ListTranscriptSessions(t.Context(), "claude-agent-sdk", "agent-1", "")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"cli-1", "cli-2", "cli-3"}, sessions, "each CLI session once, this framework and project only")

	sessions, err = store.ListTranscriptSessions(t.Context(), "codex", "agent-1", "")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"cli-1", "cli-5"}, sessions)

	cases := []struct {
		framework, project, sessionID string
		want                          []string
	}{
		{"claude-agent-sdk", "agent-1", "cli-1", []string{"subagents/agent-a", "subagents/agent-b"}},
		{"claude-agent-sdk", "agent-1", "cli-2", nil},
		{"claude-agent-sdk", "agent-1", "cli-3", []string{"subagents/agent-c"}},
		{"claude-agent-sdk", "agent-2", "cli-1", nil},
		{"codex", "agent-1", "cli-1", []string{"subagents/agent-e"}},
	}
	for _, tc := range cases {
		subpaths, err := store.ListTranscriptSubpaths(t.Context(), tc.framework, tc.project, tc.sessionID, "")
		require.NoError(t, err)
		require.ElementsMatch(t, tc.want, subpaths, "%s/%s/%s: subagents only, main transcript left out", tc.framework, tc.project, tc.sessionID)
	}
}

func testTranscriptDelete(t *testing.T, store storage.Store) {
	transcriptListFixture(t, store)
	require.NoError(t, store.DeleteTranscript(t.Context(), "claude-agent-sdk", "agent-1", "cli-1", ""))

	for _, subpath := range []string{"", "subagents/agent-a", "subagents/agent-b"} {
		require.Empty(t, readPositions(t, store, withSubpath(mainTranscript, subpath)), "subpath %q was not deleted", subpath)
	}
	sessions, err := store.ListTranscriptSessions(t.Context(), "claude-agent-sdk", "agent-1", "")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"cli-2", "cli-3"}, sessions)
	subpaths, err := store.ListTranscriptSubpaths(t.Context(), "claude-agent-sdk", "agent-1", "cli-1", "")
	require.NoError(t, err)
	require.Empty(t, subpaths)

	// Only that CLI session of that framework and project is gone.
	for _, key := range []storage.TranscriptKey{
		{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-2"},
		{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-3", Subpath: "subagents/agent-c"},
		{Framework: "claude-agent-sdk", ProjectKey: "agent-2", SessionID: "cli-1"},
		{Framework: "codex", ProjectKey: "agent-1", SessionID: "cli-1", Subpath: "subagents/agent-e"},
	} {
		require.Equal(t, []int64{1, 2}, readPositions(t, store, key), "%+v must survive", key)
	}
	_, err = store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{})
	require.NoError(t, err, "deleting a transcript keeps the agno session")

	// A transcript written again after deletion starts over.
	require.Equal(t, []int64{1}, positions(appendEntries(t, store, mainTranscript, "s-1", "", 1)))
}
