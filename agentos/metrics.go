package agentos

import (
	"cmp"
	"context"
	"crypto/sha1"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// metricsRoutes mounts the metrics routes (agentos-api.md §9).
//
// A store with daily aggregates ([storage.MetricsStore], as both adapters
// have) keeps agno_metrics up to date as sessions and runs are written, one
// row per user and day: GET /metrics reads the days asked for, whatever the
// number of runs, and POST /metrics/refresh recomputes a window of at most
// [storage.MaxMetricsRefreshDays] days from the runs. With any other store
// both compute the days on the fly from every run and session in the
// range. A refresh runs inline, so none is ever pending.
func (o *OS) metricsRoutes(mux *http.ServeMux) { o.mount(mux, o.metricsEndpoints()) }

// metricsEndpoints lists the metrics routes with the scope each needs.
func (o *OS) metricsEndpoints() []endpoint {
	return []endpoint{
		{"GET /metrics", "metrics", "read", "", o.handleGetMetrics},
		{"POST /metrics/refresh", "metrics", "write", "", o.handleRefreshMetrics},
		{"GET /metrics/refresh/status", "metrics", "read", "", o.handleMetricsRefreshStatus},
	}
}

// aggregationDaily is the only aggregation period agnogo serves.
const aggregationDaily = "daily"

// dayMetrics is one UTC day's activity (Agno's DayAggregatedMetrics). Date
// is YYYY-MM-DD; timestamps are epoch seconds (agentos-api.md §1).
type dayMetrics struct {
	ID                    string        `json:"id"`
	AgentRunsCount        int           `json:"agent_runs_count"`
	AgentSessionsCount    int           `json:"agent_sessions_count"`
	TeamRunsCount         int           `json:"team_runs_count"`
	TeamSessionsCount     int           `json:"team_sessions_count"`
	WorkflowRunsCount     int           `json:"workflow_runs_count"`
	WorkflowSessionsCount int           `json:"workflow_sessions_count"`
	UsersCount            int           `json:"users_count"`
	TokenMetrics          tokenMetrics  `json:"token_metrics"`
	ModelMetrics          []modelMetric `json:"model_metrics"`
	Date                  string        `json:"date"`
	AggregationPeriod     string        `json:"aggregation_period"`
	// Completed is true once the day is over: its figures will not change.
	Completed bool  `json:"completed"`
	CreatedAt int64 `json:"created_at"`
	UpdatedAt int64 `json:"updated_at"`
}

// tokenMetrics are a day's token counts summed over its runs. Unlike
// [run.Metrics], zero counts are kept, as Agno's token_metrics lists them.
type tokenMetrics struct {
	InputTokens       int64    `json:"input_tokens"`
	OutputTokens      int64    `json:"output_tokens"`
	TotalTokens       int64    `json:"total_tokens"`
	AudioInputTokens  int64    `json:"audio_input_tokens"`
	AudioOutputTokens int64    `json:"audio_output_tokens"`
	AudioTotalTokens  int64    `json:"audio_total_tokens"`
	CacheReadTokens   int64    `json:"cache_read_tokens"`
	CacheWriteTokens  int64    `json:"cache_write_tokens"`
	ReasoningTokens   int64    `json:"reasoning_tokens"`
	Cost              *float64 `json:"cost,omitempty"`
}

// add sums m into t with run.Metrics' own rule; the two types have the same
// fields and differ only in their JSON tags.
func (t *tokenMetrics) add(m run.Metrics) {
	sum := run.Metrics(*t)
	sum.Add(m)
	*t = tokenMetrics(sum)
}

// modelMetric counts the runs one model served in a day.
type modelMetric struct {
	ModelID       string `json:"model_id"`
	ModelProvider string `json:"model_provider"`
	Count         int    `json:"count"`
}

// metricsResponse is GET /metrics' body (Agno's MetricsResponse).
type metricsResponse struct {
	Metrics   []dayMetrics `json:"metrics"`
	UpdatedAt int64        `json:"updated_at"`
}

func (o *OS) handleGetMetrics(w http.ResponseWriter, r *http.Request) {
	q := newQueryReader(r)
	from, hasFrom := q.date("starting_date")
	to, hasTo := q.date("ending_date")
	if hasFrom && hasTo && from.After(to) {
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", "starting_date"}, Msg: "starting_date must not be after ending_date", Type: "value_error"})
	}
	if q.failed(w) {
		return
	}
	days, err := o.metricsDays(r.Context(), o.userScope(r, q.str("user_id")), from, to, false)
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, metricsResponse{Metrics: days, UpdatedAt: lastUpdate(days, o.cfg.Now())})
}

// handleRefreshMetrics recomputes the days from starting_date to
// ending_date and returns them, as Agno's synchronous refresh does (a bare
// list). ending_date defaults to today (UTC), or to the last day of the
// longest window from starting_date when that is earlier; starting_date to
// the first day of the longest window ending on ending_date. The window is
// at most [storage.MaxMetricsRefreshDays] days, which bounds the runs one
// request reads. The background query parameter is accepted and has no
// effect: nothing runs after the answer.
func (o *OS) handleRefreshMetrics(w http.ResponseWriter, r *http.Request) {
	q := newQueryReader(r)
	from, to := o.refreshWindow(q)
	if q.failed(w) {
		return
	}
	days, err := o.metricsDays(r.Context(), o.userScope(r, q.str("user_id")), from, to, true)
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, days)
}

// refreshWindow reads a refresh's starting_date and ending_date, applying
// their defaults, and collects an issue for a window that is inverted or
// longer than [storage.MaxMetricsRefreshDays].
func (o *OS) refreshWindow(q *queryReader) (from, to time.Time) {
	const span = storage.MaxMetricsRefreshDays - 1 // days after the first
	now := o.cfg.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	from, hasFrom := q.date("starting_date")
	to, hasTo := q.date("ending_date")
	switch {
	case !hasTo && hasFrom:
		to = from.AddDate(0, 0, span)
		if today.Before(to) {
			to = today
		}
	case !hasTo:
		to = today
	}
	if !hasFrom {
		from = to.AddDate(0, 0, -span)
	}
	switch {
	case len(q.issues) > 0:
	case from.After(to):
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", "starting_date"}, Msg: "starting_date must not be after ending_date", Type: "value_error"})
	case from.AddDate(0, 0, span).Before(to):
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", "starting_date"},
			Msg: fmt.Sprintf("a refresh covers at most %d days: starting_date must be at most %d days before ending_date", storage.MaxMetricsRefreshDays, span), Type: "value_error"})
	}
	return from, to
}

// metricsDays returns the days from from to to (inclusive; a zero time
// leaves that end open) in a user scope ("" for every user), oldest first:
// the store's daily aggregates, recomputed first when refresh is set, or,
// for a store without them, days computed from its runs and sessions.
func (o *OS) metricsDays(ctx context.Context, userID string, from, to time.Time, refresh bool) ([]dayMetrics, error) {
	store, ok := o.cfg.Store.(storage.MetricsStore)
	if !ok {
		days, _, err := o.dailyMetrics(ctx, userID, from, to)
		return days, err
	}
	read := store.DailyMetrics
	if refresh {
		read = store.RefreshMetrics
	}
	stored, err := read(ctx, storage.MetricsQuery{UserID: userID, From: from, To: to})
	if err != nil {
		return nil, err
	}
	return storedDays(userID, stored, o.cfg.Now().UTC()), nil
}

// storedDays turns a store's days into the answer's, for the scope userID.
func storedDays(userID string, stored []storage.DayMetrics, now time.Time) []dayMetrics {
	today := now.Format(time.DateOnly)
	days := make([]dayMetrics, 0, len(stored))
	for _, d := range stored {
		models := make([]modelMetric, 0, len(d.Models))
		for _, m := range d.Models {
			models = append(models, modelMetric{ModelID: m.ModelID, ModelProvider: m.ModelProvider, Count: m.Count})
		}
		days = append(days, dayMetrics{
			ID:             metricsID(userID, d.Date),
			AgentRunsCount: d.AgentRuns, AgentSessionsCount: d.AgentSessions,
			TeamRunsCount: d.TeamRuns, TeamSessionsCount: d.TeamSessions,
			WorkflowRunsCount: d.WorkflowRuns, WorkflowSessionsCount: d.WorkflowSessions,
			UsersCount:        d.Users,
			TokenMetrics:      tokenMetrics(d.Tokens),
			ModelMetrics:      models,
			Date:              d.Date,
			AggregationPeriod: aggregationDaily,
			Completed:         d.Date < today,
			CreatedAt:         d.CreatedAt,
			UpdatedAt:         d.UpdatedAt,
		})
	}
	return days
}

// lastUpdate is when the newest of days last changed, or now when there
// are none.
func lastUpdate(days []dayMetrics, now time.Time) int64 {
	var last int64
	for _, d := range days {
		last = max(last, d.UpdatedAt)
	}
	if last == 0 {
		return now.Unix()
	}
	return last
}

// handleMetricsRefreshStatus reports the refresh job, which agnogo does not
// run: a refresh is done before its request is answered, so the status is
// always idle.
func (o *OS) handleMetricsRefreshStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "idle", "started_at": nil, "finished_at": nil, "error": nil})
}

// dailyMetrics aggregates the runs and sessions of one user scope ("" for
// all users) per UTC day, between from and to (inclusive; a zero time is
// unbounded), oldest day first: the path of a store without daily
// aggregates. The runs of the range are read whole: runs are bucketed by
// their own created_at, sessions by theirs.
func (o *OS) dailyMetrics(ctx context.Context, userID string, from, to time.Time) ([]dayMetrics, time.Time, error) {
	query := storage.RunQuery{UserID: userID}
	if !from.IsZero() {
		query.CreatedAfter = from.Unix()
	}
	if !to.IsZero() {
		query.CreatedBefore = to.AddDate(0, 0, 1).Unix() - 1
	}
	records, _, err := o.cfg.Store.GetRuns(ctx, query)
	if err != nil {
		return nil, time.Time{}, err
	}
	sessions, _, err := o.cfg.Store.ListSessions(ctx, storage.SessionQuery{UserID: userID})
	if err != nil {
		return nil, time.Time{}, err
	}
	now := o.cfg.Now().UTC()
	inRange := func(createdAt int64) bool {
		return (query.CreatedAfter == 0 || createdAt >= query.CreatedAfter) && (query.CreatedBefore == 0 || createdAt <= query.CreatedBefore)
	}
	return aggregateDaily(userID, records, slices.DeleteFunc(sessions, func(s *storage.Session) bool { return !inRange(s.CreatedAt) }), now), now, nil
}

// dayBucket collects one day's activity while aggregating.
type dayBucket struct {
	day    dayMetrics
	users  map[string]bool
	models map[[2]string]int // (model id, provider) -> runs
}

// aggregateDaily buckets runs and sessions by the UTC day they were
// created and totals each day. A day with no activity is left out.
func aggregateDaily(userID string, records []storage.RunRecord, sessions []*storage.Session, now time.Time) []dayMetrics {
	buckets := map[string]*dayBucket{}
	bucket := func(epoch int64) *dayBucket {
		date := time.Unix(epoch, 0).UTC().Format(time.DateOnly)
		b, ok := buckets[date]
		if !ok {
			b = &dayBucket{day: dayMetrics{Date: date, AggregationPeriod: aggregationDaily}, users: map[string]bool{}, models: map[[2]string]int{}}
			buckets[date] = b
		}
		return b
	}
	for _, s := range sessions {
		b := bucket(s.CreatedAt)
		switch s.SessionType {
		case storage.SessionTypeTeam:
			b.day.TeamSessionsCount++
		case storage.SessionTypeWorkflow:
			b.day.WorkflowSessionsCount++
		default:
			b.day.AgentSessionsCount++
		}
		if s.UserID != "" {
			b.users[s.UserID] = true
		}
	}
	for _, rec := range records {
		b := bucket(rec.CreatedAt)
		switch rec.RunType {
		case storage.RunTypeTeam:
			b.day.TeamRunsCount++
		case storage.RunTypeWorkflow:
			b.day.WorkflowRunsCount++
		default:
			b.day.AgentRunsCount++
		}
		if rec.UserID != "" {
			b.users[rec.UserID] = true
		}
		if out := rec.Run; out != nil {
			if out.Metrics != nil {
				b.day.TokenMetrics.add(out.Metrics.Metrics)
			}
			if out.Model != "" {
				b.models[[2]string{out.Model, out.ModelProvider}]++
			}
		}
	}
	today := now.Format(time.DateOnly)
	days := make([]dayMetrics, 0, len(buckets))
	for _, date := range slices.Sorted(maps.Keys(buckets)) {
		b := buckets[date]
		b.day.ID = metricsID(userID, date)
		b.day.UsersCount = len(b.users)
		b.day.ModelMetrics = make([]modelMetric, 0, len(b.models))
		for key, count := range b.models {
			b.day.ModelMetrics = append(b.day.ModelMetrics, modelMetric{ModelID: key[0], ModelProvider: key[1], Count: count})
		}
		slices.SortFunc(b.day.ModelMetrics, func(a, b modelMetric) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.ModelID, b.ModelID), cmp.Compare(a.ModelProvider, b.ModelProvider))
		})
		b.day.Completed = date < today
		b.day.CreatedAt, b.day.UpdatedAt = now.Unix(), now.Unix()
		days = append(days, b.day)
	}
	return days
}

// metricsID is a stable id for one (user, day, period) row, shaped as a
// UUID like Agno's, so a day keeps its id across recomputations.
func metricsID(userID, date string) string {
	sum := sha1.Sum([]byte(userID + "\x00" + date + "\x00" + aggregationDaily))
	sum[6] = sum[6]&0x0f | 0x50 // version 5 (name-based, SHA-1)
	sum[8] = sum[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}
