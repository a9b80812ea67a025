package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// execute carries an attempt, and the retries it earns, to the end. It
// gives up quietly when the scheduler stops or the lease is lost: the
// attempt's row stays running and a live replica takes it over.
func (s *Scheduler) execute(ctx context.Context, sched *storage.Schedule, attempt *storage.ScheduleRun) {
	origin := attempt.ID
	for attempt != nil {
		final, ok := s.attempt(ctx, sched, attempt)
		if !ok {
			return
		}
		next := s.retry(ctx, sched, final)
		if next == nil {
			s.endedAs(origin, final)
			return
		}
		attempt = next
	}
}

// endedAs hands the final row of a trigger's last attempt to the waiters
// of its first.
func (s *Scheduler) endedAs(origin string, final *storage.ScheduleRun) {
	if origin == final.ID {
		s.ended(final)
		return
	}
	s.mu.Lock()
	if chans, ok := s.waiters[origin]; ok {
		delete(s.waiters, origin)
		s.waiters[final.ID] = append(s.waiters[final.ID], chans...)
	}
	s.mu.Unlock()
	s.ended(final)
}

// retry writes the next attempt of a failed one, due after the schedule's
// retry delay and leased to this replica, or returns nil when none is due.
func (s *Scheduler) retry(ctx context.Context, sched *storage.Schedule, final *storage.ScheduleRun) *storage.ScheduleRun {
	if final.Status != storage.ScheduleRunFailed || final.Attempt >= sched.MaxRetries+1 {
		return nil
	}
	now := s.cfg.Now().Unix()
	at := now + max(sched.RetryDelaySeconds, 1)
	next, err := s.cfg.Store.CreateScheduleRun(ctx, &storage.ScheduleRun{
		ScheduleID: sched.ID, Attempt: final.Attempt + 1, TriggeredAt: &at, Status: storage.ScheduleRunRunning,
		Input: final.Input, LockedBy: s.cfg.Worker, LockedAt: &now,
	}, "")
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, storage.ErrNotFound) {
			s.log.WarnContext(ctx, "scheduler: write a retry", "schedule_id", sched.ID, "error", err)
		}
		return nil
	}
	return next
}

// attempt runs one attempt: waits for its time, starts its run unless a
// replica before this one did, and follows the run to its end. ok is false
// when this replica let the attempt go (stopped, or lost its lease).
func (s *Scheduler) attempt(parent context.Context, sched *storage.Schedule, a *storage.ScheduleRun) (final *storage.ScheduleRun, ok bool) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	go s.renew(ctx, cancel, a.ID)
	if a.TriggeredAt != nil && !s.sleepUntil(ctx, time.Unix(*a.TriggeredAt, 0)) {
		return nil, false
	}
	if a.RunID == "" {
		started, err := s.cfg.Executor.Start(ctx, sched, a)
		if ctx.Err() != nil {
			return nil, false
		}
		if err != nil {
			return s.finish(ctx, a, storage.ScheduleRunUpdate{Status: new(storage.ScheduleRunFailed), Error: new(err.Error())})
		}
		code := int64(started.StatusCode)
		if started.Done {
			u := storage.ScheduleRunUpdate{Status: new(started.Status), StatusCode: &code, Output: started.Output}
			if started.Error != "" {
				u.Error = new(started.Error)
			}
			return s.finish(ctx, a, u)
		}
		updated, err := s.cfg.Store.UpdateScheduleRun(ctx, a.ID, storage.ScheduleRunUpdate{
			Worker: s.cfg.Worker, Now: s.cfg.Now().Unix(), StatusCode: &code, RunID: &started.RunID, SessionID: &started.SessionID,
		})
		if err != nil {
			s.letGo(ctx, a, err)
			return nil, false
		}
		a = updated
	}
	return s.follow(ctx, sched, a)
}

// follow polls an attempt's run until it ends or the attempt times out.
func (s *Scheduler) follow(ctx context.Context, sched *storage.Schedule, a *storage.ScheduleRun) (*storage.ScheduleRun, bool) {
	start := s.cfg.Now()
	if a.TriggeredAt != nil {
		start = time.Unix(*a.TriggeredAt, 0)
	}
	timeout := time.Duration(max(sched.TimeoutSeconds, 1)) * time.Second
	deadline := start.Add(timeout)
	for {
		state, err := s.cfg.Executor.RunState(ctx, sched, a.RunID)
		if ctx.Err() != nil {
			return nil, false
		}
		if err == nil {
			if u, done := outcome(state); done {
				return s.finish(ctx, a, u)
			}
		} else if !errors.Is(err, storage.ErrNotFound) {
			s.log.WarnContext(ctx, "scheduler: read the state of a run", "run_id", a.RunID, "error", err)
		}
		if !s.cfg.Now().Before(deadline) {
			if err := s.cfg.Executor.Cancel(ctx, sched, a.RunID, a.SessionID); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "scheduler: cancel a run that timed out", "run_id", a.RunID, "error", err)
			}
			return s.finish(ctx, a, storage.ScheduleRunUpdate{
				Status: new(storage.ScheduleRunFailed),
				Error:  new(fmt.Sprintf("Polling timed out after %ds for run %s", int64(timeout.Seconds()), a.RunID)),
			})
		}
		if !s.sleepUntil(ctx, s.cfg.Now().Add(s.cfg.RunPollInterval)) {
			return nil, false
		}
	}
}

// outcome maps a run's state to its attempt's end; done is false while
// the run goes on.
func outcome(state RunState) (u storage.ScheduleRunUpdate, done bool) {
	switch state.Status {
	case run.StatusCompleted:
		out := map[string]any{"content": state.Content, "content_type": state.ContentType}
		return storage.ScheduleRunUpdate{Status: new(storage.ScheduleRunSuccess), Output: out}, true
	case run.StatusPaused:
		return storage.ScheduleRunUpdate{Status: new(storage.ScheduleRunPaused), Requirements: state.Requirements}, true
	case run.StatusCancelled:
		return storage.ScheduleRunUpdate{Status: new(storage.ScheduleRunCancelled), Error: new(cmp.Or(state.Error, "the run was cancelled"))}, true
	case run.StatusError:
		return storage.ScheduleRunUpdate{Status: new(storage.ScheduleRunFailed), Error: new(cmp.Or(state.Error, "the run failed"))}, true
	}
	return u, false
}

// finish writes an attempt's end.
func (s *Scheduler) finish(ctx context.Context, a *storage.ScheduleRun, u storage.ScheduleRunUpdate) (*storage.ScheduleRun, bool) {
	now := s.cfg.Now().Unix()
	u.Worker, u.Now, u.CompletedAt = s.cfg.Worker, now, &now
	final, err := s.cfg.Store.UpdateScheduleRun(ctx, a.ID, u)
	if err != nil {
		s.letGo(ctx, a, err)
		return nil, false
	}
	s.log.InfoContext(ctx, "scheduler: attempt ended", "schedule_id", a.ScheduleID, "attempt_id", a.ID,
		"attempt", a.Attempt, "status", final.Status, "run_id", final.RunID)
	return final, true
}

// letGo logs why this replica stopped following an attempt.
func (s *Scheduler) letGo(ctx context.Context, a *storage.ScheduleRun, err error) {
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, storage.ErrConflict):
		s.log.InfoContext(ctx, "scheduler: attempt taken over by another replica", "attempt_id", a.ID)
	default:
		s.log.WarnContext(ctx, "scheduler: write an attempt", "attempt_id", a.ID, "error", err)
	}
}

// renew keeps the attempt's lease until ctx ends; a lease lost to another
// replica cancels the attempt here.
func (s *Scheduler) renew(ctx context.Context, cancel context.CancelFunc, attemptID string) {
	ticker := time.NewTicker(max(s.cfg.LeaseTTL/3, 10*time.Millisecond))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		_, err := s.cfg.Store.UpdateScheduleRun(ctx, attemptID, storage.ScheduleRunUpdate{Worker: s.cfg.Worker, Now: s.cfg.Now().Unix()})
		if errors.Is(err, storage.ErrConflict) {
			cancel()
			return
		}
	}
}

// sleepUntil waits until t or ctx's end, and reports whether t came.
func (s *Scheduler) sleepUntil(ctx context.Context, t time.Time) bool {
	d := t.Sub(s.cfg.Now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
