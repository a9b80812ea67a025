package run

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSessionMetricsAccumulateFromRun(t *testing.T) {
	t.Parallel()
	allTokens := func(n int64) Metrics {
		return Metrics{
			InputTokens: n, OutputTokens: n, TotalTokens: n, AudioInputTokens: n, AudioOutputTokens: n,
			AudioTotalTokens: n, CacheReadTokens: n, CacheWriteTokens: n, ReasoningTokens: n,
		}
	}
	model := func(provider, id string, input int64, cost *float64, providerMetrics map[string]any) ModelMetrics {
		return ModelMetrics{Metrics: Metrics{InputTokens: input, Cost: cost}, Provider: provider, ID: id, ProviderMetrics: providerMetrics}
	}

	cases := []struct {
		name    string
		session SessionMetrics
		runs    []*RunMetrics
		want    SessionMetrics
	}{
		{
			name:    "nil run changes nothing",
			session: SessionMetrics{Metrics: Metrics{InputTokens: 1}},
			runs:    []*RunMetrics{nil},
			want:    SessionMetrics{Metrics: Metrics{InputTokens: 1}},
		},
		{
			name:    "every token field is summed",
			session: SessionMetrics{Metrics: allTokens(1)},
			runs:    []*RunMetrics{{Metrics: allTokens(2)}, {Metrics: allTokens(3)}},
			want:    SessionMetrics{Metrics: allTokens(6)},
		},
		{
			name: "cost stays nil while no run reports one",
			runs: []*RunMetrics{{Metrics: Metrics{InputTokens: 5}}},
			want: SessionMetrics{Metrics: Metrics{InputTokens: 5}},
		},
		{
			name:    "cost is summed and starts from the first reported one",
			session: SessionMetrics{},
			runs:    []*RunMetrics{{Metrics: Metrics{Cost: new(0.25)}}, {}, {Metrics: Metrics{Cost: new(0.5)}}},
			want:    SessionMetrics{Metrics: Metrics{Cost: new(0.75)}},
		},
		{
			name:    "a zero cost is still a cost",
			session: SessionMetrics{},
			runs:    []*RunMetrics{{Metrics: Metrics{Cost: new(0.0)}}},
			want:    SessionMetrics{Metrics: Metrics{Cost: new(0.0)}},
		},
		{
			name: "details merge by model type, provider and id",
			session: SessionMetrics{Details: map[string][]ModelMetrics{
				ModelTypeModel: {model("Anthropic", "sonnet", 10, new(0.1), map[string]any{"requests": 1, "tier": "standard"})},
			}},
			runs: []*RunMetrics{{Details: map[string][]ModelMetrics{
				ModelTypeModel: {
					model("Anthropic", "sonnet", 5, new(0.05), map[string]any{"requests": 2, "tier": "priority", "region": "eu"}),
					model("OpenAI", "sonnet", 7, nil, nil), // same id, other provider: a new entry
					model("Anthropic", "haiku", 3, nil, nil),
				},
				ModelTypeMemoryModel: {model("OpenAI", "gpt-5-mini", 4, new(0.01), nil)},
			}}},
			want: SessionMetrics{Details: map[string][]ModelMetrics{
				ModelTypeModel: {
					model("Anthropic", "sonnet", 15, new(0.15000000000000002), map[string]any{"requests": int64(3), "tier": "priority", "region": "eu"}),
					model("OpenAI", "sonnet", 7, nil, nil),
					model("Anthropic", "haiku", 3, nil, nil),
				},
				ModelTypeMemoryModel: {model("OpenAI", "gpt-5-mini", 4, new(0.01), nil)},
			}},
		},
		{
			name:    "the same run twice doubles its entry",
			session: SessionMetrics{},
			runs: []*RunMetrics{
				{Details: map[string][]ModelMetrics{ModelTypeModel: {model("Anthropic", "sonnet", 10, nil, nil)}}},
				{Details: map[string][]ModelMetrics{ModelTypeModel: {model("Anthropic", "sonnet", 10, nil, nil)}}},
			},
			want: SessionMetrics{Details: map[string][]ModelMetrics{ModelTypeModel: {model("Anthropic", "sonnet", 20, nil, nil)}}},
		},
		{
			name: "additional metrics: numbers summed, other values latest wins",
			session: SessionMetrics{AdditionalMetrics: map[string]any{
				"eval_duration": 1.5, "retries": 1, "label": "old", "flag": true, "mixed": 2, "was_number": 3,
			}},
			runs: []*RunMetrics{{AdditionalMetrics: map[string]any{
				"eval_duration": 0.25, "retries": int64(2), "label": "new", "flag": true, "mixed": 0.5,
				"was_number": "n/a", "fresh": json.Number("4"),
			}}},
			want: SessionMetrics{AdditionalMetrics: map[string]any{
				"eval_duration": 1.75, "retries": int64(3), "label": "new", "flag": true, "mixed": 2.5,
				"was_number": "n/a", "fresh": json.Number("4"),
			}},
		},
		{
			name:    "empty additional metrics create an empty map",
			session: SessionMetrics{},
			runs:    []*RunMetrics{{AdditionalMetrics: map[string]any{}}},
			want:    SessionMetrics{AdditionalMetrics: map[string]any{}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			session := tc.session
			for _, run := range tc.runs {
				session.AccumulateFromRun(run)
			}
			require.Equal(t, tc.want, session)
		})
	}
}

func TestSessionMetricsDoesNotAliasTheRun(t *testing.T) {
	t.Parallel()
	run := fixtureRunMetrics()
	var session SessionMetrics
	session.AccumulateFromRun(run)

	*run.Details[ModelTypeModel][0].Cost = 99
	run.Details[ModelTypeModel][0].ProviderMetrics["service_tier"] = "changed"
	run.Details[ModelTypeModel][0].InputTokens = 99

	entry := session.Details[ModelTypeModel][0]
	require.InDelta(t, 0.0125, *entry.Cost, 1e-12)
	require.Equal(t, "standard", entry.ProviderMetrics["service_tier"])
	require.EqualValues(t, 100, entry.InputTokens)
}

func TestSessionMetricsAccumulateAfterJSONRoundTrip(t *testing.T) {
	t.Parallel()
	var session SessionMetrics
	session.AccumulateFromRun(fixtureRunMetrics())
	stored, err := json.Marshal(session)
	require.NoError(t, err)

	var reloaded SessionMetrics
	require.NoError(t, json.Unmarshal(stored, &reloaded))
	reloaded.AccumulateFromRun(fixtureRunMetrics())

	require.EqualValues(t, 200, reloaded.InputTokens)
	require.InDelta(t, 0.025, *reloaded.Cost, 1e-12)
	require.InDelta(t, 1.0, reloaded.AdditionalMetrics["eval_duration"], 1e-12)
	require.Len(t, reloaded.Details[ModelTypeModel], 1)
	require.EqualValues(t, 240, reloaded.Details[ModelTypeModel][0].TotalTokens)
}

func TestRunMetricsAddModelUsage(t *testing.T) {
	t.Parallel()
	var metrics RunMetrics
	usage := ModelMetrics{Metrics: Metrics{InputTokens: 10, OutputTokens: 2, TotalTokens: 12}, Provider: "OpenAI", ID: "gpt-5"}
	metrics.AddModelUsage(ModelTypeModel, usage)
	metrics.AddModelUsage(ModelTypeModel, usage)
	metrics.AddModelUsage(ModelTypeOutputModel, usage)

	require.EqualValues(t, 36, metrics.TotalTokens)
	require.Nil(t, metrics.Cost)
	require.Len(t, metrics.Details[ModelTypeModel], 1)
	require.EqualValues(t, 24, metrics.Details[ModelTypeModel][0].TotalTokens)
	require.EqualValues(t, 12, metrics.Details[ModelTypeOutputModel][0].TotalTokens)
}

func TestMetricsTimers(t *testing.T) {
	t.Parallel()
	start := time.Unix(1767000000, 0)

	var runMetrics RunMetrics
	runMetrics.SetTimeToFirstToken(start) // no timer yet: ignored
	require.Zero(t, runMetrics.TimeToFirstToken)
	runMetrics.StartTimer(start)
	runMetrics.SetTimeToFirstToken(start.Add(300 * time.Millisecond))
	runMetrics.SetTimeToFirstToken(start.Add(time.Second)) // only the first counts
	runMetrics.StopTimer(start.Add(2 * time.Second))
	require.InDelta(t, 0.3, runMetrics.TimeToFirstToken, 1e-9)
	require.InDelta(t, 2.0, runMetrics.Duration, 1e-9)

	var messageMetrics MessageMetrics
	messageMetrics.StartTimer(start)
	messageMetrics.SetTimeToFirstToken(start.Add(100 * time.Millisecond))
	messageMetrics.StopTimer(start.Add(500 * time.Millisecond))
	require.InDelta(t, 0.1, messageMetrics.TimeToFirstToken, 1e-9)
	require.InDelta(t, 0.5, messageMetrics.Duration, 1e-9)

	var toolMetrics ToolCallMetrics
	toolMetrics.StartTimer(start)
	toolMetrics.StopTimer(start.Add(1500 * time.Millisecond))
	require.InDelta(t, 1767000000.0, toolMetrics.StartTime, 1e-6)
	require.InDelta(t, 1767000001.5, toolMetrics.EndTime, 1e-6)
	require.InDelta(t, 1.5, toolMetrics.Duration, 1e-6)
}

func TestMessageMetricsOmittedWhenZero(t *testing.T) {
	t.Parallel()
	message := Message{Role: RoleUser, Content: "hi", CreatedAt: 1}
	data, err := json.Marshal(message)
	require.NoError(t, err)
	require.Equal(t, `{"content":"hi","from_history":false,"stop_after_tool_call":false,"role":"user","created_at":1}`, string(data))

	message.Metrics.Cost = new(0.0)
	data, err = json.Marshal(message)
	require.NoError(t, err)
	require.Contains(t, string(data), `"metrics":{"cost":0}`, "a reported zero cost is kept")
}
