package durable

import (
	"context"
	"fmt"
	"time"
)

// Crash stops q as a crash would: no drain, no hand-back; its heartbeat
// simply stops, and its runs wait for a replica to take them over.
func Crash(q *Queue) { _ = q.halt(false, 50*time.Millisecond) }

// WatchingMessage is what Launch logs while it watches a recent heartbeat
// of its executor id.
const WatchingMessage = watchingMessage

// SetHeartbeat writes the heartbeat row of executor as a process that beat
// age ago (by the database's clock) would have left it.
func SetHeartbeat(ctx context.Context, q *Queue, executor string, age time.Duration) error {
	h := &heartbeats{eng: q.eng, id: executor, grace: q.cfg.LockGrace}
	if err := h.ensure(ctx); err != nil {
		return err
	}
	_, err := q.eng.exec(ctx, h.sql(`INSERT INTO %s (executor_id, seen_at) VALUES ($1, %s - $2)
ON CONFLICT (executor_id) DO UPDATE SET seen_at = excluded.seen_at`, h.table(), q.eng.nowMs()), executor, age.Milliseconds())
	if err != nil {
		return fmt.Errorf("set the heartbeat of %s: %w", executor, err)
	}
	return nil
}

// Heartbeat reads the heartbeat row of executor: how long ago it last beat
// by the database's clock, and whether it has a row at all.
func Heartbeat(ctx context.Context, q *Queue, executor string) (age time.Duration, found bool, err error) {
	h := &heartbeats{eng: q.eng, id: executor, grace: q.cfg.LockGrace}
	_, age, found, err = h.lastSeen(ctx)
	return age, found, err
}

// Executing reports whether q executes the run: doing its work, or parked
// while it waits for a person.
func Executing(q *Queue, runID string) bool { return len(q.runningIDs(runID)) == 1 }

// WaitIdle waits up to timeout until no run does work in q: each one it
// executes has ended or parked.
func WaitIdle(q *Queue, timeout time.Duration) bool { return q.waitIdle(timeout) }
