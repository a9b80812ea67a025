package durable

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// The operations side of the queue: what an operator lists, counts and
// repairs (GET /queue/jobs, agnogo queue). A job is one run's workflow; its
// state is read from the engine, and from the run row where the engine
// cannot tell (a workflow waiting for a person is PENDING to the engine,
// but its run is PAUSED).

// workflowName is the engine's name of the run workflow (see [New]).
const workflowName = "agent-run"

// JobStatus is a job's state as the operations API names it.
type JobStatus string

// The job states. A workflow's engine state maps onto them: ENQUEUED and
// DELAYED are queued; PENDING is running, or paused when its run row is
// PAUSED; SUCCESS takes the run's final status (COMPLETED → completed,
// ERROR → failed, CANCELLED → cancelled, PAUSED → paused); ERROR and
// MAX_RECOVERY_ATTEMPTS_EXCEEDED are failed; CANCELLED is cancelled.
const (
	JobQueued    JobStatus = "queued"
	JobRunning   JobStatus = "running"
	JobPaused    JobStatus = "paused"
	JobCompleted JobStatus = "completed"
	JobFailed    JobStatus = "failed"
	JobCancelled JobStatus = "cancelled"
)

// JobStatuses lists every [JobStatus], in lifecycle order.
func JobStatuses() []JobStatus {
	return []JobStatus{JobQueued, JobRunning, JobPaused, JobCompleted, JobFailed, JobCancelled}
}

// ParseJobStatus reads a job status; anything else is an error wrapping
// [storage.ErrInvalid] that lists the valid ones.
func ParseJobStatus(s string) (JobStatus, error) {
	status := JobStatus(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(JobStatuses(), status) {
		return status, nil
	}
	names := make([]string, 0, len(JobStatuses()))
	for _, known := range JobStatuses() {
		names = append(names, string(known))
	}
	return "", fmt.Errorf("%w: job status %q: want one of %s", storage.ErrInvalid, s, strings.Join(names, ", "))
}

// Job is one background run as the queue sees it.
type Job struct {
	// ID is the run id (the workflow id).
	ID string `json:"id"`
	// AgentID is the runner (agent or team) the run was submitted to; its
	// JSON name stays agent_id.
	AgentID string `json:"agent_id"`
	// SessionID is the run's session, which orders the queue.
	SessionID string `json:"session_id"`
	// UserID is the run's user, if any.
	UserID string `json:"user_id,omitempty"`
	// Status is the job's state on the queue.
	Status JobStatus `json:"status"`
	// RunStatus is the status of the run row, when there is one.
	RunStatus run.Status `json:"run_status,omitempty"`
	// Attempts is how many times the queue started the run, requeues
	// included; 0 while it has never started.
	Attempts int `json:"attempts"`
	// CreatedAt, UpdatedAt, StartedAt and CompletedAt are epoch seconds,
	// left out when unknown. StartedAt is when the current attempt was
	// dequeued; CompletedAt when the workflow ended.
	CreatedAt   int64 `json:"created_at,omitempty"`
	UpdatedAt   int64 `json:"updated_at,omitempty"`
	StartedAt   int64 `json:"started_at,omitempty"`
	CompletedAt int64 `json:"completed_at,omitempty"`
	// ExecutorID names the process that last held the run: the one
	// executing it, else the one that executed or queued it last.
	ExecutorID string `json:"executor_id,omitempty"`
	// Error is why a failed job failed.
	Error string `json:"error,omitempty"`
	// IdempotencyKey is the key the run was submitted with, if any.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Paging of [Queue.Jobs].
const (
	// DefaultJobsPageSize is the page size when JobQuery.Limit is 0.
	DefaultJobsPageSize = 20
	// MaxJobsPageSize bounds JobQuery.Limit.
	MaxJobsPageSize = 1000
)

// JobQuery filters and pages [Queue.Jobs].
type JobQuery struct {
	// Statuses keeps the jobs in any of these states. Defaults to all.
	Statuses []JobStatus
	// Limit is the page size, at most [MaxJobsPageSize]. Defaults to
	// [DefaultJobsPageSize].
	Limit int
	// Page is the page number, from 1 (0 is the first page too).
	Page int
	// SortDesc lists the newest jobs first. Defaults to the oldest first.
	SortDesc bool
}

// Jobs returns one page of the queue's jobs, ordered by creation time, and
// how many jobs match in all.
func (q *Queue) Jobs(ctx context.Context, query JobQuery) ([]Job, int, error) {
	for _, s := range query.Statuses {
		if _, err := ParseJobStatus(string(s)); err != nil {
			return nil, 0, err
		}
	}
	limit := min(cmp.Or(max(query.Limit, 0), DefaultJobsPageSize), MaxJobsPageSize)
	offset := (max(query.Page, 1) - 1) * limit
	found, err := q.classified(ctx, query.Statuses)
	if err != nil {
		return nil, 0, err
	}
	slices.SortStableFunc(found, func(a, b classifiedWorkflow) int {
		order := cmp.Or(a.wf.CreatedAt.Compare(b.wf.CreatedAt), strings.Compare(a.wf.ID, b.wf.ID))
		if query.SortDesc {
			return -order
		}
		return order
	})
	total := len(found)
	if offset >= total {
		return []Job{}, total, nil
	}
	page := found[offset:min(offset+limit, total)]
	jobs, err := q.describe(ctx, page)
	if err != nil {
		return nil, 0, err
	}
	return jobs, total, nil
}

// Job returns one job. An unknown id is an error wrapping
// [storage.ErrNotFound].
func (q *Queue) Job(ctx context.Context, id string) (Job, error) {
	eng, release := q.engine(ctx)
	defer release()
	found, err := dbos.ListWorkflows(eng, dbos.WithFilterWorkflowIDs(id), dbos.WithFilterName(workflowName),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(true))
	if err != nil {
		return Job{}, fmt.Errorf("durable: find job %s: %w", id, err)
	}
	if len(found) == 0 {
		return Job{}, fmt.Errorf("durable: job %s: %w", id, storage.ErrNotFound)
	}
	c := classifiedWorkflow{wf: found[0]}
	if err := q.classify(ctx, &c); err != nil {
		return Job{}, err
	}
	jobs, err := q.describe(ctx, []classifiedWorkflow{c})
	if err != nil {
		return Job{}, err
	}
	return jobs[0], nil
}

// Stats counts the queue's jobs.
type Stats struct {
	// Counts has one entry per [JobStatus], zeros included.
	Counts map[JobStatus]int `json:"counts"`
	// OldestQueuedAgeSeconds is how long the oldest queued job has waited;
	// nil when none waits.
	OldestQueuedAgeSeconds *int64 `json:"oldest_queued_age_seconds"`
}

// Stats counts the jobs in each state and ages the oldest queued one.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	found, err := q.classified(ctx, nil)
	if err != nil {
		return Stats{}, err
	}
	stats := Stats{Counts: map[JobStatus]int{}}
	for _, s := range JobStatuses() {
		stats.Counts[s] = 0
	}
	var oldest time.Time
	for _, c := range found {
		stats.Counts[c.status]++
		if c.status == JobQueued && (oldest.IsZero() || c.wf.CreatedAt.Before(oldest)) {
			oldest = c.wf.CreatedAt
		}
	}
	if !oldest.IsZero() {
		age := max(int64(q.cfg.Now().Sub(oldest)/time.Second), 0)
		stats.OldestQueuedAgeSeconds = &age
	}
	return stats, nil
}

// classifiedWorkflow is a run workflow with its job status, and its run
// row when it was read to decide the status.
type classifiedWorkflow struct {
	wf     dbos.WorkflowStatus
	status JobStatus
	row    *storage.RunRecord
}

// classified lists the run workflows whose job status is one of statuses
// (all when empty). Only the engine states that can map to those statuses
// are read.
func (q *Queue) classified(ctx context.Context, statuses []JobStatus) ([]classifiedWorkflow, error) {
	opts := []dbos.ListWorkflowsOption{dbos.WithFilterName(workflowName), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(true)}
	if len(statuses) > 0 {
		opts = append(opts, dbos.WithFilterStatus(engineStates(statuses)...))
	}
	eng, release := q.engine(ctx)
	defer release()
	listed, err := dbos.ListWorkflows(eng, opts...)
	if err != nil {
		return nil, fmt.Errorf("durable: list jobs: %w", err)
	}
	found := make([]classifiedWorkflow, 0, len(listed))
	for _, wf := range listed {
		c := classifiedWorkflow{wf: wf}
		if err := q.classify(ctx, &c); err != nil {
			return nil, err
		}
		if len(statuses) == 0 || slices.Contains(statuses, c.status) {
			found = append(found, c)
		}
	}
	return found, nil
}

// engineStates are the engine states whose workflows may have one of
// statuses.
func engineStates(statuses []JobStatus) []dbos.WorkflowStatusType {
	var states []dbos.WorkflowStatusType
	add := func(more ...dbos.WorkflowStatusType) {
		for _, s := range more {
			if !slices.Contains(states, s) {
				states = append(states, s)
			}
		}
	}
	for _, s := range statuses {
		switch s {
		case JobQueued:
			add(dbos.WorkflowStatusEnqueued, dbos.WorkflowStatusDelayed)
		case JobRunning:
			add(dbos.WorkflowStatusPending)
		case JobPaused:
			add(dbos.WorkflowStatusPending, dbos.WorkflowStatusSuccess)
		case JobCompleted:
			add(dbos.WorkflowStatusSuccess)
		case JobFailed:
			add(dbos.WorkflowStatusError, dbos.WorkflowStatusMaxRecoveryAttemptsExceeded, dbos.WorkflowStatusSuccess)
		case JobCancelled:
			add(dbos.WorkflowStatusCancelled, dbos.WorkflowStatusSuccess)
		}
	}
	return states
}

// classify sets c.status, reading the run row of a PENDING workflow (the
// only state the engine cannot tell apart: executing, or parked for a
// person).
func (q *Queue) classify(ctx context.Context, c *classifiedWorkflow) error {
	switch c.wf.Status {
	case dbos.WorkflowStatusEnqueued, dbos.WorkflowStatusDelayed:
		c.status = JobQueued
	case dbos.WorkflowStatusPending:
		c.status = JobRunning
		rec, err := q.cfg.Store.GetRun(ctx, c.wf.ID, "")
		switch {
		case err == nil:
			c.row = &rec
			if rec.Run.Status == run.StatusPaused {
				c.status = JobPaused
			}
		case !errors.Is(err, storage.ErrNotFound):
			return fmt.Errorf("durable: read run %s: %w", c.wf.ID, err)
		}
	case dbos.WorkflowStatusSuccess:
		switch workflowResult(c.wf.Output) {
		case run.StatusError:
			c.status = JobFailed
		case run.StatusCancelled:
			c.status = JobCancelled
		case run.StatusPaused:
			c.status = JobPaused
		default:
			c.status = JobCompleted
		}
	case dbos.WorkflowStatusCancelled:
		c.status = JobCancelled
	default: // ERROR, MAX_RECOVERY_ATTEMPTS_EXCEEDED
		c.status = JobFailed
	}
	return nil
}

// workflowResult reads a finished workflow's output: the run's final
// status, which the engine may hand back JSON-encoded.
func workflowResult(output any) run.Status {
	s, ok := output.(string)
	if !ok {
		return ""
	}
	var decoded string
	if json.Unmarshal([]byte(s), &decoded) == nil {
		s = decoded
	}
	return run.Status(s)
}

// describe builds the jobs of workflows: their inputs (agent, session,
// user, key) come from the engine, their run status and attempts from the
// run rows.
func (q *Queue) describe(ctx context.Context, page []classifiedWorkflow) ([]Job, error) {
	if len(page) == 0 {
		return []Job{}, nil
	}
	ids := make([]string, len(page))
	for i, c := range page {
		ids[i] = c.wf.ID
	}
	eng, release := q.engine(ctx)
	defer release()
	withInput, err := dbos.ListWorkflows(eng, dbos.WithFilterWorkflowIDs(ids...), dbos.WithFilterLoadInput(true), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return nil, fmt.Errorf("durable: read jobs: %w", err)
	}
	inputs := make(map[string]any, len(withInput))
	for _, wf := range withInput {
		inputs[wf.ID] = wf.Input
	}
	jobs := make([]Job, 0, len(page))
	for _, c := range page {
		j, _ := decodeJob(inputs[c.wf.ID]) // an unreadable input leaves the fields empty
		rec := c.row
		if rec == nil {
			read, err := q.cfg.Store.GetRun(ctx, c.wf.ID, "")
			switch {
			case err == nil:
				rec = &read
			case !errors.Is(err, storage.ErrNotFound):
				return nil, fmt.Errorf("durable: read run %s: %w", c.wf.ID, err)
			}
		}
		jobs = append(jobs, buildJob(c, j, rec))
	}
	return jobs, nil
}

// buildJob assembles a job from its workflow, its input and its run row.
func buildJob(c classifiedWorkflow, j job, rec *storage.RunRecord) Job {
	out := Job{
		ID: c.wf.ID, AgentID: j.AgentID, SessionID: j.SessionID, UserID: j.UserID,
		Status: c.status, ExecutorID: c.wf.ExecutorID, IdempotencyKey: j.IdempotencyKey,
		CreatedAt: epoch(c.wf.CreatedAt), UpdatedAt: epoch(c.wf.UpdatedAt),
		StartedAt: epoch(c.wf.StartedAt), CompletedAt: epoch(c.wf.CompletedAt),
	}
	var metadata map[string]any
	if rec != nil && rec.Run != nil {
		out.RunStatus = rec.Run.Status
		metadata = rec.Run.Metadata
		out.AgentID = cmp.Or(out.AgentID, rec.Run.RunnerID())
		out.SessionID = cmp.Or(out.SessionID, rec.SessionID)
		out.UserID = cmp.Or(out.UserID, rec.UserID)
	}
	started := c.wf.Status == dbos.WorkflowStatusPending || !c.wf.StartedAt.IsZero()
	out.Attempts = attempts(metadata, started)
	if c.status == JobFailed {
		out.Error = failure(c.wf, rec)
	}
	return out
}

// failure is why a failed job failed: the run row's message, else the
// engine's error.
func failure(wf dbos.WorkflowStatus, rec *storage.RunRecord) string {
	if rec != nil && rec.Run != nil && rec.Run.Status == run.StatusError {
		if s, ok := rec.Run.Content.(string); ok && s != "" {
			return s
		}
	}
	switch {
	case wf.Error != nil:
		return wf.Error.Error()
	case wf.Status == dbos.WorkflowStatusMaxRecoveryAttemptsExceeded:
		return "the run was recovered too many times and was set aside"
	}
	return "the run failed"
}

// queueAttemptOffsetKey is the run metadata key holding how many
// executions metadata.queue_attempt does not count: a requeue resets
// queue_attempt (see [Queue.Requeue]), and the offset keeps the total.
const queueAttemptOffsetKey = "queue_attempt_offset"

// attempts is how many times the queue started a run: queue_attempt plus
// its requeue offset. An execution that began before its row recorded the
// attempt counts once.
func attempts(metadata map[string]any, started bool) int {
	recorded, ok := metadataInt(metadata, queueAttemptKey)
	if !ok && started {
		recorded = 1
	}
	offset, _ := metadataInt(metadata, queueAttemptOffsetKey)
	return max(recorded+offset, 0)
}

// metadataInt reads an integer run metadata value, whichever way it was
// decoded.
func metadataInt(metadata map[string]any, key string) (int, bool) {
	switch v := metadata[key].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		return int(v), true
	case json.Number:
		n, err := v.Int64()
		return int(n), err == nil
	}
	return 0, false
}

// epoch is t in epoch seconds; 0 for the zero time.
func epoch(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// engine returns the engine's context bound to ctx: the calls made with it
// stop when ctx ends. Call release when done.
func (q *Queue) engine(ctx context.Context) (eng dbos.Context, release func()) {
	eng, cancel := dbos.WithCancel(q.dbos)
	stop := context.AfterFunc(ctx, cancel)
	return eng, func() {
		stop()
		cancel()
	}
}
