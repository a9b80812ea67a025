package agentos

import (
	"net/http"
)

func (o *OS) systemRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", o.handleRoot)
	mux.HandleFunc("GET /health", o.handleHealth)
	mux.HandleFunc("GET /info", o.handleInfo)
	mux.HandleFunc("GET /config", o.handleConfig)
}

func (o *OS) handleRoot(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"name": o.cfg.Name, "id": o.cfg.ID, "version": o.cfg.Version})
}

func (o *OS) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "instantiated_at": o.started.Unix()})
}

func (o *OS) handleInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"name": o.cfg.Name, "version": o.cfg.Version, "os_id": o.cfg.ID, "auth_mode": o.authMode()})
}

func (o *OS) handleConfig(w http.ResponseWriter, r *http.Request) {
	agents := make([]map[string]any, 0, len(o.order))
	for _, id := range o.order {
		agents = append(agents, o.agentSummary(o.runners[id]))
	}
	var databases []string
	if o.cfg.Store != nil {
		databases = []string{o.cfg.DBID}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"os_id": o.cfg.ID, "name": o.cfg.Name, "description": o.cfg.Description,
		"databases": databases, "os_database": o.cfg.DBID,
		"agents": agents, "teams": []any{}, "workflows": []any{}, "interfaces": []any{},
	})
}
