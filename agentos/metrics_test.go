package agentos

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// The metrics routes are tested through routesFixture, which mounts them
// on its own mux: os.go does not mount them yet.

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
