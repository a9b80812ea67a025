package agentos

import (
	"cmp"
	"net/http"
	"strings"
)

// Routing conventions every route shares (control-plane.md): a trailing
// slash is not part of a route, a path or method no route serves answers
// JSON as FastAPI writes it, and a feature this server does not run answers
// 503 on every method and sub-path, so a client tells "not here" from
// "not found".

// withoutTrailingSlash serves next with a path's trailing slashes removed,
// so /agents/ is /agents for every middleware and route.
func withoutTrailingSlash(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			r.URL.Path = cmp.Or(strings.TrimRight(p, "/"), "/")
			if r.URL.RawPath != "" {
				r.URL.RawPath = cmp.Or(strings.TrimRight(r.URL.RawPath, "/"), "/")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// withJSONUnrouted serves mux, answering a request none of its routes
// serves with a JSON body.
func withJSONUnrouted(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, pattern := mux.Handler(r); pattern == "" {
			unrouted(h, w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// unrouted answers a request no route serves — h is the mux's own answer
// to it — with 405 and the methods the path allows, else 404, each with a
// JSON detail.
func unrouted(h http.Handler, w http.ResponseWriter, r *http.Request) {
	probe := &statusProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		if allow := probe.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

// statusProbe records the status and headers the mux's own answer to an
// unrouted request would have, and drops its plain-text body.
type statusProbe struct {
	header http.Header
	status int
}

// Header returns the headers the mux set.
func (p *statusProbe) Header() http.Header { return p.header }

// Write drops the body.
func (p *statusProbe) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return len(b), nil
}

// WriteHeader notes the status.
func (p *statusProbe) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

// disabledFeature is a feature of Agno's AgentOS this server does not run:
// its routes' first path segments and its OpenAPI tag.
type disabledFeature struct {
	tag      string
	prefixes []string
}

// disabledFeatures lists them.
var disabledFeatures = []disabledFeature{
	{tag: "Knowledge", prefixes: []string{"knowledge"}},
	{tag: "Evals", prefixes: []string{"eval-runs"}},
	{tag: "Components", prefixes: []string{"components"}},
	{tag: "Registry", prefixes: []string{"registry"}},
	{tag: "Learnings", prefixes: []string{"learnings"}},
	{tag: "MCP", prefixes: []string{"mcp"}},
}

// disabledDetail is the 503 detail of a feature's routes.
func disabledDetail(tag string) string {
	return tag + " not available: this AgentOS server does not run this feature."
}

// disabledRoutes mounts a 503 stub on every method and sub-path of each
// disabled feature whose path no other route serves.
func disabledRoutes(mux *http.ServeMux, mcpServed bool) {
	for _, f := range disabledFeatures {
		if f.tag == "MCP" && mcpServed {
			continue
		}
		detail := disabledDetail(f.tag)
		stub := func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusServiceUnavailable, detail)
		}
		for _, prefix := range f.prefixes {
			mux.HandleFunc("/"+prefix, stub)
			mux.HandleFunc("/"+prefix+"/", stub)
		}
	}
}
