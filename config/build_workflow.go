package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/workflow"
)

// buildWorkflows builds the file's workflows into built, once its agents
// and teams are: each after the workflows its steps run, on the agents'
// store.
func (f *File) buildWorkflows(built *OS, store storage.Store, opts BuildOptions) error {
	for _, w := range f.Workflows {
		built.WorkflowIDs = append(built.WorkflowIDs, w.ID)
	}
	for _, w := range workflowOrder(f.Workflows) {
		var refErr error
		refLine := 0
		steps, err := workflowNodes(w.Steps, func(s *WorkflowStep) (run.Runner, error) {
			r, err := built.stepRunner(s)
			if err != nil && refErr == nil {
				refErr, refLine = err, s.refLine
			}
			return r, err
		})
		if refErr != nil {
			return f.workflowErrorAt(refLine, w, refErr)
		}
		if err != nil {
			return f.workflowErrorAt(w.Line, w, err)
		}
		built.Workflows[w.ID], err = workflow.FromConfig(workflowConfig(w, steps, store, opts.Logger))
		if err != nil {
			// workflow.FromConfig names the workflow itself: "workflow ID: …".
			return f.workflowErrorAt(w.Line, w, errors.New(strings.TrimPrefix(err.Error(), "workflow "+w.ID+": ")))
		}
	}
	return nil
}

// stepRunner is the built agent, team or workflow a Step runs.
func (o *OS) stepRunner(s *WorkflowStep) (run.Runner, error) {
	kind, id := stepRef(s)
	switch kind {
	case "agent":
		if a, ok := o.Agents[id]; ok {
			return a, nil
		}
		if a, ok := o.External[id]; ok {
			return a, nil
		}
	case "team":
		if t, ok := o.Teams[id]; ok {
			return t, nil
		}
	case "workflow":
		if w, ok := o.Workflows[id]; ok {
			return w, nil
		}
	default:
		return nil, fmt.Errorf("step %q runs nothing: read the file with config.Load or config.Parse", s.Name)
	}
	return nil, fmt.Errorf("step %q: %w: no %s %q is built (read the file with config.Load or config.Parse)", s.Name, ErrUnknownAgent, kind, id)
}

// workflowErrorAt places a build failure of workflow w at a line of the
// file.
func (f *File) workflowErrorAt(line int, w *Workflow, err error) error {
	if line == 0 {
		line = w.Line
	}
	return &Error{Source: f.Source, Line: line, Message: fmt.Sprintf("workflow %q: %v", w.ID, err)}
}

// workflowConfig is the workflow.Config a workflow's keys describe, with
// its steps built.
func workflowConfig(w *Workflow, steps []*workflow.Node, store storage.Store, logger *slog.Logger) workflow.Config {
	return workflow.Config{
		ID:                   w.ID,
		Name:                 w.Name,
		Description:          w.Description,
		Steps:                steps,
		InputSchema:          w.InputSchema,
		SessionState:         w.SessionState,
		AddWorkflowHistory:   w.AddWorkflowHistory,
		NumHistoryRuns:       w.NumHistoryRuns,
		StreamExecutorEvents: new(w.StreamExecutorEvents),
		Store:                store,
		StoreEvents:          w.StoreEvents,
		Logger:               logger,
	}
}

// workflowNodes builds steps into workflow nodes; runnerFor gives the
// agent, team or workflow of a Step.
func workflowNodes(steps []*WorkflowStep, runnerFor func(*WorkflowStep) (run.Runner, error)) ([]*workflow.Node, error) {
	nodes := make([]*workflow.Node, 0, len(steps))
	var errs []error
	for _, s := range steps {
		n, err := workflowNode(s, runnerFor)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		nodes = append(nodes, n)
	}
	return nodes, errors.Join(errs...)
}

// workflowNode builds one step, and the steps inside it.
func workflowNode(s *WorkflowStep, runnerFor func(*WorkflowStep) (run.Runner, error)) (*workflow.Node, error) {
	children, err := workflowNodes(s.Steps, runnerFor)
	if err != nil {
		return nil, err
	}
	var n *workflow.Node
	switch s.Type {
	case workflow.TypeStep:
		r, err := runnerFor(s)
		if err != nil {
			return nil, err
		}
		n = workflow.Step(s.Name, r)
	case workflow.TypeSteps:
		n = workflow.Steps(s.Name, children...)
	case workflow.TypeLoop:
		var until workflow.Predicate
		if s.Until != "" {
			until = workflow.CEL(s.Until)
		}
		n = workflow.Loop(s.Name, s.MaxIterations, until, children...)
	case workflow.TypeParallel:
		n = workflow.Parallel(s.Name, children...).MaxConcurrency(s.MaxConcurrency)
	case workflow.TypeCondition:
		otherwise, err := workflowNodes(s.Else, runnerFor)
		if err != nil {
			return nil, err
		}
		n = workflow.Condition(s.Name, workflow.CEL(s.Condition), children...).Else(otherwise...)
	case workflow.TypeRouter:
		var selector workflow.Selector
		if s.Router != "" {
			selector = workflow.RouteCEL(s.Router)
		}
		n = workflow.Router(s.Name, selector, children...)
	default:
		return nil, fmt.Errorf("step %q has no type: read the file with config.Load or config.Parse", s.Name)
	}
	if s.Description != "" {
		n.Describe(s.Description)
	}
	if s.MaxRetries > 0 {
		n.Retries(s.MaxRetries)
	}
	if s.SkipOnFailure {
		n.SkipOnFailure()
	}
	if s.AddWorkflowHistory {
		n.WithHistory(s.NumHistoryRuns)
	}
	if s.HumanReview != nil {
		n.Review(*s.HumanReview)
	}
	return n, nil
}
