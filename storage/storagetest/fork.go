package storagetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// The fork tests pin down [storage.SessionStore.ForkSession]: the copy of
// the session row, the copy of every run under a new id with its links
// pointing into the fork, the source left as it was, user scoping, and
// nothing written by a fork that fails.
func forkTests() []conformanceTest {
	return []conformanceTest{
		{"CopiesSessionAndRelinksRuns", testForkCopies},
		{"KeepsRunOrder", testForkKeepsOrder},
		{"EmptySession", testForkEmptySession},
		{"MissingSessionWritesNothing", testForkMissing},
		{"OtherUsersSessionNotFound", testForkOtherUser},
		{"ForkIDTakenWritesNothing", testForkIDTaken},
		{"Invalid", testForkInvalid},
	}
}

// forkSource stores alice's session s-src, with session_data keys a fork
// may drop, and four runs that link to each other: r-1 (with stored events,
// a tool that started r-2, a tool that started a run of no session here,
// and a null tool), r-2 (a child of r-1), r-3 (a child of a run that is not
// in the session, written without a user) and r-4 (a team run whose tools
// are an empty list). It returns the source and its runs in order.
func forkSource(t *testing.T, store storage.Store) (*storage.Session, []storage.RunRecord) {
	t.Helper()
	source := fullSession("s-src")
	source.SessionData[`say "hi"`] = "quoted key"
	source.SessionData["flags"] = map[string]any{"on": true, "off": false, "none": nil, "list": []any{1, "two", 3.5}}
	source = putSession(t, store, source)

	r1 := testRun("s-src", "r-1", alice)
	r1.RunIndex = runIndex(3)
	r1.Run.CreatedAt = 1_700_000_010
	found := "found"
	r1.Run.Events = run.EventList{&run.RunStarted{BaseEvent: run.BaseEvent{RunID: "r-1", SessionID: "s-src", AgentID: "agent-1"}}}
	r1.Run.Tools = []*run.ToolExecution{
		{ToolCallID: "call-1", ToolName: "delegate", ChildRunID: "r-2", ToolArgs: map[string]any{"task": "plan", "urgent": true}},
		{ToolCallID: "call-2", ToolName: "delegate", ChildRunID: "r-elsewhere"},
		nil,
		{ToolCallID: "call-3", ToolName: "search", Result: &found},
	}
	r1.Run.Metadata = map[string]any{"note": "r-2 stays text here", "n": 7}
	r2 := testRun("s-src", "r-2", alice)
	r2.RunIndex = runIndex(4)
	r2.Run.ParentRunID = "r-1"
	r2.Run.CreatedAt = 1_700_000_020
	r3 := testRun("s-src", "r-3", "")
	r3.RunIndex = runIndex(9)
	r3.Run.ParentRunID = "r-outside"
	r3.Run.ForkedFromRunID = "r-older"
	r3.Run.CreatedAt = 1_700_000_030
	r4 := testRun("s-src", "r-4", alice)
	r4.RunType = storage.RunTypeTeam
	r4.Run.TeamID = "team-3"
	r4.Run.Tools = []*run.ToolExecution{}
	r4.Run.CreatedAt = 1_700_000_040

	var records []storage.RunRecord
	for _, rec := range []storage.RunRecord{r1, r2, r3, r4} {
		records = append(records, putRun(t, store, rec))
	}
	return source, records
}

// wantForkedRun is what the copy of src in the fork must read back as: a
// deep copy with its own id, the fork's session, the source as its
// lineage, the run ids it names mapped through copies when they were
// copied, and no stored events.
func wantForkedRun(t *testing.T, src *run.Output, forkID, sourceID string, copies map[string]string) *run.Output {
	t.Helper()
	data, err := json.Marshal(src)
	require.NoError(t, err)
	want := &run.Output{}
	require.NoError(t, json.Unmarshal(data, want))
	want.RunID = copies[src.RunID]
	want.SessionID = forkID
	want.ForkedFromSessionID = sourceID
	if parent, ok := copies[want.ParentRunID]; ok {
		want.ParentRunID = parent
	}
	if forked, ok := copies[want.ForkedFromRunID]; ok {
		want.ForkedFromRunID = forked
	}
	if regenerated, ok := copies[want.RegeneratedFrom]; ok {
		want.RegeneratedFrom = regenerated
	}
	for _, tool := range want.Tools {
		if tool == nil {
			continue
		}
		if child, ok := copies[tool.ChildRunID]; ok {
			tool.ChildRunID = child
		}
	}
	want.Events = nil
	return want
}

// snapshotSession reads a session with its runs as JSON, to compare before
// and after.
func snapshotSession(t *testing.T, store storage.Store, sessionID string) string {
	t.Helper()
	session, err := store.GetSession(t.Context(), sessionID, storage.GetSessionOptions{IncludeRuns: true})
	require.NoError(t, err)
	records, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: sessionID})
	require.NoError(t, err)
	data, err := json.Marshal(map[string]any{"session": session, "records": records})
	require.NoError(t, err)
	return string(data)
}

// sessionTotal counts every session in the store.
func sessionTotal(t *testing.T, store storage.Store) int {
	t.Helper()
	_, total, err := store.ListSessions(t.Context(), storage.SessionQuery{})
	require.NoError(t, err)
	return total
}

func testForkCopies(t *testing.T, store storage.Store) {
	ctx := t.Context()
	source, sourceRuns := forkSource(t, store)
	before := snapshotSession(t, store, "s-src")

	fork, err := store.ForkSession(ctx, storage.SessionFork{SessionID: "s-src", UserID: alice,
		DropSessionData: []string{"claude_sdk_session_id", `say "hi"`, "not-there"}})
	require.NoError(t, err)
	require.NotEmpty(t, fork.SessionID, "the store names the fork")
	require.NotEqual(t, "s-src", fork.SessionID)

	// The session row: a copy without the dropped keys, created now.
	want := *source
	want.SessionID = fork.SessionID
	want.SessionData = maps.Clone(source.SessionData)
	delete(want.SessionData, "claude_sdk_session_id")
	delete(want.SessionData, `say "hi"`)
	requireSessionEqual(t, &want, fork)
	require.Greater(t, fork.CreatedAt, source.CreatedAt, "the fork is created now, not when the source was")
	require.Equal(t, fork.CreatedAt, fork.UpdatedAt)
	require.Empty(t, fork.Runs)
	stored, err := store.GetSession(ctx, fork.SessionID, storage.GetSessionOptions{UserID: alice})
	require.NoError(t, err)
	requireSessionEqual(t, &want, stored)
	require.Equal(t, fork.CreatedAt, stored.CreatedAt)

	// The runs: one copy each, in the same order and positions, relinked.
	forked, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: fork.SessionID, UserID: alice})
	require.NoError(t, err)
	require.Equal(t, len(sourceRuns), total)
	copies := map[string]string{}
	for i, rec := range forked {
		src := sourceRuns[i]
		require.NotContains(t, []string{"r-1", "r-2", "r-3", "r-4"}, rec.Run.RunID, "copy %d has a new run id", i)
		require.NotContains(t, copies, src.Run.RunID)
		copies[src.Run.RunID] = rec.Run.RunID
	}
	require.Len(t, copies, len(sourceRuns))
	for i, rec := range forked {
		src := sourceRuns[i]
		require.Equal(t, fork.SessionID, rec.SessionID)
		require.Equal(t, *src.RunIndex, *rec.RunIndex, "run %s keeps its run_index", src.Run.RunID)
		require.Equal(t, src.CreatedAt, rec.CreatedAt, "run %s keeps its created_at", src.Run.RunID)
		require.Equal(t, src.RunType, rec.RunType)
		require.Equal(t, alice, rec.UserID, "run %s keeps its user", src.Run.RunID)
		requireRunEqual(t, wantForkedRun(t, src.Run, fork.SessionID, "s-src", copies), rec.Run)
		got, err := store.GetRun(ctx, rec.Run.RunID, alice)
		require.NoError(t, err, "the copy of %s reads back by its id", src.Run.RunID)
		require.Equal(t, fork.SessionID, got.SessionID)
	}
	require.Equal(t, copies["r-2"], forked[0].Run.Tools[0].ChildRunID, "a child run id is relinked")
	require.Equal(t, "r-elsewhere", forked[0].Run.Tools[1].ChildRunID, "a run id outside the session is kept")
	require.Nil(t, forked[0].Run.Tools[2])
	require.Empty(t, forked[0].Run.Events, "stored events describe the original execution")
	require.Equal(t, copies["r-1"], forked[1].Run.ParentRunID, "a parent run id is relinked")
	require.Equal(t, "r-outside", forked[2].Run.ParentRunID)
	require.Equal(t, "r-older", forked[2].Run.ForkedFromRunID)

	// The parent_run_id column follows: only the copy of r-4 is top-level
	// besides r-1's, as in the source.
	contextRuns, err := store.ContextRuns(ctx, fork.SessionID, alice, 10)
	require.NoError(t, err)
	require.Equal(t, []string{copies["r-1"], copies["r-4"]}, outputRunIDs(contextRuns))

	// The fork goes on from its last position; the source is untouched.
	next := newRun(t, store, fork.SessionID, "r-next", alice)
	require.EqualValues(t, 11, *next.RunIndex, "after r-4's copy at 10")
	require.Equal(t, before, snapshotSession(t, store, "s-src"), "the source session and its runs are unchanged")
	require.Equal(t, 2, sessionTotal(t, store))
}

func testForkKeepsOrder(t *testing.T, store storage.Store) {
	ctx := t.Context()
	newSession(t, store, "s-src", "")
	const n = 40
	var ids []string
	for i := range n {
		// Ids out of step with the order, so that an order by id would show.
		runID := fmt.Sprintf("r-%02d", (i*7)%n)
		newRun(t, store, "s-src", runID, "")
		ids = append(ids, runID)
	}
	fork, err := store.ForkSession(ctx, storage.SessionFork{SessionID: "s-src", ForkID: "s-fork"})
	require.NoError(t, err)
	require.Equal(t, "s-fork", fork.SessionID, "the given fork id is used")
	require.Empty(t, fork.UserID)

	source, _, err := store.GetRuns(ctx, storage.RunQuery{SessionID: "s-src"})
	require.NoError(t, err)
	forked, _, err := store.GetRuns(ctx, storage.RunQuery{SessionID: "s-fork"})
	require.NoError(t, err)
	require.Len(t, forked, n)
	require.Equal(t, ids, recordRunIDs(source))
	for i := range forked {
		require.EqualValues(t, i, *forked[i].RunIndex)
		require.Equal(t, source[i].Run.Content, forked[i].Run.Content, "copy %d is of run %s", i, source[i].Run.RunID)
		require.Empty(t, forked[i].UserID, "a run of an unowned session stays without a user")
	}
	session, err := store.GetSession(ctx, "s-fork", storage.GetSessionOptions{ContextRuns: 3})
	require.NoError(t, err)
	require.Equal(t, recordRunIDs(forked[n-3:]), outputRunIDs(session.Runs), "the fork's history ends where the source's does")
}

func testForkEmptySession(t *testing.T, store storage.Store) {
	source := newSession(t, store, "s-src", bob)
	fork, err := store.ForkSession(t.Context(), storage.SessionFork{SessionID: "s-src", UserID: bob})
	require.NoError(t, err)
	want := *source
	want.SessionID = fork.SessionID
	requireSessionEqual(t, &want, fork)
	_, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: fork.SessionID})
	require.NoError(t, err)
	require.Zero(t, total)
}

func testForkMissing(t *testing.T, store storage.Store) {
	_, err := store.ForkSession(t.Context(), storage.SessionFork{SessionID: "missing", ForkID: "s-fork"})
	require.ErrorIs(t, err, storage.ErrNotFound)
	requireNoSession(t, store, "s-fork", "a failed fork leaves no session behind")
	require.Zero(t, sessionTotal(t, store))
}

func testForkOtherUser(t *testing.T, store storage.Store) {
	ctx := t.Context()
	aliceSession := isolationFixture(t, store)
	for _, source := range []string{"s-alice", "s-nobody"} {
		_, err := store.ForkSession(ctx, storage.SessionFork{SessionID: source, UserID: bob, ForkID: "s-stolen"})
		require.ErrorIs(t, err, storage.ErrNotFound, "bob forks %s", source)
		requireNoSession(t, store, "s-stolen", "the refused fork wrote nothing")
	}
	requireAliceSessionIntact(t, store, aliceSession)
	require.Equal(t, 3, sessionTotal(t, store))

	// Unscoped (administrative), the fork keeps the owner.
	fork, err := store.ForkSession(ctx, storage.SessionFork{SessionID: "s-alice"})
	require.NoError(t, err)
	require.Equal(t, alice, fork.UserID)
	_, err = store.GetSession(ctx, fork.SessionID, storage.GetSessionOptions{UserID: bob})
	require.ErrorIs(t, err, storage.ErrNotFound, "bob cannot read the fork of alice's session")
	runs, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: fork.SessionID, UserID: alice})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	for _, rec := range runs {
		require.Equal(t, alice, rec.UserID)
	}
}

func testForkIDTaken(t *testing.T, store storage.Store) {
	ctx := t.Context()
	forkSource(t, store)
	newSession(t, store, "s-other", alice)
	newRun(t, store, "s-other", "r-other", alice)
	before := snapshotSession(t, store, "s-other")

	_, err := store.ForkSession(ctx, storage.SessionFork{SessionID: "s-src", UserID: alice, ForkID: "s-other"})
	require.ErrorIs(t, err, storage.ErrInvalid, "a fork never writes into an existing session")
	require.Equal(t, before, snapshotSession(t, store, "s-other"), "the session that holds the id is untouched, and gained no runs")
	require.Equal(t, 2, sessionTotal(t, store))
}

func testForkInvalid(t *testing.T, store storage.Store) {
	newSession(t, store, "s-src", "")
	_, err := store.ForkSession(t.Context(), storage.SessionFork{})
	require.ErrorIs(t, err, storage.ErrInvalid, "no source")
	_, err = store.ForkSession(t.Context(), storage.SessionFork{SessionID: "s-src", ForkID: "s-src"})
	require.ErrorIs(t, err, storage.ErrInvalid, "a fork onto itself")
	require.Equal(t, 1, sessionTotal(t, store))
}
