package codemode

import (
	"encoding/json"
	"fmt"

	"go.starlark.net/starlark"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// builtin is every tool's Starlark function: it calls the tool named like
// the function, for the program the thread runs, with the keyword
// arguments (or one dict) and returns its result.
func builtin(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	p, ok := thread.Local(programKey).(*program)
	if !ok {
		return nil, fmt.Errorf("%s: called outside run_code", fn.Name())
	}
	name, ok := p.c.functions[fn.Name()]
	if !ok {
		return nil, fmt.Errorf("%s: no such tool", fn.Name())
	}
	arguments, err := callArguments(name, args, kwargs)
	if err != nil {
		return nil, err
	}
	p.calls++
	if p.calls > p.c.cfg.MaxToolCalls {
		return nil, fmt.Errorf("%s: the program made more than %d tool calls; do less in one program", name, p.c.cfg.MaxToolCalls)
	}
	id := fmt.Sprintf("%s.%d", p.callID, p.calls)
	if prior, ok := p.prior[id]; ok {
		// Replaying after a pause: the call was made; its answer stands.
		if prior.ToolName != name {
			return nil, fmt.Errorf("%s: the program calls other tools than when it paused; it must not depend on anything but tool results", name)
		}
		return p.answer(prior)
	}
	encoded, err := json.Marshal(arguments)
	if err != nil {
		return nil, fmt.Errorf("%s: the arguments are not JSON: %w", name, err)
	}
	call := run.ToolCall{ID: id, Type: "function", Function: run.ToolCallFunction{Name: name, Arguments: string(encoded)}}
	exec, decided := p.decided(id)
	if decided {
		return p.finishDecided(call, exec)
	}
	outcome := tool.Execute(p.ctx, p.c.tools, []run.ToolCall{call}, tool.ExecuteOptions{Now: p.c.cfg.Now, RunID: p.runID})[0]
	if outcome.Paused() {
		// The call waits for a person (or the client): the program stops
		// here, and runs again from the start once it is resolved.
		paused := outcome.Execution
		paused.PrefillUserInput()
		requirement := run.NewRequirement(paused, p.c.cfg.Now())
		requirement.MemberRunID = pauseID(p.callID)
		p.pause = &tool.ChildPause{RunID: requirement.MemberRunID, Requirements: []*run.Requirement{requirement}}
		thread.Cancel(errPaused.Error())
		return nil, errPaused
	}
	p.started(outcome.Execution)
	return p.record(outcome.Execution)
}

// pauseID is the child_run_id of a run_code call that waits for a person:
// its requirements carry it as member_run_id. No run has that id.
func pauseID(callID string) string { return "code-" + callID }

// decided returns the person's decision on the call id when the program
// resumes past it.
func (p *program) decided(id string) (*run.ToolExecution, bool) {
	exec, ok := p.resolved[id]
	return exec, ok
}

// finishDecided runs, or reports the rejection of, a call a person
// resolved.
func (p *program) finishDecided(call run.ToolCall, decided *run.ToolExecution) (starlark.Value, error) {
	copied := *decided
	exec := &copied
	switch {
	case exec.RequiresConfirmation && exec.Confirmed != nil && !*exec.Confirmed:
		result := exec.RejectionText()
		failed := true
		exec.Result, exec.ToolCallError = &result, &failed
	case exec.ExternalExecutionRequired:
		failed := false
		if exec.Result == nil {
			empty := ""
			exec.Result = &empty
		}
		exec.ToolCallError = &failed
	default:
		args := map[string]any{}
		for k, v := range exec.ToolArgs {
			args[k] = v
		}
		if exec.RequiresUserInput {
			for _, field := range exec.UserInputSchema {
				args[field.Name] = field.Value
			}
		}
		encoded, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", call.Function.Name, err)
		}
		call.Function.Arguments = string(encoded)
		outcome := tool.Execute(p.ctx, p.c.tools, []run.ToolCall{call}, tool.ExecuteOptions{Resolved: true, Now: p.c.cfg.Now, RunID: p.runID})[0]
		exec.Result, exec.ToolCallError, exec.Metrics = outcome.Execution.Result, outcome.Execution.ToolCallError, outcome.Execution.Metrics
	}
	p.started(exec)
	return p.record(exec)
}

// started reports a call to the run's listeners.
func (p *program) started(exec *run.ToolExecution) {
	if p.r != nil {
		p.r.Emit(&run.ToolCallStarted{Tool: exec})
	}
}

// record keeps a finished call on the run and reports it, and returns its
// answer to the program.
func (p *program) record(exec *run.ToolExecution) (starlark.Value, error) {
	tool.RecordNested(p.ctx, exec)
	result := exec.ResultText()
	if p.r != nil {
		if failed(exec) {
			p.r.Emit(&run.ToolCallError{Tool: exec, Error: result})
		} else {
			p.r.Emit(&run.ToolCallCompleted{Tool: exec, Content: result})
		}
	}
	return p.answer(exec)
}

// answer is a finished call's result as the program sees it: a failure
// stops the program with the tool's message.
func (p *program) answer(exec *run.ToolExecution) (starlark.Value, error) {
	result := exec.ResultText()
	if failed(exec) {
		return nil, fmt.Errorf("%s failed: %s", exec.ToolName, result)
	}
	return fromResult(result), nil
}

// failed reports whether a call failed.
func failed(exec *run.ToolExecution) bool { return exec.ToolCallError != nil && *exec.ToolCallError }

// callArguments turns a Starlark call's arguments into the tool's JSON
// object: keyword arguments, or a single dict.
func callArguments(name string, args starlark.Tuple, kwargs []starlark.Tuple) (map[string]any, error) {
	arguments := map[string]any{}
	switch {
	case len(args) == 1 && len(kwargs) == 0:
		dict, ok := args[0].(*starlark.Dict)
		if !ok {
			return nil, fmt.Errorf("%s: call it with keyword arguments, such as %s(city=\"Paris\"), or one dict", name, name)
		}
		value, err := toGo(dict)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return value.(map[string]any), nil
	case len(args) > 0:
		return nil, fmt.Errorf("%s: call it with keyword arguments, such as %s(city=\"Paris\")", name, name)
	}
	for _, kv := range kwargs {
		key := string(kv[0].(starlark.String))
		value, err := toGo(kv[1])
		if err != nil {
			return nil, fmt.Errorf("%s: argument %s: %w", name, key, err)
		}
		arguments[key] = value
	}
	return arguments, nil
}
