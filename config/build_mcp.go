package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/tools/mcp"
)

// connectMCP connects the MCP servers of the file's native agents, all at
// once, and returns them by their entries. A server that cannot be reached
// (or lists no tool include_tools names) is an [*Error] at its line naming
// the server and the agent; the servers connected are closed then.
func (f *File) connectMCP(ctx context.Context, opts BuildOptions) (map[*MCPServer]*mcp.Server, error) {
	type job struct {
		agent  *Agent
		entry  *MCPServer
		server *mcp.Server
		err    error
	}
	var jobs []*job
	for _, a := range f.Agents {
		if a.External() {
			continue
		}
		for _, entry := range a.MCP {
			jobs = append(jobs, &job{agent: a, entry: entry})
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			cfg := j.entry.mcpConfig()
			cfg.Logger = opts.Logger.With("agent", j.agent.ID)
			j.server, j.err = mcp.Connect(ctx, cfg)
		})
	}
	wg.Wait()
	servers := make(map[*MCPServer]*mcp.Server, len(jobs))
	var failed error
	for _, j := range jobs {
		if j.err != nil && failed == nil {
			failed = f.errorAt(j.entry.Line, j.agent, j.err)
		}
		if j.server != nil {
			servers[j.entry] = j.server
		}
	}
	if failed != nil {
		_ = closeMCP(servers)
		return nil, failed
	}
	return servers, nil
}

// closeMCP closes MCP servers (stopping the processes of stdio ones).
func closeMCP(servers map[*MCPServer]*mcp.Server) error {
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// addMCPTools adds the tools of a's MCP servers to the tools its other
// keys built. A tool whose name another of the agent's tools has is a
// [*toolsError] at the server's line naming both.
func addMCPTools(a *Agent, tools []tool.Tool, connected map[*MCPServer]*mcp.Server) ([]tool.Tool, error) {
	if len(a.MCP) == 0 {
		return tools, nil
	}
	// owner names where each tool of the agent comes from.
	owners := map[string]string{}
	for _, t := range tools {
		name := t.Spec().Name
		if toolkit := toolkitOf(name, a.Tools); toolkit != "" {
			owners[name] = fmt.Sprintf("tool %q of the %s toolkit", name, toolkit)
		} else {
			owners[name] = fmt.Sprintf("tool %q declared in tools", name)
		}
	}
	if a.OffloadToolResults {
		// agent's offload tools (package agent does not export their names).
		for _, name := range []string{"read_result", "search_result"} {
			owners[name] = fmt.Sprintf("tool %q that offload_tool_results adds", name)
		}
	}
	if a.EnableAgenticMemory {
		owners[agent.AgenticMemoryToolName] = fmt.Sprintf("tool %q that enable_agentic_memory adds", agent.AgenticMemoryToolName)
	}
	tools = slices.Clone(tools)
	for _, entry := range a.MCP {
		server, ok := connected[entry]
		if !ok {
			return nil, &toolsError{err: fmt.Errorf("mcp server %s was not connected: build the file with File.Build", entry.Name), line: entry.Line}
		}
		serverTools := server.Tools()
		if err := tool.CheckNames(serverTools); err != nil {
			return nil, &toolsError{err: fmt.Errorf("mcp server %s: %w", entry.Name, err), line: entry.Line}
		}
		for _, t := range serverTools {
			name := t.Spec().Name
			if owner, clash := owners[name]; clash {
				return nil, &toolsError{err: fmt.Errorf("tool %q of mcp server %s has the name of the %s; set tool_name_prefix on the server, "+
					"or list the tool in its exclude_tools", name, entry.Name, owner), line: entry.Line}
			}
			owners[name] = fmt.Sprintf("tool %q of mcp server %s", name, entry.Name)
		}
		tools = append(tools, serverTools...)
	}
	return tools, nil
}
