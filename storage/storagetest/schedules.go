package storagetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

func scheduleTests() []conformanceTest {
	return []conformanceTest{
		{"CreateGetRoundTrip", testScheduleRoundTrip},
		{"OwnerScoping", testScheduleOwnerScoping},
		{"ListNewestFirst", testScheduleList},
		{"Update", testScheduleUpdate},
		{"NamesUniquePerOwner", testScheduleNames},
		{"DeleteCascadesRuns", testScheduleDeleteCascades},
		{"DueAndNextDue", testScheduleDue},
		{"Fire", testScheduleFire},
		{"FireExactlyOnce", func(t *testing.T, s storage.Store) { fireRace(t, []storage.Store{s}) }},
		{"CreateRun", testScheduleCreateRun},
		{"ClaimLeases", testScheduleClaim},
		{"ClaimNeverTwice", func(t *testing.T, s storage.Store) { claimRace(t, []storage.Store{s}) }},
		{"UpdateRunNeedsLease", testScheduleRunUpdate},
		{"ListRuns", testScheduleListRuns},
	}
}

// scheduleStore returns store as a [storage.ScheduleStore]; every SQL store
// is one.
func scheduleStore(t *testing.T, store storage.Store) storage.ScheduleStore {
	t.Helper()
	schedules, ok := store.(storage.ScheduleStore)
	require.True(t, ok, "%T does not implement storage.ScheduleStore", store)
	return schedules
}

// The suite's schedule times: epoch seconds far from the wall clock, so
// nothing depends on it.
const (
	fireAt  int64 = 1_900_000_000
	created int64 = 1_800_000_000
)

// testSchedule is an enabled schedule of name owned by userID, due at
// fireAt.
func testSchedule(name, userID string) *storage.Schedule {
	return &storage.Schedule{
		Name: name, Description: "every morning", Method: "POST", Endpoint: "/agents/agent-1/runs",
		Payload: map[string]any{"message": "good morning", "metadata": map[string]any{"k": "v"}}, CronExpr: "0 9 * * *",
		Timezone: "Europe/Paris", TimeoutSeconds: 3600, MaxRetries: 2, RetryDelaySeconds: 60, Enabled: true,
		NextRunAt: new(fireAt), UserID: userID,
	}
}

// scheduleStores returns each of stores as a [storage.ScheduleStore].
func scheduleStores(t *testing.T, stores []storage.Store) []storage.ScheduleStore {
	t.Helper()
	out := make([]storage.ScheduleStore, len(stores))
	for i, store := range stores {
		out[i] = scheduleStore(t, store)
	}
	return out
}

func createSchedule(t *testing.T, store storage.ScheduleStore, s *storage.Schedule) *storage.Schedule {
	t.Helper()
	stored, err := store.CreateSchedule(t.Context(), s)
	require.NoError(t, err, "create schedule %s", s.Name)
	return stored
}

func scheduleNames(schedules []*storage.Schedule) []string {
	names := make([]string, 0, len(schedules))
	for _, s := range schedules {
		names = append(names, s.Name)
	}
	return names
}

func testScheduleRoundTrip(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	in := testSchedule("morning", alice)
	in.ManagedBy, in.TargetType, in.TargetID = "studio", "agent", "agent-1"
	in.CreatedByRunID, in.CreatedBySessionID = "run-1", "session-1"
	stored := createSchedule(t, store, in)
	require.NotEmpty(t, stored.ID, "an id is assigned")
	require.NotZero(t, stored.CreatedAt, "created_at defaults to now")
	require.Equal(t, stored.CreatedAt, stored.UpdatedAt)

	got, err := store.GetSchedule(t.Context(), stored.ID, "")
	require.NoError(t, err)
	require.Equal(t, stored, got, "the returned row is the stored row")
	want := *in
	want.ID, want.CreatedAt, want.UpdatedAt = got.ID, got.CreatedAt, got.UpdatedAt
	requireSameMap(t, want.Payload, got.Payload, "payload")
	want.Payload, got.Payload = nil, nil
	require.Equal(t, &want, got, "every column reads back as written")

	// NULL columns read back as nil and "".
	bare, err := store.CreateSchedule(t.Context(), &storage.Schedule{ID: "bare", Name: "bare", Method: "GET", Endpoint: "/health", CronExpr: "* * * * *"})
	require.NoError(t, err)
	require.Equal(t, "bare", bare.ID, "a given id is kept")
	require.Nil(t, bare.NextRunAt)
	require.Nil(t, bare.LockedAt)
	require.Nil(t, bare.Payload)
	require.False(t, bare.Enabled)
	require.Empty(t, bare.UserID)

	_, err = store.CreateSchedule(t.Context(), &storage.Schedule{ID: "bare", Name: "other", Method: "GET", Endpoint: "/health", CronExpr: "* * * * *"})
	require.ErrorIs(t, err, storage.ErrConflict, "an id in use")
	for _, bad := range []*storage.Schedule{
		{Method: "GET", Endpoint: "/x", CronExpr: "* * * * *"},
		{Name: "x", Endpoint: "/x", CronExpr: "* * * * *"},
		{Name: "x", Method: "GET", CronExpr: "* * * * *"},
		{Name: "x", Method: "GET", Endpoint: "/x"},
	} {
		_, err := store.CreateSchedule(t.Context(), bad)
		require.ErrorIs(t, err, storage.ErrInvalid, "%+v", bad)
	}
	_, err = store.CreateSchedule(t.Context(), &storage.Schedule{Name: "nul\x00", Method: "GET", Endpoint: "/x", CronExpr: "* * * * *"})
	require.ErrorIs(t, err, storage.ErrInvalidText)
}

func testScheduleOwnerScoping(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	mine := createSchedule(t, store, testSchedule("mine", alice))
	unowned := createSchedule(t, store, testSchedule("system", ""))

	_, err := store.GetSchedule(ctx, mine.ID, bob)
	require.ErrorIs(t, err, storage.ErrNotFound, "bob reads alice's schedule")
	_, err = store.GetSchedule(ctx, unowned.ID, bob)
	require.ErrorIs(t, err, storage.ErrNotFound, "a scoped read sees only the user's own schedules")
	got, err := store.GetSchedule(ctx, mine.ID, alice)
	require.NoError(t, err)
	require.Equal(t, mine, got)

	_, err = store.UpdateSchedule(ctx, mine.ID, bob, storage.ScheduleUpdate{Description: new("bob was here")})
	require.ErrorIs(t, err, storage.ErrNotFound, "bob updates alice's schedule")
	require.ErrorIs(t, store.DeleteSchedule(ctx, mine.ID, bob), storage.ErrNotFound, "bob deletes alice's schedule")
	_, err = store.CreateScheduleRun(ctx, runningAttempt(mine.ID, fireAt), bob)
	require.ErrorIs(t, err, storage.ErrNotFound, "bob runs alice's schedule")
	_, _, err = store.ListScheduleRuns(ctx, mine.ID, bob, storage.Page{})
	require.ErrorIs(t, err, storage.ErrNotFound, "bob lists the runs of alice's schedule")

	got, err = store.GetSchedule(ctx, mine.ID, "")
	require.NoError(t, err)
	require.Equal(t, mine, got, "alice's schedule is untouched")

	listed, total, err := store.ListSchedules(ctx, storage.ScheduleQuery{UserID: bob})
	require.NoError(t, err)
	require.Empty(t, listed)
	require.Zero(t, total)
	listed, total, err = store.ListSchedules(ctx, storage.ScheduleQuery{UserID: alice})
	require.NoError(t, err)
	require.Equal(t, []string{"mine"}, scheduleNames(listed))
	require.Equal(t, 1, total)
}

func testScheduleList(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		in := testSchedule(name, alice)
		in.CreatedAt = created + int64(i)
		in.Enabled = name != "c"
		createSchedule(t, store, in)
	}
	tie := testSchedule("tie", bob)
	tie.ID, tie.CreatedAt = "zzz", created+4 // ties with e on created_at
	createSchedule(t, store, tie)

	all, total, err := store.ListSchedules(ctx, storage.ScheduleQuery{})
	require.NoError(t, err)
	require.Equal(t, 6, total)
	require.Equal(t, []string{"tie", "e", "d", "c", "b", "a"}, scheduleNames(all), "newest first, then by id")

	page, total, err := store.ListSchedules(ctx, storage.ScheduleQuery{UserID: alice, Page: storage.Page{Limit: 2, Page: 2}})
	require.NoError(t, err)
	require.Equal(t, 5, total, "the total counts every match, not the page")
	require.Equal(t, []string{"c", "b"}, scheduleNames(page))

	enabled, total, err := store.ListSchedules(ctx, storage.ScheduleQuery{UserID: alice, Enabled: new(true)})
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Equal(t, []string{"e", "d", "b", "a"}, scheduleNames(enabled))
	disabled, _, err := store.ListSchedules(ctx, storage.ScheduleQuery{Enabled: new(false)})
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, scheduleNames(disabled))

	_, _, err = store.ListSchedules(ctx, storage.ScheduleQuery{Page: storage.Page{Limit: -1}})
	require.ErrorIs(t, err, storage.ErrInvalid)
}

func testScheduleUpdate(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	in := testSchedule("morning", alice)
	in.ManagedBy, in.TargetType, in.TargetID, in.CreatedByRunID = "studio", "agent", "agent-1", "run-1"
	const longAgo = 1000
	in.CreatedAt, in.UpdatedAt = longAgo, longAgo
	stored := createSchedule(t, store, in)

	updated, err := store.UpdateSchedule(ctx, stored.ID, alice, storage.ScheduleUpdate{
		Name: new("evening"), Description: new(""), CronExpr: new("0 18 * * *"), Timezone: new("UTC"), MaxRetries: new(int64(0)),
		Payload: map[string]any{"message": "good evening"}, SetPayload: true, Enabled: new(false), DisabledReason: new("endpoint_drift:x"),
		SetNextRunAt: true, NextRunAt: nil, UpdatedByRunID: "run-2", UpdatedBySessionID: "session-2",
	})
	require.NoError(t, err)
	require.Equal(t, "evening", updated.Name)
	require.Empty(t, updated.Description)
	require.Equal(t, "0 18 * * *", updated.CronExpr)
	require.Equal(t, "UTC", updated.Timezone)
	require.Zero(t, updated.MaxRetries)
	requireSameMap(t, map[string]any{"message": "good evening"}, updated.Payload, "payload")
	require.False(t, updated.Enabled)
	require.Equal(t, "endpoint_drift:x", updated.DisabledReason)
	require.Nil(t, updated.NextRunAt, "SetNextRunAt with nil stores NULL")
	require.Equal(t, "run-2", updated.UpdatedByRunID)
	require.Equal(t, "session-2", updated.UpdatedBySessionID)
	require.NotEqual(t, int64(longAgo), updated.UpdatedAt, "updated_at moves")
	// Untouched columns stay.
	require.Equal(t, stored.Method, updated.Method)
	require.Equal(t, stored.Endpoint, updated.Endpoint)
	require.Equal(t, stored.TimeoutSeconds, updated.TimeoutSeconds)
	require.Equal(t, stored.RetryDelaySeconds, updated.RetryDelaySeconds)
	require.Equal(t, int64(longAgo), updated.CreatedAt)
	require.Equal(t, alice, updated.UserID)
	require.Equal(t, "studio", updated.ManagedBy)
	require.Equal(t, "agent-1", updated.TargetID)
	require.Equal(t, "run-1", updated.CreatedByRunID)

	// An empty update changes nothing but updated_at; an empty
	// provenance run leaves the recorded one.
	again, err := store.UpdateSchedule(ctx, stored.ID, "", storage.ScheduleUpdate{Enabled: new(true), DisabledReason: new(""), SetNextRunAt: true, NextRunAt: new(fireAt)})
	require.NoError(t, err)
	require.True(t, again.Enabled)
	require.Empty(t, again.DisabledReason, "an empty reason stores NULL")
	require.Equal(t, new(fireAt), again.NextRunAt)
	require.Equal(t, "run-2", again.UpdatedByRunID)
	requireSameMap(t, map[string]any{"message": "good evening"}, again.Payload, "payload")

	_, err = store.UpdateSchedule(ctx, "missing", "", storage.ScheduleUpdate{Name: new("x")})
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = store.UpdateSchedule(ctx, stored.ID, "", storage.ScheduleUpdate{Name: new(" ")})
	require.ErrorIs(t, err, storage.ErrInvalid, "a schedule keeps a name")
}

func testScheduleNames(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	createSchedule(t, store, testSchedule("daily", alice))
	createSchedule(t, store, testSchedule("daily", bob))
	createSchedule(t, store, testSchedule("daily", ""))

	_, err := store.CreateSchedule(ctx, testSchedule("daily", alice))
	require.ErrorIs(t, err, storage.ErrConflict, "one owner uses a name once")
	require.ErrorContains(t, err, "daily", "the conflict names the name")
	_, err = store.CreateSchedule(ctx, testSchedule("daily", ""))
	require.ErrorIs(t, err, storage.ErrConflict, "two unowned schedules share no name")

	other := createSchedule(t, store, testSchedule("weekly", alice))
	_, err = store.UpdateSchedule(ctx, other.ID, alice, storage.ScheduleUpdate{Name: new("daily")})
	require.ErrorIs(t, err, storage.ErrConflict, "a rename onto a name in use")
	got, err := store.GetSchedule(ctx, other.ID, "")
	require.NoError(t, err)
	require.Equal(t, "weekly", got.Name, "a refused rename changes nothing")
	renamed, err := store.UpdateSchedule(ctx, other.ID, alice, storage.ScheduleUpdate{Name: new("nightly")})
	require.NoError(t, err)
	require.Equal(t, "nightly", renamed.Name)

	_, total, err := store.ListSchedules(ctx, storage.ScheduleQuery{})
	require.NoError(t, err)
	require.Equal(t, 4, total, "no refused write left a row")
}

func testScheduleDeleteCascades(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	doomed := createSchedule(t, store, testSchedule("doomed", alice))
	kept := createSchedule(t, store, testSchedule("kept", alice))
	doomedRun := createRun(t, store, runningAttempt(doomed.ID, fireAt))
	createRun(t, store, runningAttempt(doomed.ID, fireAt+1))
	keptRun := createRun(t, store, runningAttempt(kept.ID, fireAt))

	require.NoError(t, store.DeleteSchedule(ctx, doomed.ID, alice))
	_, err := store.GetSchedule(ctx, doomed.ID, "")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = store.GetScheduleRun(ctx, doomed.ID, doomedRun.ID, "")
	require.ErrorIs(t, err, storage.ErrNotFound, "a deleted schedule's runs go with it")
	claimed, err := store.ClaimScheduleRuns(ctx, storage.ScheduleRunClaim{Worker: "w", Now: fireAt + 10, StaleBefore: fireAt - 300})
	require.NoError(t, err)
	require.Equal(t, []string{keptRun.ID}, scheduleRunIDs(claimed), "only the other schedule's run is left")
	require.ErrorIs(t, store.DeleteSchedule(ctx, doomed.ID, ""), storage.ErrNotFound, "deleting twice")
	_, err = store.GetScheduleRun(ctx, kept.ID, keptRun.ID, alice)
	require.NoError(t, err)
}

func testScheduleDue(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	next, err := store.NextDue(ctx)
	require.NoError(t, err)
	require.Nil(t, next, "no schedule, no fire")

	for i, name := range []string{"late", "early", "off", "never", "future"} {
		in := testSchedule(name, alice)
		switch name {
		case "late":
			in.NextRunAt = new(fireAt - 10)
		case "early":
			in.NextRunAt = new(fireAt - 20)
		case "off":
			in.NextRunAt, in.Enabled = new(fireAt-30), false
		case "never":
			in.NextRunAt = nil
		case "future":
			in.NextRunAt = new(fireAt + 100)
		}
		in.CreatedAt = created + int64(i)
		createSchedule(t, store, in)
	}
	due, err := store.DueSchedules(ctx, fireAt, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"early", "late"}, scheduleNames(due), "enabled, due, earliest first")
	due, err = store.DueSchedules(ctx, fireAt, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"early"}, scheduleNames(due))
	due, err = store.DueSchedules(ctx, fireAt+100, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"early", "late", "future"}, scheduleNames(due), "due at the instant itself")
	_, err = store.DueSchedules(ctx, fireAt, -1)
	require.ErrorIs(t, err, storage.ErrInvalid)

	next, err = store.NextDue(ctx)
	require.NoError(t, err)
	require.Equal(t, new(fireAt-20), next, "a disabled schedule never fires")
}

func testScheduleFire(t *testing.T, s storage.Store) {
	store := scheduleStore(t, s)
	ctx := t.Context()
	sched := createSchedule(t, store, testSchedule("morning", alice))

	attempt := runningAttempt("", fireAt)
	attempt.LockedBy, attempt.LockedAt = "w1", new(fireAt)
	first, err := store.FireSchedule(ctx, storage.ScheduleFire{ScheduleID: sched.ID, Due: fireAt, NextRunAt: new(fireAt + 86400), Run: attempt})
	require.NoError(t, err)
	require.NotEmpty(t, first.ID)
	require.Equal(t, sched.ID, first.ScheduleID)
	require.Equal(t, alice, first.UserID, "the run is the schedule owner's")
	require.Equal(t, "w1", first.LockedBy, "the first attempt may start leased to its firer")
	require.NotZero(t, first.CreatedAt)
	got, err := store.GetSchedule(ctx, sched.ID, "")
	require.NoError(t, err)
	require.Equal(t, new(fireAt+86400), got.NextRunAt, "the schedule moved on")
	require.True(t, got.Enabled)

	_, err = store.FireSchedule(ctx, storage.ScheduleFire{ScheduleID: sched.ID, Due: fireAt, NextRunAt: new(fireAt + 86400), Run: runningAttempt("", fireAt)})
	require.ErrorIs(t, err, storage.ErrConflict, "the same fire twice")
	_, total, err := store.ListScheduleRuns(ctx, sched.ID, "", storage.Page{})
	require.NoError(t, err)
	require.Equal(t, 1, total, "a lost fire writes nothing")

	// A fire that disables the schedule, without a run.
	run, err := store.FireSchedule(ctx, storage.ScheduleFire{ScheduleID: sched.ID, Due: fireAt + 86400, Disable: "invalid cron"})
	require.NoError(t, err)
	require.Nil(t, run)
	got, err = store.GetSchedule(ctx, sched.ID, "")
	require.NoError(t, err)
	require.False(t, got.Enabled)
	require.Equal(t, "invalid cron", got.DisabledReason)
	require.Nil(t, got.NextRunAt)

	// A disabled schedule does not fire, even at its stored due time.
	_, err = store.UpdateSchedule(ctx, sched.ID, "", storage.ScheduleUpdate{SetNextRunAt: true, NextRunAt: new(fireAt + 5)})
	require.NoError(t, err)
	_, err = store.FireSchedule(ctx, storage.ScheduleFire{ScheduleID: sched.ID, Due: fireAt + 5, Run: runningAttempt("", fireAt)})
	require.ErrorIs(t, err, storage.ErrConflict, "a disabled schedule")
	_, err = store.FireSchedule(ctx, storage.ScheduleFire{ScheduleID: "missing", Due: fireAt, Run: runningAttempt("", fireAt)})
	require.ErrorIs(t, err, storage.ErrConflict, "a deleted schedule")
	_, total, err = store.ListScheduleRuns(ctx, sched.ID, "", storage.Page{})
	require.NoError(t, err)
	require.Equal(t, 1, total)
}

// fireRace fires one schedule's due time from many goroutines spread over
// stores (replicas of one database): exactly one wins, the others get
// ErrConflict, and one run row is written.
func fireRace(t *testing.T, stores []storage.Store) {
	replicas := scheduleStores(t, stores)
	first := replicas[0]
	sched := createSchedule(t, first, testSchedule("raced", alice))
	wins := make([]bool, concurrentWriters)
	runConcurrently(t, concurrentWriters, func(i int) error {
		_, err := replicas[i%len(replicas)].FireSchedule(t.Context(), storage.ScheduleFire{ScheduleID: sched.ID, Due: fireAt, NextRunAt: new(fireAt + 60),
			Run: runningAttempt("", fireAt)})
		if err == nil {
			wins[i] = true
			return nil
		}
		if errors.Is(err, storage.ErrConflict) {
			return nil
		}
		return err
	})
	won := 0
	for _, w := range wins {
		if w {
			won++
		}
	}
	require.Equal(t, 1, won, "exactly one firer wins a fire")
	runs, total, err := first.ListScheduleRuns(t.Context(), sched.ID, "", storage.Page{})
	require.NoError(t, err)
	require.Equal(t, 1, total, "one fire, one run: %v", scheduleRunIDs(runs))
}
