package storagetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

func runTests() []conformanceTest {
	return []conformanceTest{
		{"UpsertGetRoundTrip", testRunRoundTrip},
		{"TouchRunRefreshesOnlyARunningRow", testTouchRun},
		{"SaveRunWritesBoth", testSaveRunWritesBoth},
		{"SaveRunIsAtomic", testSaveRunIsAtomic},
		{"SaveRunTakesTheSessionsOwner", testSaveRunTakesTheSessionsOwner},
		{"SaveRunIntoAnotherUsersSession", testSaveRunIntoAnotherUsersSession},
		{"SaveRunOfAnotherSession", testSaveRunOfAnotherSession},
		{"SaveRunCountsInMetricsOnce", testSaveRunCountsInMetricsOnce},
		{"RunTypeDefaultsToAgent", testRunDefaultType},
		{"RunIndexInInsertionOrder", testRunIndexInsertionOrder},
		{"RunIndexPerSession", testRunIndexPerSession},
		{"UpdateKeepsRunIndex", testRunUpdateKeepsIndex},
		{"ExplicitRunIndex", testRunExplicitIndex},
		{"MissingSession", testRunMissingSession},
		{"InvalidRun", testRunInvalid},
		{"RunIDOfAnotherSessionNotOverwritten", testRunIDOfAnotherSession},
		{"GetMissing", testRunGetMissing},
		{"GetRunsOrder", testRunGetRunsOrder},
		{"GetRunsStatuses", testRunGetRunsStatuses},
		{"GetRunsCreatedRange", testRunGetRunsCreatedRange},
		{"GetRunsPagination", testRunGetRunsPagination},
		{"Delete", testRunDelete},
		{"DeleteMissing", testRunDeleteMissing},
		{"SessionIncludeRuns", testRunSessionIncludeRuns},
		{"ContextRuns", testRunContextRuns},
		{"HistoryFollowsTheBranch", testRunHistoryBranch},
		{"HistoryOfQueuedRuns", testRunHistoryQueued},
	}
}

func testRunRoundTrip(t *testing.T, store storage.Store) {
	putSession(t, store, &storage.Session{SessionID: "s-1", SessionType: storage.SessionTypeTeam, TeamID: "team-1", UserID: alice})
	output := &run.Output{
		RunID:       "r-1",
		AgentID:     "agent-1",
		AgentName:   "Planner",
		TeamID:      "team-1",
		SessionID:   "s-1",
		ParentRunID: "r-parent",
		UserID:      alice,
		Content:     map[string]any{"text": "bonjour — 漢字", "score": 0.5, "tags": []any{"a", "b"}},
		Status:      run.StatusRunning,
		Metadata:    map[string]any{"attempt": 2, "source": "api", "nested": map[string]any{"ok": true}},
		CreatedAt:   1_700_000_100,
	}
	stored, err := store.UpsertRun(t.Context(), storage.RunRecord{
		SessionID: "s-1",
		UserID:    alice,
		RunType:   storage.RunTypeTeam,
		Run:       output,
		CreatedAt: 1_700_000_100,
	})
	require.NoError(t, err)
	require.Equal(t, "s-1", stored.SessionID)
	require.Equal(t, alice, stored.UserID)
	require.Equal(t, storage.RunTypeTeam, stored.RunType)
	require.NotNil(t, stored.RunIndex, "the stored record carries its run_index")
	require.Equal(t, int64(0), *stored.RunIndex)
	require.Equal(t, int64(1_700_000_100), stored.CreatedAt)
	require.Positive(t, stored.UpdatedAt, "a zero updated_at is set by the store")
	requireRunEqual(t, output, stored.Run)

	for _, userID := range []string{"", alice} {
		got, err := store.GetRun(t.Context(), "r-1", userID)
		require.NoError(t, err, "GetRun as %q", userID)
		require.Equal(t, "s-1", got.SessionID)
		require.Equal(t, alice, got.UserID)
		require.Equal(t, storage.RunTypeTeam, got.RunType)
		require.NotNil(t, got.RunIndex)
		require.Equal(t, int64(0), *got.RunIndex)
		require.Equal(t, stored.CreatedAt, got.CreatedAt)
		require.Equal(t, stored.UpdatedAt, got.UpdatedAt)
		requireRunEqual(t, output, got.Run)
	}
}

func testRunDefaultType(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	stored := newRun(t, store, "s-1", "r-1", "")
	require.Equal(t, storage.RunTypeAgent, stored.RunType)
	require.Positive(t, stored.CreatedAt, "a zero created_at is set by the store")
	got, err := store.GetRun(t.Context(), "r-1", "")
	require.NoError(t, err)
	require.Equal(t, storage.RunTypeAgent, got.RunType)
	require.Equal(t, stored.CreatedAt, got.CreatedAt)
}

func testRunIndexInsertionOrder(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	// Ids deliberately not in insertion order, so run_id order would differ.
	for wantIndex, runID := range []string{"r-c", "r-a", "r-b"} {
		stored := newRun(t, store, "s-1", runID, "")
		require.NotNil(t, stored.RunIndex)
		require.Equal(t, int64(wantIndex), *stored.RunIndex, "run %s", runID)
		got, err := store.GetRun(t.Context(), runID, "")
		require.NoError(t, err)
		require.Equal(t, int64(wantIndex), *got.RunIndex, "run %s read back", runID)
	}
	runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1"})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Equal(t, []string{"r-c", "r-a", "r-b"}, recordRunIDs(runs))
}

func testRunIndexPerSession(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	newSession(t, store, "s-2", "")
	require.Equal(t, int64(0), *newRun(t, store, "s-1", "r-1", "").RunIndex)
	require.Equal(t, int64(1), *newRun(t, store, "s-1", "r-2", "").RunIndex)
	require.Equal(t, int64(0), *newRun(t, store, "s-2", "r-3", "").RunIndex, "each session numbers its own runs")
	require.Equal(t, int64(2), *newRun(t, store, "s-1", "r-4", "").RunIndex)
}

func testRunUpdateKeepsIndex(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	for _, runID := range []string{"r-1", "r-2", "r-3"} {
		rec := testRun("s-1", runID, "")
		rec.Run.Status = run.StatusRunning
		rec.Run.Content = nil
		putRun(t, store, rec)
	}

	update := testRun("s-1", "r-1", "")
	update.Run.Status = run.StatusCompleted
	update.Run.Content = "final answer"
	update.Run.Metadata = map[string]any{"tokens": 42}
	stored := putRun(t, store, update)
	require.Equal(t, int64(0), *stored.RunIndex, "an update keeps the run's position")

	got, err := store.GetRun(t.Context(), "r-1", "")
	require.NoError(t, err)
	require.Equal(t, int64(0), *got.RunIndex)
	requireRunEqual(t, update.Run, got.Run)

	runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1"})
	require.NoError(t, err)
	require.Equal(t, 3, total, "an update adds no row")
	require.Equal(t, []string{"r-1", "r-2", "r-3"}, recordRunIDs(runs))

	// The status column follows run_data.
	completed, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1", Statuses: []run.Status{run.StatusCompleted}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, []string{"r-1"}, recordRunIDs(completed))
	running, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1", Statuses: []run.Status{run.StatusRunning}})
	require.NoError(t, err)
	require.Equal(t, []string{"r-2", "r-3"}, recordRunIDs(running))

	// A later insert still goes after the last position.
	require.Equal(t, int64(3), *newRun(t, store, "s-1", "r-4", "").RunIndex)
}

func testRunExplicitIndex(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	rec := testRun("s-1", "r-1", "")
	rec.RunIndex = runIndex(5)
	stored := putRun(t, store, rec)
	require.Equal(t, int64(5), *stored.RunIndex)
	got, err := store.GetRun(t.Context(), "r-1", "")
	require.NoError(t, err)
	require.Equal(t, int64(5), *got.RunIndex)

	require.Equal(t, int64(6), *newRun(t, store, "s-1", "r-2", "").RunIndex, "the next run takes max + 1")
}

func testRunMissingSession(t *testing.T, store storage.Store) {
	_, err := store.UpsertRun(t.Context(), testRun("missing", "r-1", ""))
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = store.GetRun(t.Context(), "r-1", "")
	require.ErrorIs(t, err, storage.ErrNotFound, "nothing was written")
}

func testRunInvalid(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	_, err := store.UpsertRun(t.Context(), testRun("s-1", "", ""))
	require.ErrorIs(t, err, storage.ErrInvalid, "empty run id")
	_, err = store.UpsertRun(t.Context(), storage.RunRecord{SessionID: "s-1"})
	require.ErrorIs(t, err, storage.ErrInvalid, "nil run")

	_, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1"})
	require.NoError(t, err)
	require.Zero(t, total, "nothing was written")
}

func testRunIDOfAnotherSession(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	newSession(t, store, "s-2", "")
	original := newRun(t, store, "s-1", "r-1", "")

	hijack := testRun("s-2", "r-1", "")
	hijack.Run.Content = "overwritten"
	_, err := store.UpsertRun(t.Context(), hijack)
	require.Error(t, err, "a run id that belongs to another session is never overwritten")

	got, err := store.GetRun(t.Context(), "r-1", "")
	require.NoError(t, err)
	require.Equal(t, "s-1", got.SessionID)
	requireRunEqual(t, original.Run, got.Run)
	runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-2"})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, runs)
}

func testRunGetMissing(t *testing.T, store storage.Store) {
	_, err := store.GetRun(t.Context(), "missing", "")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// orderFixture stores runs whose run_index ties are broken by created_at and
// then run_id; the listing order is r-z, r-c, r-a, r-b.
func orderFixture(t *testing.T, store storage.Store) {
	t.Helper()
	newSession(t, store, "s-1", "")
	for _, r := range []struct {
		runID     string
		index     int64
		createdAt int64
	}{
		{"r-b", 1, 200},
		{"r-z", 0, 300},
		{"r-c", 1, 100},
		{"r-a", 1, 200},
	} {
		rec := testRun("s-1", r.runID, "")
		rec.RunIndex = runIndex(r.index)
		rec.CreatedAt = r.createdAt
		rec.Run.CreatedAt = r.createdAt
		putRun(t, store, rec)
	}
}

func testRunGetRunsOrder(t *testing.T, store storage.Store) {
	orderFixture(t, store)
	runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1"})
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Equal(t, []string{"r-z", "r-c", "r-a", "r-b"}, recordRunIDs(runs), "ordered by run_index, created_at, run_id")
	for _, rec := range runs {
		require.Equal(t, "s-1", rec.SessionID)
		require.NotNil(t, rec.RunIndex)
		require.NotNil(t, rec.Run)
	}
}

func testRunGetRunsStatuses(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	for _, r := range []struct {
		runID  string
		status run.Status
	}{
		{"r-1", run.StatusCompleted},
		{"r-2", run.StatusError},
		{"r-3", run.StatusPaused},
		{"r-4", run.StatusCompleted},
		{"r-5", run.StatusRunning},
	} {
		rec := testRun("s-1", r.runID, "")
		rec.Run.Status = r.status
		putRun(t, store, rec)
	}
	cases := []struct {
		statuses []run.Status
		want     []string
	}{
		{nil, []string{"r-1", "r-2", "r-3", "r-4", "r-5"}},
		{[]run.Status{run.StatusCompleted}, []string{"r-1", "r-4"}},
		{[]run.Status{run.StatusError, run.StatusPaused}, []string{"r-2", "r-3"}},
		{[]run.Status{run.StatusCancelled}, nil},
	}
	for _, tc := range cases {
		runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1", Statuses: tc.statuses})
		require.NoError(t, err)
		require.Equal(t, tc.want, nilIfEmpty(recordRunIDs(runs)), "statuses %v", tc.statuses)
		require.Equal(t, len(tc.want), total, "statuses %v", tc.statuses)
		for _, rec := range runs {
			if len(tc.statuses) > 0 {
				require.Contains(t, tc.statuses, rec.Run.Status, "run %s", rec.Run.RunID)
			}
		}
	}
}

func testRunGetRunsCreatedRange(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	for _, createdAt := range []int64{100, 200, 300, 400} {
		rec := testRun("s-1", fmt.Sprintf("r-%d", createdAt), "")
		rec.CreatedAt = createdAt
		rec.Run.CreatedAt = createdAt
		putRun(t, store, rec)
	}
	cases := []struct {
		after, before int64
		want          []string
	}{
		{0, 0, []string{"r-100", "r-200", "r-300", "r-400"}},
		{200, 0, []string{"r-200", "r-300", "r-400"}},
		{0, 300, []string{"r-100", "r-200", "r-300"}},
		{200, 300, []string{"r-200", "r-300"}},
		{250, 260, nil},
	}
	for _, tc := range cases {
		runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1", CreatedAfter: tc.after, CreatedBefore: tc.before})
		require.NoError(t, err)
		require.Equal(t, tc.want, nilIfEmpty(recordRunIDs(runs)), "created in [%d, %d]", tc.after, tc.before)
		require.Equal(t, len(tc.want), total, "created in [%d, %d]", tc.after, tc.before)
	}
}

func testRunGetRunsPagination(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	newSession(t, store, "s-other", "")
	for _, runID := range []string{"r-1", "r-2", "r-3", "r-4", "r-5"} {
		newRun(t, store, "s-1", runID, "")
	}
	newRun(t, store, "s-other", "r-other", "")

	pages := []struct {
		page int
		want []string
	}{
		{1, []string{"r-1", "r-2"}},
		{2, []string{"r-3", "r-4"}},
		{3, []string{"r-5"}},
		{4, nil},
	}
	for _, p := range pages {
		runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1", Page: storage.Page{Limit: 2, Page: p.page}})
		require.NoError(t, err)
		require.Equal(t, 5, total, "page %d: total counts the session's runs only, independent of the page", p.page)
		require.Equal(t, p.want, nilIfEmpty(recordRunIDs(runs)), "page %d", p.page)
	}

	runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1", Page: storage.Page{Page: 3}})
	require.NoError(t, err)
	require.Equal(t, 5, total)
	require.Len(t, runs, 5, "a zero limit lists everything")

	runs, _, err = store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1", Page: storage.Page{Limit: 2}})
	require.NoError(t, err)
	require.Equal(t, []string{"r-1", "r-2"}, recordRunIDs(runs), "page 0 is the first page")

	_, _, err = store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1", Page: storage.Page{Limit: 2, Page: -1}})
	require.ErrorIs(t, err, storage.ErrInvalid)
}

func testRunDelete(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	for _, runID := range []string{"r-1", "r-2", "r-3"} {
		newRun(t, store, "s-1", runID, "")
	}
	require.NoError(t, store.DeleteRun(t.Context(), "r-2", ""))

	_, err := store.GetRun(t.Context(), "r-2", "")
	require.ErrorIs(t, err, storage.ErrNotFound)
	runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1"})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []string{"r-1", "r-3"}, recordRunIDs(runs))
	_, err = store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{})
	require.NoError(t, err, "deleting a run keeps its session")

	require.ErrorIs(t, store.DeleteRun(t.Context(), "r-2", ""), storage.ErrNotFound, "a second delete finds nothing")
}

func testRunDeleteMissing(t *testing.T, store storage.Store) {
	require.ErrorIs(t, store.DeleteRun(t.Context(), "missing", ""), storage.ErrNotFound)
}

func testRunSessionIncludeRuns(t *testing.T, store storage.Store) {
	orderFixture(t, store)
	got, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{IncludeRuns: true})
	require.NoError(t, err)
	require.Equal(t, []string{"r-z", "r-c", "r-a", "r-b"}, outputRunIDs(got.Runs))

	stored, err := store.GetRun(t.Context(), "r-c", "")
	require.NoError(t, err)
	requireRunEqual(t, stored.Run, got.Runs[1])
}

// contextFixture stores a session whose context runs are r-1, r-3, r-6:
// the others are children, unfinished, or in a status that skips history.
func contextFixture(t *testing.T, store storage.Store) []string {
	t.Helper()
	newSession(t, store, "s-1", "")
	for _, r := range []struct {
		runID, parent string
		status        run.Status
	}{
		{"r-1", "", run.StatusCompleted},
		{"r-2", "", run.StatusError},
		{"r-3", "", run.StatusCompleted},
		{"r-3-member", "r-3", run.StatusCompleted},
		{"r-4", "", run.StatusPaused},
		{"r-5", "", run.StatusCancelled},
		{"r-6", "", run.StatusCompleted},
		{"r-7", "", run.StatusRegenerated},
		{"r-8", "", run.StatusRunning},
		{"r-8-member", "r-8", run.StatusCompleted},
	} {
		rec := testRun("s-1", r.runID, "")
		rec.Run.ParentRunID = r.parent
		rec.Run.Status = r.status
		putRun(t, store, rec)
	}
	return []string{"r-1", "r-2", "r-3", "r-3-member", "r-4", "r-5", "r-6", "r-7", "r-8", "r-8-member"}
}

func testRunContextRuns(t *testing.T, store storage.Store) {
	all := contextFixture(t, store)
	cases := []struct {
		n    int
		want []string
	}{
		{1, []string{"r-6"}},
		{2, []string{"r-3", "r-6"}},
		{3, []string{"r-1", "r-3", "r-6"}},
		{10, []string{"r-1", "r-3", "r-6"}},
	}
	for _, tc := range cases {
		runs, err := store.ContextRuns(t.Context(), "s-1", "", tc.n)
		require.NoError(t, err)
		require.Equal(t, tc.want, outputRunIDs(runs), "ContextRuns(%d): last n finished top-level runs, oldest first", tc.n)

		got, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{ContextRuns: tc.n})
		require.NoError(t, err)
		require.Equal(t, tc.want, outputRunIDs(got.Runs), "GetSession ContextRuns=%d", tc.n)
	}

	got, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{IncludeRuns: true, ContextRuns: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"r-3", "r-6"}, outputRunIDs(got.Runs), "ContextRuns wins over IncludeRuns")

	got, err = store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{IncludeRuns: true})
	require.NoError(t, err)
	require.Equal(t, all, outputRunIDs(got.Runs), "IncludeRuns alone loads every run")
}

func testSaveRunWritesBoth(t *testing.T, store storage.Store) {
	session := &storage.Session{SessionID: "s-new", SessionType: storage.SessionTypeAgent, AgentID: "agent-1", UserID: alice,
		SessionData: map[string]any{"session_state": map[string]any{"n": float64(1)}}}
	stored, rec, err := store.SaveRun(t.Context(), session, testRun("s-new", "r-1", alice))
	require.NoError(t, err)
	require.Equal(t, "s-new", stored.SessionID)
	require.EqualValues(t, 0, *rec.RunIndex)
	got, err := store.GetSession(t.Context(), "s-new", storage.GetSessionOptions{UserID: alice, IncludeRuns: true})
	require.NoError(t, err)
	require.Len(t, got.Runs, 1)
	require.Equal(t, map[string]any{"n": float64(1)}, got.SessionData["session_state"])
}

func testSaveRunIsAtomic(t *testing.T, store storage.Store) {
	newSession(t, store, "s-alice", alice)
	// bob's run id collides with a run of alice's: the run write fails, and
	// bob's new session must not be left behind.
	_, err := store.UpsertRun(t.Context(), testRun("s-alice", "r-shared", alice))
	require.NoError(t, err)
	_, _, err = store.SaveRun(t.Context(), &storage.Session{SessionID: "s-bob", SessionType: storage.SessionTypeAgent, UserID: bob},
		testRun("s-bob", "r-shared", bob))
	require.Error(t, err)
	_, err = store.GetSession(t.Context(), "s-bob", storage.GetSessionOptions{})
	require.ErrorIs(t, err, storage.ErrNotFound, "the session write rolled back with the run write")
	rec, err := store.GetRun(t.Context(), "r-shared", "")
	require.NoError(t, err)
	require.Equal(t, "s-alice", rec.SessionID)
}

// testSaveRunTakesTheSessionsOwner: an unscoped save (no user on the
// session nor on the run) of a session that has an owner keeps the owner,
// and the run becomes the owner's.
func testSaveRunTakesTheSessionsOwner(t *testing.T, store storage.Store) {
	newSession(t, store, "s-owned", alice)
	stored, rec, err := store.SaveRun(t.Context(), &storage.Session{SessionID: "s-owned", SessionType: storage.SessionTypeAgent, AgentID: "agent-1"},
		testRun("s-owned", "r-1", ""))
	require.NoError(t, err)
	require.Equal(t, alice, stored.UserID, "the session keeps its owner")
	require.Equal(t, alice, rec.UserID, "the saved run is the owner's")
	got, err := store.GetRun(t.Context(), "r-1", alice)
	require.NoError(t, err, "the owner finds the run")
	require.Equal(t, alice, got.UserID)
	_, err = store.GetRun(t.Context(), "r-1", bob)
	require.ErrorIs(t, err, storage.ErrNotFound)
	runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-owned", UserID: alice})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, "r-1", runs[0].Run.RunID)
}

// testSaveRunIntoAnotherUsersSession: bob cannot save a run into alice's
// session; nothing of the save is written.
func testSaveRunIntoAnotherUsersSession(t *testing.T, store storage.Store) {
	newSession(t, store, "s-alice", alice)
	_, _, err := store.SaveRun(t.Context(), &storage.Session{SessionID: "s-alice", SessionType: storage.SessionTypeAgent, UserID: bob},
		testRun("s-alice", "r-bob", bob))
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = store.GetRun(t.Context(), "r-bob", "")
	require.ErrorIs(t, err, storage.ErrNotFound, "the run was not written")
	got, err := store.GetSession(t.Context(), "s-alice", storage.GetSessionOptions{UserID: alice})
	require.NoError(t, err)
	require.Equal(t, alice, got.UserID)
	require.EqualValues(t, 0, got.UpdateCount, "the session was not changed")
}

// testSaveRunOfAnotherSession: a run stored in one session cannot be saved
// into another; the other session's write rolls back with it.
func testSaveRunOfAnotherSession(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", alice)
	newRun(t, store, "s-1", "r-1", alice)
	_, _, err := store.SaveRun(t.Context(), &storage.Session{SessionID: "s-2", SessionType: storage.SessionTypeAgent, UserID: alice},
		testRun("s-2", "r-1", alice))
	require.ErrorIs(t, err, storage.ErrInvalid)
	require.ErrorContains(t, err, "belongs to session s-1")
	_, err = store.GetSession(t.Context(), "s-2", storage.GetSessionOptions{})
	require.ErrorIs(t, err, storage.ErrNotFound, "the session write rolled back")
	got, err := store.GetRun(t.Context(), "r-1", alice)
	require.NoError(t, err)
	require.Equal(t, "s-1", got.SessionID)
}

// testSaveRunCountsInMetricsOnce: a run saved RUNNING, then COMPLETED
// twice, counts once in the daily metrics, for its session's owner, and
// makes its session count once.
func testSaveRunCountsInMetricsOnce(t *testing.T, store storage.Store) {
	if _, ok := store.(storage.MetricsStore); !ok {
		t.Skip("the store does not implement storage.MetricsStore")
	}
	newSession(t, store, "s-m", alice)
	session := &storage.Session{SessionID: "s-m", SessionType: storage.SessionTypeAgent, AgentID: "agent-1"}
	rec := testRun("s-m", "r-m", "")
	rec.Run.Status = run.StatusRunning
	_, _, err := store.SaveRun(t.Context(), session, rec)
	require.NoError(t, err)
	for range 2 {
		rec.Run.Status = run.StatusCompleted
		_, _, err = store.SaveRun(t.Context(), session, rec)
		require.NoError(t, err)
	}
	for _, user := range []string{"", alice} {
		days := dailyMetrics(t, store, storage.MetricsQuery{UserID: user})
		require.Len(t, days, 1, "user %q", user)
		require.Equal(t, 1, days[0].AgentRuns, "user %q: the run counts once", user)
		require.Equal(t, 1, days[0].AgentSessions, "user %q: its session counts once", user)
		require.Equal(t, 1, days[0].Users, "user %q: the run is alice's", user)
	}
	require.Empty(t, dailyMetrics(t, store, storage.MetricsQuery{UserID: bob}))
}

// testTouchRun: TouchRun moves a RUNNING row's updated_at to now and
// changes nothing else; a row in any other status, or none, is left alone.
func testTouchRun(t *testing.T, store storage.Store) {
	toucher, ok := store.(storage.RunToucher)
	if !ok {
		t.Skip("the store does not implement storage.RunToucher")
	}
	newSession(t, store, "s-touch", "")
	running := testRun("s-touch", "r-running", "")
	running.Run.Status, running.Run.Content = run.StatusRunning, "half an answer"
	before := putRun(t, store, running)
	done := putRun(t, store, testRun("s-touch", "r-done", ""))

	touched, err := toucher.TouchRun(t.Context(), "r-running")
	require.NoError(t, err)
	require.True(t, touched)
	got, err := store.GetRun(t.Context(), "r-running", "")
	require.NoError(t, err)
	require.GreaterOrEqual(t, got.UpdatedAt, before.UpdatedAt, "updated_at moved to now")
	require.Equal(t, run.StatusRunning, got.Run.Status)
	require.Equal(t, "half an answer", got.Run.Content, "the run itself is untouched")

	touched, err = toucher.TouchRun(t.Context(), "r-done")
	require.NoError(t, err)
	require.False(t, touched, "a final row is not touched")
	got, err = store.GetRun(t.Context(), "r-done", "")
	require.NoError(t, err)
	require.Equal(t, done.UpdatedAt, got.UpdatedAt)
	require.Equal(t, run.StatusCompleted, got.Run.Status)

	touched, err = toucher.TouchRun(t.Context(), "r-missing")
	require.NoError(t, err)
	require.False(t, touched)
}

// branchFixture stores a session whose conversation branched:
//
//	A(0) B(1) C(2) F(3, fork of B) D(4) G(5, fork of F) E(6, pending)
//
// F replaced B (and so C); G replaced F (and so D).
func branchFixture(t *testing.T, store storage.Store) {
	t.Helper()
	newSession(t, store, "s-b", alice)
	for _, r := range []struct {
		runID, forkedFrom string
		status            run.Status
	}{
		{"A", "", run.StatusCompleted},
		{"B", "", run.StatusCompleted},
		{"C", "", run.StatusCompleted},
		{"F", "B", run.StatusCompleted},
		{"D", "", run.StatusCompleted},
		{"G", "F", run.StatusCompleted},
		{"E", "", run.StatusPending},
	} {
		rec := testRun("s-b", r.runID, alice)
		rec.Run.ForkedFromRunID = r.forkedFrom
		rec.Run.Status = r.status
		putRun(t, store, rec)
	}
}

func testRunHistoryBranch(t *testing.T, store storage.Store) {
	branchFixture(t, store)
	cases := []struct {
		what       string
		runID      string
		forkedFrom string
		n          int
		want       []string
	}{
		{"a new run goes on from the last fork, past the runs it replaced", "", "", 10, []string{"A", "G"}},
		{"a queued run sees the same", "E", "", 10, []string{"A", "G"}},
		{"a run before the second fork sees the first", "D", "", 10, []string{"A", "F"}},
		{"n counts runs of the branch", "D", "", 1, []string{"F"}},
		{"a fork sees what its source saw", "F", "", 10, []string{"A"}},
		{"a fork of a fork sees what the first source saw", "G", "", 10, []string{"A"}},
		{"a run before any fork sees the runs before it", "C", "", 10, []string{"A", "B"}},
		{"the first run has no history", "A", "", 10, []string{}},
		{"a fork not stored yet sees what its source saw", "new", "C", 10, []string{"A", "B"}},
		{"a stored run's own lineage wins", "D", "C", 10, []string{"A", "F"}},
		{"a source outside the session is no fork", "new", "elsewhere", 10, []string{"A", "G"}},
	}
	for _, tc := range cases {
		runs, err := store.HistoryRuns(t.Context(), storage.HistoryQuery{SessionID: "s-b", UserID: alice, RunID: tc.runID, ForkedFromRunID: tc.forkedFrom, N: tc.n})
		require.NoError(t, err, tc.what)
		require.Equal(t, tc.want, outputRunIDs(runs), tc.what)
	}
	runs, err := store.ContextRuns(t.Context(), "s-b", alice, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"A", "G"}, outputRunIDs(runs), "ContextRuns is the history of a run after every stored one")

	_, err = store.HistoryRuns(t.Context(), storage.HistoryQuery{SessionID: "s-b", UserID: bob, N: 3})
	require.ErrorIs(t, err, storage.ErrNotFound, "another user's session is missing")
	_, err = store.HistoryRuns(t.Context(), storage.HistoryQuery{SessionID: "s-b", N: 0})
	require.ErrorIs(t, err, storage.ErrInvalid)

	// A session fork relinks the lineage to its own copies: its history is
	// the same branch.
	fork, err := store.ForkSession(t.Context(), storage.SessionFork{SessionID: "s-b", UserID: alice})
	require.NoError(t, err)
	runs, err = store.ContextRuns(t.Context(), fork.SessionID, alice, 10)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, []any{"answer of A", "answer of G"}, []any{runs[0].Content, runs[1].Content}, "the fork's history is the copies of A and G")
	copyOfF, err := store.GetRun(t.Context(), runs[1].ForkedFromRunID, alice)
	require.NoError(t, err)
	require.Equal(t, fork.SessionID, copyOfF.SessionID, "the copy of G names the copy of F")
	require.Equal(t, "answer of F", copyOfF.Run.Content)
}

// testRunHistoryQueued: runs accepted together and run one after another
// each see the finished runs before them, never the ones queued with them.
func testRunHistoryQueued(t *testing.T, store storage.Store) {
	newSession(t, store, "s-q", "")
	ids := []string{"q-1", "q-2", "q-3", "q-4", "q-5"}
	for _, id := range ids {
		rec := testRun("s-q", id, "")
		rec.Run.Status = run.StatusPending
		putRun(t, store, rec)
	}
	for k, id := range ids {
		runs, err := store.HistoryRuns(t.Context(), storage.HistoryQuery{SessionID: "s-q", RunID: id, N: 3})
		require.NoError(t, err)
		want := append([]string{}, ids[max(0, k-3):k]...)
		require.Equal(t, want, outputRunIDs(runs), "run %s sees the finished runs before it", id)
		rec := testRun("s-q", id, "")
		putRun(t, store, rec) // it completes
	}
}
