package agentos

import (
	"net/http"
	"slices"
)

// defaultCORSOrigins are the browser origins AgentOS allows by default.
var defaultCORSOrigins = []string{
	"http://localhost:3000", "https://agno.com", "https://www.agno.com", "https://app.agno.com",
	"https://os-stg.agno.com", "https://os.agno.com",
}

// withCORS answers preflights without auth and marks every response for
// allowed browser origins.
func (o *OS) withCORS(next http.Handler) http.Handler {
	origins := o.cfg.CORSAllowedOrigins
	if len(origins) == 0 {
		origins = defaultCORSOrigins
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && (slices.Contains(origins, origin) || slices.Contains(origins, "*")) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "*")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
				reqHeaders := r.Header.Get("Access-Control-Request-Headers")
				if reqHeaders == "" {
					reqHeaders = "content-type, authorization"
				}
				h.Set("Access-Control-Allow-Headers", reqHeaders)
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusOK)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
