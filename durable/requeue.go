package durable

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// RequeueGrace is how long after a job ended it is requeued only with
// RequeueOptions.Force, unless Config.LockGrace says otherwise: for that
// long a worker wrongly taken for dead, or a cancelled step still
// unwinding, may still hold the run.
const RequeueGrace = DefaultLockGrace

// Errors of [Queue.Requeue]. Match them with errors.Is.
var (
	// ErrNotRequeueable: the job is not failed or cancelled.
	ErrNotRequeueable = errors.New("the job cannot be requeued")
	// ErrRequeueTooSoon: the job ended less than the lock grace ago
	// ([RequeueGrace] by default); the error is a [*RequeueTooSoonError].
	ErrRequeueTooSoon = errors.New("the job ended too recently to be requeued")
)

// RequeueTooSoonError is a requeue refused within the lock grace of the
// job's end. It matches [ErrRequeueTooSoon].
type RequeueTooSoonError struct {
	// RunID is the job.
	RunID string
	// Ago is how long ago the job ended.
	Ago time.Duration
	// Grace is the queue's lock grace.
	Grace time.Duration
	// Wait is how long until it may be requeued without Force.
	Wait time.Duration
}

// Error implements error.
func (e *RequeueTooSoonError) Error() string {
	return fmt.Sprintf("%v: job %s ended %s ago, and a worker may hold it for up to %s; retry in %s, or force the requeue",
		ErrRequeueTooSoon, e.RunID, e.Ago.Round(time.Second), e.Grace, e.Wait.Round(time.Second))
}

// Is reports whether target is [ErrRequeueTooSoon].
func (e *RequeueTooSoonError) Is(target error) bool { return target == ErrRequeueTooSoon }

// RequeueOptions tune [Queue.Requeue].
type RequeueOptions struct {
	// Force requeues a job that ended less than the lock grace
	// (Config.LockGrace) ago. Defaults to false.
	Force bool
}

// queueRequeuedKey is the run metadata key marking a run requeued and not
// executed since.
const queueRequeuedKey = "queue_requeued"

// Requeue runs a failed or cancelled job again, and returns it queued.
//
// The run goes on from its last completed step: the steps up to the last
// one that succeeded keep their recorded results (a completed tool call is
// not made again), and the failed steps after it run again. Its run row is
// reset to PENDING, keeping its metadata, and the failed attempt is added
// to metadata.attempts.
//
// A requeue grants exactly one more attempt: metadata.queue_attempt is set
// to MaxAttempts-1 (removed when MaxAttempts is 1), so the next execution
// counts as the last attempt the budget allows, and a worker lost during it
// ends the run ERROR again. metadata.queue_attempt_offset keeps the
// executions before the requeue, so [Job.Attempts] still counts them all.
//
// The row also gets metadata.queue_requeued: true, which the execution
// that takes it may read to tell a requeue from a lost worker.
//
// It returns the job as it was queued again (status queued, the attempts
// made so far), whether or not a worker has taken it since.
//
// An unknown id is an error wrapping [storage.ErrNotFound]; a job that is
// not failed or cancelled, [ErrNotRequeueable]; one that ended less than
// Config.LockGrace ago, without Force, a [*RequeueTooSoonError].
func (q *Queue) Requeue(ctx context.Context, id string, opts RequeueOptions) (Job, error) {
	q.requeues.Lock()
	defer q.requeues.Unlock()
	eng, release := q.engine(ctx)
	defer release()
	found, err := dbos.ListWorkflows(eng, dbos.WithFilterWorkflowIDs(id), dbos.WithFilterName(workflowName),
		dbos.WithFilterLoadInput(true), dbos.WithFilterLoadOutput(true))
	if err != nil {
		return Job{}, fmt.Errorf("durable: find job %s: %w", id, err)
	}
	if len(found) == 0 {
		return Job{}, fmt.Errorf("durable: job %s: %w", id, storage.ErrNotFound)
	}
	wf := found[0]
	c := classifiedWorkflow{wf: wf}
	if err := q.classify(ctx, &c); err != nil {
		return Job{}, err
	}
	if c.status != JobFailed && c.status != JobCancelled {
		return Job{}, fmt.Errorf("%w: job %s is %s; only failed or cancelled jobs are requeued", ErrNotRequeueable, id, c.status)
	}
	ended := cmp.Or(wf.CompletedAt, wf.UpdatedAt)
	if ago := max(q.cfg.Now().Sub(ended), 0); !opts.Force && ago < q.cfg.LockGrace {
		return Job{}, &RequeueTooSoonError{RunID: id, Ago: ago, Grace: q.cfg.LockGrace, Wait: q.cfg.LockGrace - ago}
	}
	j, err := decodeJob(wf.Input)
	if err != nil {
		return Job{}, fmt.Errorf("durable: read job %s: %w", id, err)
	}
	start, err := resumeStep(eng, id)
	if err != nil {
		return Job{}, err
	}

	rec, err := q.cfg.Store.GetRun(ctx, id, "")
	hasRow := err == nil
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return Job{}, fmt.Errorf("durable: read run %s: %w", id, err)
	}
	partition := j.SessionID
	if hasRow {
		partition = cmp.Or(partition, rec.SessionID)
	}
	if partition == "" {
		return Job{}, fmt.Errorf("%w: job %s has no session to queue it in", ErrNotRequeueable, id)
	}
	var row *storage.RunRecord
	if hasRow {
		// The row goes back to PENDING before the workflow is enqueued, so
		// the worker that takes it finds the reset attempt count.
		reset := rec
		reset.Run = q.requeuedRun(c, rec)
		if _, err := q.cfg.Store.UpsertRun(ctx, reset); err != nil {
			return Job{}, fmt.Errorf("durable: reset run %s: %w", id, err)
		}
		row = &reset
	}
	_, err = dbos.RewindWorkflow[string](eng, id, dbos.WithRewindStartStep(uint(start)),
		dbos.WithRewindQueue(queueName), dbos.WithRewindQueuePartitionKey(partition),
		dbos.WithRewindApplicationVersion(q.cfg.ApplicationVersion))
	if err != nil {
		if q.active(ctx, id) {
			// Another process requeued it meanwhile; its reset row stands.
			return Job{}, fmt.Errorf("%w: job %s was requeued meanwhile", ErrNotRequeueable, id)
		}
		if hasRow {
			q.restoreRun(ctx, id, rec)
		}
		return Job{}, fmt.Errorf("durable: requeue job %s: %w", id, err)
	}
	q.cfg.Events.Register(id, run.StatusPending)
	// The job as it was queued again. A worker may take it at once; what it
	// does shows in the next read of the job, not in this answer, which
	// would otherwise depend on that race.
	c.status = JobQueued
	return buildJob(c, j, row), nil
}

// requeuedRun is a failed or cancelled run as Requeue leaves it: PENDING,
// with its attempt count reset (see [Queue.Requeue]) and the attempt that
// failed recorded.
func (q *Queue) requeuedRun(c classifiedWorkflow, rec storage.RunRecord) *run.Output {
	out := *rec.Run
	out.Status = run.StatusPending
	out.Content, out.ContentType = nil, ""
	out.Metadata = maps.Clone(rec.Run.Metadata)
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	prior := attempts(rec.Run.Metadata, !c.wf.StartedAt.IsZero())
	spent := q.cfg.MaxAttempts - 1
	delete(out.Metadata, queueAttemptKey)
	delete(out.Metadata, queueAttemptOffsetKey)
	if spent > 0 {
		out.Metadata[queueAttemptKey] = spent
	}
	if offset := prior - spent; offset != 0 {
		out.Metadata[queueAttemptOffsetKey] = offset
	}
	out.Metadata[queueRequeuedKey] = true
	if prior > 0 {
		reason := "the run was cancelled"
		if c.status == JobFailed {
			reason = failure(c.wf, &rec)
		}
		startedAt := cmp.Or(epoch(c.wf.StartedAt), runhost.StartedAt(rec.Run))
		endedAt := epoch(cmp.Or(c.wf.CompletedAt, c.wf.UpdatedAt))
		if err := out.AppendAttempt(run.Attempt{Attempt: prior, Error: &reason, StartedAt: startedAt, EndedAt: endedAt}); err != nil {
			q.log.Warn("durable: the requeued run's attempt history is unreadable; it is kept as it was", slog.String("run_id", rec.Run.RunID), slog.String("error", err.Error()))
		}
	}
	return &out
}

// active reports whether a job's workflow is queued or executing.
func (q *Queue) active(ctx context.Context, id string) bool {
	eng, release := q.engine(context.WithoutCancel(ctx))
	defer release()
	found, err := dbos.ListWorkflows(eng, dbos.WithFilterWorkflowIDs(id),
		dbos.WithFilterStatus(dbos.WorkflowStatusEnqueued, dbos.WorkflowStatusDelayed, dbos.WorkflowStatusPending),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	return err == nil && len(found) > 0
}

// restoreRun puts back the row of a run whose requeue failed, unless the
// run moved on meanwhile.
func (q *Queue) restoreRun(ctx context.Context, id string, rec storage.RunRecord) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	current, err := q.cfg.Store.GetRun(ctx, id, "")
	if err != nil || current.Run.Status != run.StatusPending {
		return
	}
	if _, err := q.cfg.Store.UpsertRun(ctx, rec); err != nil {
		q.log.Error("durable: a run whose requeue failed was left PENDING", slog.String("run_id", id), slog.String("error", err.Error()))
	}
}

// resumeStep is the step a requeued run starts from. Only the run's own
// steps count (model and tool calls; the engine's bookkeeping steps, named
// "DBOS.…", such as event stream writes, do not): the run goes on from the
// first of its steps after the last one that succeeded, or right after that
// one when none was recorded since (the step in flight when a worker was
// lost). A step failed when the engine recorded an error, or when its
// recorded result is a failure the run would replay: model and tool steps
// record theirs as a JSON object with an error or message field, so that a
// re-executed run fails the same way.
func resumeStep(eng dbos.Context, id string) (int, error) {
	steps, err := dbos.GetWorkflowSteps(eng, id, dbos.WithStepsLoadOutput(true))
	if err != nil {
		return 0, fmt.Errorf("durable: read the steps of job %s: %w", id, err)
	}
	lastOK := -1
	for _, step := range steps {
		if !engineStep(step) && step.Error == nil && !recordedFailure(step.Output) {
			lastOK = max(lastOK, step.StepID)
		}
	}
	for _, step := range steps {
		if step.StepID > lastOK && !engineStep(step) {
			return step.StepID, nil // the first failed step
		}
	}
	return lastOK + 1, nil
}

// engineStep reports a step the engine records for itself.
func engineStep(step dbos.StepInfo) bool { return strings.HasPrefix(step.StepName, "DBOS.") }

// recordedFailure reports whether a step's recorded result is a failure.
// The engine hands a step's bytes back as the JSON text of their base64
// string.
func recordedFailure(output any) bool {
	text, ok := output.(string)
	if !ok {
		return false
	}
	var record []byte
	if json.Unmarshal([]byte(text), &record) != nil {
		return false
	}
	var fields struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(record, &fields) != nil {
		return false
	}
	return present(fields.Error) || present(fields.Message)
}

// present reports a JSON value that says something: not absent, null, ""
// or {}.
func present(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	switch string(v) {
	case "", "null", `""`, "{}":
		return false
	}
	return true
}
