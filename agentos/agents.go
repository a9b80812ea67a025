package agentos

import (
	"net/http"

	"github.com/agnogo/agnogo/run"
)

func (o *OS) agentRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /agents", o.handleListAgents)
	mux.HandleFunc("GET /agents/{agent_id}", o.handleGetAgent)
	// agnogo serves agents only; clients list teams and workflows too (the
	// Agno chat UI does on every page load), and find none.
	mux.HandleFunc("GET /teams", o.handleListNone)
	mux.HandleFunc("GET /teams/{team_id}", notFound("Team not found"))
	mux.HandleFunc("GET /workflows", o.handleListNone)
	mux.HandleFunc("GET /workflows/{workflow_id}", notFound("Workflow not found"))
}

// handleListNone answers an empty list.
func (o *OS) handleListNone(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, []any{})
}

// notFound answers 404 with detail.
func notFound(detail string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeError(w, http.StatusNotFound, detail) }
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

func (o *OS) handleListAgents(w http.ResponseWriter, r *http.Request) {
	agents := make([]map[string]any, 0, len(o.order))
	for _, id := range o.order {
		if o.canSee(r, "agents", id) {
			agents = append(agents, o.agentSummary(o.runners[id]))
		}
	}
	writeJSON(w, http.StatusOK, agents)
}

func (o *OS) handleGetAgent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("agent_id")
	runner, ok := o.runner(id)
	if !ok || !o.canSee(r, "agents", id) {
		writeError(w, http.StatusNotFound, "Agent not found")
		return
	}
	writeJSON(w, http.StatusOK, o.agentSummary(runner))
}
