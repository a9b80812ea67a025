package agentos

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// JWTConfig configures JWT bearer authentication with RBAC scopes. It
// mirrors Agno's AuthorizationConfig; with it, every route but the open ones
// needs a valid token, and its scopes decide what the caller may do.
type JWTConfig struct {
	// VerificationKeys verify token signatures. Each is a PEM public key (or
	// certificate) for RS256 and ES256, or a shared secret of at least 32
	// bytes for HS256. They are tried in turn, so a new key can be added
	// before the old one is retired. Callers typically read one from the
	// environment variable JWT_VERIFICATION_KEY. At least one key, here or
	// in JWKSFile, is required.
	VerificationKeys []string
	// JWKSFile is the path of a JSON Web Key Set ({"keys": [...]}, or one
	// bare JWK) read once by New. RSA, EC (P-256) and oct keys are accepted
	// as the Algorithm needs; keys whose "use" is not "sig" or whose "alg"
	// differs from Algorithm are skipped. A key whose "kid" matches the
	// token's header is tried first. Callers typically read the path from
	// JWT_JWKS_FILE. Default: none.
	JWKSFile string
	// Algorithm is the only signing algorithm accepted: "RS256" (the
	// default), "ES256" or "HS256". Any other value is refused by New, and
	// tokens signed with any other algorithm (including "none") are
	// rejected with 401.
	Algorithm string
	// Audience, when set, must be among the token's "aud" values.
	// Default: not checked (but see VerifyAudience).
	Audience string
	// VerifyAudience checks "aud" even when Audience is empty, against the
	// OS id (Config.ID), as Agno does. Default false.
	VerifyAudience bool
	// Issuer, when set, must equal the token's "iss". Default: not checked.
	Issuer string
	// UserIDClaim names the claim holding the caller's user id, which
	// becomes [Principal.Subject]. It must be a string. Default "sub".
	UserIDClaim string
	// ScopesClaim names the claim holding the caller's scopes: a JSON list
	// of strings or one space-separated string. Default "scopes".
	ScopesClaim string
	// AdminScope is the scope that grants everything and bypasses user
	// isolation. Default "agent_os:admin".
	AdminScope string
	// ValidateOnly verifies tokens but checks no scopes: every valid token
	// may call every route but the admin-only ones (Agno's JWT middleware
	// without authorization=True). The admin scope still marks admins, and
	// UserIsolation still applies. Default false: RBAC is on.
	ValidateOnly bool
	// Leeway is the clock skew tolerated when checking exp, nbf and iat.
	// Default 0; negative values are refused.
	Leeway time.Duration
}

// The defaults of [JWTConfig].
const (
	defaultAlgorithm   = "RS256"
	defaultUserIDClaim = "sub"
	defaultScopesClaim = "scopes"
	defaultAdminScope  = "agent_os:admin"
	minHMACSecret      = 32
	minRSABits         = 2048
)

// verificationKey is one key that may have signed a token.
type verificationKey struct {
	kid string
	key jwt.VerificationKey
}

// jwtVerifier checks tokens against a [JWTConfig].
type jwtVerifier struct {
	cfg    JWTConfig
	keys   []verificationKey
	parser *jwt.Parser
}

// newJWTVerifier checks cfg, fills its defaults and loads its keys. The
// parser is built later by bind, once the OS id and clock are known.
func newJWTVerifier(cfg JWTConfig) (*jwtVerifier, error) {
	cfg.Algorithm = strings.ToUpper(strings.TrimSpace(cfg.Algorithm))
	if cfg.Algorithm == "" {
		cfg.Algorithm = defaultAlgorithm
	}
	switch cfg.Algorithm {
	case "RS256", "ES256", "HS256":
	default:
		return nil, fmt.Errorf("auth: JWT algorithm %q is not supported (use RS256, ES256 or HS256)", cfg.Algorithm)
	}
	if cfg.Leeway < 0 {
		return nil, errors.New("auth: JWT leeway must not be negative")
	}
	if cfg.UserIDClaim == "" {
		cfg.UserIDClaim = defaultUserIDClaim
	}
	if cfg.ScopesClaim == "" {
		cfg.ScopesClaim = defaultScopesClaim
	}
	if cfg.AdminScope == "" {
		cfg.AdminScope = defaultAdminScope
	}
	v := &jwtVerifier{cfg: cfg}
	for i, raw := range cfg.VerificationKeys {
		key, err := parseVerificationKey(cfg.Algorithm, raw)
		if err != nil {
			return nil, fmt.Errorf("auth: JWT verification key %d: %w", i+1, err)
		}
		v.keys = append(v.keys, verificationKey{key: key})
	}
	if cfg.JWKSFile != "" {
		keys, err := loadJWKS(cfg.Algorithm, cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("auth: JWKS file %s: %w", cfg.JWKSFile, err)
		}
		v.keys = append(v.keys, keys...)
	}
	if len(v.keys) == 0 {
		return nil, fmt.Errorf("auth: JWT needs at least one %s verification key (VerificationKeys or JWKSFile)", cfg.Algorithm)
	}
	return v, nil
}

// bind builds the parser: osID is the audience under VerifyAudience without
// an Audience, now the clock.
func (v *jwtVerifier) bind(osID string, now func() time.Time) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{v.cfg.Algorithm}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(v.cfg.Leeway),
		jwt.WithTimeFunc(now),
	}
	switch {
	case v.cfg.Audience != "":
		opts = append(opts, jwt.WithAudience(v.cfg.Audience))
	case v.cfg.VerifyAudience:
		opts = append(opts, jwt.WithAudience(osID))
	}
	if v.cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.cfg.Issuer))
	}
	v.parser = jwt.NewParser(opts...)
}

// keyFor returns the keys that may have signed t: those whose kid matches
// the token's first, then the rest, all for the configured algorithm.
func (v *jwtVerifier) keyFor(t *jwt.Token) (any, error) {
	// The parser already refused other algorithms; check again so a key of
	// one family can never verify a token of another.
	if t.Method == nil || t.Method.Alg() != v.cfg.Algorithm {
		return nil, fmt.Errorf("signing method %v is not allowed", t.Header["alg"])
	}
	kid, _ := t.Header["kid"].(string)
	set := jwt.VerificationKeySet{}
	for _, k := range v.keys {
		if kid != "" && k.kid == kid {
			set.Keys = append(set.Keys, k.key)
		}
	}
	for _, k := range v.keys {
		if kid == "" || k.kid != kid {
			set.Keys = append(set.Keys, k.key)
		}
	}
	return set, nil
}

// Principals only the server itself assigns: the scheduler acting for an
// unowned schedule, and service accounts ("sa:<name>", from agno_pat_
// tokens). A JWT claiming one is refused, so that no token can pass for
// them.
const (
	reservedSchedulerSubject    = "__scheduler__"
	serviceAccountSubjectPrefix = "sa:"
)

// isReservedSubject reports a user id only the server may assign.
func isReservedSubject(subject string) bool {
	return subject == reservedSchedulerSubject || strings.HasPrefix(subject, serviceAccountSubjectPrefix)
}

// verify checks a token and returns its caller, or the 401 detail.
func (v *jwtVerifier) verify(raw string) (Principal, string) {
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(raw, claims, v.keyFor); err != nil {
		switch {
		case errors.Is(err, jwt.ErrTokenExpired):
			return Principal{}, "Token has expired"
		case errors.Is(err, jwt.ErrTokenInvalidAudience):
			return Principal{}, "Invalid token audience"
		case errors.Is(err, jwt.ErrTokenMalformed):
			return Principal{}, "Invalid token: token is malformed"
		case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
			return Principal{}, "Invalid token: signature is invalid or not signed with " + v.cfg.Algorithm
		default:
			return Principal{}, "Invalid token: " + err.Error()
		}
	}
	p := Principal{Claims: map[string]any(claims)}
	if sub, ok := claims[v.cfg.UserIDClaim]; ok {
		s, isString := sub.(string)
		if !isString {
			return Principal{}, fmt.Sprintf("Invalid token: claim %q must be a string", v.cfg.UserIDClaim)
		}
		p.Subject = s
	}
	if isReservedSubject(p.Subject) {
		return Principal{}, fmt.Sprintf("Invalid token: the user id %q is reserved for the scheduler and service accounts, and no JWT may claim it", p.Subject)
	}
	scopes, err := scopesFromClaim(claims[v.cfg.ScopesClaim])
	if err != nil {
		return Principal{}, fmt.Sprintf("Invalid token: claim %q %v", v.cfg.ScopesClaim, err)
	}
	p.Scopes = scopes
	p.Admin = slices.Contains(scopes, v.cfg.AdminScope)
	return p, ""
}

// scopesFromClaim reads a scopes claim: a list of strings or one
// space-separated string; absent means no scopes.
func scopesFromClaim(claim any) ([]string, error) {
	switch c := claim.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(c), nil
	case []any:
		scopes := make([]string, 0, len(c))
		for _, s := range c {
			str, ok := s.(string)
			if !ok {
				return nil, errors.New("must hold only strings")
			}
			if str = strings.TrimSpace(str); str != "" {
				scopes = append(scopes, str)
			}
		}
		return scopes, nil
	default:
		return nil, errors.New("must be a list of strings or a space-separated string")
	}
}

// parseVerificationKey reads one configured key for alg.
func parseVerificationKey(alg, raw string) (jwt.VerificationKey, error) {
	switch alg {
	case "HS256":
		if strings.Contains(raw, "-----BEGIN") {
			return nil, errors.New("a PEM key cannot be an HS256 secret (use RS256 or ES256 for public keys)")
		}
		if len(raw) < minHMACSecret {
			return nil, fmt.Errorf("an HS256 secret needs at least %d bytes, got %d", minHMACSecret, len(raw))
		}
		return []byte(raw), nil
	case "RS256":
		key, err := jwt.ParseRSAPublicKeyFromPEM([]byte(raw))
		if err != nil {
			return nil, fmt.Errorf("not a PEM RSA public key: %w", err)
		}
		return key, checkRSA(key)
	case "ES256":
		key, err := jwt.ParseECPublicKeyFromPEM([]byte(raw))
		if err != nil {
			return nil, fmt.Errorf("not a PEM EC public key: %w", err)
		}
		return key, checkP256(key)
	}
	return nil, fmt.Errorf("algorithm %q is not supported", alg)
}

func checkRSA(key *rsa.PublicKey) error {
	if key.N.BitLen() < minRSABits {
		return fmt.Errorf("an RS256 key needs at least %d bits, got %d", minRSABits, key.N.BitLen())
	}
	return nil
}

func checkP256(key *ecdsa.PublicKey) error {
	if key.Curve != elliptic.P256() {
		return fmt.Errorf("an ES256 key must be on curve P-256, got %s", key.Curve.Params().Name)
	}
	return nil
}

// jwk is one JSON Web Key, the fields this server reads.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	K   string `json:"k"`
}

// loadJWKS reads the keys of a JWKS file usable with alg. A file with no
// such key is an error.
func loadJWKS(alg, path string) ([]verificationKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if set.Keys == nil {
		set.Keys = []json.RawMessage{data} // one bare JWK
	}
	var keys []verificationKey
	for i, raw := range set.Keys {
		var k jwk
		if err := json.Unmarshal(raw, &k); err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if (k.Use != "" && k.Use != "sig") || (k.Alg != "" && !strings.EqualFold(k.Alg, alg)) {
			continue
		}
		key, usable, err := k.verificationKey(alg)
		if err != nil {
			return nil, fmt.Errorf("key %d (kid %q): %w", i+1, k.Kid, err)
		}
		if usable {
			keys = append(keys, verificationKey{kid: k.Kid, key: key})
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no key usable with %s", alg)
	}
	return keys, nil
}

// verificationKey decodes k when its type fits alg; usable is false for a
// key of another type.
func (k jwk) verificationKey(alg string) (key jwt.VerificationKey, usable bool, err error) {
	switch {
	case alg == "RS256" && k.Kty == "RSA":
		n, err := b64BigInt(k.N)
		if err != nil {
			return nil, false, fmt.Errorf("n: %w", err)
		}
		e, err := b64BigInt(k.E)
		if err != nil {
			return nil, false, fmt.Errorf("e: %w", err)
		}
		if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
			return nil, false, errors.New("e is out of range")
		}
		pub := &rsa.PublicKey{N: n, E: int(e.Int64())}
		return pub, true, checkRSA(pub)
	case alg == "ES256" && k.Kty == "EC":
		if k.Crv != "P-256" {
			return nil, false, nil
		}
		x, err := b64Fixed(k.X, 32)
		if err != nil {
			return nil, false, fmt.Errorf("x: %w", err)
		}
		y, err := b64Fixed(k.Y, 32)
		if err != nil {
			return nil, false, fmt.Errorf("y: %w", err)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, false, err
		}
		return pub, true, nil
	case alg == "HS256" && k.Kty == "oct":
		secret, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.K, "="))
		if err != nil {
			return nil, false, fmt.Errorf("k: %w", err)
		}
		if len(secret) < minHMACSecret {
			return nil, false, fmt.Errorf("an HS256 secret needs at least %d bytes, got %d", minHMACSecret, len(secret))
		}
		return secret, true, nil
	}
	return nil, false, nil
}

func b64BigInt(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, errors.New("empty")
	}
	return new(big.Int).SetBytes(b), nil
}

func b64Fixed(s string, size int) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, err
	}
	if len(b) != size {
		return nil, fmt.Errorf("want %d bytes, got %d", size, len(b))
	}
	return b, nil
}
