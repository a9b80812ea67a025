package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/run"
)

// StepType names what a workflow step is (Agno's StepType).
type StepType string

// The step types.
const (
	TypeFunction  StepType = "Function"
	TypeStep      StepType = "Step"
	TypeSteps     StepType = "Steps"
	TypeLoop      StepType = "Loop"
	TypeParallel  StepType = "Parallel"
	TypeCondition StepType = "Condition"
	TypeRouter    StepType = "Router"
)

// StepInput is what a step is given (Agno's StepInput): the workflow's
// input, what the steps before it produced, additional data (user input a
// person gave the step arrives as additional_data["user_input"]), the
// session state and the run's media.
type StepInput struct {
	// Input is the workflow run's input.
	Input any
	// PreviousStepContent is the content of the step that ran last.
	PreviousStepContent any
	// PreviousStepOutputs are the outputs of every step that ran, by name
	// (a step run twice, in a loop, holds its last output).
	PreviousStepOutputs map[string]*run.StepOutput
	// AdditionalData holds extra data for the step.
	AdditionalData map[string]any
	// SessionState is the workflow session's state; a Function step may
	// change it, and the change is kept with the session.
	SessionState map[string]any
	// Iteration is the loop iteration, from 1, inside a Loop; 0 elsewhere.
	Iteration int
	// Media of the workflow run's input.
	Images []run.Image
	Videos []run.Video
	Audio  []run.Audio
	Files  []run.File
}

// InputString is the workflow input as text.
func (in *StepInput) InputString() string { return contentText(in.Input) }

// PreviousContentString is the previous step's content as text.
func (in *StepInput) PreviousContentString() string { return contentText(in.PreviousStepContent) }

// StepOutput returns the output of the step named name, or nil.
func (in *StepInput) StepOutput(name string) *run.StepOutput { return in.PreviousStepOutputs[name] }

// UserInput returns the values a person gave the step when it asked for
// them (see [HumanReview.RequiresUserInput]).
func (in *StepInput) UserInput() map[string]any {
	values, _ := in.AdditionalData["user_input"].(map[string]any)
	return values
}

// Func is the work of a Function step.
type Func func(ctx context.Context, in *StepInput) (*run.StepOutput, error)

// Predicate decides a Condition's branch or a Loop's end: a Go func
// ([When]) or a CEL expression ([CEL]).
type Predicate struct {
	fn   func(ctx context.Context, in *StepInput) (bool, error)
	expr string
	prog *expression
}

// When is a predicate written in Go.
func When(fn func(ctx context.Context, in *StepInput) (bool, error)) Predicate {
	return Predicate{fn: fn}
}

// CEL is a predicate written as a CEL expression yielding a bool. It sees
// input (the workflow's input), previous_step_content, step_outputs (each
// step's content by name), session_state, additional_data and, in a loop,
// iteration (from 1). Example: previous_step_content.contains("ok").
func CEL(expr string) Predicate { return Predicate{expr: expr} }

func (p Predicate) set() bool { return p.fn != nil || p.expr != "" }

// eval decides.
func (p Predicate) eval(ctx context.Context, in *StepInput) (bool, error) {
	if p.fn != nil {
		return p.fn(ctx, in)
	}
	return p.prog.evalBool(ctx, in)
}

// Selector picks a Router's choices by name: a Go func ([Choose]) or a CEL
// expression ([RouteCEL]). A router whose HumanReview asks for user input
// lets a person choose instead.
type Selector struct {
	fn   func(ctx context.Context, in *StepInput) ([]string, error)
	expr string
	prog *expression
}

// Choose is a selector written in Go: it returns the names of the choices
// to run, in the order to run them.
func Choose(fn func(ctx context.Context, in *StepInput) ([]string, error)) Selector {
	return Selector{fn: fn}
}

// RouteCEL is a selector written as a CEL expression yielding a choice's
// name or a list of names, e.g. input.contains("tech") ? "tech" : "general".
func RouteCEL(expr string) Selector { return Selector{expr: expr} }

func (s Selector) set() bool { return s.fn != nil || s.expr != "" }

func (s Selector) eval(ctx context.Context, in *StepInput) ([]string, error) {
	if s.fn != nil {
		return s.fn(ctx, in)
	}
	return s.prog.evalRoute(ctx, in)
}

// The actions of a [HumanReview].
const (
	// OnRejectSkip skips a rejected step (the default).
	OnRejectSkip = "skip"
	// OnRejectCancel cancels the workflow run.
	OnRejectCancel = "cancel"
	// OnRejectElse runs a Condition's else branch.
	OnRejectElse = "else"
	// OnRejectRetry runs a step whose output was rejected again, with the
	// reviewer's feedback.
	OnRejectRetry = "retry"

	// OnErrorFail fails the workflow when the step fails (the default of a
	// step without a review).
	OnErrorFail = "fail"
	// OnErrorSkip skips a failed step.
	OnErrorSkip = "skip"
	// OnErrorPause pauses the workflow for a person to retry or skip it.
	OnErrorPause = "pause"

	// OnTimeoutCancel cancels a workflow whose review timed out (the
	// default); OnTimeoutSkip skips the step; OnTimeoutApprove approves it.
	OnTimeoutCancel  = "cancel"
	OnTimeoutSkip    = "skip"
	OnTimeoutApprove = "approve"
)

// HumanReview asks a person about a step (Agno's HumanReview): to confirm
// it before it runs, to give it input, to review its output, to review
// each loop iteration, or to choose a router's route.
type HumanReview struct {
	// RequiresConfirmation pauses before the step runs (Step, Loop,
	// Router, Condition, Steps).
	RequiresConfirmation bool
	ConfirmationMessage  string
	// RequiresUserInput pauses for values before the step runs (Step); on
	// a Router it lets the person choose the route.
	RequiresUserInput bool
	UserInputMessage  string
	UserInputSchema   []run.UserInputField
	// AllowMultipleSelections lets a person choose several routes.
	AllowMultipleSelections bool
	// RequiresOutputReview pauses after the step ran for its output to be
	// approved, edited or rejected (Step, Router).
	RequiresOutputReview bool
	OutputReviewMessage  string
	// RequiresIterationReview pauses after each loop iteration (Loop).
	RequiresIterationReview bool
	IterationReviewMessage  string
	// OnReject is skip (default), cancel, else (Condition) or retry (an
	// output review).
	OnReject string
	// OnError is fail, skip (default) or pause.
	OnError string
	// MaxRetries bounds retries after rejected output reviews (default 3).
	MaxRetries int
	// TimeoutSeconds, when set, gives the person this long; then OnTimeout
	// (cancel, skip or approve) applies when the run is continued.
	TimeoutSeconds int
	OnTimeout      string
}

func (h *HumanReview) applyDefaults() {
	if h.OnReject == "" {
		h.OnReject = OnRejectSkip
	}
	if h.OnError == "" {
		h.OnError = OnErrorSkip
	}
	if h.MaxRetries == 0 {
		h.MaxRetries = 3
	}
	if h.OnTimeout == "" {
		h.OnTimeout = OnTimeoutCancel
	}
}

// check reports what a step of type kind cannot have.
func (h *HumanReview) check(kind StepType) error {
	var errs []error
	bad := func(field string, allowed ...StepType) {
		for _, k := range allowed {
			if k == kind {
				return
			}
		}
		errs = append(errs, fmt.Errorf("%s is not available on a %s step", field, kind))
	}
	if h.RequiresConfirmation {
		bad("requires_confirmation", TypeStep, TypeFunction, TypeLoop, TypeRouter, TypeCondition, TypeSteps)
	}
	if h.RequiresUserInput {
		bad("requires_user_input", TypeStep, TypeFunction, TypeRouter)
	}
	if h.RequiresOutputReview {
		bad("requires_output_review", TypeStep, TypeFunction, TypeRouter)
	}
	if h.RequiresIterationReview {
		bad("requires_iteration_review", TypeLoop)
	}
	if h.RequiresOutputReview && h.RequiresIterationReview {
		errs = append(errs, errors.New("requires_output_review and requires_iteration_review exclude each other"))
	}
	switch h.OnReject {
	case OnRejectSkip, OnRejectCancel, OnRejectRetry:
	case OnRejectElse:
		if kind != TypeCondition {
			errs = append(errs, errors.New("on_reject else is only for a Condition"))
		}
	default:
		errs = append(errs, fmt.Errorf("on_reject %q is not one of skip, cancel, else, retry", h.OnReject))
	}
	if h.OnError != OnErrorFail && h.OnError != OnErrorSkip && h.OnError != OnErrorPause {
		errs = append(errs, fmt.Errorf("on_error %q is not one of fail, skip, pause", h.OnError))
	}
	if h.OnTimeout != OnTimeoutCancel && h.OnTimeout != OnTimeoutSkip && h.OnTimeout != OnTimeoutApprove {
		errs = append(errs, fmt.Errorf("on_timeout %q is not one of cancel, skip, approve", h.OnTimeout))
	}
	if h.MaxRetries < 0 || h.TimeoutSeconds < 0 {
		errs = append(errs, errors.New("max_retries and timeout must not be negative"))
	}
	for _, f := range h.UserInputSchema {
		if f.Name == "" {
			errs = append(errs, errors.New("a user_input_schema field has no name"))
		}
		switch f.FieldType {
		case "", "str", "int", "float", "bool", "list", "dict":
		default:
			errs = append(errs, fmt.Errorf("user_input_schema field %q: field_type %q is not one of str, int, float, bool, list, dict", f.Name, f.FieldType))
		}
	}
	return errors.Join(errs...)
}

// toDict is the review as a step dict shows it.
func (h *HumanReview) toDict() map[string]any {
	return map[string]any{
		"requires_confirmation": h.RequiresConfirmation, "confirmation_message": nilIfEmpty(h.ConfirmationMessage),
		"requires_user_input": h.RequiresUserInput, "user_input_message": nilIfEmpty(h.UserInputMessage),
		"user_input_schema": h.UserInputSchema, "requires_output_review": h.RequiresOutputReview,
		"output_review_message": nilIfEmpty(h.OutputReviewMessage), "requires_iteration_review": h.RequiresIterationReview,
		"iteration_review_message": nilIfEmpty(h.IterationReviewMessage), "on_reject": h.OnReject, "on_error": h.OnError,
		"max_retries": h.MaxRetries, "timeout": nilIfZero(h.TimeoutSeconds), "on_timeout": h.OnTimeout,
	}
}

// Node is one step of a workflow, of any [StepType]; build it with
// [Function], [Step], [Steps], [Loop], [Parallel], [Condition] or [Router]
// and tune it with its methods. A node belongs to one workflow.
type Node struct {
	kind        StepType
	name        string
	description string
	id          string

	runner run.Runner // Step
	fn     Func       // Function

	children  []*Node   // Steps, the Loop's body, Parallel's branches, Condition's if branch, Router's choices
	otherwise []*Node   // Condition's else branch
	cond      Predicate // Condition; a Loop's end condition
	selector  Selector  // Router

	maxIterations  int // Loop
	maxConcurrency int // Parallel

	maxRetries     int
	skipOnFailure  bool
	addHistory     bool
	numHistoryRuns int
	review         *HumanReview
}

// Function is a step that runs fn.
func Function(name string, fn Func) *Node { return &Node{kind: TypeFunction, name: name, fn: fn} }

// Step is a step that runs r — an agent, a team, an external agent or
// another workflow — on the step's input, as a child run of the workflow's.
func Step(name string, r run.Runner) *Node { return &Node{kind: TypeStep, name: name, runner: r} }

// Steps runs steps one after the other, as one step.
func Steps(name string, steps ...*Node) *Node {
	return &Node{kind: TypeSteps, name: name, children: steps}
}

// DefaultMaxIterations bounds a Loop that names no bound.
const DefaultMaxIterations = 3

// Loop runs steps again and again: until until holds after an iteration
// (when set), at most maxIterations times (0: [DefaultMaxIterations]).
func Loop(name string, maxIterations int, until Predicate, steps ...*Node) *Node {
	return &Node{kind: TypeLoop, name: name, children: steps, cond: until, maxIterations: maxIterations}
}

// DefaultMaxConcurrency bounds how many branches of a Parallel run at once
// unless it says otherwise.
const DefaultMaxConcurrency = 8

// Parallel runs steps at the same time, each on the same input; their
// outputs are merged in declaration order.
func Parallel(name string, steps ...*Node) *Node {
	return &Node{kind: TypeParallel, name: name, children: steps}
}

// Condition runs steps when cond holds, and the steps given to
// [Node.Else] when it does not.
func Condition(name string, cond Predicate, steps ...*Node) *Node {
	return &Node{kind: TypeCondition, name: name, cond: cond, children: steps}
}

// Router runs the choices its selector picks, by name, one after the
// other.
func Router(name string, selector Selector, choices ...*Node) *Node {
	return &Node{kind: TypeRouter, name: name, selector: selector, children: choices}
}

// Else sets a Condition's else branch.
func (n *Node) Else(steps ...*Node) *Node { n.otherwise = steps; return n }

// Describe sets the step's description.
func (n *Node) Describe(description string) *Node { n.description = description; return n }

// Retries lets a failed Step or Function run again up to retries times.
func (n *Node) Retries(retries int) *Node { n.maxRetries = retries; return n }

// SkipOnFailure lets the workflow go on past the step when it fails.
func (n *Node) SkipOnFailure() *Node { n.skipOnFailure = true; return n }

// WithHistory gives a Step's runner the workflow's earlier runs in the
// session (their inputs and answers, the last numRuns of them; 0 means 3).
func (n *Node) WithHistory(numRuns int) *Node {
	n.addHistory, n.numHistoryRuns = true, numRuns
	return n
}

// MaxConcurrency bounds how many branches of a Parallel run at once.
func (n *Node) MaxConcurrency(limit int) *Node { n.maxConcurrency = limit; return n }

// Review asks a person about the step (see [HumanReview]).
func (n *Node) Review(review HumanReview) *Node {
	review.applyDefaults()
	n.review = &review
	return n
}

// Name is the step's name.
func (n *Node) Name() string { return n.name }

// Type is the step's type.
func (n *Node) Type() StepType { return n.kind }

// ID is the step's id, fixed by its place in its workflow.
func (n *Node) ID() string { return n.id }

// Runner is a Step's runner; nil for other types.
func (n *Node) Runner() run.Runner { return n.runner }

// Children are a composite step's steps: Steps', the Loop's body,
// Parallel's branches, a Condition's if branch, a Router's choices.
func (n *Node) Children() []*Node { return n.children }

// prepare checks the node and its children, compiles their expressions and
// gives each its id (from the workflow's id and its path); seen collects
// the names.
func (n *Node) prepare(workflowID, path string, seen map[string]string) error {
	var errs []error
	where := fmt.Sprintf("step %q (%s)", n.name, path)
	if n.name == "" {
		where = fmt.Sprintf("step %s", path)
		errs = append(errs, errors.New("has no name"))
	} else if other, dup := seen[n.name]; dup {
		errs = append(errs, fmt.Errorf("has the name of step %s: steps are found by name", other))
	} else {
		seen[n.name] = path
	}
	n.id = stableID(workflowID + "/" + path + "/" + n.name)
	switch n.kind {
	case TypeFunction:
		if n.fn == nil {
			errs = append(errs, errors.New("has no function"))
		}
	case TypeStep:
		if n.runner == nil {
			errs = append(errs, errors.New("has no agent, team or workflow to run"))
		}
	case TypeLoop:
		if n.maxIterations < 0 {
			errs = append(errs, fmt.Errorf("max_iterations %d must not be negative", n.maxIterations))
		}
		if n.maxIterations == 0 {
			n.maxIterations = DefaultMaxIterations
		}
	case TypeParallel:
		if n.maxConcurrency < 0 {
			errs = append(errs, fmt.Errorf("max_concurrency %d must not be negative", n.maxConcurrency))
		}
		if n.maxConcurrency == 0 {
			n.maxConcurrency = DefaultMaxConcurrency
		}
	case TypeCondition:
		if !n.cond.set() {
			errs = append(errs, errors.New("has no condition"))
		}
	case TypeRouter:
		if !n.selector.set() && (n.review == nil || !n.review.RequiresUserInput) {
			errs = append(errs, errors.New("has no selector: give it a function, a CEL expression, or a human review with requires_user_input"))
		}
	}
	switch n.kind {
	case TypeSteps, TypeLoop, TypeParallel, TypeCondition, TypeRouter:
		if len(n.children) == 0 {
			errs = append(errs, errors.New("has no steps"))
		}
	}
	if n.cond.expr != "" && n.cond.fn == nil {
		prog, err := compileCEL(n.cond.expr, "bool")
		if err != nil {
			errs = append(errs, err)
		}
		n.cond.prog = prog
	}
	if n.selector.expr != "" && n.selector.fn == nil {
		prog, err := compileCEL(n.selector.expr, "route")
		if err != nil {
			errs = append(errs, err)
		}
		n.selector.prog = prog
	}
	if n.maxRetries < 0 {
		errs = append(errs, fmt.Errorf("max_retries %d must not be negative", n.maxRetries))
	}
	if leaf := n.kind == TypeStep || n.kind == TypeFunction; !leaf && (n.maxRetries != 0 || n.skipOnFailure || n.addHistory) {
		errs = append(errs, fmt.Errorf("max_retries, skip_on_failure and add_workflow_history are for Step and Function steps, not a %s: set them on its steps", n.kind))
	}
	if n.review != nil {
		if err := n.review.check(n.kind); err != nil {
			errs = append(errs, err)
		}
	}
	for i, child := range n.children {
		if child == nil {
			errs = append(errs, fmt.Errorf("step %d is nil", i))
			continue
		}
		errs = append(errs, child.prepare(workflowID, fmt.Sprintf("%s.%d", path, i), seen))
	}
	for i, child := range n.otherwise {
		if child == nil {
			errs = append(errs, fmt.Errorf("else step %d is nil", i))
			continue
		}
		errs = append(errs, child.prepare(workflowID, fmt.Sprintf("%s.else%d", path, i), seen))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// toDict is the step as GET /workflows/{id} shows it (Agno's step dicts).
func (n *Node) toDict() map[string]any {
	d := map[string]any{"type": string(n.kind), "name": n.name, "step_id": n.id, "description": nilIfEmpty(n.description)}
	switch n.kind {
	case TypeStep, TypeFunction:
		d["max_retries"] = n.maxRetries
		d["skip_on_failure"] = n.skipOnFailure
		d["strict_input_validation"] = false
		d["add_workflow_history"] = n.addHistory
		d["num_history_runs"] = historyRuns(n.numHistoryRuns)
		if n.runner != nil {
			d[string(n.runner.Kind())+"_id"] = n.runner.ID()
			if n.runner.Kind() == "" {
				d["agent_id"] = n.runner.ID()
			}
		}
	case TypeLoop:
		d["max_iterations"] = n.maxIterations
		if n.cond.expr != "" {
			d["end_condition"] = n.cond.expr
		}
	case TypeParallel:
		d["max_concurrency"] = n.maxConcurrency
	case TypeCondition:
		if n.cond.expr != "" {
			d["evaluator"] = n.cond.expr
		}
		d["else_steps"] = dicts(n.otherwise)
	case TypeRouter:
		if n.selector.expr != "" {
			d["selector"] = n.selector.expr
		}
		d["choices"] = dicts(n.children)
	}
	switch n.kind {
	case TypeSteps, TypeLoop, TypeParallel, TypeCondition:
		d["steps"] = dicts(n.children)
	}
	if n.review != nil {
		d["human_review"] = n.review.toDict()
	}
	return d
}

func dicts(nodes []*Node) []map[string]any {
	out := make([]map[string]any, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.toDict())
	}
	return out
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nilIfZero(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// historyRuns is a step's number of history runs, or its default.
func historyRuns(n int) int {
	if n <= 0 {
		return 3
	}
	return n
}

// contentText renders content as text: a string as is, anything else as
// JSON.
func contentText(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return (&run.Output{Content: v}).ContentString()
}

// findChoice returns the choice named name.
func findChoice(choices []*Node, name string) (*Node, bool) {
	for _, c := range choices {
		if strings.EqualFold(c.name, name) {
			return c, true
		}
	}
	return nil, false
}
