package sqlstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

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
