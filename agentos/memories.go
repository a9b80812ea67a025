package agentos

import "net/http"

// memoryRoutes mounts the memory routes.
func (o *OS) memoryRoutes(mux *http.ServeMux) {}
