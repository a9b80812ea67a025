package run

import (
	"context"
	"iter"
)

// Kind names what a [Runner] is.
type Kind string

// The runner kinds.
const (
	KindAgent    Kind = "agent"
	KindTeam     Kind = "team"
	KindWorkflow Kind = "workflow"
)

// Runner is anything AgentOS can run: native agents, teams, workflows and
// external agents alike. Everything around a run — background execution,
// cancellation, stored events, retries, metrics — is written once against
// this interface; optional abilities are separate interfaces discovered by
// type assertion.
type Runner interface {
	// ID is the runner's id, unique within an AgentOS.
	ID() string
	// Name is the display name.
	Name() string
	// Kind says whether this is an agent, a team or a workflow.
	Kind() Kind
	// Stream executes one run for in and yields its events in order, ending
	// with a terminal event (RunCompleted, RunPaused, RunError or
	// RunCancelled). Breaking the range or cancelling ctx stops the run,
	// which is then persisted as CANCELLED.
	Stream(ctx context.Context, in *Input) iter.Seq2[Event, error]
}
