package config

import (
	"context"
	"fmt"
	"slices"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/tools/workspace"
)

// buildTools builds the toolkits an agent lists and the tools its entries
// flag or declare, and returns the tools and the instructions they add to
// the agent's system message. An error is a [*toolsError] at the line of
// the settings at fault.
func buildTools(a *Agent) ([]tool.Tool, []string, error) {
	var tools []tool.Tool
	var instructions []string
	for _, name := range a.Tools {
		switch name {
		case ToolWorkspace:
			ws := a.Workspace
			if ws == nil {
				ws = &Workspace{Root: ".", ConfirmWrites: true}
			}
			toolkit, err := workspace.New(workspace.Config{Root: ws.Root, ConfirmWrites: new(ws.ConfirmWrites), MaxReadBytes: ws.MaxReadBytes,
				MaxShellOutputBytes: ws.MaxShellOutputBytes, ShellTimeout: ws.ShellTimeout})
			if err != nil {
				return nil, nil, &toolsError{err: err, line: ws.Line}
			}
			tools = append(tools, toolkit.Tools()...)
			instructions = append(instructions, toolkit.Instructions())
		case ToolUserControlFlow:
			tools = append(tools, tool.GetUserInput())
			instructions = append(instructions, tool.GetUserInputInstructions)
		default:
			built, extra, err := buildToolkit(context.Background(), name, a.ToolkitSettings[name])
			if err != nil {
				return nil, nil, &toolsError{err: err, line: a.Line}
			}
			tools = append(tools, built...)
			if extra != "" {
				instructions = append(instructions, extra)
			}
		}
	}
	for _, options := range a.ToolOptions {
		if options.Declared() {
			declared, err := declaredTool(options)
			if err != nil {
				return nil, nil, &toolsError{err: fmt.Errorf("tool %s: %w", options.Name, err), line: options.Line}
			}
			tools = append(tools, declared)
			continue
		}
		i := slices.IndexFunc(tools, func(t tool.Tool) bool { return t.Spec().Name == options.Name })
		if i < 0 {
			return nil, nil, &toolsError{err: fmt.Errorf("tool %s: the %s toolkit has no such tool", options.Name, options.Toolkit), line: options.Line}
		}
		flagged, err := tool.WithFlags(tools[i], tool.Flags{
			RequiresConfirmation: options.RequiresConfirmation,
			RequiresUserInput:    options.RequiresUserInput,
			UserInputFields:      options.UserInputFields,
			ExternalExecution:    options.ExternalExecution,
			StopAfterToolCall:    options.StopAfterToolCall,
			ShowResult:           options.ShowResult,
		})
		if err != nil {
			return nil, nil, &toolsError{err: err, line: options.Line}
		}
		tools[i] = flagged
	}
	return tools, instructions, nil
}
