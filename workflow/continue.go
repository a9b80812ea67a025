package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// continueOpener opens the continuation of a paused workflow run: the run
// goes on, under its own id, from the step it paused at.
func (w *Workflow) continueOpener(req *run.ContinueRequest) runhost.Opener {
	return func(ctx context.Context, _ run.Execution) (*runhost.Spec, error) {
		out, answers, err := w.loadPaused(ctx, req)
		if err != nil {
			return nil, err
		}
		session, err := w.openSession(ctx, out.SessionID, out.UserID)
		if err != nil {
			return nil, err
		}
		start := 0
		if out.PausedStepIndex != nil {
			start = *out.PausedStepIndex
		}
		out.Status = run.StatusRunning
		if out.Metrics == nil {
			out.Metrics = &run.RunMetrics{}
		}
		out.Metrics.StartTimer(w.cfg.Now())
		t := &turn{w: w, resume: &resumePlan{start: start, answers: answers}}
		return w.spec(out, session, true, &run.RunContinued{}, t), nil
	}
}

// loadPaused reads the paused run req continues and merges the person's
// answers into its step requirements: it returns the run and the
// resolved requirements by step id, or why the request is refused.
func (w *Workflow) loadPaused(ctx context.Context, req *run.ContinueRequest) (*run.Output, map[string]*run.StepRequirement, error) {
	src := req.Run
	if src == nil {
		if w.cfg.Store == nil {
			return nil, nil, fmt.Errorf("continue run %s: workflow %s keeps no runs (it has no store): %w", req.RunID, w.cfg.ID, run.ErrRunNotFound)
		}
		rec, err := runhost.Read(ctx, w.host, "run", req.RunID, func(ctx context.Context) (storage.RunRecord, error) {
			return w.cfg.Store.GetRun(ctx, req.RunID, req.UserID)
		})
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil, fmt.Errorf("continue run %s: %w", req.RunID, run.ErrRunNotFound)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("continue run %s: %w", req.RunID, err)
		}
		src = rec.Run
	}
	switch {
	case src == nil:
		return nil, nil, fmt.Errorf("continue run %s: %w", req.RunID, run.ErrRunNotFound)
	case req.SessionID != "" && req.SessionID != src.SessionID:
		return nil, nil, fmt.Errorf("continue run %s: it is not a run of session %s: %w", src.RunID, req.SessionID, run.ErrRunNotFound)
	case src.WorkflowID != w.cfg.ID || src.AgentID != "" || src.TeamID != "":
		return nil, nil, fmt.Errorf("continue run %s: it belongs to %s: %w", src.RunID, src.RunnerID(), run.ErrNotContinuable)
	case src.Status != run.StatusPaused:
		return nil, nil, fmt.Errorf("continue run %s: it is %s, and only a PAUSED workflow run continues: %w", src.RunID, src.Status, run.ErrNotContinuable)
	}
	answers := map[string]*run.StepRequirement{}
	var waiting []string
	for _, stored := range src.StepRequirements {
		given := findAnswer(req.StepRequirements, stored)
		if given == nil {
			waiting = append(waiting, describe(stored))
			continue
		}
		merged, err := w.merge(ctx, stored, given, src.UserID)
		if err != nil {
			return nil, nil, fmt.Errorf("continue run %s: %w", src.RunID, err)
		}
		if !merged.IsResolved() {
			waiting = append(waiting, describe(stored))
			continue
		}
		answers[stored.StepID] = merged
	}
	if len(waiting) > 0 {
		return nil, nil, fmt.Errorf("continue run %s: %w: %s (send them resolved in step_requirements, matched by step_id)",
			src.RunID, run.ErrUnresolved, strings.Join(waiting, "; "))
	}
	return src, answers, nil
}

// findAnswer is the client's copy of a stored requirement: matched by
// step_id, or the only one given when one is stored.
func findAnswer(given []*run.StepRequirement, stored *run.StepRequirement) *run.StepRequirement {
	for _, g := range given {
		if g != nil && g.StepID == stored.StepID {
			return g
		}
	}
	if len(given) == 1 && given[0] != nil && given[0].StepID == "" {
		return given[0]
	}
	return nil
}

// describe names what a requirement waits for.
func describe(r *run.StepRequirement) string {
	switch {
	case r.RequiresExecutorInput:
		return fmt.Sprintf("step %s (step_id %s) waits for its %s's tool requirements", r.StepName, r.StepID, r.ExecutorType)
	case r.RequiresOutputReview:
		return fmt.Sprintf("step %s (step_id %s) waits for its output review: set confirmed", r.StepName, r.StepID)
	case r.RequiresRouteSelection:
		return fmt.Sprintf("step %s (step_id %s) waits for a route: set selected_choices from %v", r.StepName, r.StepID, r.AvailableChoices)
	case r.RequiresUserInput && !r.RequiresConfirmation:
		return fmt.Sprintf("step %s (step_id %s) waits for user_input", r.StepName, r.StepID)
	}
	return fmt.Sprintf("step %s (step_id %s) waits for a confirmation: set confirmed", r.StepName, r.StepID)
}

// merge takes the person's answer into a copy of the stored requirement:
// only the answer's fields, never what the server asked.
func (w *Workflow) merge(ctx context.Context, stored, given *run.StepRequirement, userID string) (*run.StepRequirement, error) {
	m := *stored
	if stored.RequiresConfirmation || stored.RequiresOutputReview {
		m.Confirmed = given.Confirmed
	}
	m.RejectionFeedback, m.EditedOutput = given.RejectionFeedback, given.EditedOutput
	if stored.RequiresUserInput {
		m.UserInput = map[string]any{}
		for k, v := range given.UserInput {
			m.UserInput[k] = v
		}
		m.UserInputSchema = slices.Clone(stored.UserInputSchema)
		for i, f := range m.UserInputSchema {
			for _, g := range given.UserInputSchema {
				if g.Name == f.Name && g.Value != nil {
					if _, set := m.UserInput[f.Name]; !set {
						m.UserInput[f.Name] = g.Value
					}
				}
			}
			if v, ok := m.UserInput[f.Name]; ok {
				m.UserInputSchema[i].Value = v
			}
		}
		if stored.RequiresConfirmation && m.Confirmed != nil && !*m.Confirmed {
			// A rejected step needs no input.
		} else if !m.NeedsUserInput() {
			if err := m.CheckUserInput(); err != nil {
				return nil, fmt.Errorf("%w: %w", run.ErrInvalidContinue, err)
			}
		}
	}
	if stored.RequiresRouteSelection {
		m.SelectedChoices = given.SelectedChoices
		if len(m.SelectedChoices) > 1 && !stored.AllowMultipleSelections {
			return nil, fmt.Errorf("%w: step %s takes one route: selected_choices has %d", run.ErrInvalidContinue, stored.StepName, len(m.SelectedChoices))
		}
		for _, c := range m.SelectedChoices {
			if !slices.ContainsFunc(stored.AvailableChoices, func(a string) bool { return strings.EqualFold(a, c) }) {
				return nil, fmt.Errorf("%w: step %s has no route %q: choose from %v", run.ErrInvalidContinue, stored.StepName, c, stored.AvailableChoices)
			}
		}
	}
	if stored.RequiresExecutorInput {
		resolved, err := w.mergeExecutor(ctx, stored, given, userID)
		if err != nil {
			return nil, err
		}
		m.ExecutorRequirements = resolved
	}
	return &m, nil
}

// mergeExecutor takes the person's resolutions of a step's agent's or
// team's requirements, matched by tool_call_id (Agno's clients set
// confirmation and tool_execution.confirmed), and checks them with the
// executor when it can.
func (w *Workflow) mergeExecutor(ctx context.Context, stored, given *run.StepRequirement, userID string) ([]*run.Requirement, error) {
	byCall := map[string]*run.Requirement{}
	for _, g := range given.ExecutorRequirements {
		if g != nil && g.ToolExecution != nil && g.ToolExecution.ToolCallID != "" {
			byCall[g.ToolExecution.ToolCallID] = g
		}
	}
	out := make([]*run.Requirement, 0, len(stored.ExecutorRequirements))
	var tools []*run.ToolExecution
	for _, s := range stored.ExecutorRequirements {
		if s == nil || s.ToolExecution == nil {
			continue
		}
		g, ok := byCall[s.ToolExecution.ToolCallID]
		if !ok {
			out = append(out, s)
			continue
		}
		te := *g.ToolExecution
		if te.Confirmed == nil && g.Confirmation != nil {
			te.Confirmed = g.Confirmation
		}
		if te.Result == nil && g.ExternalExecutionResult != nil {
			te.Result = g.ExternalExecutionResult
		}
		r := *s
		stTool := *s.ToolExecution
		stTool.Confirmed, stTool.Result = te.Confirmed, te.Result
		if len(te.UserInputSchema) > 0 {
			stTool.UserInputSchema = te.UserInputSchema
		}
		r.ToolExecution, r.Confirmation, r.ExternalExecutionResult = &stTool, te.Confirmed, te.Result
		if len(te.UserInputSchema) > 0 {
			r.UserInputSchema = te.UserInputSchema
		}
		out = append(out, &r)
		tools = append(tools, &te)
	}
	if len(tools) < len(stored.ExecutorRequirements) {
		return nil, fmt.Errorf("%w: step %s: resolve each of its %s's requirements (by tool_execution.tool_call_id)",
			run.ErrUnresolved, stored.StepName, stored.ExecutorType)
	}
	if checker, ok := w.executor(stored.StepID).(interface {
		CheckContinue(ctx context.Context, req *run.ContinueRequest) error
	}); ok {
		if err := checker.CheckContinue(ctx, &run.ContinueRequest{RunID: stored.ExecutorRunID, UserID: userID, Tools: tools}); err != nil {
			return nil, fmt.Errorf("step %s: %w", stored.StepName, err)
		}
	}
	return out, nil
}

// executor is the runner of the step with id stepID; nil when none.
func (w *Workflow) executor(stepID string) run.Runner {
	var found run.Runner
	var walk func(nodes []*Node)
	walk = func(nodes []*Node) {
		for _, n := range nodes {
			if n.id == stepID {
				found = n.runner
				return
			}
			walk(n.children)
			walk(n.otherwise)
		}
	}
	walk(w.cfg.Steps)
	return found
}

// openSession reads a run's session, or a new one, waiting for a database
// that fails transiently (see [runhost.Read]); another user's is refused
// as not found.
func (w *Workflow) openSession(ctx context.Context, sessionID, userID string) (*storage.Session, error) {
	return runhost.Read(ctx, w.host, "session", sessionID, func(ctx context.Context) (*storage.Session, error) {
		return storage.OpenSession(ctx, w.cfg.Store, storage.NewSession(run.KindWorkflow, w.cfg.ID, sessionID, userID))
	})
}
