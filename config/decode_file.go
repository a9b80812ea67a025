package config

import (
	"fmt"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
	"github.com/agnogo/agnogo/urlpolicy"
)

// The keys each mapping knows, in the order the documentation lists them.
var (
	fileKeys = []string{"name", "db", "redis", "queue", "auth", "cors_allowed_origins", "server", "mcp_server", "tracing", "prometheus", "scheduler",
		"block_private_media_urls", "media_url_allow", "media_url_deny", "media_storage", "max_upload_bytes", "max_upload_bytes_per_type",
		"models", "agents", "teams", "workflows"}
	queueKeys = []string{"durable", "max_concurrency", "max_queue_depth", "max_attempts", "retry_delay_seconds", "timeout_seconds", "stop_timeout_seconds", "executor_id", "lock_grace_seconds", "retention_seconds"}
	authKeys  = []string{"security_key", "user_isolation", "jwt"}
	jwtKeys   = []string{"verification_keys", "jwks_file", "algorithm", "audience", "verify_audience", "issuer", "leeway_seconds", "authorization", "admin_scope", "user_isolation"}
	modelKeys = []string{"provider", "id", "base_url", "api_key", "api", "temperature", "max_tokens", "prices"}
	priceKeys = []string{"input", "output", "cache_read", "cache_write"}
)

// mcpEndpointKeys are the keys of the mcp_server mapping, in the
// documentation's order.
var mcpEndpointKeys = []string{"enabled", "include_tags", "exclude_tags", "result_mode", "allowed_origins", "tools"}

// serverKeys are the keys of the server mapping, in the documentation's
// order.
var serverKeys = []string{"body_timeout_seconds", "upload_min_bytes_per_second", "max_connections", "idle_timeout_seconds", "sse_write_timeout_seconds", "release_startup_memory"}

// jwtAlgorithms are the signing algorithms auth.jwt.algorithm accepts.
var jwtAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "HS256", "HS384", "HS512", "EdDSA"}

// label names a value for messages: "retries in agent "coder"".
func label(key, what string) string {
	if what == "" {
		return key
	}
	return key + " in " + what
}

// decodeFile reads the document into a File with the defaults filled in.
func (d *decoder) decodeFile(doc *yaml.Node) *File {
	file := defaultFile(d.source)
	if doc.Kind == 0 {
		return file // an empty file
	}
	d.expand(doc)
	if len(d.errs) > 0 {
		return file
	}
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	for _, f := range d.fields(root, "") {
		switch f.name() {
		case "name":
			if name := d.str(f.value, "name"); name != "" {
				file.Name = name
			}
		case "db":
			if db := d.str(f.value, "db"); db != "" {
				if _, err := dburl.Parse(db); err != nil {
					d.errorf(f.value, "db: %s", strings.TrimPrefix(err.Error(), storage.ErrInvalid.Error()+": "))
				}
				file.DB = db
			}
		case "redis":
			file.Redis = d.str(f.value, "redis")
			d.checkURL(f.value, "redis", file.Redis, "redis", "rediss", "unix")
		case "queue":
			d.decodeQueue(f.value, &file.Queue)
		case "auth":
			file.Auth = d.decodeAuth(f.value, file)
		case "cors_allowed_origins":
			file.CORSAllowedOrigins = d.origins(f.value)
		case "server":
			d.decodeServer(f.value, &file.Server)
		case "mcp_server":
			file.MCPServer = d.decodeMCPEndpoint(f.value)
		case "tracing":
			file.Tracing = d.decodeTracing(f.value)
		case "prometheus":
			d.decodePrometheus(f.value, &file.Prometheus)
		case "scheduler":
			file.Scheduler = d.decodeScheduler(f.value)
		case "block_private_media_urls":
			file.BlockPrivateMediaURLs = d.boolean(f.value, "block_private_media_urls")
		case "media_url_allow", "media_url_deny":
			hosts := d.strings(f.value, f.name())
			if err := (&urlpolicy.Policy{Allow: hosts}).Validate(); err != nil {
				d.errorf(f.value, "%s: %s", f.name(), strings.TrimPrefix(err.Error(), "urlpolicy: "))
			}
			if f.name() == "media_url_allow" {
				file.MediaURLAllow = hosts
			} else {
				file.MediaURLDeny = hosts
			}
		case "media_storage":
			d.decodeMediaStorage(f.value, file)
		case "max_upload_bytes":
			file.MaxUploadBytes = d.byteSize(f.value, "max_upload_bytes")
		case "max_upload_bytes_per_type":
			file.MaxUploadBytesPerType = d.decodeUploadLimits(f.value)
		case "models":
			for _, entry := range d.fields(f.value, "models") {
				file.Models[entry.name()] = d.decodeModel(entry)
			}
		case "agents":
			file.Agents = d.decodeAgents(f.value)
		case "teams":
			file.Teams = d.decodeTeams(f.value)
		case "workflows":
			file.Workflows = d.decodeWorkflows(f.value)
		default:
			d.unknownKey(f, "", fileKeys)
		}
	}
	return file
}

// checkURL reports a value that is not a URL with one of schemes ("" is
// fine: the key is optional).
func (d *decoder) checkURL(node *yaml.Node, what, value string, schemes ...string) {
	if value == "" {
		return
	}
	u, err := url.Parse(value)
	if err != nil || u.Scheme == "" {
		d.errorf(node, "%s: %q is not a URL; want %s://…", what, value, schemes[0])
		return
	}
	for _, scheme := range schemes {
		if strings.EqualFold(u.Scheme, scheme) {
			return
		}
	}
	d.errorf(node, "%s: URL scheme %q is not %s", what, u.Scheme, strings.Join(schemes, ", "))
}

// origins reads cors_allowed_origins: a list of browser origins, each
// scheme://host[:port] as browsers send it in the Origin header (no path, no
// trailing slash), or "*".
func (d *decoder) origins(node *yaml.Node) []string {
	node = deref(node)
	if isNull(node) {
		return nil
	}
	if node.Kind != yaml.SequenceNode {
		d.errorf(node, "cors_allowed_origins: want a list such as [http://localhost:3000], got %s", kindName(node))
		return nil
	}
	origins := make([]string, 0, len(node.Content))
	for _, item := range node.Content {
		origin := d.str(item, "cors_allowed_origins")
		if origin == "" {
			continue
		}
		if origin != "*" {
			u, err := url.Parse(origin)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
				d.errorf(item, "cors_allowed_origins: %q is not an origin; write scheme://host[:port] with no path or trailing slash, such as http://localhost:3000, or \"*\" for any", origin)
				continue
			}
		}
		origins = append(origins, origin)
	}
	return origins
}

func (d *decoder) decodeQueue(node *yaml.Node, queue *Queue) {
	for _, f := range d.fields(node, "queue") {
		what := label(f.name(), "queue")
		switch f.name() {
		case "durable":
			queue.Durable = d.boolean(f.value, what)
		case "max_concurrency":
			queue.MaxConcurrency = d.integer(f.value, what, 1)
		case "max_queue_depth":
			queue.MaxQueueDepth = d.integer(f.value, what, 1)
		case "max_attempts":
			queue.MaxAttempts = d.integer(f.value, what, 1)
		case "retry_delay_seconds":
			queue.RetryDelaySeconds = d.integer(f.value, what, 0)
		case "timeout_seconds":
			queue.TimeoutSeconds = d.integer(f.value, what, 0)
		case "stop_timeout_seconds":
			queue.StopTimeoutSeconds = d.integer(f.value, what, 0)
		case "executor_id":
			queue.ExecutorID = d.str(f.value, what)
		case "lock_grace_seconds":
			queue.LockGraceSeconds = d.integer(f.value, what, 3)
		case "retention_seconds":
			queue.RetentionSeconds = d.integer(f.value, what, 0)
		default:
			d.unknownKey(f, "queue", queueKeys)
		}
	}
}

func (d *decoder) decodeServer(node *yaml.Node, server *Server) {
	for _, f := range d.fields(node, "server") {
		what := label(f.name(), "server")
		switch f.name() {
		case "body_timeout_seconds":
			server.BodyTimeoutSeconds = d.integer(f.value, what, 0)
		case "upload_min_bytes_per_second":
			server.UploadMinBytesPerSecond = d.integer(f.value, what, 0)
		case "max_connections":
			server.MaxConnections = d.integer(f.value, what, 0)
		case "idle_timeout_seconds":
			server.IdleTimeoutSeconds = d.integer(f.value, what, 1)
		case "sse_write_timeout_seconds":
			server.SSEWriteTimeoutSeconds = d.integer(f.value, what, 0)
		case "release_startup_memory":
			server.ReleaseStartupMemory = d.boolean(f.value, what)
		default:
			d.unknownKey(f, "server", serverKeys)
		}
	}
}

// decodeMCPEndpoint reads mcp_server, the AgentOS MCP server at /mcp.
func (d *decoder) decodeMCPEndpoint(node *yaml.Node) *MCPEndpoint {
	if isNull(node) {
		return nil
	}
	m := &MCPEndpoint{ResultMode: "trimmed", Line: deref(node).Line}
	for _, f := range d.fields(node, "mcp_server") {
		what := label(f.name(), "mcp_server")
		switch f.name() {
		case "enabled":
			m.Enabled = d.boolean(f.value, what)
		case "include_tags", "exclude_tags":
			tags := d.strings(f.value, what)
			for _, tag := range tags {
				if tag != "core" && tag != "session" {
					d.errorf(f.value, "%s: tag %q is not one of core, session", what, tag)
				}
			}
			if f.name() == "include_tags" {
				m.IncludeTags = tags
			} else {
				m.ExcludeTags = tags
			}
		case "result_mode":
			m.ResultMode = d.oneOf(f.value, what, false, "trimmed", "full")
		case "allowed_origins":
			m.AllowedOrigins = d.origins(f.value)
		case "tools":
			var entries []*ToolOptions
			m.Tools, m.ToolkitSettings, entries = d.nativeTools(f.value, what, "mcp_server")
			for _, entry := range entries {
				d.errorAt(entry.Line, "%s: list toolkits, with their settings (web_search: {provider: tavily}); tool entries are for agents", what)
			}
			for _, name := range m.Tools {
				if name == ToolWorkspace || name == ToolUserControlFlow {
					d.errorf(f.value, "%s: %s needs a person or a workspace of an agent's run; it cannot be served over MCP", what, name)
				}
			}
		default:
			d.unknownKey(f, "mcp_server", mcpEndpointKeys)
		}
	}
	return m
}

func (d *decoder) decodeAuth(node *yaml.Node, file *File) *Auth {
	if isNull(node) {
		return nil
	}
	auth := &Auth{}
	var keyNode *yaml.Node
	for _, f := range d.fields(node, "auth") {
		what := label(f.name(), "auth")
		switch f.name() {
		case "security_key":
			keyNode = f.value
			auth.SecurityKey = d.str(f.value, what)
		case "user_isolation":
			auth.UserIsolation = d.boolean(f.value, what)
		case "jwt":
			auth.JWT = d.decodeJWT(f.value)
		default:
			d.unknownKey(f, "auth", authKeys)
		}
	}
	if keyNode != nil && auth.SecurityKey == "" {
		file.Warnings = append(file.Warnings, fmt.Sprintf("%s:%d: auth.security_key is empty (an unset variable?): requests need no key",
			d.source, keyNode.Line))
	}
	return auth
}

func (d *decoder) decodeJWT(node *yaml.Node) *JWT {
	if isNull(node) {
		return nil
	}
	jwt := &JWT{Algorithm: DefaultJWTAlgorithm}
	for _, f := range d.fields(node, "auth.jwt") {
		what := label(f.name(), "auth.jwt")
		switch f.name() {
		case "verification_keys":
			jwt.VerificationKeys = d.strings(f.value, what)
		case "jwks_file":
			jwt.JWKSFile = d.str(f.value, what)
		case "algorithm":
			jwt.Algorithm = d.oneOf(f.value, what, false, jwtAlgorithms...)
		case "audience":
			jwt.Audience = d.str(f.value, what)
		case "verify_audience":
			jwt.VerifyAudience = d.boolean(f.value, what)
		case "issuer":
			jwt.Issuer = d.str(f.value, what)
		case "leeway_seconds":
			jwt.LeewaySeconds = d.integer(f.value, what, 0)
		case "authorization":
			jwt.Authorization = d.boolean(f.value, what)
		case "admin_scope":
			jwt.AdminScope = d.str(f.value, what)
		case "user_isolation":
			jwt.UserIsolation = d.boolean(f.value, what)
		default:
			d.unknownKey(f, "auth.jwt", jwtKeys)
		}
	}
	if len(jwt.VerificationKeys) == 0 && jwt.JWKSFile == "" {
		d.errorf(node, "auth.jwt needs verification_keys or jwks_file")
	}
	return jwt
}

// decodeModel reads one entry of the models mapping: a mapping, or a
// provider:id string.
func (d *decoder) decodeModel(entry field) *Model {
	name := entry.name()
	what := fmt.Sprintf("model %q", name)
	value := deref(entry.value)
	if value != nil && value.Kind == yaml.ScalarNode && !isNull(value) {
		m, err := modelFromReference(value.Value)
		if err != nil {
			d.errorf(value, "%s: %q is not provider:id with provider openai, anthropic or ollama; or write a mapping with provider and id", what, value.Value)
			return &Model{Name: name, Line: entry.key.Line}
		}
		m.Name, m.Line = name, entry.key.Line
		return m
	}
	m := &Model{Name: name, Line: entry.key.Line}
	var providerNode *yaml.Node
	var apiNode *yaml.Node
	for _, f := range d.fields(entry.value, what) {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "provider":
			providerNode = f.value
			m.Provider = d.str(f.value, keyWhat)
		case "id":
			m.ID = d.str(f.value, keyWhat)
		case "base_url":
			m.BaseURL = d.str(f.value, keyWhat)
			d.checkURL(f.value, keyWhat, m.BaseURL, "http", "https")
		case "api_key":
			m.APIKey = d.str(f.value, keyWhat)
		case "api":
			apiNode = f.value
			m.API = d.oneOf(f.value, keyWhat, true, "chat", "responses")
		case "temperature":
			temperature := d.number(f.value, keyWhat, 0, 2)
			m.Temperature = &temperature
		case "max_tokens":
			m.MaxTokens = d.integer(f.value, keyWhat, 1)
		case "prices":
			m.Prices = d.decodePrices(f.value, "prices of "+what)
		default:
			d.unknownKey(f, what, modelKeys)
		}
	}
	if providerNode == nil {
		d.errorf(entry.key, "%s has no provider; add provider: openai, anthropic or ollama", what)
	} else {
		d.checkProvider(m, providerNode, what)
	}
	if m.ID == "" {
		d.errorf(entry.key, "%s has no id; add the provider's model id, such as id: gpt-5-mini", what)
	}
	if m.Provider == ProviderAnthropic && apiNode != nil {
		d.errorf(apiNode, "api in %s: api applies to openai and ollama models only", what)
	}
	if m.Prices != nil {
		// OpenAI-compatible APIs count cached tokens inside the input
		// tokens; Anthropic's count them apart.
		m.Prices.CachedInInput = m.Provider != ProviderAnthropic
	}
	return m
}

// maxPrice bounds a price per million tokens, to catch a misplaced digit.
const maxPrice = 100_000

// decodePrices reads a model's prices: USD per million tokens of input,
// output, cache reads and cache writes. Left out, input and output are 0 and
// the cache prices are the input price, so cached tokens are never free by
// omission.
func (d *decoder) decodePrices(node *yaml.Node, what string) *agent.Price {
	if deref(node).Kind != yaml.MappingNode {
		d.errorf(node, "%s: want a mapping of USD per million tokens, such as {input: 0.25, output: 2, cache_read: 0.025}, got %s",
			what, kindName(node))
		return nil
	}
	price := &agent.Price{}
	var cacheRead, cacheWrite *float64
	for _, f := range d.fields(node, what) {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "input":
			price.Input = d.number(f.value, keyWhat, 0, maxPrice)
		case "output":
			price.Output = d.number(f.value, keyWhat, 0, maxPrice)
		case "cache_read":
			cacheRead = new(d.number(f.value, keyWhat, 0, maxPrice))
		case "cache_write":
			cacheWrite = new(d.number(f.value, keyWhat, 0, maxPrice))
		default:
			d.unknownKey(f, what, priceKeys)
		}
	}
	price.CacheRead, price.CacheWrite = price.Input, price.Input
	if cacheRead != nil {
		price.CacheRead = *cacheRead
	}
	if cacheWrite != nil {
		price.CacheWrite = *cacheWrite
	}
	return price
}

// checkProvider reports an unknown provider and fills in the provider's
// defaults.
func (d *decoder) checkProvider(m *Model, node *yaml.Node, what string) {
	switch m.Provider {
	case ProviderOpenAI, ProviderAnthropic:
	case ProviderOllama:
		if m.BaseURL == "" {
			m.BaseURL = DefaultOllamaBaseURL
		}
	default:
		d.errorf(node, "unknown provider %q in %s; use openai, anthropic or ollama (any OpenAI-compatible server is provider: openai with base_url)", m.Provider, what)
		return
	}
	if m.Provider != ProviderAnthropic && m.API == "" {
		m.API = "chat"
	}
}
