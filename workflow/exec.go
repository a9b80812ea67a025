package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// The kinds of a workflow's pause (pause_kind).
const (
	pauseStep     = "step"
	pauseExecutor = "executor"
)

// pauseError stops a workflow's execution where a person must answer.
type pauseError struct {
	req  *run.StepRequirement
	kind string
}

func (p *pauseError) Error() string { return "workflow paused at step " + p.req.StepName }

// errRejected is a run a reviewer cancelled (on_reject or on_timeout
// cancel): the run ends CANCELLED.
var errRejected = fmt.Errorf("cancelled by the step's review: %w", context.Canceled)

// turn is a workflow run's work for the run host.
type turn struct {
	w *Workflow
	// resume is set when the run continues a paused one.
	resume *resumePlan
}

// resumePlan is where a continued run picks up and what the person
// answered.
type resumePlan struct {
	start   int
	answers map[string]*run.StepRequirement
}

// Attempt implements [runhost.Turn]: it runs the top-level steps from the
// first not yet done.
func (t *turn) Attempt(ctx context.Context, r *runhost.Run, _ int) error {
	names, types := make([]string, len(t.w.cfg.Steps)), make([]string, len(t.w.cfg.Steps))
	for i, n := range t.w.cfg.Steps {
		names[i], types[i] = n.name, string(n.kind)
	}
	observe.Annotate(ctx, attribute.Int("agno.workflow.steps_count", len(names)), attribute.StringSlice("agno.workflow.steps", names),
		attribute.StringSlice("agno.workflow.step_types", types), attribute.String("agno.workflow.description", t.w.cfg.Description))
	e := newEngine(ctx, t.w, r, t.resume)
	out := r.Output()
	start := 0
	if t.resume != nil {
		start = min(t.resume.start, len(out.StepResults))
		out.StepResults = out.StepResults[:start]
	} else {
		out.StepResults = nil
	}
	for _, res := range out.StepResults {
		e.remember(res)
	}
	out.PausedStepIndex, out.PausedStepName, out.PauseKind, out.StepRequirements = nil, "", "", nil
	for i := start; i < len(t.w.cfg.Steps); i++ {
		n := t.w.cfg.Steps[i]
		res, err := e.run(ctx, n, position{path: strconv.Itoa(i), index: []int{i}}, e.input())
		var pause *pauseError
		if errors.As(err, &pause) {
			r.Lock()
			out.PausedStepIndex, out.PausedStepName, out.PauseKind = new(i), n.name, pause.kind
			out.StepRequirements = []*run.StepRequirement{pause.req}
			out.WorkflowProgress = e.progressSnapshot()
			r.Unlock()
			return fmt.Errorf("%w: %w", runhost.ErrPaused, err)
		}
		if err != nil {
			return err
		}
		e.clearProgress()
		if res == nil {
			continue
		}
		r.Lock()
		out.StepResults = append(out.StepResults, res)
		r.Unlock()
		if err := r.SaveProgress(ctx); err != nil {
			return err
		}
		if res.Stop {
			break
		}
	}
	r.Lock()
	defer r.Unlock()
	out.WorkflowProgress = nil
	out.SessionState = e.state
	if r.Session() != nil && e.state != nil {
		r.Session().MergeState(nil, e.state)
	}
	if last := e.last; last != nil {
		out.Content = last.Content
		out.Images, out.Videos, out.Audio, out.Files = last.Images, last.Videos, last.Audio, last.Files
	}
	out.ContentType = "str"
	if _, text := out.Content.(string); !text && out.Content != nil {
		out.ContentType = "dict"
	}
	return nil
}

// position is where a step runs: its path among the workflow's steps (a
// key for its memo and answers) and its step_index.
type position struct {
	path  string
	index []int
}

func (p position) child(i int, tag string) position {
	return position{path: p.path + "." + tag + strconv.Itoa(i), index: append(slices.Clone(p.index), i)}
}

// stepIndex is the step_index events carry: an int at the top level, the
// list of indexes below it.
func (p position) stepIndex() any {
	if len(p.index) == 1 {
		return p.index[0]
	}
	return slices.Clone(p.index)
}

// engine executes one attempt of a workflow run.
type engine struct {
	w       *Workflow
	r       *runhost.Run
	out     *run.Output
	journal run.Journal
	// branch is set inside a Parallel branch, whose steps are one journal
	// step.
	branch bool

	// mu guards what follows; Parallel branches share it.
	mu       *sync.Mutex
	answers  map[string]*run.StepRequirement // resolved requirements, by step id
	progress map[string]*run.StepOutput      // what ran inside the top-level step in flight, by key
	outputs  map[string]*run.StepOutput      // every output by step name
	last     *run.StepOutput
	state    map[string]any
	// history is the session's earlier workflow runs as steps that ask for
	// them see them, read once per run and shared with Parallel branches.
	history *historyCache
}

func newEngine(ctx context.Context, w *Workflow, r *runhost.Run, resume *resumePlan) *engine {
	out := r.Output()
	e := &engine{w: w, r: r, out: out, mu: new(sync.Mutex), history: &historyCache{}, outputs: map[string]*run.StepOutput{}, progress: map[string]*run.StepOutput{},
		answers: map[string]*run.StepRequirement{}, state: out.SessionState}
	e.journal, _ = run.JournalFrom(ctx)
	if resume != nil {
		maps.Copy(e.answers, resume.answers)
		maps.Copy(e.progress, out.WorkflowProgress)
	}
	return e
}

// input is a new step input from what ran so far.
func (e *engine) input() *StepInput {
	e.mu.Lock()
	defer e.mu.Unlock()
	in := &StepInput{PreviousStepOutputs: maps.Clone(e.outputs), SessionState: e.state, AdditionalData: map[string]any{}}
	if src := e.out.Input; src != nil {
		in.Input = src.InputContent
		in.Images, in.Videos, in.Audio, in.Files = src.Images, src.Videos, src.Audios, src.Files
	}
	if e.last != nil {
		in.PreviousStepContent = e.last.Content
	}
	return in
}

// lastOutput is the output of the step that ran last.
func (e *engine) lastOutput() *run.StepOutput {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

// fork is a copy of a Parallel branch's engine for one branch: its steps
// see what ran before the Parallel and before them in the branch.
func (e *engine) fork() *engine {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := &engine{w: e.w, r: e.r, out: e.out, journal: e.journal, branch: e.branch, mu: e.mu, answers: e.answers,
		progress: e.progress, outputs: e.outputs, last: e.last, state: e.state, history: e.history}
	return c
}

// remember makes res (and the steps inside it) the outputs later steps
// see.
func (e *engine) remember(res *run.StepOutput) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rememberLocked(res)
	e.last = res
}

func (e *engine) rememberLocked(res *run.StepOutput) {
	for _, inner := range res.Steps {
		e.rememberLocked(inner)
	}
	if res.StepName != "" {
		e.outputs[res.StepName] = res
	}
}

// memo returns what the step at key produced before the run paused.
func (e *engine) memo(key string) (*run.StepOutput, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	res, ok := e.progress[key]
	return res, ok
}

func (e *engine) setMemo(key string, res *run.StepOutput) {
	e.mu.Lock()
	e.progress[key] = res
	e.mu.Unlock()
}

func (e *engine) progressSnapshot() map[string]*run.StepOutput {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.progress) == 0 {
		return nil
	}
	return maps.Clone(e.progress)
}

func (e *engine) clearProgress() {
	e.mu.Lock()
	clear(e.progress)
	e.mu.Unlock()
}

// take returns, once, the answer a person gave the step n.
func (e *engine) take(n *Node) *run.StepRequirement {
	e.mu.Lock()
	defer e.mu.Unlock()
	ans := e.answers[n.id]
	delete(e.answers, n.id)
	return ans
}

// event builds a step event of n at p.
func event(name string, n *Node, p position) *run.WorkflowEvent {
	return &run.WorkflowEvent{Name: name, BaseEvent: run.BaseEvent{StepID: n.id, StepName: n.name, StepIndex: p.stepIndex()}}
}

// emit sends a step event in the run's stream.
func (e *engine) emit(ev *run.WorkflowEvent) { e.r.Emit(ev) }

// run executes step n at p on in. It returns the step's output, nil for
// a step that was skipped, or a *pauseError.
func (e *engine) run(ctx context.Context, n *Node, p position, in *StepInput) (*run.StepOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if res, ok := e.memo("done:" + p.path); ok {
		e.remember(res)
		return res, nil
	}
	var res *run.StepOutput
	var err error
	ctx, span := observe.StartStep(ctx, n.name, observe.KindChain, attribute.String(observe.AttrStepType, string(n.kind)),
		attribute.String("agno.workflow.step_path", p.path))
	defer func() { span.End(err) }()
	switch n.kind {
	case TypeFunction, TypeStep:
		res, err = e.leaf(ctx, n, p, in)
	case TypeSteps:
		res, err = e.sequence(ctx, n, p, in)
	case TypeLoop:
		res, err = e.loop(ctx, n, p, in)
	case TypeParallel:
		res, err = e.parallel(ctx, n, p, in)
	case TypeCondition:
		res, err = e.condition(ctx, n, p, in)
	case TypeRouter:
		res, err = e.router(ctx, n, p, in)
	default:
		err = fmt.Errorf("step %s: unknown step type %q", n.name, n.kind)
	}
	if err != nil || res == nil {
		return nil, err
	}
	if len(p.index) > 1 {
		e.setMemo("done:"+p.path, res)
	}
	e.remember(res)
	return res, nil
}

// gateOutcome is what a step's review before it runs decided.
type gateOutcome int

const (
	gateRun gateOutcome = iota
	gateSkip
	gateElse
)

// gate asks a person about n before it runs, when its review says so:
// confirmation, or user input (given to the step in additional_data).
func (e *engine) gate(ctx context.Context, n *Node, p position, in *StepInput) (gateOutcome, error) {
	h := n.review
	if h == nil || !(h.RequiresConfirmation || (h.RequiresUserInput && n.kind != TypeRouter)) {
		return gateRun, nil
	}
	key := "gate:" + p.path
	if decided, ok := e.memo(key); ok {
		return e.applyGate(n, in, decided)
	}
	ans := e.take(n)
	if ans == nil {
		req := e.requirement(n, p)
		req.RequiresConfirmation, req.ConfirmationMessage, req.OnReject = h.RequiresConfirmation, h.ConfirmationMessage, h.OnReject
		if h.RequiresUserInput {
			req.RequiresUserInput, req.UserInputMessage, req.UserInputSchema = true, h.UserInputMessage, slices.Clone(h.UserInputSchema)
		}
		name := run.EventStepPaused
		switch n.kind {
		case TypeCondition:
			name = run.EventConditionPaused
		case TypeRouter:
			name = run.EventRouterPaused
		}
		ev := event(name, n, p)
		ev.RequiresConfirmation, ev.ConfirmationMessage = new(h.RequiresConfirmation), h.ConfirmationMessage
		ev.RequiresUserInput, ev.UserInputMessage, ev.UserInputSchema = new(req.RequiresUserInput), h.UserInputMessage, req.UserInputSchema
		e.emit(ev)
		return gateRun, &pauseError{req: req, kind: pauseStep}
	}
	decided := &run.StepOutput{StepName: n.name, Success: true, Content: map[string]any{"confirmed": ans.Confirmed == nil || *ans.Confirmed, "user_input": ans.UserInput}}
	if e.timedOut(ans) {
		switch h.OnTimeout {
		case OnTimeoutCancel:
			return gateRun, errRejected
		case OnTimeoutSkip:
			decided.Content = map[string]any{"confirmed": false}
			e.setMemo(key, decided)
			return gateSkip, nil
		}
		decided.Content = map[string]any{"confirmed": true, "user_input": ans.UserInput}
	}
	e.setMemo(key, decided)
	e.emit(event(run.EventStepContinued, n, p))
	return e.applyGate(n, in, decided)
}

// applyGate acts on a recorded gate decision.
func (e *engine) applyGate(n *Node, in *StepInput, decided *run.StepOutput) (gateOutcome, error) {
	d, _ := decided.Content.(map[string]any)
	if confirmed, _ := d["confirmed"].(bool); !confirmed {
		switch n.review.OnReject {
		case OnRejectCancel:
			return gateRun, errRejected
		case OnRejectElse:
			return gateElse, nil
		}
		return gateSkip, nil
	}
	if values, ok := d["user_input"].(map[string]any); ok && len(values) > 0 {
		in.AdditionalData["user_input"] = values
	}
	return gateRun, nil
}

// timedOut reports whether a requirement was answered after its timeout.
func (e *engine) timedOut(ans *run.StepRequirement) bool {
	if ans.TimeoutAt == "" {
		return false
	}
	at, err := time.Parse(time.RFC3339, ans.TimeoutAt)
	return err == nil && e.w.cfg.Now().After(at)
}

// withConfirmation marks a StepPaused event as asking for a confirmation.
func withConfirmation(ev *run.WorkflowEvent, message string) *run.WorkflowEvent {
	ev.RequiresConfirmation, ev.ConfirmationMessage = new(true), message
	return ev
}

// requirement starts the requirement a pause at n names.
func (e *engine) requirement(n *Node, p position) *run.StepRequirement {
	req := &run.StepRequirement{StepID: n.id, StepName: n.name, StepIndex: p.stepIndex(), StepType: string(n.kind)}
	if h := n.review; h != nil {
		req.MaxRetries = new(h.MaxRetries)
		req.OnTimeout = h.OnTimeout
		if h.TimeoutSeconds > 0 {
			req.TimeoutAt = e.w.cfg.Now().Add(time.Duration(h.TimeoutSeconds) * time.Second).UTC().Format(time.RFC3339)
		}
	}
	return req
}

// leaf runs a Step or Function: its review before, its executor
// (retried), a pause of its agent for its own requirements, and the
// review of its output.
func (e *engine) leaf(ctx context.Context, n *Node, p position, in *StepInput) (*run.StepOutput, error) {
	var res *run.StepOutput
	feedback, retries := "", 0
	if pending, ok := e.memo("review:" + p.path); ok {
		res = pending
	} else if failed, ok := e.memo("failed:" + p.path); ok {
		res = failed
	} else if paused, ok := e.memo("executor:" + p.path); ok {
		var err error
		if res, err = e.continueExecutor(ctx, n, p, paused); err != nil {
			return nil, err
		}
	} else {
		outcome, err := e.gate(ctx, n, p, in)
		if err != nil || outcome != gateRun {
			return nil, err
		}
	}
	for {
		if res == nil {
			if e.r.Active() {
				e.emit(event(run.EventStepStarted, n, p))
			}
			var err error
			if res, err = e.execute(ctx, n, p, in, feedback, retries); err != nil {
				return nil, err
			}
		}
		if res.IsPaused {
			return nil, e.executorPause(n, p, res)
		}
		h := n.review
		if !res.Success && h != nil && h.OnError == OnErrorPause {
			ans := e.take(n)
			if ans == nil {
				e.setMemo("failed:"+p.path, res)
				req := e.requirement(n, p)
				req.RequiresConfirmation, req.StepOutput, req.IsPostExecution, req.RetryCount = true, res, true, retries
				req.ConfirmationMessage = fmt.Sprintf("Step %s failed: %s. Confirm to run it again, reject to skip it.", n.name, res.Error)
				ev := event(run.EventStepError, n, p)
				ev.Error = res.Error
				e.emit(ev)
				e.emit(withConfirmation(event(run.EventStepPaused, n, p), req.ConfirmationMessage))
				return nil, &pauseError{req: req, kind: pauseStep}
			}
			e.mu.Lock()
			delete(e.progress, "failed:"+p.path)
			e.mu.Unlock()
			e.emit(event(run.EventStepContinued, n, p))
			if ans.Confirmed != nil && *ans.Confirmed {
				retries = ans.RetryCount + 1
				res = nil
				continue
			}
			return nil, nil
		}
		if !res.Success {
			return e.failed(ctx, n, p, res)
		}
		if h == nil || !h.RequiresOutputReview {
			break
		}
		ans := e.take(n)
		if ans == nil {
			res.Steps = nil
			e.setMemo("review:"+p.path, res)
			req := e.requirement(n, p)
			req.RequiresOutputReview, req.OutputReviewMessage, req.IsPostExecution = true, h.OutputReviewMessage, true
			req.StepOutput, req.OnReject, req.RetryCount = res, h.OnReject, retries
			ev := event(run.EventStepOutputReview, n, p)
			ev.RequiresOutputReview, ev.OutputReviewMessage, ev.StepOutput = new(true), h.OutputReviewMessage, res
			e.emit(ev)
			return nil, &pauseError{req: req, kind: pauseStep}
		}
		e.mu.Lock()
		delete(e.progress, "review:"+p.path)
		e.mu.Unlock()
		e.emit(event(run.EventStepContinued, n, p))
		approved := ans.Confirmed != nil && *ans.Confirmed
		if e.timedOut(ans) {
			switch h.OnTimeout {
			case OnTimeoutCancel:
				return nil, errRejected
			case OnTimeoutSkip:
				return nil, nil
			}
			approved = true
		}
		if approved {
			if ans.EditedOutput != nil {
				res.Content = ans.EditedOutput
			}
			break
		}
		switch h.OnReject {
		case OnRejectCancel:
			return nil, errRejected
		case OnRejectRetry:
			// The count the requirement kept: the run may have paused and
			// continued since the step last ran.
			if retries = ans.RetryCount; retries < h.MaxRetries {
				retries++
				feedback, res = ans.RejectionFeedback, nil
				continue
			}
		}
		return nil, nil // rejected: skipped
	}
	if e.r.Active() {
		ev := event(run.EventStepCompleted, n, p)
		ev.Content, ev.ContentType, ev.StepResponse = res.Content, contentType(res.Content), res
		e.emit(ev)
	}
	return res, nil
}

// failed settles a step that failed: skipped when it says so, paused for a
// person when its review says so, else the workflow's failure.
func (e *engine) failed(_ context.Context, n *Node, p position, res *run.StepOutput) (*run.StepOutput, error) {
	ev := event(run.EventStepError, n, p)
	ev.Error = res.Error
	e.emit(ev)
	if n.skipOnFailure || (n.review != nil && n.review.OnError == OnErrorSkip) {
		return res, nil
	}
	return nil, fmt.Errorf("step %s failed: %s", n.name, res.Error)
}

// execute runs a Step's executor or a Function, trying again up to the
// step's max_retries, as one journaled step: run again after a crash, a
// completed step's output comes from the journal.
func (e *engine) execute(ctx context.Context, n *Node, p position, in *StepInput, feedback string, review int) (*run.StepOutput, error) {
	key := p.path + "#" + strconv.Itoa(review)
	return e.journaled(ctx, "workflow step "+n.name, func(ctx context.Context) (*run.StepOutput, error) {
		var res *run.StepOutput
		for attempt := 0; ; attempt++ {
			res = e.attempt(ctx, n, p, in, feedback, key+"."+strconv.Itoa(attempt))
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if res.Success || res.IsPaused || attempt >= n.maxRetries {
				return res, nil
			}
		}
	})
}

// journaled runs work as a journal step when the run has a journal (and
// is not inside a Parallel branch, which is one step whole), its output
// recorded as JSON; without one it is called directly.
func (e *engine) journaled(ctx context.Context, name string, work func(ctx context.Context) (*run.StepOutput, error)) (*run.StepOutput, error) {
	if e.journal == nil || e.branch {
		return work(ctx)
	}
	data, err := e.journal.Step(ctx, name, func(ctx context.Context) ([]byte, error) {
		res, err := work(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	})
	if err != nil {
		return nil, err
	}
	var res run.StepOutput
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("%s: read its recorded output: %w", name, err)
	}
	return &res, nil
}

// step runs fn as a journal step when the run has a journal (see
// [engine.journaled]).
func (e *engine) step(ctx context.Context, name string, fn run.StepFunc) ([]byte, error) {
	if e.journal == nil || e.branch {
		return fn(ctx)
	}
	return e.journal.Step(ctx, name, fn)
}

// attempt runs a step's work once; a failure is an output with success
// false.
func (e *engine) attempt(ctx context.Context, n *Node, p position, in *StepInput, feedback, key string) *run.StepOutput {
	base := &run.StepOutput{StepName: n.name, StepID: n.id, StepType: string(n.kind), Success: true}
	if n.kind == TypeFunction {
		base.ExecutorType, base.ExecutorName = "function", n.name
		res, err := callFunc(ctx, n.fn, in)
		if err != nil {
			base.Success, base.Error = false, err.Error()
			return base
		}
		if res != nil {
			base.Content, base.Images, base.Videos, base.Audio, base.Files = res.Content, res.Images, res.Videos, res.Audio, res.Files
			base.Stop, base.Metrics = res.Stop, res.Metrics
			if res.Error != "" || (!res.Success && res.Content == nil) {
				base.Success, base.Error = false, res.Error
			}
		}
		return base
	}
	return e.runExecutor(ctx, n, p, in, feedback, key, base)
}

// callFunc runs a Function step, a panic in it a failure of the step.
func callFunc(ctx context.Context, fn Func, in *StepInput) (res *run.StepOutput, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("function panicked: %v", v)
		}
	}()
	return fn(ctx, in)
}

// runExecutor runs a Step's agent, team or workflow as a child run of the
// workflow's.
func (e *engine) runExecutor(ctx context.Context, n *Node, p position, in *StepInput, feedback, key string, base *run.StepOutput) *run.StepOutput {
	runner := n.runner
	base.ExecutorType, base.ExecutorName = executorType(runner), runner.Name()
	out := e.out
	childID := childRunID(ctx, out.RunID, key)
	cin := &run.Input{
		InputContent: e.message(ctx, n, in, feedback), SessionID: childSession(runner, out.SessionID), UserID: out.UserID,
		RunID: childID, ParentRunID: out.RunID, PersistOnStart: true,
		Images: in.Images, Videos: in.Videos, Audios: in.Audio, Files: in.Files,
	}
	// The child's own steps are not the workflow's: the step is, replayed
	// whole.
	return e.follow(run.WithJournal(ctx, nil), n, p, runner, childID, runner.Stream(run.WithJournal(ctx, nil), cin), base)
}

// continueExecutor goes on with a step whose agent or team paused, with
// the requirements a person resolved.
func (e *engine) continueExecutor(ctx context.Context, n *Node, p position, paused *run.StepOutput) (*run.StepOutput, error) {
	ans := e.take(n)
	if ans == nil || !ans.RequiresExecutorInput {
		return nil, fmt.Errorf("%w: step %s waits for its %s's requirements", run.ErrUnresolved, n.name, executorType(n.runner))
	}
	continuer, ok := n.runner.(run.Continuer)
	if !ok {
		return nil, fmt.Errorf("step %s: its %s cannot continue a paused run", n.name, executorType(n.runner))
	}
	ev := event(run.EventStepExecutorContinued, n, p)
	ev.ExecutorID, ev.ExecutorName, ev.ExecutorRunID, ev.ExecutorType = n.runner.ID(), n.runner.Name(), paused.StepRunID, executorType(n.runner)
	e.emit(ev)
	e.mu.Lock()
	delete(e.progress, "executor:"+p.path)
	e.mu.Unlock()
	req := &run.ContinueRequest{RunID: paused.StepRunID, UserID: e.out.UserID}
	for _, r := range ans.ExecutorRequirements {
		if r != nil && r.ToolExecution != nil {
			req.Tools = append(req.Tools, r.ToolExecution)
		}
	}
	return e.journaled(ctx, "workflow step "+n.name+" continued", func(ctx context.Context) (*run.StepOutput, error) {
		base := &run.StepOutput{StepName: n.name, StepID: n.id, StepType: string(n.kind), Success: true,
			ExecutorType: executorType(n.runner), ExecutorName: n.runner.Name()}
		res := e.follow(run.WithJournal(ctx, nil), n, p, n.runner, paused.StepRunID, continuer.Continue(run.WithJournal(ctx, nil), req), base)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return res, nil
	})
}

// executorPause pauses the workflow for the requirements of a step's agent
// or team.
func (e *engine) executorPause(n *Node, p position, res *run.StepOutput) error {
	var reqs []*run.Requirement
	if child := e.executorRun(res.StepRunID); child != nil {
		reqs = child.ActiveRequirements()
	}
	e.setMemo("executor:"+p.path, res)
	req := e.requirement(n, p)
	req.RequiresExecutorInput, req.ExecutorRequirements = true, reqs
	req.ExecutorID, req.ExecutorName, req.ExecutorRunID, req.ExecutorType = n.runner.ID(), n.runner.Name(), res.StepRunID, executorType(n.runner)
	req.ExecutorSessionID = childSession(n.runner, e.out.SessionID)
	ev := event(run.EventStepExecutorPaused, n, p)
	ev.ExecutorID, ev.ExecutorName, ev.ExecutorRunID, ev.ExecutorType, ev.ExecutorRequirements = req.ExecutorID, req.ExecutorName, req.ExecutorRunID, req.ExecutorType, reqs
	e.emit(ev)
	return &pauseError{req: req, kind: pauseExecutor}
}

// executorRun is the child run runID as the workflow keeps it.
func (e *engine) executorRun(runID string) *run.Output {
	e.r.Lock()
	defer e.r.Unlock()
	for _, child := range slices.Backward(e.out.StepExecutorRuns) {
		if child.RunID == runID {
			return child
		}
	}
	return nil
}

// follow passes a child run's events on in the workflow's stream, each
// stamped with the step it belongs to, and turns its end into the step's
// output.
func (e *engine) follow(ctx context.Context, n *Node, p position, runner run.Runner, childID string, events iter.Seq2[run.Event, error], base *run.StepOutput) *run.StepOutput {
	base.StepRunID = childID
	var final run.Event
	var startErr error
	for ev, err := range events {
		if err != nil {
			startErr = err
			break
		}
		if _, ok := run.FinalStatus(ev); ok && ev.Base().RunID == childID {
			final = ev
		}
		if e.w.streamExecutors() && e.r.Active() {
			e.r.Forward(e.stamp(ev, n, p))
		}
	}
	if ctx.Err() != nil {
		base.Success, base.Error = false, ctx.Err().Error()
		return base
	}
	e.keepExecutorRun(ctx, childID)
	switch ev := final.(type) {
	case *run.RunCompleted:
		base.Content, base.Metrics = ev.Content, ev.Metrics
		base.Images, base.Videos, base.Audio, base.Files = ev.Images, ev.Videos, ev.Audio, ev.Files
	case *run.RunError:
		base.Success, base.Error = false, fmt.Sprintf("%s %s failed: %s", executorType(runner), runner.ID(), ev.Content)
	case *run.RunCancelled:
		base.Success, base.Error = false, fmt.Sprintf("%s %s's run was cancelled", executorType(runner), runner.ID())
	case *run.RunPaused:
		if runner.Kind() == run.KindWorkflow {
			base.Success, base.Error = false, fmt.Sprintf("workflow %s paused for a person, which a nested workflow cannot: put the review on step %s", runner.ID(), n.name)
			break
		}
		base.IsPaused = true
	default:
		base.Success = false
		if startErr != nil {
			base.Error = fmt.Sprintf("%s %s could not start: %v", executorType(runner), runner.ID(), startErr)
		} else {
			base.Error = fmt.Sprintf("%s %s ended without a final event", executorType(runner), runner.ID())
		}
	}
	return base
}

// stamp marks an event of a step's child run with the step it belongs
// to: an agent's or a team's event gets the workflow's and the step's ids;
// one that has a workflow's already (a nested workflow's, or its agents')
// is one level deeper.
func (e *engine) stamp(ev run.Event, n *Node, p position) *run.MemberEvent {
	member := run.AsMember(ev)
	b := member.Base()
	nestedOwn := b.WorkflowID != "" && b.AgentID == "" && b.TeamID == ""
	if b.WorkflowRunID != "" || nestedOwn {
		b.NestedDepth++
		if b.ParentStepID == "" {
			b.ParentStepID = n.id
		}
		return member
	}
	b.WorkflowID, b.WorkflowRunID = e.out.WorkflowID, e.out.RunID
	b.StepID, b.StepName, b.StepIndex = n.id, n.name, p.stepIndex()
	return member
}

// keepExecutorRun adds the child run, as stored, to step_executor_runs.
func (e *engine) keepExecutorRun(ctx context.Context, childID string) {
	store := e.w.cfg.Store
	if store == nil {
		return
	}
	rec, err := store.GetRun(context.WithoutCancel(ctx), childID, e.out.UserID)
	if err != nil || rec.Run == nil {
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			e.w.cfg.Logger.WarnContext(ctx, "reading a step's run for step_executor_runs failed", "run_id", childID, "error", err)
		}
		return
	}
	child := rec.Run
	child.Events = nil
	e.r.Lock()
	defer e.r.Unlock()
	runs := slices.DeleteFunc(e.out.StepExecutorRuns, func(o *run.Output) bool { return o.RunID == childID })
	e.out.StepExecutorRuns = append(runs, child)
}

// message is what a step's runner is given: the previous step's content,
// or the workflow's input for the first step; with the person's input,
// a reviewer's feedback and the workflow's history when the step asks.
func (e *engine) message(ctx context.Context, n *Node, in *StepInput, feedback string) string {
	var b strings.Builder
	if n.addHistory || e.w.cfg.AddWorkflowHistory {
		num := n.numHistoryRuns
		if !n.addHistory {
			num = e.w.cfg.NumHistoryRuns
		}
		if h := e.workflowHistory(ctx, historyRuns(num)); h != "" {
			b.WriteString(h)
			b.WriteString("\n\n")
		}
	}
	msg := in.PreviousContentString()
	if msg == "" {
		msg = in.InputString()
	}
	b.WriteString(msg)
	if values := in.UserInput(); len(values) > 0 {
		data, _ := json.Marshal(values)
		b.WriteString("\n\nUser input: ")
		b.Write(data)
	}
	if feedback != "" {
		b.WriteString("\n\nA reviewer rejected the previous answer: ")
		b.WriteString(feedback)
	}
	return b.String()
}

// historyCache keeps the rendered workflow history of a run, by the
// number of earlier runs asked for.
type historyCache struct {
	mu    sync.Mutex
	texts map[int]string
}

// workflowHistory renders the session's earlier workflow runs, the last
// num of them, as their inputs and answers; read from the store once per
// run (and num), outside the engine's lock.
func (e *engine) workflowHistory(ctx context.Context, num int) string {
	c := e.history
	c.mu.Lock()
	defer c.mu.Unlock()
	if text, ok := c.texts[num]; ok {
		return text
	}
	text := e.readHistory(ctx, num)
	if c.texts == nil {
		c.texts = map[int]string{}
	}
	c.texts[num] = text
	return text
}

// readHistory reads and renders the workflow history.
func (e *engine) readHistory(ctx context.Context, num int) string {
	store := e.w.cfg.Store
	if store == nil {
		return ""
	}
	recs, _, err := store.GetRuns(ctx, storage.RunQuery{SessionID: e.out.SessionID, UserID: e.out.UserID,
		Statuses: []run.Status{run.StatusCompleted}, Page: storage.Page{Limit: 50, Page: 1}})
	if err != nil {
		e.w.cfg.Logger.WarnContext(ctx, "reading the workflow's history failed", "run_id", e.out.RunID, "error", err)
		return ""
	}
	var mine []*run.Output
	for _, rec := range recs {
		if rec.Run != nil && rec.Run.WorkflowID == e.w.cfg.ID && rec.Run.AgentID == "" && rec.Run.TeamID == "" && rec.Run.RunID != e.out.RunID {
			mine = append(mine, rec.Run)
		}
	}
	slices.SortFunc(mine, func(a, b *run.Output) int { return int(a.CreatedAt - b.CreatedAt) })
	if len(mine) > num {
		mine = mine[len(mine)-num:]
	}
	if len(mine) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<workflow_history_context>")
	for i, o := range mine {
		fmt.Fprintf(&b, "\n[run-%d]\ninput: %s\nresponse: %s", i+1, o.Input.ContentString(), o.ContentString())
	}
	b.WriteString("\n</workflow_history_context>")
	return b.String()
}

// sequence runs Steps.
func (e *engine) sequence(ctx context.Context, n *Node, p position, in *StepInput) (*run.StepOutput, error) {
	if outcome, err := e.gate(ctx, n, p, in); err != nil || outcome != gateRun {
		return nil, err
	}
	start := event(run.EventStepsExecutionStarted, n, p)
	start.StepsCount = new(len(n.children))
	e.emit(start)
	results, stop, err := e.runAll(ctx, n.children, p, "", in.Iteration)
	if err != nil {
		return nil, err
	}
	res := composite(n, results)
	res.Stop = stop
	done := event(run.EventStepsExecutionCompleted, n, p)
	done.StepsCount, done.ExecutedSteps, done.StepResults = new(len(n.children)), new(len(results)), results
	e.emit(done)
	return res, nil
}

// runAll runs steps one after the other, each on what ran before it.
func (e *engine) runAll(ctx context.Context, steps []*Node, p position, tag string, iteration int) (results []*run.StepOutput, stop bool, err error) {
	for i, child := range steps {
		in := e.input()
		in.Iteration = iteration
		res, err := e.run(ctx, child, p.child(i, tag), in)
		if err != nil {
			return nil, false, err
		}
		if res == nil {
			continue
		}
		results = append(results, res)
		if res.Stop {
			return results, true, nil
		}
	}
	return results, false, nil
}

// composite is a composite step's output: its last inner step's content,
// with every inner output.
func composite(n *Node, results []*run.StepOutput) *run.StepOutput {
	res := &run.StepOutput{StepName: n.name, StepID: n.id, StepType: string(n.kind), Success: true, Steps: results}
	if len(results) > 0 {
		last := results[len(results)-1]
		res.Content, res.Images, res.Videos, res.Audio, res.Files = last.Content, last.Images, last.Videos, last.Audio, last.Files
	}
	for _, r := range results {
		if !r.Success {
			res.Success = false
		}
	}
	return res
}

// loop runs a Loop's body until its end condition holds or it reaches
// its bound; its review may ask a person after each iteration.
func (e *engine) loop(ctx context.Context, n *Node, p position, in *StepInput) (*run.StepOutput, error) {
	if outcome, err := e.gate(ctx, n, p, in); err != nil || outcome != gateRun {
		return nil, err
	}
	start := event(run.EventLoopExecutionStarted, n, p)
	start.MaxIterations = new(n.maxIterations)
	e.emit(start)
	var all [][]*run.StepOutput
	var flat []*run.StepOutput
	stopped := false
	for iteration := 1; iteration <= n.maxIterations; iteration++ {
		key := fmt.Sprintf("iteration:%s:%d", p.path, iteration)
		var results []*run.StepOutput
		if done, ok := e.memo(key); ok {
			results = done.Steps
			for _, r := range results {
				e.remember(r)
			}
		} else {
			ev := event(run.EventLoopIterationStarted, n, p)
			ev.Iteration, ev.MaxIterations = new(iteration), new(n.maxIterations)
			e.emit(ev)
			var stop bool
			var err error
			results, stop, err = e.runAll(ctx, n.children, p, "i"+strconv.Itoa(iteration)+".", iteration)
			if err != nil {
				return nil, err
			}
			stopped = stop
			e.setMemo(key, &run.StepOutput{Steps: results})
		}
		all = append(all, results)
		flat = append(flat, results...)
		more := iteration < n.maxIterations && !stopped
		if more && n.cond.set() {
			after := e.input()
			after.Iteration = iteration
			done, err := e.decide(ctx, n, fmt.Sprintf("until:%s:%d", p.path, iteration), after)
			if err != nil {
				return nil, err
			}
			more = !done
		}
		if n.review != nil && n.review.RequiresIterationReview && more {
			more2, err := e.iterationReview(n, p, iteration, results)
			if err != nil {
				return nil, err
			}
			more = more2
		}
		ev := event(run.EventLoopIterationCompleted, n, p)
		ev.Iteration, ev.MaxIterations, ev.IterationResults, ev.ShouldContinue = new(iteration), new(n.maxIterations), results, new(more)
		e.emit(ev)
		if !more {
			break
		}
	}
	res := composite(n, flat)
	res.Stop = stopped
	done := event(run.EventLoopExecutionCompleted, n, p)
	done.TotalIterations, done.MaxIterations, done.AllResults = new(len(all)), new(n.maxIterations), all
	e.emit(done)
	return res, nil
}

// iterationReview asks a person whether a loop goes on after an
// iteration: confirmed goes on, rejected ends the loop.
func (e *engine) iterationReview(n *Node, p position, iteration int, results []*run.StepOutput) (bool, error) {
	key := fmt.Sprintf("iteration-review:%s:%d", p.path, iteration)
	if decided, ok := e.memo(key); ok {
		more, _ := decided.Content.(bool)
		return more, nil
	}
	ans := e.take(n)
	if ans == nil {
		req := e.requirement(n, p)
		req.RequiresConfirmation, req.ConfirmationMessage = true, n.review.IterationReviewMessage
		if req.ConfirmationMessage == "" {
			req.ConfirmationMessage = fmt.Sprintf("Run iteration %d of %s?", iteration+1, n.name)
		}
		req.StepOutput, req.IsPostExecution, req.OnReject = composite(n, results), true, n.review.OnReject
		e.emit(withConfirmation(event(run.EventStepPaused, n, p), req.ConfirmationMessage))
		return false, &pauseError{req: req, kind: pauseStep}
	}
	more := ans.Confirmed != nil && *ans.Confirmed
	if !more && n.review.OnReject == OnRejectCancel {
		return false, errRejected
	}
	e.setMemo(key, &run.StepOutput{Content: more, Success: true})
	e.emit(event(run.EventStepContinued, n, p))
	return more, nil
}

// decide evaluates a Condition's or a Loop's predicate, once: the result
// is journaled (a Go predicate may ask a model) and kept for a continued
// run.
func (e *engine) decide(ctx context.Context, n *Node, key string, in *StepInput) (bool, error) {
	if decided, ok := e.memo(key); ok {
		b, _ := decided.Content.(bool)
		return b, nil
	}
	eval := func(ctx context.Context) ([]byte, error) {
		b, err := n.cond.eval(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(b)
	}
	var data []byte
	var err error
	if n.cond.fn != nil {
		data, err = e.step(ctx, "workflow decide "+n.name, eval)
	} else {
		data, err = eval(ctx) // a CEL expression decides the same every time
	}
	if err != nil {
		return false, fmt.Errorf("step %s: %w", n.name, err)
	}
	var b bool
	if err := json.Unmarshal(data, &b); err != nil {
		return false, fmt.Errorf("step %s: read its recorded decision: %w", n.name, err)
	}
	e.setMemo(key, &run.StepOutput{Content: b, Success: true})
	return b, nil
}

// condition runs a Condition's if or else branch.
func (e *engine) condition(ctx context.Context, n *Node, p position, in *StepInput) (*run.StepOutput, error) {
	outcome, err := e.gate(ctx, n, p, in)
	if err != nil || outcome == gateSkip {
		return nil, err
	}
	var holds bool
	if outcome == gateElse {
		holds = false
	} else if holds, err = e.decide(ctx, n, "condition:"+p.path, in); err != nil {
		return nil, err
	}
	start := event(run.EventConditionExecutionStarted, n, p)
	start.ConditionResult = new(holds)
	e.emit(start)
	steps, tag, branch := n.children, "", "if"
	if !holds {
		steps, tag, branch = n.otherwise, "else", "else"
	}
	results, stop, err := e.runAll(ctx, steps, p, tag, in.Iteration)
	if err != nil {
		return nil, err
	}
	done := event(run.EventConditionExecutionCompleted, n, p)
	done.ConditionResult, done.ExecutedSteps, done.StepResults = new(holds), new(len(results)), results
	if len(steps) > 0 {
		done.Branch = branch
	}
	e.emit(done)
	if len(results) == 0 {
		return nil, nil // nothing ran: the step is skipped
	}
	res := composite(n, results)
	res.Stop = stop
	return res, nil
}

// router runs the choices a Router's selector or a person picks.
func (e *engine) router(ctx context.Context, n *Node, p position, in *StepInput) (*run.StepOutput, error) {
	if outcome, err := e.gate(ctx, n, p, in); err != nil || outcome != gateRun {
		return nil, err
	}
	names, err := e.route(ctx, n, p, in)
	if err != nil {
		return nil, err
	}
	var chosen []*Node
	for _, name := range names {
		c, ok := findChoice(n.children, name)
		if !ok {
			return nil, fmt.Errorf("router %s chose %q, which is not one of its steps %v", n.name, name, choiceNames(n.children))
		}
		chosen = append(chosen, c)
	}
	start := event(run.EventRouterExecutionStarted, n, p)
	start.SelectedSteps = names
	e.emit(start)
	var results []*run.StepOutput
	stop := false
	for _, c := range chosen {
		i := slices.Index(n.children, c)
		r, err := e.run(ctx, c, p.child(i, ""), e.input())
		if err != nil {
			return nil, err
		}
		if r != nil {
			results = append(results, r)
			if r.Stop {
				stop = true
				break
			}
		}
	}
	done := event(run.EventRouterExecutionCompleted, n, p)
	done.SelectedSteps, done.ExecutedSteps, done.StepResults = names, new(len(results)), results
	e.emit(done)
	if len(results) == 0 {
		return nil, nil
	}
	res := composite(n, results)
	res.Stop = stop
	return res, nil
}

// route picks a Router's choices: a person's selection when its review
// asks for it, else its selector's (journaled when written in Go).
func (e *engine) route(ctx context.Context, n *Node, p position, in *StepInput) ([]string, error) {
	key := "route:" + p.path
	if decided, ok := e.memo(key); ok {
		return toStrings(decided.Content), nil
	}
	var names []string
	if h := n.review; h != nil && h.RequiresUserInput {
		ans := e.take(n)
		if ans == nil {
			req := e.requirement(n, p)
			req.RequiresRouteSelection, req.AvailableChoices, req.AllowMultipleSelections = true, choiceNames(n.children), h.AllowMultipleSelections
			req.UserInputMessage = h.UserInputMessage
			ev := event(run.EventRouterPaused, n, p)
			ev.AvailableChoices, ev.UserInputMessage, ev.AllowMultipleSelections = req.AvailableChoices, h.UserInputMessage, new(h.AllowMultipleSelections)
			e.emit(ev)
			return nil, &pauseError{req: req, kind: pauseStep}
		}
		names = ans.SelectedChoices
		e.emit(event(run.EventStepContinued, n, p))
	} else {
		choose := func(ctx context.Context) ([]byte, error) {
			names, err := n.selector.eval(ctx, in)
			if err != nil {
				return nil, err
			}
			return json.Marshal(names)
		}
		var data []byte
		var err error
		if n.selector.fn != nil {
			data, err = e.step(ctx, "workflow route "+n.name, choose)
		} else {
			data, err = choose(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("router %s: %w", n.name, err)
		}
		if err := json.Unmarshal(data, &names); err != nil {
			return nil, fmt.Errorf("router %s: read its recorded choice: %w", n.name, err)
		}
	}
	e.setMemo(key, &run.StepOutput{Content: names, Success: true})
	return names, nil
}

func toStrings(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, s := range v {
			out = append(out, fmt.Sprint(s))
		}
		return out
	}
	return nil
}

func choiceNames(nodes []*Node) []string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.name
	}
	return names
}

// parallel runs a Parallel's branches at once, at most max_concurrency of
// them; each branch is one journal step, so a run executed again after a
// crash runs only the branches that had not finished.
func (e *engine) parallel(ctx context.Context, n *Node, p position, in *StepInput) (*run.StepOutput, error) {
	if outcome, err := e.gate(ctx, n, p, in); err != nil || outcome != gateRun {
		return nil, err
	}
	start := event(run.EventParallelExecutionStarted, n, p)
	start.ParallelStepCount = new(len(n.children))
	e.emit(start)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, n.maxConcurrency)
	branch := &engine{w: e.w, r: e.r, out: e.out, journal: e.journal, branch: true, mu: e.mu, answers: e.answers,
		progress: e.progress, outputs: e.outputs, last: e.lastOutput(), state: e.state, history: e.history}
	runBranch := func(ctx context.Context, i int) (*run.StepOutput, error) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		child := n.children[i]
		bin := *in
		bin.AdditionalData = maps.Clone(in.AdditionalData)
		res, err := branch.fork().run(ctx, child, p.child(i, ""), &bin)
		var pause *pauseError
		if errors.As(err, &pause) {
			err = fmt.Errorf("step %s inside parallel %s waits for a person, which a parallel branch cannot: give the review to the Parallel step itself", child.name, n.name)
		}
		return res, err
	}
	results, errs := make([]*run.StepOutput, len(n.children)), make([]error, len(n.children))
	if e.journal != nil && !e.branch {
		names := make([]string, len(n.children))
		fns := make([]run.StepFunc, len(n.children))
		for i, child := range n.children {
			names[i] = "workflow branch " + child.name
			fns[i] = func(ctx context.Context) ([]byte, error) {
				res, err := runBranch(ctx, i)
				if err != nil {
					return nil, err
				}
				return json.Marshal(res)
			}
		}
		recorded, failures := e.journal.Steps(ctx, names, fns)
		for i, data := range recorded {
			if errs[i] = failures[i]; errs[i] != nil {
				continue
			}
			if err := json.Unmarshal(data, &results[i]); err != nil {
				errs[i] = fmt.Errorf("read branch %s's recorded output: %w", n.children[i].name, err)
			}
		}
	} else {
		var wg sync.WaitGroup
		for i := range n.children {
			wg.Go(func() { results[i], errs[i] = runBranch(ctx, i) })
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("parallel %s: %w", n.name, err)
	}
	var outputs []*run.StepOutput
	for _, res := range results {
		if res != nil {
			e.remember(res)
			outputs = append(outputs, res)
		}
	}
	res := &run.StepOutput{StepName: n.name, StepID: n.id, StepType: string(n.kind), Success: true, Steps: outputs}
	parts := make([]string, 0, len(outputs))
	for _, o := range outputs {
		if !o.Success {
			res.Success = false
		}
		if text := o.ContentString(); text != "" {
			parts = append(parts, "## "+o.StepName+"\n\n"+text)
		}
		res.Stop = res.Stop || o.Stop
	}
	res.Content = strings.Join(parts, "\n\n")
	done := event(run.EventParallelExecutionCompleted, n, p)
	done.ParallelStepCount, done.StepResults = new(len(n.children)), outputs
	e.emit(done)
	return res, nil
}

// streamExecutors reports whether the steps' runners' events are passed
// on.
func (w *Workflow) streamExecutors() bool {
	return w.cfg.StreamExecutorEvents == nil || *w.cfg.StreamExecutorEvents
}

// executorType names a runner's kind as step outputs do.
func executorType(r run.Runner) string {
	if r == nil {
		return "function"
	}
	if k := r.Kind(); k != "" {
		return string(k)
	}
	return string(run.KindAgent)
}

// contentType is a step content's content_type.
func contentType(v any) string {
	if _, text := v.(string); text || v == nil {
		return "str"
	}
	return "dict"
}

// childSession is the session a step's runner runs in: the workflow's; a
// runner bound to an outside harness (an external agent) gets one of its
// own beside it.
func childSession(r run.Runner, session string) string {
	if _, bound := r.(run.SessionBinder); bound {
		return session + "~" + r.ID()
	}
	return session
}

// childRunID derives a step's child run id from the journal step's
// idempotency key (or the run and the step's place in it): a step
// executed again after a crash runs as the same child run.
func childRunID(ctx context.Context, runID, key string) string {
	if step := run.StepKey(ctx); step != "" {
		return stableID(step + "/" + key)
	}
	return stableID(runID + "/" + key)
}
