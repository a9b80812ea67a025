package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
)

// Validator is an optional ability of a [Tool]: checking arguments without
// running the tool. [Execute] uses it to fail a call with bad arguments at
// once instead of pausing the run to ask a person to confirm it. Tools built
// with [New] and [Func] implement it.
type Validator interface {
	// ValidateArgs returns an [*ArgumentError] when args do not fit the
	// tool's parameters.
	ValidateArgs(args json.RawMessage) error
}

// ExecuteOptions tune [Execute]. The zero value runs every call, all at once,
// with no limit.
type ExecuteOptions struct {
	// MaxParallel bounds how many calls run at the same time. Defaults to
	// len(calls): all at once.
	MaxParallel int
	// Limit is the run's tool_call_limit: how many tool calls the whole run
	// may make. Defaults to 0, no limit, as in Agno.
	Limit int
	// Used is how many calls the run already made before this batch; it only
	// matters with a Limit. Calls past Limit-Used are not executed and fail
	// with [ErrToolCallLimit].
	Used int
	// Resolved runs calls whose tools require confirmation or user input:
	// use it when continuing a run, once a person confirmed the calls or
	// supplied the input (merged into the arguments). Tools with external
	// execution still pause. Defaults to false.
	Resolved bool
	// Now is the clock for created_at and metrics; the calls' goroutines
	// read it concurrently. Defaults to time.Now.
	Now func() time.Time
	// RunID names the run the calls belong to: each call's ctx carries the
	// idempotency key "<RunID>:<tool_call_id>" ([run.StepKey]) unless a
	// journal gives its own. Defaults to "": no key.
	RunID string
	// Journal, when set, runs each call as a journaled step (all at once,
	// MaxParallel ignored): a call whose step completed before is not run
	// again; its recorded execution is returned, its error as a message.
	// Defaults to nil.
	Journal run.Journal
}

// Outcome is what became of one tool call of a batch.
type Outcome struct {
	// Call is the model's request.
	Call run.ToolCall
	// Execution records the call as Agno does: arguments, result (the text
	// the model sees, the error message for a failed call), tool_call_error,
	// metrics and, for a paused call, the pause flags. Never nil.
	Execution *run.ToolExecution
	// Err is why the call failed: the tool's error, an [*ArgumentError], a
	// [*PanicError], [ErrUnknownTool], [ErrToolCallLimit] or the context's
	// error for a call never started. Nil for a successful or paused call.
	Err error
	// Child is set when the call waits on a child run that waits for a
	// person ([ChildPause]): the run should pause with the child's
	// requirements. Its ChildRunID is on the execution.
	Child *ChildPause
	// ChildMetrics are the metrics of the child runs the call ran
	// ([AddChildMetrics]), for the caller to add to its run's.
	ChildMetrics *run.RunMetrics
	// Images are the images the call produced ([AddImages]), for the
	// caller to add to its run's.
	Images []run.Image
	// Nested are the calls the call made of other tools
	// ([RecordNested]), for the caller to add to its run's tools before
	// the call's own execution.
	Nested []*run.ToolExecution
	// Counted reports whether the call counts against the tool_call_limit:
	// every call of a known tool not refused by the limit, paused ones
	// included, as in Agno. Add the counted outcomes to
	// [ExecuteOptions.Used] for the next batch.
	Counted bool
}

// Paused reports whether the call waits for a person or an external
// executor; the run should pause.
func (o Outcome) Paused() bool { return o.Execution.Paused() || o.Child != nil }

// Execute runs the tool calls of one model turn and returns their outcomes
// in call order.
//
// Calls run in parallel, at most opts.MaxParallel at a time; each gets ctx.
// Once ctx is done no further call starts: those calls fail with the
// context's error. Calls of unknown tools, calls past the tool_call_limit
// and calls with unparseable arguments fail without running. Calls of tools
// that require confirmation, user input or external execution are not run
// either: their outcome is paused, with the flags set on the execution, so
// the caller can pause the run. A failed call never ends the batch: its
// error becomes the result the model reads.
func Execute(ctx context.Context, tools *Set, calls []run.ToolCall, opts ExecuteOptions) []Outcome {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	outcomes := make([]Outcome, len(calls))
	var jobs []job
	used := opts.Used
	for i, call := range calls {
		args := normalizeArgs(json.RawMessage(call.Function.Arguments))
		exec := &run.ToolExecution{
			ToolCallID: call.ID,
			ToolName:   call.Function.Name,
			ToolArgs:   parseArgs(args),
			CreatedAt:  now().Unix(),
		}
		out := &outcomes[i]
		*out = Outcome{Call: call, Execution: exec}

		t, ok := tools.Lookup(call.Function.Name)
		if !ok {
			out.fail(unknownToolError(call.Function.Name, tools))
			continue
		}
		spec, _ := tools.spec(call.Function.Name)
		exec.StopAfterToolCall = spec.StopAfterToolCall
		if opts.Limit > 0 {
			if used >= opts.Limit {
				out.fail(fmt.Errorf("%w: tool call %s not executed; don't try to execute it again", ErrToolCallLimit, spec.Name))
				continue
			}
			used++
		}
		out.Counted = true
		if exec.ToolArgs == nil {
			out.fail(argumentsNotObject(spec.Name, args))
			continue
		}
		if pauseFor(spec, opts.Resolved) {
			// A person should not be asked to confirm a call bound to fail.
			// User-input calls are exempt: the person supplies the missing
			// arguments.
			if v, ok := t.(Validator); ok && !spec.RequiresUserInput {
				if err := v.ValidateArgs(args); err != nil {
					out.fail(err)
					continue
				}
			}
			fields := slices.Clone(spec.UserInputSchema)
			if asker, ok := t.(UserInputAsker); ok && spec.RequiresUserInput && !opts.Resolved {
				asked, err := asker.UserInputFields(args)
				if err != nil {
					out.fail(err) // before any flag is set: the call fails, it does not pause
					continue
				}
				fields = asked
			}
			exec.RequiresConfirmation = spec.RequiresConfirmation && !opts.Resolved
			if spec.RequiresUserInput && !opts.Resolved {
				exec.RequiresUserInput = true
				exec.UserInputSchema = fields
			}
			exec.ExternalExecutionRequired = spec.ExternalExecution
			if spec.RequiresApproval {
				exec.ApprovalType = ApprovalRequired
			}
			continue
		}
		jobs = append(jobs, job{index: i, tool: t, args: args})
	}

	if opts.Journal != nil {
		executeJournaled(ctx, opts.Journal, outcomes, jobs, now)
		return outcomes
	}
	keyed := func(out *Outcome) context.Context {
		if opts.RunID == "" {
			return ctx
		}
		return run.WithStepKey(ctx, opts.RunID+":"+out.Call.ID)
	}
	if len(jobs) == 1 && ctx.Err() == nil {
		// One call, the common case: run it here, without a goroutine.
		out := &outcomes[jobs[0].index]
		out.execute(keyed(out), jobs[0].tool, jobs[0].args, now)
		return outcomes
	}
	limit := opts.MaxParallel
	if limit <= 0 || limit > len(jobs) {
		limit = len(jobs)
	}
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for _, j := range jobs {
		out := &outcomes[j.index]
		if !acquire(ctx, slots) {
			out.fail(fmt.Errorf("tool call %s not started: %w", out.Execution.ToolName, context.Cause(ctx)))
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			out.execute(keyed(out), j.tool, j.args, now)
		})
	}
	wg.Wait()
	return outcomes
}

// job is a call of a batch that runs: its position, tool and arguments.
type job struct {
	index int
	tool  Tool
	args  json.RawMessage
}

// journaledCall is what a journal records of one tool call: enough to
// rebuild its execution without running it again.
type journaledCall struct {
	Result        *string              `json:"result,omitempty"`
	ToolCallError *bool                `json:"tool_call_error,omitempty"`
	Metrics       *run.ToolCallMetrics `json:"metrics,omitempty"`
	Error         string               `json:"error,omitempty"`
	Child         *ChildPause          `json:"child,omitempty"`
	ChildRunID    string               `json:"child_run_id,omitempty"`
	ChildMetrics  *run.RunMetrics      `json:"child_metrics,omitempty"`
	Images        []run.Image          `json:"images,omitempty"`
	Nested        []*run.ToolExecution `json:"nested,omitempty"`
}

// executeJournaled runs the jobs as one batch of journaled steps and fills
// their outcomes from the records.
func executeJournaled(ctx context.Context, journal run.Journal, outcomes []Outcome, jobs []job, now func() time.Time) {
	if len(jobs) == 0 {
		return
	}
	names := make([]string, len(jobs))
	fns := make([]run.StepFunc, len(jobs))
	for i, j := range jobs {
		call := outcomes[j.index].Call
		names[i] = "tool:" + call.Function.Name
		fns[i] = func(ctx context.Context) ([]byte, error) {
			probe := Outcome{Call: call, Execution: &run.ToolExecution{ToolName: call.Function.Name}}
			probe.execute(ctx, j.tool, j.args, now)
			if err := ctx.Err(); err != nil {
				// Stopped, not finished: nothing to record, so the call
				// runs again when the run is executed again.
				return nil, err
			}
			record := journaledCall{Result: probe.Execution.Result, ToolCallError: probe.Execution.ToolCallError, Metrics: probe.Execution.Metrics, Child: probe.Child,
				ChildRunID: probe.Execution.ChildRunID, ChildMetrics: probe.ChildMetrics, Images: probe.Images, Nested: probe.Nested}
			if probe.Err != nil {
				record.Error = probe.Err.Error()
			}
			return json.Marshal(record)
		}
	}
	results, errs := journal.Steps(ctx, names, fns)
	for i, j := range jobs {
		out := &outcomes[j.index]
		var record journaledCall
		err := errs[i]
		if err == nil {
			err = json.Unmarshal(results[i], &record)
		}
		if err != nil {
			out.fail(fmt.Errorf("tool call %s: %w", out.Execution.ToolName, err))
			continue
		}
		out.Execution.Result, out.Execution.ToolCallError, out.Execution.Metrics = record.Result, record.ToolCallError, record.Metrics
		out.Execution.ChildRunID, out.ChildMetrics, out.Images, out.Nested = record.ChildRunID, record.ChildMetrics, record.Images, record.Nested
		if record.Child != nil {
			out.Child, out.Execution.ChildRunID = record.Child, record.Child.RunID
		}
		if record.Error != "" {
			out.Err = errors.New(record.Error)
		}
	}
}

// acquire takes a slot, or reports false once ctx is done.
func acquire(ctx context.Context, slots chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case slots <- struct{}{}:
		if ctx.Err() != nil {
			<-slots
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// pauseFor reports whether a call of the tool waits for a person or an
// external executor instead of running.
func pauseFor(spec Spec, resolved bool) bool {
	return spec.ExternalExecution || (!resolved && (spec.RequiresConfirmation || spec.RequiresUserInput))
}

// execute calls the tool and records the result and timing.
func (o *Outcome) execute(ctx context.Context, t Tool, args json.RawMessage, now func() time.Time) {
	metrics := &run.ToolCallMetrics{}
	metrics.StartTimer(now())
	ctx, span := observe.StartTool(ctx, o.Execution.ToolName, string(args))
	ctx, kids := withChildren(ctx, o.Call.ID)
	result, err := safeCall(ctx, t, o.Execution.ToolName, args)
	metrics.StopTimer(now())
	o.Execution.Metrics = metrics
	kids.record(o)
	o.settle(result, err)
	if o.Child != nil {
		span.EndTool("waits for a person: "+o.Child.Error(), false)
		return
	}
	span.EndTool(o.Execution.ResultText(), o.Err != nil)
}

// settle records a call's result, its failure, or the child run it waits
// on.
func (o *Outcome) settle(result string, err error) {
	var child *ChildPause
	if errors.As(err, &child) {
		o.Child = child
		o.Execution.ChildRunID = child.RunID
		o.Execution.Result, o.Execution.ToolCallError = nil, nil
		return
	}
	if err != nil {
		o.fail(err)
		return
	}
	failed := false
	o.Execution.Result = &result
	o.Execution.ToolCallError = &failed
}

// safeCall calls the tool, recovering a panic even from tools that do not
// guard themselves.
func safeCall(ctx context.Context, t Tool, name string, args json.RawMessage) (result string, err error) {
	defer recoverPanic(name, &err)
	return t.Call(ctx, args)
}

// fail records err as the call's result, the text the model reads.
func (o *Outcome) fail(err error) {
	failed := true
	message := err.Error()
	o.Err = err
	o.Execution.Result = &message
	o.Execution.ToolCallError = &failed
}

// parseArgs decodes the arguments for tool_args; nil when they are not a
// JSON object.
func parseArgs(args json.RawMessage) map[string]any {
	var parsed map[string]any
	if err := json.Unmarshal(args, &parsed); err != nil || parsed == nil {
		return nil
	}
	return parsed
}

// argumentsNotObject explains arguments that are not a JSON object.
func argumentsNotObject(name string, args json.RawMessage) error {
	var instance any
	if err := json.Unmarshal(args, &instance); err != nil {
		return &ArgumentError{Tool: name, Reason: "arguments are not valid JSON: " + err.Error(), Err: err}
	}
	return &ArgumentError{Tool: name, Reason: fmt.Sprintf("arguments must be a JSON object, got %s", jsonKind(instance))}
}

// unknownToolError names the tools the model may call instead.
func unknownToolError(name string, tools *Set) error {
	names := tools.Names()
	if len(names) == 0 {
		return fmt.Errorf("%w %q: no tools are available", ErrUnknownTool, name)
	}
	return fmt.Errorf("%w %q; available tools: %s", ErrUnknownTool, name, strings.Join(names, ", "))
}
