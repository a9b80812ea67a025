package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agnogo/agnogo/run"
)

// Config describes a tool built with [New] or [Func]. Only Name is required.
type Config struct {
	// Name is what the model calls: 1 to 64 letters, digits, '_' or '-', the
	// rule every provider accepts. Required.
	Name string
	// Description tells the model what the tool does and when to use it.
	// Defaults to empty, which leaves the model guessing from the name.
	Description string
	// RequiresConfirmation pauses the run before each call until a person
	// confirms or rejects it. Defaults to false.
	RequiresConfirmation bool
	// RequiresUserInput pauses the run until a person supplies the fields of
	// UserInputSchema. Defaults to false.
	RequiresUserInput bool
	// UserInputSchema lists the fields a person must supply when
	// RequiresUserInput is set. Defaults to one field per property of the
	// parameters schema, as Agno does when no user-input fields are named.
	UserInputSchema []run.UserInputField
	// ExternalExecution pauses the run: the caller executes the tool and
	// sends back its result. Defaults to false.
	ExternalExecution bool
	// StopAfterToolCall ends the model loop after this tool's result, which
	// becomes the run's answer; a failed call does not end it. Defaults to
	// false.
	StopAfterToolCall bool
	// RequiresApproval makes each call wait for an admin's approval; see
	// [Spec.RequiresApproval]. It implies RequiresConfirmation unless
	// RequiresUserInput or ExternalExecution is set. Defaults to false.
	RequiresApproval bool
	// ShowResult shows each successful call's result to the user as run
	// content, as well as giving it to the model. Defaults to false.
	ShowResult bool
}

// namePattern is the tool-name rule shared by OpenAI, Anthropic and Gemini.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validateName reports a name the providers would reject.
func validateName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("invalid tool name %q: want 1 to 64 letters, digits, '_' or '-'", name)
	}
	return nil
}

// New returns a tool that calls fn with the model's arguments decoded into
// Args and reports fn's Result to the model.
//
// The parameters schema is inferred from Args with jsonschema.For: Args must
// be a struct or a map with string keys (or a pointer to one). Struct fields
// use their json names; fields without omitempty or omitzero are required; a
// `jsonschema:"…"` tag becomes the property's description; unknown properties
// are rejected. Every call's arguments are validated against that schema
// before fn runs; a mismatch is returned as an [*ArgumentError] and fn is not
// called.
//
// A string Result is returned as is; any other Result is encoded as JSON. A
// panic in fn is recovered and returned as a [*PanicError].
func New[Args, Result any](cfg Config, fn func(ctx context.Context, args Args) (Result, error)) (Tool, error) {
	if fn == nil {
		return nil, fmt.Errorf("tool %s: nil function", cfg.Name)
	}
	argsType := reflect.TypeFor[Args]()
	for argsType.Kind() == reflect.Pointer {
		argsType = argsType.Elem()
	}
	if argsType.Kind() != reflect.Struct && argsType.Kind() != reflect.Map {
		return nil, fmt.Errorf("tool %s: arguments type %s is not a struct or a map: the model sends a JSON object", cfg.Name, reflect.TypeFor[Args]())
	}
	// The dereferenced type gives an object schema rather than
	// ["null","object"]: the model always sends an object.
	schema, err := jsonschema.ForType(argsType, nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: infer parameters schema: %w", cfg.Name, err)
	}
	if schema.Properties == nil && argsType.Kind() == reflect.Struct {
		// An empty struct still lists its (no) properties; some providers
		// require the key on object schemas.
		schema.Properties = map[string]*jsonschema.Schema{}
	}
	b, err := newBase(cfg, schema)
	if err != nil {
		return nil, err
	}
	return &typedTool[Args, Result]{base: b, fn: fn}, nil
}

// MustNew is like [New] but panics if the tool cannot be built. It is meant
// for package-level tool variables whose configuration is fixed in code.
func MustNew[Args, Result any](cfg Config, fn func(ctx context.Context, args Args) (Result, error)) Tool {
	t, err := New(cfg, fn)
	if err != nil {
		panic(err)
	}
	return t
}

// Func returns a tool with a hand-written JSON Schema for its parameters, for
// toolkits that describe their arguments themselves and for tools whose
// arguments have no Go type. fn receives the raw JSON object; the arguments
// are validated against parameters first, as in [New]. A nil parameters
// means a tool without arguments. The schema must describe an object.
func Func(cfg Config, parameters json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (string, error)) (Tool, error) {
	if fn == nil {
		return nil, fmt.Errorf("tool %s: nil function", cfg.Name)
	}
	if len(parameters) == 0 {
		parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	schema := new(jsonschema.Schema)
	if err := json.Unmarshal(parameters, schema); err != nil {
		return nil, fmt.Errorf("tool %s: parse parameters schema: %w", cfg.Name, err)
	}
	b, err := newBase(cfg, schema)
	if err != nil {
		return nil, err
	}
	// Keep the caller's own text (compacted): its key order is what the
	// author chose to show the model.
	compact, err := compactJSON(parameters)
	if err != nil {
		return nil, fmt.Errorf("tool %s: parse parameters schema: %w", cfg.Name, err)
	}
	b.spec.Parameters = compact
	return &rawTool{base: b, fn: fn}, nil
}

// base holds what every schema-checked tool shares: its spec and the
// resolved schema its arguments are validated against. It is never modified
// after construction, so tools are safe for concurrent use.
type base struct {
	spec     Spec
	resolved *jsonschema.Resolved
}

func newBase(cfg Config, schema *jsonschema.Schema) (base, error) {
	if err := validateName(cfg.Name); err != nil {
		return base{}, err
	}
	if !isObjectSchema(schema) {
		return base{}, fmt.Errorf("tool %s: parameters schema must have type \"object\"", cfg.Name)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return base{}, fmt.Errorf("tool %s: resolve parameters schema: %w", cfg.Name, err)
	}
	params, err := json.Marshal(schema)
	if err != nil {
		return base{}, fmt.Errorf("tool %s: encode parameters schema: %w", cfg.Name, err)
	}
	inputSchema := slices.Clone(cfg.UserInputSchema)
	if cfg.RequiresUserInput && len(inputSchema) == 0 {
		inputSchema = userInputFields(schema)
	}
	return base{
		spec: withApprovalDefaults(Spec{
			Name:                 cfg.Name,
			Description:          cfg.Description,
			Parameters:           params,
			RequiresConfirmation: cfg.RequiresConfirmation,
			RequiresUserInput:    cfg.RequiresUserInput,
			UserInputSchema:      inputSchema,
			ExternalExecution:    cfg.ExternalExecution,
			StopAfterToolCall:    cfg.StopAfterToolCall,
			ShowResult:           cfg.ShowResult,
			RequiresApproval:     cfg.RequiresApproval,
		}),
		resolved: resolved,
	}, nil
}

// Spec implements [Tool]. It returns a copy: callers may change it freely.
func (b *base) Spec() Spec {
	return cloneSpec(b.spec)
}

// checkedName returns the name, validated when the tool was built; it lets
// [CheckNames] skip copying the spec and matching the name again.
func (b *base) checkedName() string { return b.spec.Name }

// ValidateArgs implements [Validator].
func (b *base) ValidateArgs(args json.RawMessage) error {
	_, err := b.check(args)
	return err
}

// check validates args against the schema and returns them normalised: an
// empty or null argument string, which some models send for tools without
// parameters, reads as {}.
func (b *base) check(args json.RawMessage) (json.RawMessage, error) {
	args = normalizeArgs(args)
	var instance any
	if err := json.Unmarshal(args, &instance); err != nil {
		return nil, &ArgumentError{Tool: b.spec.Name, Reason: "arguments are not valid JSON: " + err.Error(), Err: err}
	}
	if _, ok := instance.(map[string]any); !ok {
		return nil, &ArgumentError{Tool: b.spec.Name, Reason: fmt.Sprintf("arguments must be a JSON object, got %s", jsonKind(instance))}
	}
	if err := b.resolved.Validate(instance); err != nil {
		return nil, &ArgumentError{Tool: b.spec.Name, Reason: describeValidationError(err), Err: err}
	}
	return args, nil
}

// typedTool is the [Tool] built by [New].
type typedTool[Args, Result any] struct {
	base
	fn func(ctx context.Context, args Args) (Result, error)
}

// Call implements [Tool].
func (t *typedTool[Args, Result]) Call(ctx context.Context, raw json.RawMessage) (out string, err error) {
	raw, err = t.check(raw)
	if err != nil {
		return "", err
	}
	var args Args
	if err := json.Unmarshal(raw, &args); err != nil {
		// The schema accepted what Go cannot hold, e.g. 1.0 for an int.
		return "", &ArgumentError{Tool: t.spec.Name, Reason: err.Error(), Err: err}
	}
	defer recoverPanic(t.spec.Name, &err)
	result, err := t.fn(ctx, args)
	if err != nil {
		return "", err
	}
	return encodeResult(t.spec.Name, result)
}

// rawTool is the [Tool] built by [Func].
type rawTool struct {
	base
	fn func(ctx context.Context, args json.RawMessage) (string, error)
}

// Call implements [Tool].
func (t *rawTool) Call(ctx context.Context, raw json.RawMessage) (out string, err error) {
	raw, err = t.check(raw)
	if err != nil {
		return "", err
	}
	defer recoverPanic(t.spec.Name, &err)
	return t.fn(ctx, raw)
}

// encodeResult renders a result for the model: strings as they are, anything
// else as JSON.
func encodeResult(name string, result any) (string, error) {
	if s, ok := result.(string); ok {
		return s, nil
	}
	data, err := json.Marshal(result)
	if err != nil {
		return "", fmt.Errorf("tool %s: encode result: %w", name, err)
	}
	return string(data), nil
}

// isObjectSchema reports whether s describes JSON objects only.
func isObjectSchema(s *jsonschema.Schema) bool {
	if s.Type != "" {
		return s.Type == "object"
	}
	return len(s.Types) == 1 && s.Types[0] == "object"
}

// userInputFields derives Agno's user-input schema from the properties of a
// parameters schema, in property order.
func userInputFields(s *jsonschema.Schema) []run.UserInputField {
	names := slices.Clone(s.PropertyOrder)
	for name := range s.Properties {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) > len(s.PropertyOrder) {
		slices.Sort(names[len(s.PropertyOrder):])
	}
	fields := make([]run.UserInputField, 0, len(names))
	for _, name := range names {
		prop := s.Properties[name]
		fields = append(fields, run.UserInputField{Name: name, FieldType: pythonType(prop), Description: prop.Description})
	}
	return fields
}

// pythonType names a property's type as Agno does in user_input_schema.
func pythonType(s *jsonschema.Schema) string {
	typ := s.Type
	if typ == "" {
		for _, t := range s.Types {
			if t != "null" {
				typ = t
				break
			}
		}
	}
	switch typ {
	case "integer":
		return "int"
	case "number":
		return "float"
	case "boolean":
		return "bool"
	case "array":
		return "list"
	case "object":
		return "dict"
	default:
		return "str"
	}
}
