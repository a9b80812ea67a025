// Package mcp gives an agent the tools of an MCP server (Model Context
// Protocol): over stdio (a command this process starts), Streamable HTTP or
// SSE, with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// [Connect] connects once, lists the server's tools and wraps each as a
// [tool.Tool]: its name (with an optional prefix), description and input
// schema as the server declares them. A call goes to the server over the
// same session; a session that dropped is connected again once before the
// call fails. Whatever goes wrong — the server answers isError, times out,
// or cannot be reached — the model reads it as the tool's result, and the
// run goes on.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// The transports a server is reached over.
const (
	// TransportStdio starts Command and speaks MCP over its stdin and
	// stdout. The default when Command is set.
	TransportStdio = "stdio"
	// TransportHTTP is Streamable HTTP at URL. The default when URL is set.
	TransportHTTP = "http"
	// TransportSSE is the older HTTP+SSE transport at URL.
	TransportSSE = "sse"
)

// DefaultTimeout bounds one call of a server's tool unless the config says
// otherwise.
const DefaultTimeout = 30 * time.Second

// Config says how to reach one MCP server and which of its tools to use.
type Config struct {
	// Name names the server (the key of mcp_servers); it is used in logs and
	// errors. Defaults to a name derived from Command or URL.
	Name string
	// Type is stdio, http (Streamable HTTP) or sse. Defaults to stdio with
	// a Command, http with a URL.
	Type string

	// Command and Args start a stdio server. The command is run directly,
	// not through a shell: one holding a shell metacharacter (& | ; ` $ ( ))
	// is refused.
	Command string
	Args    []string
	// Env is added to this process's environment for the command.
	Env map[string]string
	// Dir is the command's working directory. Defaults to this process's.
	Dir string

	// URL is an HTTP server's endpoint.
	URL string
	// Headers are sent with every HTTP request (an Authorization header,
	// say).
	Headers map[string]string
	// HeaderProvider, when set, adds headers to each HTTP request from the
	// request's context — the run's, during a call (see runhost.FromContext
	// for the run's user and session).
	HeaderProvider func(ctx context.Context) map[string]string
	// HTTPClient makes the HTTP requests. Defaults to http.DefaultClient.
	HTTPClient *http.Client

	// Timeout bounds one call. Defaults to [DefaultTimeout].
	Timeout time.Duration
	// IncludeTools keeps only these tools (by the server's names); empty
	// keeps all. ExcludeTools drops these.
	IncludeTools []string
	ExcludeTools []string
	// ToolNamePrefix is put before each tool's name ("fs_" makes read_file
	// fs_read_file). Tools keep the server's names without one.
	ToolNamePrefix string
	// RequiresConfirmationTools, ExternalExecutionRequiredTools and
	// StopAfterToolCallTools name tools (by the server's names) whose calls
	// pause for a person's confirmation, are executed by the caller, or end
	// the run with their result.
	RequiresConfirmationTools      []string
	ExternalExecutionRequiredTools []string
	StopAfterToolCallTools         []string

	// Logger receives the connection's logs. Defaults to slog.Default().
	Logger *slog.Logger
}

// shellMetacharacters may not appear in a stdio command.
const shellMetacharacters = "&|;`$()"

// check refuses a config that cannot work.
func (c *Config) check() error {
	var errs []error
	switch c.Type {
	case "":
		switch {
		case c.Command != "" && c.URL != "":
			errs = append(errs, errors.New("give a command (stdio) or a url (http, sse), not both"))
		case c.Command != "":
			c.Type = TransportStdio
		case c.URL != "":
			c.Type = TransportHTTP
		default:
			errs = append(errs, errors.New("give a command (a stdio server) or a url (an HTTP server)"))
		}
	case TransportStdio, TransportHTTP, TransportSSE:
	case "streamable-http", "streamable_http":
		c.Type = TransportHTTP
	default:
		errs = append(errs, fmt.Errorf("type %q is not one of stdio, http, sse", c.Type))
	}
	switch c.Type {
	case TransportStdio:
		if c.Command == "" {
			errs = append(errs, errors.New("a stdio server needs a command"))
		}
		for _, part := range append([]string{c.Command}, c.Args...) {
			if strings.ContainsAny(part, shellMetacharacters) {
				errs = append(errs, fmt.Errorf("command %q holds a shell metacharacter (one of %s): MCP commands run without a shell", part, shellMetacharacters))
				break
			}
		}
	case TransportHTTP, TransportSSE:
		if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
			errs = append(errs, fmt.Errorf("url %q: want an http:// or https:// URL", c.URL))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s must not be negative", c.Timeout))
	}
	if c.Name == "" {
		c.Name = c.Command
		if c.Name == "" {
			c.Name = c.URL
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("mcp server %s: %w", c.Name, err)
	}
	return nil
}

// Server is a connected MCP server. It is safe for concurrent use.
type Server struct {
	cfg    Config
	client *sdk.Client

	mu      sync.Mutex
	session *sdk.ClientSession
	tools   []tool.Tool
	closed  bool
}

// Connect connects to the server cfg names and lists its tools.
func Connect(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, client: sdk.NewClient(&sdk.Implementation{Name: "agnogo", Version: "1"}, nil)}
	session, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.session = session
	listed, err := s.list(ctx, session)
	if err != nil {
		_ = session.Close()
		return nil, err
	}
	s.tools = listed
	return s, nil
}

// Name is the server's name.
func (s *Server) Name() string { return s.cfg.Name }

// Tools returns the server's tools, as configured (included, prefixed,
// flagged).
func (s *Server) Tools() []tool.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

// Close ends the session (and stops a stdio server's process).
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.session == nil {
		return nil
	}
	err := s.session.Close()
	s.session = nil
	if err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		return fmt.Errorf("mcp server %s: close: %w", s.cfg.Name, err)
	}
	return nil
}

// connect opens a session.
func (s *Server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	var transport sdk.Transport
	switch s.cfg.Type {
	case TransportStdio:
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Dir = s.cfg.Dir
		cmd.Env = os.Environ()
		for k, v := range s.cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = &logWriter{log: s.cfg.Logger, server: s.cfg.Name}
		transport = &sdk.CommandTransport{Command: cmd}
	case TransportSSE:
		transport = &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}
	default:
		transport = &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient(), DisableStandaloneSSE: true}
	}
	connectCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	session, err := s.client.Connect(connectCtx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: connect: %w", s.cfg.Name, err)
	}
	return session, nil
}

// httpClient adds the configured and provided headers to every request.
func (s *Server) httpClient() *http.Client {
	base := s.cfg.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	next := base.Transport
	if next == nil {
		// A transport of the server's own: its connections are not
		// http.DefaultTransport's, which anything in the process may close
		// (httptest servers do) under a request in flight.
		next = http.DefaultTransport.(*http.Transport).Clone()
	}
	c := *base
	// A call made under a traced run carries its traceparent, so the
	// server's own traces join the run's.
	c.Transport = &headerTransport{next: observe.Transport(next), headers: s.cfg.Headers, provider: s.cfg.HeaderProvider}
	return &c
}

// headerTransport sets headers on each request.
type headerTransport struct {
	next     http.RoundTripper
	headers  map[string]string
	provider func(ctx context.Context) map[string]string
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 && t.provider == nil {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if t.provider != nil {
		for k, v := range t.provider(req.Context()) {
			req.Header.Set(k, v)
		}
	}
	return t.next.RoundTrip(req)
}

// list reads the server's tools and wraps those configured.
func (s *Server) list(ctx context.Context, session *sdk.ClientSession) ([]tool.Tool, error) {
	listCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var out []tool.Tool
	for t, err := range session.Tools(listCtx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: list tools: %w", s.cfg.Name, err)
		}
		if len(s.cfg.IncludeTools) > 0 && !slices.Contains(s.cfg.IncludeTools, t.Name) || slices.Contains(s.cfg.ExcludeTools, t.Name) {
			continue
		}
		wrapped, err := s.wrap(t)
		if err != nil {
			return nil, err
		}
		out = append(out, wrapped)
	}
	for _, name := range s.cfg.IncludeTools {
		if !slices.ContainsFunc(out, func(t tool.Tool) bool { return t.Spec().Name == s.cfg.ToolNamePrefix+name }) {
			return nil, fmt.Errorf("mcp server %s has no tool %q (include_tools)", s.cfg.Name, name)
		}
	}
	return out, nil
}

// wrap makes one of the server's tools an agent's tool.
func (s *Server) wrap(t *sdk.Tool) (tool.Tool, error) {
	params, err := json.Marshal(t.InputSchema)
	if err != nil || string(params) == "null" {
		params = []byte(`{"type":"object","properties":{}}`)
	}
	spec := tool.Spec{
		Name: s.cfg.ToolNamePrefix + t.Name, Description: t.Description, Parameters: params,
		RequiresConfirmation: slices.Contains(s.cfg.RequiresConfirmationTools, t.Name),
		ExternalExecution:    slices.Contains(s.cfg.ExternalExecutionRequiredTools, t.Name),
		StopAfterToolCall:    slices.Contains(s.cfg.StopAfterToolCallTools, t.Name),
	}
	return &remoteTool{server: s, name: t.Name, spec: spec}, nil
}

// remoteTool is one of a server's tools.
type remoteTool struct {
	server *Server
	name   string // the server's name for it
	spec   tool.Spec
}

// Spec implements tool.Tool.
func (t *remoteTool) Spec() tool.Spec { return t.spec }

// Call implements tool.Tool: the call's result as text, or an error the
// model reads.
func (t *remoteTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var arguments map[string]any
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &arguments); err != nil {
			return "", fmt.Errorf("MCP tool '%s': arguments are not a JSON object: %w", t.name, err)
		}
	}
	result, err := t.server.call(ctx, t.name, arguments)
	if err != nil {
		return "", err
	}
	text, images := resultText(result)
	tool.AddImages(ctx, images...)
	if result.IsError {
		return "", fmt.Errorf("Error from MCP tool '%s': %s", t.name, text)
	}
	return text, nil
}

// call calls a tool, connecting again once when the session dropped.
func (s *Server) call(ctx context.Context, name string, arguments map[string]any) (*sdk.CallToolResult, error) {
	for attempt := 0; ; attempt++ {
		session, err := s.current(ctx)
		if err != nil {
			return nil, fmt.Errorf("MCP tool '%s' failed: %w. The MCP server may be unreachable.", name, err)
		}
		callCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		result, err := session.CallTool(callCtx, &sdk.CallToolParams{Name: name, Arguments: arguments})
		cancel()
		if err == nil {
			return result, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		dropped := errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing)
		if !dropped || attempt > 0 {
			return nil, fmt.Errorf("MCP tool '%s' failed: %w. The MCP server may be unreachable or the request timed out.", name, err)
		}
		s.cfg.Logger.WarnContext(ctx, "mcp session dropped; connecting again", "server", s.cfg.Name, "error", err)
		s.drop(session)
	}
}

// current returns the session, connecting a new one when there is none.
func (s *Server) current(ctx context.Context) (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the server's connection was closed")
	}
	if s.session != nil {
		return s.session, nil
	}
	session, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.session = session
	return session, nil
}

// drop forgets a session that failed, unless another call replaced it.
func (s *Server) drop(session *sdk.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == session {
		_ = session.Close()
		s.session = nil
	}
}

// resultText renders a call's result as the model reads it: its text
// blocks joined; an image (kept as one of the run's images), audio or an
// embedded resource named by a line; the structured content as JSON when
// there is no text.
func resultText(result *sdk.CallToolResult) (string, []run.Image) {
	var parts []string
	var images []run.Image
	for _, c := range result.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			images = append(images, run.Image{ID: run.NewUUID(), Content: c.Data, MimeType: c.MIMEType,
				Format: strings.TrimPrefix(c.MIMEType, "image/")})
			parts = append(parts, fmt.Sprintf("Image has been generated and added to the response (%s, %d bytes).", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[Audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.EmbeddedResource:
			data, _ := json.Marshal(c.Resource)
			parts = append(parts, "[Embedded resource: "+string(data)+"]")
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[Resource: %s %s]", c.Name, c.URI))
		default:
			parts = append(parts, fmt.Sprintf("[Unsupported content type: %T]", c))
		}
	}
	text := strings.Join(parts, "\n")
	if strings.TrimSpace(text) == "" && result.StructuredContent != nil {
		data, err := json.Marshal(result.StructuredContent)
		if err == nil {
			text = string(data)
		}
	}
	return text, images
}

// logWriter passes a stdio server's stderr on to the log, line by line.
type logWriter struct {
	log    *slog.Logger
	server string
}

// Write implements io.Writer.
func (w *logWriter) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.log.Debug("mcp server stderr", "server", w.server, "line", line)
		}
	}
	return len(p), nil
}
