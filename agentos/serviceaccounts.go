package agentos

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnogo/agnogo/storage"
)

// Service accounts (approvals-and-service-accounts.md §h.3) are machine
// identities: a caller holding service_accounts:write mints one with
// POST /service-accounts and gets, once, an opaque agno_pat_ token that
// authenticates like a JWT, with the account's scopes (accountVerifier, in
// auth.go). Only the token's SHA-256 is stored.

// serviceAccountsTag names the feature in its 503 answer.
const serviceAccountsTag = "Service Accounts"

// The shape and lifetime of service-account tokens.
const (
	serviceAccountTokenPrefix = "agno_pat_"
	serviceAccountTokenBytes  = 32 // of randomness, written in base 62
	maxTokenDigits            = 64 // base-62 digits a well-formed token can have
	tokenPrefixChars          = 16 // of the token, kept to tell tokens apart
	defaultExpiresInDays      = 90
	maxExpiresInDays          = 3650
	maxServiceAccountsPage    = 100
	maxScopeChars             = 255
)

// defaultServiceAccountScopes are granted when a request names none: enough
// to run every component and read sessions and config.
var defaultServiceAccountScopes = []string{"agents:run", "teams:run", "workflows:run", "sessions:read", "config:read"}

// serviceAccountName is the pattern of a service account's name, as Agno
// states it (\Z: the end of the text, which Go's $ is without (?m)).
var serviceAccountName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// serviceAccountNamePattern is the pattern as FastAPI's 422 quotes it.
const serviceAccountNamePattern = `^[a-z0-9][a-z0-9_-]{0,62}\Z`

// serviceAccountSortColumns are the sort_by values GET /service-accounts
// accepts.
var serviceAccountSortColumns = []string{"created_at", "name", "expires_at", "last_used_at"}

// serviceAccountRoutes mounts the /service-accounts routes; without a store
// that keeps service accounts they answer 503.
func (o *OS) serviceAccountRoutes(mux *http.ServeMux) {
	mountFeature[storage.ServiceAccountStore](o, mux, serviceAccountsTag, "service-accounts", []endpoint{
		{"POST /service-accounts", "service_accounts", "write", "", o.handleCreateServiceAccount},
		{"GET /service-accounts", "service_accounts", "read", "", o.handleListServiceAccounts},
		{"DELETE /service-accounts/{account_id}", "service_accounts", "delete", "", o.handleRevokeServiceAccount},
	})
}

// scopeSchema is one granted scope as the API shows it (Agno's
// ScopeSchema): the raw scope split into namespace (the resource),
// sub_namespace (the resource id, if any) and permission (the action).
type scopeSchema struct {
	ID           *string `json:"id"` // always null: grants have no id of their own
	Raw          string  `json:"raw"`
	Namespace    string  `json:"namespace"`
	SubNamespace *string `json:"sub_namespace"`
	Permission   *string `json:"permission"`
	Value        string  `json:"value"` // always "allow"
}

// serviceAccountResponse is a service account as the API shows it (Agno's
// ServiceAccountResponse). Times are epoch seconds.
type serviceAccountResponse struct {
	ID          string        `json:"id"`
	Name        string        `json:"name"`
	Principal   string        `json:"principal"`
	UserID      *string       `json:"user_id"`
	TokenPrefix string        `json:"token_prefix"`
	Scopes      []scopeSchema `json:"scopes"`
	CreatedAt   int64         `json:"created_at"`
	ExpiresAt   *int64        `json:"expires_at"`
	LastUsedAt  *int64        `json:"last_used_at"`
	RevokedAt   *int64        `json:"revoked_at"`
	CreatedBy   *string       `json:"created_by"`
}

// serviceAccountCreateResponse is the answer to POST /service-accounts: the
// account and, this once, its token.
type serviceAccountCreateResponse struct {
	serviceAccountResponse
	Token string `json:"token"`
}

func accountResponse(sa *storage.ServiceAccount) serviceAccountResponse {
	scopes := make([]scopeSchema, 0, len(sa.Scopes))
	for _, s := range sa.Scopes {
		scopes = append(scopes, scopeSchemaOf(s))
	}
	return serviceAccountResponse{
		ID: sa.ID, Name: sa.Name, Principal: serviceAccountSubjectPrefix + sa.Name, UserID: nullIfEmpty(sa.UserID),
		TokenPrefix: sa.TokenPrefix, Scopes: scopes, CreatedAt: sa.CreatedAt, ExpiresAt: sa.ExpiresAt,
		LastUsedAt: sa.LastUsedAt, RevokedAt: sa.RevokedAt, CreatedBy: nullIfEmpty(sa.CreatedBy),
	}
}

// scopeSchemaOf splits a scope: "agents:run" is namespace agents,
// permission run; "agents:assistant:run" adds sub_namespace assistant; an
// admin scope without a colon is all namespace.
func scopeSchemaOf(raw string) scopeSchema {
	parts := strings.Split(raw, ":")
	s := scopeSchema{Raw: raw, Namespace: parts[0], Value: "allow"}
	if n := len(parts); n > 1 {
		permission := parts[n-1]
		s.Permission = &permission
		if n > 2 {
			sub := strings.Join(parts[1:n-1], ":")
			s.SubNamespace = &sub
		}
	}
	return s
}

// knownScopeActions are the actions each resource's scopes may name: those
// of the route map, and running the MCP server's custom tools.
var knownScopeActions = func() map[string][]string {
	known := map[string][]string{mcpToolsResource: {"run"}}
	for _, rs := range routeScopes {
		resource, action, ok := strings.Cut(rs.scope, ":")
		if ok && !slices.Contains(known[resource], action) {
			known[resource] = append(known[resource], action)
		}
	}
	return known
}()

// knownScope reports whether raw is a scope this server understands: the
// admin scope, or resource:action, resource:<id>:action or
// resource:*:action over a resource and action of the route map.
func (o *OS) knownScope(raw string) bool {
	if raw == o.auth.adminScope() {
		return true
	}
	if len(raw) > maxScopeChars || strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false
	}
	sc, ok := parseScope(raw)
	return ok && slices.Contains(knownScopeActions[sc.resource], sc.action)
}

// privilegedScope reports a scope minting needs allow_privileged_scopes
// for: the admin scope, any write or delete, any service_accounts scope.
func (o *OS) privilegedScope(raw string) bool {
	if raw == o.auth.adminScope() {
		return true
	}
	sc, _ := parseScope(raw)
	return sc.action == "write" || sc.action == "delete" || sc.resource == "service_accounts"
}

// holdsScope reports whether p may grant raw: admins hold every scope, and
// anyone else a scope their own scopes cover (agents:run covers
// agents:assistant:run, not the other way round).
func (o *OS) holdsScope(p Principal, raw string) bool {
	if p.Admin {
		return true
	}
	if raw == o.auth.adminScope() {
		return false
	}
	sc, _ := parseScope(raw)
	id := sc.id
	if id == "*" {
		id = ""
	}
	return scopesGrant(p.Scopes, sc.resource, id, sc.action)
}

// vetScopes applies the minting rules to the requested scopes, in order:
// unknown scopes (400), privileged ones without allow_privileged_scopes
// (400), scopes the caller does not hold (403). It returns the refusal, or
// 0 and "".
func (o *OS) vetScopes(p Principal, scopes []string, allowPrivileged bool) (int, string) {
	var unknown, privileged, unheld []string
	for _, s := range scopes {
		switch {
		case !o.knownScope(s):
			unknown = append(unknown, strconv.Quote(s))
		case o.privilegedScope(s) && !allowPrivileged:
			privileged = append(privileged, s)
		case !o.holdsScope(p, s):
			unheld = append(unheld, s)
		}
	}
	switch {
	case len(unknown) > 0:
		return http.StatusBadRequest, "Unknown scopes: " + strings.Join(unknown, ", ") +
			" (use resource:action or resource:<id>:action, e.g. agents:run, or " + o.auth.adminScope() + ")"
	case len(privileged) > 0:
		return http.StatusBadRequest, "Privileged scopes need allow_privileged_scopes=true: " + strings.Join(privileged, ", ")
	case len(unheld) > 0:
		return http.StatusForbidden, "Cannot grant scopes the caller does not hold: " + strings.Join(unheld, ", ")
	}
	return 0, ""
}

// accountRequest is the body of POST /service-accounts.
type accountRequest struct {
	name            string
	scopes          []string
	expiresInDays   int
	neverExpires    bool
	allowPrivileged bool
}

// readAccountRequest reads and validates the body of POST
// /service-accounts, answering 422 when it does not fit.
func readAccountRequest(w http.ResponseWriter, r *http.Request) (accountRequest, bool) {
	body, ok := readJSONObject(w, r, true)
	if !ok {
		return accountRequest{}, false
	}
	req := accountRequest{scopes: defaultServiceAccountScopes}
	before := len(body.issues)
	req.name = body.required("name")
	if len(body.issues) == before && !serviceAccountName.MatchString(req.name) {
		body.invalid("name", "String should match pattern '"+serviceAccountNamePattern+"'", "string_pattern_mismatch")
	}
	if body.has("scopes") {
		req.scopes = readScopeGrants(body)
	}
	req.expiresInDays = accountBodyInt(body, "expires_in_days", defaultExpiresInDays, 1, maxExpiresInDays)
	req.neverExpires = accountBodyBool(body, "never_expires")
	req.allowPrivileged = accountBodyBool(body, "allow_privileged_scopes")
	if body.failed(w) {
		return accountRequest{}, false
	}
	return req, true
}

// readScopeGrants reads scopes: a non-empty list of {scope, effect} objects
// whose effect, when sent, is "allow". Repeated scopes are granted once.
func readScopeGrants(body *jsonBody) []string {
	raw, _ := body.raw("scopes")
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		body.invalid("scopes", "Input should be a valid list", "list_type")
		return nil
	}
	if len(items) == 0 {
		body.invalid("scopes", "List should have at least 1 item after validation, not 0", "too_short")
		return nil
	}
	var scopes []string
	for i, item := range items {
		loc := func(field string) []string { return []string{"body", "scopes", strconv.Itoa(i), field} }
		var grant map[string]json.RawMessage
		if json.Unmarshal(item, &grant) != nil || grant == nil {
			body.issue(validationIssue{Loc: []string{"body", "scopes", strconv.Itoa(i)},
				Msg: "Input should be a valid dictionary or object to extract fields from", Type: "model_attributes_type"})
			continue
		}
		var scope string
		if v, ok := grant["scope"]; !ok || string(v) == "null" {
			body.issue(validationIssue{Loc: loc("scope"), Msg: "Field required", Type: "missing"})
			continue
		} else if json.Unmarshal(v, &scope) != nil {
			body.issue(validationIssue{Loc: loc("scope"), Msg: "Input should be a valid string", Type: "string_type"})
			continue
		}
		if v, ok := grant["effect"]; ok {
			var effect string
			if json.Unmarshal(v, &effect) != nil || effect != "allow" {
				body.issue(validationIssue{Loc: loc("effect"), Msg: "Input should be 'allow'", Type: "literal_error"})
				continue
			}
		}
		if !slices.Contains(scopes, scope) {
			scopes = append(scopes, scope)
		}
	}
	return scopes
}

// accountBodyInt reads an integer field from min to max, with a default.
func accountBodyInt(body *jsonBody, name string, def, min, max int) int {
	raw, ok := body.raw(name)
	if !ok {
		return def
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) {
		body.invalid(name, "Input should be a valid integer", "int_type")
		return def
	}
	switch {
	case f < float64(min):
		body.invalid(name, fmt.Sprintf("Input should be greater than or equal to %d", min), "greater_than_equal")
	case f > float64(max):
		body.invalid(name, fmt.Sprintf("Input should be less than or equal to %d", max), "less_than_equal")
	default:
		return int(f)
	}
	return def
}

// accountBodyBool reads a boolean field; false when absent.
func accountBodyBool(body *jsonBody, name string) bool {
	raw, ok := body.raw(name)
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		body.invalid(name, "Input should be a valid boolean", "bool_type")
	}
	return b
}

// accountOwner is whose accounts a caller sees and revokes: "" (everyone's)
// for an admin, else the caller's own subject.
func accountOwner(p Principal) string {
	switch {
	case p.Admin:
		return ""
	case p.Subject == "":
		return noIdentity
	}
	return p.Subject
}

func (o *OS) handleCreateServiceAccount(w http.ResponseWriter, r *http.Request) {
	store := o.cfg.Store.(storage.ServiceAccountStore) // mountFeature checked it
	p := principalFrom(r.Context())
	if !o.auth.enabled() && p.ServiceAccountID == "" {
		// Minting always takes a real credential: on a server without
		// authentication, a caller without a token is anybody.
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeError(w, http.StatusUnauthorized, "Authentication required: an anonymous caller cannot create service accounts "+
			"(configure a security key or JWT and call with it)")
		return
	}
	if !p.Admin && p.Subject == "" {
		writeError(w, http.StatusForbidden, "A service account needs an owner, and the token carries no user identity (claim "+o.auth.userIDClaim()+")")
		return
	}
	req, ok := readAccountRequest(w, r)
	if !ok {
		return
	}
	if status, detail := o.vetScopes(p, req.scopes, req.allowPrivileged); status != 0 {
		writeError(w, status, detail)
		return
	}
	token := newServiceAccountToken()
	now := o.cfg.Now().Unix()
	var expiresAt *int64
	if !req.neverExpires {
		at := now + int64(req.expiresInDays)*int64(24*time.Hour/time.Second)
		expiresAt = &at
	}
	stored, err := store.CreateServiceAccount(r.Context(), &storage.ServiceAccount{
		Name: req.name, UserID: p.Subject, TokenHash: serviceAccountTokenHash(token), TokenPrefix: token[:tokenPrefixChars],
		Scopes: req.scopes, CreatedAt: now, ExpiresAt: expiresAt, CreatedBy: p.Subject,
	})
	if errors.Is(err, storage.ErrConflict) {
		writeError(w, http.StatusConflict, fmt.Sprintf("An active service account named '%s' already exists. Revoke it first to rotate.", req.name))
		return
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, serviceAccountCreateResponse{serviceAccountResponse: accountResponse(stored), Token: token})
}

func (o *OS) handleListServiceAccounts(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	store := o.cfg.Store.(storage.ServiceAccountStore) // mountFeature checked it
	q := newQueryReader(r)
	includeRevoked := queryBool(q, "include_revoked", true)
	page := q.paginationFrom(20)
	if page.Limit > maxServiceAccountsPage {
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", "limit"},
			Msg: fmt.Sprintf("Input should be less than or equal to %d", maxServiceAccountsPage), Type: "less_than_equal"})
	}
	sortBy := q.enum("sort_by", "created_at", serviceAccountSortColumns...)
	sortOrder := q.sortOrder()
	if q.failed(w) {
		return
	}
	accounts, total, err := store.ListServiceAccounts(r.Context(), storage.ServiceAccountQuery{
		UserID: accountOwner(principalFrom(r.Context())), IncludeRevoked: includeRevoked,
		SortBy: sortBy, SortOrder: sortOrder, Page: page.store(),
	})
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	items := make([]serviceAccountResponse, 0, len(accounts))
	for _, sa := range accounts {
		items = append(items, accountResponse(sa))
	}
	writeJSON(w, http.StatusOK, paginate(items, page, total, started))
}

// handleRevokeServiceAccount revokes an account: its token is refused from
// then on (at once by this server, within the cache TTL by others sharing
// the database). Revoking a revoked account changes nothing.
func (o *OS) handleRevokeServiceAccount(w http.ResponseWriter, r *http.Request) {
	store := o.cfg.Store.(storage.ServiceAccountStore) // mountFeature checked it
	id := r.PathValue("account_id")
	err := store.RevokeServiceAccount(r.Context(), id, accountOwner(principalFrom(r.Context())), o.cfg.Now().Unix())
	if errors.Is(err, storage.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Service account not found")
		return
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	o.auth.accounts.evict(id)
	w.WriteHeader(http.StatusNoContent)
}

// queryBool reads a boolean query parameter the way Pydantic does (true,
// false, 1, 0, yes, no, on, off, t, f, y, n), with a default.
func queryBool(q *queryReader, name string, def bool) bool {
	raw := strings.TrimSpace(q.values.Get(name))
	switch strings.ToLower(raw) {
	case "":
		return def
	case "true", "1", "yes", "on", "t", "y":
		return true
	case "false", "0", "no", "off", "f", "n":
		return false
	}
	q.issues = append(q.issues, validationIssue{Loc: []string{"query", name}, Msg: "Input should be a valid boolean, unable to interpret input", Type: "bool_parsing"})
	return def
}

// newServiceAccountToken returns a new token: the agno_pat_ prefix, which
// secret scanners look for, then 32 random bytes in base 62.
func newServiceAccountToken() string {
	var b [serviceAccountTokenBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return serviceAccountTokenPrefix + new(big.Int).SetBytes(b[:]).Text(62)
}

// serviceAccountTokenHash is what the store keeps of a token: its SHA-256,
// in hex.
func serviceAccountTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// isServiceAccountToken reports a bearer token that claims to be a
// service account's.
func isServiceAccountToken(token string) bool {
	return strings.HasPrefix(token, serviceAccountTokenPrefix)
}

// wellFormedToken reports whether a service-account token could have been
// minted here: the prefix, then 1 to 64 base-62 digits.
func wellFormedToken(token string) bool {
	digits := strings.TrimPrefix(token, serviceAccountTokenPrefix)
	if len(digits) == 0 || len(digits) > maxTokenDigits {
		return false
	}
	for _, c := range []byte(digits) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// presentsServiceAccount reports a request whose bearer token is a
// service account's.
func presentsServiceAccount(r *http.Request) bool {
	token, err := bearer(r)
	return err == nil && isServiceAccountToken(token)
}
