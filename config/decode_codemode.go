package config

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agnogo/agnogo/codemode"
)

// CodeMode is a native agent's code_mode: instead of its tools, the model
// gets run_code, in which it writes a Starlark program calling them (see
// package codemode). A zero field takes codemode's default.
type CodeMode struct {
	// MaxSteps bounds one program's Starlark steps. Defaults to
	// codemode.DefaultMaxSteps.
	MaxSteps int
	// Timeout bounds one program's run (written in seconds). Defaults to
	// codemode.DefaultTimeout.
	Timeout time.Duration
	// MaxOutputBytes bounds what one program returns. Defaults to
	// codemode.DefaultMaxOutputBytes.
	MaxOutputBytes int
	// MaxToolCalls bounds one program's tool calls. Defaults to
	// codemode.DefaultMaxToolCalls.
	MaxToolCalls int
	// Line is where the key is.
	Line int
}

// codeModeKeys are the keys of code_mode written as a mapping.
var codeModeKeys = []string{"max_steps", "timeout_seconds", "max_output_bytes", "max_tool_calls"}

// codeMode reads code_mode: true, false, or a mapping of limits.
func (d *decoder) codeMode(node *yaml.Node, what string) *CodeMode {
	node = deref(node)
	if node.Kind != yaml.MappingNode {
		if !d.boolean(node, what) {
			return nil
		}
		return &CodeMode{Line: node.Line}
	}
	c := &CodeMode{Line: node.Line}
	for _, f := range d.fields(node, what) {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "max_steps":
			c.MaxSteps = d.integer(f.value, keyWhat, 1)
		case "timeout_seconds":
			c.Timeout = time.Duration(d.number(f.value, keyWhat, 0.001, 86400) * float64(time.Second))
		case "max_output_bytes":
			c.MaxOutputBytes = d.integer(f.value, keyWhat, 1)
		case "max_tool_calls":
			c.MaxToolCalls = d.integer(f.value, keyWhat, 1)
		default:
			d.unknownKey(f, what, codeModeKeys)
		}
	}
	return c
}

// config is the codemode.Config the settings describe.
func (c *CodeMode) config() codemode.Config {
	return codemode.Config{MaxSteps: uint64(c.MaxSteps), Timeout: c.Timeout, MaxOutputBytes: c.MaxOutputBytes, MaxToolCalls: c.MaxToolCalls}
}
