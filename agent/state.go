package agent

import (
	"context"
	"fmt"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// runState is one run in flight.
// It is the run's [runhost.Turn]: the run host drives it and writes its
// rows.
type runState struct {
	a *Agent
	// r is the host's handle on the run, set as the host first calls in.
	r *runhost.Run
	// in is a new run's input; nil for a continued run.
	in *run.Input
	// input is a continued run's new user message, if any.
	input string
	// p is the agent's prepared tools and model identity.
	p   *prepared
	out *run.Output
	// session is the session as the run opened it.
	session *storage.Session
	// messages is the conversation sent to the model: the run's own
	// messages plus, at the front, history copies that are not stored.
	messages []*run.Message
	// toolCalls counts the tool calls made so far, for ToolCallLimit.
	toolCalls int
	// batch holds the executions of the model turn's calls last run, in
	// call order (the calls they made of other tools left out).
	batch []*run.ToolExecution
	// schema is the structured answer the run asks for: the run's own
	// output schema, else the agent's; nil for a text answer.
	schema *OutputSchema
	// iteration is the model loop's iteration under Config.Iterations; 0
	// before the first.
	iteration int
	// answered is set when a continued run got its answer from a resolved
	// call that stops the loop: no model call is left to make.
	answered bool
	// baseMessages and baseTools are where a retried attempt starts again.
	baseMessages, baseTools int
	// row is what opening the session told of the run's row.
	row runhost.Row
}

// Prepare implements [runhost.Preparer]: a new run builds the messages the
// model sees first (a continued run has them already).
func (st *runState) Prepare(ctx context.Context, r *runhost.Run) error {
	st.r = r
	if st.in == nil {
		return nil
	}
	return st.a.buildMessages(ctx, st, st.in)
}

// ownMessages returns the messages that belong to the run (history left out).
func (st *runState) ownMessages() []*run.Message {
	own := make([]*run.Message, 0, len(st.messages))
	for _, msg := range st.messages {
		if !msg.FromHistory {
			own = append(own, msg)
		}
	}
	return own
}

// start loads or creates the session and opens the run's output.
func (a *Agent) start(ctx context.Context, in *run.Input, p *prepared) (*runState, error) {
	schema, err := a.outputSchema(in)
	if err != nil {
		return nil, err
	}
	now := a.cfg.Now()
	sessionID, newSession := in.SessionID, in.NewSession
	if sessionID == "" {
		// Made up here: new, unless the run's id is the caller's, whose
		// row may be stored.
		sessionID, newSession = a.cfg.NewID(), in.RunID == ""
	}
	runID := in.RunID
	if runID == "" {
		runID = a.cfg.NewID()
	}
	session, row := storage.NewSession(a.cfg.Kind, a.cfg.ID, sessionID, in.UserID), runhost.RowAbsent
	if !newSession {
		// A session id made up for this run names nothing stored: the
		// store is asked only about one the caller chose.
		if session, row, err = a.host.OpenSession(ctx, session, runID); err != nil {
			return nil, err
		}
	}
	out := &run.Output{
		RunID:         runID,
		SessionID:     sessionID,
		ParentRunID:   in.ParentRunID,
		UserID:        in.UserID,
		Input:         in,
		Model:         p.info.ID,
		ModelProvider: p.info.Provider,
		Status:        run.StatusRunning,
		Metadata:      in.Metadata,
		CreatedAt:     now.Unix(),
		Metrics:       &run.RunMetrics{},
	}
	out.SetRunner(a.cfg.Kind, a.cfg.ID, a.cfg.Name)
	out.Metrics.StartTimer(now)
	out.SessionState = a.mergeSessionState(session, in.SessionState)
	return &runState{p: p, out: out, session: session, schema: schema, row: row}, nil
}

// outputSchema is the structured answer a run asks for: the input's own
// schema when it brings one, else the agent's.
func (a *Agent) outputSchema(in *run.Input) (*OutputSchema, error) {
	if in == nil || len(in.OutputSchema) == 0 {
		return a.cfg.OutputSchema, nil
	}
	name, _ := jsonTitle(in.OutputSchema)
	schema, err := JSONSchema(name, in.OutputSchema)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", run.ErrInvalidInput, err)
	}
	return schema, nil
}

// mergeSessionState returns the session's state (the agent's initial state
// for a new session) with updates applied; see [storage.Session.MergeState].
func (a *Agent) mergeSessionState(session *storage.Session, updates map[string]any) map[string]any {
	return session.MergeState(a.cfg.SessionState, updates)
}

// loadSession reads the session, or starts a new one. A session that exists
// for another user is refused (reported as not found).
func (a *Agent) loadSession(ctx context.Context, sessionID, userID string) (*storage.Session, error) {
	session, _, err := a.host.OpenSession(ctx, storage.NewSession(a.cfg.Kind, a.cfg.ID, sessionID, userID), "")
	return session, err
}
