package agentos

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
)

// AuthConfig configures who may call the API.
type AuthConfig struct {
	// SecurityKey, when set, must be sent as `Authorization: Bearer <key>`
	// on every route but /, /health, /info, /docs and /openapi.json.
	SecurityKey string
	// UserIsolation scopes every non-admin caller to their own sessions,
	// runs and memories (their token's subject).
	UserIsolation bool
}

// Principal is the caller of a request.
type Principal struct {
	// Subject identifies the caller (a JWT's sub); "" when unknown.
	Subject string
	// Scopes are the caller's RBAC scopes.
	Scopes []string
	// Admin callers may do anything and are never user-scoped.
	Admin bool
}

type principalKey struct{}

// principalFrom returns the caller of the request's context.
func principalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// authenticator checks credentials.
type authenticator struct {
	cfg AuthConfig
}

func newAuthenticator(cfg AuthConfig) (*authenticator, error) {
	return &authenticator{cfg: cfg}, nil
}

// enabled reports whether any authentication is configured.
func (a *authenticator) enabled() bool { return a.cfg.SecurityKey != "" }

// openPath reports routes that never need credentials.
func openPath(r *http.Request) bool {
	switch r.URL.Path {
	case "/", "/health", "/info", "/docs", "/openapi.json":
		return true
	}
	return r.Method == http.MethodOptions
}

// withAuth authenticates every request but the open ones.
func (o *OS) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !o.auth.enabled() || openPath(r) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, Principal{Admin: true})))
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			writeError(w, http.StatusUnauthorized, "Authorization header required: send Authorization: Bearer <key>")
			return
		}
		if subtle.ConstantTimeCompare([]byte(token), []byte(o.auth.cfg.SecurityKey)) != 1 {
			writeError(w, http.StatusUnauthorized, "Invalid authentication token")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, Principal{Admin: true})))
	})
}

// authorize reports whether the caller may perform action on resource
// (optionally one id of it); otherwise it answers 403 naming the scope.
func (o *OS) authorize(w http.ResponseWriter, r *http.Request, resource, id, action string) bool {
	p := principalFrom(r.Context())
	if p.Admin {
		return true
	}
	writeError(w, http.StatusForbidden, "Insufficient permissions: requires "+resource+":"+action)
	return false
}

// userScope returns the user id a request acts for: under user isolation,
// a non-admin caller's own subject (whatever was requested); otherwise the
// requested id.
func (o *OS) userScope(r *http.Request, requested string) string {
	p := principalFrom(r.Context())
	if o.cfg.Auth.UserIsolation && !p.Admin {
		return p.Subject
	}
	return requested
}

// canSee reports whether the caller may read a resource; list routes use it
// to filter rather than refuse.
func (o *OS) canSee(r *http.Request, resource, id string) bool {
	return principalFrom(r.Context()).Admin || o.allowed(principalFrom(r.Context()), resource, id, "read")
}

// allowed reports whether p holds a scope for action on resource (or one id).
func (o *OS) allowed(p Principal, resource, id, action string) bool {
	return p.Admin
}
