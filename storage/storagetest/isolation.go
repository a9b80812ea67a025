package storagetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

// The isolation tests pin down the promise of user scoping: with a non-empty
// user id a call never returns, overwrites or deletes another user's rows (nor
// rows without a user), and reports them as [storage.ErrNotFound]. The
// intruder is always bob; alice owns the data.
func isolationTests() []conformanceTest {
	return []conformanceTest{
		{"Sessions", testIsolationSessions},
		{"Runs", testIsolationRuns},
		{"Transcripts", testIsolationTranscripts},
		{"Memories", testIsolationMemories},
		{"UnscopedSeesEverything", testIsolationUnscoped},
	}
}

// requireHidden asserts that a scoped listing of another user's rows either
// reports ErrNotFound or returns nothing. The contract allows both; it never
// allows returning the rows.
func requireHidden[T any](t *testing.T, rows []T, err error, what string) {
	t.Helper()
	if err != nil {
		require.ErrorIs(t, err, storage.ErrNotFound, what)
		return
	}
	require.Empty(t, rows, "%s: another user's rows leaked", what)
}

// isolationFixture stores alice's full session s-alice with two runs, bob's
// session s-bob with one run, and an unowned session s-nobody.
func isolationFixture(t *testing.T, store storage.Store) *storage.Session {
	t.Helper()
	aliceSession := putSession(t, store, fullSession("s-alice"))
	newSession(t, store, "s-bob", bob)
	newSession(t, store, "s-nobody", "")
	newRun(t, store, "s-alice", "r-alice-1", alice)
	newRun(t, store, "s-alice", "r-alice-2", alice)
	newRun(t, store, "s-bob", "r-bob-1", bob)
	return aliceSession
}

// requireAliceSessionIntact asserts that s-alice still reads back as stored,
// with both of its runs.
func requireAliceSessionIntact(t *testing.T, store storage.Store, want *storage.Session) {
	t.Helper()
	got, err := store.GetSession(t.Context(), "s-alice", storage.GetSessionOptions{IncludeRuns: true})
	require.NoError(t, err, "alice's session must survive")
	requireSessionEqual(t, want, got)
	require.Equal(t, want.CreatedAt, got.CreatedAt)
	require.Equal(t, []string{"r-alice-1", "r-alice-2"}, outputRunIDs(got.Runs))
}

func testIsolationSessions(t *testing.T, store storage.Store) {
	ctx := t.Context()
	aliceSession := isolationFixture(t, store)

	for _, opts := range []storage.GetSessionOptions{
		{UserID: bob},
		{UserID: bob, IncludeRuns: true},
		{UserID: bob, ContextRuns: 5},
	} {
		_, err := store.GetSession(ctx, "s-alice", opts)
		require.ErrorIs(t, err, storage.ErrNotFound, "bob reads alice's session with %+v", opts)
	}
	_, err := store.GetSession(ctx, "s-nobody", storage.GetSessionOptions{UserID: bob})
	require.ErrorIs(t, err, storage.ErrNotFound, "a scoped read sees only the user's own rows, not unowned ones")
	got, err := store.GetSession(ctx, "s-alice", storage.GetSessionOptions{UserID: alice})
	require.NoError(t, err, "alice reads her own session")
	requireSessionEqual(t, aliceSession, got)

	// Listings and their totals.
	for _, q := range []storage.SessionQuery{
		{UserID: bob},
		{UserID: bob, Page: storage.Page{Limit: 1, Page: 1}},
		{UserID: bob, Name: "paris"},
		{UserID: bob, Type: storage.SessionTypeTeam},
	} {
		sessions, total, err := store.ListSessions(ctx, q)
		require.NoError(t, err)
		for _, s := range sessions {
			require.Equal(t, bob, s.UserID, "bob's listing %+v returned %s", q, s.SessionID)
		}
		want := 0
		if q.Name == "" && q.Type == "" {
			want = 1
		}
		require.Equal(t, want, total, "bob's total for %+v counts his sessions only", q)
	}

	// Overwrites are refused and change nothing.
	hijack := &storage.Session{SessionID: "s-alice", SessionType: storage.SessionTypeAgent, AgentID: "agent-evil",
		UserID: bob, SessionData: map[string]any{storage.SessionNameKey: "pwned"}}
	_, err = store.UpsertSession(ctx, hijack)
	require.ErrorIs(t, err, storage.ErrNotFound, "bob overwrites alice's session")
	_, err = store.UpsertSession(ctx, &storage.Session{SessionID: "s-nobody", SessionType: storage.SessionTypeAgent,
		AgentID: "agent-evil", UserID: bob})
	require.ErrorIs(t, err, storage.ErrNotFound, "bob claims an unowned session")
	nobody, err := store.GetSession(ctx, "s-nobody", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Empty(t, nobody.UserID)
	require.Equal(t, "agent-1", nobody.AgentID)

	_, err = store.RenameSession(ctx, "s-alice", bob, "pwned")
	require.ErrorIs(t, err, storage.ErrNotFound, "bob renames alice's session")

	require.ErrorIs(t, store.DeleteSession(ctx, "s-alice", bob), storage.ErrNotFound, "bob deletes alice's session")
	requireAliceSessionIntact(t, store, aliceSession)

	// Alice keeps full control of her own session.
	_, err = store.RenameSession(ctx, "s-alice", alice, "Mine")
	require.NoError(t, err)
	require.NoError(t, store.DeleteSession(ctx, "s-alice", alice))
	_, err = store.GetSession(ctx, "s-alice", storage.GetSessionOptions{})
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testIsolationRuns(t *testing.T, store storage.Store) {
	ctx := t.Context()
	aliceSession := isolationFixture(t, store)
	aliceRun, err := store.GetRun(ctx, "r-alice-1", "")
	require.NoError(t, err)

	_, err = store.GetRun(ctx, "r-alice-1", bob)
	require.ErrorIs(t, err, storage.ErrNotFound, "bob reads alice's run")
	got, err := store.GetRun(ctx, "r-alice-1", alice)
	require.NoError(t, err, "alice reads her own run")
	requireRunEqual(t, aliceRun.Run, got.Run)

	runs, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: "s-alice", UserID: bob})
	requireHidden(t, runs, err, "bob lists alice's runs")
	if err == nil {
		require.Zero(t, total, "bob's total counts none of alice's runs")
	}
	runs, total, err = store.GetRuns(ctx, storage.RunQuery{SessionID: "s-bob", UserID: bob})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, []string{"r-bob-1"}, recordRunIDs(runs))

	contextRuns, err := store.ContextRuns(ctx, "s-alice", bob, 10)
	requireHidden(t, contextRuns, err, "bob reads alice's context runs")
	contextRuns, err = store.ContextRuns(ctx, "s-alice", alice, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"r-alice-1", "r-alice-2"}, outputRunIDs(contextRuns))

	// Bob cannot add a run to alice's session.
	_, err = store.UpsertRun(ctx, testRun("s-alice", "r-intruder", bob))
	require.ErrorIs(t, err, storage.ErrNotFound, "bob writes a run into alice's session")
	_, err = store.GetRun(ctx, "r-intruder", "")
	require.ErrorIs(t, err, storage.ErrNotFound, "the refused run was not written")

	// Nor overwrite alice's run, through her session or his own.
	overwrite := testRun("s-alice", "r-alice-1", bob)
	overwrite.Run.Content = "pwned"
	_, err = store.UpsertRun(ctx, overwrite)
	require.ErrorIs(t, err, storage.ErrNotFound, "bob overwrites alice's run in her session")
	steal := testRun("s-bob", "r-alice-1", bob)
	steal.Run.Content = "pwned"
	_, err = store.UpsertRun(ctx, steal)
	require.Error(t, err, "bob moves alice's run into his session")

	// Nor delete it.
	require.ErrorIs(t, store.DeleteRun(ctx, "r-alice-1", bob), storage.ErrNotFound, "bob deletes alice's run")

	got, err = store.GetRun(ctx, "r-alice-1", "")
	require.NoError(t, err)
	require.Equal(t, "s-alice", got.SessionID)
	require.Equal(t, alice, got.UserID)
	requireRunEqual(t, aliceRun.Run, got.Run)
	requireAliceSessionIntact(t, store, aliceSession)
	runs, _, err = store.GetRuns(ctx, storage.RunQuery{SessionID: "s-bob"})
	require.NoError(t, err)
	require.Equal(t, []string{"r-bob-1"}, recordRunIDs(runs), "bob's session gained nothing")

	// Alice keeps full control of her own runs.
	update := testRun("s-alice", "r-alice-2", alice)
	update.Run.Content = "revised"
	putRun(t, store, update)
	require.NoError(t, store.DeleteRun(ctx, "r-alice-2", alice))
	_, err = store.GetRun(ctx, "r-alice-2", "")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testIsolationTranscripts(t *testing.T, store storage.Store) {
	ctx := t.Context()
	newSession(t, store, "s-alice", alice)
	newSession(t, store, "s-bob", bob)
	aliceMain := storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-alice"}
	aliceSub := withSubpath(aliceMain, "subagents/agent-a")
	bobMain := storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-bob"}
	appendEntries(t, store, aliceMain, "s-alice", alice, 2)
	appendEntries(t, store, aliceSub, "s-alice", alice, 1)
	appendEntries(t, store, bobMain, "s-bob", bob, 1)

	// Reads and listings.
	for _, key := range []storage.TranscriptKey{aliceMain, aliceSub} {
		entries, err := store.ReadTranscript(ctx, key, bob, 0)
		requireHidden(t, entries, err, "bob reads alice's transcript")
	}
	entries, err := store.ReadTranscript(ctx, bobMain, alice, 0)
	requireHidden(t, entries, err, "alice reads bob's transcript")
	sessions, err := store.ListTranscriptSessions(ctx, "claude-agent-sdk", "agent-1", bob)
	require.NoError(t, err)
	require.Equal(t, []string{"cli-bob"}, sessions, "bob lists his CLI sessions only")
	sessions, err = store.ListTranscriptSessions(ctx, "claude-agent-sdk", "agent-1", alice)
	require.NoError(t, err)
	require.Equal(t, []string{"cli-alice"}, sessions, "alice lists her CLI sessions only")
	subpaths, err := store.ListTranscriptSubpaths(ctx, "claude-agent-sdk", "agent-1", "cli-alice", bob)
	requireHidden(t, subpaths, err, "bob lists alice's subagents")
	subpaths, err = store.ListTranscriptSubpaths(ctx, "claude-agent-sdk", "agent-1", "cli-alice", alice)
	require.NoError(t, err)
	require.Equal(t, []string{"subagents/agent-a"}, subpaths)

	// Appends to alice's agno session are refused, to a new key or to hers.
	fresh := storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-intruder"}
	_, err = store.AppendTranscript(ctx, fresh, "s-alice", bob, transcriptLines(1))
	require.ErrorIs(t, err, storage.ErrNotFound, "bob appends to alice's session")
	require.Empty(t, readPositions(t, store, fresh), "the refused append wrote nothing")
	_, err = store.AppendTranscript(ctx, aliceMain, "s-alice", bob, transcriptLines(1))
	require.ErrorIs(t, err, storage.ErrNotFound, "bob appends to alice's transcript")
	_, err = store.UpsertSession(ctx, &storage.Session{SessionID: "s-bob-own", SessionType: storage.SessionTypeAgent, UserID: bob})
	require.NoError(t, err)
	_, err = store.AppendTranscript(ctx, aliceMain, "s-bob-own", bob, transcriptLines(1))
	require.ErrorIs(t, err, storage.ErrNotFound, "bob appends to alice's transcript under his own session")

	// Deletes by bob leave alice's transcripts alone. The contract does not
	// say what DeleteTranscript reports for rows the caller cannot see, only
	// that they stay.
	_ = store.DeleteTranscript(ctx, "claude-agent-sdk", "agent-1", "cli-alice", bob)
	require.ErrorIs(t, store.DeleteSession(ctx, "s-alice", bob), storage.ErrNotFound)

	entries, err = store.ReadTranscript(ctx, aliceMain, alice, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, positions(entries), "alice's transcript is untouched")
	entries, err = store.ReadTranscript(ctx, aliceSub, alice, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, positions(entries))

	// Alice appends and deletes her own.
	require.Equal(t, []int64{3}, positions(appendEntries(t, store, aliceMain, "s-alice", alice, 1)))
	require.NoError(t, store.DeleteTranscript(ctx, "claude-agent-sdk", "agent-1", "cli-alice", alice))
	require.Empty(t, readPositions(t, store, aliceMain))
	require.Equal(t, []int64{1}, readPositions(t, store, bobMain), "alice's delete leaves bob's transcript")
}

func testIsolationMemories(t *testing.T, store storage.Store) {
	ctx := t.Context()
	aliceMemory := putMemory(t, store, &storage.Memory{MemoryID: "m-alice", Memory: "Likes tea", UserID: alice,
		Topics: []string{"food"}, CreatedAt: 100, UpdatedAt: 100})
	newMemory(t, store, "m-bob", bob)
	newMemory(t, store, "m-nobody", "")

	_, err := store.GetMemory(ctx, "m-alice", bob)
	require.ErrorIs(t, err, storage.ErrNotFound, "bob reads alice's memory")
	_, err = store.GetMemory(ctx, "m-nobody", bob)
	require.ErrorIs(t, err, storage.ErrNotFound, "a scoped read sees only the user's own rows")
	got, err := store.GetMemory(ctx, "m-alice", alice)
	require.NoError(t, err)
	requireMemoryEqual(t, aliceMemory, got)

	for _, q := range []storage.MemoryQuery{
		{UserID: bob},
		{UserID: bob, Page: storage.Page{Limit: 1, Page: 1}},
	} {
		memories, total, err := store.ListMemories(ctx, q)
		require.NoError(t, err)
		require.Equal(t, []string{"m-bob"}, memoryIDs(memories))
		require.Equal(t, 1, total, "bob's total counts his memories only")
	}
	memories, total, err := store.ListMemories(ctx, storage.MemoryQuery{UserID: bob, Search: "tea"})
	require.NoError(t, err)
	require.Empty(t, memories)
	require.Zero(t, total)

	_, err = store.UpsertMemory(ctx, &storage.Memory{MemoryID: "m-alice", Memory: "pwned", UserID: bob})
	require.ErrorIs(t, err, storage.ErrNotFound, "bob overwrites alice's memory")
	deleted, err := store.DeleteMemories(ctx, []string{"m-alice", "m-nobody", "m-bob"}, bob)
	require.NoError(t, err)
	require.Equal(t, 1, deleted, "bob deletes only his own memory")

	got, err = store.GetMemory(ctx, "m-alice", "")
	require.NoError(t, err)
	requireMemoryEqual(t, aliceMemory, got)
	_, err = store.GetMemory(ctx, "m-nobody", "")
	require.NoError(t, err)
	_, err = store.GetMemory(ctx, "m-bob", "")
	require.ErrorIs(t, err, storage.ErrNotFound)

	deleted, err = store.DeleteMemories(ctx, []string{"m-alice"}, alice)
	require.NoError(t, err)
	require.Equal(t, 1, deleted, "alice deletes her own memory")
}

func testIsolationUnscoped(t *testing.T, store storage.Store) {
	ctx := t.Context()
	isolationFixture(t, store)
	appendEntries(t, store, storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-alice"}, "s-alice", alice, 1)
	appendEntries(t, store, storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-bob"}, "s-bob", bob, 1)
	newMemory(t, store, "m-alice", alice)
	newMemory(t, store, "m-bob", bob)

	sessions, total, err := store.ListSessions(ctx, storage.SessionQuery{SortBy: "session_id", SortOrder: storage.SortAsc})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Equal(t, []string{"s-alice", "s-bob", "s-nobody"}, sessionIDs(sessions))
	for _, sessionID := range []string{"s-alice", "s-bob", "s-nobody"} {
		_, err := store.GetSession(ctx, sessionID, storage.GetSessionOptions{})
		require.NoError(t, err, "an unscoped read sees %s", sessionID)
	}
	for _, runID := range []string{"r-alice-1", "r-bob-1"} {
		_, err := store.GetRun(ctx, runID, "")
		require.NoError(t, err, "an unscoped read sees %s", runID)
	}
	cliSessions, err := store.ListTranscriptSessions(ctx, "claude-agent-sdk", "agent-1", "")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"cli-alice", "cli-bob"}, cliSessions)
	memories, total, err := store.ListMemories(ctx, storage.MemoryQuery{SortBy: "memory_id", SortOrder: storage.SortAsc})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []string{"m-alice", "m-bob"}, memoryIDs(memories))

	// An unscoped call may also write and delete any user's rows.
	putRun(t, store, testRun("s-alice", "r-admin", ""))
	require.NoError(t, store.DeleteRun(ctx, "r-bob-1", ""))
	require.NoError(t, store.DeleteSession(ctx, "s-alice", ""))
	deleted, err := store.DeleteMemories(ctx, []string{"m-alice", "m-bob"}, "")
	require.NoError(t, err)
	require.Equal(t, 2, deleted)
}
