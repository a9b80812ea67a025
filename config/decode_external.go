package config

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

// claudeTools reads a claude agent's tools: the claude CLI's tool names.
// agnogo's own toolkit names are refused, as the likely mix-up they are.
func (d *decoder) claudeTools(node *yaml.Node, what string) []string {
	tools := d.nonEmptyStrings(node, what)
	for i, name := range tools {
		if slices.Contains(allToolkitNames(), name) {
			d.errorf(deref(node).Content[i], "%s: %q is an agnogo toolkit, for agents without a type key; a claude agent takes the claude CLI's tool names, such as Bash, Read, Edit", what, name)
		}
	}
	return tools
}

// nonEmptyStrings reads a list of strings none of which may be empty.
func (d *decoder) nonEmptyStrings(node *yaml.Node, what string) []string {
	values := d.strings(node, what)
	if node = deref(node); node == nil || node.Kind != yaml.SequenceNode {
		return values
	}
	for i, value := range values {
		if value == "" {
			d.errorf(node.Content[i], "%s: an item is empty", what)
		}
	}
	return values
}

// settingSources reads claude's setting_sources list.
func (d *decoder) settingSources(node *yaml.Node, what string) []string {
	node = deref(node)
	if isNull(node) {
		return nil
	}
	if node.Kind != yaml.SequenceNode {
		d.errorf(node, "%s: want a list such as [user, project], got %s", what, kindName(node))
		return nil
	}
	sources := make([]string, 0, len(node.Content))
	for _, item := range node.Content {
		sources = append(sources, d.oneOf(item, what, false, claudeSettingSources...))
	}
	return sources
}

// env reads an external agent's environment variables, refusing those its
// driver manages.
func (d *decoder) env(node *yaml.Node, what, agentType string) map[string]string {
	fields := d.fields(node, what)
	if len(fields) == 0 {
		return nil
	}
	env := make(map[string]string, len(fields))
	for _, f := range fields {
		name := f.name()
		instead, managed := managedEnv[agentType][name]
		switch {
		case !envNamePattern.MatchString(name):
			d.errorf(f.key, "%s: %q is not a variable name; use letters, digits and _, not starting with a digit", what, name)
		case managed && instead != "":
			d.errorf(f.key, "%s: %s is managed by agnogo; set %s instead", what, name, instead)
		case managed:
			d.errorf(f.key, "%s: %s is managed by agnogo and cannot be set", what, name)
		}
		env[name] = d.str(f.value, label(name, what))
	}
	return env
}

// mcpServers reads claude's mcp_servers: a mapping from a server's name to
// its settings, as Claude Code's .mcp.json writes them.
func (d *decoder) mcpServers(node *yaml.Node, what string) map[string]any {
	fields := d.fields(node, what)
	if len(fields) == 0 {
		return nil
	}
	servers := make(map[string]any, len(fields))
	for _, f := range fields {
		serverWhat := label(f.name(), what)
		settings := d.jsonObject(f.value, serverWhat, "a mapping such as {command: npx, args: [-y, my-server]} or {type: http, url: https://…}")
		if settings == nil {
			continue
		}
		if _, hasCommand := settings["command"]; !hasCommand {
			if _, hasURL := settings["url"]; !hasURL {
				d.errorf(f.value, "%s: want a command (a local server) or a url (type: http or sse)", serverWhat)
			}
		}
		servers[f.name()] = settings
	}
	return servers
}

// jsonObject reads a mapping as the JSON object it writes; want describes
// it in the error for anything else. Null is nil.
func (d *decoder) jsonObject(node *yaml.Node, what, want string) map[string]any {
	node = deref(node)
	if isNull(node) {
		return nil
	}
	if node.Kind != yaml.MappingNode {
		d.errorf(node, "%s: want %s, got %s", what, want, kindName(node))
		return nil
	}
	object, _ := d.jsonValue(node, what).(map[string]any)
	return object
}
