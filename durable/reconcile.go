package durable

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// A run's row and its workflow agree: the workflow records its outcome only
// after the row has it (see writeFinal). Should they disagree all the same
// — the row written by a version that did not wait, or changed by hand —
// every replica's sweep repairs the row of a run whose workflow is over
// while its row still says PENDING or RUNNING, from what the run streamed
// (its final event in the durable stream) or else the workflow's outcome,
// and logs each repair. A RUNNING row with no workflow at all, the run of a
// server that died executing it outside the queue, is ended ERROR once it
// has shown no sign of life for Config.AbandonAfter.

// DefaultAbandonAfter is how long, by default, a RUNNING row without a
// workflow — a run a server executed outside the queue (an inline request)
// — may go without a sign of life before the sweep takes it for the
// leftover of a server that died mid-run. A running run's row is touched
// every runhost.DefaultTouchInterval, and a live server that cannot reach
// the database gives up its saves after runhost.DefaultSaveRetry, both
// well within it.
const DefaultAbandonAfter = 5 * time.Minute

// abandonedMessage is the content of a run the sweep ends as abandoned.
const abandonedMessage = "the server running this run stopped before it ended; run it again"

// abandoned reports whether a row without a workflow is a RUNNING run
// that has shown no sign of life since staleBefore (epoch seconds).
func abandoned(rec storage.RunRecord, staleBefore int64) bool {
	return rec.Run != nil && rec.Run.Status == run.StatusRunning && rec.UpdatedAt != 0 && rec.UpdatedAt < staleBefore
}

// abandon ends a run left RUNNING by a server that died while executing it
// outside the queue: ERROR, saying so, unless the row moved meanwhile.
func (q *Queue) abandon(ctx context.Context, runID string, staleBefore int64) {
	current, err := q.cfg.Store.GetRun(ctx, runID, "")
	if err != nil {
		q.log.Warn("durable: reading an abandoned run failed", slog.String("run_id", runID), slog.String("error", err.Error()))
		return
	}
	if !abandoned(current, staleBefore) {
		return // it ended, or showed a sign of life, meanwhile
	}
	out := current.Run
	out.Status, out.Content, out.ContentType = run.StatusError, abandonedMessage, "str"
	if _, err := q.cfg.Store.UpsertRun(ctx, current); err != nil {
		q.log.Warn("durable: ending an abandoned run failed", slog.String("run_id", runID), slog.String("error", err.Error()))
		return
	}
	q.log.Warn("durable: ended a run its server left RUNNING", slog.String("run_id", runID),
		slog.Int64("last_update", current.UpdatedAt), slog.String("status", string(run.StatusError)))
}

// reconcileBatch bounds the rows one sweep reads at once; reconcilePages
// bounds how many such pages it reads.
const (
	reconcileBatch = 100
	reconcilePages = 10
)

// reconcile repairs the rows of runs older than the lock grace that are
// PENDING or RUNNING while their workflow is over.
func (q *Queue) reconcile(ctx context.Context) {
	cutoff := q.cfg.Now().Add(-q.cfg.LockGrace).Unix()
	for page := 1; page <= reconcilePages; page++ {
		recs, _, err := q.cfg.Store.GetRuns(ctx, storage.RunQuery{Statuses: []run.Status{run.StatusPending, run.StatusRunning},
			CreatedBefore: cutoff, Page: storage.Page{Limit: reconcileBatch, Page: page}})
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("durable: looking for runs whose row disagrees with their execution failed", slog.String("error", err.Error()))
			}
			return
		}
		if len(recs) == 0 {
			return
		}
		byID := make(map[string]storage.RunRecord, len(recs))
		ids := make([]string, len(recs))
		for i, rec := range recs {
			ids[i] = rec.Run.RunID
			byID[rec.Run.RunID] = rec
		}
		workflows, err := dbos.ListWorkflows(q.dbos, dbos.WithFilterWorkflowIDs(ids...), dbos.WithFilterLoadInput(false))
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("durable: reading the executions of runs failed", slog.String("error", err.Error()))
			}
			return
		}
		executed := make(map[string]bool, len(workflows))
		for _, wf := range workflows {
			executed[wf.ID] = true
			if status, ok := workflowOutcome(wf); ok {
				q.repair(ctx, byID[wf.ID], wf, status)
			}
		}
		staleBefore := q.cfg.Now().Add(-q.cfg.AbandonAfter).Unix()
		for _, rec := range recs {
			if !executed[rec.Run.RunID] && abandoned(rec, staleBefore) {
				q.abandon(ctx, rec.Run.RunID, staleBefore)
			}
		}
		if len(recs) < reconcileBatch {
			return
		}
	}
}

// workflowOutcome is the final status a finished workflow reports for its
// run; false while it has not finished (queued, executing or parked).
func workflowOutcome(wf dbos.WorkflowStatus) (run.Status, bool) {
	switch wf.Status {
	case dbos.WorkflowStatusSuccess:
		if s, ok := wf.Output.(string); ok {
			// The output as the workflow returned it, or still encoded.
			var decoded string
			if json.Unmarshal([]byte(s), &decoded) == nil {
				s = decoded
			}
			if status, err := run.ParseStatus(s); err == nil && status.Terminal() && status != run.StatusPaused {
				return status, true
			}
		}
		return run.StatusError, true
	case dbos.WorkflowStatusError, dbos.WorkflowStatusMaxRecoveryAttemptsExceeded:
		return run.StatusError, true
	case dbos.WorkflowStatusCancelled:
		return run.StatusCancelled, true
	}
	return "", false
}

// repair writes a finished workflow's outcome on its run's row, unless the
// row is final by now: the content of the final event the run streamed, when
// it streamed one with that status, else a message saying what happened.
func (q *Queue) repair(ctx context.Context, rec storage.RunRecord, wf dbos.WorkflowStatus, status run.Status) {
	runID := rec.Run.RunID
	current, err := q.cfg.Store.GetRun(ctx, runID, "")
	if err != nil {
		q.log.Warn("durable: reading a run to repair failed", slog.String("run_id", runID), slog.String("error", err.Error()))
		return
	}
	out := current.Run
	if out.Status.Terminal() {
		return // written meanwhile
	}
	before := out.Status
	final := q.finalEvent(runID)
	switch e := final.(type) {
	case *run.RunCompleted:
		if status == run.StatusCompleted {
			out.Content, out.ContentType = e.Content, e.ContentType
			if out.ContentType == "" {
				out.ContentType = "str"
			}
			if e.Metrics != nil {
				out.Metrics = e.Metrics
			}
		}
	case *run.RunError:
		if status == run.StatusError {
			out.Content, out.ContentType = e.Content, "str"
		}
	case *run.RunCancelled:
		if status == run.StatusCancelled {
			out.Content, out.ContentType = e.Reason, "str"
		}
	}
	if final == nil || finalStatusOf(final) != status {
		out.Content, out.ContentType = repairMessage(status, wf), "str"
	}
	out.Status = status
	if _, err := q.cfg.Store.UpsertRun(ctx, current); err != nil {
		q.log.Warn("durable: repairing a run's row failed", slog.String("run_id", runID), slog.String("error", err.Error()))
		return
	}
	q.log.Warn("durable: repaired a run whose row disagreed with its execution", slog.String("run_id", runID),
		slog.String("row_status", string(before)), slog.String("workflow_status", string(wf.Status)), slog.String("status", string(status)))
}

// finalEvent is the last final event the run streamed to its durable
// stream, or nil.
func (q *Queue) finalEvent(runID string) run.Event {
	batches, _, err := dbos.ReadStream[[]streamEntry](q.dbos, runID, streamKey, dbos.WithReadStreamSnapshot())
	if err != nil {
		return nil
	}
	var final run.Event
	for _, batch := range batches {
		for _, e := range batch {
			if !run.EndsRun(runID, e.Name, e.Data) {
				continue
			}
			if decoded, err := run.DecodeEvent(e.Data); err == nil {
				final = decoded
			}
		}
	}
	return final
}

// finalStatusOf is the status a final event ends its run with.
func finalStatusOf(e run.Event) run.Status {
	status, _ := run.FinalStatus(e)
	return status
}

// repairMessage is the content of a repaired run whose stream has no final
// event matching its outcome.
func repairMessage(status run.Status, wf dbos.WorkflowStatus) string {
	switch status {
	case run.StatusCancelled:
		return "the run was cancelled"
	case run.StatusCompleted:
		return "the run completed, but its answer was not saved; run it again"
	}
	if wf.Error != nil {
		return "the run ended without saving its outcome: " + wf.Error.Error()
	}
	return "the run ended without saving its outcome"
}
