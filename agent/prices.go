package agent

import (
	"maps"
	"regexp"

	"github.com/agnogo/agnogo/run"
)

// Price is what a model charges, in US dollars per million tokens.
type Price struct {
	// Input is the price of input (prompt) tokens.
	Input float64
	// Output is the price of output tokens, reasoning tokens included.
	Output float64
	// CacheRead is the price of input tokens read from the provider's
	// prompt cache.
	CacheRead float64
	// CacheWrite is the price of input tokens written to the prompt cache
	// (Anthropic's five-minute cache writes; OpenAI charges none).
	CacheWrite float64
	// CachedInInput says the model's usage counts the cached tokens inside
	// its input tokens, as OpenAI (and OpenAI-compatible servers) report
	// them, so those are charged at CacheRead instead of Input. Anthropic
	// reports them apart: leave it false.
	CachedInInput bool
}

// PriceTable maps a model id to its price.
type PriceTable map[string]Price

// defaultPrices is the built-in table: the standard (not batch, not
// long-context) list prices of well-known models, in USD per million
// tokens.
var defaultPrices = PriceTable{
	// OpenAI: cached input is part of input_tokens; cache writes are free.
	"gpt-5.4":      {Input: 2.50, CacheRead: 0.25, Output: 15, CachedInInput: true},
	"gpt-5.2":      {Input: 1.75, CacheRead: 0.175, Output: 14, CachedInInput: true},
	"gpt-5.1":      {Input: 1.25, CacheRead: 0.125, Output: 10, CachedInInput: true},
	"gpt-5":        {Input: 1.25, CacheRead: 0.125, Output: 10, CachedInInput: true},
	"gpt-5-mini":   {Input: 0.25, CacheRead: 0.025, Output: 2, CachedInInput: true},
	"gpt-5-nano":   {Input: 0.05, CacheRead: 0.005, Output: 0.40, CachedInInput: true},
	"gpt-5-pro":    {Input: 15, CacheRead: 15, Output: 120, CachedInInput: true},
	"gpt-4.1":      {Input: 2, CacheRead: 0.50, Output: 8, CachedInInput: true},
	"gpt-4.1-mini": {Input: 0.40, CacheRead: 0.10, Output: 1.60, CachedInInput: true},
	"gpt-4.1-nano": {Input: 0.10, CacheRead: 0.025, Output: 0.40, CachedInInput: true},
	"gpt-4o":       {Input: 2.50, CacheRead: 1.25, Output: 10, CachedInInput: true},
	"gpt-4o-mini":  {Input: 0.15, CacheRead: 0.075, Output: 0.60, CachedInInput: true},
	// Anthropic: input_tokens exclude the cache; writes are the 5-minute
	// cache's.
	"claude-opus-4-6":   {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-1":   {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-opus-4":     {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-sonnet-4-6": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-sonnet-4-5": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-sonnet-4":   {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CacheRead: 0.10, CacheWrite: 1.25},
}

// DefaultPrices returns a copy of the built-in price table, which an agent
// without [Config.Prices] uses: OpenAI's gpt-5 family (gpt-5, gpt-5-mini,
// gpt-5-nano, gpt-5-pro, gpt-5.1, gpt-5.2, gpt-5.4), gpt-4.1 and gpt-4o
// (with their mini and nano), and Anthropic's Claude Opus, Sonnet and Haiku
// 4.x, at their standard list prices. Add to the copy and pass it as
// Config.Prices to price other models while keeping these.
func DefaultPrices() PriceTable { return maps.Clone(defaultPrices) }

// snapshotSuffix is the date a provider appends to a model id to name a
// snapshot: gpt-4o-2024-08-06, claude-sonnet-4-5-20250929.
var snapshotSuffix = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8})$`)

// lookup returns the price of modelID: its own entry, else the entry of
// the model it is a dated snapshot of.
func (p PriceTable) lookup(modelID string) (Price, bool) {
	if price, ok := p[modelID]; ok {
		return price, true
	}
	if base := snapshotSuffix.ReplaceAllString(modelID, ""); base != modelID {
		price, ok := p[base]
		return price, ok
	}
	return Price{}, false
}

// cost returns the cost of usage on modelID, or nil when the price is
// unknown. A nil table is the built-in one.
func (p PriceTable) cost(modelID string, usage run.Metrics) *float64 {
	if p == nil {
		p = defaultPrices
	}
	price, ok := p.lookup(modelID)
	if !ok {
		return nil
	}
	const perToken = 1.0 / 1_000_000
	input := usage.InputTokens
	if price.CachedInInput {
		input = max(input-usage.CacheReadTokens, 0)
	}
	cost := (float64(input)*price.Input +
		float64(usage.OutputTokens)*price.Output +
		float64(usage.CacheReadTokens)*price.CacheRead +
		float64(usage.CacheWriteTokens)*price.CacheWrite) * perToken
	return &cost
}
