package storage

import (
	"context"
	"slices"
	"time"

	"github.com/agnogo/agnogo/run"
)

// MetricsStore keeps daily usage aggregates in agno_metrics, one row per
// (user, UTC day), so reading usage costs the number of days asked for, not
// the number of runs stored.
//
// A store that implements it maintains the rows as it writes runs: a run
// counts on the day it was created once a save gives it a status in
// [MetricsStatuses], and its session counts on the day the session was
// created once one of its runs counts. Each save applies the difference
// between what the run's stored row counted for and what the new row
// counts for, so saving a run again with the same content changes nothing,
// a run continued after a pause counts once with its final tokens, and a
// run moved back to PENDING or RUNNING stops counting until it ends again.
// The runs [SessionStore.ForkSession] copies are not new usage: they count
// nothing and do not make the fork count (a copy saved again later adds
// only what changed since it was copied). Deleting a session or a run
// leaves the usage it counted in place until [MetricsStore.RefreshMetrics]
// recomputes its day.
//
// It is an optional ability of a [Store], discovered by type assertion:
// both adapters implement it.
type MetricsStore interface {
	// DailyMetrics returns the aggregates of the days in q (every day when
	// q.From and q.To are zero) for q's user scope, summed over its users,
	// oldest day first. A day without activity is left out.
	DailyMetrics(ctx context.Context, q MetricsQuery) ([]DayMetrics, error)
	// RefreshMetrics recomputes the aggregates of q's days, for q's user
	// scope, from the sessions and runs stored, replaces the stored rows and
	// returns the days as [MetricsStore.DailyMetrics] would. q.From and q.To
	// are required and at most [MaxMetricsRefreshDays] days may be asked for
	// at once ([ErrInvalid] otherwise). Each day is recomputed in a
	// transaction of its own, so the work a transaction holds locks for is
	// one day's runs.
	RefreshMetrics(ctx context.Context, q MetricsQuery) ([]DayMetrics, error)
}

// MaxMetricsRefreshDays bounds the days one [MetricsStore.RefreshMetrics]
// call recomputes, and so the runs it reads.
const MaxMetricsRefreshDays = 31

// MetricsStatuses lists the run statuses that count in the daily
// aggregates: the ends of a run ([run.Status.Terminal]) and REGENERATED, the
// status a completed run takes when it is replaced (its model calls were
// made all the same).
func MetricsStatuses() []run.Status {
	return []run.Status{run.StatusCompleted, run.StatusPaused, run.StatusCancelled, run.StatusError, run.StatusRegenerated}
}

// CountsInMetrics reports whether a run in status s counts in the daily
// aggregates (see [MetricsStatuses]).
func CountsInMetrics(s run.Status) bool { return slices.Contains(MetricsStatuses(), s) }

// MetricsQuery selects days of [MetricsStore] aggregates.
type MetricsQuery struct {
	// UserID scopes the days to one user's usage; "" sums every user's.
	UserID string
	// From and To are the first and last UTC day (inclusive; only their
	// date counts). A zero From or To leaves that end open.
	From, To time.Time
}

// DayMetrics is one UTC day's usage in a user scope (Agno's
// DayAggregatedMetrics, without the fields a server derives).
type DayMetrics struct {
	// Date is the day, YYYY-MM-DD.
	Date string
	// The runs and the sessions the day counts, by kind.
	AgentRuns, TeamRuns, WorkflowRuns             int
	AgentSessions, TeamSessions, WorkflowSessions int
	// Users counts the users who ran something or opened a session that day.
	Users int
	// Tokens sums the token counts (and cost) of the day's runs.
	Tokens run.Metrics
	// Models counts the day's runs per model, most used first.
	Models []ModelCount
	// CreatedAt and UpdatedAt are when the day's oldest row was created and
	// its newest last changed, in epoch seconds.
	CreatedAt, UpdatedAt int64
}

// Active reports whether the day counts any run or session.
func (d DayMetrics) Active() bool {
	return d.AgentRuns+d.TeamRuns+d.WorkflowRuns+d.AgentSessions+d.TeamSessions+d.WorkflowSessions > 0
}

// ModelCount is how many runs of a day one model served.
type ModelCount struct {
	ModelID       string `json:"model_id"`
	ModelProvider string `json:"model_provider"`
	Count         int    `json:"count"`
}
