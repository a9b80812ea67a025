package durable

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/dbos-inc/dbos-transact-golang/dbos/internals"

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

// Defaults of the recovery settings.
const (
	// DefaultLockGrace is how long an executor may stay silent before its
	// runs are taken over.
	DefaultLockGrace = 60 * time.Second
	// MinLockGrace is the smallest lock grace accepted.
	MinLockGrace = 3 * time.Second
	// heartbeatInterval is how often an executor reports it is alive.
	heartbeatInterval = time.Second
)

// executorsTable is the heartbeat table, beside the engine's own tables.
const executorsTable = "agno_executors"

// recovery is the part of the engine's internals recovery uses: its
// database, and recovering another executor's pending workflows. It is kept
// this small so an engine upgrade that moves the internals touches one place.
type recovery interface {
	SystemDB() internals.SystemDatabase
	RecoverPendingWorkflows(executorIDs []string) ([]dbos.WorkflowHandle[any], error)
}

// heartbeats keeps this executor's row and finds dead executors.
type heartbeats struct {
	rt    recovery
	id    string
	grace time.Duration
}

// table is the heartbeat table's qualified name.
func (h *heartbeats) table() string {
	db := h.rt.SystemDB()
	return db.Dialect().SchemaPrefix(db.Schema()) + executorsTable
}

// sql renders a Postgres-style query for the database.
func (h *heartbeats) sql(format string, args ...any) string {
	return h.rt.SystemDB().RenderSQL(format, args...)
}

// ensure creates the heartbeat table.
func (h *heartbeats) ensure(ctx context.Context) error {
	_, err := h.rt.SystemDB().Pool().Exec(ctx, h.sql(`CREATE TABLE IF NOT EXISTS %s (executor_id TEXT PRIMARY KEY, seen_at BIGINT NOT NULL)`, h.table()))
	if err != nil {
		return fmt.Errorf("durable: create %s: %w", executorsTable, err)
	}
	return nil
}

// beat records that this executor is alive.
func (h *heartbeats) beat(ctx context.Context) error {
	now := h.rt.SystemDB().Dialect().NowMsSQL()
	_, err := h.rt.SystemDB().Pool().Exec(ctx, h.sql(`INSERT INTO %s (executor_id, seen_at) VALUES ($1, %s)
ON CONFLICT (executor_id) DO UPDATE SET seen_at = excluded.seen_at`, h.table(), now), h.id)
	if err != nil {
		return fmt.Errorf("durable: heartbeat: %w", err)
	}
	return nil
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
	db := h.rt.SystemDB()
	now := db.Dialect().NowMsSQL()
	rows, err := db.Pool().Query(ctx, h.sql(`SELECT executor_id FROM %s WHERE seen_at < %s - $1 AND executor_id <> $2`, h.table(), now),
		h.grace.Milliseconds(), h.id)
	if err != nil {
		return nil, fmt.Errorf("durable: find dead executors: %w", err)
	}
	var silent []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("durable: find dead executors: %w", err)
		}
		silent = append(silent, id)
	}
	rows.Close()
	var claimed []string
	for _, id := range silent {
		res, err := db.Pool().Exec(ctx, h.sql(`DELETE FROM %s WHERE executor_id = $1 AND seen_at < %s - $2`, h.table(), now), id, h.grace.Milliseconds())
		if err != nil {
			return claimed, fmt.Errorf("durable: claim executor %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 1 {
			claimed = append(claimed, id)
		}
	}
	return claimed, nil
}

// watchExecutors beats and takes over dead executors until ctx ends.
func (q *Queue) watchExecutors(ctx context.Context, h *heartbeats) {
	interval := min(heartbeatInterval, h.grace/3)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	lastAdopt := time.Now()
	for {
		if time.Since(lastAdopt) >= h.grace {
			lastAdopt = time.Now()
			q.adoptOrphans(ctx)
		}
		if err := h.beat(ctx); err != nil && ctx.Err() == nil {
			q.log.Warn("durable: heartbeat failed", slog.String("error", err.Error()))
		}
		dead, err := h.claimDead(ctx)
		if err != nil && ctx.Err() == nil {
			q.log.Warn("durable: looking for dead executors failed", slog.String("error", err.Error()))
		}
		for _, id := range dead {
			q.takeOver(ctx, h.rt, id)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// takeOver handles the unfinished runs of a dead executor.
func (q *Queue) takeOver(ctx context.Context, rt recovery, executor string) {
	pending, err := dbos.ListWorkflows(q.dbos, dbos.WithFilterExecutorIDs(executor), dbos.WithFilterStatus(dbos.WorkflowStatusPending),
		dbos.WithFilterQueueName(queueName), dbos.WithFilterLoadInput(true), dbos.WithFilterLoadOutput(false))
	if err != nil {
		q.log.Error("durable: listing a dead executor's runs failed", slog.String("executor_id", executor), slog.String("error", err.Error()))
		return
	}
	q.log.Warn("durable: taking over the runs of a dead executor", slog.String("executor_id", executor), slog.Int("runs", len(pending)))
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
	if _, err := rt.RecoverPendingWorkflows([]string{executor}); err != nil {
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
		if _, ok := q.runners[out.AgentID]; !ok {
			continue
		}
		j := job{AgentID: out.AgentID, RunID: out.RunID, SessionID: rec.SessionID, UserID: out.UserID, Input: *out.Input, Metadata: out.Metadata}
		if _, err := dbos.RunWorkflow(q.dbos, q.execute, j, dbos.WithQueue(q.queue), dbos.WithWorkflowID(j.RunID),
			dbos.WithQueuePartitionKey(j.SessionID)); err != nil {
			q.log.Error("durable: adopting an orphaned run failed", slog.String("run_id", j.RunID), slog.String("error", err.Error()))
			continue
		}
		q.log.Warn("durable: adopted a run accepted by a server that died before queueing it", slog.String("run_id", j.RunID))
	}
}
