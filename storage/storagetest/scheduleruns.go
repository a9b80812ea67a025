package storagetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

// runningAttempt is a running first attempt of scheduleID due at
// triggeredAt.
func runningAttempt(scheduleID string, triggeredAt int64) *storage.ScheduleRun {
	return &storage.ScheduleRun{ScheduleID: scheduleID, Attempt: 1, TriggeredAt: new(triggeredAt), Status: storage.ScheduleRunRunning,
		Input: map[string]any{"message": "good morning"}}
}

func createRun(t *testing.T, store storage.ScheduleStore, r *storage.ScheduleRun) *storage.ScheduleRun {
	t.Helper()
	stored, err := store.CreateScheduleRun(t.Context(), r, "")
	require.NoError(t, err, "create run of schedule %s", r.ScheduleID)
	return stored
}

func scheduleRunIDs(runs []*storage.ScheduleRun) []string {
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func testScheduleCreateRun(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	sched := createSchedule(t, store, testSchedule("morning", alice))
	in := &storage.ScheduleRun{ScheduleID: sched.ID, Attempt: 2, TriggeredAt: new(fireAt), CompletedAt: new(fireAt + 5), Status: storage.ScheduleRunFailed,
		StatusCode: new(int64(500)), RunID: "run-1", SessionID: "session-1", Error: "boom", Input: map[string]any{"message": "hi"},
		Output: map[string]any{"content": "x", "content_type": "str"}, Requirements: json.RawMessage(`[{"tool":"t","confirmed":null}]`),
		UserID: bob, CreatedAt: created}
	stored, err := store.CreateScheduleRun(ctx, in, alice)
	require.NoError(t, err)
	require.NotEmpty(t, stored.ID)
	require.Equal(t, alice, stored.UserID, "the owner is the schedule's, whatever the run says")
	got, err := store.GetScheduleRun(ctx, sched.ID, stored.ID, alice)
	require.NoError(t, err)
	require.Equal(t, stored, got)
	require.JSONEq(t, string(in.Requirements), string(got.Requirements))
	requireSameMap(t, in.Input, got.Input, "input")
	requireSameMap(t, in.Output, got.Output, "output")
	want := *in
	want.ID, want.UserID = got.ID, alice
	want.Input, want.Output, want.Requirements = nil, nil, nil
	got.Input, got.Output, got.Requirements = nil, nil, nil
	require.Equal(t, &want, got, "every column reads back as written")

	_, err = store.GetScheduleRun(ctx, sched.ID, stored.ID, bob)
	require.ErrorIs(t, err, storage.ErrNotFound, "bob reads alice's run")
	_, err = store.GetScheduleRun(ctx, "other", stored.ID, "")
	require.ErrorIs(t, err, storage.ErrNotFound, "a run is read through its own schedule")
	_, err = store.CreateScheduleRun(ctx, runningAttempt("missing", fireAt), "")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = store.CreateScheduleRun(ctx, &storage.ScheduleRun{ScheduleID: sched.ID, Status: "done"}, "")
	require.ErrorIs(t, err, storage.ErrInvalid, "an unknown status")
	bad := runningAttempt(sched.ID, fireAt)
	bad.Requirements = json.RawMessage(`[not json`)
	_, err = store.CreateScheduleRun(ctx, bad, "")
	require.ErrorIs(t, err, storage.ErrInvalid, "requirements that are not JSON")
}

func testScheduleClaim(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	sched := createSchedule(t, store, testSchedule("morning", alice))
	early := createRun(t, store, runningAttempt(sched.ID, fireAt))
	later := createRun(t, store, runningAttempt(sched.ID, fireAt+100))
	done := runningAttempt(sched.ID, fireAt-50)
	done.Status = storage.ScheduleRunSuccess
	createRun(t, store, done)

	claim := func(worker string, now, staleBefore int64, limit int) []*storage.ScheduleRun {
		t.Helper()
		claimed, err := store.ClaimScheduleRuns(ctx, storage.ScheduleRunClaim{Worker: worker, Now: now, StaleBefore: staleBefore, Limit: limit})
		require.NoError(t, err)
		return claimed
	}
	claimed := claim("w1", fireAt+50, fireAt+50-300, 0)
	require.Equal(t, []string{early.ID}, scheduleRunIDs(claimed), "only a running attempt that is due")
	require.Equal(t, "w1", claimed[0].LockedBy)
	require.Equal(t, new(fireAt+50), claimed[0].LockedAt)
	require.Empty(t, claim("w2", fireAt+50, fireAt+50-300, 0), "a leased attempt is not claimed again")

	claimed = claim("w2", fireAt+150, fireAt+10, 0)
	require.Equal(t, []string{later.ID}, scheduleRunIDs(claimed), "w1's lease of the early attempt is still fresh")
	claimed = claim("w3", fireAt+400, fireAt+50, 0)
	require.Equal(t, []string{early.ID}, scheduleRunIDs(claimed), "a lease as old as StaleBefore has lapsed")
	require.Equal(t, "w3", claimed[0].LockedBy)

	claimed = claim("w4", fireAt+1000, fireAt+999, 1)
	require.Equal(t, []string{early.ID}, scheduleRunIDs(claimed), "earliest first, up to the limit")
	claimed = claim("w4", fireAt+1000, fireAt+999, 0)
	require.Equal(t, []string{later.ID}, scheduleRunIDs(claimed))

	_, err := store.ClaimScheduleRuns(ctx, storage.ScheduleRunClaim{Now: fireAt})
	require.ErrorIs(t, err, storage.ErrInvalid, "a claim names its worker")
}

// claimRace leases many running attempts from many goroutines spread over
// stores (replicas of one database), each claiming a few at a time until
// none is left: every attempt is leased exactly once.
func claimRace(t *testing.T, stores []storage.Store) {
	replicas := scheduleStores(t, stores)
	first := replicas[0]
	sched := createSchedule(t, first, testSchedule("raced", alice))
	const attempts = 40
	for i := range attempts {
		createRun(t, first, runningAttempt(sched.ID, fireAt+int64(i)))
	}
	claimedBy := make([][]string, concurrentWriters)
	runConcurrently(t, concurrentWriters, func(i int) error {
		store := replicas[i%len(replicas)]
		for {
			claimed, err := store.ClaimScheduleRuns(t.Context(), storage.ScheduleRunClaim{Worker: fmt.Sprintf("w%d", i), Now: fireAt + attempts,
				StaleBefore: fireAt - 300, Limit: 3})
			if err != nil {
				return err
			}
			if len(claimed) == 0 {
				return nil
			}
			for _, r := range claimed {
				if r.LockedBy != fmt.Sprintf("w%d", i) {
					return fmt.Errorf("claim returned run %s leased to %s", r.ID, r.LockedBy)
				}
			}
			claimedBy[i] = append(claimedBy[i], scheduleRunIDs(claimed)...)
		}
	})
	seen := map[string]int{}
	for worker, ids := range claimedBy {
		for _, id := range ids {
			prev, twice := seen[id]
			require.False(t, twice, "run %s leased to w%d and w%d", id, prev, worker)
			seen[id] = worker
		}
	}
	require.Len(t, seen, attempts, "every attempt is leased")
}

func testScheduleRunUpdate(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	sched := createSchedule(t, store, testSchedule("morning", alice))
	attempt := createRun(t, store, runningAttempt(sched.ID, fireAt))
	claimed, err := store.ClaimScheduleRuns(ctx, storage.ScheduleRunClaim{Worker: "w1", Now: fireAt, StaleBefore: fireAt - 300})
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	_, err = store.UpdateScheduleRun(ctx, attempt.ID, storage.ScheduleRunUpdate{Worker: "w2", Now: fireAt + 1, Status: new(storage.ScheduleRunSuccess)})
	require.ErrorIs(t, err, storage.ErrConflict, "another worker's lease")
	got, err := store.GetScheduleRun(ctx, sched.ID, attempt.ID, "")
	require.NoError(t, err)
	require.Equal(t, storage.ScheduleRunRunning, got.Status, "a refused update writes nothing")
	require.Equal(t, new(fireAt), got.LockedAt)

	renewed, err := store.UpdateScheduleRun(ctx, attempt.ID, storage.ScheduleRunUpdate{Worker: "w1", Now: fireAt + 30, RunID: new("run-1"), SessionID: new("session-1")})
	require.NoError(t, err)
	require.Equal(t, new(fireAt+30), renewed.LockedAt, "an update renews the lease")
	require.Equal(t, "run-1", renewed.RunID)
	require.Equal(t, storage.ScheduleRunRunning, renewed.Status)
	requireSameMap(t, attempt.Input, renewed.Input, "input is left as it is")

	// The lease lapses and another worker takes the attempt over: the
	// first worker's late write is refused.
	claimed, err = store.ClaimScheduleRuns(ctx, storage.ScheduleRunClaim{Worker: "w2", Now: fireAt + 400, StaleBefore: fireAt + 100})
	require.NoError(t, err)
	require.Equal(t, []string{attempt.ID}, scheduleRunIDs(claimed))
	_, err = store.UpdateScheduleRun(ctx, attempt.ID, storage.ScheduleRunUpdate{Worker: "w1", Now: fireAt + 401, Status: new(storage.ScheduleRunFailed)})
	require.ErrorIs(t, err, storage.ErrConflict, "a lease lost to a takeover")

	finished, err := store.UpdateScheduleRun(ctx, attempt.ID, storage.ScheduleRunUpdate{Worker: "w2", Now: fireAt + 402, Status: new(storage.ScheduleRunPaused),
		StatusCode: new(int64(200)), Output: map[string]any{"content": "done", "content_type": "str"}, Requirements: json.RawMessage(`[{"id":"req-1"}]`),
		CompletedAt: new(fireAt + 402), Error: new("")})
	require.NoError(t, err)
	require.Equal(t, storage.ScheduleRunPaused, finished.Status)
	require.Equal(t, new(int64(200)), finished.StatusCode)
	require.Equal(t, new(fireAt+402), finished.CompletedAt)
	require.JSONEq(t, `[{"id":"req-1"}]`, string(finished.Requirements))
	requireSameMap(t, map[string]any{"content": "done", "content_type": "str"}, finished.Output, "output")
	require.Equal(t, "run-1", finished.RunID, "set fields only")

	_, err = store.UpdateScheduleRun(ctx, attempt.ID, storage.ScheduleRunUpdate{Worker: "w2", Now: fireAt + 403, Status: new(storage.ScheduleRunFailed)})
	require.ErrorIs(t, err, storage.ErrConflict, "an attempt no longer running")
	claimed, err = store.ClaimScheduleRuns(ctx, storage.ScheduleRunClaim{Worker: "w3", Now: fireAt + 9999, StaleBefore: fireAt + 9999})
	require.NoError(t, err)
	require.Empty(t, claimed, "a finished attempt is never claimed")
	_, err = store.UpdateScheduleRun(ctx, "missing", storage.ScheduleRunUpdate{Worker: "w1", Now: fireAt})
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = store.UpdateScheduleRun(ctx, attempt.ID, storage.ScheduleRunUpdate{Now: fireAt})
	require.ErrorIs(t, err, storage.ErrInvalid, "an update names its worker")
}

func testScheduleListRuns(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	sched := createSchedule(t, store, testSchedule("morning", alice))
	other := createSchedule(t, store, testSchedule("evening", alice))
	var ids []string
	for i := range 5 {
		r := runningAttempt(sched.ID, fireAt)
		r.ID, r.CreatedAt = fmt.Sprintf("run-%d", i), created+int64(i)
		ids = append(ids, createRun(t, store, r).ID)
	}
	createRun(t, store, runningAttempt(other.ID, fireAt))

	runs, total, err := store.ListScheduleRuns(ctx, sched.ID, alice, storage.Page{})
	require.NoError(t, err)
	require.Equal(t, 5, total)
	require.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, scheduleRunIDs(runs), "newest first")
	runs, total, err = store.ListScheduleRuns(ctx, sched.ID, "", storage.Page{Limit: 2, Page: 3})
	require.NoError(t, err)
	require.Equal(t, 5, total)
	require.Equal(t, []string{ids[0]}, scheduleRunIDs(runs))
	_, _, err = store.ListScheduleRuns(ctx, "missing", "", storage.Page{})
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, _, err = store.ListScheduleRuns(ctx, sched.ID, "", storage.Page{Page: -1, Limit: 1})
	require.ErrorIs(t, err, storage.ErrInvalid)
}
