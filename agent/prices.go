package agent

import "github.com/agnogo/agnogo/run"

// Price is what a model charges, in US dollars per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// PriceTable maps a model id to its price.
type PriceTable map[string]Price

// cost returns the cost of usage on modelID, or nil when the price is unknown.
func (p PriceTable) cost(modelID string, usage run.Metrics) *float64 {
	price, ok := p[modelID]
	if !ok {
		return nil
	}
	const perToken = 1.0 / 1_000_000
	cost := (float64(usage.InputTokens)*price.Input +
		float64(usage.OutputTokens)*price.Output +
		float64(usage.CacheReadTokens)*price.CacheRead +
		float64(usage.CacheWriteTokens)*price.CacheWrite) * perToken
	return &cost
}
