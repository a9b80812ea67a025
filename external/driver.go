package external

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agnogo/agnogo/run"
)

// Driver translates one harness's protocol (the claude CLI, codex
// app-server) for an [Agent], which owns everything else: the session, the
// run row, one turn per session, retries, media, metrics and the terminal
// event. A driver never emits RunStarted, RunCompleted, RunError or
// RunCancelled.
type Driver interface {
	// SDK names the harness: "claude-agent-sdk" or "codex". It is the
	// run's and the session's metadata.sdk.
	SDK() string
	// Model is the model id and provider runs record.
	Model() (id, provider string)
	// SessionKey is the session_data key under which the harness's own
	// session (or thread) id is kept, e.g. "claude_sdk_session_id".
	SessionKey() string
	// Turn runs one turn. It reports the turn's content and tool events
	// through req.Emit as they happen, keeps req.HarnessSession up to date
	// (the id to resume next time, "" to start afresh), and returns the
	// turn's result. On failure it returns what it has of the result with
	// the error; see [TurnError] for how a failure is classified. When ctx
	// ends it interrupts the harness and returns ctx's error.
	Turn(ctx context.Context, req *TurnRequest) (*TurnResult, error)
}

// Brancher is a [Driver] whose harness sessions can be branched at a
// message of an earlier run, which makes the agent a [run.Continuer]:
// continuing a run from a checkpoint forks the harness session there and
// runs a new turn on the branch.
type Brancher interface {
	// Branch makes a new harness session holding the conversation up to
	// and including the last of req.Kept that marks a place in the
	// harness's transcript (before req.Run's prompt when none of them
	// does), and returns its id. It fails with run.ErrNotContinuable when
	// the run's transcript is not available.
	Branch(ctx context.Context, req *BranchRequest) (string, error)
}

// BranchRequest names where to branch a harness session.
type BranchRequest struct {
	// SessionID and UserID name the agnogo session.
	SessionID, UserID string
	// Run is the run being continued, its messages in full.
	Run *run.Output
	// Kept are the run's messages the branch keeps.
	Kept []*run.Message
}

// TurnRequest is one turn handed to a [Driver].
type TurnRequest struct {
	// RunID, SessionID and UserID name the run.
	RunID, SessionID, UserID string
	// Attempt numbers the attempt, from 1.
	Attempt int
	// Prompt is the user's message with the attachments block appended.
	Prompt string
	// Input is the run's input (for drivers that take images natively).
	Input *run.Input
	// Staging is the run's staged attachments; nil without any.
	Staging *Staging
	// HarnessSession is the harness's session id to resume, "" for a fresh
	// session. The driver updates it as it learns the new id.
	HarnessSession string
	// Seed returns the prompt of a fresh harness session on a session that
	// already has history: the conversation so far, then Prompt (see
	// [SeedPrompt]). A driver calls it only when it cannot resume.
	Seed func(ctx context.Context) (string, error)
	// OutputSchema is the JSON Schema (an object) the answer must match;
	// nil for a text answer.
	OutputSchema json.RawMessage
	// Stream is set when someone consumes the run's events as they come.
	Stream bool
	// Emit hands one event (RunContent, ToolCallStarted, …) to the run.
	Emit func(run.Event)
	// Warn records a problem that does not fail the run, such as a failed
	// transcript mirror; it goes to metadata.warnings.
	Warn func(run.Warning)
	// Decisions are the user's answers to the tool calls a paused run
	// asked about (Confirmed set, with an optional ConfirmationNote): the
	// harness is told, and an approved call made again is allowed.
	Decisions []*run.ToolExecution
}

// PauseError ends a turn that needs the user's confirmation of tool calls
// before it can go on: the run is saved PAUSED with a requirement per
// tool, and continuing it with the decisions runs the next turn.
type PauseError struct {
	// Tools are the calls awaiting confirmation, as the harness proposed
	// them (ToolCallID, ToolName, ToolArgs).
	Tools []*run.ToolExecution
}

// Error implements error.
func (e *PauseError) Error() string {
	return fmt.Sprintf("the run needs the user's confirmation of %d tool call(s)", len(e.Tools))
}

// TurnResult is what a turn produced.
type TurnResult struct {
	// Content is the final answer's text (for a structured answer, its JSON).
	Content string
	// Structured is the parsed structured answer, when an output schema
	// was asked for.
	Structured map[string]any
	// ReasoningContent is the turn's reasoning, when the harness reports it.
	ReasoningContent string
	// Messages are the turn's assistant and tool messages, in order.
	Messages []*run.Message
	// Tools are the turn's tool calls.
	Tools []*run.ToolExecution
	// Metrics are the turn's tokens, cost and per-model details; the agent
	// sets duration and time to first token itself.
	Metrics *run.RunMetrics
	// Model is the model the harness reported using, when it did.
	Model string
}

// TurnError is a failed turn, classified. A driver returns one, made with
// [Classify], for the failures it recognises; any other error is retried
// while retries remain.
type TurnError struct {
	// Type is the RunError's error_type, e.g. "authentication_error",
	// "max_turns": the class's (see [run.ErrorClass]), or a type of the
	// driver's own.
	Type string
	// Permanent marks a failure no retry can help: for a failure of one of
	// run's classes, the class's [run.ErrorClass.Permanent] (authentication,
	// billing, bad request, context window, policy, max turns, max budget,
	// a missing CLI, …).
	Permanent bool
	// Err is the failure; for a classified one, a [*run.ClassError], so
	// [run.ClassOf] sees the class.
	Err error
}

// Error implements error.
func (e *TurnError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *TurnError) Unwrap() error { return e.Err }

// Classify returns err as a failed turn of class: its RunError error_type is
// the class's, and the agent tries the turn again, while retries remain,
// unless the class is permanent. The durable queue takes the same decision
// from the error_type, so a driver cannot make the two disagree.
func Classify(class run.ErrorClass, err error) error {
	return &TurnError{Type: class.ErrorType(), Permanent: class.Permanent(), Err: &run.ClassError{Class: class, Err: err}}
}

// Permanent returns err classified as a failure no retry can help, with
// errorType as its RunError error_type. When errorType is the error_type of
// one of run's classes that is retryable or permanent, the class decides
// instead, as with [Classify]; prefer Classify for those.
func Permanent(errorType string, err error) error {
	return turnError(errorType, true, err)
}

// Transient returns err classified as a failure a retry may not meet, with
// errorType as its RunError error_type. When errorType is the error_type of
// one of run's classes that is retryable or permanent, the class decides
// instead, as with [Classify]; prefer Classify for those.
func Transient(errorType string, err error) error {
	return turnError(errorType, false, err)
}

// turnError is a failed turn of errorType, permanent unless run's taxonomy
// says otherwise.
func turnError(errorType string, permanent bool, err error) error {
	class, known := run.ParseErrorType(errorType)
	if !known {
		return &TurnError{Type: errorType, Permanent: permanent, Err: err}
	}
	if class.Permanent() || class.Retryable() {
		return Classify(class, err)
	}
	return &TurnError{Type: errorType, Permanent: permanent, Err: &run.ClassError{Class: class, Err: err}}
}

// retryable reports whether a failed turn may be tried again: not when the
// run was cancelled, timed out or paused, nor when the failure is
// permanent — per the driver's [TurnError], or per run's taxonomy. A failure
// nobody classified is tried again.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pause *PauseError
	if errors.As(err, &pause) {
		return false
	}
	var turnErr *TurnError
	if errors.As(err, &turnErr) && turnErr.Permanent {
		return false
	}
	return !run.Permanent(err)
}

// errorType names a failure for RunError.error_type: the driver's
// [TurnError] type, else the failure's class's ([run.ErrorTypeOf]).
func errorType(err error) string {
	var turnErr *TurnError
	if errors.As(err, &turnErr) && turnErr.Type != "" {
		return turnErr.Type
	}
	return run.ErrorTypeOf(err)
}

// checkSchema refuses an output schema an external agent cannot answer in:
// one whose root is not an object.
func checkSchema(schema json.RawMessage) error {
	if len(schema) == 0 {
		return nil
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return fmt.Errorf("%w: output_schema must be a JSON Schema object: %w", run.ErrInvalidInput, err)
	}
	if t, ok := root["type"]; ok && t != "object" {
		return fmt.Errorf("%w: output_schema must describe an object (its root type is %v); wrap the value in an object property", run.ErrInvalidInput, t)
	}
	if _, ok := root["type"]; !ok {
		if _, props := root["properties"]; !props {
			return fmt.Errorf("%w: output_schema must describe an object: give it \"type\": \"object\" and its properties", run.ErrInvalidInput)
		}
	}
	return nil
}

// Awaiting are the tool calls a turn pauses on, for the user's
// confirmation. A driver declines them for now; their declined results are
// not shown (the calls await confirmation instead).
type Awaiting []*run.ToolExecution

// Has reports whether the call with this id awaits confirmation.
func (a Awaiting) Has(toolCallID string) bool {
	return slices.ContainsFunc(a, func(t *run.ToolExecution) bool { return t.ToolCallID == toolCallID })
}

// Hides reports whether an event is the declined result of an awaiting
// call, which clients do not see.
func (a Awaiting) Hides(e run.Event) bool {
	failed, ok := e.(*run.ToolCallError)
	return ok && failed.Tool != nil && a.Has(failed.Tool.ToolCallID)
}

// Without drops the declined results of awaiting calls from messages.
func (a Awaiting) Without(messages []*run.Message) []*run.Message {
	return slices.DeleteFunc(slices.Clone(messages), func(m *run.Message) bool {
		return m.Role == run.RoleTool && a.Has(m.ToolCallID)
	})
}
