package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agnogo/agnogo/tool"
)

// The AgentOS MCP server (mcp.md §b.1–b.3) serves the OS's own actions as
// MCP tools at /mcp over Streamable HTTP, with stateful sessions. Each tool
// is answered by the REST route it mirrors, called in this process with
// the caller's own credentials: the route's authentication, scopes and
// user scoping apply unchanged (a tool can do nothing its REST route would
// refuse), and user_id is the caller's under isolation whatever the
// arguments say.

// MCPServerConfig configures the MCP server; see [Config.MCPServer].
type MCPServerConfig struct {
	// Enabled serves the MCP server at /mcp.
	Enabled bool
	// IncludeTags and ExcludeTags choose the built-in tools by tag: core
	// (get_agentos_config, run_agent, run_team, run_workflow,
	// continue_run, cancel_run) and session (get_sessions,
	// get_session_runs). Defaults to all.
	IncludeTags []string
	ExcludeTags []string
	// ResultMode is trimmed (a run's answer and {run_id, session_id,
	// status, requirements}) or full (the whole run as structured
	// content). Defaults to trimmed.
	ResultMode string
	// AllowedOrigins are the browser origins a request may come from
	// (requests without an Origin header are not browsers'). Defaults to
	// the CORS origins when the server has auth, and to localhost only
	// when it has none.
	AllowedOrigins []string
	// Tools are custom tools served beside the built-in ones, under their
	// own names and schemas; their calls are checked against the scope
	// mcp_tools:<name>:run (or mcp_tools:run, or the admin scope) when JWT
	// scopes are on or the caller presents a service-account token, and
	// their context carries the caller
	// ([CallerFromContext]). A tool error, or a call that needs a person
	// (confirmation, user input, external execution), is a tool error the
	// client reads. Defaults to none.
	Tools []tool.Tool
}

// mcpToolsResource is the RBAC resource of the MCP server's custom tools.
const mcpToolsResource = "mcp_tools"

// CallerFromContext returns the authenticated caller of a request, or of
// an MCP call of a custom tool; false outside one.
func CallerFromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// mcpPath is where the MCP server is served.
const mcpPath = "/mcp"

// The tags of the built-in tools.
const (
	mcpTagCore    = "core"
	mcpTagSession = "session"
)

// checkMCP refuses an MCP configuration that cannot work.
func (c *MCPServerConfig) check() error {
	switch c.ResultMode {
	case "", "trimmed", "full":
	default:
		return fmt.Errorf("mcp_server.result_mode %q: want trimmed or full", c.ResultMode)
	}
	for _, tag := range slices.Concat(c.IncludeTags, c.ExcludeTags) {
		if tag != mcpTagCore && tag != mcpTagSession {
			return fmt.Errorf("mcp_server tag %q: want core or session", tag)
		}
	}
	builtin := []string{"get_agentos_config", "run_agent", "run_team", "run_workflow", "continue_run", "cancel_run", "get_sessions", "get_session_runs"}
	if _, err := tool.NewSet(c.Tools...); err != nil {
		return fmt.Errorf("mcp_server tools: %w", err)
	}
	for _, t := range c.Tools {
		if name := t.Spec().Name; slices.Contains(builtin, name) {
			return fmt.Errorf("mcp_server tools: %q is the name of a built-in tool", name)
		}
	}
	return nil
}

// mcpRoutes mounts the MCP server when it is enabled.
func (o *OS) mcpRoutes(mux *http.ServeMux) {
	if !o.mcpEnabled() {
		return
	}
	server := o.mcpServer()
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)
	mux.Handle(mcpPath, o.withMCPOrigin(handler))
}

// mcpEnabled reports whether the MCP server is served.
func (o *OS) mcpEnabled() bool { return o.cfg.MCPServer != nil && o.cfg.MCPServer.Enabled }

// withMCPOrigin refuses requests from browser origins the server does not
// allow, and from anywhere but this machine when the server has no auth.
func (o *OS) withMCPOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open := !o.auth.enabled()
		if open && !isLoopback(r.Host) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_host", "detail": "Host not allowed: an MCP server without auth answers localhost only."})
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !o.mcpOriginAllowed(origin, open) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_origin", "detail": "Origin not allowed."})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mcpOriginAllowed reports whether a browser origin may use the MCP
// server.
func (o *OS) mcpOriginAllowed(origin string, open bool) bool {
	allowed := o.cfg.MCPServer.AllowedOrigins
	if len(allowed) == 0 {
		if open {
			u, err := url.Parse(origin)
			return err == nil && isLoopback(u.Host)
		}
		allowed = o.cfg.CORSAllowedOrigins
		if len(allowed) == 0 {
			allowed = defaultCORSOrigins
		}
	}
	return slices.Contains(allowed, origin) || slices.Contains(allowed, "*")
}

// isLoopback reports whether a host (with or without port) is this
// machine.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// mcpServer builds the MCP server with the built-in tools its tags keep.
func (o *OS) mcpServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: o.cfg.Name, Version: o.cfg.Version}, nil)
	cfg := o.cfg.MCPServer
	keep := func(tag string) bool {
		return (len(cfg.IncludeTags) == 0 || slices.Contains(cfg.IncludeTags, tag)) && !slices.Contains(cfg.ExcludeTags, tag)
	}
	if keep(mcpTagCore) {
		sdk.AddTool(s, &sdk.Tool{Name: "get_agentos_config", Description: "The AgentOS's configuration: its agents, teams, workflows and databases.",
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}}, o.mcpConfig)
		for _, kind := range []struct{ name, plural, id string }{{"agent", "agents", "agent_id"}, {"team", "teams", "team_id"}, {"workflow", "workflows", "workflow_id"}} {
			sdk.AddTool(s, &sdk.Tool{Name: "run_" + kind.name, Description: "Run " + article(kind.name) + " " + kind.name + " on a message and return its answer.",
				InputSchema: mcpRunSchema(kind.id)}, o.mcpRun(kind.plural, kind.id))
		}
		sdk.AddTool(s, &sdk.Tool{Name: "continue_run", Description: "Continue a paused run with its requirements resolved; name its agent_id, team_id or workflow_id.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false)}}, o.mcpContinue)
		sdk.AddTool(s, &sdk.Tool{Name: "cancel_run", Description: "Cancel a run in flight; name its agent_id, team_id or workflow_id.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true}}, o.mcpCancel)
	}
	if keep(mcpTagSession) {
		sdk.AddTool(s, &sdk.Tool{Name: "get_sessions", Description: "List sessions, newest first.",
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, o.mcpSessions)
		sdk.AddTool(s, &sdk.Tool{Name: "get_session_runs", Description: "A session's runs (or one of them, with run_id).",
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, o.mcpSessionRuns)
	}
	for _, t := range cfg.Tools {
		spec := t.Spec()
		schema := spec.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		s.AddTool(&sdk.Tool{Name: spec.Name, Description: spec.Description, InputSchema: schema}, o.mcpCustom(t, spec))
	}
	return s
}

// mcpCustom answers a call of a custom tool: the caller is authenticated
// as on the REST routes — a service account's token in every auth mode,
// even without authentication, where other callers are admins — and needs
// mcp_tools:<name>:run; the tool's arguments are validated as in a run.
func (o *OS) mcpCustom(t tool.Tool, spec tool.Spec) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p := Principal{Admin: true}
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, mcpPath, nil)
		if extra := req.GetExtra(); extra != nil && extra.Header != nil {
			r.Header.Set("Authorization", extra.Header.Get("Authorization"))
		}
		if o.auth.enabled() || presentsServiceAccount(r) {
			var (
				status int
				detail string
			)
			if p, status, detail = o.auth.identify(r); detail != "" {
				return errorResult(fmt.Sprintf("%d %s: %s", status, http.StatusText(status), detail)), nil
			}
			if !o.allowed(p, mcpToolsResource, spec.Name, "run") {
				return errorResult("403 Forbidden: " + forbiddenDetail(mcpToolsResource, spec.Name, "run")), nil
			}
		}
		if spec.RequiresConfirmation || spec.RequiresUserInput || spec.ExternalExecution {
			return errorResult(fmt.Sprintf("tool %s waits for a person or the client before each call, which an MCP call cannot: run it inside an agent", spec.Name)), nil
		}
		args := req.Params.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		if v, ok := t.(tool.Validator); ok {
			if err := v.ValidateArgs(args); err != nil {
				return errorResult(err.Error()), nil
			}
		}
		result, err := t.Call(context.WithValue(ctx, principalKey{}, p), args)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: result}}}, nil
	}
}

// errorResult is a failed tool call as the MCP client reads it.
func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

func article(noun string) string {
	if strings.IndexByte("aeiou", noun[0]) >= 0 {
		return "an"
	}
	return "a"
}

// mcpRunSchema is the input schema of run_agent, run_team and run_workflow.
func mcpRunSchema(idKey string) map[string]any {
	return map[string]any{"type": "object", "required": []string{idKey, "message"}, "properties": map[string]any{
		idKey:        map[string]any{"type": "string", "description": "Which one to run."},
		"message":    map[string]any{"type": "string", "description": "The input."},
		"session_id": map[string]any{"type": "string", "description": "Continue this session; a new one when left out."},
		"user_id":    map[string]any{"type": "string", "description": "The user the run belongs to; under user isolation always the caller."},
	}}
}

// restCall is a call of one of the OS's REST routes on behalf of an MCP
// tool call, with the caller's credentials.
type restCall struct {
	method, path string
	query        url.Values
	form         url.Values
}

// call answers a tool call by the REST route it mirrors, in this process,
// with the headers of the MCP request (its Authorization): the route's
// auth, scopes and user scoping apply as they would to the caller.
func (o *OS) call(ctx context.Context, req *sdk.CallToolRequest, c restCall) (int, []byte) {
	target := c.path
	if len(c.query) > 0 {
		target += "?" + c.query.Encode()
	}
	var body *bytes.Reader
	if c.form != nil {
		body = bytes.NewReader([]byte(c.form.Encode()))
	} else {
		body = bytes.NewReader(nil)
	}
	r := httptest.NewRequestWithContext(ctx, c.method, target, body)
	r.Host = "localhost"
	if c.form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		if auth := extra.Header.Get("Authorization"); auth != "" {
			r.Header.Set("Authorization", auth)
		}
	}
	w := httptest.NewRecorder()
	o.handler.ServeHTTP(w, r)
	return w.Code, w.Body.Bytes()
}

// toolError is a failed REST call as the MCP client reads it.
func toolError(status int, body []byte) (*sdk.CallToolResult, error) {
	var e struct {
		Detail any `json:"detail"`
	}
	detail := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Detail != nil {
		detail = fmt.Sprint(e.Detail)
	}
	return nil, fmt.Errorf("%d %s: %s", status, http.StatusText(status), detail)
}

// jsonResult is a REST answer as structured content.
func jsonResult(body []byte) (*sdk.CallToolResult, any, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, nil, fmt.Errorf("read the answer: %w", err)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(body)}}, StructuredContent: v}, nil, nil
}

func (o *OS) mcpConfig(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
	status, body := o.call(ctx, req, restCall{method: http.MethodGet, path: "/config"})
	if status != http.StatusOK {
		res, err := toolError(status, body)
		return res, nil, err
	}
	return jsonResult(body)
}

// runArgs are the arguments of run_agent, run_team and run_workflow (one
// id key is used).
type runArgs struct {
	AgentID    string `json:"agent_id,omitempty"`
	TeamID     string `json:"team_id,omitempty"`
	WorkflowID string `json:"workflow_id,omitempty"`
	Message    string `json:"message"`
	SessionID  string `json:"session_id,omitempty"`
	UserID     string `json:"user_id,omitempty"`
}

func (a runArgs) id(key string) string {
	switch key {
	case "team_id":
		return a.TeamID
	case "workflow_id":
		return a.WorkflowID
	}
	return a.AgentID
}

// mcpRun runs an agent, a team or a workflow through POST /{plural}/{id}/runs.
func (o *OS) mcpRun(plural, idKey string) sdk.ToolHandlerFor[runArgs, any] {
	return func(ctx context.Context, req *sdk.CallToolRequest, args runArgs) (*sdk.CallToolResult, any, error) {
		id := args.id(idKey)
		if id == "" || strings.TrimSpace(args.Message) == "" {
			return nil, nil, fmt.Errorf("%s and message are required", idKey)
		}
		form := url.Values{"message": {args.Message}, "stream": {"false"}}
		// A missing session_id is a new session each call, never sticky.
		form.Set("session_id", args.SessionID)
		if args.SessionID == "" {
			form.Set("session_id", newID())
		}
		if args.UserID != "" {
			form.Set("user_id", args.UserID)
		}
		status, body := o.call(ctx, req, restCall{method: http.MethodPost, path: "/" + plural + "/" + url.PathEscape(id) + "/runs", form: form})
		if status != http.StatusOK {
			res, err := toolError(status, body)
			return res, nil, err
		}
		return o.runResult(body)
	}
}

// runResult is a run as a tool's result: its answer as text, and in the
// trimmed mode {run_id, session_id, status, requirements when paused} as
// structured content (the whole run in the full mode).
func (o *OS) runResult(body []byte) (*sdk.CallToolResult, any, error) {
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, nil, fmt.Errorf("read the run: %w", err)
	}
	answer := ""
	switch c := out["content"].(type) {
	case string:
		answer = c
	case nil:
	default:
		data, _ := json.Marshal(c)
		answer = string(data)
	}
	requirements, _ := out["requirements"].([]any)
	if steps, ok := out["step_requirements"].([]any); ok {
		requirements = steps
	}
	if out["status"] == "PAUSED" && answer == "" {
		answer = fmt.Sprintf("Run paused: %d requirement(s) awaiting resolution.", len(requirements))
	}
	structured := any(out)
	if o.cfg.MCPServer.ResultMode != "full" {
		trimmed := map[string]any{"run_id": out["run_id"], "session_id": out["session_id"], "status": out["status"]}
		if out["status"] == "PAUSED" {
			trimmed["requirements"] = requirements
		}
		structured = trimmed
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: answer}}, StructuredContent: structured}, nil, nil
}

// runRefArgs name a run and its runner (exactly one id).
type runRefArgs struct {
	RunID        string `json:"run_id"`
	SessionID    string `json:"session_id,omitempty"`
	AgentID      string `json:"agent_id,omitempty"`
	TeamID       string `json:"team_id,omitempty"`
	WorkflowID   string `json:"workflow_id,omitempty"`
	UserID       string `json:"user_id,omitempty"`
	Requirements []any  `json:"requirements,omitempty"`
}

// runPath is the path of the run a tool names: /agents/A/runs/R (or
// teams, workflows).
func (a runRefArgs) runPath() (string, string, error) {
	var ids []string
	plural, id := "", ""
	for _, c := range []struct{ plural, id string }{{"agents", a.AgentID}, {"teams", a.TeamID}, {"workflows", a.WorkflowID}} {
		if c.id != "" {
			ids = append(ids, c.plural)
			plural, id = c.plural, c.id
		}
	}
	if len(ids) != 1 || a.RunID == "" {
		return "", "", fmt.Errorf("give run_id and exactly one of agent_id, team_id, workflow_id")
	}
	return "/" + plural + "/" + url.PathEscape(id) + "/runs/" + url.PathEscape(a.RunID), plural, nil
}

func (o *OS) mcpContinue(ctx context.Context, req *sdk.CallToolRequest, args runRefArgs) (*sdk.CallToolResult, any, error) {
	path, plural, err := args.runPath()
	if err != nil {
		return nil, nil, err
	}
	form := url.Values{"stream": {"false"}}
	if args.SessionID != "" {
		form.Set("session_id", args.SessionID)
	}
	if args.UserID != "" {
		form.Set("user_id", args.UserID)
	}
	switch {
	case len(args.Requirements) == 0:
		// Nothing resolved here: the run goes on as its resolved admin
		// approvals decide (the continue route applies them).
	case plural == "workflows":
		data, _ := json.Marshal(args.Requirements)
		form.Set("step_requirements", string(data))
	default:
		// A requirement is resolved on its tool execution (confirmed, its
		// user input or its result), as Agno's clients send it.
		var tools []any
		for _, r := range args.Requirements {
			m, _ := r.(map[string]any)
			te, _ := m["tool_execution"].(map[string]any)
			if te == nil {
				continue
			}
			if c, ok := m["confirmation"].(bool); ok && te["confirmed"] == nil {
				te["confirmed"] = c
			}
			tools = append(tools, te)
		}
		data, _ := json.Marshal(tools)
		form.Set("tools", string(data))
	}
	status, body := o.call(ctx, req, restCall{method: http.MethodPost, path: path + "/continue", form: form})
	if status != http.StatusOK {
		res, err := toolError(status, body)
		return res, nil, err
	}
	return o.runResult(body)
}

func (o *OS) mcpCancel(ctx context.Context, req *sdk.CallToolRequest, args runRefArgs) (*sdk.CallToolResult, any, error) {
	path, _, err := args.runPath()
	if err != nil {
		return nil, nil, err
	}
	query := url.Values{}
	if args.SessionID != "" {
		query.Set("session_id", args.SessionID)
	}
	status, body := o.call(ctx, req, restCall{method: http.MethodPost, path: path + "/cancel", query: query, form: url.Values{}})
	if status != http.StatusOK {
		res, err := toolError(status, body)
		return res, nil, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Run " + args.RunID + " cancellation requested"}}}, nil, nil
}

// sessionsArgs are get_sessions' arguments.
type sessionsArgs struct {
	SessionType string `json:"session_type,omitempty"`
	ComponentID string `json:"component_id,omitempty"`
	UserID      string `json:"user_id,omitempty"`
	SessionName string `json:"session_name,omitempty"`
	Limit       int    `json:"limit,omitempty"`
	Page        int    `json:"page,omitempty"`
	SortBy      string `json:"sort_by,omitempty"`
	SortOrder   string `json:"sort_order,omitempty"`
	DBID        string `json:"db_id,omitempty"`
}

func (o *OS) mcpSessions(ctx context.Context, req *sdk.CallToolRequest, args sessionsArgs) (*sdk.CallToolResult, any, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("type", cmpOr(args.SessionType, "agent"))
	set("component_id", args.ComponentID)
	set("user_id", args.UserID)
	set("session_name", args.SessionName)
	set("sort_by", args.SortBy)
	set("sort_order", cmpOr(args.SortOrder, "desc"))
	set("db_id", args.DBID)
	if args.Limit > 0 {
		q.Set("limit", fmt.Sprint(args.Limit))
	}
	if args.Page > 0 {
		q.Set("page", fmt.Sprint(args.Page))
	}
	status, body := o.call(ctx, req, restCall{method: http.MethodGet, path: "/sessions", query: q})
	if status != http.StatusOK {
		res, err := toolError(status, body)
		return res, nil, err
	}
	return jsonResult(body)
}

// sessionRunsArgs are get_session_runs' arguments.
type sessionRunsArgs struct {
	SessionID   string `json:"session_id"`
	RunID       string `json:"run_id,omitempty"`
	SessionType string `json:"session_type,omitempty"`
	UserID      string `json:"user_id,omitempty"`
	DBID        string `json:"db_id,omitempty"`
}

func (o *OS) mcpSessionRuns(ctx context.Context, req *sdk.CallToolRequest, args sessionRunsArgs) (*sdk.CallToolResult, any, error) {
	if args.SessionID == "" {
		return nil, nil, fmt.Errorf("session_id is required")
	}
	q := url.Values{}
	for k, v := range map[string]string{"type": args.SessionType, "user_id": args.UserID, "db_id": args.DBID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	path := "/sessions/" + url.PathEscape(args.SessionID) + "/runs"
	if args.RunID != "" {
		path += "/" + url.PathEscape(args.RunID)
	}
	status, body := o.call(ctx, req, restCall{method: http.MethodGet, path: path, query: q})
	if status != http.StatusOK {
		res, err := toolError(status, body)
		return res, nil, err
	}
	if args.RunID != "" {
		return jsonResult(body)
	}
	var runs []map[string]any
	if err := json.Unmarshal(body, &runs); err != nil {
		return nil, nil, fmt.Errorf("read the runs: %w", err)
	}
	trimmed := make([]map[string]any, 0, len(runs))
	for _, r := range runs {
		t := map[string]any{}
		for _, k := range []string{"run_id", "run_input", "content", "status", "created_at", "agent_id", "team_id", "workflow_id"} {
			if v, ok := r[k]; ok && v != nil {
				t[k] = v
			}
		}
		trimmed = append(trimmed, t)
	}
	data, _ := json.Marshal(trimmed)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(data)}}, StructuredContent: map[string]any{"runs": trimmed}}, nil, nil
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
