package durable

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// The engine keeps every workflow, with its steps and inputs, until it is
// deleted: retention deletes the finished ones once they are old enough.
// Only the queue's records go; the runs (their rows, in the run store) stay.

// Defaults of [Retention].
const (
	// DefaultRetention is how long a finished job is kept: one day.
	DefaultRetention = 24 * time.Hour
	// DefaultRetentionInterval is how often retention looks for old jobs.
	DefaultRetentionInterval = time.Hour
)

// cleanupBatch is how many workflows one cleanup round reads and deletes.
const cleanupBatch = 500

// Cleanup deletes the finished jobs (completed, failed or cancelled
// workflows) that ended more than olderThan ago, and returns how many it
// deleted. A job whose run row is PAUSED is kept: it still waits for a
// person. A deleted job no longer answers GET /queue/jobs/{id} and cannot
// be requeued, and its Idempotency-Key may be used again.
func (q *Queue) Cleanup(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := q.cfg.Now().Add(-max(olderThan, 0))
	eng, release := q.engine(ctx)
	defer release()
	deleted, kept := 0, 0
	for {
		batch, err := dbos.ListWorkflows(eng, dbos.WithFilterName(workflowName),
			dbos.WithFilterStatus(dbos.WorkflowStatusSuccess, dbos.WorkflowStatusError, dbos.WorkflowStatusCancelled, dbos.WorkflowStatusMaxRecoveryAttemptsExceeded),
			dbos.WithFilterCompletedBefore(cutoff), dbos.WithFilterLimit(cleanupBatch), dbos.WithFilterOffset(kept),
			dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
		if err != nil {
			return deleted, fmt.Errorf("durable: list finished jobs: %w", err)
		}
		ids := make([]string, 0, len(batch))
		for _, wf := range batch {
			rec, err := q.cfg.Store.GetRun(ctx, wf.ID, "")
			switch {
			case err == nil && rec.Run.Status == run.StatusPaused:
				kept++
				continue
			case err != nil && !errors.Is(err, storage.ErrNotFound):
				return deleted, fmt.Errorf("durable: read run %s: %w", wf.ID, err)
			}
			ids = append(ids, wf.ID)
		}
		if len(ids) > 0 {
			if err := dbos.DeleteWorkflows(eng, ids); err != nil {
				return deleted, fmt.Errorf("durable: delete finished jobs: %w", err)
			}
			deleted += len(ids)
		}
		if len(batch) < cleanupBatch {
			return deleted, nil
		}
	}
}

// Retention configures [Queue.StartRetention].
type Retention struct {
	// OlderThan is how long a finished job is kept. Defaults to
	// [DefaultRetention].
	OlderThan time.Duration
	// Every is how often old jobs are looked for. Defaults to
	// [DefaultRetentionInterval].
	Every time.Duration
}

// StartRetention runs [Queue.Cleanup] at once, then every r.Every, until
// ctx ends or stop is called; stop waits for a cleanup in progress. Failed
// rounds are logged and tried again at the next tick. Every replica may run
// it: deleting a job twice is harmless.
func (q *Queue) StartRetention(ctx context.Context, r Retention) (stop func()) {
	r.OlderThan = cmp.Or(r.OlderThan, DefaultRetention)
	r.Every = cmp.Or(r.Every, DefaultRetentionInterval)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(r.Every)
		defer ticker.Stop()
		for {
			q.cleanupRound(ctx, r.OlderThan)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// cleanupRound is one retention pass, logged.
func (q *Queue) cleanupRound(ctx context.Context, olderThan time.Duration) {
	n, err := q.Cleanup(ctx, olderThan)
	switch {
	case err != nil && ctx.Err() == nil:
		q.log.Warn("durable: deleting old jobs failed; retrying at the next round", slog.Int("deleted", n), slog.String("error", err.Error()))
	case n > 0:
		q.log.Info("durable: deleted old jobs", slog.Int("deleted", n), slog.Duration("older_than", olderThan))
	}
}
