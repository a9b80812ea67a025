package config

import (
	"encoding/json"
	"time"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/urlpolicy"
)

// Defaults of the keys a config file may leave out.
const (
	// DefaultName is the AgentOS name when the file has no name key.
	DefaultName = "AgentOS"
	// DefaultDB is the database when the file has no db key.
	DefaultDB = "sqlite://./agnogo.db"
	// DefaultModel is the model of the default assistant, and of an agent
	// without a model key, when AGNOGO_MODEL is not set.
	DefaultModel = "openai:gpt-5-mini"
	// DefaultOllamaBaseURL is the base URL of ollama models without base_url.
	DefaultOllamaBaseURL = "http://127.0.0.1:11434/v1"
	// DefaultMaxConcurrency is queue.max_concurrency when not set.
	DefaultMaxConcurrency = 32
	// DefaultMaxQueueDepth is queue.max_queue_depth when not set.
	DefaultMaxQueueDepth = 1000
	// DefaultMaxAttempts is queue.max_attempts when not set: a run whose
	// server dies goes on from its last completed step on a live replica.
	DefaultMaxAttempts = 3
	// DefaultStopTimeoutSeconds is queue.stop_timeout_seconds when not set.
	DefaultStopTimeoutSeconds = 30
	// DefaultRetryDelaySeconds is queue.retry_delay_seconds when not set.
	DefaultRetryDelaySeconds = 30
	// DefaultTimeoutSeconds is queue.timeout_seconds when not set.
	DefaultTimeoutSeconds = 3600
	// DefaultLockGraceSeconds is queue.lock_grace_seconds when not set.
	DefaultLockGraceSeconds = 60
	// DefaultRetentionSeconds is queue.retention_seconds when not set.
	DefaultRetentionSeconds = 86400
	// DefaultJWTAlgorithm is auth.jwt.algorithm when not set.
	DefaultJWTAlgorithm = "RS256"
	// DefaultBodyTimeoutSeconds is server.body_timeout_seconds when not set.
	DefaultBodyTimeoutSeconds = 60
	// DefaultUploadMinBytesPerSecond is server.upload_min_bytes_per_second
	// when not set: 64 KiB/s.
	DefaultUploadMinBytesPerSecond = 64 << 10
	// DefaultMaxConnections is server.max_connections when not set.
	DefaultMaxConnections = 10000
	// DefaultIdleTimeoutSeconds is server.idle_timeout_seconds when not set.
	DefaultIdleTimeoutSeconds = 120
	// DefaultSSEWriteTimeoutSeconds is server.sse_write_timeout_seconds when
	// not set.
	DefaultSSEWriteTimeoutSeconds = 30
)

// The model providers a config file can name.
const (
	// ProviderOpenAI is OpenAI, or any OpenAI-compatible server through base_url.
	ProviderOpenAI = "openai"
	// ProviderAnthropic is Anthropic's Messages API.
	ProviderAnthropic = "anthropic"
	// ProviderOllama is a local Ollama server, spoken to through its
	// OpenAI-compatible API at [DefaultOllamaBaseURL] unless base_url says
	// otherwise.
	ProviderOllama = "ollama"
)

// The agent types a config file can name.
const (
	// TypeNative is an agnogo agent: a model, tools and a run loop. It is
	// the type of an agent without a type key.
	TypeNative = "agent"
	// TypeClaude is the external Claude Code agent (the claude CLI).
	TypeClaude = "claude"
	// TypeCodex is the external Codex agent (codex app-server).
	TypeCodex = "codex"
)

// The built-in toolkits the tools key can list.
const (
	// ToolWorkspace is the workspace toolkit: files and shell under a root
	// directory (see the workspace key).
	ToolWorkspace = "workspace"
	// ToolUserControlFlow is Agno's UserControlFlowTools: get_user_input,
	// with which the model asks a person to fill in the fields it needs.
	ToolUserControlFlow = "user_control_flow_tools"
	// ToolCalculator is the calculator toolkit: add, subtract, multiply,
	// divide, exponentiate, factorial, is_prime, square_root.
	ToolCalculator = "calculator"
	// ToolTime is the time toolkit: get_current_time, convert_time.
	ToolTime = "time"
)

// File is a parsed and checked config file. [Parse] fills in every default,
// so a File reads as the configuration in effect.
type File struct {
	// Source names where the file came from (its path), for messages.
	Source string
	// Name is the AgentOS name shown by /info. Defaults to [DefaultName].
	Name string
	// DB is the database URL (see package storage/dburl). Defaults to
	// [DefaultDB].
	DB string
	// Redis is the Redis URL for live events and cancels across replicas.
	// Defaults to "": none.
	Redis string
	// Queue tunes background runs.
	Queue Queue
	// Server bounds what the HTTP server gives each client.
	Server Server
	// Auth protects the HTTP API. Nil when the file has no auth key.
	Auth *Auth
	// Tracing records spans of runs (agno_traces, /traces, OTLP). Nil when
	// the file has no tracing key: off.
	Tracing *Tracing
	// Prometheus serves the metrics in the Prometheus format. Defaults to
	// on at [DefaultPrometheusPath].
	Prometheus Prometheus
	// Scheduler fires the cron schedules of /schedules. Defaults to off,
	// polling every [DefaultSchedulerPollSeconds] once enabled.
	Scheduler Scheduler
	// MCPServer configures the AgentOS MCP server at /mcp. Nil when the
	// file has no mcp_server key: /mcp answers 503.
	MCPServer *MCPEndpoint
	// CORSAllowedOrigins are the browser origins the HTTP API answers
	// (scheme://host[:port], or "*" for any). Defaults to nil: AgentOS's
	// own list (http://localhost:3000 and Agno's hosted UIs); a list
	// replaces it.
	CORSAllowedOrigins []string
	// BlockPrivateMediaURLs refuses a run whose media URLs (images, audio,
	// video, files) point at loopback, private or link-local addresses,
	// which a model provider — a self-hosted one inside the network — would
	// fetch. Defaults to false.
	BlockPrivateMediaURLs bool
	// MediaURLAllow, when not empty, lists the only hosts media URLs may
	// name (host, *.domain, IP or CIDR); they pass even when private.
	// Defaults to nil: any host.
	MediaURLAllow []string
	// MediaURLDeny lists hosts media URLs may not name, in the same forms.
	// Defaults to nil.
	MediaURLDeny []string
	// MediaStorage is where the images, audio, video and files of runs are
	// kept (see package media): a directory path, or an s3://, gs://,
	// azblob:// or file:// URL with the parameters docs/media.md lists
	// (gs:// and azblob:// in binaries built with their tags).
	// Defaults to "": the directory media in the data directory — beside
	// the SQLite database file, or the working directory with PostgreSQL.
	MediaStorage string
	// MaxUploadBytes bounds each uploaded file, and each medium sent inline
	// as JSON, in bytes; a larger one is refused with HTTP 413. 0 means no
	// bound. Defaults to [DefaultMaxUploadBytes].
	MaxUploadBytes int64
	// MaxUploadBytesPerType overrides MaxUploadBytes for some types, keyed
	// by a MIME type ("video/mp4") or a top-level type ("video", or
	// "video/*"), in lower case; the full type wins. 0 means no bound.
	// Defaults to nil.
	MaxUploadBytesPerType map[string]int64
	// Models are the named models, by their key in the models mapping.
	Models map[string]*Model
	// Agents are the agents, in file order.
	Agents []*Agent
	// Teams are the teams, in file order (see [Team]).
	Teams []*Team
	// Workflows are the workflows, in file order (see [Workflow]).
	Workflows []*Workflow
	// Warnings are problems that do not stop the file from working, such
	// as an auth.security_key that expanded to "".
	Warnings []string

	mediaStorageLine int // the line of media_storage, for errors opening it
}

// Queue tunes background runs (the queue key).
type Queue struct {
	// Durable runs background runs on the durable queue, which survives a
	// crash. Defaults to true.
	Durable bool
	// MaxConcurrency is how many background runs one replica executes at
	// once. Defaults to [DefaultMaxConcurrency].
	MaxConcurrency int
	// MaxQueueDepth is how many background runs may wait before new ones
	// are refused with HTTP 429. Defaults to [DefaultMaxQueueDepth].
	MaxQueueDepth int
	// MaxAttempts is how many times a background run is started: when the
	// process executing it dies, or it fails for a reason another attempt
	// may not meet, it starts again from its last completed step (only the
	// step in flight at the crash runs again). 1 starts it at most once: a
	// run whose server died ends ERROR with the requeue hint. Defaults to
	// [DefaultMaxAttempts].
	MaxAttempts int
	// RetryDelaySeconds is the base delay before a failed background run's
	// next attempt: attempt N+1 waits a random time up to
	// min(base·2^(N−1), 10·base). 0 retries at once. Defaults to
	// [DefaultRetryDelaySeconds].
	RetryDelaySeconds int
	// TimeoutSeconds bounds one execution of a background run (its start,
	// and each continuation); past it the run ends ERROR. 0 means no limit.
	// Defaults to [DefaultTimeoutSeconds].
	TimeoutSeconds int
	// StopTimeoutSeconds is how long a shutdown waits for the background
	// runs executing here; those still executing then are handed back, to
	// be taken over by another replica (or resumed at the next start).
	// Defaults to [DefaultStopTimeoutSeconds].
	StopTimeoutSeconds int
	// LockGraceSeconds is how long another replica may stay silent before
	// its unfinished runs are taken over. Defaults to
	// [DefaultLockGraceSeconds]; at least 3.
	LockGraceSeconds int
	// RetentionSeconds is how long the durable queue keeps a finished run's
	// record (workflow, steps, event stream); 0 keeps them forever. Defaults
	// to [DefaultRetentionSeconds].
	RetentionSeconds int
	// ExecutorID names this server process on the durable queue: a server
	// restarted with the same id resumes the runs it left unfinished, and
	// a server is refused at start while a live one uses its id. Defaults
	// to $AGNOGO_EXECUTOR_ID, else the host name, the listen address and
	// the database.
	ExecutorID string
}

// Server bounds what `agnogo serve` gives each client (the server key): the
// time a request body may take, the connections open at once, how long an
// idle connection stays open and how long a Server-Sent Events client may
// stop reading. A zero turns a bound off, except IdleTimeoutSeconds.
type Server struct {
	// BodyTimeoutSeconds bounds how long a request body may take to
	// arrive, from when its headers have; a slower body, or one shorter
	// than its Content-Length, is cut off (the request answers 400 and the
	// connection is closed). 0 means no bound. Defaults to
	// [DefaultBodyTimeoutSeconds].
	BodyTimeoutSeconds int
	// UploadMinBytesPerSecond gives a multipart/form-data body (an upload)
	// one more second per this many bytes it delivers, so an upload at
	// least this fast is never cut off. 0 gives uploads
	// BodyTimeoutSeconds, like any body. Defaults to
	// [DefaultUploadMinBytesPerSecond].
	UploadMinBytesPerSecond int
	// MaxConnections caps the client connections open at once; past it, new
	// connections wait to be accepted until one closes. 0 means no cap.
	// Defaults to [DefaultMaxConnections].
	MaxConnections int
	// IdleTimeoutSeconds closes a keep-alive connection left idle that
	// long; at least 1. Defaults to [DefaultIdleTimeoutSeconds].
	IdleTimeoutSeconds int
	// SSEWriteTimeoutSeconds bounds the write of each Server-Sent Events
	// frame: a client that stops reading is dropped once its socket's
	// buffers are full and a frame has waited that long (a run it was
	// streaming is cancelled, as when a client leaves). 0 means no bound.
	// Defaults to [DefaultSSEWriteTimeoutSeconds].
	SSEWriteTimeoutSeconds int
	// ReleaseStartupMemory has `agnogo serve` release, once it has started,
	// the pages of its executable it holds resident (on Linux): most of
	// them hold code and data only start-up used. The kernel maps back
	// any page used again, from the page cache, at the cost of a minor
	// fault. Defaults to true.
	ReleaseStartupMemory bool
}

// defaultServer is the server key with nothing set.
func defaultServer() Server {
	return Server{
		BodyTimeoutSeconds:      DefaultBodyTimeoutSeconds,
		UploadMinBytesPerSecond: DefaultUploadMinBytesPerSecond,
		MaxConnections:          DefaultMaxConnections,
		IdleTimeoutSeconds:      DefaultIdleTimeoutSeconds,
		SSEWriteTimeoutSeconds:  DefaultSSEWriteTimeoutSeconds,
		ReleaseStartupMemory:    true,
	}
}

// Auth protects the HTTP API (the auth key).
type Auth struct {
	// SecurityKey is the bearer token every request must carry. Defaults
	// to "": no key, unless $OS_SECURITY_KEY is set when the server starts
	// (see [OS.Server]).
	SecurityKey string
	// UserIsolation confines each user to their own sessions, runs and
	// memories, as jwt.user_isolation does. Defaults to false.
	UserIsolation bool
	// JWT verifies JSON Web Tokens instead of, or besides, a security key.
	// Nil when auth has no jwt key.
	JWT *JWT
}

// JWT configures token verification (the auth.jwt key), as Agno's
// AuthorizationConfig.
type JWT struct {
	// VerificationKeys are tried in turn, which allows key rotation.
	VerificationKeys []string
	// JWKSFile is a JSON Web Key Set file, instead of VerificationKeys.
	JWKSFile string
	// Algorithm is the signing algorithm. Defaults to [DefaultJWTAlgorithm].
	Algorithm string
	// Audience is the expected aud claim. Defaults to the AgentOS id when
	// VerifyAudience is set.
	Audience string
	// VerifyAudience checks the aud claim. Defaults to false.
	VerifyAudience bool
	// Issuer, when set, must equal the token's iss claim. Defaults to "":
	// not checked.
	Issuer string
	// LeewaySeconds is the clock skew tolerated when checking exp, nbf and
	// iat. Defaults to 0.
	LeewaySeconds int
	// Authorization turns on RBAC scope checks. Defaults to false: tokens
	// are only validated.
	Authorization bool
	// AdminScope is the scope that grants everything. Defaults to
	// "agent_os:admin".
	AdminScope string
	// UserIsolation confines each user to their own sessions, runs and
	// memories. Defaults to false.
	UserIsolation bool
}

// Model is a configured model: an entry of the models mapping, or the model
// an agent names with provider:id.
type Model struct {
	// Name is the key in the models mapping, or the provider:id reference.
	Name string
	// Provider is [ProviderOpenAI], [ProviderAnthropic] or [ProviderOllama].
	// Required.
	Provider string
	// ID is the provider's model id, e.g. gpt-5-mini. Required.
	ID string
	// BaseURL is the API's base URL. Defaults to the provider's own
	// ([DefaultOllamaBaseURL] for ollama; for openai, $OPENAI_BASE_URL or
	// OpenAI's API).
	BaseURL string
	// APIKey authenticates the requests. Defaults to $OPENAI_API_KEY or
	// $ANTHROPIC_API_KEY by provider; ollama needs none.
	APIKey string
	// API is "chat" (Chat Completions) or "responses" (the Responses API);
	// openai and ollama only. Defaults to "chat".
	API string
	// Temperature is the sampling temperature. Defaults to nil: the
	// provider's default.
	Temperature *float64
	// MaxTokens caps each reply. Defaults to 0: the provider's default
	// (8192 for anthropic).
	MaxTokens int
	// Prices is what the model costs (the prices key), replacing its entry
	// in [agent.DefaultPrices]. Defaults to nil: the built-in price, if the
	// id has one.
	Prices *agent.Price
	// Line is where the model is defined (0 for a provider:id reference
	// built from an agent's model key).
	Line int
}

// Agent is one entry of the agents list.
type Agent struct {
	// ID identifies the agent. Required and unique.
	ID string
	// Name is the display name. Defaults to ID.
	Name string
	// Type is [TypeNative] (the default), [TypeClaude] or [TypeCodex].
	Type string
	// Model is the model key as written ("" when left out). For a native
	// agent it is a key of the models mapping or provider:id; left out, the
	// agent runs on $AGNOGO_MODEL, else [DefaultModel] (see ResolvedModel).
	// For an external agent it is the CLI's own model name; left out, the
	// driver's default: claude-sonnet-4-6 (claude), gpt-5.6-luna (codex).
	Model string
	// ResolvedModel is the model a native agent runs on; nil for external
	// agents.
	ResolvedModel *Model
	// Instructions are the system message (native), the system prompt
	// replacing Claude Code's own (claude, --system-prompt) or the developer
	// instructions added to Codex's (codex). Defaults to "".
	Instructions string

	// Tools are the built-in toolkits a native agent may use, by name
	// ([ToolWorkspace], web_search, …). Defaults to none.
	Tools []string
	// ToolkitSettings are the settings of the listed toolkits written with
	// them (web_search: {provider: tavily}), by toolkit name, as JSON: the
	// toolkit's own keys and those of toolkit.Options. Defaults to nil.
	ToolkitSettings map[string]json.RawMessage
	// Workspace configures the workspace toolkit. Set whenever Tools lists
	// workspace (with defaults when the file has no workspace key).
	Workspace *Workspace
	// AddHistoryToContext sends earlier runs of the session to the model.
	// Defaults to false.
	AddHistoryToContext bool
	// NumHistoryRuns is how many earlier runs make the history. Defaults
	// to 3.
	NumHistoryRuns int
	// SessionCacheSize is how many sessions a native agent keeps in memory
	// with their history (agent.Config.SessionCacheSize). Zero (absent)
	// takes the agent's default, 1024; negative keeps none (written 0).
	SessionCacheSize int
	// Retries is how many more attempts a run gets after a retryable
	// failure (of the model, or of an external agent's turn). Defaults to 0.
	Retries int
	// DelayBetweenRetries is the wait before a retry (written in seconds).
	// Defaults to 1s.
	DelayBetweenRetries time.Duration
	// ExponentialBackoff doubles the delay with each attempt. Defaults to
	// false.
	ExponentialBackoff bool
	// ToolCallLimit caps the tool calls of one run. Defaults to 0: no cap.
	ToolCallLimit int
	// StoreEvents keeps each run's events on the stored run. Defaults to
	// false.
	StoreEvents bool
	// OutputSchema asks for a structured answer matching a JSON Schema
	// whose root is an object. Defaults to nil: a text answer.
	OutputSchema *agent.OutputSchema

	// CodeMode, when set, gives the model run_code in place of the agent's
	// tools (those of its toolkits, tool entries and MCP servers): it
	// writes a Starlark program calling them. Defaults to nil: off.
	CodeMode *CodeMode
	// Approvals names the tools whose calls wait for an admin's approval
	// and how long an approval stays pending. Defaults to nil: none.
	Approvals *Approvals
	// ToolOptions are the entries of a native agent's tools written as
	// mappings, in file order: flags on a tool of a listed toolkit, or
	// tools declared in the file that the client runs or a person answers.
	// Defaults to none.
	ToolOptions []*ToolOptions
	// SessionState is the initial session_state of a new session. Defaults
	// to nil.
	SessionState map[string]any
	// OffloadToolResults stores tool results longer than OffloadThreshold
	// characters in the database and shows the model an envelope, with
	// read_result and search_result to page through them. Defaults to
	// false.
	OffloadToolResults bool
	// OffloadThreshold is the size, in characters, above which a result is
	// offloaded. Defaults to [agent.DefaultOffloadThreshold].
	OffloadThreshold int
	// MaxModelMediaBytes bounds each stored medium read back into a model
	// request; -1 means no bound. Defaults to
	// [agent.DefaultMaxModelMediaBytes].
	MaxModelMediaBytes int64
	// UpdateMemoryOnRun extracts memories of the user after each completed
	// run (update_memory_on_run, alias enable_user_memories). Defaults to
	// false.
	UpdateMemoryOnRun bool
	// EnableAgenticMemory gives the model the update_user_memory tool.
	// Defaults to false.
	EnableAgenticMemory bool
	// AddMemoriesToContext puts the user's memories in the system message.
	// Defaults to true when UpdateMemoryOnRun or EnableAgenticMemory is
	// set, as in Agno; false otherwise.
	AddMemoriesToContext bool
	// MemoryModel is the memory_model key as written: a key of the models
	// mapping or provider:id. Defaults to "": the agent's model.
	MemoryModel string
	// ResolvedMemoryModel is the model MemoryModel names; nil without one.
	ResolvedMemoryModel *Model
	// MCP are a native agent's MCP servers (mcp_servers), in file order:
	// [File.Build] connects each and gives the agent its tools. Defaults to
	// nil. (A claude agent's mcp_servers are MCPServers.)
	MCP []*MCPServer

	// Description says what an external agent is for. Defaults to "".
	Description string
	// Bin is an external agent's CLI (claude_bin, codex_bin): a path, or
	// a name looked up on PATH. Defaults to "" — claude or codex on PATH.
	Bin string
	// Cwd is the working directory of an external agent (relative to the
	// directory agnogo runs in). Defaults to the directory agnogo runs in.
	Cwd string
	// Env is added to an external CLI's environment (agnogo's own).
	// Defaults to nil.
	Env map[string]string
	// KeepUploads leaves a run's staged attachments on disk after it.
	// Defaults to false.
	KeepUploads bool

	// PermissionMode is the claude CLI's --permission-mode. Defaults to
	// the CLI's own ("default").
	PermissionMode string
	// ClaudeTools restricts the claude CLI's built-in tools (the tools key
	// of a claude agent, --tools). Defaults to nil: the CLI's set.
	ClaudeTools []string
	// AllowedTools and DisallowedTools are the claude CLI's
	// --allowedTools and --disallowedTools rules. Default to nil.
	AllowedTools, DisallowedTools []string
	// MCPServers are the claude CLI's MCP servers by name, each as
	// Claude Code's .mcp.json writes it (--mcp-config). Defaults to nil.
	MCPServers map[string]any
	// ConfirmTools routes the claude CLI's permission prompts to a person:
	// a tool call its permission rules do not allow pauses the run until
	// it is confirmed or rejected. Defaults to false (such calls are
	// declined).
	ConfirmTools bool
	// StrictMCPConfig makes the claude CLI use MCPServers only
	// (--strict-mcp-config). Defaults to false.
	StrictMCPConfig bool
	// SettingSources are the claude CLI's settings read (user, project,
	// local; --setting-sources). Defaults to nil: the CLI's own.
	SettingSources []string
	// MaxTurns caps the claude CLI's turns per run. Defaults to 0: no cap.
	MaxTurns int
	// MaxBudgetUSD caps the claude CLI's spending per run, in dollars.
	// Defaults to 0: no cap.
	MaxBudgetUSD float64
	// ConfigDir is the claude CLI's config dir (CLAUDE_CONFIG_DIR).
	// Defaults to "": $CLAUDE_CONFIG_DIR, else ~/.claude.
	ConfigDir string
	// ProjectKey groups a claude agent's transcripts in the database.
	// Defaults to "": the agent's id.
	ProjectKey string

	// Sandbox is codex's sandbox: read-only, workspace-write or
	// danger-full-access. Defaults to the CLI's own (read-only).
	Sandbox string
	// ApprovalMode answers codex's escalated permission requests:
	// auto_review (Codex's reviewer decides), deny_all (all declined) or
	// ask (the run pauses until a person confirms or rejects the call).
	// Defaults to "": auto_review, the driver's default.
	ApprovalMode string
	// ReasoningEffort is codex's reasoning effort (minimal, low, medium,
	// high, xhigh). Defaults to the model's own.
	ReasoningEffort string
	// BaseInstructions replace Codex's built-in system prompt. Defaults
	// to "": Codex's own.
	BaseInstructions string
	// Ephemeral keeps no codex thread files; the thread cannot be resumed,
	// so each run starts afresh with the session's history. Defaults to
	// false.
	Ephemeral bool
	// CodexConfig overrides Codex's config.toml for every thread (the
	// config key). Defaults to nil.
	CodexConfig map[string]any
	// CodexHome is codex's home directory (CODEX_HOME). Defaults to "":
	// $CODEX_HOME, else ~/.codex.
	CodexHome string

	// Line is where the agent's entry starts.
	Line int
	// modelLine is where the model key is, for reference errors.
	modelLine int
	// memoryModelLine is where the memory_model key is.
	memoryModelLine int
}

// External reports whether the agent drives an external CLI (claude, codex)
// rather than agnogo's own run loop.
func (a *Agent) External() bool { return a.Type != TypeNative }

// Workspace configures the workspace toolkit of an agent.
type Workspace struct {
	// Root is the directory the tools may read and write; relative paths
	// are relative to the directory agnogo runs in. Defaults to ".".
	Root string
	// ConfirmWrites pauses the run before each file write, edit or shell
	// command until a person confirms it. Defaults to true.
	ConfirmWrites bool
	// MaxReadBytes is the size of one read_file page. Defaults to 0:
	// workspace.DefaultMaxReadBytes (16,000).
	MaxReadBytes int
	// MaxShellOutputBytes bounds the output run_shell returns. Defaults to
	// 0: workspace.DefaultMaxShellOutputBytes (16,000).
	MaxShellOutputBytes int
	// ShellTimeout bounds each run_shell command (written in seconds).
	// Defaults to 0: workspace.DefaultShellTimeout (60s).
	ShellTimeout time.Duration
	// Line is where the workspace key is (0 when defaulted).
	Line int
}

// MediaURLPolicy is the policy the file's media URL keys describe, or nil
// when they describe none.
func (f *File) MediaURLPolicy() *urlpolicy.Policy {
	if !f.BlockPrivateMediaURLs && len(f.MediaURLAllow) == 0 && len(f.MediaURLDeny) == 0 {
		return nil
	}
	return &urlpolicy.Policy{BlockPrivate: f.BlockPrivateMediaURLs, Allow: f.MediaURLAllow, Deny: f.MediaURLDeny}
}

// MCPEndpoint is the file's mcp_server: the AgentOS's actions served as
// MCP tools at /mcp (see agentos.MCPServerConfig).
type MCPEndpoint struct {
	// Enabled serves /mcp. Defaults to false.
	Enabled bool
	// IncludeTags and ExcludeTags choose the built-in tools by tag (core,
	// session). Defaults to all.
	IncludeTags []string
	ExcludeTags []string
	// ResultMode is trimmed (the default) or full.
	ResultMode string
	// AllowedOrigins are the browser origins allowed. Defaults to the CORS
	// origins (localhost only when the server has no auth).
	AllowedOrigins []string
	// Tools are toolkits served as custom tools beside the built-in ones,
	// by name, with their settings in ToolkitSettings (as an agent's
	// tools). Defaults to none.
	Tools []string
	// ToolkitSettings are the settings of the listed toolkits, by name, as
	// JSON. Defaults to nil.
	ToolkitSettings map[string]json.RawMessage
	// Line is where the key is.
	Line int
}
