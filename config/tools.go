package config

import (
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/tools/workspace"
)

// buildTools builds the toolkits an agent lists and returns their tools and
// the instructions they add to the agent's system message.
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
			toolkit, err := workspace.New(workspace.Config{Root: ws.Root, ConfirmWrites: new(ws.ConfirmWrites)})
			if err != nil {
				return nil, nil, err
			}
			tools = append(tools, toolkit.Tools()...)
			instructions = append(instructions, toolkit.Instructions())
		}
	}
	return tools, instructions, nil
}
