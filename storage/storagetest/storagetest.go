package storagetest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// conformanceTest is one subtest of the suite. It receives a fresh, empty store.
type conformanceTest struct {
	name string
	run  func(t *testing.T, store storage.Store)
}

// Run runs every conformance subtest, each against a fresh empty store from
// newStore. newStore registers its own cleanup (closing the store, dropping
// its database) with t.Cleanup; the subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Helper()
	groups := []struct {
		name  string
		tests []conformanceTest
	}{
		{"Sessions", sessionTests()},
		{"Runs", runTests()},
		{"PendingRuns", pendingTests()},
		{"Fork", forkTests()},
		{"Transcripts", transcriptTests()},
		{"Memories", memoryTests()},
		{"Metrics", metricsTests()},
		{"ToolResults", toolResultTests()},
		{"Traces", traceTests()},
		{"Schedules", scheduleTests()},
		{"Approvals", approvalTests()},
		{"ServiceAccounts", serviceAccountTests()},
		{"Isolation", isolationTests()},
		{"Concurrency", concurrencyTests()},
		{"Text", textTests()},
	}
	for _, group := range groups {
		t.Run(group.name, func(t *testing.T) {
			t.Parallel()
			for _, test := range group.tests {
				t.Run(test.name, func(t *testing.T) {
					t.Parallel()
					store := newStore(t)
					require.NotNil(t, store, "newStore returned a nil store")
					test.run(t, store)
				})
			}
		})
	}
}

// The users of the isolation tests. Other tests use them too, so that a store
// that ignores user_id somewhere shows up in more than one place.
const (
	alice = "alice"
	bob   = "bob"
)

// newSession stores an agent session of agent-1 owned by userID ("" for none)
// and returns the stored row.
func newSession(t *testing.T, store storage.Store, sessionID, userID string) *storage.Session {
	t.Helper()
	stored, err := store.UpsertSession(t.Context(), &storage.Session{
		SessionID:   sessionID,
		SessionType: storage.SessionTypeAgent,
		AgentID:     "agent-1",
		UserID:      userID,
		SessionData: map[string]any{storage.SessionNameKey: "session " + sessionID},
	})
	require.NoError(t, err, "upsert session %s", sessionID)
	return stored
}

// putSession stores s and fails the test on error.
func putSession(t *testing.T, store storage.Store, s *storage.Session) *storage.Session {
	t.Helper()
	stored, err := store.UpsertSession(t.Context(), s)
	require.NoError(t, err, "upsert session %s", s.SessionID)
	return stored
}

// testRun returns a completed agent run of agent-1 ready to store.
func testRun(sessionID, runID, userID string) storage.RunRecord {
	return storage.RunRecord{
		SessionID: sessionID,
		UserID:    userID,
		Run: &run.Output{
			RunID:     runID,
			AgentID:   "agent-1",
			SessionID: sessionID,
			UserID:    userID,
			Status:    run.StatusCompleted,
			Content:   "answer of " + runID,
		},
	}
}

// putRun stores rec and fails the test on error.
func putRun(t *testing.T, store storage.Store, rec storage.RunRecord) storage.RunRecord {
	t.Helper()
	stored, err := store.UpsertRun(t.Context(), rec)
	require.NoError(t, err, "upsert run %s", rec.Run.RunID)
	return stored
}

// newRun stores a completed run of sessionID and returns the stored record.
func newRun(t *testing.T, store storage.Store, sessionID, runID, userID string) storage.RunRecord {
	t.Helper()
	return putRun(t, store, testRun(sessionID, runID, userID))
}

// runIndex returns a pointer for [storage.RunRecord.RunIndex].
func runIndex(n int64) *int64 { return &n }

// recordRunIDs returns the run ids of records, in order.
func recordRunIDs(records []storage.RunRecord) []string {
	ids := make([]string, 0, len(records))
	for _, rec := range records {
		ids = append(ids, rec.Run.RunID)
	}
	return ids
}

// outputRunIDs returns the run ids of runs, in order.
func outputRunIDs(runs []*run.Output) []string {
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.RunID)
	}
	return ids
}

// sessionIDs returns the ids of sessions, in order.
func sessionIDs(sessions []*storage.Session) []string {
	ids := make([]string, 0, len(sessions))
	for _, s := range sessions {
		ids = append(ids, s.SessionID)
	}
	return ids
}

// memoryIDs returns the ids of memories, in order.
func memoryIDs(memories []*storage.Memory) []string {
	ids := make([]string, 0, len(memories))
	for _, m := range memories {
		ids = append(ids, m.MemoryID)
	}
	return ids
}

// requireJSONEqual asserts that want and got encode to equivalent JSON, so a
// store may decode numbers or nest values however encoding/json would.
func requireJSONEqual(t *testing.T, want, got any, msgAndArgs ...any) {
	t.Helper()
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(wantJSON), string(gotJSON), msgAndArgs...)
}

// requireSameMap asserts that a JSON column read back as written; a nil and
// an empty map are the same (both mean "nothing stored").
func requireSameMap(t *testing.T, want, got map[string]any, column string) {
	t.Helper()
	if len(want) == 0 {
		require.Empty(t, got, "%s: want empty", column)
		return
	}
	requireJSONEqual(t, want, got, "%s does not round-trip", column)
}

// requireRunEqual asserts that a stored run reads back as written.
func requireRunEqual(t *testing.T, want, got *run.Output) {
	t.Helper()
	require.NotNil(t, got, "run %s: got nil run_data", want.RunID)
	requireJSONEqual(t, want, got, "run %s: run_data does not round-trip", want.RunID)
}

// nilIfEmpty lets an empty listing compare equal to a nil want.
func nilIfEmpty[T any](items []T) []T {
	if len(items) == 0 {
		return nil
	}
	return items
}
