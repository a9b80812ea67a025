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

// corsAllowMethods are the methods a preflight may ask for: all of them.
const corsAllowMethods = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"

// withCORS answers preflights without auth and marks every response for
// allowed browser origins, as Starlette's CORSMiddleware does with
// credentials and every method and header allowed.
//
// The allowed origins are [Config.CORSAllowedOrigins], else
// defaultCORSOrigins; "*" in the list allows any origin. A preflight (OPTIONS
// with Origin and Access-Control-Request-Method) never reaches auth or the
// routes: from an allowed origin it answers 200 with the allow headers, from
// another 400. Every other response to an allowed origin — JSON, SSE,
// errors — carries Access-Control-Allow-Origin: the origin itself (never
// "*", since credentials are allowed).
func (o *OS) withCORS(next http.Handler) http.Handler {
	origins := o.cfg.CORSAllowedOrigins
	if len(origins) == 0 {
		origins = defaultCORSOrigins
	}
	allowed := func(origin string) bool {
		return slices.Contains(origins, origin) || slices.Contains(origins, "*")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if !allowed(origin) {
			if preflight {
				writeError(w, http.StatusBadRequest, "Disallowed CORS origin")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		if !preflight {
			h.Set("Access-Control-Expose-Headers", "*")
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Methods", corsAllowMethods)
		requested := r.Header.Get("Access-Control-Request-Headers")
		if requested == "" {
			requested = "authorization, content-type"
		}
		h.Set("Access-Control-Allow-Headers", requested)
		h.Add("Vary", "Access-Control-Request-Headers")
		h.Set("Access-Control-Max-Age", "600")
		h.Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	})
}
