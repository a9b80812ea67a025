package workflow

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
)

// The variables a CEL expression of a workflow sees (see [CEL]).
const (
	celInput               = "input"
	celPreviousStepContent = "previous_step_content"
	celStepOutputs         = "step_outputs"
	celSessionState        = "session_state"
	celAdditionalData      = "additional_data"
	celIteration           = "iteration"
)

// celEnv is the environment every workflow expression compiles in; it is
// immutable once built.
func celEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(celInput, cel.DynType),
		cel.Variable(celPreviousStepContent, cel.DynType),
		cel.Variable(celStepOutputs, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(celSessionState, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(celAdditionalData, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(celIteration, cel.IntType),
		ext.Strings(),
	)
}

// expression is a compiled CEL expression.
type expression struct {
	source string
	prog   cel.Program
}

// compileCEL compiles source; want names what the expression must yield
// ("bool", or "route" for a string or a list of strings).
func compileCEL(source, want string) (*expression, error) {
	if strings.TrimSpace(source) == "" {
		return nil, fmt.Errorf("CEL expression is empty")
	}
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	ast, issues := env.Compile(source)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", source, issues.Err())
	}
	if want == "bool" && ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("CEL expression %q yields %s: want a bool", source, ast.OutputType())
	}
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", source, err)
	}
	return &expression{source: source, prog: prog}, nil
}

// activation is what an expression sees of a step's input.
func activation(in *StepInput) map[string]any {
	outputs := make(map[string]any, len(in.PreviousStepOutputs))
	for name, out := range in.PreviousStepOutputs {
		if out != nil {
			outputs[name] = celValue(out.Content)
		}
	}
	return map[string]any{
		celInput:               celValue(in.Input),
		celPreviousStepContent: celValue(in.PreviousStepContent),
		celStepOutputs:         outputs,
		celSessionState:        nonNil(in.SessionState),
		celAdditionalData:      nonNil(in.AdditionalData),
		celIteration:           int64(in.Iteration),
	}
}

// celValue is a step content as CEL sees it: nothing is the empty string,
// so string functions work on a step that produced nothing.
func celValue(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// eval runs the expression on in.
func (e *expression) eval(ctx context.Context, in *StepInput) (ref.Val, error) {
	val, _, err := e.prog.ContextEval(ctx, activation(in))
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", e.source, err)
	}
	return val, nil
}

// evalBool runs a condition.
func (e *expression) evalBool(ctx context.Context, in *StepInput) (bool, error) {
	v, err := e.eval(ctx, in)
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("CEL expression %q yielded %s: want a bool", e.source, v.Type())
	}
	return b, nil
}

// evalRoute runs a router's expression: a choice's name or a list of
// names.
func (e *expression) evalRoute(ctx context.Context, in *StepInput) ([]string, error) {
	v, err := e.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	if s, ok := v.Value().(string); ok {
		return []string{s}, nil
	}
	if names, err := v.ConvertToNative(reflect.TypeFor[[]string]()); err == nil {
		return names.([]string), nil
	}
	return nil, fmt.Errorf("CEL expression %q yielded %s: want a step name or a list of step names", e.source, v.Type())
}
