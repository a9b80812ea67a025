package config

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agnogo/agnogo/agentos"
)

// SecurityKeyEnv is the environment variable that supplies the security key
// when the file sets no auth.security_key, as in Agno.
const SecurityKeyEnv = "OS_SECURITY_KEY"

// MaxConcurrencyEnv, when set to an integer, replaces queue.max_concurrency:
// an operator's per-replica override. Zero or less removes the cap.
const MaxConcurrencyEnv = "AGNOGO_BACKGROUND_MAX_CONCURRENCY"

// ServerOptions tune [OS.Server].
type ServerOptions struct {
	// Getenv reads OS_SECURITY_KEY. Defaults to os.Getenv.
	Getenv func(string) string
	// Version is the version /info reports. Defaults to agentos's own.
	Version string
	// Logger receives the server's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// ListenAddr is the address the server listens on (HOST:PORT, as
	// given). [OS.StartQueue] makes it part of the default executor id, so
	// two servers on one host and one database get different ids.
	ListenAddr string
}

// Server returns the configuration of the AgentOS HTTP server that serves
// this OS: its name, database, media store, every agent (native and
// external) in file order then every team and every workflow, auth, CORS and the SSE write timeout. Pass it to
// [agentos.New].
//
// The security key is auth.security_key, else $OS_SECURITY_KEY; auth.jwt
// becomes [agentos.JWTConfig] (with authorization: false it only validates
// tokens); user isolation is on when auth.user_isolation or
// auth.jwt.user_isolation is. Keys and the JWKS file are checked by
// [agentos.New].
func (o *OS) Server(opts ServerOptions) agentos.Config {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg := agentos.Config{
		Name:     o.Name,
		Store:    o.Store,
		Media:    o.Media,
		Version:  opts.Version,
		Logger:   opts.Logger,
		Observer: o.Observer,
	}
	if f := o.File; f != nil && f.Prometheus.Path != "" {
		cfg.PrometheusPath = f.Prometheus.Path
	}
	cfg.Runners = o.Runners()
	if f := o.File; f != nil {
		cfg.CORSAllowedOrigins = f.CORSAllowedOrigins
		cfg.Scheduler = agentos.SchedulerConfig{Enabled: f.Scheduler.Enabled, PollInterval: time.Duration(f.Scheduler.PollIntervalSeconds) * time.Second}
		if m := f.MCPServer; m != nil {
			cfg.MCPServer = &agentos.MCPServerConfig{Enabled: m.Enabled, IncludeTags: m.IncludeTags, ExcludeTags: m.ExcludeTags,
				ResultMode: m.ResultMode, AllowedOrigins: m.AllowedOrigins, Tools: o.mcpTools}
		}
		if f.Auth != nil {
			cfg.Auth.SecurityKey = f.Auth.SecurityKey
			cfg.Auth.UserIsolation = f.Auth.UserIsolation
			if j := f.Auth.JWT; j != nil {
				cfg.Auth.UserIsolation = cfg.Auth.UserIsolation || j.UserIsolation
				cfg.Auth.JWT = &agentos.JWTConfig{
					VerificationKeys: j.VerificationKeys,
					JWKSFile:         j.JWKSFile,
					Algorithm:        j.Algorithm,
					Audience:         j.Audience,
					VerifyAudience:   j.VerifyAudience,
					Issuer:           j.Issuer,
					Leeway:           time.Duration(j.LeewaySeconds) * time.Second,
					AdminScope:       j.AdminScope,
					ValidateOnly:     !j.Authorization,
				}
			}
		}
	}
	if cfg.Auth.SecurityKey == "" {
		cfg.Auth.SecurityKey = opts.Getenv(SecurityKeyEnv)
	}
	cfg.BackgroundMaxConcurrency = backgroundConcurrency(o.File, opts)
	cfg.SSEWriteTimeout = sseWriteTimeout(o.File)
	return cfg
}

// sseWriteTimeout is server.sse_write_timeout_seconds as
// [agentos.Config.SSEWriteTimeout] takes it: 0 (no bound) becomes negative.
func sseWriteTimeout(f *File) time.Duration {
	if f == nil {
		return 0 // agentos's default
	}
	if s := f.Server.SSEWriteTimeoutSeconds; s > 0 {
		return time.Duration(s) * time.Second
	}
	return -1
}

// backgroundConcurrency is the cap on background runs: $[MaxConcurrencyEnv]
// when set (≤ 0 meaning none), else queue.max_concurrency.
func backgroundConcurrency(f *File, opts ServerOptions) int {
	n := DefaultMaxConcurrency
	if f != nil && f.Queue.MaxConcurrency > 0 {
		n = f.Queue.MaxConcurrency
	}
	raw := strings.TrimSpace(opts.Getenv(MaxConcurrencyEnv))
	if raw == "" {
		return n
	}
	v, err := strconv.Atoi(raw)
	if err != nil {
		opts.Logger.Warn("ignoring "+MaxConcurrencyEnv+": not an integer", slog.String("value", raw))
		return n
	}
	if v <= 0 {
		return -1 // agentos: a negative cap means none
	}
	return v
}
