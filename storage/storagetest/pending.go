package storagetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// The pending-run tests pin down [storage.RunStore.RecordPendingRun]: the
// session created when new and never touched when it exists, the run
// inserted and never overwritten, another user's session refused, and
// nothing left behind by a write that fails.
func pendingTests() []conformanceTest {
	return []conformanceTest{
		{"CreatesSession", testPendingCreatesSession},
		{"ExistingSessionUntouched", testPendingExistingSession},
		{"RunIDTakenLeavesNothing", testPendingRunIDTaken},
		{"OtherUsersSessionNotFound", testPendingOtherUsersSession},
		{"Invalid", testPendingInvalid},
		{"ConcurrentIntoNewSession", testPendingConcurrent},
	}
}

// pendingSession is the session an acceptance creates for a new session id.
func pendingSession(sessionID, userID string) *storage.Session {
	return &storage.Session{SessionID: sessionID, SessionType: storage.SessionTypeAgent, AgentID: "agent-1", UserID: userID}
}

// pendingRun is an accepted run's PENDING record.
func pendingRun(sessionID, runID, userID string) storage.RunRecord {
	return storage.RunRecord{SessionID: sessionID, UserID: userID, Run: &run.Output{
		RunID: runID, AgentID: "agent-1", SessionID: sessionID, UserID: userID, Status: run.StatusPending,
		Input: &run.Input{InputContent: "question of " + runID}, CreatedAt: 1_700_000_500,
	}}
}

// requireNoSession asserts that no session has sessionID.
func requireNoSession(t *testing.T, store storage.Store, sessionID, msg string) {
	t.Helper()
	_, err := store.GetSession(t.Context(), sessionID, storage.GetSessionOptions{})
	require.ErrorIs(t, err, storage.ErrNotFound, msg)
}

// requireNoRun asserts that no run has runID.
func requireNoRun(t *testing.T, store storage.Store, runID, msg string) {
	t.Helper()
	_, err := store.GetRun(t.Context(), runID, "")
	require.ErrorIs(t, err, storage.ErrNotFound, msg)
}

func testPendingCreatesSession(t *testing.T, store storage.Store) {
	ctx := t.Context()
	rec := pendingRun("s-new", "r-1", alice)
	require.NoError(t, store.RecordPendingRun(ctx, pendingSession("s-new", alice), rec))

	session, err := store.GetSession(ctx, "s-new", storage.GetSessionOptions{UserID: alice})
	require.NoError(t, err, "the new session is created for its user")
	requireSessionEqual(t, pendingSession("s-new", alice), session)
	require.Positive(t, session.CreatedAt)

	got, err := store.GetRun(ctx, "r-1", alice)
	require.NoError(t, err)
	require.Equal(t, "s-new", got.SessionID)
	require.Equal(t, alice, got.UserID)
	require.Equal(t, storage.RunTypeAgent, got.RunType)
	require.EqualValues(t, 0, *got.RunIndex)
	require.Equal(t, int64(1_700_000_500), got.CreatedAt, "created_at comes from the run")
	require.Equal(t, run.StatusPending, got.Run.Status)
	requireRunEqual(t, rec.Run, got.Run)

	// A second acceptance in the same session takes the next position.
	require.NoError(t, store.RecordPendingRun(ctx, pendingSession("s-new", alice), pendingRun("s-new", "r-2", alice)))
	got, err = store.GetRun(ctx, "r-2", alice)
	require.NoError(t, err)
	require.EqualValues(t, 1, *got.RunIndex)
}

func testPendingExistingSession(t *testing.T, store storage.Store) {
	ctx := t.Context()
	existing := putSession(t, store, fullSession("s-1"))
	newRun(t, store, "s-1", "r-done", alice)

	// The session value an acceptance carries is only for a new session:
	// an existing row keeps every column, its timestamps included.
	stranger := &storage.Session{SessionID: "s-1", SessionType: storage.SessionTypeAgent, AgentID: "agent-other", UserID: alice,
		SessionData: map[string]any{"replaced": true}}
	require.NoError(t, store.RecordPendingRun(ctx, stranger, pendingRun("s-1", "r-pending", alice)))

	got, err := store.GetSession(ctx, "s-1", storage.GetSessionOptions{IncludeRuns: true})
	require.NoError(t, err)
	requireSessionEqual(t, existing, got)
	require.Equal(t, existing.CreatedAt, got.CreatedAt)
	require.Equal(t, existing.UpdatedAt, got.UpdatedAt)
	require.Equal(t, []string{"r-done", "r-pending"}, outputRunIDs(got.Runs))
	require.Equal(t, run.StatusPending, got.Runs[1].Status)

	// Unscoped, the run joins the session and takes its owner.
	unscoped := pendingRun("s-1", "r-admin", "")
	require.NoError(t, store.RecordPendingRun(ctx, pendingSession("s-1", ""), unscoped))
	rec, err := store.GetRun(ctx, "r-admin", "")
	require.NoError(t, err)
	require.Equal(t, alice, rec.UserID, "a run without a user takes its session's owner")
	require.EqualValues(t, 2, *rec.RunIndex)
}

func testPendingRunIDTaken(t *testing.T, store storage.Store) {
	ctx := t.Context()
	newSession(t, store, "s-alice", alice)
	original := newRun(t, store, "s-alice", "r-taken", alice)

	// Into a new session: the run insert fails, and the session created in
	// the same transaction must not be left behind.
	err := store.RecordPendingRun(ctx, pendingSession("s-new", alice), pendingRun("s-new", "r-taken", alice))
	require.ErrorIs(t, err, storage.ErrInvalid, "a stored run id is refused")
	requireNoSession(t, store, "s-new", "the session insert rolled back with the run insert")

	// Another user's run id is reported as not found, and changes nothing.
	err = store.RecordPendingRun(ctx, pendingSession("s-bob", bob), pendingRun("s-bob", "r-taken", bob))
	require.ErrorIs(t, err, storage.ErrNotFound)
	requireNoSession(t, store, "s-bob", "bob's new session rolled back")

	// Into the run's own session: the stored run is not overwritten.
	err = store.RecordPendingRun(ctx, pendingSession("s-alice", alice), pendingRun("s-alice", "r-taken", alice))
	require.ErrorIs(t, err, storage.ErrInvalid)

	got, err := store.GetRun(ctx, "r-taken", "")
	require.NoError(t, err)
	require.Equal(t, "s-alice", got.SessionID)
	require.Equal(t, run.StatusCompleted, got.Run.Status)
	requireRunEqual(t, original.Run, got.Run)
	_, total, err := store.ListSessions(ctx, storage.SessionQuery{})
	require.NoError(t, err)
	require.Equal(t, 1, total, "no session was created")
}

func testPendingOtherUsersSession(t *testing.T, store storage.Store) {
	ctx := t.Context()
	aliceSession := isolationFixture(t, store)

	err := store.RecordPendingRun(ctx, pendingSession("s-alice", bob), pendingRun("s-alice", "r-intruder", bob))
	require.ErrorIs(t, err, storage.ErrNotFound, "bob records a run in alice's session")
	err = store.RecordPendingRun(ctx, pendingSession("s-nobody", bob), pendingRun("s-nobody", "r-claim", bob))
	require.ErrorIs(t, err, storage.ErrNotFound, "bob records a run in an unowned session")
	// The run's user scopes the write even when the session value names none.
	err = store.RecordPendingRun(ctx, pendingSession("s-alice", ""), pendingRun("s-alice", "r-intruder", bob))
	require.ErrorIs(t, err, storage.ErrNotFound)

	requireNoRun(t, store, "r-intruder", "the refused run was not written")
	requireNoRun(t, store, "r-claim", "the refused run was not written")
	requireAliceSessionIntact(t, store, aliceSession)
	nobody, err := store.GetSession(ctx, "s-nobody", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Empty(t, nobody.UserID, "the unowned session was not claimed")
}

func testPendingInvalid(t *testing.T, store storage.Store) {
	ctx := t.Context()
	for name, write := range map[string]func() error{
		"not pending": func() error {
			rec := pendingRun("s-1", "r-1", "")
			rec.Run.Status = run.StatusCompleted
			return store.RecordPendingRun(ctx, pendingSession("s-1", ""), rec)
		},
		"no run id": func() error {
			return store.RecordPendingRun(ctx, pendingSession("s-1", ""), pendingRun("s-1", "", ""))
		},
		"no run": func() error {
			return store.RecordPendingRun(ctx, pendingSession("s-1", ""), storage.RunRecord{SessionID: "s-1"})
		},
		"no session id": func() error {
			return store.RecordPendingRun(ctx, pendingSession("", ""), pendingRun("s-1", "r-1", ""))
		},
		"other session": func() error {
			return store.RecordPendingRun(ctx, pendingSession("s-2", ""), pendingRun("s-1", "r-1", ""))
		},
		"other user": func() error {
			return store.RecordPendingRun(ctx, pendingSession("s-1", alice), pendingRun("s-1", "r-1", bob))
		},
	} {
		require.ErrorIs(t, write(), storage.ErrInvalid, name)
	}
	requireNoSession(t, store, "s-1", "nothing was written")
	requireNoSession(t, store, "s-2", "nothing was written")
	requireNoRun(t, store, "r-1", "nothing was written")
}

// testPendingConcurrent accepts many runs at once into one session that
// does not exist yet: every acceptance succeeds, the session is created once
// and every run gets its own position.
func testPendingConcurrent(t *testing.T, store storage.Store) {
	ctx := t.Context()
	runConcurrently(t, concurrentWriters, func(i int) error {
		return store.RecordPendingRun(ctx, pendingSession("s-new", alice), pendingRun("s-new", fmt.Sprintf("r-%02d", i), alice))
	})
	_, total, err := store.ListSessions(ctx, storage.SessionQuery{})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	records, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: "s-new", UserID: alice})
	require.NoError(t, err)
	require.Equal(t, concurrentWriters, total)
	indexes := make([]int64, 0, len(records))
	for _, rec := range records {
		require.Equal(t, run.StatusPending, rec.Run.Status)
		indexes = append(indexes, *rec.RunIndex)
	}
	requirePermutation(t, indexes, "run_index of concurrently accepted runs")
}
