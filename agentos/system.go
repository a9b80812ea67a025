package agentos

import (
	"net/http"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// The routes a client probes first (agentos-api.md §11, control-plane.md
// §i.2): /, /health, /info, /config and /models.

func (o *OS) systemRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", o.handleRoot)
	mux.HandleFunc("GET /health", o.handleHealth)
	mux.HandleFunc("GET /info", o.handleInfo)
	mux.HandleFunc("GET /config", o.handleConfig)
	mux.HandleFunc("GET /models", o.handleModels)
}

// handleRoot answers / with the OS's name and where its other entry
// points are.
func (o *OS) handleRoot(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"name": o.cfg.Name, "id": o.cfg.ID, "version": o.cfg.Version,
		"health": "/health", "info": "/info", "docs": "/docs", "openapi": "/openapi.json",
	})
}

func (o *OS) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "instantiated_at": o.started.Unix()})
}

// infoResponse is /info: what a client may learn without credentials.
type infoResponse struct {
	OSID          string  `json:"os_id"`
	Name          string  `json:"name"`
	OSVersion     string  `json:"os_version"`
	Version       string  `json:"version"`
	AgnoVersion   *string `json:"agno_version"`
	AgentCount    int     `json:"agent_count"`
	TeamCount     int     `json:"team_count"`
	WorkflowCount int     `json:"workflow_count"`
	MCP           mcpInfo `json:"mcp"`
	AuthMode      string  `json:"auth_mode"`
}

// mcpInfo is /info's mcp: whether the server serves MCP, where (null when
// it does not), and its OAuth (always null: MCP clients use the REST
// bearer).
type mcpInfo struct {
	Enabled bool    `json:"enabled"`
	Path    *string `json:"path"`
	OAuth   any     `json:"oauth"`
}

// mcpInfo is what /info says of the MCP server.
func (o *OS) mcpInfo() mcpInfo {
	if !o.mcpEnabled() {
		return mcpInfo{}
	}
	path := mcpPath
	return mcpInfo{Enabled: true, Path: &path}
}

func (o *OS) handleInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, infoResponse{
		OSID: o.cfg.ID, Name: o.cfg.Name, OSVersion: o.cfg.Version, Version: o.cfg.Version,
		AgentCount: len(o.runnersOf(agentComponent)), TeamCount: len(o.runnersOf(teamComponent)),
		WorkflowCount: len(o.runnersOf(workflowComponent)),
		MCP:           o.mcpInfo(),
		AuthMode:      o.authMode(),
	})
}

// domainDB is one database of a /config domain section.
type domainDB struct {
	DBID         string            `json:"db_id"`
	DomainConfig map[string]string `json:"domain_config"`
	Tables       []string          `json:"tables"`
}

// domainSection is a /config domain section (session, memory, metrics…).
type domainSection struct {
	DisplayName string     `json:"display_name"`
	DBs         []domainDB `json:"dbs"`
}

// section is the /config section of a domain kept in table of the OS's
// database; nil without a database.
func (o *OS) section(displayName, table string) *domainSection {
	if o.cfg.Store == nil {
		return nil
	}
	return &domainSection{DisplayName: displayName, DBs: []domainDB{{
		DBID: o.cfg.DBID, DomainConfig: map[string]string{"display_name": displayName}, Tables: []string{table},
	}}}
}

// modelRef is an entry of available_models and of GET /models.
type modelRef struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
}

// models lists the models the agents and teams' leaders use, each once,
// in configuration order.
func (o *OS) models() []modelRef {
	out := []modelRef{}
	seen := map[modelRef]bool{}
	for _, id := range o.order {
		info, ok := runnerModel(o.runners[id])
		if !ok || info.ID == "" {
			continue
		}
		ref := modelRef{ID: info.ID, Provider: info.Provider}
		if !seen[ref] {
			seen[ref] = true
			out = append(out, ref)
		}
	}
	return out
}

// runnerModel is the model a runner reports, if it reports one.
func runnerModel(r run.Runner) (model.Info, bool) {
	m, ok := r.(interface{ ModelInfo() model.Info })
	if !ok {
		return model.Info{}, false
	}
	return m.ModelInfo(), true
}

func (o *OS) handleConfig(w http.ResponseWriter, r *http.Request) {
	databases := []string{}
	var osDatabase *string
	if o.cfg.Store != nil {
		databases = []string{o.cfg.DBID}
		osDatabase = &o.cfg.DBID
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"os_id": o.cfg.ID, "name": o.cfg.Name, "description": o.cfg.Description,
		"available_models": o.models(),
		"os_database":      osDatabase, "databases": databases,
		"chat": nil, "manifest": nil,
		"session":   o.section("Sessions", "agno_sessions"),
		"memory":    o.section("Memory", "agno_memories"),
		"metrics":   o.section("Metrics", "agno_metrics"),
		"learning":  nil,
		"knowledge": map[string]any{"dbs": []any{}, "knowledge_instances": []any{}},
		"evals":     nil, "traces": o.tracesSection(),
		"agents": o.summaries(agentComponent), "teams": o.summaries(teamComponent), "workflows": o.summaries(workflowComponent), "interfaces": []any{},
	})
}

// tracesSection is /config's traces: the trace tables, when the store has
// them.
func (o *OS) tracesSection() any {
	if o.traceStore() == nil {
		return nil
	}
	return o.section("Traces", "agno_traces")
}

// handleModels lists the models the agents use (Agno 2.9's GET /models;
// 3.x clients read /config's available_models).
func (o *OS) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, o.models())
}
