package agentos

import "net/http"

// sessionRoutes mounts the session routes.
func (o *OS) sessionRoutes(mux *http.ServeMux) {}
