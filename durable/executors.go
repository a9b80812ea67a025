package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Crash recovery across replicas. Each process writes a heartbeat row
// (agno_executors: executor_id, seen_at in epoch milliseconds by the
// database's clock) every heartbeat interval. A process that finds another
// executor silent for longer than the lock grace claims it — deleting its
// row, which exactly one claimant manages — and takes over its unfinished
// runs: with MaxAttempts 1 they end ERROR with the requeue hint; with more
// they continue here from their last completed step. Paused runs are always
// taken over, since no work of theirs was lost.
//
// An executor id names one live process. Launching recovers the id's
// unfinished runs, so a process given the id of a live one would take that
// one's runs from under it; [Queue.Launch] refuses instead
// ([ErrExecutorInUse]). It tells a live holder from a dead one by watching
// the id's row for a few heartbeat intervals: a live process advances
// seen_at, a crashed one does not (a restart right after a crash waits that
// long), and one that stopped gracefully withdrew it.

// Defaults of the recovery settings.
const (
	// DefaultLockGrace is how long an executor may stay silent before its
	// runs are taken over.
	DefaultLockGrace = 60 * time.Second
	// MinLockGrace is the smallest lock grace accepted.
	MinLockGrace = 3 * time.Second
	// heartbeatInterval is how often an executor reports it is alive, at
	// most (see [heartbeats.interval]).
	heartbeatInterval = time.Second
)

// watchingMessage is logged when a starting executor watches its id's
// recent heartbeat to tell a live holder from a crashed one.
const watchingMessage = "durable: the last heartbeat of this executor id is recent; watching whether a live server holds it"

// ErrExecutorInUse is the error of [Queue.Launch] when a live process
// already heartbeats the queue's executor id: launching would take its
// unfinished runs from it. Match it with errors.Is.
var ErrExecutorInUse = errors.New("the executor id is in use by a live server")

// executorsTable is the heartbeat table, beside the engine's own tables.
const executorsTable = "agno_executors"

// heartbeats keeps this executor's row and finds dead executors.
type heartbeats struct {
	eng   *engine
	id    string
	grace time.Duration
}

// table is the heartbeat table's qualified name.
func (h *heartbeats) table() string { return h.eng.table(executorsTable) }

// sql renders a Postgres-style query for the database.
func (h *heartbeats) sql(format string, args ...any) string { return h.eng.sql(format, args...) }

// interval is how often this executor beats: a third of the grace, at most
// heartbeatInterval.
func (h *heartbeats) interval() time.Duration { return min(heartbeatInterval, h.grace/3) }

// liveWindow is how long a starting executor watches a fresh row of its id
// for a heartbeat: two and a half intervals, so a live holder beats at
// least twice meanwhile.
func (h *heartbeats) liveWindow() time.Duration { return 2*h.interval() + h.interval()/2 }

// ensure creates the heartbeat table.
func (h *heartbeats) ensure(ctx context.Context) error {
	_, err := h.eng.exec(ctx, h.sql(`CREATE TABLE IF NOT EXISTS %s (executor_id TEXT PRIMARY KEY, seen_at BIGINT NOT NULL)`, h.table()))
	if err != nil {
		return fmt.Errorf("durable: create %s: %w", executorsTable, err)
	}
	return nil
}

// beat records that this executor is alive.
func (h *heartbeats) beat(ctx context.Context) error {
	_, err := h.eng.exec(ctx, h.sql(`INSERT INTO %s (executor_id, seen_at) VALUES ($1, %s)
ON CONFLICT (executor_id) DO UPDATE SET seen_at = excluded.seen_at`, h.table(), h.eng.nowMs()), h.id)
	if err != nil {
		return fmt.Errorf("durable: heartbeat: %w", err)
	}
	return nil
}

// lastSeen reads when this executor id last beat and how long ago that is
// by the database's clock; found is false when the id has no row.
func (h *heartbeats) lastSeen(ctx context.Context) (seenAt int64, age time.Duration, found bool, err error) {
	var ageMs int64
	err = h.eng.queryRow(ctx, h.sql(`SELECT seen_at, %s - seen_at FROM %s WHERE executor_id = $1`, h.eng.nowMs(), h.table()), []any{h.id},
		&seenAt, &ageMs)
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("durable: read the heartbeat of executor %s: %w", h.id, err)
	}
	return seenAt, time.Duration(ageMs) * time.Millisecond, true, nil
}

// refuseLive returns an error wrapping [ErrExecutorInUse] when a live
// process heartbeats this executor id. A row silent for longer than the
// grace, withdrawn (seen_at 0) or absent has no live holder; a fresher one
// is watched for liveWindow: it advances only while its process lives.
// Otherwise it claims the id (see [heartbeats.claim]).
func (h *heartbeats) refuseLive(ctx context.Context, log *slog.Logger) error {
	first, age, found, err := h.lastSeen(ctx)
	if err != nil {
		return err
	}
	if !found || first == 0 || age > h.grace {
		return h.claim(ctx, first, found)
	}
	window := h.liveWindow()
	log.Info(watchingMessage, slog.String("executor_id", h.id), slog.Duration("last_heartbeat", age.Round(time.Millisecond)),
		slog.Duration("watch", window))
	deadline := time.Now().Add(window)
	ticker := time.NewTicker(h.interval() / 5)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("durable: check executor %s: %w", h.id, ctx.Err())
		case <-ticker.C:
		}
		seen, _, found, err := h.lastSeen(ctx)
		switch {
		case err != nil:
			return err
		case !found || seen == 0:
			return h.claim(ctx, seen, found) // claimed by a replica, or withdrawn: no live holder
		case seen != first:
			return h.inUse(fmt.Sprintf("its heartbeat advanced within %s", window))
		case time.Now().After(deadline):
			return h.claim(ctx, seen, true) // silent: its process died
		}
	}
}

// claim takes the executor id for this process, atomically: the row is
// written only if it is still as it was seen (absent, or with the seen_at
// watched), so of two servers started at the same instant with the same
// id, which both found no live holder, exactly one claims it and the other
// is refused.
func (h *heartbeats) claim(ctx context.Context, seen int64, found bool) error {
	var changed int64
	var err error
	if found {
		changed, err = h.eng.exec(ctx, h.sql(`UPDATE %s SET seen_at = %s WHERE executor_id = $1 AND seen_at = $2`,
			h.table(), h.eng.nowMs()), h.id, seen)
	} else {
		changed, err = h.eng.exec(ctx, h.sql(`INSERT INTO %s (executor_id, seen_at) VALUES ($1, %s) ON CONFLICT (executor_id) DO NOTHING`,
			h.table(), h.eng.nowMs()), h.id)
	}
	if err != nil {
		return fmt.Errorf("durable: claim executor %s: %w", h.id, err)
	}
	if changed == 0 {
		return h.inUse("another server claimed it at the same time")
	}
	return nil
}

// inUse is the refusal to launch with an executor id a live process holds.
func (h *heartbeats) inUse(why string) error {
	return fmt.Errorf("durable: executor_id %q: %w (%s); give each server its own executor_id, or stop the other one first",
		h.id, ErrExecutorInUse, why)
}

// withdrawal prepares withdrawing this executor's heartbeat once the
// engine is shut down: the statement, for a connection of its own.
func (h *heartbeats) withdrawal(databaseURL string) withdrawal {
	return withdrawal{databaseURL: databaseURL, id: h.id,
		statement: h.sql(`UPDATE %s SET seen_at = 0 WHERE executor_id = $1`, h.table())}
}

// withdrawal marks an executor silent since long ago, so another replica
// claims it — and takes its unfinished runs over — at its next heartbeat.
// It runs after the engine stopped (so this process no longer takes runs
// that a replica re-queues), on a connection of its own.
type withdrawal struct {
	databaseURL, id, statement string
}

// run executes the withdrawal.
func (w withdrawal) run(ctx context.Context) error {
	if dsn, ok := strings.CutPrefix(w.databaseURL, "sqlite:"); ok {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		db, err := sql.Open("sqlite", dsn+sep+"_pragma=busy_timeout(5000)")
		if err != nil {
			return fmt.Errorf("durable: withdraw heartbeat: %w", err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, w.statement, w.id); err != nil {
			return fmt.Errorf("durable: withdraw heartbeat: %w", err)
		}
		return nil
	}
	conn, err := pgx.Connect(ctx, w.databaseURL)
	if err != nil {
		return fmt.Errorf("durable: withdraw heartbeat: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, w.statement, w.id); err != nil {
		return fmt.Errorf("durable: withdraw heartbeat: %w", err)
	}
	return nil
}

// handBack withdraws this executor's heartbeat as it stops, so the runs it
// leaves unfinished are taken over by a live replica at once rather than
// after the lock grace.
func (q *Queue) handBack() {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := q.withdraw.run(ctx); err != nil {
		q.log.Warn("durable: handing runs back failed; other replicas take them over after the lock grace", slog.String("error", err.Error()))
	}
}

// claimDead returns the executors silent for longer than the grace that
// this executor claimed: their rows are gone, so no other executor claims
// them too.
func (h *heartbeats) claimDead(ctx context.Context) ([]string, error) {
	now := h.eng.nowMs()
	silent, err := h.eng.queryStrings(ctx, h.sql(`SELECT executor_id FROM %s WHERE seen_at < %s - $1 AND executor_id <> $2`, h.table(), now),
		h.grace.Milliseconds(), h.id)
	if err != nil {
		return nil, fmt.Errorf("durable: find dead executors: %w", err)
	}
	var claimed []string
	for _, id := range silent {
		n, err := h.eng.exec(ctx, h.sql(`DELETE FROM %s WHERE executor_id = $1 AND seen_at < %s - $2`, h.table(), now), id, h.grace.Milliseconds())
		if err != nil {
			return claimed, fmt.Errorf("durable: claim executor %s: %w", id, err)
		}
		if n == 1 {
			claimed = append(claimed, id)
		}
	}
	return claimed, nil
}

// beat reports this executor alive every heartbeat interval until ctx
// ends. It runs apart from the takeovers, which may take long, so a busy
// executor is never taken for a dead one.
func (q *Queue) beat(ctx context.Context, h *heartbeats) {
	ticker := time.NewTicker(h.interval())
	defer ticker.Stop()
	for {
		if err := h.beat(ctx); err != nil && ctx.Err() == nil {
			q.log.Warn("durable: heartbeat failed", slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// watchExecutors takes over dead executors and adopts orphaned runs until
// ctx ends.
func (q *Queue) watchExecutors(ctx context.Context, h *heartbeats) {
	ticker := time.NewTicker(h.interval())
	defer ticker.Stop()
	lastAdopt := time.Now()
	for {
		if time.Since(lastAdopt) >= h.grace {
			lastAdopt = time.Now()
			q.adoptOrphans(ctx)
			q.reconcile(ctx)
		}
		dead, err := h.claimDead(ctx)
		if err != nil && ctx.Err() == nil {
			q.log.Warn("durable: looking for dead executors failed", slog.String("error", err.Error()))
		}
		for _, id := range dead {
			q.takeOver(ctx, id)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// takeOver handles the unfinished runs of a dead executor.
func (q *Queue) takeOver(ctx context.Context, executor string) {
	pending, err := dbos.ListWorkflows(q.dbos, dbos.WithFilterExecutorIDs(executor), dbos.WithFilterStatus(dbos.WorkflowStatusPending),
		dbos.WithFilterQueueName(queueName), dbos.WithFilterLoadInput(true), dbos.WithFilterLoadOutput(false))
	if err != nil {
		q.log.Error("durable: listing a dead executor's runs failed", slog.String("executor_id", executor), slog.String("error", err.Error()))
		return
	}
	q.log.Warn("durable: taking over the runs of a dead executor", slog.String("executor_id", executor), slog.Int("runs", len(pending)))
	for range pending {
		q.cfg.Observer.Metrics().TookOver()
	}
	if q.cfg.MaxAttempts <= 1 {
		for _, wf := range pending {
			j, err := decodeJob(wf.Input)
			if err != nil {
				continue
			}
			if status, ok := q.rowStatus(ctx, wf.ID, j.UserID); ok && (status == run.StatusPaused || status == run.StatusPending) {
				continue // no work lost (parked, or never started): recovered below
			}
			q.settle(j, run.StatusError, lostMessage(q.cfg.MaxAttempts, j.RunID))
			if err := dbos.CancelWorkflow(q.dbos, wf.ID); err != nil {
				q.log.Error("durable: retiring a lost run failed", slog.String("run_id", wf.ID), slog.String("error", err.Error()))
			}
		}
	}
	if err := q.eng.recoverExecutors([]string{executor}); err != nil {
		q.log.Error("durable: recovering a dead executor's runs failed", slog.String("executor_id", executor), slog.String("error", err.Error()))
	}
}

// lostMessage is the ERROR content of a run whose worker was lost with no
// attempt left.
func lostMessage(maxAttempts int, runID string) string {
	return fmt.Sprintf("The worker running this run was lost or stopped before the run finished, and its attempt budget (max_attempts: %d) is spent. "+
		"Run it again with POST /queue/jobs/%s/requeue, or set queue.max_attempts: 2 so lost runs continue on their own.", maxAttempts, runID)
}

// orphanBatch bounds how many orphaned runs one pass adopts.
const orphanBatch = 100

// adoptOrphans enqueues runs whose PENDING row was written but whose server
// died before it queued them: older than the lock grace, with no workflow.
// Several replicas may adopt one run; the workflow id keeps it one run.
func (q *Queue) adoptOrphans(ctx context.Context) {
	cutoff := q.cfg.Now().Add(-q.cfg.LockGrace).Unix()
	recs, _, err := q.cfg.Store.GetRuns(ctx, storage.RunQuery{Statuses: []run.Status{run.StatusPending}, CreatedBefore: cutoff,
		Page: storage.Page{Limit: orphanBatch, Page: 1}})
	if err != nil || len(recs) == 0 {
		if err != nil && ctx.Err() == nil {
			q.log.Warn("durable: looking for orphaned runs failed", slog.String("error", err.Error()))
		}
		return
	}
	ids := make([]string, len(recs))
	for i, rec := range recs {
		ids[i] = rec.Run.RunID
	}
	known, err := dbos.ListWorkflows(q.dbos, dbos.WithFilterWorkflowIDs(ids...), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return
	}
	queued := map[string]bool{}
	for _, wf := range known {
		queued[wf.ID] = true
	}
	for _, rec := range recs {
		out := rec.Run
		if queued[out.RunID] || out.Input == nil {
			continue
		}
		if _, ok := q.runners[out.RunnerID()]; !ok {
			continue
		}
		j := job{AgentID: out.RunnerID(), RunID: out.RunID, SessionID: rec.SessionID, UserID: out.UserID, Input: *out.Input, Metadata: out.Metadata}
		if _, err := dbos.RunWorkflow(q.dbos, q.execute, j, dbos.WithQueue(q.queue), dbos.WithWorkflowID(j.RunID),
			dbos.WithQueuePartitionKey(j.SessionID)); err != nil {
			q.log.Error("durable: adopting an orphaned run failed", slog.String("run_id", j.RunID), slog.String("error", err.Error()))
			continue
		}
		q.log.Warn("durable: adopted a run accepted by a server that died before queueing it", slog.String("run_id", j.RunID))
	}
}
