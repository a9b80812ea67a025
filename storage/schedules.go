package storage

import (
	"context"
	"encoding/json"
)

// The scheduler's tables, as Agno 3.x names them.
const (
	// SchedulesTable holds one row per cron schedule.
	SchedulesTable = "agno_schedules"
	// ScheduleRunsTable holds one row per attempt of a schedule's fire.
	ScheduleRunsTable = "agno_schedule_runs"
)

// The statuses of a schedule run (ScheduleRun.Status).
const (
	ScheduleRunRunning   = "running"
	ScheduleRunSuccess   = "success"
	ScheduleRunFailed    = "failed"
	ScheduleRunPaused    = "paused"
	ScheduleRunCancelled = "cancelled"
)

// Schedule is one agno_schedules row. Times are epoch seconds; a nil
// pointer is a NULL column, and so is an empty UserID (an unowned schedule)
// and every empty provenance field.
type Schedule struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Method is GET, POST, PUT, PATCH or DELETE.
	Method string `json:"method"`
	// Endpoint is the AgentOS path the schedule calls (/agents/a/runs).
	Endpoint string `json:"endpoint"`
	// Payload is the request's body: a run endpoint's form fields.
	Payload           map[string]any `json:"payload"`
	CronExpr          string         `json:"cron_expr"`
	Timezone          string         `json:"timezone"`
	TimeoutSeconds    int64          `json:"timeout_seconds"`
	MaxRetries        int64          `json:"max_retries"`
	RetryDelaySeconds int64          `json:"retry_delay_seconds"`
	Enabled           bool           `json:"enabled"`
	// NextRunAt is when the schedule fires next; nil when it never will.
	NextRunAt *int64 `json:"next_run_at"`
	// LockedBy and LockedAt are Agno's claim columns; agnogo's scheduler
	// claims each fire with a compare-and-set on NextRunAt instead
	// ([ScheduleStore.FireSchedule]) and leaves them NULL.
	LockedBy string `json:"locked_by,omitempty"`
	LockedAt *int64 `json:"locked_at,omitempty"`
	// UserID owns the schedule: its runs are that user's.
	UserID string `json:"user_id"`
	// Provenance: who manages the schedule (managed_by), the component
	// its endpoint must keep running (target_type, target_id), and the
	// runs that created and last updated it.
	ManagedBy          string `json:"managed_by"`
	TargetType         string `json:"target_type"`
	TargetID           string `json:"target_id"`
	CreatedByRunID     string `json:"created_by_run_id"`
	CreatedBySessionID string `json:"created_by_session_id"`
	UpdatedByRunID     string `json:"updated_by_run_id"`
	UpdatedBySessionID string `json:"updated_by_session_id"`
	// DisabledReason says why the scheduler disabled the schedule
	// (endpoint_drift:…, target_archived:…); "" when it did not.
	DisabledReason string `json:"disabled_reason"`
	CreatedAt      int64  `json:"created_at"`
	UpdatedAt      int64  `json:"updated_at"`
}

// ScheduleQuery filters and pages [ScheduleStore.ListSchedules], newest
// first.
type ScheduleQuery struct {
	// UserID scopes the listing to one owner's schedules; "" lists all.
	UserID string
	// Enabled keeps enabled (or disabled) schedules when set.
	Enabled *bool
	Page
}

// ScheduleUpdate changes the mutable columns of a schedule (Agno's
// SCHEDULE_MUTABLE_COLUMNS): a nil field is left as it is. Ownership,
// provenance targets and claims are never written through it.
type ScheduleUpdate struct {
	Name              *string
	Description       *string
	Method            *string
	Endpoint          *string
	Payload           map[string]any // replaces the payload when SetPayload
	SetPayload        bool
	CronExpr          *string
	Timezone          *string
	TimeoutSeconds    *int64
	MaxRetries        *int64
	RetryDelaySeconds *int64
	Enabled           *bool
	// NextRunAt sets next_run_at when SetNextRunAt; nil stores NULL.
	NextRunAt    *int64
	SetNextRunAt bool
	// DisabledReason sets disabled_reason; "" stores NULL.
	DisabledReason *string
	// UpdatedByRunID and UpdatedBySessionID record the run making the
	// change, when one is; empty leaves them as they are.
	UpdatedByRunID     string
	UpdatedBySessionID string
}

// ScheduleFire consumes one due fire of a schedule: the schedule moves on
// to NextRunAt only if it is still enabled and still due at Due, so of
// every replica that saw the same fire exactly one wins it.
type ScheduleFire struct {
	ScheduleID string
	// Due is the next_run_at the caller read.
	Due int64
	// NextRunAt is the next fire; nil stores NULL (and disables nothing by
	// itself).
	NextRunAt *int64
	// Disable disables the schedule with this reason (endpoint_drift:…,
	// invalid cron); "" leaves it enabled.
	Disable string
	// Run is the first attempt's row, inserted in the same transaction.
	Run *ScheduleRun
}

// ScheduleRun is one agno_schedule_runs row: one attempt of one fire (or
// trigger) of a schedule. Times are epoch seconds.
type ScheduleRun struct {
	ID         string `json:"id"`
	ScheduleID string `json:"schedule_id"`
	Attempt    int64  `json:"attempt"`
	// TriggeredAt is when the attempt is due to start: a retry's row is
	// written with its retry delay ahead of it.
	TriggeredAt *int64 `json:"triggered_at"`
	CompletedAt *int64 `json:"completed_at"`
	// Status is running, success, failed, paused or cancelled.
	Status     string `json:"status"`
	StatusCode *int64 `json:"status_code"`
	// RunID and SessionID name the run the attempt started.
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Error     string `json:"error"`
	// Input is what the attempt sent; Output is {content, content_type};
	// Requirements is a paused run's requirements (a JSON array).
	Input        map[string]any  `json:"input"`
	Output       map[string]any  `json:"output"`
	Requirements json.RawMessage `json:"requirements"`
	// UserID is the schedule's owner, copied from it.
	UserID    string `json:"user_id"`
	CreatedAt int64  `json:"created_at"`
	// LockedBy and LockedAt lease a running attempt to the scheduler
	// executing it (agnogo's columns): an attempt whose lease has lapsed
	// is taken over by another replica.
	LockedBy string `json:"locked_by,omitempty"`
	LockedAt *int64 `json:"locked_at,omitempty"`
}

// ScheduleRunClaim asks [ScheduleStore.ClaimScheduleRuns] for running
// attempts due by Now whose lease is free or older than StaleBefore.
type ScheduleRunClaim struct {
	Worker      string
	Now         int64
	StaleBefore int64
	// Limit caps the attempts leased at once; 0 is no limit.
	Limit int
}

// ScheduleRunUpdate changes a running attempt held by Worker; nil fields
// are left as they are.
type ScheduleRunUpdate struct {
	// Worker must hold the attempt's lease; the lease is renewed to Now
	// (a zero Now is the store's clock).
	Worker       string
	Now          int64
	Status       *string
	StatusCode   *int64
	RunID        *string
	SessionID    *string
	Error        *string
	Input        map[string]any
	Output       map[string]any
	Requirements json.RawMessage
	CompletedAt  *int64
}

// ScheduleStore keeps schedules and their runs. It is an optional ability
// of a [Store], discovered by type assertion; both SQL adapters implement
// it. A userID argument scopes the call to that owner's schedules ("" is
// every schedule); a row outside the scope is [ErrNotFound].
type ScheduleStore interface {
	// CreateSchedule inserts s (an empty ID is assigned, zero CreatedAt
	// and UpdatedAt are now) and returns the stored row. Name, Method,
	// Endpoint and CronExpr are required ([ErrInvalid]). A name the owner
	// (or, unowned, another unowned schedule) already uses is
	// [ErrConflict].
	CreateSchedule(ctx context.Context, s *Schedule) (*Schedule, error)
	// GetSchedule reads one schedule.
	GetSchedule(ctx context.Context, id, userID string) (*Schedule, error)
	// ListSchedules returns one page of schedules, newest first, and the
	// total that match.
	ListSchedules(ctx context.Context, q ScheduleQuery) ([]*Schedule, int, error)
	// UpdateSchedule applies u and returns the stored row; a name taken
	// is [ErrConflict].
	UpdateSchedule(ctx context.Context, id, userID string, u ScheduleUpdate) (*Schedule, error)
	// DeleteSchedule removes a schedule and its runs.
	DeleteSchedule(ctx context.Context, id, userID string) error
	// DueSchedules returns up to limit (0: no limit) enabled schedules
	// due by now, earliest first.
	DueSchedules(ctx context.Context, now int64, limit int) ([]*Schedule, error)
	// NextDue returns the earliest next_run_at of an enabled schedule, or
	// nil when none will fire.
	NextDue(ctx context.Context) (*int64, error)
	// FireSchedule consumes one fire (see [ScheduleFire]) and returns the
	// inserted attempt (nil when f.Run is nil). A fire another caller
	// consumed first, or a schedule disabled or deleted meanwhile, is
	// [ErrConflict] and nothing is written.
	FireSchedule(ctx context.Context, f ScheduleFire) (*ScheduleRun, error)
	// CreateScheduleRun inserts an attempt (an empty ID is assigned, a
	// zero CreatedAt is now, UserID is copied from the schedule) and
	// returns it. The schedule must exist and be userID's. Status must be
	// one of the ScheduleRun statuses ([ErrInvalid]).
	CreateScheduleRun(ctx context.Context, r *ScheduleRun, userID string) (*ScheduleRun, error)
	// ClaimScheduleRuns leases running attempts to c.Worker (see
	// [ScheduleRunClaim]), earliest first, and returns them. Each is
	// leased to one caller only.
	ClaimScheduleRuns(ctx context.Context, c ScheduleRunClaim) ([]*ScheduleRun, error)
	// UpdateScheduleRun applies u to a running attempt leased to u.Worker
	// and returns it. An attempt no longer running, or leased to another
	// worker, is [ErrConflict] and nothing is written; an unknown id is
	// [ErrNotFound].
	UpdateScheduleRun(ctx context.Context, id string, u ScheduleRunUpdate) (*ScheduleRun, error)
	// GetScheduleRun reads one attempt of one schedule.
	GetScheduleRun(ctx context.Context, scheduleID, id, userID string) (*ScheduleRun, error)
	// ListScheduleRuns returns one page of a schedule's attempts, newest
	// first, and the total. A schedule outside the scope is [ErrNotFound].
	ListScheduleRuns(ctx context.Context, scheduleID, userID string, p Page) ([]*ScheduleRun, int, error)
}
