package agentos

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// The metrics routes are tested through routesFixture: a real OS over
// SQLite, whose store keeps the daily aggregates as runs are written.

func TestMetricsAfterTwoRuns(t *testing.T) {
	t.Parallel()
	f := newRoutesFixture(t, false,
		scripted.Reply{Content: "one", Usage: &run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, CacheReadTokens: 3}},
		scripted.Reply{Content: "two", Usage: &run.Metrics{InputTokens: 20, OutputTokens: 10, TotalTokens: 30}},
	)
	first := f.runAs(t, "u1", "s1", "hi")
	f.runAs(t, "u2", "s2", "hello")
	day := time.Unix(first.CreatedAt, 0).UTC().Format(time.DateOnly)

	resp := fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, "/metrics", nil, http.StatusOK)
	require.NotZero(t, resp["updated_at"])
	days := resp["metrics"].([]any)
	if len(days) == 2 { // the runs straddled midnight UTC: rerun rather than assert on a split
		t.Skip("the two runs fell on two UTC days")
	}
	require.Len(t, days, 1)
	metrics := days[0].(map[string]any)
	require.Equal(t, day, metrics["date"])
	require.Equal(t, "daily", metrics["aggregation_period"])
	require.Equal(t, 2.0, metrics["agent_runs_count"])
	require.Equal(t, 2.0, metrics["agent_sessions_count"])
	require.Equal(t, 0.0, metrics["team_runs_count"])
	require.Equal(t, 0.0, metrics["workflow_sessions_count"])
	require.Equal(t, 2.0, metrics["users_count"])
	require.Equal(t, false, metrics["completed"], "today is not over")
	require.Len(t, metrics["id"], 36)
	tokens := metrics["token_metrics"].(map[string]any)
	require.Equal(t, 30.0, tokens["input_tokens"])
	require.Equal(t, 15.0, tokens["output_tokens"])
	require.Equal(t, 45.0, tokens["total_tokens"])
	require.Equal(t, 3.0, tokens["cache_read_tokens"])
	require.Equal(t, 0.0, tokens["reasoning_tokens"], "zero counts are listed")
	require.Equal(t, []any{map[string]any{"model_id": "scripted", "model_provider": "Scripted", "count": 2.0}}, metrics["model_metrics"])

	// The range is inclusive, and days without activity are left out.
	for _, tc := range []struct {
		query string
		days  int
	}{
		{"?starting_date=" + day + "&ending_date=" + day, 1},
		{"?starting_date=" + day, 1},
		{"?ending_date=" + day, 1},
		{"?starting_date=" + time.Unix(first.CreatedAt, 0).UTC().AddDate(0, 0, 1).Format(time.DateOnly), 0},
		{"?ending_date=" + time.Unix(first.CreatedAt, 0).UTC().AddDate(0, 0, -1).Format(time.DateOnly), 0},
	} {
		resp := fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, "/metrics"+tc.query, nil, http.StatusOK)
		require.Len(t, resp["metrics"], tc.days, tc.query)
	}

	refreshed := fixtureJSON[[]map[string]any](t, f, isoAdmin, http.MethodPost, "/metrics/refresh", nil, http.StatusOK)
	require.Len(t, refreshed, 1)
	require.Equal(t, metrics["id"], refreshed[0]["id"], "a day keeps its id")
	require.Equal(t, 2.0, refreshed[0]["agent_runs_count"])
	status := fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, "/metrics/refresh/status", nil, http.StatusOK)
	require.Equal(t, "idle", status["status"])
}

func TestMetricsValidation(t *testing.T) {
	t.Parallel()
	f := newRoutesFixture(t, false)
	for _, query := range []string{"starting_date=yesterday", "ending_date=2025-13-01", "starting_date=2025-02-01&ending_date=2025-01-01"} {
		rec := f.call(t, isoAdmin, http.MethodGet, "/metrics?"+query, nil)
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, query)
		require.Contains(t, rec.Body.String(), `"loc":["query"`, query)
	}
	empty := fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, "/metrics", nil, http.StatusOK)
	require.Equal(t, []any{}, empty["metrics"])
	require.Equal(t, []any{}, fixtureJSON[[]any](t, f, isoAdmin, http.MethodPost, "/metrics/refresh", nil, http.StatusOK))
}

func TestAggregateDaily(t *testing.T) {
	t.Parallel()
	day1 := time.Date(2025, 3, 1, 23, 59, 59, 0, time.UTC).Unix()
	day2 := time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC).Unix()
	now := time.Date(2025, 3, 2, 12, 0, 0, 0, time.UTC)
	record := func(at int64, user string, kind storage.RunType, model, provider string, tokens int64, cost *float64) storage.RunRecord {
		return storage.RunRecord{CreatedAt: at, UserID: user, RunType: kind, Run: &run.Output{
			Model: model, ModelProvider: provider,
			Metrics: &run.RunMetrics{Metrics: run.Metrics{InputTokens: tokens, TotalTokens: tokens, Cost: cost}},
		}}
	}
	records := []storage.RunRecord{
		record(day1, "u1", storage.RunTypeAgent, "m1", "p", 10, new(0.5)),
		record(day1, "u2", storage.RunTypeTeam, "m2", "p", 5, nil),
		record(day1, "u1", storage.RunTypeAgent, "m1", "p", 1, new(0.25)),
		record(day2, "", storage.RunTypeWorkflow, "", "", 7, nil),
		{CreatedAt: day2, RunType: storage.RunTypeAgent}, // a run row without run data counts, with no tokens
	}
	sessions := []*storage.Session{
		{SessionType: storage.SessionTypeAgent, UserID: "u3", CreatedAt: day1},
		{SessionType: storage.SessionTypeTeam, CreatedAt: day2},
		{SessionType: storage.SessionTypeWorkflow, UserID: "u1", CreatedAt: day2},
	}
	days := aggregateDaily("", records, sessions, now)
	require.Len(t, days, 2)

	first := days[0]
	require.Equal(t, "2025-03-01", first.Date)
	require.Equal(t, 2, first.AgentRunsCount)
	require.Equal(t, 1, first.TeamRunsCount)
	require.Equal(t, 1, first.AgentSessionsCount)
	require.Equal(t, 3, first.UsersCount, "u1 and u2 ran, u3 opened a session")
	require.Equal(t, int64(16), first.TokenMetrics.TotalTokens)
	require.InDelta(t, 0.75, *first.TokenMetrics.Cost, 1e-9)
	require.Equal(t, []modelMetric{{"m1", "p", 2}, {"m2", "p", 1}}, first.ModelMetrics)
	require.True(t, first.Completed)

	second := days[1]
	require.Equal(t, "2025-03-02", second.Date)
	require.Equal(t, 1, second.WorkflowRunsCount)
	require.Equal(t, 1, second.AgentRunsCount)
	require.Equal(t, 1, second.TeamSessionsCount)
	require.Equal(t, 1, second.WorkflowSessionsCount)
	require.Equal(t, 1, second.UsersCount)
	require.Nil(t, second.TokenMetrics.Cost, "no run reported a cost")
	require.Empty(t, second.ModelMetrics)
	require.NotNil(t, second.ModelMetrics, "an empty list, not null")
	require.False(t, second.Completed)
	require.Equal(t, now.Unix(), second.UpdatedAt)

	require.NotEqual(t, first.ID, second.ID)
	require.Equal(t, first.ID, aggregateDaily("", records, sessions, now)[0].ID, "ids are stable")
	require.NotEqual(t, first.ID, aggregateDaily("u1", records, sessions, now)[0].ID, "ids differ by user scope")
	require.Empty(t, aggregateDaily("", nil, nil, now))
}

// metricsTotals sums the days GET /metrics answers for path.
func metricsTotals(t *testing.T, f *routesFixture, path string) (runs, sessions, tokens float64) {
	t.Helper()
	resp := fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, path, nil, http.StatusOK)
	for _, item := range resp["metrics"].([]any) {
		day := item.(map[string]any)
		runs += day["agent_runs_count"].(float64)
		sessions += day["agent_sessions_count"].(float64)
		tokens += day["token_metrics"].(map[string]any)["total_tokens"].(float64)
	}
	return runs, sessions, tokens
}

// TestMetricsCountEachRunOnce: a run saved again counts nothing more, the
// runs a fork copies are not new usage (the fork counts once a run of its
// own ends); a refresh recomputes from what is stored, so the usage of a
// deleted session goes with it.
func TestMetricsCountEachRunOnce(t *testing.T) {
	t.Parallel()
	f := newRoutesFixture(t, false,
		scripted.Reply{Content: "one", Usage: &run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}},
		scripted.Reply{Content: "two", Usage: &run.Metrics{InputTokens: 20, OutputTokens: 10, TotalTokens: 30}},
		scripted.Reply{Content: "three", Usage: &run.Metrics{InputTokens: 4, OutputTokens: 3, TotalTokens: 7}},
	)
	ctx := t.Context()
	first := f.runAs(t, "u1", "s1", "hi")
	f.runAs(t, "u1", "s1", "again")
	requireTotals := func(runs, sessions, tokens float64, msg string) {
		t.Helper()
		gotRuns, gotSessions, gotTokens := metricsTotals(t, f, "/metrics")
		require.Equal(t, []float64{runs, sessions, tokens}, []float64{gotRuns, gotSessions, gotTokens}, msg)
	}
	requireTotals(2, 1, 45, "two runs of one session")

	rec, err := f.store.GetRun(ctx, first.RunID, "")
	require.NoError(t, err)
	_, err = f.store.UpsertRun(ctx, rec)
	require.NoError(t, err)
	session, err := f.store.GetSession(ctx, "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	_, _, err = f.store.SaveRun(ctx, session, rec)
	require.NoError(t, err)
	requireTotals(2, 1, 45, "a finished run saved again counts once")

	fork := fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodPost, "/agents/assistant/sessions/s1/fork", nil, http.StatusOK)
	forkID := fork["session_id"].(string)
	require.Len(t, fixtureJSON[[]any](t, f, isoAdmin, http.MethodGet, "/sessions/"+forkID+"/runs", nil, http.StatusOK), 2, "the fork holds copies of both runs")
	requireTotals(2, 1, 45, "the copies are no new runs")
	f.runAs(t, "u1", forkID, "and then?")
	requireTotals(3, 2, 52, "a run of its own makes the fork count")

	require.Equal(t, http.StatusNoContent, f.call(t, isoAdmin, http.MethodDelete, "/sessions/s1", nil).Code)
	requireTotals(3, 2, 52, "usage stays counted when its session is deleted")
	refreshed := fixtureJSON[[]map[string]any](t, f, isoAdmin, http.MethodPost, "/metrics/refresh", nil, http.StatusOK)
	var runs, sessions float64
	for _, day := range refreshed {
		runs += day["agent_runs_count"].(float64)
		sessions += day["agent_sessions_count"].(float64)
	}
	require.Equal(t, []float64{1, 1}, []float64{runs, sessions}, "a refresh counts what is stored: the fork with its own run, not its copies")
	requireTotals(1, 1, 7, "the refreshed days are stored")
}

// TestMetricsRefreshWindow: a refresh recomputes a window of at most 31
// days, the last 31 by default, and a past day is reached with
// starting_date.
func TestMetricsRefreshWindow(t *testing.T) {
	t.Parallel()
	f := newRoutesFixture(t, false)
	ctx := t.Context()
	const date = "2025-03-01"
	day := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC).Unix()
	_, err := f.store.UpsertSession(ctx, &storage.Session{SessionID: "s-old", SessionType: storage.SessionTypeAgent, AgentID: "assistant", CreatedAt: day})
	require.NoError(t, err)
	for _, runID := range []string{"r-old", "r-kept"} {
		_, err = f.store.UpsertRun(ctx, storage.RunRecord{SessionID: "s-old", Run: &run.Output{
			RunID: runID, SessionID: "s-old", AgentID: "assistant", Status: run.StatusCompleted, CreatedAt: day + 60,
			Model: "m", ModelProvider: "p", Metrics: &run.RunMetrics{Metrics: run.Metrics{InputTokens: 7, TotalTokens: 7}},
		}})
		require.NoError(t, err)
	}

	oneDay := "/metrics?starting_date=" + date + "&ending_date=" + date
	resp := fixtureJSON[map[string]any](t, f, isoAdmin, http.MethodGet, oneDay, nil, http.StatusOK)
	require.Len(t, resp["metrics"], 1)
	stored := resp["metrics"].([]any)[0].(map[string]any)
	require.Equal(t, date, stored["date"])
	require.Equal(t, metricsID("", date), stored["id"])
	require.Equal(t, true, stored["completed"], "the day is over")
	require.Equal(t, 2.0, stored["agent_runs_count"])
	require.Equal(t, []any{map[string]any{"model_id": "m", "model_provider": "p", "count": 2.0}}, stored["model_metrics"])
	require.NotZero(t, stored["created_at"])
	require.Equal(t, stored["updated_at"], resp["updated_at"], "the answer is as recent as its newest day")

	require.NoError(t, f.store.DeleteRun(ctx, "r-old", ""))
	require.Empty(t, fixtureJSON[[]any](t, f, isoAdmin, http.MethodPost, "/metrics/refresh", nil, http.StatusOK), "the default window is the last 31 days")
	runs, _, _ := metricsTotals(t, f, oneDay)
	require.Equal(t, 2.0, runs, "a day outside the window keeps its figures")

	refreshed := fixtureJSON[[]map[string]any](t, f, isoAdmin, http.MethodPost, "/metrics/refresh?starting_date="+date, nil, http.StatusOK)
	require.Len(t, refreshed, 1)
	require.Equal(t, date, refreshed[0]["date"])
	require.Equal(t, 1.0, refreshed[0]["agent_runs_count"], "the deleted run no longer counts")
	require.Equal(t, 1.0, refreshed[0]["agent_sessions_count"])
	require.Equal(t, []any{map[string]any{"model_id": "m", "model_provider": "p", "count": 1.0}}, refreshed[0]["model_metrics"])
	runs, sessions, tokens := metricsTotals(t, f, oneDay)
	require.Equal(t, []float64{1, 1, 7}, []float64{runs, sessions, tokens})

	for _, query := range []string{
		"starting_date=2025-03-01&ending_date=2025-04-01",
		"starting_date=2025-03-02&ending_date=2025-03-01",
		"starting_date=yesterday",
		"ending_date=2025-02-30",
	} {
		rec := f.call(t, isoAdmin, http.MethodPost, "/metrics/refresh?"+query, nil)
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, query)
		require.Contains(t, rec.Body.String(), `"loc":["query"`, query)
	}
	rec := f.call(t, isoAdmin, http.MethodPost, "/metrics/refresh?starting_date=2025-03-01&ending_date=2025-04-01", nil)
	require.Contains(t, rec.Body.String(), "at most 31 days", "the detail names the bound")
	require.Equal(t, http.StatusOK, f.call(t, isoAdmin, http.MethodPost, "/metrics/refresh?starting_date=2025-03-01&ending_date=2025-03-31", nil).Code)
}

// dailylessStore is a store without daily aggregates: it hides the
// storage.MetricsStore methods of the store it wraps.
type dailylessStore struct{ storage.Store }

// TestMetricsWithoutDailyAggregates: over a store that keeps no daily
// aggregates the routes answer the same shape, computed from the runs.
func TestMetricsWithoutDailyAggregates(t *testing.T) {
	t.Parallel()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: scripted.New([]scripted.Reply{
		{Content: "one", Usage: &run.Metrics{InputTokens: 3, TotalTokens: 3}},
	}), Store: store})
	require.NoError(t, err)
	o, err := New(Config{Store: dailylessStore{store}, Runners: []run.Runner{a}})
	require.NoError(t, err)
	mux := http.NewServeMux()
	o.metricsRoutes(mux)
	f := &routesFixture{os: o, store: store, agent: a, mux: mux}
	f.runAs(t, "u1", "s1", "hi")

	runs, sessions, tokens := metricsTotals(t, f, "/metrics")
	require.Equal(t, []float64{1, 1, 3}, []float64{runs, sessions, tokens})
	refreshed := fixtureJSON[[]map[string]any](t, f, isoAdmin, http.MethodPost, "/metrics/refresh", nil, http.StatusOK)
	require.NotEmpty(t, refreshed)
	require.Len(t, refreshed[len(refreshed)-1]["id"], 36)
	require.Equal(t, http.StatusUnprocessableEntity, f.call(t, isoAdmin, http.MethodPost, "/metrics/refresh?starting_date=2025-01-01&ending_date=2025-03-01", nil).Code)
}
