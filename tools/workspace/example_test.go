package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/tools/workspace"
)

func ExampleNew() {
	root, err := os.MkdirTemp("", "workspace-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	_ = os.WriteFile(filepath.Join(root, "notes.md"), []byte("# Notes\nship it\n"), 0o644)
	_ = os.WriteFile(filepath.Join(root, ".env"), []byte("API_KEY=sk-secret\n"), 0o600)

	ws, err := workspace.New(workspace.Config{Root: root})
	if err != nil {
		panic(err)
	}
	tools, err := tool.NewSet(ws.Tools()...)
	if err != nil {
		panic(err)
	}
	calls := []run.ToolCall{
		{ID: "call_1", Function: run.ToolCallFunction{Name: "read_file", Arguments: `{"path":"notes.md"}`}},
		{ID: "call_2", Function: run.ToolCallFunction{Name: "read_file", Arguments: `{"path":".env"}`}},
		{ID: "call_3", Function: run.ToolCallFunction{Name: "list_files", Arguments: `{}`}},
		{ID: "call_4", Function: run.ToolCallFunction{Name: "write_file", Arguments: `{"path":"out.txt","content":"x"}`}},
	}
	for _, outcome := range tool.Execute(context.Background(), tools, calls, tool.ExecuteOptions{}) {
		if outcome.Paused() {
			fmt.Printf("%s: waiting for confirmation\n", outcome.Execution.ToolCallID)
			continue
		}
		fmt.Printf("%s:\n%s\n", outcome.Execution.ToolCallID, *outcome.Execution.Result)
	}
	// Output:
	// call_1:
	//      1	# Notes
	//      2	ship it
	// call_2:
	// refused: .env is a credential file (matches ".env*"); the workspace tools never read or write it
	// call_3:
	// notes.md	16B
	// call_4: waiting for confirmation
}
