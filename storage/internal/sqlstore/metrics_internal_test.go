package sqlstore

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

// TestModelCountsAddedInPlace checks SQLite's in-place sum of a day's
// model counts against the grouping it stands in for: for every pair of
// documents the two make the same text, whether the in-place sum applies
// (one model on each side, the same, with integer counts that do not
// cancel out) or not.
func TestModelCountsAddedInPlace(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", ":memory:")
	require.NoError(t, err)
	defer db.Close()
	query := "SELECT " + SQLite.jsonAddModelCounts("?1", "?2") + ", " + SQLite.jsonGroupModelCounts("?1", "?2")
	m := `[{"model_id":"m","model_provider":"p","count":2}]`
	for _, tc := range []struct{ name, stored, added, want string }{
		{"the same model", m, `[{"model_id":"m","model_provider":"p","count":1}]`, `[{"model_id":"m","model_provider":"p","count":3}]`},
		{"a run taken back", m, `[{"model_id":"m","model_provider":"p","count":-1}]`, `[{"model_id":"m","model_provider":"p","count":1}]`},
		{"counts that cancel out", m, `[{"model_id":"m","model_provider":"p","count":-2}]`, `[]`},
		{"another provider", m, `[{"model_id":"m","model_provider":"q","count":3}]`,
			`[{"model_id":"m","model_provider":"q","count":3},{"model_id":"m","model_provider":"p","count":2}]`},
		{"another model", m, `[{"model_id":"a","model_provider":"p","count":1}]`,
			`[{"model_id":"m","model_provider":"p","count":2},{"model_id":"a","model_provider":"p","count":1}]`},
		{"no provider stored", `[{"model_id":"m","count":2}]`, `[{"model_id":"m","model_provider":"","count":1}]`, `[{"model_id":"m","model_provider":"","count":3}]`},
		{"no model id", `[{"model_provider":"p","count":2}]`, `[{"model_id":null,"model_provider":"p","count":1}]`, `[{"model_id":null,"model_provider":"p","count":3}]`},
		{"counts with a fraction", `[{"model_id":"m","model_provider":"p","count":2.0}]`, `[{"model_id":"m","model_provider":"p","count":1}]`, `[{"model_id":"m","model_provider":"p","count":3.0}]`},
		{"a count as text", `[{"model_id":"m","model_provider":"p","count":"2"}]`, `[{"model_id":"m","model_provider":"p","count":1}]`, ""},
		{"an empty day", `[]`, `[{"model_id":"m","model_provider":"p","count":1}]`, `[{"model_id":"m","model_provider":"p","count":1}]`},
		{"not a list", `{}`, `[{"model_id":"m","model_provider":"p","count":1}]`, `[{"model_id":"m","model_provider":"p","count":1}]`},
		{"two models stored", `[{"model_id":"m","model_provider":"p","count":2},{"model_id":"a","model_provider":"p","count":1}]`,
			`[{"model_id":"a","model_provider":"p","count":2}]`, `[{"model_id":"a","model_provider":"p","count":3},{"model_id":"m","model_provider":"p","count":2}]`},
	} {
		var got, grouped string
		require.NoError(t, db.QueryRowContext(t.Context(), query, tc.stored, tc.added).Scan(&got, &grouped), tc.name)
		require.Equal(t, grouped, got, "%s: the in-place sum and the grouping disagree", tc.name)
		if tc.want != "" {
			require.JSONEq(t, tc.want, got, tc.name)
		}
	}
}

func TestMetricsDeltaIsZero(t *testing.T) {
	t.Parallel()
	usage := &runUsage{key: metricsKey{"u", "2025-03-01"}, tokens: run.Metrics{InputTokens: 3, TotalTokens: 3, Cost: new(0.3)}, model: modelKey{"m", "p"}}
	for _, tc := range []struct {
		name  string
		apply func(c metricsChanges)
		zero  bool
	}{
		{"nothing", func(c metricsChanges) { c.delta(usage.key) }, true},
		{"the same run out and in", func(c metricsChanges) { c.addRun(usage, -1); c.addRun(usage, 1) }, true},
		{"a new run", func(c metricsChanges) { c.addRun(usage, 1) }, false},
		{"a new session", func(c metricsChanges) { c.addSession("u", "agent", 0, 1) }, false},
		{"only the cost changed", func(c metricsChanges) {
			c.addRun(usage, -1)
			c.addRun(&runUsage{key: usage.key, tokens: run.Metrics{InputTokens: 3, TotalTokens: 3, Cost: new(0.4)}, model: usage.model}, 1)
		}, false},
		{"a run without model or tokens", func(c metricsChanges) { c.addRun(&runUsage{key: usage.key}, 1) }, false},
	} {
		changes := metricsChanges{}
		tc.apply(changes)
		for _, d := range changes {
			require.Equal(t, tc.zero, d.isZero(), tc.name)
		}
	}
}

func TestDecodeStoredMetrics(t *testing.T) {
	t.Parallel()
	require.Equal(t, run.Metrics{InputTokens: 12, TotalTokens: 13, Cost: new(0.5)},
		decodeTokenMetrics([]byte(`{"input_tokens": 12.0, "total_tokens": 13, "cost": 0.5, "time_to_first_token": 1.5}`)), "counts written with a fraction")
	require.Equal(t, run.Metrics{}, decodeTokenMetrics([]byte(`{}`)))
	require.Equal(t, run.Metrics{}, decodeTokenMetrics([]byte(`not json`)), "unreadable counts as zero")
	require.Equal(t, run.Metrics{}, decodeTokenMetrics(nil))

	require.Equal(t, map[modelKey]int{{"m", "p"}: 3, {"n", ""}: 1},
		decodeModelMetrics([]byte(`[{"model_id": "m", "model_provider": "p", "count": 2.0}, {"model_id": "m", "model_provider": "p", "count": 1}, {"model_id": "n", "count": 1}]`)))
	require.Nil(t, decodeModelMetrics([]byte(`{}`)), "the empty object of a row created without models")
	require.Nil(t, decodeModelMetrics(nil))
}
