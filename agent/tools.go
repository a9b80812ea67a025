package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// runTools executes one model turn's tool calls and appends their results.
// It reports whether a tool asked to stop the loop (st.batch holds the
// turn's executions, for its answer), and returns errPaused when a tool
// waits for a person.
func (a *Agent) runTools(ctx context.Context, st *runState, calls []run.ToolCall) (stop bool, err error) {
	for _, call := range calls {
		if !st.r.Active() {
			break
		}
		st.r.Emit(&run.ToolCallStarted{Tool: &run.ToolExecution{ToolCallID: call.ID, ToolName: call.Function.Name,
			ToolArgs: parseArgs(call.Function.Arguments), CreatedAt: a.cfg.Now().Unix()}})
	}
	journal, _ := run.JournalFrom(ctx)
	outcomes := tool.Execute(ctx, st.p.tools, calls, tool.ExecuteOptions{Limit: a.cfg.ToolCallLimit, Used: st.toolCalls, Now: a.cfg.Now,
		RunID: st.out.RunID, Journal: journal})
	paused := false
	st.batch = st.batch[:0]
	for _, outcome := range outcomes {
		if outcome.Counted {
			st.toolCalls++
		}
		exec := outcome.Execution
		// The calls a call made of other tools (a CodeMode program's) come
		// first, as they were made first.
		st.out.Tools = append(st.out.Tools, outcome.Nested...)
		st.out.Tools = append(st.out.Tools, exec)
		st.batch = append(st.batch, exec)
		// The child runs a call ran (a team's members) count in the run's
		// metrics, replayed calls included.
		st.out.Metrics.AddRun(outcome.ChildMetrics)
		st.out.Images = append(st.out.Images, outcome.Images...)
		if outcome.Child != nil {
			// The call waits on a child run that waits for a person: the
			// run shows the child's requirements.
			st.out.Requirements = append(st.out.Requirements, outcome.Child.Requirements...)
			paused = true
			continue
		}
		if outcome.Paused() {
			exec.PrefillUserInput()
			st.out.Requirements = append(st.out.Requirements, run.NewRequirement(exec, a.cfg.Now()))
			paused = true
			continue
		}
		a.appendResult(ctx, st, exec)
		// A failed call does not stop the loop: the model sees the error
		// and may try again.
		stop = stop || (exec.StopAfterToolCall && !failedCall(exec))
	}
	a.markCheckpoint(st)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if !paused {
		// The tool results are saved as they come (when the run is
		// persisted): readers see the run progress, and a crash keeps them.
		if err := st.r.SaveProgress(ctx); err != nil {
			return false, err
		}
	}
	if paused {
		return false, errPaused
	}
	return stop, nil
}

// failedCall reports whether a tool call failed.
func failedCall(exec *run.ToolExecution) bool {
	return exec.ToolCallError != nil && *exec.ToolCallError
}

// appendResult adds a tool's result message and reports the call. A result
// too large for the context is offloaded first.
func (a *Agent) appendResult(ctx context.Context, st *runState, exec *run.ToolExecution) {
	a.offload(ctx, st, exec)
	result := exec.ResultText()
	msg := a.newMessage(run.RoleTool, result, a.cfg.Now())
	msg.ToolCallID, msg.ToolName, msg.ToolArgs, msg.ToolCallError = exec.ToolCallID, exec.ToolName, exec.ToolArgs, exec.ToolCallError
	msg.StopAfterToolCall = exec.StopAfterToolCall
	st.messages = append(st.messages, msg)
	if exec.ToolCallError != nil && *exec.ToolCallError {
		st.r.Emit(&run.ToolCallError{Tool: exec, Error: result})
		return
	}
	st.r.Emit(&run.ToolCallCompleted{Tool: exec, Content: result})
	if st.p.tools.ShowResult(exec.ToolName) && !exec.StopAfterToolCall {
		st.r.Emit(&run.RunContent{Content: result, ContentType: "str"})
	}
}

// withShownResults is the run's answer preceded by the results of the calls
// whose tools show them to the user (show_result), in call order, each
// followed by a blank line — the content the user saw streamed. A run
// with an output schema answers with the schema's JSON alone.
func withShownResults(st *runState, answer string) string {
	if st.schema != nil {
		return answer
	}
	var shown strings.Builder
	for _, t := range st.out.Tools {
		if t.Result == nil || failedCall(t) || t.StopAfterToolCall || !st.p.tools.ShowResult(t.ToolName) {
			continue
		}
		shown.WriteString(*t.Result)
		shown.WriteString("\n\n")
	}
	if shown.Len() == 0 {
		return answer
	}
	shown.WriteString(answer)
	return shown.String()
}

// markCheckpoint flags the last tool result of the batch just run as a
// checkpoint: a safe place to continue from.
func (a *Agent) markCheckpoint(st *runState) {
	last := len(st.messages) - 1
	if last < 0 || st.messages[last].Role != run.RoleTool {
		return
	}
	st.messages[last].CheckpointStatus = "checkpoint"
	st.messages[last].CheckpointCreatedAt = a.cfg.Now().Unix()
	index := len(st.ownMessages())
	st.out.LastCheckpointAtMessageIndex = &index
}

// unresolved lists the waiting tool calls of a run that are not answered
// yet, each with what the caller must send for it.
func unresolved(out *run.Output) []string {
	var waiting []string
	for _, t := range run.WaitingCalls(out) {
		call := fmt.Sprintf("%s (%s)", t.ToolName, t.ToolCallID)
		switch {
		case rejected(t):
			// Answered: the call is not run.
		case t.RequiresConfirmation && t.Confirmed == nil:
			waiting = append(waiting, call+" waits for a confirmation: send it with confirmed true or false")
		case t.RequiresUserInput && (t.Answered == nil || !*t.Answered):
			missing := missingInput(t)
			if len(missing) == 0 {
				waiting = append(waiting, call+" waits for user input: send it back to answer it")
				break
			}
			waiting = append(waiting, call+" waits for user input: send it with a value in user_input_schema for "+
				strings.Join(missing, " and "))
		case t.ExternalExecutionRequired && t.Result == nil:
			waiting = append(waiting, call+" is executed by the caller: send it with its output as result")
		}
	}
	return waiting
}

// missingInput names the user-input fields of a call that have no value
// yet, with their types.
func missingInput(t *run.ToolExecution) []string {
	var missing []string
	for _, field := range t.UserInputSchema {
		if field.Value == nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", field.Name, field.FieldType))
		}
	}
	return missing
}

// resolvePending runs (or reports the rejection of) each paused tool of a
// continued run, in call order, so the model sees every result. A call
// that waits on a child run is resumed by its tool; when the child pauses
// again, so does the run, with the calls after it left waiting.
func (a *Agent) resolvePending(ctx context.Context, st *runState) error {
	pending := run.PendingTools(st.out)
	defer func() {
		// A resolved call that stops the loop answers the run, as it would
		// have had it not waited.
		if answer := stoppedWith(pending); answer != "" && run.PendingTools(st.out) == nil {
			st.out.Content, st.answered = answer, true
		}
	}()
	for _, t := range pending {
		if st.out.WaitsOnChild(t) {
			if paused, err := a.resumeChild(ctx, st, t); paused || err != nil {
				return err
			}
			continue
		}
		switch {
		case rejected(t):
			result := t.RejectionText()
			t.Result = &result
		case t.ExternalExecutionRequired:
			// The caller ran it; its result is in t.Result.
		default:
			if t.RequiresUserInput {
				if t.ToolArgs == nil {
					t.ToolArgs = map[string]any{}
				}
				for _, field := range t.UserInputSchema {
					t.ToolArgs[field.Name] = field.Value
				}
			}
			a.callTool(ctx, st, t)
		}
		failed := false
		if t.ToolCallError == nil {
			t.ToolCallError = &failed
		}
		a.appendResult(ctx, st, t)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// resumeChild finishes a call that waited on a child run, now that the
// child's requirements are resolved. It reports a child that paused again:
// the run then pauses with the child's new requirements.
func (a *Agent) resumeChild(ctx context.Context, st *runState, t *run.ToolExecution) (paused bool, err error) {
	journal, _ := run.JournalFrom(ctx)
	resolved := st.out.ChildRequirements(t.ChildRunID)
	outcome := tool.Resume(ctx, st.p.tools, t, resolved, tool.ExecuteOptions{Now: a.cfg.Now, RunID: st.out.RunID, Journal: journal})
	st.out.Metrics.AddRun(outcome.ChildMetrics)
	if len(outcome.Nested) > 0 {
		// The calls made while resuming go before the call they belong to.
		at := slices.Index(st.out.Tools, t)
		if at < 0 {
			at = len(st.out.Tools)
		}
		st.out.Tools = slices.Insert(st.out.Tools, at, outcome.Nested...)
	}
	if outcome.Child != nil {
		// The child's resolved requirements make way for its new ones.
		kept := st.out.Requirements[:0:0]
		for _, r := range st.out.Requirements {
			if r.MemberRunID != t.ChildRunID {
				kept = append(kept, r)
			}
		}
		st.out.Requirements = append(kept, outcome.Child.Requirements...)
		return true, errPaused
	}
	a.appendResult(ctx, st, t)
	return false, ctx.Err()
}

// callTool runs one tool the person approved (or answered), bypassing its
// confirmation and user-input pause, and records the result on t.
func (a *Agent) callTool(ctx context.Context, st *runState, t *run.ToolExecution) {
	call := run.ToolCall{ID: t.ToolCallID, Type: "function", Function: run.ToolCallFunction{Name: t.ToolName, Arguments: encodeArgs(t.ToolArgs)}}
	journal, _ := run.JournalFrom(ctx)
	outcome := tool.Execute(ctx, st.p.tools, []run.ToolCall{call}, tool.ExecuteOptions{Resolved: true, Now: a.cfg.Now,
		RunID: st.out.RunID, Journal: journal})[0]
	t.Result, t.ToolCallError, t.Metrics = outcome.Execution.Result, outcome.Execution.ToolCallError, outcome.Execution.Metrics
}

// parseArgs decodes a tool call's JSON arguments for display; invalid JSON
// yields nil (the tool itself reports the problem).
func parseArgs(arguments string) map[string]any {
	var args map[string]any
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return nil
	}
	return args
}
