package storagetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

// concurrentWriters is how many goroutines write at once. It is well above
// any sensible connection pool size, so writes really do contend.
const concurrentWriters = 50

func concurrencyTests() []conformanceTest {
	return []conformanceTest{
		{"RunsIntoOneSession", testConcurrentRuns},
		{"SaveRunsIntoOneSession", testConcurrentSaveRuns},
		{"RunUpdatesAndInserts", testConcurrentRunUpdates},
		{"Sessions", testConcurrentSessions},
		{"TranscriptAppends", testConcurrentTranscriptAppends},
	}
}

// runConcurrently calls write(i) for i in [0, n) from n goroutines at once and
// fails the test if any call failed. Assertions stay on the test goroutine.
func runConcurrently(t *testing.T, n int, write func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = write(i)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "writer %d", i)
	}
}

// requirePermutation asserts that indexes hold each of 0..len-1 exactly once.
func requirePermutation(t *testing.T, indexes []int64, what string) {
	t.Helper()
	sorted := slices.Clone(indexes)
	slices.Sort(sorted)
	for i, index := range sorted {
		require.Equal(t, int64(i), index, "%s: %v is not a permutation of 0..%d", what, indexes, len(indexes)-1)
	}
}

// requireStoredIndexes requires the session to hold n runs, none lost,
// listed by GetRuns in run_index order 0..n-1.
func requireStoredIndexes(t *testing.T, store storage.Store, sessionID string, n int) {
	t.Helper()
	runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: sessionID})
	require.NoError(t, err)
	require.Equal(t, n, total, "no run was lost")
	require.Len(t, runs, n)
	stored := make([]int64, 0, len(runs))
	for _, rec := range runs {
		require.NotNil(t, rec.RunIndex)
		stored = append(stored, *rec.RunIndex)
	}
	requirePermutation(t, stored, "stored run_index")
	require.True(t, slices.IsSorted(stored), "GetRuns orders by run_index")
}

func testConcurrentRuns(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	returned := make([]int64, concurrentWriters)
	runConcurrently(t, concurrentWriters, func(i int) error {
		stored, err := store.UpsertRun(t.Context(), testRun("s-1", fmt.Sprintf("r-%02d", i), ""))
		if err != nil {
			return err
		}
		if stored.RunIndex == nil {
			return fmt.Errorf("run %d: stored record has no run_index", i)
		}
		returned[i] = *stored.RunIndex
		return nil
	})
	requirePermutation(t, returned, "run_index returned by UpsertRun")
	requireStoredIndexes(t, store, "s-1", concurrentWriters)

	session, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{IncludeRuns: true})
	require.NoError(t, err)
	require.Len(t, session.Runs, concurrentWriters)
}

// testConcurrentSaveRuns: runs saved with their session at once, as the
// runs of one conversation on several replicas are, take distinct
// run_index values, and every save counts on the session's version.
func testConcurrentSaveRuns(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", alice)
	returned := make([]int64, concurrentWriters)
	runConcurrently(t, concurrentWriters, func(i int) error {
		session := &storage.Session{SessionID: "s-1", SessionType: storage.SessionTypeAgent, AgentID: "agent-1", UserID: alice}
		_, rec, err := store.SaveRun(t.Context(), session, testRun("s-1", fmt.Sprintf("r-%02d", i), alice))
		if err != nil {
			return err
		}
		returned[i] = *rec.RunIndex
		return nil
	})
	requirePermutation(t, returned, "run_index returned by SaveRun")
	requireStoredIndexes(t, store, "s-1", concurrentWriters)
	session, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{UserID: alice})
	require.NoError(t, err)
	require.EqualValues(t, concurrentWriters, session.UpdateCount, "every save moved the session's version")
}

func testConcurrentRunUpdates(t *testing.T, store storage.Store) {
	// Half the writers update existing runs while the other half insert new
	// ones: updates must keep their positions and inserts must not collide.
	newSession(t, store, "s-1", "")
	const existing = concurrentWriters / 2
	for i := range existing {
		newRun(t, store, "s-1", fmt.Sprintf("r-old-%02d", i), "")
	}
	runConcurrently(t, concurrentWriters, func(i int) error {
		rec := testRun("s-1", fmt.Sprintf("r-new-%02d", i), "")
		if i < existing {
			rec = testRun("s-1", fmt.Sprintf("r-old-%02d", i), "")
			rec.Run.Content = "updated"
		}
		_, err := store.UpsertRun(t.Context(), rec)
		return err
	})

	runs, total, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s-1"})
	require.NoError(t, err)
	require.Equal(t, concurrentWriters, total)
	indexes := make([]int64, 0, len(runs))
	for _, rec := range runs {
		indexes = append(indexes, *rec.RunIndex)
	}
	requirePermutation(t, indexes, "run_index after concurrent updates and inserts")
	for i := range existing {
		got, err := store.GetRun(t.Context(), fmt.Sprintf("r-old-%02d", i), "")
		require.NoError(t, err)
		require.Equal(t, int64(i), *got.RunIndex, "an updated run keeps its position")
		require.Equal(t, "updated", got.Run.Content)
	}
}

func testConcurrentSessions(t *testing.T, store storage.Store) {
	runConcurrently(t, concurrentWriters, func(i int) error {
		userID := alice
		if i%2 == 1 {
			userID = bob
		}
		_, err := store.UpsertSession(t.Context(), &storage.Session{
			SessionID:   fmt.Sprintf("s-%02d", i),
			SessionType: storage.SessionTypeAgent,
			AgentID:     "agent-1",
			UserID:      userID,
			SessionData: map[string]any{storage.SessionNameKey: fmt.Sprintf("session %d", i)},
		})
		return err
	})
	sessions, total, err := store.ListSessions(t.Context(), storage.SessionQuery{SortBy: "session_id", SortOrder: storage.SortAsc})
	require.NoError(t, err)
	require.Equal(t, concurrentWriters, total, "no session was lost")
	for i, s := range sessions {
		require.Equal(t, fmt.Sprintf("s-%02d", i), s.SessionID)
		require.Equal(t, fmt.Sprintf("session %d", i), s.Name())
	}
	_, aliceTotal, err := store.ListSessions(t.Context(), storage.SessionQuery{UserID: alice})
	require.NoError(t, err)
	require.Equal(t, concurrentWriters/2, aliceTotal)
}

func testConcurrentTranscriptAppends(t *testing.T, store storage.Store) {
	const perAppend = 3
	newSession(t, store, "s-1", "")
	batches := make([][]storage.TranscriptEntry, concurrentWriters)
	runConcurrently(t, concurrentWriters, func(i int) error {
		lines := make([]json.RawMessage, perAppend)
		for j := range lines {
			lines[j] = json.RawMessage(fmt.Sprintf(`{"type":"assistant","uuid":"w%02d-%d"}`, i, j))
		}
		stored, err := store.AppendTranscript(t.Context(), mainTranscript, "s-1", "", lines)
		batches[i] = stored
		return err
	})

	for i, batch := range batches {
		require.Len(t, batch, perAppend, "writer %d", i)
		for j, e := range batch {
			require.Equal(t, batch[0].Position+int64(j), e.Position, "writer %d: one append takes consecutive positions", i)
			require.Equal(t, fmt.Sprintf("w%02d-%d", i, j), e.EntryID)
		}
	}

	read, err := store.ReadTranscript(t.Context(), mainTranscript, "", 0)
	require.NoError(t, err)
	require.Len(t, read, concurrentWriters*perAppend, "no entry was lost")
	seen := make(map[string]bool, len(read))
	for i, e := range read {
		require.Equal(t, int64(i+1), e.Position, "positions run 1..N without gaps or duplicates")
		require.False(t, seen[e.EntryID], "entry %s stored twice", e.EntryID)
		seen[e.EntryID] = true
	}
}
