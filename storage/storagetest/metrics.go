package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// The metrics tests pin down [storage.MetricsStore]: the daily aggregates
// follow the runs and sessions as they are written, a run counts once
// however often it is saved, a session once a run of its own counts, the
// copies of a fork count nothing, and a refresh recomputes a window of days
// from what is stored.
func metricsTests() []conformanceTest {
	return []conformanceTest{
		{"FinishedRunCountsOnce", testMetricsFinishedRunCountsOnce},
		{"PausedRunContinued", testMetricsPausedRunContinued},
		{"ConversationCountsItsSessionOnce", testMetricsConversation},
		{"SessionsUsersAndScopes", testMetricsSessionsUsersAndScopes},
		{"DayBoundaries", testMetricsDayBoundaries},
		{"PendingRunAndNewSession", testMetricsPendingRun},
		{"ForkCopiesCountNothing", testMetricsForkCopies},
		{"DeleteKeepsUsageUntilRefresh", testMetricsDeleteThenRefresh},
		{"RefreshScopedToUser", testMetricsRefreshScoped},
		{"RefreshWindow", testMetricsRefreshWindow},
		{"ConcurrentSavesAndRefresh", testMetricsConcurrent},
	}
}

// metricsStore returns the store's metrics ability; every adapter has it.
func metricsStore(t *testing.T, store storage.Store) storage.MetricsStore {
	t.Helper()
	ms, ok := store.(storage.MetricsStore)
	require.True(t, ok, "%T does not implement storage.MetricsStore", store)
	return ms
}

// metricsDay is March d, 2025, the days the metrics tests write on.
func metricsDay(d int) time.Time { return time.Date(2025, 3, d, 0, 0, 0, 0, time.UTC) }

// metricsTime is an epoch time on March d, 2025, seconds after midnight UTC.
func metricsTime(d int, seconds int64) int64 { return metricsDay(d).Unix() + seconds }

// metricsSession stores a session created at createdAt.
func metricsSession(t *testing.T, store storage.Store, sessionID, userID string, kind storage.SessionType, createdAt int64) {
	t.Helper()
	putSession(t, store, &storage.Session{SessionID: sessionID, SessionType: kind, AgentID: "agent-1", UserID: userID, CreatedAt: createdAt})
}

// metricsRun is a run of model m-1 created at createdAt, in status, that
// used tokens (input and total) and, when cost is not nil, cost.
func metricsRun(sessionID, runID, userID string, status run.Status, createdAt, tokens int64, cost *float64) storage.RunRecord {
	rec := testRun(sessionID, runID, userID)
	rec.CreatedAt = createdAt
	rec.Run.Status = status
	rec.Run.CreatedAt = createdAt
	rec.Run.Model, rec.Run.ModelProvider = "m-1", "p"
	rec.Run.Metrics = &run.RunMetrics{Metrics: run.Metrics{InputTokens: tokens, TotalTokens: tokens, Cost: cost}, Duration: 1.5}
	return rec
}

// dailyMetrics reads q's days, with the times left out so that days compare
// by what they count.
func dailyMetrics(t *testing.T, store storage.Store, q storage.MetricsQuery) []storage.DayMetrics {
	t.Helper()
	days, err := metricsStore(t, store).DailyMetrics(t.Context(), q)
	require.NoError(t, err)
	for i := range days {
		require.NotZero(t, days[i].CreatedAt, "day %s: created_at", days[i].Date)
		require.GreaterOrEqual(t, days[i].UpdatedAt, days[i].CreatedAt, "day %s: updated_at", days[i].Date)
		days[i].CreatedAt, days[i].UpdatedAt = 0, 0
	}
	return days
}

// agentDay is a day that counts agent runs and sessions of model m-1.
func agentDay(day int, runs, sessions, users int, tokens int64) storage.DayMetrics {
	d := storage.DayMetrics{
		Date: metricsDay(day).Format(time.DateOnly), AgentRuns: runs, AgentSessions: sessions, Users: users,
		Tokens: run.Metrics{InputTokens: tokens, TotalTokens: tokens}, Models: []storage.ModelCount{},
	}
	if runs > 0 {
		d.Models = []storage.ModelCount{{ModelID: "m-1", ModelProvider: "p", Count: runs}}
	}
	return d
}

func testMetricsFinishedRunCountsOnce(t *testing.T, store storage.Store) {
	ctx := t.Context()
	metricsSession(t, store, "s-1", alice, storage.SessionTypeAgent, metricsTime(1, 60))
	all := storage.MetricsQuery{}
	require.Empty(t, dailyMetrics(t, store, all), "a session counts once a run of its own counts")

	putRun(t, store, metricsRun("s-1", "r-1", alice, run.StatusRunning, metricsTime(1, 120), 0, nil))
	require.Empty(t, dailyMetrics(t, store, all), "a running run does not count yet")

	done := metricsRun("s-1", "r-1", alice, run.StatusCompleted, metricsTime(1, 120), 40, new(0.5))
	putRun(t, store, done)
	want := agentDay(1, 1, 1, 1, 40)
	want.Tokens.Cost = new(0.5)
	require.Equal(t, []storage.DayMetrics{want}, dailyMetrics(t, store, all))

	// Saved again, through each write path, and with a later created_at:
	// the run still counts once, on the day it was first written.
	putRun(t, store, done)
	putRun(t, store, metricsRun("s-1", "r-1", alice, run.StatusCompleted, metricsTime(5, 0), 40, new(0.5)))
	session, err := store.GetSession(ctx, "s-1", storage.GetSessionOptions{})
	require.NoError(t, err)
	_, _, err = store.SaveRun(ctx, session, done)
	require.NoError(t, err)
	_, err = store.UpsertSession(ctx, session)
	require.NoError(t, err)
	require.Equal(t, []storage.DayMetrics{want}, dailyMetrics(t, store, all), "saving a finished run again counts nothing more")

	// A replaced run keeps counting: its model calls were made.
	regenerated := metricsRun("s-1", "r-1", alice, run.StatusRegenerated, metricsTime(1, 120), 40, new(0.5))
	putRun(t, store, regenerated)
	require.Equal(t, []storage.DayMetrics{want}, dailyMetrics(t, store, all))

	// A refresh finds the same figures.
	refreshed, err := metricsStore(t, store).RefreshMetrics(ctx, storage.MetricsQuery{From: metricsDay(1), To: metricsDay(5)})
	require.NoError(t, err)
	require.Len(t, refreshed, 1)
	refreshed[0].CreatedAt, refreshed[0].UpdatedAt = 0, 0
	require.Equal(t, []storage.DayMetrics{want}, refreshed)
	require.Equal(t, []storage.DayMetrics{want}, dailyMetrics(t, store, all))
}

// testMetricsConversation saves a conversation's turns as an agent does,
// each with its session (SaveRun): the session counts once, with its first
// counted run, however many runs follow, and a run that does not count yet
// changes nothing until it does.
func testMetricsConversation(t *testing.T, store storage.Store) {
	ctx := t.Context()
	all := storage.MetricsQuery{}
	session := &storage.Session{SessionID: "s-1", SessionType: storage.SessionTypeAgent, AgentID: "agent-1", UserID: alice, CreatedAt: metricsTime(3, 0)}
	save := func(runID string, status run.Status, at, tokens int64) {
		t.Helper()
		var err error
		session, _, err = store.SaveRun(ctx, session, metricsRun("s-1", runID, alice, status, at, tokens, nil))
		require.NoError(t, err, "save %s", runID)
	}
	save("r-1", run.StatusRunning, metricsTime(3, 10), 0)
	require.Empty(t, dailyMetrics(t, store, all), "a running first turn counts nothing")
	save("r-1", run.StatusCompleted, metricsTime(3, 10), 10)
	require.Equal(t, []storage.DayMetrics{agentDay(3, 1, 1, 1, 10)}, dailyMetrics(t, store, all), "the first counted turn counts its session")
	save("r-2", run.StatusCompleted, metricsTime(3, 20), 5)
	require.Equal(t, []storage.DayMetrics{agentDay(3, 2, 1, 1, 15)}, dailyMetrics(t, store, all), "a second turn counts its run only")
	save("r-3", run.StatusRunning, metricsTime(3, 30), 0)
	save("r-3", run.StatusCompleted, metricsTime(3, 30), 1)
	save("r-4", run.StatusError, metricsTime(3, 40), 2)
	require.Equal(t, []storage.DayMetrics{agentDay(3, 4, 1, 1, 18)}, dailyMetrics(t, store, all), "four turns, one session")

	// A second conversation, whose first turn is saved with its new
	// session, counts a second session.
	session = &storage.Session{SessionID: "s-2", SessionType: storage.SessionTypeAgent, AgentID: "agent-1", UserID: alice, CreatedAt: metricsTime(3, 50)}
	var err error
	_, _, err = store.SaveRun(ctx, session, metricsRun("s-2", "r-5", alice, run.StatusCompleted, metricsTime(3, 60), 4, nil))
	require.NoError(t, err)
	require.Equal(t, []storage.DayMetrics{agentDay(3, 5, 2, 1, 22)}, dailyMetrics(t, store, all), "a new session's first turn")
}

func testMetricsPausedRunContinued(t *testing.T, store storage.Store) {
	metricsSession(t, store, "s-1", alice, storage.SessionTypeAgent, metricsTime(2, 0))
	all := storage.MetricsQuery{}
	putRun(t, store, metricsRun("s-1", "r-1", alice, run.StatusPaused, metricsTime(2, 10), 10, nil))
	require.Equal(t, []storage.DayMetrics{agentDay(2, 1, 1, 1, 10)}, dailyMetrics(t, store, all), "a paused run counts what it used so far")

	putRun(t, store, metricsRun("s-1", "r-1", alice, run.StatusRunning, metricsTime(2, 10), 10, nil))
	require.Empty(t, dailyMetrics(t, store, all), "a continued run, and its session, count again once it ends")

	putRun(t, store, metricsRun("s-1", "r-1", alice, run.StatusCompleted, metricsTime(2, 10), 25, nil))
	require.Equal(t, []storage.DayMetrics{agentDay(2, 1, 1, 1, 25)}, dailyMetrics(t, store, all), "one run, with its final tokens")

	putRun(t, store, metricsRun("s-1", "r-2", alice, run.StatusError, metricsTime(2, 20), 5, nil))
	putRun(t, store, metricsRun("s-1", "r-3", alice, run.StatusCancelled, metricsTime(2, 30), 1, nil))
	require.Equal(t, []storage.DayMetrics{agentDay(2, 3, 1, 1, 31)}, dailyMetrics(t, store, all), "failed and cancelled runs count too")
}

func testMetricsSessionsUsersAndScopes(t *testing.T, store storage.Store) {
	metricsSession(t, store, "s-a", alice, storage.SessionTypeAgent, metricsTime(3, 0))
	metricsSession(t, store, "s-t", alice, storage.SessionTypeTeam, metricsTime(3, 0))
	metricsSession(t, store, "s-b", bob, storage.SessionTypeWorkflow, metricsTime(3, 0))
	metricsSession(t, store, "s-none", "", storage.SessionTypeAgent, metricsTime(3, 0))
	putRun(t, store, metricsRun("s-a", "r-a", alice, run.StatusCompleted, metricsTime(3, 1), 10, new(0.25)))
	team := metricsRun("s-t", "r-t", alice, run.StatusCompleted, metricsTime(3, 2), 20, nil)
	team.RunType, team.Run.Model = storage.RunTypeTeam, "m-2"
	putRun(t, store, team)
	flow := metricsRun("s-b", "r-b", bob, run.StatusCompleted, metricsTime(3, 3), 30, new(0.5))
	flow.RunType = storage.RunTypeWorkflow
	putRun(t, store, flow)
	anonymous := metricsRun("s-none", "r-none", "", run.StatusCompleted, metricsTime(3, 4), 40, nil)
	anonymous.Run.Model = ""
	putRun(t, store, anonymous)

	date := metricsDay(3).Format(time.DateOnly)
	require.Equal(t, []storage.DayMetrics{{
		Date: date, AgentRuns: 2, TeamRuns: 1, WorkflowRuns: 1, AgentSessions: 2, TeamSessions: 1, WorkflowSessions: 1,
		Users:  2, // alice and bob; the runs and sessions without a user count no one
		Tokens: run.Metrics{InputTokens: 100, TotalTokens: 100, Cost: new(0.75)},
		Models: []storage.ModelCount{{ModelID: "m-1", ModelProvider: "p", Count: 2}, {ModelID: "m-2", ModelProvider: "p", Count: 1}},
	}}, dailyMetrics(t, store, storage.MetricsQuery{}))
	require.Equal(t, []storage.DayMetrics{{
		Date: date, AgentRuns: 1, TeamRuns: 1, AgentSessions: 1, TeamSessions: 1, Users: 1,
		Tokens: run.Metrics{InputTokens: 30, TotalTokens: 30, Cost: new(0.25)},
		Models: []storage.ModelCount{{ModelID: "m-1", ModelProvider: "p", Count: 1}, {ModelID: "m-2", ModelProvider: "p", Count: 1}},
	}}, dailyMetrics(t, store, storage.MetricsQuery{UserID: alice}))
	require.Empty(t, dailyMetrics(t, store, storage.MetricsQuery{UserID: "carol"}))
}

func testMetricsDayBoundaries(t *testing.T, store storage.Store) {
	metricsSession(t, store, "s-1", "", storage.SessionTypeAgent, metricsTime(4, 0))
	putRun(t, store, metricsRun("s-1", "r-late", "", run.StatusCompleted, metricsTime(4, 24*3600-1), 1, nil))
	putRun(t, store, metricsRun("s-1", "r-early", "", run.StatusCompleted, metricsTime(5, 0), 2, nil))
	putRun(t, store, metricsRun("s-1", "r-later", "", run.StatusCompleted, metricsTime(9, 0), 4, nil))
	day4, day5, day9 := agentDay(4, 1, 1, 0, 1), agentDay(5, 1, 0, 0, 2), agentDay(9, 1, 0, 0, 4)
	for _, tc := range []struct {
		from, to int
		want     []storage.DayMetrics
	}{
		{0, 0, []storage.DayMetrics{day4, day5, day9}},
		{4, 4, []storage.DayMetrics{day4}},
		{5, 5, []storage.DayMetrics{day5}},
		{5, 0, []storage.DayMetrics{day5, day9}},
		{0, 8, []storage.DayMetrics{day4, day5}},
		{6, 8, nil},
	} {
		var q storage.MetricsQuery
		if tc.from != 0 {
			q.From = metricsDay(tc.from)
		}
		if tc.to != 0 {
			q.To = metricsDay(tc.to)
		}
		require.Equal(t, tc.want, dailyMetrics(t, store, q), "from %d to %d", tc.from, tc.to)
	}
}

func testMetricsPendingRun(t *testing.T, store storage.Store) {
	ctx := t.Context()
	session := pendingSession("s-new", alice)
	session.CreatedAt = metricsTime(6, 0)
	pending := pendingRun("s-new", "r-1", alice)
	pending.Run.CreatedAt = metricsTime(6, 5)
	require.NoError(t, store.RecordPendingRun(ctx, session, pending))
	require.Empty(t, dailyMetrics(t, store, storage.MetricsQuery{}), "neither an accepted run nor its new session count yet")

	second := pendingRun("s-new", "r-2", alice)
	second.Run.CreatedAt = metricsTime(6, 6)
	require.NoError(t, store.RecordPendingRun(ctx, session, second))
	putRun(t, store, metricsRun("s-new", "r-1", alice, run.StatusCompleted, metricsTime(6, 5), 7, nil))
	require.Equal(t, []storage.DayMetrics{agentDay(6, 1, 1, 1, 7)}, dailyMetrics(t, store, storage.MetricsQuery{}), "the first run that ends makes its session count")
	putRun(t, store, metricsRun("s-new", "r-2", alice, run.StatusError, metricsTime(6, 6), 1, nil))
	require.Equal(t, []storage.DayMetrics{agentDay(6, 2, 1, 1, 8)}, dailyMetrics(t, store, storage.MetricsQuery{}), "a session counts once")
}

func testMetricsForkCopies(t *testing.T, store storage.Store) {
	ctx := t.Context()
	metricsSession(t, store, "s-src", alice, storage.SessionTypeAgent, metricsTime(7, 0))
	putRun(t, store, metricsRun("s-src", "r-1", alice, run.StatusCompleted, metricsTime(7, 1), 10, nil))
	putRun(t, store, metricsRun("s-src", "r-2", alice, run.StatusCompleted, metricsTime(7, 2), 20, nil))
	source := []storage.DayMetrics{agentDay(7, 2, 1, 1, 30)}
	day7 := storage.MetricsQuery{From: metricsDay(7), To: metricsDay(7)}
	require.Equal(t, source, dailyMetrics(t, store, day7))

	fork, err := store.ForkSession(ctx, storage.SessionFork{SessionID: "s-src", UserID: alice, ForkID: "s-fork"})
	require.NoError(t, err)
	require.Equal(t, source, dailyMetrics(t, store, day7), "the copies keep the source's days and count nothing")
	forkDay := time.Unix(fork.CreatedAt, 0).UTC()
	onForkDay := storage.MetricsQuery{From: forkDay, To: forkDay}
	require.Empty(t, dailyMetrics(t, store, onForkDay), "its copies do not make the fork count")

	copies, _, err := store.GetRuns(ctx, storage.RunQuery{SessionID: "s-fork"})
	require.NoError(t, err)
	require.Len(t, copies, 2)
	putRun(t, store, copies[0])
	require.Equal(t, source, dailyMetrics(t, store, day7), "a copy saved again unchanged counts nothing")
	grown := copies[1]
	grown.Run.Metrics.InputTokens += 5
	grown.Run.Metrics.TotalTokens += 5
	putRun(t, store, grown)
	require.Equal(t, []storage.DayMetrics{agentDay(7, 2, 1, 1, 35)}, dailyMetrics(t, store, day7), "a copy adds only what it used after the fork")
	require.Empty(t, dailyMetrics(t, store, onForkDay), "nor does a copy saved again")

	putRun(t, store, metricsRun("s-fork", "r-new", alice, run.StatusCompleted, fork.CreatedAt, 4, nil))
	require.Equal(t, []storage.DayMetrics{{Date: forkDay.Format(time.DateOnly), AgentRuns: 1, AgentSessions: 1, Users: 1,
		Tokens: run.Metrics{InputTokens: 4, TotalTokens: 4}, Models: []storage.ModelCount{{ModelID: "m-1", ModelProvider: "p", Count: 1}}}},
		dailyMetrics(t, store, onForkDay), "a run of its own makes the fork count, on the day it was created")

	refreshed, err := metricsStore(t, store).RefreshMetrics(ctx, day7)
	require.NoError(t, err)
	require.Len(t, refreshed, 1)
	require.Equal(t, 2, refreshed[0].AgentRuns, "a refresh leaves the copies out")
	require.Equal(t, int64(30), refreshed[0].Tokens.TotalTokens)
	refreshed, err = metricsStore(t, store).RefreshMetrics(ctx, onForkDay)
	require.NoError(t, err)
	require.Len(t, refreshed, 1)
	require.Equal(t, []int{1, 1}, []int{refreshed[0].AgentRuns, refreshed[0].AgentSessions}, "the fork counts with its own run")
}

func testMetricsDeleteThenRefresh(t *testing.T, store storage.Store) {
	ctx := t.Context()
	metricsSession(t, store, "s-1", bob, storage.SessionTypeAgent, metricsTime(8, 0))
	metricsSession(t, store, "s-2", bob, storage.SessionTypeAgent, metricsTime(8, 0))
	putRun(t, store, metricsRun("s-1", "r-1", bob, run.StatusCompleted, metricsTime(8, 1), 10, nil))
	putRun(t, store, metricsRun("s-2", "r-2", bob, run.StatusCompleted, metricsTime(8, 2), 20, nil))
	putRun(t, store, metricsRun("s-2", "r-3", bob, run.StatusCompleted, metricsTime(8, 3), 40, nil))
	require.NoError(t, store.DeleteSession(ctx, "s-1", ""))
	require.NoError(t, store.DeleteRun(ctx, "r-3", ""))
	require.Equal(t, []storage.DayMetrics{agentDay(8, 3, 2, 1, 70)}, dailyMetrics(t, store, storage.MetricsQuery{}), "usage stays counted")

	refreshed, err := metricsStore(t, store).RefreshMetrics(ctx, storage.MetricsQuery{From: metricsDay(8), To: metricsDay(8)})
	require.NoError(t, err)
	for i := range refreshed {
		refreshed[i].CreatedAt, refreshed[i].UpdatedAt = 0, 0
	}
	want := []storage.DayMetrics{agentDay(8, 1, 1, 1, 20)}
	require.Equal(t, want, refreshed, "a refresh counts what is stored")
	require.Equal(t, want, dailyMetrics(t, store, storage.MetricsQuery{}))

	// A day whose sessions and runs are all gone is left out.
	require.NoError(t, store.DeleteSession(ctx, "s-2", ""))
	refreshed, err = metricsStore(t, store).RefreshMetrics(ctx, storage.MetricsQuery{From: metricsDay(8), To: metricsDay(8)})
	require.NoError(t, err)
	require.Empty(t, refreshed)
	require.Empty(t, dailyMetrics(t, store, storage.MetricsQuery{}))
}

func testMetricsRefreshScoped(t *testing.T, store storage.Store) {
	ctx := t.Context()
	metricsSession(t, store, "s-a", alice, storage.SessionTypeAgent, metricsTime(10, 0))
	metricsSession(t, store, "s-b", bob, storage.SessionTypeAgent, metricsTime(10, 0))
	putRun(t, store, metricsRun("s-a", "r-a1", alice, run.StatusCompleted, metricsTime(10, 1), 1, nil))
	putRun(t, store, metricsRun("s-a", "r-a2", alice, run.StatusCompleted, metricsTime(10, 2), 2, nil))
	putRun(t, store, metricsRun("s-b", "r-b", bob, run.StatusCompleted, metricsTime(10, 3), 4, nil))
	require.NoError(t, store.DeleteRun(ctx, "r-a2", ""))
	require.NoError(t, store.DeleteRun(ctx, "r-b", ""))

	day := storage.MetricsQuery{UserID: alice, From: metricsDay(10), To: metricsDay(10)}
	refreshed, err := metricsStore(t, store).RefreshMetrics(ctx, day)
	require.NoError(t, err)
	require.Len(t, refreshed, 1)
	require.Equal(t, 1, refreshed[0].AgentRuns, "alice's day is recomputed")
	require.Equal(t, []storage.DayMetrics{agentDay(10, 1, 1, 1, 4)}, dailyMetrics(t, store, storage.MetricsQuery{UserID: bob}), "bob's is left as it was")
	require.Equal(t, []storage.DayMetrics{agentDay(10, 2, 2, 2, 5)}, dailyMetrics(t, store, storage.MetricsQuery{}))
}

func testMetricsRefreshWindow(t *testing.T, store storage.Store) {
	ms := metricsStore(t, store)
	for name, q := range map[string]storage.MetricsQuery{
		"no first day":      {To: metricsDay(1)},
		"no last day":       {From: metricsDay(1)},
		"first after last":  {From: metricsDay(2), To: metricsDay(1)},
		"more than the cap": {From: metricsDay(1), To: metricsDay(1).AddDate(0, 0, storage.MaxMetricsRefreshDays)},
	} {
		_, err := ms.RefreshMetrics(t.Context(), q)
		require.ErrorIs(t, err, storage.ErrInvalid, name)
	}
	days, err := ms.RefreshMetrics(t.Context(), storage.MetricsQuery{From: metricsDay(1), To: metricsDay(1).AddDate(0, 0, storage.MaxMetricsRefreshDays-1)})
	require.NoError(t, err, "the cap itself is allowed")
	require.Empty(t, days)
}

// testMetricsConcurrent saves runs of one user and day from many
// goroutines, each run twice (RUNNING, then COMPLETED), while refreshes of
// that day run: whichever way they interleave, the day ends up counting
// each run once.
func testMetricsConcurrent(t *testing.T, store storage.Store) {
	ctx, ms := t.Context(), metricsStore(t, store)
	const sessions = 5
	for i := range sessions {
		metricsSession(t, store, fmt.Sprintf("s-%d", i), alice, storage.SessionTypeAgent, metricsTime(11, 0))
	}
	day := storage.MetricsQuery{From: metricsDay(11), To: metricsDay(11)}
	runConcurrently(t, concurrentWriters, func(i int) error {
		if i%10 == 9 {
			_, err := ms.RefreshMetrics(ctx, day)
			return err
		}
		sessionID, runID := fmt.Sprintf("s-%d", i%sessions), fmt.Sprintf("r-%d", i)
		if _, err := store.UpsertRun(ctx, metricsRun(sessionID, runID, alice, run.StatusRunning, metricsTime(11, int64(i)), 0, nil)); err != nil {
			return err
		}
		_, err := store.UpsertRun(ctx, metricsRun(sessionID, runID, alice, run.StatusCompleted, metricsTime(11, int64(i)), 1, nil))
		return err
	})
	runs := concurrentWriters - concurrentWriters/10
	want := []storage.DayMetrics{agentDay(11, runs, sessions, 1, int64(runs))}
	require.Equal(t, want, dailyMetrics(t, store, storage.MetricsQuery{}))
	refreshed, err := ms.RefreshMetrics(ctx, day)
	require.NoError(t, err)
	require.Len(t, refreshed, 1)
	require.Equal(t, runs, refreshed[0].AgentRuns)
}

// AgnoMetricsRow is a daily agno_metrics row as Agno writes it, for
// [AgnoMetricsRows]: its counts, and its token_metrics and model_metrics
// documents as JSON text.
type AgnoMetricsRow struct {
	UserID, Date                    string
	AgentRuns, AgentSessions, Users int
	TokenMetrics, ModelMetrics      string
}

// AgnoMetricsRows checks that a store reads the daily rows Agno wrote into
// agno_metrics and adds its own usage to them: counts written with a
// fraction, the empty object Agno's column defaults to as model_metrics,
// and the row of every user that Agno wrote before it scoped rows by user
// (an empty user_id, users_count the day's users), which keeps its count. insert
// writes one row into the store's database, as Agno would.
func AgnoMetricsRows(t *testing.T, store storage.Store, insert func(t *testing.T, row AgnoMetricsRow)) {
	t.Helper()
	const date = "2025-04-01"
	day, err := time.Parse(time.DateOnly, date)
	require.NoError(t, err)
	insert(t, AgnoMetricsRow{Date: date, AgentRuns: 5, AgentSessions: 2, Users: 3,
		TokenMetrics: `{"input_tokens": 10.0, "total_tokens": 10.0, "reasoning_tokens": 0}`, ModelMetrics: `{}`})
	insert(t, AgnoMetricsRow{UserID: alice, Date: date, AgentRuns: 1, AgentSessions: 1, Users: 1,
		TokenMetrics: `{"input_tokens": 4, "total_tokens": 4}`, ModelMetrics: `[{"model_id": "gpt", "model_provider": "OpenAI", "count": 1}]`})
	gpt := func(n int) storage.ModelCount {
		return storage.ModelCount{ModelID: "gpt", ModelProvider: "OpenAI", Count: n}
	}
	require.Equal(t, []storage.DayMetrics{{Date: date, AgentRuns: 6, AgentSessions: 3, Users: 4,
		Tokens: run.Metrics{InputTokens: 14, TotalTokens: 14}, Models: []storage.ModelCount{gpt(1)}}}, dailyMetrics(t, store, storage.MetricsQuery{}))

	at := day.Unix() + 3600
	putSession(t, store, &storage.Session{SessionID: "s-none", SessionType: storage.SessionTypeAgent, AgentID: "agent-1", CreatedAt: at})
	putRun(t, store, metricsRun("s-none", "r-none", "", run.StatusCompleted, at+1, 7, nil))
	putSession(t, store, &storage.Session{SessionID: "s-alice", SessionType: storage.SessionTypeAgent, AgentID: "agent-1", UserID: alice, CreatedAt: at - 7*24*3600})
	aliceRun := metricsRun("s-alice", "r-alice", alice, run.StatusCompleted, at+2, 1, new(0.5))
	aliceRun.Run.Model, aliceRun.Run.ModelProvider = "gpt", "OpenAI"
	putRun(t, store, aliceRun)

	oneDay := storage.MetricsQuery{From: day, To: day}
	require.Equal(t, []storage.DayMetrics{{Date: date, AgentRuns: 8, AgentSessions: 4, Users: 4,
		Tokens: run.Metrics{InputTokens: 22, TotalTokens: 22, Cost: new(0.5)},
		Models: []storage.ModelCount{gpt(2), {ModelID: "m-1", ModelProvider: "p", Count: 1}}}}, dailyMetrics(t, store, oneDay))
	oneDay.UserID = alice
	require.Equal(t, []storage.DayMetrics{{Date: date, AgentRuns: 2, AgentSessions: 1, Users: 1,
		Tokens: run.Metrics{InputTokens: 5, TotalTokens: 5, Cost: new(0.5)}, Models: []storage.ModelCount{gpt(2)}}}, dailyMetrics(t, store, oneDay))
}
