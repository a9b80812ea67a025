package scheduler_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/scheduler"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

func TestParseCron(t *testing.T) {
	for _, ok := range []string{"* * * * *", "0 9 * * 1-5", "*/15 * * * *", "@hourly", "@every 5m"} {
		_, _, err := scheduler.ParseCron(ok, "Europe/Paris")
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{"", "* * * *", "0 0 * * * *", "0 0 L * *", "TZ=UTC * * * * *", "61 * * * *"} {
		_, _, err := scheduler.ParseCron(bad, "UTC")
		require.EqualError(t, err, "Invalid cron expression: "+bad)
	}
	_, _, err := scheduler.ParseCron("* * * * *", "Mars/Olympus")
	require.EqualError(t, err, "Invalid timezone: Mars/Olympus")
}

func TestNextRunIsInItsTimezoneAndMonotonic(t *testing.T) {
	after := time.Date(2026, 12, 2, 7, 30, 0, 0, time.UTC) // 08:30 in Paris
	next, err := scheduler.NextRun("0 9 * * *", "Europe/Paris", after)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC).Unix(), next, "09:00 Paris is 08:00 UTC")
	onTheMinute := time.Date(2026, 12, 2, 7, 31, 0, 0, time.UTC)
	next, err = scheduler.NextRun("* * * * *", "UTC", onTheMinute)
	require.NoError(t, err)
	require.Equal(t, onTheMinute.Unix()+60, next, "a fire at its own minute moves to the next one, never the same")
}

func TestDriftAndRunTarget(t *testing.T) {
	kind, id, ok := scheduler.RunTarget("post", "/teams/crew/runs/")
	require.True(t, ok)
	require.Equal(t, "team", kind)
	require.Equal(t, "crew", id)
	_, _, ok = scheduler.RunTarget("GET", "/agents/a/runs")
	require.False(t, ok)
	_, _, ok = scheduler.RunTarget("POST", "/agents/a/runs/x/continue")
	require.False(t, ok)
	s := &storage.Schedule{Method: "POST", Endpoint: "/agents/a/runs", ManagedBy: "scheduler_tools", TargetType: "agent", TargetID: "a"}
	require.Empty(t, scheduler.Drift(s))
	s.Endpoint = "/agents/b/runs"
	require.Equal(t, "endpoint_drift:/agents/b/runs!=agent:a", scheduler.Drift(s))
	s.ManagedBy = ""
	require.Empty(t, scheduler.Drift(s), "a schedule without provenance cannot drift")
}

// executor is a test double of the server: each Start starts a "run"
// whose state the test sets.
type executor struct {
	mu       sync.Mutex
	starts   []string // attempt ids, in order
	states   map[string]scheduler.RunState
	failNext int // Start calls to fail
	cancels  []string
}

func newExecutor() *executor { return &executor{states: map[string]scheduler.RunState{}} }

func (e *executor) Start(_ context.Context, _ *storage.Schedule, a *storage.ScheduleRun) (scheduler.Started, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starts = append(e.starts, a.ID)
	if e.failNext > 0 {
		e.failNext--
		return scheduler.Started{}, errors.New("the agent is unavailable")
	}
	runID := "run-" + a.ID
	if _, ok := e.states[runID]; !ok {
		e.states[runID] = scheduler.RunState{Status: run.StatusRunning}
	}
	return scheduler.Started{StatusCode: 202, RunID: runID, SessionID: "s-" + a.ID}, nil
}

func (e *executor) RunState(_ context.Context, _ *storage.Schedule, runID string) (scheduler.RunState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	state, ok := e.states[runID]
	if !ok {
		return state, storage.ErrNotFound
	}
	return state, nil
}

func (e *executor) Cancel(_ context.Context, _ *storage.Schedule, runID, _ string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cancels = append(e.cancels, runID)
	return nil
}

func (e *executor) set(runID string, state scheduler.RunState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.states[runID] = state
}

func (e *executor) startCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.starts)
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agnogo.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

func newScheduler(t *testing.T, store storage.ScheduleStore, exec scheduler.Executor, worker string) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{Store: store, Executor: exec, PollInterval: 20 * time.Millisecond,
		RunPollInterval: 10 * time.Millisecond, LeaseTTL: 2 * time.Second, Worker: worker})
	require.NoError(t, err)
	return s
}

// waitFor polls check until it holds, failing the test after 20 s.
func waitFor(t *testing.T, what string, check func() bool) {
	t.Helper()
	require.Eventually(t, check, 20*time.Second, 5*time.Millisecond, "timed out waiting: %s", what)
}

func dueSchedule(t *testing.T, store storage.ScheduleStore, mutate func(*storage.Schedule)) *storage.Schedule {
	t.Helper()
	now := time.Now().Unix()
	s := &storage.Schedule{Name: "nightly", Method: "POST", Endpoint: "/agents/a/runs", Payload: map[string]any{"message": "go"},
		CronExpr: "0 3 * * *", Timezone: "UTC", TimeoutSeconds: 60, RetryDelaySeconds: 1, Enabled: true, NextRunAt: &now, UserID: "ana"}
	if mutate != nil {
		mutate(s)
	}
	created, err := store.CreateSchedule(t.Context(), s)
	require.NoError(t, err)
	return created
}

func attempts(t *testing.T, store storage.ScheduleStore, id string) []*storage.ScheduleRun {
	t.Helper()
	runs, _, err := store.ListScheduleRuns(t.Context(), id, "", storage.Page{Limit: 100, Page: 1})
	require.NoError(t, err)
	// Newest first; attempts written within one second tie on created_at.
	slices.SortStableFunc(runs, func(a, b *storage.ScheduleRun) int { return int(b.Attempt - a.Attempt) })
	return runs
}

// A due schedule fires once, moves on to its next fire, and its attempt
// follows the run to its end.
func TestADueScheduleFiresOnceAndFollowsItsRun(t *testing.T) {
	store := openStore(t)
	exec := newExecutor()
	sched := dueSchedule(t, store, nil)
	s := newScheduler(t, store, exec, "w1")
	s.Start(t.Context())
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	waitFor(t, "the schedule fired", func() bool { return exec.startCount() == 1 })
	got, err := store.GetSchedule(t.Context(), sched.ID, "")
	require.NoError(t, err)
	require.Greater(t, *got.NextRunAt, time.Now().Unix(), "it moved on to 03:00")
	exec.set("run-"+attempts(t, store, sched.ID)[0].ID, scheduler.RunState{Status: run.StatusCompleted, Content: "done", ContentType: "str"})
	var runs []*storage.ScheduleRun
	waitFor(t, "the attempt ended", func() bool {
		runs = attempts(t, store, sched.ID)
		return runs[0].Status != storage.ScheduleRunRunning
	})
	require.Len(t, runs, 1)
	require.Equal(t, storage.ScheduleRunSuccess, runs[0].Status)
	require.Equal(t, map[string]any{"content": "done", "content_type": "str"}, runs[0].Output)
	require.Equal(t, "ana", runs[0].UserID)
	require.EqualValues(t, 202, *runs[0].StatusCode)
	require.Equal(t, 1, exec.startCount(), "it fired once")
}

// Two schedulers over one database fire a due schedule once.
func TestTwoSchedulersFireOnce(t *testing.T) {
	store := openStore(t)
	exec := newExecutor()
	for i := range 5 {
		dueSchedule(t, store, func(s *storage.Schedule) { s.Name = string(rune('a' + i)) })
	}
	for _, w := range []string{"w1", "w2"} {
		s := newScheduler(t, store, exec, w)
		s.Start(t.Context())
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
	}
	waitFor(t, "five fires", func() bool { return exec.startCount() >= 5 })
	list, _, err := store.ListSchedules(t.Context(), storage.ScheduleQuery{Page: storage.Page{Limit: 10, Page: 1}})
	require.NoError(t, err)
	for _, sched := range list {
		require.Len(t, attempts(t, store, sched.ID), 1, "schedule %s fired once", sched.Name)
	}
	require.Equal(t, 5, exec.startCount())
}

// A failed attempt is retried after its delay, up to max_retries.
func TestAFailedAttemptIsRetried(t *testing.T) {
	store := openStore(t)
	exec := newExecutor()
	exec.failNext = 1
	sched := dueSchedule(t, store, func(s *storage.Schedule) { s.MaxRetries = 2 })
	s := newScheduler(t, store, exec, "w1")
	s.Start(t.Context())
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	var runs []*storage.ScheduleRun
	waitFor(t, "a second attempt started", func() bool {
		runs = attempts(t, store, sched.ID)
		return len(runs) == 2 && runs[0].RunID != ""
	})
	first, second := runs[1], runs[0]
	require.Equal(t, storage.ScheduleRunFailed, first.Status)
	require.Equal(t, "the agent is unavailable", first.Error)
	require.EqualValues(t, 2, second.Attempt)
	require.GreaterOrEqual(t, *second.TriggeredAt, *first.CompletedAt+1, "the retry waited its delay")
	exec.set(second.RunID, scheduler.RunState{Status: run.StatusError, Error: "model down"})
	waitFor(t, "a third attempt", func() bool { return len(attempts(t, store, sched.ID)) == 3 })
	third := attempts(t, store, sched.ID)[0]
	exec.set("run-"+third.ID, scheduler.RunState{Status: run.StatusCompleted, Content: "ok"})
	waitFor(t, "the third attempt ended", func() bool { return attempts(t, store, sched.ID)[0].Status == storage.ScheduleRunSuccess })
	require.Len(t, attempts(t, store, sched.ID), 3, "no retry after a success")
}

// An attempt whose run outlives timeout_seconds fails and its run is
// cancelled.
func TestAnAttemptTimesOut(t *testing.T) {
	store := openStore(t)
	exec := newExecutor()
	sched := dueSchedule(t, store, func(s *storage.Schedule) { s.TimeoutSeconds = 1 })
	s := newScheduler(t, store, exec, "w1")
	s.Start(t.Context())
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	var runs []*storage.ScheduleRun
	waitFor(t, "the attempt timed out", func() bool {
		runs = attempts(t, store, sched.ID)
		return len(runs) == 1 && runs[0].Status != storage.ScheduleRunRunning
	})
	require.Equal(t, storage.ScheduleRunFailed, runs[0].Status)
	require.Contains(t, runs[0].Error, "Polling timed out after 1s for run "+runs[0].RunID)
	exec.mu.Lock()
	defer exec.mu.Unlock()
	require.Equal(t, []string{runs[0].RunID}, exec.cancels)
}

// A replica that stops mid-attempt leaves it running; another replica
// takes it over once its lease lapses and follows the same run, starting
// none.
func TestAnOrphanedAttemptIsTakenOver(t *testing.T) {
	store := openStore(t)
	exec := newExecutor()
	sched := dueSchedule(t, store, nil)
	first := newScheduler(t, store, exec, "w1")
	first.Start(t.Context())
	waitFor(t, "the schedule fired", func() bool {
		runs := attempts(t, store, sched.ID)
		return len(runs) == 1 && runs[0].RunID != ""
	})
	require.NoError(t, first.Stop(t.Context()))
	orphan := attempts(t, store, sched.ID)[0]
	require.Equal(t, storage.ScheduleRunRunning, orphan.Status)
	require.Equal(t, "w1", orphan.LockedBy)

	second := newScheduler(t, store, exec, "w2")
	second.Start(t.Context())
	t.Cleanup(func() { _ = second.Stop(context.Background()) })
	exec.set(orphan.RunID, scheduler.RunState{Status: run.StatusPaused, Requirements: []byte(`[{"id":"r1"}]`)})
	waitFor(t, "w2 ended the attempt", func() bool { return attempts(t, store, sched.ID)[0].Status != storage.ScheduleRunRunning })
	final := attempts(t, store, sched.ID)[0]
	require.Equal(t, storage.ScheduleRunPaused, final.Status)
	require.JSONEq(t, `[{"id":"r1"}]`, string(final.Requirements))
	require.Equal(t, 1, exec.startCount(), "the takeover followed the run it found")
}

// Trigger answers the running attempt at once, and its channel the end.
func TestTrigger(t *testing.T) {
	store := openStore(t)
	exec := newExecutor()
	later := time.Now().Add(time.Hour).Unix()
	sched := dueSchedule(t, store, func(s *storage.Schedule) { s.NextRunAt = &later })
	s := newScheduler(t, store, exec, "w1")
	_, _, err := s.Trigger(t.Context(), sched)
	require.ErrorIs(t, err, scheduler.ErrNotRunning)
	s.Start(t.Context())
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	attempt, done, err := s.Trigger(t.Context(), sched)
	require.NoError(t, err)
	require.Equal(t, storage.ScheduleRunRunning, attempt.Status)
	waitFor(t, "the run started", func() bool { return exec.startCount() == 1 })
	exec.set("run-"+attempt.ID, scheduler.RunState{Status: run.StatusCancelled})
	select {
	case final := <-done:
		require.Equal(t, storage.ScheduleRunCancelled, final.Status)
		require.Equal(t, attempt.ID, final.ID)
	case <-time.After(20 * time.Second):
		t.Fatal("the trigger did not end")
	}
	got, err := store.GetSchedule(t.Context(), sched.ID, "")
	require.NoError(t, err)
	require.Equal(t, later, *got.NextRunAt, "a trigger does not move the cron")
}
