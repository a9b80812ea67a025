package agentos

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// AuthConfig configures who may call the API. The zero value is no
// authentication: every caller is an admin. With SecurityKey, every caller
// must present that key and is then an admin. With JWT, callers present
// signed tokens and their scopes decide what they may do (RBAC).
//
// When both SecurityKey and JWT are set, JWT wins, as in Agno: only tokens
// are accepted and the security key grants nothing.
//
// Whatever the mode, /, /health, /info, /docs, /redoc,
// /docs/oauth2-redirect, /openapi.json and OPTIONS preflights need no
// credentials.
type AuthConfig struct {
	// SecurityKey, when set (and JWT is not), must be sent as
	// `Authorization: Bearer <key>`; it is compared in constant time. A
	// missing header is 401 "Authorization header required", a wrong key 401
	// "Invalid authentication token". Callers typically read it from the
	// environment variable OS_SECURITY_KEY; this package does not.
	// Default: none.
	SecurityKey string
	// JWT, when set, turns on JWT authentication with RBAC scopes; see
	// [JWTConfig] for its fields and their defaults. Default: nil (off).
	JWT *JWTConfig
	// UserIsolation scopes every non-admin caller to their own data: the
	// user id of their runs, sessions and memories is always the token's
	// subject, whatever the request names, and a token without a subject is
	// refused with 403 on every route that needs credentials. Admins (the
	// JWT admin scope, security-key callers, and everyone when there is no
	// authentication) are never scoped. It only has an effect under JWT.
	// Default false: any JWT caller with the scope may read any user's data.
	UserIsolation bool
}

// Principal is the caller of a request.
type Principal struct {
	// Subject identifies the caller (the JWT's user id claim); "" when
	// unknown.
	Subject string
	// Scopes are the caller's RBAC scopes.
	Scopes []string
	// Admin callers may do anything and are never user-scoped: every caller
	// when there is no authentication, security-key callers, and JWT
	// callers holding the admin scope.
	Admin bool
	// Claims are the verified JWT's claims; nil for other callers.
	Claims map[string]any
}

type principalKey struct{}

// principalFrom returns the caller of the request's context.
func principalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// The auth modes /info reports as auth_mode.
const (
	authModeNone        = "none"
	authModeSecurityKey = "security_key"
	authModeJWT         = "jwt"
)

// authenticator checks credentials.
type authenticator struct {
	cfg     AuthConfig
	keyHash [sha256.Size]byte // of cfg.SecurityKey
	jwt     *jwtVerifier      // nil unless cfg.JWT is set
}

func newAuthenticator(cfg AuthConfig) (*authenticator, error) {
	a := &authenticator{cfg: cfg, keyHash: sha256.Sum256([]byte(cfg.SecurityKey))}
	if cfg.JWT != nil {
		v, err := newJWTVerifier(*cfg.JWT)
		if err != nil {
			return nil, err
		}
		a.jwt = v
	}
	return a, nil
}

// enabled reports whether any authentication is configured.
func (a *authenticator) enabled() bool { return a.mode() != authModeNone }

// mode is the auth mode: none, security_key or jwt.
func (a *authenticator) mode() string {
	switch {
	case a.jwt != nil:
		return authModeJWT
	case a.cfg.SecurityKey != "":
		return authModeSecurityKey
	}
	return authModeNone
}

// adminScope is the scope that grants everything.
func (a *authenticator) adminScope() string {
	if a.jwt != nil {
		return a.jwt.cfg.AdminScope
	}
	return defaultAdminScope
}

// scopesOff reports JWT without RBAC (JWTConfig.ValidateOnly).
func (a *authenticator) scopesOff() bool { return a.jwt != nil && a.jwt.cfg.ValidateOnly }

// userIDClaim names the JWT claim holding the user id.
func (a *authenticator) userIDClaim() string {
	if a.jwt != nil {
		return a.jwt.cfg.UserIDClaim
	}
	return defaultUserIDClaim
}

// errNoCredentials is a request without a bearer token.
var errNoCredentials = errors.New("no bearer token")

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, error) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", errNoCredentials
	}
	return token, nil
}

// authenticate identifies the caller, or returns the 401 detail.
func (a *authenticator) authenticate(r *http.Request) (Principal, string) {
	token, err := bearer(r)
	if a.jwt != nil {
		if err != nil {
			return Principal{}, "Authorization header missing"
		}
		return a.jwt.verify(token)
	}
	if err != nil {
		return Principal{}, "Authorization header required"
	}
	sum := sha256.Sum256([]byte(token)) // hashing first keeps the compare constant-time whatever the length
	if subtle.ConstantTimeCompare(sum[:], a.keyHash[:]) != 1 {
		return Principal{}, "Invalid authentication token"
	}
	return Principal{Admin: true}, ""
}

// authMode is the auth mode /info reports: "none", "security_key" or "jwt".
func (o *OS) authMode() string { return o.auth.mode() }

// openPath reports routes that never need credentials.
func openPath(r *http.Request) bool {
	switch r.URL.Path {
	case "/", "/health", "/info", "/docs", "/redoc", "/docs/oauth2-redirect", "/openapi.json":
		return true
	}
	if strings.HasPrefix(r.URL.Path, "/docs/assets/") {
		return true
	}
	return r.Method == http.MethodOptions
}

// withAuth authenticates every request but the open ones, refuses callers
// without identity under user isolation, and applies the route scope map;
// handlers then check per-resource scopes with authorize.
func (o *OS) withAuth(next http.Handler) http.Handler {
	if o.auth.jwt != nil {
		o.auth.jwt.bind(o.cfg.ID, o.cfg.Now)
	}
	serve := func(w http.ResponseWriter, r *http.Request, p Principal) {
		if a := accessFrom(r.Context()); a != nil {
			a.user = p.Subject
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !o.auth.enabled() {
			serve(w, r, Principal{Admin: true})
			return
		}
		if openPath(r) {
			serve(w, r, Principal{}) // anonymous: open routes need no rights
			return
		}
		if isWebSocketRoute(r) {
			serve(w, r, Principal{}) // the WebSocket authenticates its own connection (websocket.go)
			return
		}
		p, detail := o.auth.authenticate(r)
		if detail != "" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, http.StatusUnauthorized, detail)
			return
		}
		if !p.Admin {
			if o.cfg.Auth.UserIsolation && p.Subject == "" {
				writeError(w, http.StatusForbidden, "User isolation is on and the token carries no user identity (claim "+o.auth.userIDClaim()+")")
				return
			}
			if detail := o.routeForbidden(p, r); detail != "" {
				writeError(w, http.StatusForbidden, detail)
				return
			}
		}
		serve(w, r, p)
	})
}

// routeForbidden applies the route scope map to a non-admin caller and
// returns the 403 detail, or "" when the caller may go on. Listings of a
// component family (GET /agents) always go on: the handler filters them.
func (o *OS) routeForbidden(p Principal, r *http.Request) string {
	req := requirementFor(r)
	switch {
	case req.scope == "":
		return ""
	case req.scope == adminOnly:
		return "Insufficient permissions: missing scope " + o.auth.adminScope() + " (this route is admin only)"
	case req.listing, o.allowed(p, req.resource, req.id, req.action):
		return ""
	}
	return forbiddenDetail(req.resource, req.id, req.action)
}

// authorize reports whether the caller may perform action on resource
// (optionally one id of it); otherwise it answers 403 naming the scope.
func (o *OS) authorize(w http.ResponseWriter, r *http.Request, resource, id, action string) bool {
	if o.allowed(principalFrom(r.Context()), resource, id, action) {
		return true
	}
	writeError(w, http.StatusForbidden, forbiddenDetail(resource, id, action))
	return false
}

// noIdentity is the user scope of a non-admin caller without a subject under
// user isolation: an id no stored row has, so such a caller sees nothing
// (withAuth refuses them before any handler runs).
const noIdentity = "\x00agentos:no-identity"

// userScope returns the user id a request acts for: under user isolation,
// a non-admin caller's own subject (whatever was requested); otherwise the
// requested id.
func (o *OS) userScope(r *http.Request, requested string) string {
	p := principalFrom(r.Context())
	if o.cfg.Auth.UserIsolation && !p.Admin {
		if p.Subject == "" {
			return noIdentity
		}
		return p.Subject
	}
	return requested
}

// canSee reports whether the caller may read a resource; list routes use it
// to filter rather than refuse.
func (o *OS) canSee(r *http.Request, resource, id string) bool {
	return o.allowed(principalFrom(r.Context()), resource, id, "read")
}

// allowed reports whether p holds a scope for action on resource (or one id).
func (o *OS) allowed(p Principal, resource, id, action string) bool {
	return p.Admin || o.auth.scopesOff() || scopesGrant(p.Scopes, resource, id, action)
}
