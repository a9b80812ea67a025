package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agnogo/agnogo/run"
)

// Flags change how the run loop treats a tool's calls; see [WithFlags]. A
// nil flag leaves the tool's own setting.
type Flags struct {
	// RequiresConfirmation pauses the run before each call until a person
	// confirms or rejects it.
	RequiresConfirmation *bool
	// RequiresUserInput pauses the run until a person supplies the fields
	// named by UserInputFields.
	RequiresUserInput *bool
	// UserInputFields names the arguments a person supplies when the tool
	// requires user input; the model fills in the others. Each must be a
	// property of the tool's parameters schema, whose type and description
	// the field takes. Defaults to the tool's own user-input schema, else
	// every property.
	UserInputFields []string
	// ExternalExecution pauses the run: the caller executes the call and
	// sends back its result.
	ExternalExecution *bool
	// StopAfterToolCall ends the model loop after the call's result.
	StopAfterToolCall *bool
	// ShowResult shows each successful call's result to the user as run
	// content.
	ShowResult *bool
	// RequiresApproval makes each call wait for an admin's approval; see
	// [Spec.RequiresApproval]. Set, it implies RequiresConfirmation unless
	// the tool (or these flags) pause its calls another way.
	RequiresApproval *bool
}

// WithFlags returns a copy of t whose [Spec] carries flags; t itself is not
// changed, so a toolkit's tools can be shared by agents that flag them
// differently. Calls, and argument validation when t implements
// [Validator], go to t. It fails when a user-input field is not a property
// of the tool's parameters.
func WithFlags(t Tool, flags Flags) (Tool, error) {
	if t == nil {
		return nil, fmt.Errorf("with flags: nil tool")
	}
	spec := t.Spec()
	set := func(target *bool, value *bool) {
		if value != nil {
			*target = *value
		}
	}
	set(&spec.RequiresConfirmation, flags.RequiresConfirmation)
	set(&spec.RequiresUserInput, flags.RequiresUserInput)
	set(&spec.ExternalExecution, flags.ExternalExecution)
	set(&spec.StopAfterToolCall, flags.StopAfterToolCall)
	set(&spec.ShowResult, flags.ShowResult)
	set(&spec.RequiresApproval, flags.RequiresApproval)
	spec = withApprovalDefaults(spec)
	if spec.RequiresUserInput && (len(flags.UserInputFields) > 0 || len(spec.UserInputSchema) == 0) {
		fields, err := UserInputFields(spec, flags.UserInputFields)
		if err != nil {
			return nil, err
		}
		spec.UserInputSchema = fields
	}
	if !spec.RequiresUserInput {
		spec.UserInputSchema = nil
	}
	return &flagged{inner: t, spec: spec}, nil
}

// UserInputFields returns the user-input schema of a tool's call whose
// named arguments a person supplies: one field per name, typed and
// described from the spec's parameters schema, in the order given. No names
// means every property of the schema, in the schema's order.
func UserInputFields(spec Spec, names []string) ([]run.UserInputField, error) {
	schema := new(jsonschema.Schema)
	if len(spec.Parameters) > 0 {
		if err := json.Unmarshal(spec.Parameters, schema); err != nil {
			return nil, fmt.Errorf("tool %s: parse parameters schema: %w", spec.Name, err)
		}
	}
	all := userInputFields(schema)
	if len(names) == 0 {
		return all, nil
	}
	fields := make([]run.UserInputField, 0, len(names))
	for _, name := range names {
		i := slices.IndexFunc(all, func(f run.UserInputField) bool { return f.Name == name })
		if i < 0 {
			known := make([]string, len(all))
			for j, f := range all {
				known[j] = f.Name
			}
			return nil, fmt.Errorf("tool %s: user input field %q is not one of its arguments (%v)", spec.Name, name, known)
		}
		fields = append(fields, all[i])
	}
	return fields, nil
}

// flagged is the [Tool] [WithFlags] returns.
type flagged struct {
	inner Tool
	spec  Spec
}

// Spec implements [Tool]. It returns a copy.
func (f *flagged) Spec() Spec { return cloneSpec(f.spec) }

// Call implements [Tool].
func (f *flagged) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return f.inner.Call(ctx, args)
}

// ValidateArgs implements [Validator] for tools that validate; others
// accept any arguments here, as they would unwrapped.
func (f *flagged) ValidateArgs(args json.RawMessage) error {
	if v, ok := f.inner.(Validator); ok {
		return v.ValidateArgs(args)
	}
	return nil
}

// UserInputFields implements [UserInputAsker] for tools that ask.
func (f *flagged) UserInputFields(args json.RawMessage) ([]run.UserInputField, error) {
	if asker, ok := f.inner.(UserInputAsker); ok {
		return asker.UserInputFields(args)
	}
	return cloneSpec(f.spec).UserInputSchema, nil
}
