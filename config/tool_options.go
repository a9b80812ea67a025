package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/tools/workspace"
)

// ToolOptions is an entry of a native agent's tools written as a mapping
// instead of a toolkit's name. Named after a tool of a listed toolkit, it
// changes that tool's flags (nil flags keep the toolkit's). Named otherwise,
// it declares a tool agnogo has no code for: ExternalExecution (the client
// runs it and sends its result with the continue request) or
// RequiresUserInput (a person supplies the UserInputFields, and those values
// are the result).
type ToolOptions struct {
	// Name is the tool's name. Required.
	Name string
	// Description tells the model what a declared tool does. Defaults to
	// "".
	Description string
	// Parameters is a declared tool's JSON Schema (an object schema).
	// Defaults to an object with no properties.
	Parameters json.RawMessage
	// RequiresConfirmation pauses the run before each call until a person
	// confirms or rejects it.
	RequiresConfirmation *bool
	// RequiresUserInput pauses the run until a person supplies
	// UserInputFields.
	RequiresUserInput *bool
	// UserInputFields name the arguments a person supplies. Defaults to
	// every property of the parameters.
	UserInputFields []string
	// ExternalExecution pauses the run: the client executes the call and
	// sends back its result.
	ExternalExecution *bool
	// StopAfterToolCall ends the model loop after the call's result.
	StopAfterToolCall *bool
	// ShowResult shows each successful call's result to the user as run
	// content, before the model's answer.
	ShowResult *bool
	// Toolkit is the listed toolkit whose tool the entry flags; "" for a
	// declared tool.
	Toolkit string
	// Line is where the entry is.
	Line int
}

// Declared reports whether the entry declares a tool of its own rather
// than flagging a toolkit's.
func (t *ToolOptions) Declared() bool { return t.Toolkit == "" }

// builtinToolkit is a toolkit the tools key can name, with the names of
// its tools.
type builtinToolkit struct {
	name  string
	tools []string
}

// builtinToolkits are the toolkits the tools key names, in the
// documentation's order.
var builtinToolkits = []builtinToolkit{
	{ToolWorkspace, []string{workspace.ReadFileName, workspace.ListFilesName, workspace.SearchFilesName,
		workspace.WriteFileName, workspace.EditFileName, workspace.RunShellName}},
	{ToolUserControlFlow, []string{tool.GetUserInputName}},
}

// allToolkits are the built-in toolkits and the registered ones, in the
// documentation's order.
func allToolkits() []builtinToolkit {
	all := slices.Clone(builtinToolkits)
	for _, name := range toolkits().Names() {
		def, _ := toolkits().Lookup(name)
		all = append(all, builtinToolkit{name: name, tools: def.ToolNames()})
	}
	return all
}

// toolkitNames lists the built-in toolkits for messages.
func toolkitNames() string { return strings.Join(allToolkitNames(), ", ") }

// toolkitOf returns the toolkit among listed that has a tool called name,
// or "".
func toolkitOf(name string, listed []string) string {
	for _, toolkit := range allToolkits() {
		if slices.Contains(listed, toolkit.name) && slices.Contains(toolkit.tools, name) {
			return toolkit.name
		}
	}
	return ""
}

// The keys of a tool entry.
var (
	toolOptionKeys = []string{"name", "description", "parameters", "requires_confirmation", "requires_user_input",
		"user_input_fields", "external_execution", "stop_after_tool_call", "show_result"}
)

// nativeTools reads the tools list of an agnogo agent: toolkit names, a
// registered toolkit with its settings written as a one-key mapping
// (web_search: {provider: tavily}), and tool entries written as mappings.
func (d *decoder) nativeTools(node *yaml.Node, what, agentWhat string) ([]string, map[string]json.RawMessage, []*ToolOptions) {
	node = deref(node)
	if isNull(node) {
		return nil, nil, nil
	}
	if node.Kind != yaml.SequenceNode {
		d.errorf(node, "%s: want a list such as [a, b], got %s", what, kindName(node))
		return nil, nil, nil
	}
	var listed []string
	var settings map[string]json.RawMessage
	var options []*ToolOptions
	for i, item := range node.Content {
		var name string
		if mapping := deref(item); mapping.Kind == yaml.MappingNode {
			key, value, ok := toolkitWithSettings(mapping)
			if !ok {
				options = append(options, d.decodeToolOptions(item, i, agentWhat))
				continue
			}
			name = key
			if settings == nil {
				settings = map[string]json.RawMessage{}
			}
			settings[name] = d.toolkitSettings(value, fmt.Sprintf("toolkit %s %s", name, where(agentWhat)))
		} else {
			name = d.str(item, what)
		}
		switch {
		case toolkitOf(name, allToolkitNames()) != "":
			toolkit := toolkitOf(name, allToolkitNames())
			d.errorf(item, "tools %s: %q is a tool of the %s toolkit, not a toolkit: list %s (it brings all its tools), and add {name: %s, …} to change the tool's flags",
				where(agentWhat), name, toolkit, toolkit, name)
		case !slices.Contains(allToolkitNames(), name):
			d.errorf(item, "unknown tool %q %s; the built-in toolkits are: %s (declare a tool of your own as a mapping, such as {name: %s, external_execution: true})",
				name, where(agentWhat), toolkitNames(), exampleToolName(name))
		case slices.Contains(listed, name):
			d.errorf(item, "tool %q is listed twice %s", name, where(agentWhat))
		default:
			if _, registered := toolkits().Lookup(name); registered {
				if _, _, err := buildToolkit(context.Background(), name, settings[name]); err != nil {
					d.errorf(item, "tools %s: %v", where(agentWhat), err)
				}
			} else if settings[name] != nil {
				d.errorf(item, "tools %s: the %s toolkit takes no settings here; list it by name", where(agentWhat), name)
			}
		}
		listed = append(listed, name)
	}
	return listed, settings, options
}

// toolkitWithSettings reports whether a tools entry written as a mapping
// is a registered toolkit with its settings — one key, the toolkit's name,
// whose value is a mapping or empty — rather than a tool entry.
func toolkitWithSettings(node *yaml.Node) (string, *yaml.Node, bool) {
	if len(node.Content) != 2 {
		return "", nil, false
	}
	key, value := node.Content[0], deref(node.Content[1])
	if key.Value == "name" || (value.Kind != yaml.MappingNode && !isNull(value)) {
		return "", nil, false
	}
	return key.Value, value, true
}

// toolkitSettings reads a toolkit's settings mapping as JSON.
func (d *decoder) toolkitSettings(node *yaml.Node, what string) json.RawMessage {
	if isNull(node) {
		return nil
	}
	encoded, err := json.Marshal(d.jsonValue(node, what))
	if err != nil {
		d.errorf(node, "%s: %v", what, err)
		return nil
	}
	return encoded
}

// exampleToolName is name when it is a valid tool name, for a message's
// example, else a placeholder.
func exampleToolName(name string) string {
	if schemaNamePattern.MatchString(name) {
		return name
	}
	return "my_tool"
}

// decodeToolOptions reads one tool entry written as a mapping.
func (d *decoder) decodeToolOptions(node *yaml.Node, index int, agentWhat string) *ToolOptions {
	options := &ToolOptions{Line: deref(node).Line}
	what := fmt.Sprintf("tools[%d] of %s", index, agentWhat)
	fields := d.fields(node, what)
	hasName := false
	for _, f := range fields {
		if f.name() == "name" {
			hasName = true
			options.Name = d.str(f.value, label("name", what))
			if options.Name != "" {
				what = fmt.Sprintf("tool %q of %s", options.Name, agentWhat)
				if !schemaNamePattern.MatchString(options.Name) {
					d.errorf(f.value, "%s: the name must be 1 to 64 letters, digits, '_' or '-'", what)
				}
			}
		}
	}
	if !hasName || options.Name == "" {
		d.errorf(node, "%s has no name; add name: followed by the tool's name", what)
	}
	flag := func(f field) *bool { return new(d.boolean(f.value, label(f.name(), what))) }
	for _, f := range fields {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "name":
		case "description":
			options.Description = d.str(f.value, keyWhat)
		case "parameters":
			options.Parameters = d.toolParameters(f.value, keyWhat)
		case "requires_confirmation":
			options.RequiresConfirmation = flag(f)
		case "requires_user_input":
			options.RequiresUserInput = flag(f)
		case "user_input_fields":
			options.UserInputFields = d.nonEmptyStrings(f.value, keyWhat)
		case "external_execution":
			options.ExternalExecution = flag(f)
		case "stop_after_tool_call":
			options.StopAfterToolCall = flag(f)
		case "show_result":
			options.ShowResult = flag(f)
		default:
			d.unknownKey(f, what, toolOptionKeys)
		}
	}
	return options
}

// toolParameters reads a declared tool's parameters: a JSON Schema written
// as YAML, or as a JSON string.
func (d *decoder) toolParameters(node *yaml.Node, what string) json.RawMessage {
	node = deref(node)
	switch {
	case node.Kind == yaml.MappingNode:
		encoded, err := json.Marshal(d.jsonValue(node, what))
		if err != nil {
			d.errorf(node, "%s: %v", what, err)
			return nil
		}
		return encoded
	case node.Kind == yaml.ScalarNode && json.Valid([]byte(node.Value)):
		return json.RawMessage(node.Value)
	}
	d.errorf(node, "%s: want a JSON Schema as a mapping, such as {type: object, properties: {city: {type: string}}, required: [city]}, got %s",
		what, kindName(node))
	return nil
}

// checkToolOptions tells the tool entries that flag a listed toolkit's
// tool from those that declare one, and reports what cannot work: a
// repeated name, a declared tool agnogo has no way to run, settings that
// do not fit the kind of entry.
func (d *decoder) checkToolOptions(a *Agent, what string) {
	seen := map[string]int{}
	reserved := map[string]string{}
	if a.OffloadToolResults {
		reserved["read_result"], reserved["search_result"] = "offload_tool_results", "offload_tool_results"
	}
	if a.EnableAgenticMemory {
		reserved[agent.AgenticMemoryToolName] = "enable_agentic_memory"
	}
	for _, options := range a.ToolOptions {
		if options.Name == "" {
			continue
		}
		toolWhat := fmt.Sprintf("tool %q %s", options.Name, where(what))
		if line, dup := seen[options.Name]; dup {
			d.errorAt(options.Line, "%s is listed twice (first at line %d)", toolWhat, line)
			continue
		}
		seen[options.Name] = options.Line
		if key, taken := reserved[options.Name]; taken {
			d.errorAt(options.Line, "%s: the name is taken by the tool %s adds; name it otherwise", toolWhat, key)
			continue
		}
		asksInput := options.RequiresUserInput != nil && *options.RequiresUserInput
		if len(options.UserInputFields) > 0 && !asksInput {
			d.errorAt(options.Line, "%s: user_input_fields needs requires_user_input: true", toolWhat)
		}
		options.Toolkit = toolkitOf(options.Name, a.Tools)
		if !options.Declared() {
			if options.Description != "" || options.Parameters != nil {
				d.errorAt(options.Line, "%s is the %s toolkit's: description and parameters are for tools declared in the file; set only its flags",
					toolWhat, options.Toolkit)
			}
			continue
		}
		external := options.ExternalExecution != nil && *options.ExternalExecution
		switch {
		case !external && !asksInput:
			hint := ""
			if toolkit := toolkitOf(options.Name, allToolkitNames()); toolkit != "" {
				hint = fmt.Sprintf(" (%s is a tool of the %s toolkit: add %s to tools)", options.Name, toolkit, toolkit)
			}
			d.errorAt(options.Line, "%s is not a tool of a listed toolkit%s, and agnogo has no code for it: declare how its calls are answered "+
				"with external_execution: true (the client runs it and sends the result) or requires_user_input: true (a person fills in its arguments)",
				toolWhat, hint)
			continue
		case external && asksInput:
			d.errorAt(options.Line, "%s: give external_execution or requires_user_input, not both", toolWhat)
			continue
		}
		if _, err := declaredTool(options); err != nil {
			d.errorAt(options.Line, "%s: %s", toolWhat, strings.TrimPrefix(err.Error(), "tool "+options.Name+": "))
		}
	}
}

// allToolkitNames lists every built-in toolkit.
func allToolkitNames() []string {
	all := allToolkits()
	names := make([]string, len(all))
	for i, toolkit := range all {
		names[i] = toolkit.name
	}
	return names
}

// errExternalTool is what a declared external tool answers if it is ever
// called: its calls pause the run instead, for the client to run.
var errExternalTool = errors.New("this tool is executed by the client, which sends its result with the continue request")

// declaredTool builds a tool declared in the file: one that pauses each
// call for the client to run it (external_execution), or for a person to
// fill in its user-input fields, whose values are then its result.
func declaredTool(options *ToolOptions) (tool.Tool, error) {
	cfg := tool.Config{
		Name:              options.Name,
		Description:       options.Description,
		ExternalExecution: options.ExternalExecution != nil && *options.ExternalExecution,
		StopAfterToolCall: options.StopAfterToolCall != nil && *options.StopAfterToolCall,
		ShowResult:        options.ShowResult != nil && *options.ShowResult,
	}
	if options.RequiresConfirmation != nil {
		cfg.RequiresConfirmation = *options.RequiresConfirmation
	}
	parameters := options.Parameters
	if len(parameters) == 0 {
		parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if cfg.ExternalExecution {
		return tool.Func(cfg, parameters, func(ctx context.Context, args json.RawMessage) (string, error) { return "", errExternalTool })
	}
	cfg.RequiresUserInput = true
	fields, err := tool.UserInputFields(tool.Spec{Name: options.Name, Parameters: parameters}, options.UserInputFields)
	if err != nil {
		return nil, err
	}
	if len(fields) == 0 {
		return nil, errors.New("requires_user_input asks a person for the tool's arguments, but its parameters have no properties: " +
			"add parameters: {type: object, properties: {…}}")
	}
	cfg.UserInputSchema = fields
	return tool.Func(cfg, parameters, func(_ context.Context, args json.RawMessage) (string, error) {
		return userInputResult(fields, args)
	})
}

// userInputResult is a declared user-input tool's result: the values the
// person gave, as a JSON object.
func userInputResult(fields []run.UserInputField, args json.RawMessage) (string, error) {
	var values map[string]any
	if err := json.Unmarshal(args, &values); err != nil {
		return "", fmt.Errorf("read the user's input: %w", err)
	}
	answers := make(map[string]any, len(fields))
	for _, field := range fields {
		answers[field.Name] = values[field.Name]
	}
	encoded, err := json.Marshal(answers)
	if err != nil {
		return "", fmt.Errorf("encode the user's input: %w", err)
	}
	return string(encoded), nil
}
