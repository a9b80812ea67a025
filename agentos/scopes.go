package agentos

import (
	"net/http"
	"net/url"
	"strings"
)

// RBAC scopes, as Agno's libs/agno/agno/os/scopes.py defines them:
//
//	resource:action        every resource of the kind (agents:run)
//	resource:<id>:action   one resource (agents:assistant:run)
//	resource:*:action      every resource of the kind, as a wildcard
//	agent_os:admin         everything (JWTConfig.AdminScope)
//
// The legacy resource name "system" is an alias for "config". There are no
// action wildcards: agents:assistant:* grants nothing.

// legacyResources maps legacy resource names to the current ones.
var legacyResources = map[string]string{"system": "config"}

// scope is one parsed resource scope.
type scope struct {
	resource string
	id       string // "" for resource:action, "*" for the wildcard
	action   string
}

// parseScope parses a resource scope; ok is false for anything else (the
// admin scope is handled by the caller).
func parseScope(s string) (sc scope, ok bool) {
	parts := strings.Split(s, ":")
	switch len(parts) {
	case 2:
		sc = scope{resource: parts[0], action: parts[1]}
	case 3:
		if parts[1] == "" {
			return scope{}, false
		}
		sc = scope{resource: parts[0], id: parts[1], action: parts[2]}
	default:
		return scope{}, false
	}
	if sc.resource == "" || sc.action == "" {
		return scope{}, false
	}
	if alias, ok := legacyResources[sc.resource]; ok {
		sc.resource = alias
	}
	return sc, true
}

// grants reports whether the scope allows action on resource; id is the one
// resource acted on, or "" when the action concerns the kind as a whole
// (which only resource:action and resource:*:action grant).
func (sc scope) grants(resource, id, action string) bool {
	if sc.resource != resource || sc.action != action {
		return false
	}
	if sc.id == "" || sc.id == "*" {
		return true
	}
	return id != "" && sc.id == id
}

// scopesGrant reports whether any of scopes allows action on resource (or
// one id of it). The admin scope is not considered here.
func scopesGrant(scopes []string, resource, id, action string) bool {
	if alias, ok := legacyResources[resource]; ok {
		resource = alias
	}
	for _, s := range scopes {
		if sc, ok := parseScope(s); ok && sc.grants(resource, id, action) {
			return true
		}
	}
	return false
}

// scopeName is the narrowest scope that allows action on resource (or id).
func scopeName(resource, id, action string) string {
	if id == "" {
		return resource + ":" + action
	}
	return resource + ":" + id + ":" + action
}

// forbiddenDetail is the 403 detail naming the scope a caller lacks.
func forbiddenDetail(resource, id, action string) string {
	if id == "" {
		return "Insufficient permissions: missing scope " + scopeName(resource, id, action)
	}
	return "Insufficient permissions: missing scope " + scopeName(resource, id, action) +
		" (" + resource + ":" + action + " or " + resource + ":*:" + action + " also grant it)"
}

// adminOnly marks a route only the admin scope may call.
const adminOnly = "admin"

// routeScope is one entry of the default route map: a method, a path
// pattern whose "*" stands for one or more path segments, and the scope the
// route needs (resource:action, or adminOnly).
type routeScope struct {
	method, pattern, scope string
}

// segments splits the pattern into path segments.
func (rs routeScope) segments() []string { return routePatterns[rs.pattern] }

// routePatterns caches the route map's patterns split into segments.
var routePatterns = func() map[string][]string {
	m := map[string][]string{}
	for _, rs := range routeScopes {
		m[rs.pattern] = strings.Split(strings.Trim(rs.pattern, "/"), "/")
	}
	return m
}()

// routeScopes is Agno's default scope map (get_default_scope_mappings), in
// its order: a path takes the first pattern that matches. Routes that are
// not listed need no scope at this gate (their handlers may still check).
var routeScopes = []routeScope{
	{"GET", "/config", "config:read"},
	{"GET", "/models", "config:read"},
	{"GET", "/agents", "agents:read"},
	{"GET", "/agents/*", "agents:read"},
	{"POST", "/agents", "agents:write"},
	{"PATCH", "/agents/*", "agents:write"},
	{"DELETE", "/agents/*", "agents:delete"},
	{"POST", "/agents/*/runs", "agents:run"},
	{"POST", "/agents/*/runs/*/continue", "agents:run"},
	{"POST", "/agents/*/runs/*/cancel", "agents:run"},
	{"GET", "/teams", "teams:read"},
	{"GET", "/teams/*", "teams:read"},
	{"POST", "/teams", "teams:write"},
	{"PATCH", "/teams/*", "teams:write"},
	{"DELETE", "/teams/*", "teams:delete"},
	{"POST", "/teams/*/runs", "teams:run"},
	{"POST", "/teams/*/runs/*/continue", "teams:run"},
	{"POST", "/teams/*/runs/*/cancel", "teams:run"},
	{"GET", "/workflows", "workflows:read"},
	{"GET", "/workflows/*", "workflows:read"},
	{"POST", "/workflows", "workflows:write"},
	{"PATCH", "/workflows/*", "workflows:write"},
	{"DELETE", "/workflows/*", "workflows:delete"},
	{"POST", "/workflows/*/runs", "workflows:run"},
	{"POST", "/workflows/*/runs/*/continue", "workflows:run"},
	{"POST", "/workflows/*/runs/*/cancel", "workflows:run"},
	{"GET", "/sessions", "sessions:read"},
	{"GET", "/sessions/*", "sessions:read"},
	{"POST", "/sessions", "sessions:write"},
	{"POST", "/sessions/*/rename", "sessions:write"},
	{"PATCH", "/sessions/*", "sessions:write"},
	{"DELETE", "/sessions", "sessions:delete"},
	{"DELETE", "/sessions/*", "sessions:delete"},
	{"GET", "/memories", "memories:read"},
	{"GET", "/memories/*", "memories:read"},
	{"GET", "/memory_topics", "memories:read"},
	{"GET", "/user_memory_stats", "memories:read"},
	{"POST", "/memories", "memories:write"},
	{"PATCH", "/memories/*", "memories:write"},
	{"DELETE", "/memories", "memories:delete"},
	{"DELETE", "/memories/*", "memories:delete"},
	{"POST", "/optimize-memories", "memories:write"},
	{"GET", "/learnings", "learnings:read"},
	{"GET", "/learnings/*", "learnings:read"},
	{"POST", "/learnings", "learnings:write"},
	{"PATCH", "/learnings/*", "learnings:write"},
	{"DELETE", "/learnings/*", "learnings:delete"},
	{"GET", "/knowledge/content", "knowledge:read"},
	{"GET", "/knowledge/content/*", "knowledge:read"},
	{"GET", "/knowledge/config", "knowledge:read"},
	{"POST", "/knowledge/content", "knowledge:write"},
	{"PATCH", "/knowledge/content/*", "knowledge:write"},
	{"POST", "/knowledge/search", "knowledge:read"},
	{"DELETE", "/knowledge/content", "knowledge:delete"},
	{"DELETE", "/knowledge/content/*", "knowledge:delete"},
	{"GET", "/metrics", "metrics:read"},
	{"GET", "/metrics/prometheus", "metrics:read"},
	{"POST", "/metrics/refresh", "metrics:write"},
	{"GET", "/metrics/refresh/status", "metrics:read"},
	{"GET", "/eval-runs", "evals:read"},
	{"GET", "/eval-runs/*", "evals:read"},
	{"POST", "/eval-runs", "evals:write"},
	{"PATCH", "/eval-runs/*", "evals:write"},
	{"DELETE", "/eval-runs", "evals:delete"},
	{"GET", "/traces", "traces:read"},
	{"GET", "/traces/*", "traces:read"},
	{"GET", "/trace_session_stats", "traces:read"},
	{"POST", "/service-accounts", "service_accounts:write"},
	{"GET", "/service-accounts", "service_accounts:read"},
	{"DELETE", "/service-accounts/*", "service_accounts:delete"},
	{"GET", "/schedules", "schedules:read"},
	{"GET", "/schedules/*", "schedules:read"},
	{"POST", "/schedules", "schedules:write"},
	{"PATCH", "/schedules/*", "schedules:write"},
	{"DELETE", "/schedules/*", "schedules:delete"},
	{"POST", "/schedules/*/enable", "schedules:write"},
	{"POST", "/schedules/*/disable", "schedules:write"},
	{"POST", "/schedules/*/trigger", "schedules:write"},
	{"GET", "/approvals", "approvals:read"},
	{"GET", "/approvals/*", "approvals:read"},
	{"POST", "/approvals/*/resolve", "approvals:write"},
	{"DELETE", "/approvals/*", "approvals:delete"},
	{"POST", "/traces/search", "traces:read"},
	{"POST", "/databases/all/migrate", "config:write"},
	{"POST", "/databases/*/migrate", "config:write"},
	{"POST", "/knowledge/remote-content", "knowledge:write"},
	{"GET", "/knowledge/*/sources", "knowledge:read"},
	{"GET", "/knowledge/*/sources/*/files", "knowledge:read"},
	{"GET", "/filesystem/*", "filesystem:read"},
	{"GET", "/registry", "registry:read"},
	{"GET", "/components", "components:read"},
	{"GET", "/components/*", "components:read"},
	{"POST", "/components", "components:write"},
	{"PATCH", "/components/*", "components:write"},
	{"DELETE", "/components/*", "components:delete"},
	{"POST", "/components/*/restore", "components:delete"},
	{"POST", "/components/*/configs", "components:write"},
	{"PATCH", "/components/*/configs/*", "components:write"},
	{"DELETE", "/components/*/configs/*", "components:delete"},
	{"POST", "/components/*/configs/*/set-current", "components:write"},
	// The durable queue is admin only, whatever the method.
	{"*", "/queue", adminOnly},
	{"*", "/queue/*", adminOnly},
}

// componentResources are the component families: their listings (GET
// /agents) are filtered rather than refused.
var componentResources = map[string]bool{"agents": true, "teams": true, "workflows": true}

// idResources are the path families whose second segment is always a
// resource id that per-resource scopes can name (agents:<id>:run,
// sessions:<id>:read). Agno's route gate knows only the component
// families; sessions and memories are added because their handlers honour
// per-id scopes too.
var idResources = map[string]bool{"agents": true, "teams": true, "workflows": true, "sessions": true, "memories": true}

// routeRequirement is what the route map asks of a request.
type routeRequirement struct {
	// scope is resource:action or adminOnly; "" when the route is unmapped.
	scope string
	// resource, id and action split scope; id is the path's component id
	// (agents/{id}/...) when the scope is about that component family.
	resource, id, action string
	// listing is a GET of a component family (GET /agents): callers without
	// the scope get through and the handler filters the list with canSee.
	listing bool
}

// requirementFor looks up the route map for r.
func requirementFor(r *http.Request) routeRequirement {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet // HEAD is served by the GET handlers
	}
	segments := pathSegments(r)
	for _, rs := range routeScopes {
		if (rs.method != "*" && rs.method != method) || !matchSegments(rs.segments(), segments) {
			continue
		}
		req := routeRequirement{scope: rs.scope}
		if rs.scope == adminOnly {
			return req
		}
		req.resource, req.action, _ = strings.Cut(rs.scope, ":")
		if len(segments) > 0 && segments[0] == req.resource {
			switch {
			case len(segments) > 1 && idResources[req.resource]:
				req.id = segments[1]
			case len(segments) == 1 && componentResources[req.resource]:
				req.listing = method == http.MethodGet
			}
		}
		return req
	}
	return routeRequirement{}
}

// pathSegments splits the request path into unescaped segments, the way
// http.ServeMux reads path values (so "a%2Fb" is one segment).
func pathSegments(r *http.Request) []string {
	escaped := strings.Trim(r.URL.EscapedPath(), "/")
	if escaped == "" {
		return nil
	}
	segments := strings.Split(escaped, "/")
	for i, s := range segments {
		if u, err := url.PathUnescape(s); err == nil {
			segments[i] = u
		}
	}
	return segments
}

// matchSegments matches path segments against pattern segments, where "*"
// stands for one or more segments. It backtracks only to the last "*", so
// it is linear in the path for a fixed pattern.
func matchSegments(pattern, path []string) bool {
	p, s := 0, 0
	star, next := -1, 0 // the last "*" seen, and where its match would end next
	for s < len(path) {
		switch {
		case p < len(pattern) && pattern[p] == "*":
			star, next = p, s+1
			p, s = p+1, s+1
		case p < len(pattern) && pattern[p] == path[s]:
			p, s = p+1, s+1
		case star >= 0:
			next++
			p, s = star+1, next
		default:
			return false
		}
	}
	return p == len(pattern)
}
