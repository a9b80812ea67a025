package run

import (
	"context"
	"errors"
	"fmt"
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

// ContinueRequest asks a runner to resume a paused run, or to restart a run
// from an earlier message (see [Continuer]).
type ContinueRequest struct {
	// RunID names the stored run to continue.
	RunID string
	// SessionID, when set, must be the run's session.
	SessionID string
	// UserID scopes the read of the run and its session.
	UserID string
	// Run is the run itself, for a runner without a store (RunID is then ignored).
	Run *Output
	// Tools carry the resolutions of a paused run, matched by tool_call_id:
	// Confirmed (and ConfirmationNote) for a confirmation, UserInputSchema
	// values for user input, Result for an external execution.
	Tools []*ToolExecution
	// ContinueFrom is "end" (the default), "last_user", or a message count:
	// where the continued run picks up.
	ContinueFrom string
	// Fork continues in a new run of the same session, leaving the original
	// untouched. A completed run is always forked.
	Fork bool
	// Input, when set, is appended as a new user message.
	Input string
	// StepRequirements resolve a paused workflow's requirements, matched
	// by step_id: a confirmation, user input, a route selection, an output
	// review, or the step's agent's own requirements.
	StepRequirements []*StepRequirement
}

// Continuer is a [Runner] whose runs can be continued: human-in-the-loop
// resolutions, restarts from a message boundary, forks.
type Continuer interface {
	// Continue resumes a run and yields its events like [Runner.Stream].
	Continue(ctx context.Context, req *ContinueRequest) iter.Seq2[Event, error]
}

// SessionBinder is a [Runner] whose sessions are bound to one conversation
// of an outside harness through session_data keys (an external agent's CLI
// session or thread id). A copy of a session — a fork — drops those keys:
// two sessions resuming one harness conversation would interleave their
// turns.
type SessionBinder interface {
	// SessionKeys names the session_data keys that bind a session.
	SessionKeys() []string
}

// Collector is a [Runner] that can also run to completion and return the
// whole run, which a non-streaming caller wants.
type Collector interface {
	// Run executes one run and returns it, whatever its final status.
	Run(ctx context.Context, in *Input) (*Output, error)
}

// Errors a [Runner] or [Continuer] reports. Match them with errors.Is.
var (
	// ErrRunNotFound: the run to continue does not exist (for this user).
	ErrRunNotFound = errors.New("run not found")
	// ErrNotContinuable: the run was cancelled, or belongs to another runner.
	ErrNotContinuable = errors.New("run cannot be continued")
	// ErrUnresolved: the run still waits for a confirmation, input or result.
	ErrUnresolved = errors.New("run has unresolved requirements")
	// ErrInvalidContinue: the request itself is malformed (e.g. continue_from).
	ErrInvalidContinue = errors.New("invalid continue request")
	// ErrContinueOutOfRange: continue_from names a message index past the
	// run's messages. Errors wrapping it wrap [ErrInvalidContinue] too.
	ErrContinueOutOfRange = errors.New("continue_from is out of range")
	// ErrInvalidInput: a run's input cannot be run as given (for example its
	// output schema does not describe an object). Nothing was started.
	ErrInvalidInput = errors.New("invalid run input")
	// ErrTimedOut: the run outlived its time limit (see [WithTimeLimit]); it
	// ends ERROR.
	ErrTimedOut = errors.New("run timed out")
	// ErrInterrupted: the run was stopped because its process is shutting
	// down (see [Interrupt]). It is not over: the runner saves its progress
	// with status RUNNING, sends no final event and ends its stream with this
	// error, so whoever owns the run (the durable queue) runs it again.
	ErrInterrupted = errors.New("run interrupted: the server is shutting down")
	// ErrDisowned: the run's execution was taken over by another (a replica
	// took this one's process for dead). It is an interruption ([ErrInterrupted]
	// matches it) that writes nothing more: the run's row belongs to the
	// execution that took it over.
	ErrDisowned = fmt.Errorf("%w: another execution took the run over", ErrInterrupted)
)

// CheckContinueIndex refuses a continue_from message index past a run's
// count messages (count itself, the end, is valid): the error wraps
// [ErrInvalidContinue] and [ErrContinueOutOfRange] and gives the range.
func CheckContinueIndex(index, count int) error {
	if index <= count {
		return nil
	}
	return fmt.Errorf("continue_from %d is past the run's %d messages: want a message index from 0 to %d, end or last_user: %w: %w",
		index, count, count, ErrInvalidContinue, ErrContinueOutOfRange)
}
