package config

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/run"
)

func TestParseServerKeys(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
auth:
  security_key: k
  user_isolation: true
cors_allowed_origins:
  - http://localhost:5173
  - https://chat.example.com
`, nil)
	require.Equal(t, &Auth{SecurityKey: "k", UserIsolation: true}, file.Auth)
	require.Equal(t, []string{"http://localhost:5173", "https://chat.example.com"}, file.CORSAllowedOrigins)

	file = mustParse(t, "name: x\n", nil)
	require.Nil(t, file.CORSAllowedOrigins, "no key: AgentOS's defaults")
	require.Nil(t, file.Auth)

	for yaml, want := range map[string]string{
		"cors_allowed_origins: http://localhost:3000\n":               `agnogo.yaml:1: cors_allowed_origins: want a list such as [http://localhost:3000], got "http://localhost:3000"`,
		"cors_allowed_origins: [http://localhost:3000/]\n":            `agnogo.yaml:1: cors_allowed_origins: "http://localhost:3000/" is not an origin; write scheme://host[:port] with no path or trailing slash`,
		"cors_allowed_origins: [localhost:3000]\n":                    `"localhost:3000" is not an origin`,
		"cors_allowed_origins:\n  - https://a.example\n  - ftp://b\n": `agnogo.yaml:3: cors_allowed_origins: "ftp://b" is not an origin`,
		"auth: {user_isolation: maybe}\n":                             `user_isolation in auth: want true or false`,
		"auth: {isolation: true}\n":                                   `unknown key "isolation" in auth`,
	} {
		_, err := parse([]byte(yaml), "agnogo.yaml", env(nil))
		require.ErrorContains(t, err, want, yaml)
	}
}

// serverOS builds yaml (DB stands for a new database) and returns its server
// configuration and what was logged.
func serverOS(t *testing.T, yaml string, environment map[string]string) (*OS, ServerOptions, *bytes.Buffer) {
	t.Helper()
	db := "sqlite://" + filepath.Join(t.TempDir(), "agnogo.db")
	file := mustParse(t, yaml, map[string]string{"DB": db})
	built, err := file.Build(t.Context(), BuildOptions{Getenv: env(environment)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, built.Close()) })
	var log bytes.Buffer
	return built, ServerOptions{Getenv: env(environment), Version: "v1.2.3", Logger: slog.New(slog.NewTextHandler(&log, nil))}, &log
}

func TestServerConfig(t *testing.T) {
	t.Parallel()
	built, opts, log := serverOS(t, `
name: Served
db: ${DB}
auth:
  security_key: from-file
cors_allowed_origins: [https://chat.example.com]
models:
  fake: {provider: openai, id: gpt-test, base_url: http://127.0.0.1:9/v1, api_key: sk}
agents:
  - {id: second, model: fake}
  - {id: coder, type: claude, name: Coder}
  - {id: reviewer, type: codex}
  - {id: first, model: fake}
`, map[string]string{SecurityKeyEnv: "from-env"})
	cfg := built.Server(opts)
	require.Equal(t, "Served", cfg.Name)
	require.Equal(t, "v1.2.3", cfg.Version)
	require.NotNil(t, cfg.Store)
	require.Same(t, opts.Logger, cfg.Logger)
	var ids, names []string
	for _, r := range cfg.Runners {
		ids = append(ids, r.ID())
		names = append(names, r.Name())
		require.Equal(t, run.KindAgent, r.Kind())
	}
	require.Equal(t, []string{"second", "coder", "reviewer", "first"}, ids, "every agent, external ones included, in file order")
	require.Equal(t, []string{"second", "Coder", "reviewer", "first"}, names)
	require.Same(t, built.External["coder"], cfg.Runners[1])
	require.Empty(t, log.String(), "nothing is left out with a warning")
	require.Equal(t, "from-file", cfg.Auth.SecurityKey, "the file's key wins over $OS_SECURITY_KEY")
	require.False(t, cfg.Auth.UserIsolation)
	require.Equal(t, []string{"https://chat.example.com"}, cfg.CORSAllowedOrigins)
}

func TestServerAuthDefaults(t *testing.T) {
	t.Parallel()
	built, opts, _ := serverOS(t, "db: ${DB}\n", map[string]string{SecurityKeyEnv: "from-env"})
	cfg := built.Server(opts)
	require.Equal(t, "from-env", cfg.Auth.SecurityKey, "no auth key: $OS_SECURITY_KEY")
	require.Nil(t, cfg.CORSAllowedOrigins)
	require.Empty(t, cfg.Runners)

	built, opts, _ = serverOS(t, "db: ${DB}\n", nil)
	require.Empty(t, built.Server(opts).Auth.SecurityKey, "no key anywhere: no auth")

	built, opts, _ = serverOS(t, `
db: ${DB}
auth:
  jwt: {verification_keys: [k], user_isolation: true}
`, nil)
	require.True(t, built.Server(opts).Auth.UserIsolation, "jwt.user_isolation turns isolation on")
}

func TestMissingCredentials(t *testing.T) {
	t.Parallel()
	built, _, _ := serverOS(t, `
db: ${DB}
models:
  keyed: {provider: openai, id: gpt-test, api_key: sk}
agents:
  - {id: gpt, model: openai:gpt-5-mini}
  - {id: claude, model: anthropic:claude-sonnet-4-6}
  - {id: gpt2, model: openai:gpt-5-mini}
  - {id: fine, model: keyed}
`, nil)
	require.Equal(t, []MissingCredential{
		{Model: "openai:gpt-5-mini", Variable: "OPENAI_API_KEY", Agents: []string{"gpt", "gpt2"}},
		{Model: "anthropic:claude-sonnet-4-6", Variable: "ANTHROPIC_API_KEY", Agents: []string{"claude"}},
	}, built.MissingCredentials)
	require.Len(t, built.Warnings, 2)

	file, err := Default(env(nil))
	require.NoError(t, err)
	defaultOS, err := file.Build(t.Context(), BuildOptions{DB: "sqlite://" + filepath.Join(t.TempDir(), "d.db"), Getenv: env(nil)})
	require.NoError(t, err)
	defer defaultOS.Close()
	require.Equal(t, []MissingCredential{{Model: DefaultModel, Variable: "OPENAI_API_KEY", Agents: []string{DefaultAgentID}}}, defaultOS.MissingCredentials)
}

func TestServerJWT(t *testing.T) {
	t.Parallel()
	built, opts, _ := serverOS(t, `
db: ${DB}
auth:
  security_key: k
  jwt:
    verification_keys: [secret-one, secret-two]
    jwks_file: ./jwks.json
    algorithm: HS256
    audience: my-os
    verify_audience: true
    issuer: https://auth.example.com
    leeway_seconds: 30
    admin_scope: os:admin
`, nil)
	cfg := built.Server(opts)
	require.Equal(t, &agentos.JWTConfig{
		VerificationKeys: []string{"secret-one", "secret-two"}, JWKSFile: "./jwks.json", Algorithm: "HS256",
		Audience: "my-os", VerifyAudience: true, Issuer: "https://auth.example.com", Leeway: 30 * time.Second,
		AdminScope: "os:admin", ValidateOnly: true,
	}, cfg.Auth.JWT, "without authorization: true, tokens are only validated")
	require.Equal(t, "k", cfg.Auth.SecurityKey)
	require.False(t, cfg.Auth.UserIsolation)

	built, opts, _ = serverOS(t, `
db: ${DB}
auth:
  jwt: {verification_keys: [k], authorization: true}
`, nil)
	cfg = built.Server(opts)
	require.False(t, cfg.Auth.JWT.ValidateOnly, "authorization: true checks scopes")
	require.Equal(t, DefaultJWTAlgorithm, cfg.Auth.JWT.Algorithm)
}

func TestServerBackgroundConcurrency(t *testing.T) {
	t.Parallel()
	built, opts, _ := serverOS(t, "db: ${DB}\n", nil)
	require.Equal(t, DefaultMaxConcurrency, built.Server(opts).BackgroundMaxConcurrency)

	built, opts, _ = serverOS(t, "db: ${DB}\nqueue: {max_concurrency: 4}\n", nil)
	require.Equal(t, 4, built.Server(opts).BackgroundMaxConcurrency)

	built, opts, _ = serverOS(t, "db: ${DB}\nqueue: {max_concurrency: 4}\n", map[string]string{MaxConcurrencyEnv: "9"})
	require.Equal(t, 9, built.Server(opts).BackgroundMaxConcurrency, "the environment overrides the file")

	built, opts, _ = serverOS(t, "db: ${DB}\n", map[string]string{MaxConcurrencyEnv: "0"})
	require.Negative(t, built.Server(opts).BackgroundMaxConcurrency, "zero or less: no cap")

	built, opts, log := serverOS(t, "db: ${DB}\nqueue: {max_concurrency: 4}\n", map[string]string{MaxConcurrencyEnv: "lots"})
	require.Equal(t, 4, built.Server(opts).BackgroundMaxConcurrency)
	require.Contains(t, log.String(), "ignoring "+MaxConcurrencyEnv)
}
