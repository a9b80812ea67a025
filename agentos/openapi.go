package agentos

import "net/http"

// docsRoutes mounts /openapi.json and /docs.
func (o *OS) docsRoutes(mux *http.ServeMux) {}
