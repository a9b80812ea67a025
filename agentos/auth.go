package agentos

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agnogo/agnogo/storage"
)

// AuthConfig configures who may call the API. The zero value is no
// authentication: every caller is an admin. With SecurityKey, every caller
// must present that key and is then an admin. With JWT, callers present
// signed tokens and their scopes decide what they may do (RBAC).
//
// When both SecurityKey and JWT are set, JWT wins, as in Agno: only tokens
// are accepted and the security key grants nothing.
//
// In every mode, including none, a service-account token (agno_pat_…,
// minted by POST /service-accounts when the store keeps service accounts)
// is also accepted, and grants only its account's scopes.
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
	// ServiceAccountCacheTTL is how long a verified service-account token
	// (agno_pat_…) is remembered, so that a token does not cost a database
	// read on every request. A token revoked through this server is refused
	// at once; one revoked through another server sharing the database is
	// refused within this time. Zero means 30s; a negative value turns the
	// cache off (every request reads the database).
	ServiceAccountCacheTTL time.Duration
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
	// ServiceAccountID is the id of the service account whose token
	// (agno_pat_…) authenticated the caller; "" for other callers. Such a
	// caller's Subject is "sa:<name>" and its Scopes are the account's: they
	// are enforced whatever the auth mode, and the caller is always scoped
	// to its own data unless it holds the admin scope.
	ServiceAccountID string
}

type principalKey struct{}

// inProcessKey marks a request the server makes to its own handler (the
// scheduler's) with the principal it acts as. Only code in this package can
// set it: no header or token reaches it.
type inProcessKey struct{}

// asPrincipal returns ctx for an in-process request made as p: it is served
// as p without credentials.
func asPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, inProcessKey{}, p)
}

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
	cfg      AuthConfig
	keyHash  [sha256.Size]byte // of cfg.SecurityKey
	jwt      *jwtVerifier      // nil unless cfg.JWT is set
	accounts *accountVerifier  // service-account tokens, whatever the mode
}

func newAuthenticator(cfg AuthConfig) (*authenticator, error) {
	a := &authenticator{cfg: cfg, keyHash: sha256.Sum256([]byte(cfg.SecurityKey)),
		accounts: newAccountVerifier(cfg.ServiceAccountCacheTTL)}
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

// identify identifies the caller, or returns the refusal's status and
// detail: 401, 429 for a client throttled after too many unknown
// service-account tokens, 503 when the database cannot check one. A
// service-account token is accepted in every mode.
func (a *authenticator) identify(r *http.Request) (Principal, int, string) {
	token, err := bearer(r)
	if err == nil && isServiceAccountToken(token) && !(a.jwt == nil && a.keyMatches(token)) {
		return a.accounts.verify(r, token, a.adminScope())
	}
	if a.jwt != nil {
		if err != nil {
			return Principal{}, http.StatusUnauthorized, "Authorization header missing"
		}
		p, detail := a.jwt.verify(token)
		if detail != "" {
			return Principal{}, http.StatusUnauthorized, detail
		}
		return p, http.StatusOK, ""
	}
	if err != nil {
		return Principal{}, http.StatusUnauthorized, "Authorization header required"
	}
	if !a.keyMatches(token) {
		return Principal{}, http.StatusUnauthorized, "Invalid authentication token"
	}
	return Principal{Admin: true}, http.StatusOK, ""
}

// keyMatches reports whether token is the security key.
func (a *authenticator) keyMatches(token string) bool {
	if a.cfg.SecurityKey == "" {
		return false
	}
	sum := sha256.Sum256([]byte(token)) // hashing first keeps the compare constant-time whatever the length
	return subtle.ConstantTimeCompare(sum[:], a.keyHash[:]) == 1
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
	o.auth.accounts.bind(o.cfg.Store, o.cfg.Now, o.log)
	serve := func(w http.ResponseWriter, r *http.Request, p Principal) {
		if a := accessFrom(r.Context()); a != nil {
			a.user = p.Subject
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := r.Context().Value(inProcessKey{}).(Principal); ok {
			serve(w, r, p) // a call the server makes to itself, as p
			return
		}
		open := !o.auth.enabled()
		switch {
		case open && openPath(r), open && !presentsServiceAccount(r):
			serve(w, r, Principal{Admin: true})
			return
		case openPath(r):
			serve(w, r, Principal{}) // anonymous: open routes need no rights
			return
		case isWebSocketRoute(r):
			serve(w, r, Principal{}) // the WebSocket authenticates its own connection (websocket.go)
			return
		}
		// A service-account token is checked, and its scopes enforced, even
		// on a server without authentication: it never grants more than
		// the account holds.
		p, status, detail := o.auth.identify(r)
		if detail != "" {
			switch status {
			case http.StatusUnauthorized:
				w.Header().Set("WWW-Authenticate", "Bearer")
			case http.StatusTooManyRequests:
				w.Header().Set("Retry-After", strconv.Itoa(int(failedLookupWindow/time.Second)))
			}
			writeError(w, status, detail)
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
// requested id. A service account that is not an admin always acts for
// itself ("sa:<name>"), isolation or not.
func (o *OS) userScope(r *http.Request, requested string) string {
	p := principalFrom(r.Context())
	if (o.cfg.Auth.UserIsolation || p.ServiceAccountID != "") && !p.Admin {
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
// A service account's scopes are checked even when JWT scopes are not
// (JWTConfig.ValidateOnly).
func (o *OS) allowed(p Principal, resource, id, action string) bool {
	return p.Admin || (o.auth.scopesOff() && p.ServiceAccountID == "") || scopesGrant(p.Scopes, resource, id, action)
}

// Service-account token verification: bounds and intervals.
const (
	defaultServiceAccountCacheTTL = 30 * time.Second
	// lastUsedInterval is how often, at most, last_used_at is written per
	// account, so that a busy token does not write on every request.
	lastUsedInterval = 60 // seconds
	// maxRememberedAccounts bounds the token cache and the last-use map.
	maxRememberedAccounts = 4096
	// A client that sent failedLookupLimit unknown tokens within
	// failedLookupWindow is answered 429 until the window ends, before any
	// database read; maxThrottledClients bounds the clients tracked.
	failedLookupLimit   = 20
	failedLookupWindow  = time.Minute
	maxThrottledClients = 4096
)

// accountVerifier checks service-account tokens: by the hash of the token,
// through a short-lived cache, throttling clients that keep sending unknown
// tokens.
type accountVerifier struct {
	ttl time.Duration // how long a looked-up account is remembered; 0: never

	// Set by bind.
	store storage.ServiceAccountStore // nil when the store keeps no service accounts
	now   func() time.Time
	log   *slog.Logger

	mu         sync.Mutex
	cache      map[string]cachedAccount // by token hash
	generation uint64                   // bumped by each eviction
	touched    map[string]int64         // account id → when this server last wrote last_used_at
	failures   map[string]*failedLookups
}

// cachedAccount is an account read from the store, remembered until until.
type cachedAccount struct {
	account *storage.ServiceAccount
	until   time.Time
}

// failedLookups counts a client's unknown tokens in the window from since.
type failedLookups struct {
	since time.Time
	count int
}

// newAccountVerifier returns a verifier whose cache keeps accounts for ttl
// (0: the default; negative: no cache).
func newAccountVerifier(ttl time.Duration) *accountVerifier {
	switch {
	case ttl == 0:
		ttl = defaultServiceAccountCacheTTL
	case ttl < 0:
		ttl = 0
	}
	return &accountVerifier{ttl: ttl, now: time.Now, log: slog.Default(), cache: map[string]cachedAccount{},
		touched: map[string]int64{}, failures: map[string]*failedLookups{}}
}

// bind gives the verifier the server's store, clock and logger.
func (v *accountVerifier) bind(store storage.Store, now func() time.Time, log *slog.Logger) {
	v.store, _ = store.(storage.ServiceAccountStore)
	v.now, v.log = now, log
}

// verify checks a service-account token and returns its principal, or the
// refusal's status and detail.
func (v *accountVerifier) verify(r *http.Request, token, adminScope string) (Principal, int, string) {
	const invalid = "Invalid service account token"
	now := v.now()
	hash := serviceAccountTokenHash(token)
	account, ok := v.cached(hash, now)
	if !ok {
		client := clientAddress(r)
		if v.throttled(client, now) {
			return Principal{}, http.StatusTooManyRequests, "Too many invalid service account tokens from this client: try again in a minute"
		}
		if v.store == nil {
			return Principal{}, http.StatusUnauthorized, "Service account tokens are not accepted: this AgentOS keeps no service accounts (pass a `db` to AgentOS)"
		}
		if !wellFormedToken(token) {
			v.failed(client, now)
			return Principal{}, http.StatusUnauthorized, invalid
		}
		generation := v.currentGeneration()
		found, err := v.store.ServiceAccountByTokenHash(r.Context(), hash)
		if errors.Is(err, storage.ErrNotFound) {
			v.failed(client, now)
			return Principal{}, http.StatusUnauthorized, invalid
		}
		if err != nil {
			v.log.ErrorContext(r.Context(), "service account lookup failed", slog.Any("error", err))
			return Principal{}, http.StatusServiceUnavailable, "Service account tokens cannot be checked right now: the database did not answer"
		}
		v.remember(hash, found, generation, now)
		account = found
	}
	switch {
	case account.RevokedAt != nil:
		return Principal{}, http.StatusUnauthorized, "Service account token has been revoked"
	case account.ExpiresAt != nil && now.Unix() >= *account.ExpiresAt:
		return Principal{}, http.StatusUnauthorized, "Service account token has expired"
	}
	v.touch(r.Context(), account, now)
	scopes := slices.Clone(account.Scopes)
	return Principal{
		Subject:          serviceAccountSubjectPrefix + account.Name,
		Scopes:           scopes,
		Admin:            slices.Contains(scopes, adminScope),
		ServiceAccountID: account.ID,
	}, http.StatusOK, ""
}

// cached returns the account remembered for a token hash.
func (v *accountVerifier) cached(hash string, now time.Time) (*storage.ServiceAccount, bool) {
	if v.ttl == 0 {
		return nil, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.cache[hash]
	if !ok || !now.Before(e.until) {
		return nil, false
	}
	return e.account, true
}

func (v *accountVerifier) currentGeneration() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.generation
}

// remember caches an account read when the cache was at generation: an
// eviction since then (a revoke) may have made the read stale, so it is
// not kept.
func (v *accountVerifier) remember(hash string, account *storage.ServiceAccount, generation uint64, now time.Time) {
	if v.ttl == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if generation != v.generation {
		return
	}
	if len(v.cache) >= maxRememberedAccounts {
		for h, e := range v.cache {
			if !now.Before(e.until) {
				delete(v.cache, h)
			}
		}
		if len(v.cache) >= maxRememberedAccounts {
			clear(v.cache) // all fresh: start again rather than grow
		}
	}
	v.cache[hash] = cachedAccount{account: account, until: now.Add(v.ttl)}
}

// evict forgets an account, so that its next use reads the store.
func (v *accountVerifier) evict(id string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.generation++
	for h, e := range v.cache {
		if e.account.ID == id {
			delete(v.cache, h)
		}
	}
}

// touch writes the account's last_used_at, unless it was written less than
// lastUsedInterval ago. A failed write is logged: it does not refuse the
// request.
func (v *accountVerifier) touch(ctx context.Context, account *storage.ServiceAccount, now time.Time) {
	at := now.Unix()
	v.mu.Lock()
	last, ok := v.touched[account.ID]
	if !ok && account.LastUsedAt != nil {
		last, ok = *account.LastUsedAt, true
	}
	if ok && at-last < lastUsedInterval {
		v.mu.Unlock()
		return
	}
	if len(v.touched) >= maxRememberedAccounts {
		for id, t := range v.touched {
			if at-t >= lastUsedInterval {
				delete(v.touched, id)
			}
		}
		if len(v.touched) >= maxRememberedAccounts {
			clear(v.touched)
		}
	}
	v.touched[account.ID] = at
	v.mu.Unlock()
	if err := v.store.TouchServiceAccount(context.WithoutCancel(ctx), account.ID, at); err != nil {
		v.log.WarnContext(ctx, "service account last use not recorded", slog.String("service_account_id", account.ID), slog.Any("error", err))
	}
}

// throttled reports a client that sent too many unknown tokens lately.
func (v *accountVerifier) throttled(client string, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := v.failures[client]
	return f != nil && now.Sub(f.since) < failedLookupWindow && f.count >= failedLookupLimit
}

// failed counts an unknown token from client.
func (v *accountVerifier) failed(client string, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := v.failures[client]
	if f != nil && now.Sub(f.since) < failedLookupWindow {
		f.count++
		return
	}
	if f == nil && len(v.failures) >= maxThrottledClients {
		for c, old := range v.failures {
			if now.Sub(old.since) >= failedLookupWindow {
				delete(v.failures, c)
			}
		}
		if len(v.failures) >= maxThrottledClients {
			return // every slot is a throttled client's: this one goes uncounted
		}
	}
	v.failures[client] = &failedLookups{since: now, count: 1}
}

// clientAddress is the address a request came from, without its port.
// Forwarding headers are not read: any client can set them.
func clientAddress(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}
