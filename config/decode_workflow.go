package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/workflow"
)

// Workflow is one entry of the workflows list: steps that run agents,
// teams and other workflows of the same file, one after the other, as
// package workflow runs them. [Parse] fills in every default.
type Workflow struct {
	// ID identifies the workflow (workflow_id on runs and sessions).
	// Required, and unique among the ids of agents, teams and workflows.
	ID string
	// Name is the display name. Defaults to ID.
	Name string
	// Description says what the workflow is for (GET /workflows).
	// Defaults to "".
	Description string
	// Steps run one after the other. Required, at least one.
	Steps []*WorkflowStep
	// InputSchema, when set, is a JSON Schema the run's input must meet
	// (the input is read as JSON). Defaults to nil: any input.
	InputSchema map[string]any
	// SessionState is the initial state of a new workflow session.
	// Defaults to none.
	SessionState map[string]any
	// AddWorkflowHistory gives every step's agent, team or workflow the
	// workflow's earlier runs in the session. Defaults to false.
	AddWorkflowHistory bool
	// NumHistoryRuns is how many earlier runs make that history. Defaults
	// to 3.
	NumHistoryRuns int
	// StreamExecutorEvents passes the events of the steps' agents and
	// teams on in the workflow's stream. Defaults to true.
	StreamExecutorEvents bool
	// StoreEvents keeps the workflow run's events on the stored run.
	// Defaults to false.
	StoreEvents bool

	// Line is where the workflow's entry starts.
	Line int
	// historyLine is the line of add_workflow_history, when set.
	historyLine int
}

// WorkflowStep is one step of a workflow: it runs an agent, a team or a
// workflow of the file (Type [workflow.TypeStep]), or groups steps —
// in sequence (Steps), in a loop (Loop), at the same time (Parallel),
// under a condition (Condition) or as the choices of a router (Router).
type WorkflowStep struct {
	// Name names the step, unique in its workflow (steps are found by
	// name). Required.
	Name string
	// Description describes the step. Defaults to "".
	Description string
	// Type is what the step is, from the key that makes it so: agent,
	// team and workflow make a Step; steps alone a Steps group; parallel,
	// loop, condition and router theirs.
	Type workflow.StepType
	// Agent, Team and Workflow name what a Step runs, by id; exactly one
	// is set on a Step, none on other types.
	Agent, Team, Workflow string
	// Steps are the steps of a Steps group, a loop's body, the branches of
	// a parallel (its parallel key), the steps a condition runs when it
	// holds, or a router's choices (its choices key).
	Steps []*WorkflowStep
	// Else are the steps a condition runs when it does not hold. Defaults
	// to none.
	Else []*WorkflowStep
	// Condition is a condition's CEL expression (a bool).
	Condition string
	// Until is a loop's CEL end condition, checked after each iteration
	// (loop.until). Defaults to "": the loop runs MaxIterations times.
	Until string
	// MaxIterations bounds a loop's iterations (loop.max_iterations).
	// Defaults to [workflow.DefaultMaxIterations] on a loop.
	MaxIterations int
	// Router is a router's CEL expression, yielding the name of a choice
	// or a list of names; "" when a person chooses (human_review with
	// requires_user_input).
	Router string
	// MaxConcurrency bounds how many branches of a parallel run at once.
	// Defaults to [workflow.DefaultMaxConcurrency] on a parallel.
	MaxConcurrency int
	// MaxRetries is how many more times a failed Step runs. Defaults to 0.
	MaxRetries int
	// SkipOnFailure lets the workflow go on past a failed Step. Defaults
	// to false.
	SkipOnFailure bool
	// AddWorkflowHistory gives a Step's runner the workflow's earlier runs
	// in the session. Defaults to false.
	AddWorkflowHistory bool
	// NumHistoryRuns is how many earlier runs make a Step's history (with
	// AddWorkflowHistory). Defaults to 3 on a Step.
	NumHistoryRuns int
	// HumanReview asks a person about the step, with its defaults filled
	// in. Defaults to nil: no review.
	HumanReview *workflow.HumanReview

	// Line is where the step's entry starts.
	Line int
	// refLine is the line of the agent, team or workflow key's value.
	refLine int
	// historyLine is the line of a false add_workflow_history.
	historyLine int
}

// The keys of a workflow, of one of its steps, of a step's loop, of its
// human_review and of a user_input_schema field, in the documentation's
// order.
var (
	workflowKeys = []string{"id", "name", "description", "steps", "input_schema", "session_state",
		"add_workflow_history", "num_history_runs", "stream_executor_events", "store_events"}
	workflowStepKeys = []string{"name", "description", "agent", "team", "workflow", "steps", "parallel", "loop",
		"condition", "else", "router", "choices", "max_retries", "skip_on_failure", "add_workflow_history",
		"num_history_runs", "max_concurrency", "human_review"}
	workflowLoopKeys = []string{"max_iterations", "until"}
	humanReviewKeys  = []string{"requires_confirmation", "confirmation_message", "requires_user_input", "user_input_message",
		"user_input_schema", "allow_multiple_selections", "requires_output_review", "output_review_message",
		"requires_iteration_review", "iteration_review_message", "on_reject", "on_error", "max_retries", "timeout", "on_timeout"}
	userInputFieldKeys = []string{"name", "field_type", "description", "required", "allowed_values"}
	// stepKindKeys are the keys that say what a step is; a step has
	// exactly one (steps counts only without loop and condition, whose
	// body it is).
	stepKindKeys = []string{"agent", "team", "workflow", "steps", "parallel", "loop", "condition", "router"}
	// userInputFieldTypes are the field types of a user_input_schema field.
	userInputFieldTypes = []string{"str", "int", "float", "bool", "list", "dict"}
)

// stepKindList is stepKindKeys for messages.
var stepKindList = "agent: ID, team: ID, workflow: ID, steps: [...], parallel: [...], loop: {...} with steps, condition: EXPR with steps, or router: EXPR with choices"

// decodeWorkflows reads the workflows list.
func (d *decoder) decodeWorkflows(node *yaml.Node) []*Workflow {
	return decodeList(d, node, "workflows", "a workflow needs at least an id and steps", d.decodeWorkflow)
}

// stepScope is what the steps of one workflow share while they are read.
type stepScope struct {
	// what names the workflow in messages.
	what string
	// names are the step names seen, with their lines.
	names map[string]int
}

// decodeWorkflow reads one workflow. Its id is read first, so that every
// other problem can name the workflow.
func (d *decoder) decodeWorkflow(node *yaml.Node, index int) *Workflow {
	w := &Workflow{
		NumHistoryRuns:       defaultNumHistoryRuns,
		StreamExecutorEvents: true,
		Line:                 deref(node).Line,
	}
	what := fmt.Sprintf("workflows[%d]", index)
	fields := d.fields(node, what)
	w.ID, what = d.entryID(node, fields, what, "workflow")
	scope := &stepScope{what: what, names: map[string]int{}}
	var stepsNode *yaml.Node
	for _, f := range fields {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "id":
		case "name":
			w.Name = d.str(f.value, keyWhat)
		case "description":
			w.Description = d.str(f.value, keyWhat)
		case "steps":
			stepsNode = f.value
			w.Steps = d.decodeSteps(f.value, "steps", what, scope)
		case "input_schema":
			w.InputSchema = d.decodeInputSchema(f.value, keyWhat)
		case "session_state":
			w.SessionState = d.jsonObject(f.value, keyWhat, "a mapping, such as {cart: [], currency: EUR}")
		case "add_workflow_history":
			w.AddWorkflowHistory = d.boolean(f.value, keyWhat)
			w.historyLine = f.value.Line
		case "num_history_runs":
			w.NumHistoryRuns = d.integer(f.value, keyWhat, 1)
		case "stream_executor_events":
			w.StreamExecutorEvents = d.boolean(f.value, keyWhat)
		case "store_events":
			w.StoreEvents = d.boolean(f.value, keyWhat)
		default:
			d.unknownWorkflowKey(f, what)
		}
	}
	if w.Name == "" {
		w.Name = w.ID
	}
	if stepsNode == nil && deref(node).Kind == yaml.MappingNode {
		d.errorf(node, "%s has no steps; add steps: followed by a list of steps, such as [{name: draft, agent: writer}]", what)
	}
	if w.AddWorkflowHistory {
		for s := range allSteps(w.Steps) {
			if s.historyLine != 0 {
				d.errorAt(s.historyLine, "add_workflow_history: false in step %q of %s cannot turn off the workflow's add_workflow_history: true (line %d): "+
					"a step can only add the history; remove one of them", s.Name, what, w.historyLine)
			}
		}
	}
	return w
}

// unknownWorkflowKey reports a key a workflow does not have, saying so
// when it is a key of agents, teams or steps.
func (d *decoder) unknownWorkflowKey(f field, what string) {
	switch {
	case f.name() == "model":
		d.errorf(f.key, "key \"model\" %s: a workflow has no model of its own; its steps run agents and teams, which have theirs", where(what))
	case slices.Contains(workflowStepKeys, f.name()):
		d.errorf(f.key, "key %q %s is a key of a workflow's steps, not of the workflow; put it on a step under steps:", f.name(), where(what))
	case f.name() == "type" || slices.Contains(agentKeys, f.name()) || slices.Contains(teamKeys, f.name()) || len(typesOfKey(f.name())) > 0:
		d.errorf(f.key, "key %q %s is a key of agents or teams, not of workflows; a workflow's keys are: %s", f.name(), where(what), strings.Join(workflowKeys, ", "))
	default:
		d.unknownKey(f, what, workflowKeys)
	}
}

// decodeInputSchema reads a workflow's input_schema: a JSON Schema written
// as a mapping, or as a JSON string.
func (d *decoder) decodeInputSchema(node *yaml.Node, what string) map[string]any {
	node = deref(node)
	var schema map[string]any
	switch {
	case isNull(node):
		return nil
	case node.Kind == yaml.MappingNode:
		schema, _ = d.jsonValue(node, what).(map[string]any)
	case node.Kind == yaml.ScalarNode && json.Unmarshal([]byte(node.Value), &schema) == nil && schema != nil:
	default:
		d.errorf(node, "%s: want a JSON Schema as a mapping, such as {type: object, properties: {topic: {type: string}}, required: [topic]}, got %s", what, kindName(node))
		return nil
	}
	_, err := workflow.FromConfig(workflow.Config{ID: "input_schema", Steps: []*workflow.Node{probeStep()}, InputSchema: schema})
	if err != nil {
		d.errorf(node, "%s: %s", what, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "workflow input_schema: "), "input_schema: "))
		return nil
	}
	return schema
}

// decodeSteps reads a list of steps: a workflow's steps, or the steps,
// parallel, else or choices of a step (list names the key); parent names
// the workflow or the step in messages.
func (d *decoder) decodeSteps(node *yaml.Node, list, parent string, scope *stepScope) []*WorkflowStep {
	node = deref(node)
	what := label(list, parent)
	if isNull(node) || (node.Kind == yaml.SequenceNode && len(node.Content) == 0) {
		d.errorf(node, "%s: want at least one step, such as [{name: draft, agent: writer}]", what)
		return nil
	}
	if node.Kind != yaml.SequenceNode {
		d.errorf(node, "%s: want a list of steps (each a mapping such as {name: draft, agent: writer}), got %s", what, kindName(node))
		return nil
	}
	steps := make([]*WorkflowStep, 0, len(node.Content))
	for i, item := range node.Content {
		if isNull(item) {
			d.errorf(item, "%s[%d] of %s is empty; a step needs a name and one of %s", list, i, parent, stepKindList)
			continue
		}
		steps = append(steps, d.decodeStep(item, fmt.Sprintf("%s[%d] of %s", list, i, parent), scope))
	}
	return steps
}

// stepFields are the keys of a step that are read after its kind is
// known, with the nodes of its settings.
type stepFields struct {
	kinds                                          []field
	steps, elseSteps, choices, review              *field
	retries, skip, history, historyRuns, parallels *field
}

// decodeStep reads one step. Its name is read first, so that every other
// problem can name the step.
func (d *decoder) decodeStep(node *yaml.Node, what string, scope *stepScope) *WorkflowStep {
	s := &WorkflowStep{Line: deref(node).Line}
	fields := d.fields(node, what)
	hasName := false
	for _, f := range fields {
		if f.name() == "name" {
			hasName = true
			s.Name = d.str(f.value, label("name", what))
		}
	}
	if s.Name != "" {
		if line, dup := scope.names[s.Name]; dup {
			d.errorf(node, "duplicate step name %q in %s (first at line %d); step names must be unique in a workflow, nested steps included: steps are found by name", s.Name, scope.what, line)
		} else {
			scope.names[s.Name] = s.Line
		}
		what = fmt.Sprintf("step %q of %s", s.Name, scope.what)
	} else if deref(node).Kind == yaml.MappingNode {
		if hasName {
			d.errorf(node, "%s has an empty name; give it a name unique in the workflow", what)
		} else {
			d.errorf(node, "%s has no name; add name: followed by a name unique in the workflow (steps are found by name)", what)
		}
	}
	var sf stepFields
	for _, f := range fields {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "name":
		case "description":
			s.Description = d.str(f.value, keyWhat)
		case "agent", "team", "workflow":
			sf.kinds = append(sf.kinds, f)
			id := d.str(f.value, keyWhat)
			if id == "" && deref(f.value).Kind == yaml.ScalarNode {
				d.errorf(f.value, "%s: want the id of %s of this file", keyWhat, article(f.name()))
			}
			s.refLine = f.value.Line
			switch f.name() {
			case "agent":
				s.Agent = id
			case "team":
				s.Team = id
			default:
				s.Workflow = id
			}
		case "steps":
			sf.steps = &f
		case "parallel", "loop", "condition", "router":
			sf.kinds = append(sf.kinds, f)
		case "else":
			sf.elseSteps = &f
		case "choices":
			sf.choices = &f
		case "max_retries":
			sf.retries = &f
			s.MaxRetries = d.integer(f.value, keyWhat, 0)
		case "skip_on_failure":
			sf.skip = &f
			s.SkipOnFailure = d.boolean(f.value, keyWhat)
		case "add_workflow_history":
			sf.history = &f
			s.AddWorkflowHistory = d.boolean(f.value, keyWhat)
			if !s.AddWorkflowHistory {
				s.historyLine = f.value.Line
			}
		case "num_history_runs":
			sf.historyRuns = &f
			s.NumHistoryRuns = d.integer(f.value, keyWhat, 1)
		case "max_concurrency":
			sf.parallels = &f
			s.MaxConcurrency = d.integer(f.value, keyWhat, 1)
		case "human_review":
			sf.review = &f
		default:
			d.unknownStepKey(f, what)
		}
	}
	if deref(node).Kind != yaml.MappingNode {
		return s
	}
	if !d.stepKind(s, &sf, node, what) {
		return s
	}
	d.stepBody(s, &sf, what, scope)
	d.stepSettings(s, &sf, what)
	if sf.review != nil {
		var lines map[string]int
		s.HumanReview, lines = d.decodeHumanReview(sf.review.value, label("human_review", what))
		d.checkReview(s, lines, sf.review.value.Line, what)
	}
	if s.Type == workflow.TypeRouter {
		d.checkRouter(s, &sf, what)
	}
	return s
}

// article is "an agent", "a team" or "a workflow".
func article(kind string) string {
	if kind == "agent" {
		return "an agent"
	}
	return "a " + kind
}

// unknownStepKey reports a key a step does not have, saying where it
// belongs when it is a key of a workflow, a loop or a human review.
func (d *decoder) unknownStepKey(f field, what string) {
	switch key := f.name(); {
	case key == "function" || key == "executor":
		d.errorf(f.key, "key %q %s: a step of agnogo.yaml runs an agent, a team or a workflow of the file (agent: ID, team: ID, workflow: ID); function steps are written in Go (workflow.Function)", key, where(what))
	case slices.Contains(humanReviewKeys, key):
		d.errorf(f.key, "key %q %s belongs in human_review: write human_review: {%s: …}", key, where(what), key)
	case slices.Contains(workflowLoopKeys, key):
		d.errorf(f.key, "key %q %s belongs in loop: write loop: {%s: …}", key, where(what), key)
	case slices.Contains(workflowKeys, key):
		d.errorf(f.key, "key %q %s is a key of workflows, not of their steps; a step's keys are: %s", key, where(what), strings.Join(workflowStepKeys, ", "))
	default:
		d.unknownKey(f, what, workflowStepKeys)
	}
}

// stepKind works out what a step is from its keys: exactly one of agent,
// team, workflow, parallel, loop, condition and router, or steps alone. It
// reports whether it could.
func (d *decoder) stepKind(s *WorkflowStep, sf *stepFields, node *yaml.Node, what string) bool {
	switch {
	case len(sf.kinds) > 1:
		d.errorf(sf.kinds[1].key, "%s has both %s and %s: a step is exactly one of %s", what, sf.kinds[0].name(), sf.kinds[1].name(), stepKindList)
		return false
	case len(sf.kinds) == 0 && sf.steps == nil:
		d.errorf(node, "%s has nothing to run; give it one of %s", what, stepKindList)
		return false
	}
	kind := "steps"
	if len(sf.kinds) > 0 {
		kind = sf.kinds[0].name()
	}
	switch kind {
	case "agent", "team", "workflow":
		s.Type = workflow.TypeStep
		if s.NumHistoryRuns == 0 {
			s.NumHistoryRuns = defaultNumHistoryRuns
		}
	case "steps":
		s.Type = workflow.TypeSteps
	case "parallel":
		s.Type = workflow.TypeParallel
		if s.MaxConcurrency == 0 {
			s.MaxConcurrency = workflow.DefaultMaxConcurrency
		}
	case "loop":
		s.Type = workflow.TypeLoop
		s.MaxIterations = workflow.DefaultMaxIterations
		d.decodeLoop(s, sf.kinds[0].value, label("loop", what))
	case "condition":
		s.Type = workflow.TypeCondition
		s.Condition = d.celExpression(sf.kinds[0].value, label("condition", what), false)
		if s.Condition == "" && deref(sf.kinds[0].value).Kind == yaml.ScalarNode {
			d.errorf(sf.kinds[0].value, "condition in %s is empty: want a CEL expression yielding true or false, such as 'previous_step_content.contains(\"ok\")'", what)
		}
	case "router":
		s.Type = workflow.TypeRouter
		s.Router = d.celExpression(sf.kinds[0].value, label("router", what), true)
	}
	return true
}

// stepKindWord names a step's type as its key does, for messages.
func stepKindWord(s *WorkflowStep) string {
	switch s.Type {
	case workflow.TypeStep:
		switch {
		case s.Team != "":
			return "team"
		case s.Workflow != "":
			return "workflow"
		}
		return "agent"
	case workflow.TypeSteps:
		return "steps"
	}
	return strings.ToLower(string(s.Type))
}

// stepIs says what a step is, for messages: "this step runs an agent",
// "this is a loop".
func stepIs(s *WorkflowStep) string {
	switch kind := stepKindWord(s); kind {
	case "agent", "team", "workflow":
		return "this step runs " + article(kind)
	case "steps":
		return "this is a group of steps"
	default:
		return "this is " + article(kind)
	}
}

// stepBody reads the steps a step holds — steps, parallel, else, choices —
// and reports those its type does not take.
func (d *decoder) stepBody(s *WorkflowStep, sf *stepFields, what string, scope *stepScope) {
	kind := stepKindWord(s)
	if sf.steps != nil {
		switch s.Type {
		case workflow.TypeSteps, workflow.TypeLoop, workflow.TypeCondition:
			s.Steps = d.decodeSteps(sf.steps.value, "steps", what, scope)
		case workflow.TypeRouter:
			d.errorf(sf.steps.key, "key \"steps\" %s: a router's steps are its choices; write choices: instead", where(what))
		case "":
		default:
			d.errorf(sf.steps.key, "key \"steps\" %s does not go with %s: steps are the body of a group (steps alone), a loop or a condition", where(what), kind)
		}
	} else if s.Type == workflow.TypeLoop || s.Type == workflow.TypeCondition {
		d.errorf(sf.kinds[0].key, "%s is %s but has no steps; add steps: followed by the steps it runs, such as [{name: polish, agent: checker}]", what, article(kind))
	}
	if s.Type == workflow.TypeParallel {
		s.Steps = d.decodeSteps(sf.kinds[0].value, "parallel", what, scope)
	}
	if sf.elseSteps != nil {
		if s.Type == workflow.TypeCondition {
			s.Else = d.decodeSteps(sf.elseSteps.value, "else", what, scope)
		} else if s.Type != "" {
			d.errorf(sf.elseSteps.key, "key \"else\" %s belongs to a condition step; %s", where(what), stepIs(s))
		}
	}
	if sf.choices != nil {
		if s.Type == workflow.TypeRouter {
			s.Steps = d.decodeSteps(sf.choices.value, "choices", what, scope)
		} else if s.Type != "" {
			d.errorf(sf.choices.key, "key \"choices\" %s belongs to a router step; %s", where(what), stepIs(s))
		}
	} else if s.Type == workflow.TypeRouter {
		d.errorf(sf.kinds[0].key, "%s is a router but has no choices; add choices: followed by the steps it chooses among, by name", what)
	}
}

// stepSettings reports the settings a step's type does not take.
func (d *decoder) stepSettings(s *WorkflowStep, sf *stepFields, what string) {
	if s.Type != workflow.TypeStep {
		for _, f := range []*field{sf.retries, sf.skip, sf.history, sf.historyRuns} {
			if f != nil {
				d.errorf(f.key, "%s %s applies to a step running an agent, a team or a workflow; %s: put it on the steps inside", f.name(), where(what), stepIs(s))
			}
		}
	} else if sf.historyRuns != nil && !s.AddWorkflowHistory {
		d.errorf(sf.historyRuns.key, "num_history_runs %s counts the runs add_workflow_history gives the step; add add_workflow_history: true, or remove it", where(what))
	}
	if sf.parallels != nil && s.Type != workflow.TypeParallel {
		d.errorf(sf.parallels.key, "max_concurrency %s bounds the branches of a parallel step; %s: remove it", where(what), stepIs(s))
	}
}

// decodeLoop reads a loop's settings: max_iterations and until.
func (d *decoder) decodeLoop(s *WorkflowStep, node *yaml.Node, what string) {
	for _, f := range d.fields(node, what) {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "max_iterations":
			s.MaxIterations = d.integer(f.value, keyWhat, 1)
		case "until":
			s.Until = d.celExpression(f.value, keyWhat, false)
		default:
			d.unknownKey(f, what, workflowLoopKeys)
		}
	}
}

// celExpression reads a CEL expression and compiles it as package workflow
// does, reporting a mistake at its line; route expressions yield a
// choice's name or a list of names, the others a bool. Null is "".
func (d *decoder) celExpression(node *yaml.Node, what string, route bool) string {
	expr := strings.TrimSpace(d.str(node, what))
	if expr == "" {
		return ""
	}
	if problem := celProblem(expr, route); problem != "" {
		d.errorf(node, "%s: %s", what, problem)
	}
	return expr
}

// celProblem is what package workflow finds wrong with a CEL expression,
// on one line; "" when it compiles.
func celProblem(expr string, route bool) string {
	var n *workflow.Node
	if route {
		n = workflow.Router("probe", workflow.RouteCEL(expr), probeStep())
	} else {
		n = workflow.Condition("probe", workflow.CEL(expr), probeStep())
	}
	_, err := workflow.FromConfig(workflow.Config{ID: "probe", Steps: []*workflow.Node{n}})
	if err == nil {
		return ""
	}
	message := strings.TrimPrefix(err.Error(), `workflow probe: step "probe" (0): `)
	// CEL's issues quote the expression with a caret under the problem:
	// keep the lines that say what it is.
	var lines []string
	for line := range strings.SplitSeq(message, "\n") {
		if trimmed := strings.TrimSpace(line); trimmed != "" && !strings.HasPrefix(trimmed, "|") {
			lines = append(lines, trimmed)
		}
	}
	return strings.Join(lines, "; ")
}

// probeStep is a step that does nothing, for checking expressions and
// schemas with package workflow.
func probeStep() *workflow.Node {
	return workflow.Function("probe_step", func(context.Context, *workflow.StepInput) (*run.StepOutput, error) { return nil, nil })
}

// checkRouter checks who chooses a router's route: its CEL expression, or
// a person (human_review.requires_user_input), not both.
func (d *decoder) checkRouter(s *WorkflowStep, sf *stepFields, what string) {
	person := s.HumanReview != nil && s.HumanReview.RequiresUserInput
	routerNode := sf.kinds[0].value
	switch {
	case s.Router == "" && !person && deref(routerNode).Kind == yaml.ScalarNode:
		d.errorf(routerNode, "router in %s is empty: give a CEL expression yielding the name of a choice (or a list of names), "+
			"such as 'input.contains(\"tech\") ? \"tech\" : \"general\"', or let a person choose with human_review: {requires_user_input: true}", what)
	case s.Router != "" && person:
		d.errorf(routerNode, "router %s has a CEL expression and human_review.requires_user_input: a person chooses the route, so the expression would never run; "+
			"remove one (write router: null for a person's choice)", where(what))
	}
}

// decodeHumanReview reads a step's human_review, with the defaults filled
// in; it returns the lines of its keys too.
func (d *decoder) decodeHumanReview(node *yaml.Node, what string) (*workflow.HumanReview, map[string]int) {
	h := &workflow.HumanReview{OnReject: workflow.OnRejectSkip, OnError: workflow.OnErrorSkip, MaxRetries: 3, OnTimeout: workflow.OnTimeoutCancel}
	lines := map[string]int{}
	for _, f := range d.fields(node, what) {
		keyWhat := label(f.name(), what)
		lines[f.name()] = f.key.Line
		switch f.name() {
		case "requires_confirmation":
			h.RequiresConfirmation = d.boolean(f.value, keyWhat)
		case "confirmation_message":
			h.ConfirmationMessage = d.str(f.value, keyWhat)
		case "requires_user_input":
			h.RequiresUserInput = d.boolean(f.value, keyWhat)
		case "user_input_message":
			h.UserInputMessage = d.str(f.value, keyWhat)
		case "user_input_schema":
			h.UserInputSchema = d.decodeUserInputSchema(f.value, what)
		case "allow_multiple_selections":
			h.AllowMultipleSelections = d.boolean(f.value, keyWhat)
		case "requires_output_review":
			h.RequiresOutputReview = d.boolean(f.value, keyWhat)
		case "output_review_message":
			h.OutputReviewMessage = d.str(f.value, keyWhat)
		case "requires_iteration_review":
			h.RequiresIterationReview = d.boolean(f.value, keyWhat)
		case "iteration_review_message":
			h.IterationReviewMessage = d.str(f.value, keyWhat)
		case "on_reject":
			if v := d.oneOf(f.value, keyWhat, true, workflow.OnRejectSkip, workflow.OnRejectCancel, workflow.OnRejectElse, workflow.OnRejectRetry); v != "" {
				h.OnReject = v
			}
		case "on_error":
			if v := d.oneOf(f.value, keyWhat, true, workflow.OnErrorFail, workflow.OnErrorSkip, workflow.OnErrorPause); v != "" {
				h.OnError = v
			}
		case "max_retries":
			// Package workflow reads 0 as its default, 3.
			if v := d.integer(f.value, keyWhat, 1); v > 0 {
				h.MaxRetries = v
			}
		case "timeout":
			h.TimeoutSeconds = d.integer(f.value, keyWhat, 0)
		case "on_timeout":
			if v := d.oneOf(f.value, keyWhat, true, workflow.OnTimeoutCancel, workflow.OnTimeoutSkip, workflow.OnTimeoutApprove); v != "" {
				h.OnTimeout = v
			}
		default:
			d.unknownKey(f, what, humanReviewKeys)
		}
	}
	return h, lines
}

// decodeUserInputSchema reads the fields a person fills in; reviewWhat
// names the human_review.
func (d *decoder) decodeUserInputSchema(node *yaml.Node, reviewWhat string) []run.UserInputField {
	what := label("user_input_schema", reviewWhat)
	node = deref(node)
	if isNull(node) {
		return nil
	}
	if node.Kind != yaml.SequenceNode {
		d.errorf(node, "%s: want a list of fields, such as [{name: tone, field_type: str, description: The tone}], got %s", what, kindName(node))
		return nil
	}
	fields := make([]run.UserInputField, 0, len(node.Content))
	seen := map[string]int{}
	for i, item := range node.Content {
		fieldWhat := fmt.Sprintf("user_input_schema[%d] in %s", i, reviewWhat)
		field := run.UserInputField{FieldType: "str"}
		hasName := false
		for _, f := range d.fields(item, fieldWhat) {
			keyWhat := label(f.name(), fieldWhat)
			switch f.name() {
			case "name":
				hasName = true
				field.Name = d.str(f.value, keyWhat)
			case "field_type":
				if v := d.oneOf(f.value, keyWhat, true, userInputFieldTypes...); v != "" {
					field.FieldType = v
				}
			case "description":
				field.Description = d.str(f.value, keyWhat)
			case "required":
				field.Required = new(d.boolean(f.value, keyWhat))
			case "allowed_values":
				values := deref(f.value)
				if values.Kind != yaml.SequenceNode {
					d.errorf(values, "%s: want a list of values, such as [formal, casual], got %s", keyWhat, kindName(values))
					continue
				}
				field.AllowedValues, _ = d.jsonValue(values, keyWhat).([]any)
			case "type":
				d.errorf(f.key, "unknown key \"type\" %s; the field's type is field_type: one of %s", where(fieldWhat), strings.Join(userInputFieldTypes, ", "))
			default:
				d.unknownKey(f, fieldWhat, userInputFieldKeys)
			}
		}
		switch {
		case deref(item).Kind != yaml.MappingNode:
			d.errorf(item, "%s: want a mapping such as {name: tone, field_type: str}, got %s", fieldWhat, kindName(item))
			continue
		case field.Name == "" && hasName:
			d.errorf(item, "%s has an empty name", fieldWhat)
		case field.Name == "":
			d.errorf(item, "%s has no name; add name: followed by the field's name", fieldWhat)
		default:
			if line, dup := seen[field.Name]; dup {
				d.errorf(item, "field %q is listed twice in %s (first at line %d)", field.Name, what, line)
			}
			seen[field.Name] = deref(item).Line
		}
		fields = append(fields, field)
	}
	return fields
}

// checkReview reports the parts of a human review the step's type does not
// take; lines are the lines of the review's keys, reviewLine the review's.
func (d *decoder) checkReview(s *WorkflowStep, lines map[string]int, reviewLine int, what string) {
	h := s.HumanReview
	bad := func(key string, set, allowed bool, takers string) {
		if set && !allowed {
			d.errorAt(lines[key], "human_review.%s %s is for %s; %s", key, where(what), takers, stepIs(s))
		}
	}
	executor := s.Type == workflow.TypeStep
	router := s.Type == workflow.TypeRouter
	bad("requires_confirmation", h.RequiresConfirmation, s.Type != workflow.TypeParallel,
		"every step but a parallel (confirm the steps inside it)")
	bad("requires_user_input", h.RequiresUserInput, executor || router,
		"a step running an agent, a team or a workflow (the values go with its input), or a router (the person chooses the route)")
	bad("requires_output_review", h.RequiresOutputReview, executor || router,
		"a step running an agent, a team or a workflow, or a router")
	bad("requires_iteration_review", h.RequiresIterationReview, s.Type == workflow.TypeLoop, "a loop")
	bad("allow_multiple_selections", h.AllowMultipleSelections, router, "a router whose route a person chooses (requires_user_input: true)")
	bad("on_reject", h.OnReject == workflow.OnRejectElse, s.Type == workflow.TypeCondition, "a condition (on_reject: else runs its else steps)")
	if router && h.AllowMultipleSelections && !h.RequiresUserInput {
		d.errorAt(lines["allow_multiple_selections"], "human_review.allow_multiple_selections %s lets a person choose several routes; add requires_user_input: true", where(what))
	}
	if len(h.UserInputSchema) > 0 && (!h.RequiresUserInput || router) {
		d.errorAt(lines["user_input_schema"], "human_review.user_input_schema %s names the values a person gives a step that asks for them: it needs requires_user_input: true on a step running an agent, a team or a workflow", where(what))
	}
	if !h.RequiresConfirmation && !h.RequiresUserInput && !h.RequiresOutputReview && !h.RequiresIterationReview && h.OnError != workflow.OnErrorPause {
		d.errorAt(reviewLine, "human_review %s asks a person nothing; set requires_confirmation, requires_user_input, requires_output_review, requires_iteration_review or on_error: pause", where(what))
	}
}

// resolveWorkflows checks the workflows against each other and the agents
// and teams: ids unique among all three, steps naming an agent, a team or
// a workflow that exists (of that kind), no workflow running itself
// (directly or through other workflows). agentLines are the agents' ids
// with their lines.
func (d *decoder) resolveWorkflows(file *File, agentLines map[string]int) {
	if len(file.Workflows) == 0 {
		return
	}
	teamLines := map[string]int{}
	for _, t := range file.Teams {
		if _, dup := teamLines[t.ID]; !dup && t.ID != "" {
			teamLines[t.ID] = t.Line
		}
	}
	workflowLines := map[string]int{}
	for _, w := range file.Workflows {
		if w.ID == "" {
			continue
		}
		if line, dup := agentLines[w.ID]; dup {
			d.errorAt(w.Line, "duplicate id %q: workflow %q has the id of the agent at line %d; agent, team and workflow ids must be unique", w.ID, w.ID, line)
		} else if line, dup := teamLines[w.ID]; dup {
			d.errorAt(w.Line, "duplicate id %q: workflow %q has the id of the team at line %d; agent, team and workflow ids must be unique", w.ID, w.ID, line)
		} else if line, dup := workflowLines[w.ID]; dup {
			d.errorAt(w.Line, "duplicate workflow id %q (first defined at line %d); agent, team and workflow ids must be unique", w.ID, line)
		} else {
			workflowLines[w.ID] = w.Line
		}
	}
	ids := func(kind string) []string {
		var out []string
		switch kind {
		case "agent":
			for _, a := range file.Agents {
				out = append(out, a.ID)
			}
		case "team":
			for _, t := range file.Teams {
				out = append(out, t.ID)
			}
		default:
			for _, w := range file.Workflows {
				out = append(out, w.ID)
			}
		}
		return out
	}
	lines := map[string]map[string]int{"agent": agentLines, "team": teamLines, "workflow": workflowLines}
	for _, w := range file.Workflows {
		for s := range allSteps(w.Steps) {
			if s.Type != workflow.TypeStep {
				continue
			}
			kind, id := stepRef(s)
			if id == "" {
				continue
			}
			what := fmt.Sprintf("step %q of workflow %q", s.Name, w.ID)
			if kind == "workflow" && id == w.ID {
				d.errorAt(s.refLine, "%s runs workflow %q itself; a workflow cannot run itself, directly or through other workflows", what, id)
				continue
			}
			if _, ok := lines[kind][id]; ok {
				continue
			}
			other := ""
			for _, k := range []string{"agent", "team", "workflow"} {
				if _, ok := lines[k][id]; ok && k != kind {
					other = k
				}
			}
			if other != "" {
				d.errorAt(s.refLine, "%s %q in %s is %s, not %s: write %s: %s", kind, id, what, article(other), article(kind), other, id)
				continue
			}
			d.errorAt(s.refLine, "unknown %s %q in %s: no %s of this file has that id (%ss: %s)", kind, id, what, kind, kind, orNoneText(ids(kind)))
		}
	}
	d.checkWorkflowCycles(file.Workflows)
	if len(d.errs) == 0 {
		for _, w := range file.Workflows {
			d.probeWorkflow(w)
		}
	}
}

// stepRef is what a Step runs: agent, team or workflow, and the id.
func stepRef(s *WorkflowStep) (kind, id string) {
	switch {
	case s.Agent != "":
		return "agent", s.Agent
	case s.Team != "":
		return "team", s.Team
	case s.Workflow != "":
		return "workflow", s.Workflow
	}
	return "", ""
}

// allSteps yields every step of steps, the steps inside them included, in
// file order.
func allSteps(steps []*WorkflowStep) iter.Seq[*WorkflowStep] {
	return func(yield func(*WorkflowStep) bool) {
		var walk func(steps []*WorkflowStep) bool
		walk = func(steps []*WorkflowStep) bool {
			for _, s := range steps {
				if s == nil {
					continue
				}
				if !yield(s) || !walk(s.Steps) || !walk(s.Else) {
					return false
				}
			}
			return true
		}
		walk(steps)
	}
}

// checkWorkflowCycles reports each cycle of workflows that run each other
// (a → b → a) once, at the step that closes it.
func (d *decoder) checkWorkflowCycles(workflows []*Workflow) {
	byID := map[string]*Workflow{}
	for _, w := range workflows {
		if _, dup := byID[w.ID]; !dup && w.ID != "" {
			byID[w.ID] = w
		}
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(w *Workflow)
	visit = func(w *Workflow) {
		state[w.ID] = visiting
		path = append(path, w.ID)
		for s := range allSteps(w.Steps) {
			next, ok := byID[s.Workflow]
			if !ok || s.Workflow == w.ID {
				continue // not a workflow, or itself (reported as such)
			}
			switch state[s.Workflow] {
			case unvisited:
				visit(next)
			case visiting:
				start := slices.Index(path, s.Workflow)
				cycle := append(slices.Clone(path[start:]), s.Workflow)
				quoted := make([]string, len(cycle))
				for j, id := range cycle {
					quoted[j] = strconv.Quote(id)
				}
				d.errorAt(s.refLine, "workflow %q in step %q of workflow %q makes a cycle of workflows, %s: a workflow cannot run itself, directly or through other workflows",
					s.Workflow, s.Name, w.ID, strings.Join(quoted, " → "))
			}
		}
		path = path[:len(path)-1]
		state[w.ID] = done
	}
	for _, w := range workflows {
		if byID[w.ID] == w && state[w.ID] == unvisited {
			visit(w)
		}
	}
}

// probeWorkflow builds w as [File.Build] will, with stand-ins for the
// agents, teams and workflows its steps run, so that whatever package
// workflow refuses is reported by Parse, at the workflow's line.
func (d *decoder) probeWorkflow(w *Workflow) {
	steps, err := workflowNodes(w.Steps, func(s *WorkflowStep) (run.Runner, error) {
		kind, id := stepRef(s)
		return standIn{id: id, kind: run.Kind(kind)}, nil
	})
	if err == nil {
		_, err = workflow.FromConfig(workflowConfig(w, steps, nil, nil))
	}
	if err != nil {
		d.errorAt(w.Line, "workflow %q: %s", w.ID, strings.TrimPrefix(err.Error(), "workflow "+w.ID+": "))
	}
}

// standIn is a runner that is never run: the agent, team or workflow a
// step names, while Parse checks the workflow.
type standIn struct {
	id   string
	kind run.Kind
}

func (r standIn) ID() string     { return r.id }
func (r standIn) Name() string   { return r.id }
func (r standIn) Kind() run.Kind { return r.kind }
func (r standIn) Stream(context.Context, *run.Input) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		yield(nil, errors.New("a stand-in is never run"))
	}
}

// workflowOrder returns the workflows in the order they can be built: each
// after the workflows its steps run, in file order otherwise.
func workflowOrder(workflows []*Workflow) []*Workflow {
	byID := map[string]*Workflow{}
	for _, w := range workflows {
		if _, dup := byID[w.ID]; !dup {
			byID[w.ID] = w
		}
	}
	ordered := make([]*Workflow, 0, len(workflows))
	seen := map[*Workflow]bool{}
	var visit func(w *Workflow)
	visit = func(w *Workflow) {
		if seen[w] {
			return
		}
		seen[w] = true // before the steps: a cycle (reported by Parse) ends here
		for s := range allSteps(w.Steps) {
			if next, ok := byID[s.Workflow]; ok && s.Workflow != "" {
				visit(next)
			}
		}
		ordered = append(ordered, w)
	}
	for _, w := range workflows {
		visit(w)
	}
	return ordered
}
