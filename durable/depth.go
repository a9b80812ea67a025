package durable

import (
	"context"
	"fmt"

	"github.com/dbos-inc/dbos-transact-golang/dbos/internals"
)

// queuedCount is how many runs wait in or execute from the queue: one
// count over the engine's in-flight index, however long the queue.
func (q *Queue) queuedCount(ctx context.Context) (int, error) {
	rt, err := internals.RuntimeOf(q.dbos)
	if err != nil {
		return 0, fmt.Errorf("durable: count queued runs: %w", err)
	}
	db := rt.SystemDB()
	query := db.RenderSQL(`SELECT count(*) FROM %sworkflow_status WHERE queue_name = $1 AND status IN ('ENQUEUED', 'PENDING')`,
		db.Dialect().SchemaPrefix(db.Schema()))
	var n int
	if err := db.Pool().QueryRow(ctx, query, queueName).Scan(&n); err != nil {
		return 0, fmt.Errorf("durable: count queued runs: %w", err)
	}
	return n, nil
}
