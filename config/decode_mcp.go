package config

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agnogo/agnogo/tools/mcp"
)

// MCPServer is one entry of a native agent's mcp_servers: an MCP server
// whose tools the agent gets (package tools/mcp). It is written as Claude
// Code's .mcp.json writes a server — {command, args, env, cwd} for a local
// (stdio) server, {type: http|sse, url, headers} for a remote one — plus
// agnogo's keys choosing and flagging its tools.
type MCPServer struct {
	// Name is the server's key in mcp_servers.
	Name string
	// Type is stdio, http (Streamable HTTP; streamable-http is accepted)
	// or sse. Defaults to stdio with a command, http with a url.
	Type string
	// Command and Args start a stdio server, without a shell.
	Command string
	Args    []string
	// Env is added to agnogo's environment for the command. Defaults to
	// nil.
	Env map[string]string
	// Cwd is the command's working directory, relative to the directory
	// agnogo runs in. Defaults to "": that directory.
	Cwd string
	// URL is an HTTP or SSE server's endpoint.
	URL string
	// Headers are sent with every request to an HTTP or SSE server.
	// Defaults to nil.
	Headers map[string]string
	// Timeout bounds connecting and each tool call (timeout_seconds).
	// Defaults to [mcp.DefaultTimeout].
	Timeout time.Duration
	// IncludeTools keeps only these tools (by the server's names); nil
	// keeps all. ExcludeTools drops these.
	IncludeTools, ExcludeTools []string
	// ToolNamePrefix is put before each tool's name. Defaults to "": the
	// server's names.
	ToolNamePrefix string
	// RequiresConfirmationTools, ExternalExecutionRequiredTools and
	// StopAfterToolCallTools flag tools (by the server's names).
	RequiresConfirmationTools, ExternalExecutionRequiredTools, StopAfterToolCallTools []string
	// Line is where the server's entry is.
	Line int
}

// mcpConfig is the tools/mcp configuration of the server.
func (s *MCPServer) mcpConfig() mcp.Config {
	return mcp.Config{
		Name: s.Name, Type: s.Type, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Cwd, URL: s.URL, Headers: s.Headers,
		Timeout: s.Timeout, IncludeTools: s.IncludeTools, ExcludeTools: s.ExcludeTools, ToolNamePrefix: s.ToolNamePrefix,
		RequiresConfirmationTools: s.RequiresConfirmationTools, ExternalExecutionRequiredTools: s.ExternalExecutionRequiredTools,
		StopAfterToolCallTools: s.StopAfterToolCallTools,
	}
}

// The keys of a native agent's MCP server.
var (
	mcpServerKeys = []string{"type", "command", "args", "env", "cwd", "url", "headers", "timeout_seconds", "include_tools",
		"exclude_tools", "tool_name_prefix", "requires_confirmation_tools", "external_execution_required_tools",
		"stop_after_tool_call_tools"}
	// mcpTypes maps each accepted type to tools/mcp's.
	mcpTypes = map[string]string{
		"stdio": mcp.TransportStdio, "http": mcp.TransportHTTP, "streamable-http": mcp.TransportHTTP,
		"streamable_http": mcp.TransportHTTP, "sse": mcp.TransportSSE,
	}
	// mcpShellMetacharacters may not appear in a server's command or args
	// (tools/mcp runs them without a shell and refuses them).
	mcpShellMetacharacters = "&|;`$()"
	// toolPrefixPattern is what tool_name_prefix may be.
	toolPrefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)
	// headerNamePattern is what an HTTP header's name may be.
	headerNamePattern = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
)

// mcpServerExample shows a server entry in messages.
const mcpServerExample = "a mapping such as {command: npx, args: [-y, my-server]} or {type: http, url: https://…}"

// nativeMCPServers reads a native agent's mcp_servers, in file order.
func (d *decoder) nativeMCPServers(node *yaml.Node, what string) []*MCPServer {
	fields := d.fields(node, what)
	servers := make([]*MCPServer, 0, len(fields))
	for _, f := range fields {
		if server := d.decodeMCPServer(f, what); server != nil {
			servers = append(servers, server)
		}
	}
	return servers
}

// decodeMCPServer reads one server of a native agent's mcp_servers.
func (d *decoder) decodeMCPServer(entry field, serversWhat string) *MCPServer {
	what := label(entry.name(), serversWhat)
	node := deref(entry.value)
	if isNull(node) || node.Kind != yaml.MappingNode {
		d.errorf(entry.value, "%s: want %s, got %s", what, mcpServerExample, kindName(node))
		return nil
	}
	s := &MCPServer{Name: entry.name(), Line: entry.key.Line}
	if s.Name == "" {
		d.errorf(entry.key, "%s: a server needs a name", serversWhat)
	}
	var typeNode, commandNode, urlNode, headersNode, envNode, cwdNode *yaml.Node
	lists := map[string]*yaml.Node{}
	for _, f := range d.fields(node, what) {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "type":
			typeNode = f.value
			written := d.str(f.value, keyWhat)
			if s.Type = mcpTypes[written]; s.Type == "" && written != "" {
				d.errorf(f.value, "%s: %q is not one of stdio, http, streamable-http, sse", keyWhat, written)
			}
		case "command":
			commandNode = f.value
			s.Command = d.str(f.value, keyWhat)
			if s.Command == "" {
				d.errorf(f.value, "%s is empty", keyWhat)
			} else if strings.ContainsAny(s.Command, mcpShellMetacharacters) {
				d.errorf(f.value, "%s: %q holds a shell metacharacter (one of %s); the command runs without a shell, so give the "+
					"program in command and its arguments in args", keyWhat, s.Command, mcpShellMetacharacters)
			}
		case "args":
			s.Args = d.strings(f.value, keyWhat)
			for i, arg := range s.Args {
				if strings.ContainsAny(arg, mcpShellMetacharacters) {
					d.errorf(deref(f.value).Content[i], "%s: %q holds a shell metacharacter (one of %s); MCP commands run without a shell",
						keyWhat, arg, mcpShellMetacharacters)
				}
			}
		case "env":
			envNode = f.value
			s.Env = d.stringMap(f.value, keyWhat, func(name string) string {
				if !envNamePattern.MatchString(name) {
					return "is not a variable name; use letters, digits and _, not starting with a digit"
				}
				return ""
			})
		case "cwd":
			cwdNode = f.value
			s.Cwd = d.str(f.value, keyWhat)
		case "url":
			urlNode = f.value
			s.URL = d.str(f.value, keyWhat)
			if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
				d.errorf(f.value, "%s: %q is not an http:// or https:// URL", keyWhat, s.URL)
			}
		case "headers":
			headersNode = f.value
			s.Headers = d.stringMap(f.value, keyWhat, func(name string) string {
				if !headerNamePattern.MatchString(name) {
					return "is not an HTTP header name"
				}
				return ""
			})
		case "timeout_seconds":
			seconds := d.number(f.value, keyWhat, 0.001, 24*60*60)
			s.Timeout = time.Duration(seconds * float64(time.Second))
		case "tool_name_prefix":
			s.ToolNamePrefix = d.str(f.value, keyWhat)
			if !toolPrefixPattern.MatchString(s.ToolNamePrefix) {
				d.errorf(f.value, "%s: %q may hold only letters, digits, '_' and '-', as tool names do", keyWhat, s.ToolNamePrefix)
			}
		case "include_tools", "exclude_tools", "requires_confirmation_tools", "external_execution_required_tools", "stop_after_tool_call_tools":
			lists[f.name()] = f.value
			values := d.nonEmptyStrings(f.value, keyWhat)
			switch f.name() {
			case "include_tools":
				s.IncludeTools = values
			case "exclude_tools":
				s.ExcludeTools = values
			case "requires_confirmation_tools":
				s.RequiresConfirmationTools = values
			case "external_execution_required_tools":
				s.ExternalExecutionRequiredTools = values
			case "stop_after_tool_call_tools":
				s.StopAfterToolCallTools = values
			}
		default:
			d.unknownKey(f, what, mcpServerKeys)
		}
	}
	switch {
	case commandNode != nil && urlNode != nil:
		d.errorf(urlNode, "%s: give a command (a stdio server) or a url (an http or sse server), not both", what)
	case commandNode == nil && urlNode == nil:
		d.errorf(entry.value, "%s: want a command (a stdio server) or a url (type: http or sse)", what)
	case commandNode != nil && s.Type != "" && s.Type != mcp.TransportStdio:
		d.errorf(typeNode, "%s: type %s takes a url, not a command", what, s.Type)
	case urlNode != nil && s.Type == mcp.TransportStdio:
		d.errorf(typeNode, "%s: type stdio takes a command, not a url", what)
	case commandNode != nil:
		s.Type = mcp.TransportStdio
		if headersNode != nil {
			d.errorf(headersNode, "%s: headers are for an http or sse server; give a stdio server env instead", what)
		}
	case urlNode != nil:
		if s.Type == "" {
			s.Type = mcp.TransportHTTP
		}
		for _, n := range []*yaml.Node{envNode, cwdNode} {
			if n != nil {
				d.errorf(n, "%s: env and cwd are for a stdio server (command); an http or sse server takes headers", what)
			}
		}
	}
	d.checkMCPToolLists(s, what, lists)
	return s
}

// checkMCPToolLists reports tool lists of a server that contradict each
// other: a tool both included and excluded, or flagged but excluded.
func (d *decoder) checkMCPToolLists(s *MCPServer, what string, lists map[string]*yaml.Node) {
	for _, name := range s.ExcludeTools {
		if slices.Contains(s.IncludeTools, name) {
			d.errorf(lists["exclude_tools"], "%s: %q is in both include_tools and exclude_tools", what, name)
		}
	}
	flagged := []struct {
		key   string
		names []string
	}{
		{"requires_confirmation_tools", s.RequiresConfirmationTools},
		{"external_execution_required_tools", s.ExternalExecutionRequiredTools},
		{"stop_after_tool_call_tools", s.StopAfterToolCallTools},
	}
	for _, flag := range flagged {
		for _, name := range flag.names {
			if slices.Contains(s.ExcludeTools, name) || len(s.IncludeTools) > 0 && !slices.Contains(s.IncludeTools, name) {
				d.errorf(lists[flag.key], "%s: %s names %q, which include_tools or exclude_tools leaves out", what, flag.key, name)
			}
		}
	}
}

// stringMap reads a mapping of names to strings; check returns why a name
// is refused, or "".
func (d *decoder) stringMap(node *yaml.Node, what string, check func(name string) string) map[string]string {
	fields := d.fields(node, what)
	if len(fields) == 0 {
		return nil
	}
	values := make(map[string]string, len(fields))
	for _, f := range fields {
		if why := check(f.name()); why != "" {
			d.errorf(f.key, "%s: %q %s", what, f.name(), why)
		}
		values[f.name()] = d.str(f.value, label(f.name(), what))
	}
	return values
}
