package storage

import (
	"context"

	"github.com/agnogo/agnogo/run"
)

// RunType is the kind of component that produced a run.
type RunType string

// The run types.
const (
	RunTypeAgent    RunType = "agent"
	RunTypeTeam     RunType = "team"
	RunTypeWorkflow RunType = "workflow"
)

// RunTypeOf is the type of a run by who ran it: an agent's (a team
// member's included), a team's own or a workflow's own run.
func RunTypeOf(out *run.Output) RunType {
	switch {
	case out == nil || out.AgentID != "":
		return RunTypeAgent
	case out.TeamID != "":
		return RunTypeTeam
	case out.WorkflowID != "":
		return RunTypeWorkflow
	}
	return RunTypeAgent
}

// RunRecord is one row of agno_runs: a run and the columns indexed beside it.
type RunRecord struct {
	// SessionID is the owning session; it must exist.
	SessionID string
	// UserID owns the run; when non-empty it also scopes the write.
	UserID string
	// RunType defaults to agent.
	RunType RunType
	// RunIndex is the run's position in its session. A nil RunIndex on insert
	// takes the next position (max + 1, from 0); an existing row keeps its
	// position on update.
	RunIndex *int64
	// Run is stored whole as run_data. Run.RunID is the primary key.
	Run *run.Output
	// CreatedAt and UpdatedAt are epoch seconds, set by the store when zero.
	CreatedAt int64
	UpdatedAt int64
}

// RunQuery filters and pages [RunStore.GetRuns]. Results are ordered by
// run_index, then created_at, then run_id.
type RunQuery struct {
	SessionID string
	// UserID scopes the listing to one user's runs.
	UserID string
	// Statuses keeps runs in any of these statuses; empty keeps all.
	Statuses []run.Status
	// CreatedAfter and CreatedBefore bound created_at (epoch seconds,
	// inclusive) when non-zero.
	CreatedAfter  int64
	CreatedBefore int64
	Page
}

// RunToucher marks a running run alive without rewriting it. It is an
// optional ability of a [Store], discovered by type assertion; both
// adapters implement it.
type RunToucher interface {
	// TouchRun sets the updated_at of runID's row to now when the row is
	// RUNNING, and reports whether it was. It reads and writes nothing
	// else, so a process may call it while the run's output is being
	// changed. A row that is gone or no longer RUNNING is left alone.
	TouchRun(ctx context.Context, runID string) (bool, error)
}
