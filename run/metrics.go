package run

import (
	"maps"
	"time"
)

// Model types: the role a model plays in a run, used as the keys of
// [RunMetrics.Details] and [SessionMetrics.Details].
const (
	ModelTypeModel               = "model"
	ModelTypeOutputModel         = "output_model"
	ModelTypeParserModel         = "parser_model"
	ModelTypeMemoryModel         = "memory_model"
	ModelTypeReasoningModel      = "reasoning_model"
	ModelTypeSessionSummaryModel = "session_summary_model"
	ModelTypeCultureModel        = "culture_model"
	ModelTypeLearningModel       = "learning_model"
	ModelTypeCompressionModel    = "compression_model"
	ModelTypeFollowupModel       = "followup_model"
)

// Metrics are the token counts and cost shared by every metrics type (Agno's
// BaseMetrics). Zero counts are left out of the JSON, as Agno does.
//
// Token conventions differ by provider and are kept as reported: Anthropic's
// InputTokens exclude the cached prefix (reported in CacheReadTokens and
// CacheWriteTokens); OpenAI's and Codex's include it.
type Metrics struct {
	InputTokens       int64 `json:"input_tokens,omitempty"`
	OutputTokens      int64 `json:"output_tokens,omitempty"`
	TotalTokens       int64 `json:"total_tokens,omitempty"`
	AudioInputTokens  int64 `json:"audio_input_tokens,omitempty"`
	AudioOutputTokens int64 `json:"audio_output_tokens,omitempty"`
	AudioTotalTokens  int64 `json:"audio_total_tokens,omitempty"`
	CacheReadTokens   int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens  int64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens   int64 `json:"reasoning_tokens,omitempty"`
	// Cost is nil when the provider reports none (Codex never does), which is
	// not the same as a cost of zero.
	Cost *float64 `json:"cost,omitempty"`
}

// Add sums other's token counts and cost into m. The cost stays nil only while
// neither side has one.
func (m *Metrics) Add(other Metrics) {
	m.InputTokens += other.InputTokens
	m.OutputTokens += other.OutputTokens
	m.TotalTokens += other.TotalTokens
	m.AudioInputTokens += other.AudioInputTokens
	m.AudioOutputTokens += other.AudioOutputTokens
	m.AudioTotalTokens += other.AudioTotalTokens
	m.CacheReadTokens += other.CacheReadTokens
	m.CacheWriteTokens += other.CacheWriteTokens
	m.ReasoningTokens += other.ReasoningTokens
	if other.Cost != nil {
		m.Cost = new(costOrZero(m.Cost) + *other.Cost)
	}
}

func costOrZero(cost *float64) float64 {
	if cost == nil {
		return 0
	}
	return *cost
}

// ModelMetrics are one model's usage within a run or session, keyed by
// (Provider, ID) inside a model type's list.
type ModelMetrics struct {
	Metrics
	ID       string `json:"id"`
	Provider string `json:"provider"`
	// ProviderMetrics are extra provider-reported figures.
	ProviderMetrics map[string]any `json:"provider_metrics,omitempty"`
}

// Accumulate adds other's tokens, cost and provider metrics into m; provider
// metrics are summed when numeric on both sides, otherwise other's value wins.
func (m *ModelMetrics) Accumulate(other ModelMetrics) {
	m.Metrics.Add(other.Metrics)
	if other.ProviderMetrics != nil {
		if m.ProviderMetrics == nil {
			m.ProviderMetrics = map[string]any{}
		}
		mergeAdditive(m.ProviderMetrics, other.ProviderMetrics)
	}
}

// clone returns a copy of m that shares no map or pointer with it.
func (m ModelMetrics) clone() ModelMetrics {
	if m.Cost != nil {
		m.Cost = new(*m.Cost)
	}
	m.ProviderMetrics = maps.Clone(m.ProviderMetrics)
	return m
}

// sameModel reports whether m and other describe the same model.
func (m ModelMetrics) sameModel(other ModelMetrics) bool {
	return m.Provider == other.Provider && m.ID == other.ID
}

// ToolCallMetrics time one tool execution; times are epoch seconds and the
// duration is in seconds. Zero values are left out.
type ToolCallMetrics struct {
	StartTime float64 `json:"start_time,omitempty"`
	EndTime   float64 `json:"end_time,omitempty"`
	Duration  float64 `json:"duration,omitempty"`
}

// StartTimer records now as the start time, unless one is already set.
func (m *ToolCallMetrics) StartTimer(now time.Time) {
	if m.StartTime == 0 {
		m.StartTime = epochSeconds(now)
	}
}

// StopTimer records now as the end time, unless one is already set, and the
// duration since the start.
func (m *ToolCallMetrics) StopTimer(now time.Time) {
	if m.EndTime == 0 {
		m.EndTime = epochSeconds(now)
	}
	if m.StartTime != 0 {
		m.Duration = m.EndTime - m.StartTime
	}
}

// MessageMetrics are one model reply's usage and timing (Agno's MessageMetrics).
type MessageMetrics struct {
	Metrics
	// Duration is the reply's wall time in seconds.
	Duration float64 `json:"duration,omitempty"`
	// TimeToFirstToken is in seconds from the request.
	TimeToFirstToken float64 `json:"time_to_first_token,omitempty"`
	// ProviderMetrics are passed on to the run's [ModelMetrics].
	ProviderMetrics map[string]any `json:"provider_metrics,omitempty"`

	timer stopwatch
}

// IsZero reports whether m would encode as an empty object; [Message] leaves
// such metrics out.
func (m MessageMetrics) IsZero() bool {
	return m.Metrics == (Metrics{}) && m.Duration == 0 && m.TimeToFirstToken == 0 && len(m.ProviderMetrics) == 0
}

// StartTimer starts timing the reply at now.
func (m *MessageMetrics) StartTimer(now time.Time) { m.timer.start(now) }

// StopTimer sets Duration to the time from the start to now.
func (m *MessageMetrics) StopTimer(now time.Time) {
	if elapsed, ok := m.timer.elapsed(now); ok {
		m.Duration = elapsed
	}
}

// SetTimeToFirstToken records the time from the start to now, once.
func (m *MessageMetrics) SetTimeToFirstToken(now time.Time) {
	if elapsed, ok := m.timer.elapsed(now); ok && m.TimeToFirstToken == 0 {
		m.TimeToFirstToken = elapsed
	}
}

// RunMetrics are a run's totals with a per-model breakdown (Agno's RunMetrics).
type RunMetrics struct {
	Metrics
	// TimeToFirstToken is in seconds from the run's start.
	TimeToFirstToken float64 `json:"time_to_first_token,omitempty"`
	// Duration is the run's wall time in seconds.
	Duration float64 `json:"duration,omitempty"`
	// Details lists, per model type (see [ModelTypeModel] and friends), one
	// entry per distinct (provider, id).
	Details map[string][]ModelMetrics `json:"details,omitempty"`
	// AdditionalMetrics are any other figures, e.g. "eval_duration".
	AdditionalMetrics map[string]any `json:"additional_metrics,omitempty"`

	timer stopwatch
}

// StartTimer starts timing the run at now.
func (m *RunMetrics) StartTimer(now time.Time) { m.timer.start(now) }

// StopTimer sets Duration to the time from the start to now.
func (m *RunMetrics) StopTimer(now time.Time) {
	if elapsed, ok := m.timer.elapsed(now); ok {
		m.Duration = elapsed
	}
}

// SetTimeToFirstToken records the time from the start to now, once.
func (m *RunMetrics) SetTimeToFirstToken(now time.Time) {
	if elapsed, ok := m.timer.elapsed(now); ok && m.TimeToFirstToken == 0 {
		m.TimeToFirstToken = elapsed
	}
}

// AddModelUsage records one model reply: usage is added to the entry of
// details[modelType] with the same (provider, id), or appended as a new entry,
// and its tokens and cost are added to the run's totals.
func (m *RunMetrics) AddModelUsage(modelType string, usage ModelMetrics) {
	m.Details = mergeDetails(m.Details, modelType, []ModelMetrics{usage})
	m.Metrics.Add(usage.Metrics)
}

// AddRun adds other's tokens, cost and per-model details to m (another
// attempt or turn of the same run); m keeps its own timings.
func (m *RunMetrics) AddRun(other *RunMetrics) {
	if other == nil {
		return
	}
	m.Metrics.Add(other.Metrics)
	for modelType, entries := range other.Details {
		m.Details = mergeDetails(m.Details, modelType, entries)
	}
}

// stopwatch remembers when timing started; the clock is passed in so tests
// control it.
type stopwatch struct{ started time.Time }

func (s *stopwatch) start(now time.Time) { s.started = now }

func (s *stopwatch) elapsed(now time.Time) (float64, bool) {
	if s.started.IsZero() {
		return 0, false
	}
	return now.Sub(s.started).Seconds(), true
}

func epochSeconds(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }
