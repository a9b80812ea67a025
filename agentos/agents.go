package agentos

import (
	"cmp"
	"net/http"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/team"
)

// AgentOS serves agents under /agents and teams under /teams with the same
// routes and handlers (agentos-api.md §3–4): a handler about one of them
// reads its runner through the component of its route, which knows the
// path wildcard, the RBAC resource and the 404 of its kind. A runner is
// reachable only under its own kind's routes.

// component is a kind of runner the server serves under routes of its own.
type component struct {
	// kind is the runners' run.Kind.
	kind run.Kind
	// resource is the RBAC resource and the routes' first path segment.
	resource string
	// param is the path wildcard naming one runner.
	param string
	// notFound is the 404 detail of an id no runner of the kind has.
	notFound string
}

// The served components.
var (
	agentComponent = &component{kind: run.KindAgent, resource: "agents", param: "agent_id", notFound: "Agent not found"}
	teamComponent  = &component{kind: run.KindTeam, resource: "teams", param: "team_id", notFound: "Team not found"}
	// workflowComponent serves workflows under /workflows.
	workflowComponent = &component{kind: run.KindWorkflow, resource: "workflows", param: "workflow_id", notFound: "Workflow not found"}
)

// kindOf is a runner's kind; a runner that names none is an agent.
func kindOf(r run.Runner) run.Kind { return cmp.Or(r.Kind(), run.KindAgent) }

// runnerHandler handles a request about one runner, resolved from the path.
type runnerHandler func(w http.ResponseWriter, r *http.Request, runner run.Runner)

// on is a route about one runner of c: its handler runs once the caller
// holds the scope of action on the runner (403) and the path names a runner
// of c's kind (404).
func (o *OS) on(c *component, pattern, action string, h runnerHandler) endpoint {
	return endpoint{pattern: pattern, resource: c.resource, action: action, idParam: c.param, handle: o.withRunner(c, h)}
}

// withRunner resolves the path's runner of c's kind for h, answering 404
// when there is none.
func (o *OS) withRunner(c *component, h runnerHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		runner, ok := o.runnerOf(c, r.PathValue(c.param))
		if !ok {
			writeError(w, http.StatusNotFound, c.notFound)
			return
		}
		h(w, r, runner)
	}
}

// runnerOf looks up a runner of c's kind by id.
func (o *OS) runnerOf(c *component, id string) (run.Runner, bool) {
	runner, ok := o.runners[id]
	if !ok || kindOf(runner) != c.kind {
		return nil, false
	}
	return runner, true
}

// runnersOf lists the runners of c's kind, in configuration order.
func (o *OS) runnersOf(c *component) []run.Runner {
	var out []run.Runner
	for _, id := range o.order {
		if runner := o.runners[id]; kindOf(runner) == c.kind {
			out = append(out, runner)
		}
	}
	return out
}

func (o *OS) agentRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /agents", o.handleList(agentComponent))
	mux.HandleFunc("GET /agents/{agent_id}", o.handleGet(agentComponent))
	mux.HandleFunc("GET /teams", o.handleList(teamComponent))
	mux.HandleFunc("GET /teams/{team_id}", o.handleGet(teamComponent))
	mux.HandleFunc("GET /workflows", o.handleList(workflowComponent))
	mux.HandleFunc("GET /workflows/{workflow_id}", o.handleGet(workflowComponent))
}

// handleList lists the runners of c's kind the caller may see, as a bare
// array.
func (o *OS) handleList(c *component) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		list := make([]map[string]any, 0, len(o.order))
		for _, runner := range o.runnersOf(c) {
			if o.canSee(r, c.resource, runner.ID()) {
				list = append(list, o.summary(runner))
			}
		}
		writeJSON(w, http.StatusOK, list)
	}
}

// handleGet answers one runner of c's kind; one the caller may not see is
// not found.
func (o *OS) handleGet(c *component) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue(c.param)
		runner, ok := o.runnerOf(c, id)
		if !ok || !o.canSee(r, c.resource, id) {
			writeError(w, http.StatusNotFound, c.notFound)
			return
		}
		writeJSON(w, http.StatusOK, o.summary(runner))
	}
}

// ids lists the runners' ids.
func ids(runners []run.Runner) []string {
	out := make([]string, len(runners))
	for i, r := range runners {
		out[i] = r.ID()
	}
	return out
}

// summaries lists the runners of c's kind as /config does.
func (o *OS) summaries(c *component) []map[string]any {
	list := make([]map[string]any, 0, len(o.order))
	for _, runner := range o.runnersOf(c) {
		list = append(list, o.summary(runner))
	}
	return list
}

// summary is a runner as its kind's listing shows it: a TeamResponse for
// a team, an AgentResponse otherwise.
func (o *OS) summary(r run.Runner) map[string]any {
	switch kindOf(r) {
	case run.KindTeam:
		return o.teamSummary(r)
	case run.KindWorkflow:
		return o.workflowSummary(r)
	}
	return o.agentSummary(r)
}

// agentSummary is an agent as GET /agents lists it: what browser clients
// read (id, name, db_id, model).
func (o *OS) agentSummary(r run.Runner) map[string]any {
	summary := map[string]any{"id": r.ID(), "name": r.Name(), "description": "", "db_id": ""}
	if o.cfg.Store != nil {
		summary["db_id"] = o.cfg.DBID
	}
	if info, ok := runnerModel(r); ok {
		summary["model"] = map[string]any{"name": info.ID, "model": info.ID, "provider": info.Provider}
	}
	if i, ok := r.(interface{ Instructions() string }); ok && i.Instructions() != "" {
		summary["instructions"] = i.Instructions()
	}
	if d, ok := r.(interface{ Description() string }); ok {
		summary["description"] = d.Description()
	}
	return summary
}

// teamSummary is a team as GET /teams lists it (Agno's TeamResponse): the
// keys of an agent's summary, plus role, mode, its members (each an agent
// or, recursively, a team summary) and the settings that differ from
// Agno's defaults, grouped as Agno groups them.
func (o *OS) teamSummary(r run.Runner) map[string]any {
	summary := o.agentSummary(r)
	summary["role"] = ""
	if role, ok := r.(interface{ Role() string }); ok {
		summary["role"] = role.Role()
	}
	if m, ok := r.(interface{ Mode() team.Mode }); ok {
		summary["mode"] = m.Mode()
	}
	members := []map[string]any{}
	if m, ok := r.(interface{ Members() []run.Runner }); ok {
		for _, member := range m.Members() {
			members = append(members, o.summary(member))
		}
	}
	summary["members"] = members
	if s, ok := r.(interface{ Settings() team.Config }); ok {
		o.teamSettings(summary, s.Settings())
	}
	return summary
}

// teamSettings adds a team's tools, sessions, response_settings and
// streaming to its summary, each left out when it holds only defaults.
func (o *OS) teamSettings(summary map[string]any, cfg team.Config) {
	delegation := team.DelegateToolName
	if cfg.DelegateToAllMembers {
		delegation = team.BroadcastToolName
	}
	tools := []map[string]any{{"name": delegation}}
	for _, t := range cfg.Tools {
		spec := t.Spec()
		tools = append(tools, map[string]any{"name": spec.Name, "description": spec.Description})
	}
	summary["tools"] = map[string]any{"tools": tools}
	sessions := map[string]any{}
	if o.cfg.Store != nil {
		sessions["session_table"] = "agno_sessions"
	}
	if cfg.AddHistoryToContext {
		sessions["add_history_to_context"] = true
		sessions["num_history_runs"] = cmp.Or(cfg.NumHistoryRuns, 3)
	}
	putNonEmptyMap(summary, "sessions", sessions)
	response := map[string]any{}
	if cfg.RespondDirectly {
		response["respond_directly"] = true
	}
	if cfg.DelegateToAllMembers {
		response["delegate_to_all_members"] = true
	}
	if cfg.DetermineInputForMembers != nil && !*cfg.DetermineInputForMembers {
		response["determine_input_for_members"] = false
	}
	if cfg.StoreMemberResponses {
		response["store_member_responses"] = true
	}
	if cfg.OutputSchema != nil {
		response["output_schema_name"] = cfg.OutputSchema.Name
	}
	putNonEmptyMap(summary, "response_settings", response)
	summary["streaming"] = map[string]any{"stream_member_events": cfg.StreamMemberEvents == nil || *cfg.StreamMemberEvents}
}

// putNonEmptyMap sets key to value unless value is empty.
func putNonEmptyMap(m map[string]any, key string, value map[string]any) {
	if len(value) > 0 {
		m[key] = value
	}
}
