package durable

import (
	"context"
	"fmt"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

// Location says where a run of the queue is, for a follower of its events:
// this process's event log has them while it executes here, [Queue.Events]
// reads them wherever they are produced.
type Location int

// The locations of a run.
const (
	// Unknown: the queue has no record of the run.
	Unknown Location = iota
	// Waiting: queued, not started yet; it may start on any replica.
	Waiting
	// Here: executing in this process, or parked here waiting for a person.
	Here
	// Elsewhere: executing, or parked, on another replica.
	Elsewhere
	// Over: the run's workflow ended.
	Over
)

// Locate says where a run is (see [Location]).
func (q *Queue) Locate(ctx context.Context, runID string) (Location, error) {
	q.mu.Lock()
	_, executing := q.running[runID]
	q.mu.Unlock()
	if executing {
		return Here, nil
	}
	found, err := dbos.ListWorkflows(q.dbos, dbos.WithFilterWorkflowIDs(runID), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return Unknown, fmt.Errorf("durable: locate run %s: %w", runID, err)
	}
	if len(found) == 0 {
		return Unknown, nil
	}
	switch found[0].Status {
	case dbos.WorkflowStatusEnqueued, dbos.WorkflowStatusDelayed:
		return Waiting, nil
	case dbos.WorkflowStatusPending:
		if found[0].ExecutorID == q.cfg.ExecutorID {
			return Here, nil
		}
		return Elsewhere, nil
	}
	return Over, nil
}
