package durable

import (
	"context"
	"fmt"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/dbos-inc/dbos-transact-golang/dbos/internals"
)

// engine is the queue's access to DBOS beyond its public API. Everything
// that reaches past that API — the dbos/internals package, and SQL on the
// engine's database — is in this file, so an engine upgrade that moves its
// internals touches one place. The rest of the package uses the public API
// (workflows, steps, queues, streams, messages, listing and cancelling
// workflows) and these methods.
//
// Why the queue needs more than the public API:
//
//   - Its own tables live in the engine's database and schema, beside the
//     engine's: agno_executors (each executor's heartbeat, to take over the
//     runs of a dead one), agno_namespace (the database's Redis namespace)
//     and the agno_queue_depth sequence (the depth limit's bound). They share
//     the engine's connection pool and dialect (SQLite or Postgres) so they
//     live and die with the queue's database.
//   - The depth limit counts the runs waiting in or executing from the queue
//     on every acceptance; listing workflows would load their rows, so it
//     counts workflow_status directly (waitingSQL).
//   - Taking over a dead executor's runs: the public API recovers only this
//     process's own pending workflows, at launch.
//   - Accepting a run in one Postgres transaction: the depth lock and the
//     run's row ride on the transaction the run is enqueued in.
type engine struct {
	rt internals.Runtime
}

// engineOf returns the engine behind a context made by dbos.NewContext.
func engineOf(ctx dbos.Context) (*engine, error) {
	rt, err := internals.RuntimeOf(ctx)
	if err != nil {
		return nil, fmt.Errorf("durable: the engine: %w", err)
	}
	return &engine{rt: rt}, nil
}

// postgres reports whether the engine's database is Postgres (else SQLite).
func (e *engine) postgres() bool { return e.rt.SystemDB().Dialect().Name() == dbos.DialectPostgres }

// schema is the schema of the engine's tables.
func (e *engine) schema() string { return e.rt.SystemDB().Schema() }

// table qualifies one of the queue's tables (or sequences) with the
// engine's schema.
func (e *engine) table(name string) string {
	db := e.rt.SystemDB()
	return db.Dialect().SchemaPrefix(db.Schema()) + name
}

// sql renders a Postgres-style statement ($n placeholders) for the engine's
// database; args fill its %s verbs (table names, SQL fragments).
func (e *engine) sql(format string, args ...any) string {
	return e.rt.SystemDB().RenderSQL(format, args...)
}

// nowMs is the SQL expression of the database clock in epoch milliseconds.
func (e *engine) nowMs() string { return e.rt.SystemDB().Dialect().NowMsSQL() }

// exec runs a statement on the engine's pool and returns how many rows it
// changed.
func (e *engine) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := e.rt.SystemDB().Pool().Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// queryRow runs a query that returns one row and scans it into dest; a
// missing row is pgx.ErrNoRows or sql.ErrNoRows, as the dialect reports it.
func (e *engine) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return e.rt.SystemDB().Pool().QueryRow(ctx, query, args...).Scan(dest...)
}

// queryStrings runs a query whose rows are one text column.
func (e *engine) queryStrings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := e.rt.SystemDB().Pool().Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// waitingSQL counts the runs that wait in or execute from the queue: one
// count over the engine's in-flight index on workflow_status.
const waitingSQL = `SELECT count(*) FROM %sworkflow_status WHERE queue_name = $1 AND status IN ('ENQUEUED', 'PENDING')`

// waitingUpToSQL is waitingSQL that stops counting at $2, the depth limit:
// a recount walks at most that many index entries however long the queue.
// Postgres only: SQLite counts the bounded subquery more slowly than the
// plain count.
const waitingUpToSQL = `SELECT count(*) FROM (SELECT 1 FROM %sworkflow_status WHERE queue_name = $1 AND status IN ('ENQUEUED', 'PENDING') LIMIT $2) AS waiting`

// engineSQL renders a query over the engine's own tables.
func (e *engine) engineSQL(query string) string {
	db := e.rt.SystemDB()
	return db.RenderSQL(query, db.Dialect().SchemaPrefix(db.Schema()))
}

// waiting counts the runs that wait in or execute from the queue.
func (e *engine) waiting(ctx context.Context) (int, error) {
	var n int
	err := e.queryRow(ctx, e.engineSQL(waitingSQL), []any{queueName}, &n)
	return n, err
}

// recoverExecutors resumes the pending workflows of executors that are
// gone, here.
func (e *engine) recoverExecutors(ids []string) error {
	_, err := e.rt.RecoverPendingWorkflows(ids)
	return err
}
