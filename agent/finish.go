package agent

import (
	"context"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
)

// Complete implements [runhost.Completer]: a new run that has its answer
// updates the user's memories, then its structured answer is parsed.
func (st *runState) Complete(ctx context.Context, r *runhost.Run) error {
	st.r = r
	if st.in != nil {
		st.a.updateMemories(st.a.withUser(ctx, st.out.UserID), st, st.in.ContentString())
	}
	return st.a.parseAnswer(st.out, st.schema)
}

// Sync implements [runhost.Syncer]: the run keeps its own messages, the
// history it was shown left out.
func (st *runState) Sync(out *run.Output, final bool) {
	out.Messages = st.ownMessages()
}

// parseAnswer turns a structured answer into its object, or reports why it
// does not match the schema. A text answer is left as is.
func (a *Agent) parseAnswer(out *run.Output, schema *OutputSchema) error {
	if schema == nil {
		out.ContentType = "str"
		return nil
	}
	answer, err := schema.parse(out.ContentString())
	if err != nil {
		return &InvalidOutputError{Schema: schema.Name, Err: err}
	}
	out.Content, out.ContentType = answer, schema.Name
	return nil
}

// InvalidOutputError reports a structured answer that does not match the
// agent's output schema.
type InvalidOutputError struct {
	Schema string
	Err    error
}

// Error implements error.
func (e *InvalidOutputError) Error() string { return e.Err.Error() }

// Unwrap returns the validation error.
func (e *InvalidOutputError) Unwrap() error { return e.Err }

// ErrorClass implements [run.Classified]: an answer that does not match
// its schema is invalid output, which no retry of the same run can help.
func (e *InvalidOutputError) ErrorClass() run.ErrorClass { return run.ClassInvalidOutput }
