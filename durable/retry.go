package durable

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agnogo/agnogo/run"
)

// Retries of failed runs. A run that ends ERROR for a reason another
// attempt may not meet starts again, while attempts remain, after a
// jittered delay. The decision is a step of the run's workflow, so an
// execution that replays the run's history after a crash takes the same
// decisions; the failed attempt is recorded on the run's row, which shows
// PENDING until the next attempt starts. The new attempt takes the results
// of the steps that succeeded before (see [journal]), so it goes on from
// the step that failed instead of repeating completed tool calls.

// queueRetryKey is the run metadata key set while a failed run waits for
// its next attempt, which queue_attempt numbers already.
const queueRetryKey = "queue_retry"

// retryPlan is the recorded decision on a failed attempt.
type retryPlan struct {
	// Retry is set when the run starts again.
	Retry bool `json:"retry"`
	// Attempt numbers the next attempt.
	Attempt int `json:"attempt,omitempty"`
	// WakeAt is when it starts, in epoch milliseconds.
	WakeAt int64 `json:"wake_at,omitempty"`
	// Delay is the wait, in seconds.
	Delay float64 `json:"delay_seconds,omitempty"`
}

// planRetry decides, as a step of the run's workflow, whether a failed
// attempt is followed by another, and records the failed attempt on the
// run's row when it is. replayed is set when the decision was taken by an
// earlier execution of the workflow. When the engine refuses to record the
// decision because another execution owns the workflow now, the run is
// disowned (see [journal.disown]): the other execution decides.
func (q *Queue) planRetry(ctx dbos.Context, jr *journal, j job, attempt int, started time.Time, reason string) (plan retryPlan, replayed bool) {
	if q.cfg.MaxAttempts <= 1 {
		return retryPlan{}, false
	}
	live := false
	plan, err := dbos.RunAsStep(ctx, func(context.Context) (retryPlan, error) {
		live = true
		if attempt >= q.cfg.MaxAttempts {
			return retryPlan{}, nil
		}
		delay := q.retryDelay(attempt)
		if err := q.recordFailedAttempt(jr, j, attempt, started, reason); err != nil {
			return retryPlan{}, err
		}
		return retryPlan{Retry: true, Attempt: attempt + 1, WakeAt: q.cfg.Now().Add(delay).UnixMilli(), Delay: delay.Seconds()}, nil
	}, dbos.WithStepName("retry"))
	if err != nil && disowned(err) {
		jr.disown()
		return retryPlan{}, !live
	}
	if err != nil {
		q.log.Error("durable: a failed run is not retried: its attempt could not be recorded", slog.String("run_id", j.RunID), slog.String("error", err.Error()))
		return retryPlan{}, !live
	}
	return plan, !live
}

// retryDelay is the wait after failed attempt n (from 1): a uniform random
// time in [0, min(base·2^(n−1), 10·base)].
func (q *Queue) retryDelay(n int) time.Duration {
	return jitteredDelay(q.cfg.RetryDelay, n, rand.Float64())
}

// jitteredDelay is retryDelay with the random draw u in [0, 1).
func jitteredDelay(base time.Duration, n int, u float64) time.Duration {
	if base <= 0 {
		return 0
	}
	ceiling := 10 * base
	if n < 1 {
		n = 1
	}
	if n <= 4 { // 2^(n-1)·base stays below 10·base up to n = 4
		ceiling = min(ceiling, base<<(n-1))
	}
	return time.Duration(u * float64(ceiling))
}

// backoff waits until the planned start of the next attempt; false when
// the run was cancelled or interrupted meanwhile.
func (q *Queue) backoff(ctx context.Context, plan retryPlan) bool {
	wait := time.UnixMilli(plan.WakeAt).Sub(q.cfg.Now())
	if wait <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// recordFailedAttempt adds the failed attempt to the run's
// metadata.attempts and makes the row PENDING, numbered for its next
// attempt; a database that refuses the write for a while is waited for
// (see [Queue.retryStore]).
func (q *Queue) recordFailedAttempt(jr *journal, j job, attempt int, started time.Time, reason string) error {
	return q.retryStore(jr, j.RunID, "recording the failed attempt", func(ctx context.Context) error {
		rec, err := q.cfg.Store.GetRun(ctx, j.RunID, j.UserID)
		if err != nil {
			return fmt.Errorf("read run %s: %w", j.RunID, err)
		}
		out := rec.Run
		if out.Metadata == nil {
			out.Metadata = map[string]any{}
		}
		// A write retried after its answer was lost may have landed.
		attempts, err := out.Attempts()
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(attempts, func(a run.Attempt) bool { return a.Attempt == attempt }) {
			if err := out.AppendAttempt(run.Attempt{Attempt: attempt, Error: &reason, StartedAt: started.Unix(), EndedAt: q.cfg.Now().Unix()}); err != nil {
				return err
			}
		}
		out.Metadata[queueAttemptKey] = attempt + 1
		out.Metadata[queueRetryKey] = true
		out.Status = run.StatusPending
		if _, err := q.cfg.Store.UpsertRun(ctx, rec); err != nil {
			return fmt.Errorf("write run %s: %w", j.RunID, err)
		}
		q.redis.status(j.RunID, run.StatusPending)
		return nil
	})
}
