package agent_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
)

// pricedRun runs one turn on a model called modelID that reports usage and
// returns the run's cost (nil when none).
func pricedRun(t *testing.T, modelID string, usage run.Metrics, prices agent.PriceTable) *float64 {
	t.Helper()
	m := scripted.New([]scripted.Reply{{Content: "hi", Usage: &usage}}, scripted.WithInfo(model.Info{ID: modelID, Provider: "Test"}))
	a, err := agent.New(agent.Config{Model: m, Prices: prices})
	require.NoError(t, err)
	out, err := a.Run(t.Context(), &run.Input{InputContent: "hi"})
	require.NoError(t, err)
	return out.Metrics.Cost
}

func TestDefaultPricesGiveWellKnownModelsACost(t *testing.T) {
	t.Parallel()
	million := run.Metrics{InputTokens: 1_000_000, OutputTokens: 1_000_000, TotalTokens: 2_000_000}
	tests := []struct {
		model string
		usage run.Metrics
		want  float64
	}{
		{"gpt-5-mini", million, 0.25 + 2},
		{"gpt-5", million, 1.25 + 10},
		{"gpt-4.1-nano", million, 0.10 + 0.40},
		{"gpt-4o-2024-08-06", million, 2.50 + 10},                           // a dated snapshot of gpt-4o
		{"claude-sonnet-4-5-20250929", million, 3 + 15},                     // Anthropic's dated ids
		{"claude-haiku-4-5", million, 1 + 5},                                //
		{"claude-opus-4-6", run.Metrics{CacheWriteTokens: 1_000_000}, 6.25}, // cache writes
		// OpenAI counts cached tokens inside input_tokens: they are charged
		// once, at the cached price.
		{"gpt-5-mini", run.Metrics{InputTokens: 1_000_000, CacheReadTokens: 400_000}, 0.6*0.25 + 0.4*0.025},
		// Anthropic reports them apart.
		{"claude-sonnet-4-6", run.Metrics{InputTokens: 1_000_000, CacheReadTokens: 400_000}, 3 + 0.4*0.30},
	}
	for _, tt := range tests {
		cost := pricedRun(t, tt.model, tt.usage, nil)
		require.NotNil(t, cost, tt.model)
		require.InDelta(t, tt.want, *cost, 1e-9, tt.model)
	}
	require.Nil(t, pricedRun(t, "my-local-llama", million, nil), "an unknown model has no cost")
	require.Nil(t, pricedRun(t, "gpt-5-mini-turbo", million, nil), "only a date suffix falls back")
}

func TestConfiguredPricesReplaceTheDefaults(t *testing.T) {
	t.Parallel()
	usage := run.Metrics{InputTokens: 2_000_000, OutputTokens: 1_000_000}
	table := agent.DefaultPrices()
	table["gpt-5-mini"] = agent.Price{Input: 1, Output: 1}
	table["my-local-llama"] = agent.Price{Input: 0.5, Output: 0.5}
	require.InDelta(t, 3.0, *pricedRun(t, "gpt-5-mini", usage, table), 1e-9)
	require.InDelta(t, 1.5, *pricedRun(t, "my-local-llama", usage, table), 1e-9)
	require.InDelta(t, 2*2.0+8, *pricedRun(t, "gpt-4.1", usage, table), 1e-9, "the copy keeps the other defaults")
	require.Nil(t, pricedRun(t, "gpt-5-mini", usage, agent.PriceTable{}), "an empty table turns costs off")

	// DefaultPrices is a copy: changing it changes nothing else.
	require.InDelta(t, 2*0.25+2, *pricedRun(t, "gpt-5-mini", usage, nil), 1e-9)
}
