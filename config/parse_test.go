package config

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// env returns a getenv over a fixed map, so tests never see the real
// environment.
func env(values map[string]string) func(string) string {
	return func(key string) string { return values[key] }
}

// mustParse parses yaml as agnogo.yaml with the given environment.
func mustParse(t *testing.T, yaml string, values map[string]string) *File {
	t.Helper()
	file, err := parse([]byte(yaml), "agnogo.yaml", env(values))
	require.NoError(t, err)
	return file
}

// everyKey uses every key the format knows.
const everyKey = `name: My AgentOS
db: sqlite://./data/os.db
redis: redis://127.0.0.1:6379/0
queue: {durable: false, max_concurrency: 8, max_queue_depth: 50, max_attempts: 3, retry_delay_seconds: 5, timeout_seconds: 0, stop_timeout_seconds: 12, executor_id: node-a, lock_grace_seconds: 9, retention_seconds: 3600}
auth:
  security_key: ${OS_SECURITY_KEY}
  user_isolation: true
  jwt:
    verification_keys: [key-one, key-two]
    jwks_file: ./jwks.json
    algorithm: ES256
    audience: my-os
    verify_audience: true
    authorization: true
    admin_scope: os:admin
    user_isolation: true
models:
  local: {provider: openai, id: gpt-5-mini, base_url: http://127.0.0.1:8000/v1, api_key: ${OPENAI_API_KEY}, api: responses, temperature: 0.2, max_tokens: 1024}
  claude: {provider: anthropic, id: claude-sonnet-4-6}
  llama: {provider: ollama, id: llama3}
  short: anthropic:claude-haiku-4-5
agents:
  - id: assistant
    name: Assistant
    model: local
    instructions: You are helpful.
    tools: [workspace]
    workspace: {root: ./work, confirm_writes: false}
    add_history_to_context: true
    num_history_runs: 5
    retries: 2
    delay_between_retries: 1.5
    exponential_backoff: true
    tool_call_limit: 7
    store_events: true
    output_schema: {title: Answer, type: object, properties: {answer: {type: string}}, required: [answer]}
  - id: coder
    type: claude
    name: Coder
    description: Edits the code.
    cwd: ./workspace
    claude_bin: /opt/claude/bin/claude
    model: claude-sonnet-4-6
    instructions: Be brief.
    permission_mode: acceptEdits
    tools: [Bash, Read, Edit]
    allowed_tools: ["Bash(git log:*)", Read]
    disallowed_tools: [WebFetch]
    mcp_servers:
      files: {command: npx, args: [-y, files-server], env: {ROOT: /srv}}
      search: {type: http, url: https://mcp.example.com/mcp, headers: {Authorization: Bearer t}}
    strict_mcp_config: true
    setting_sources: [project, local]
    max_turns: 4
    max_budget_usd: 2.5
    env: {ANTHROPIC_BASE_URL: http://127.0.0.1:8080, MAX_THINKING_TOKENS: 1024}
    config_dir: ./claude-config
    project_key: my-project
    keep_uploads: true
    retries: 1
    delay_between_retries: 2
    exponential_backoff: true
    store_events: true
    output_schema: {type: object, properties: {summary: {type: string}}}
  - id: codex
    type: codex
    description: Reviews.
    cwd: ./workspace
    codex_bin: codex-nightly
    model: gpt-5.5
    instructions: Review only.
    base_instructions: You are a reviewer.
    sandbox: workspace_write
    approval_mode: deny_all
    reasoning_effort: high
    ephemeral: true
    config: {model_verbosity: low, mcp_servers: {docs: {url: https://docs.example.com/mcp}}}
    env: {OPENAI_BASE_URL: http://127.0.0.1:9000/v1}
    codex_home: /var/lib/codex
    keep_uploads: false
    retries: 3
    exponential_backoff: false
    store_events: false
    output_schema: '{"title": "Review", "type": "object", "properties": {"ok": {"type": "boolean"}}}'
cors_allowed_origins: [http://localhost:3000, "https://chat.example.com:8443", "*"]
media_storage: s3://agnogo-media?region=eu-west-1&prefix=media/
max_upload_bytes: 16MiB
max_upload_bytes_per_type: {video: 200MB, application/pdf: 0}
`

func TestParseEveryKey(t *testing.T) {
	t.Parallel()
	file := mustParse(t, everyKey, map[string]string{"OS_SECURITY_KEY": "s3cret", "OPENAI_API_KEY": "sk-test"})

	require.Equal(t, "agnogo.yaml", file.Source)
	require.Equal(t, "My AgentOS", file.Name)
	require.Equal(t, "sqlite://./data/os.db", file.DB)
	require.Equal(t, "redis://127.0.0.1:6379/0", file.Redis)
	require.Equal(t, Queue{Durable: false, MaxConcurrency: 8, MaxQueueDepth: 50, MaxAttempts: 3, RetryDelaySeconds: 5, TimeoutSeconds: 0, StopTimeoutSeconds: 12, ExecutorID: "node-a", LockGraceSeconds: 9, RetentionSeconds: 3600}, file.Queue)
	require.Equal(t, &Auth{SecurityKey: "s3cret", UserIsolation: true, JWT: &JWT{
		VerificationKeys: []string{"key-one", "key-two"}, JWKSFile: "./jwks.json", Algorithm: "ES256", Audience: "my-os",
		VerifyAudience: true, Authorization: true, AdminScope: "os:admin", UserIsolation: true,
	}}, file.Auth)
	require.Equal(t, []string{"http://localhost:3000", "https://chat.example.com:8443", "*"}, file.CORSAllowedOrigins)
	require.Equal(t, "s3://agnogo-media?region=eu-west-1&prefix=media/", file.MediaStorage)
	require.Equal(t, int64(16<<20), file.MaxUploadBytes)
	require.Equal(t, map[string]int64{"video": 200_000_000, "application/pdf": 0}, file.MaxUploadBytesPerType)
	require.Empty(t, file.Warnings)

	temperature := 0.2
	require.Equal(t, &Model{Name: "local", Provider: ProviderOpenAI, ID: "gpt-5-mini", BaseURL: "http://127.0.0.1:8000/v1",
		APIKey: "sk-test", API: "responses", Temperature: &temperature, MaxTokens: 1024, Line: 18}, file.Models["local"])
	require.Equal(t, &Model{Name: "claude", Provider: ProviderAnthropic, ID: "claude-sonnet-4-6", Line: 19}, file.Models["claude"])
	require.Equal(t, &Model{Name: "llama", Provider: ProviderOllama, ID: "llama3", BaseURL: DefaultOllamaBaseURL, API: "chat", Line: 20}, file.Models["llama"])
	require.Equal(t, &Model{Name: "short", Provider: ProviderAnthropic, ID: "claude-haiku-4-5", Line: 21}, file.Models["short"])

	require.Len(t, file.Agents, 3)
	assistant := file.Agents[0]
	require.Equal(t, "assistant", assistant.ID)
	require.Equal(t, "Assistant", assistant.Name)
	require.Equal(t, TypeNative, assistant.Type)
	require.False(t, assistant.External())
	require.Equal(t, "local", assistant.Model)
	require.Same(t, file.Models["local"], assistant.ResolvedModel)
	require.Equal(t, "You are helpful.", assistant.Instructions)
	require.Equal(t, []string{"workspace"}, assistant.Tools)
	require.Equal(t, &Workspace{Root: "./work", ConfirmWrites: false, Line: 28}, assistant.Workspace)
	require.True(t, assistant.AddHistoryToContext)
	require.Equal(t, 5, assistant.NumHistoryRuns)
	require.Equal(t, 2, assistant.Retries)
	require.Equal(t, 1500*time.Millisecond, assistant.DelayBetweenRetries)
	require.True(t, assistant.ExponentialBackoff)
	require.Equal(t, 7, assistant.ToolCallLimit)
	require.True(t, assistant.StoreEvents)
	require.NotNil(t, assistant.OutputSchema)
	require.Equal(t, "Answer", assistant.OutputSchema.Name)
	require.JSONEq(t, `{"title":"Answer","type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`,
		string(assistant.OutputSchema.Schema))
	require.Equal(t, 23, assistant.Line)

	coder := file.Agents[1]
	require.True(t, coder.External())
	require.Equal(t, TypeClaude, coder.Type)
	require.Equal(t, "Coder", coder.Name)
	require.Equal(t, "Edits the code.", coder.Description)
	require.Equal(t, "./workspace", coder.Cwd, "paths are kept as written; Build resolves them")
	require.Equal(t, "/opt/claude/bin/claude", coder.Bin)
	require.Equal(t, "claude-sonnet-4-6", coder.Model)
	require.Nil(t, coder.ResolvedModel, "an external agent's model is the CLI's, not a models key")
	require.Equal(t, "Be brief.", coder.Instructions)
	require.Equal(t, "acceptEdits", coder.PermissionMode)
	require.Empty(t, coder.Tools, "a claude agent's tools are the CLI's, not agnogo toolkits")
	require.Nil(t, coder.Workspace)
	require.Equal(t, []string{"Bash", "Read", "Edit"}, coder.ClaudeTools)
	require.Equal(t, []string{"Bash(git log:*)", "Read"}, coder.AllowedTools)
	require.Equal(t, []string{"WebFetch"}, coder.DisallowedTools)
	require.Equal(t, map[string]any{
		"files":  map[string]any{"command": "npx", "args": []any{"-y", "files-server"}, "env": map[string]any{"ROOT": "/srv"}},
		"search": map[string]any{"type": "http", "url": "https://mcp.example.com/mcp", "headers": map[string]any{"Authorization": "Bearer t"}},
	}, coder.MCPServers)
	require.True(t, coder.StrictMCPConfig)
	require.Equal(t, []string{"project", "local"}, coder.SettingSources)
	require.Equal(t, 4, coder.MaxTurns)
	require.InDelta(t, 2.5, coder.MaxBudgetUSD, 0)
	require.Equal(t, map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080", "MAX_THINKING_TOKENS": "1024"}, coder.Env,
		"env values are strings, numbers as written")
	require.Equal(t, "./claude-config", coder.ConfigDir)
	require.Equal(t, "my-project", coder.ProjectKey)
	require.True(t, coder.KeepUploads)
	require.Equal(t, 1, coder.Retries)
	require.Equal(t, 2*time.Second, coder.DelayBetweenRetries)
	require.True(t, coder.ExponentialBackoff)
	require.True(t, coder.StoreEvents)
	require.JSONEq(t, `{"type":"object","properties":{"summary":{"type":"string"}}}`, string(coder.OutputSchema.Schema))

	codex := file.Agents[2]
	require.Equal(t, TypeCodex, codex.Type)
	require.Equal(t, "codex", codex.Name, "name defaults to the id")
	require.Equal(t, "Reviews.", codex.Description)
	require.Equal(t, "./workspace", codex.Cwd)
	require.Equal(t, "codex-nightly", codex.Bin)
	require.Equal(t, "gpt-5.5", codex.Model)
	require.Equal(t, "Review only.", codex.Instructions)
	require.Equal(t, "You are a reviewer.", codex.BaseInstructions)
	require.Equal(t, "workspace-write", codex.Sandbox, "sandbox aliases are normalized")
	require.Equal(t, "deny_all", codex.ApprovalMode)
	require.Equal(t, "high", codex.ReasoningEffort)
	require.True(t, codex.Ephemeral)
	require.Equal(t, map[string]any{"model_verbosity": "low", "mcp_servers": map[string]any{"docs": map[string]any{"url": "https://docs.example.com/mcp"}}},
		codex.CodexConfig)
	require.Equal(t, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9000/v1"}, codex.Env)
	require.Equal(t, "/var/lib/codex", codex.CodexHome)
	require.False(t, codex.KeepUploads)
	require.Equal(t, 3, codex.Retries)
	require.Equal(t, time.Second, codex.DelayBetweenRetries, "delay_between_retries defaults to 1s for external agents too")
	require.False(t, codex.ExponentialBackoff)
	require.False(t, codex.StoreEvents)
	require.JSONEq(t, `{"title": "Review", "type": "object", "properties": {"ok": {"type": "boolean"}}}`, string(codex.OutputSchema.Schema))
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	for _, yaml := range []string{"", "# nothing\n", "name:\ndb: ''\n"} {
		file := mustParse(t, yaml, nil)
		require.Equal(t, DefaultName, file.Name)
		require.Equal(t, DefaultDB, file.DB)
		require.Empty(t, file.Redis)
		require.Equal(t, Queue{Durable: true, MaxConcurrency: 32, MaxQueueDepth: 1000, MaxAttempts: 3, RetryDelaySeconds: 30, TimeoutSeconds: 3600, StopTimeoutSeconds: 30, LockGraceSeconds: 60, RetentionSeconds: 86400}, file.Queue)
		require.Nil(t, file.Auth)
		require.Empty(t, file.Models)
		require.Empty(t, file.Agents)
	}

	file := mustParse(t, "agents:\n  - id: a\n    tools: [workspace]\n  - id: b\n    type: claude\nauth: {jwt: {verification_keys: [k]}}\n", nil)
	a := file.Agents[0]
	require.Equal(t, "a", a.Name)
	require.Empty(t, a.Model, "no model key: $AGNOGO_MODEL, else openai:gpt-5-mini")
	require.Equal(t, &Model{Name: DefaultModel, Provider: ProviderOpenAI, ID: "gpt-5-mini", API: "chat"}, a.ResolvedModel)
	require.False(t, a.AddHistoryToContext)
	require.Equal(t, 3, a.NumHistoryRuns)
	require.Equal(t, time.Second, a.DelayBetweenRetries)
	require.Equal(t, &Workspace{Root: ".", ConfirmWrites: true}, a.Workspace, "tools: [workspace] alone works in the current directory and confirms writes")
	require.Nil(t, a.OutputSchema)
	require.Equal(t, DefaultJWTAlgorithm, file.Auth.JWT.Algorithm)

	b := file.Agents[1]
	require.Equal(t, &Agent{ID: "b", Name: "b", Type: TypeClaude, DelayBetweenRetries: time.Second, Line: 4}, b,
		"an external agent leaves everything else to its driver; retries 0 and a 1s delay as agnogo agents")

	file = mustParse(t, "agents:\n  - id: a\n", map[string]string{"AGNOGO_MODEL": "ollama:qwen3"})
	require.Equal(t, &Model{Name: "ollama:qwen3", Provider: ProviderOllama, ID: "qwen3", API: "chat", BaseURL: DefaultOllamaBaseURL},
		file.Agents[0].ResolvedModel)
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"unknown top-level key", "name: x\n\ndbb: sqlite://x.db\n",
			`agnogo.yaml:3: unknown key "dbb" at top level; did you mean "db"?`},
		{"unknown key in a model", "models:\n  m:\n    provider: openai\n    id: gpt-5\n    base: http://x\n",
			`agnogo.yaml:5: unknown key "base" in model "m"`},
		{"unknown key in an agent", "agents:\n  - id: helper\n    model: openai:gpt-5\n  - id: coder\n    instructions: hi\n\n    modle: openai:gpt-5\n",
			`agnogo.yaml:7: unknown key "modle" in agent "coder"; did you mean "model"?`},
		{"unknown key in an agent without id", "agents:\n  - name: x\n    colour: red\n",
			`agnogo.yaml:3: unknown key "colour" in agents[0]`},
		{"unknown key in workspace", "agents:\n  - id: a\n    tools: [workspace]\n    workspace:\n      root: .\n      confirm: false\n",
			`agnogo.yaml:6: unknown key "confirm" in workspace of agent "a"; known keys: root, confirm_writes`},
		{"unknown key in queue", "queue: {durable: true, depth: 3}\n", `agnogo.yaml:1: unknown key "depth" in queue`},
		{"unknown key in auth.jwt", "auth:\n  jwt:\n    verification_keys: [k]\n    issuers: me\n", `agnogo.yaml:4: unknown key "issuers" in auth.jwt`},
		{"key of another agent type", "agents:\n  - id: a\n    sandbox: read-only\n",
			`agnogo.yaml:3: key "sandbox" in agent "a" is for codex agents only; this is an agnogo agent (no type key)`},
		{"native key on an external agent", "agents:\n  - id: c\n    type: claude\n    workspace: {root: .}\n",
			`agnogo.yaml:4: key "workspace" in agent "c" is for agnogo agents only; this is a claude agent`},
		{"key of two other types", "agents:\n  - id: c\n    type: codex\n    tools: [shell]\n",
			`agnogo.yaml:4: key "tools" in agent "c" is for agnogo and claude agents only; this is a codex agent`},
		{"claude key on a codex agent", "agents:\n  - id: c\n    type: codex\n    permission_mode: plan\n",
			`agnogo.yaml:4: key "permission_mode" in agent "c" is for claude agents only; this is a codex agent`},
		{"unknown key in a claude agent", "agents:\n  - id: c\n    type: claude\n    max_turn: 3\n",
			`agnogo.yaml:4: unknown key "max_turn" in agent "c"; did you mean "max_turns"?`},
		{"unknown key in a codex agent", "agents:\n  - id: c\n    type: codex\n    thread_kwargs: {}\n",
			`agnogo.yaml:4: unknown key "thread_kwargs" in agent "c"; known keys: id, name, type, model, instructions, description, cwd, codex_bin,`},
		{"agnogo toolkit on a claude agent", "agents:\n  - id: c\n    type: claude\n    tools:\n      - Bash\n      - workspace\n",
			`agnogo.yaml:6: tools in agent "c": "workspace" is an agnogo toolkit, for agents without a type key; a claude agent takes the claude CLI's tool names, such as Bash, Read, Edit`},
		{"claude tools not a list", "agents:\n  - id: c\n    type: claude\n    tools: Bash\n",
			`agnogo.yaml:4: tools in agent "c": want a list such as [a, b], got "Bash"`},
		{"empty allowed tool", "agents:\n  - id: c\n    type: claude\n    allowed_tools: [Read, \"\"]\n",
			`agnogo.yaml:4: allowed_tools in agent "c": an item is empty`},
		{"disallowed tools not a list", "agents:\n  - id: c\n    type: claude\n    disallowed_tools: {Write: true}\n",
			`agnogo.yaml:4: disallowed_tools in agent "c": want a list such as [a, b], got a mapping`},
		{"mcp_servers not a mapping", "agents:\n  - id: c\n    type: claude\n    mcp_servers: [files]\n",
			`agnogo.yaml:4: mcp_servers in agent "c": want a mapping of keys, got a list`},
		{"mcp server not a mapping", "agents:\n  - id: c\n    type: claude\n    mcp_servers: {files: npx files}\n",
			`agnogo.yaml:4: files in mcp_servers in agent "c": want a mapping such as {command: npx, args: [-y, my-server]} or {type: http, url: https://…}, got "npx files"`},
		{"mcp server without command or url", "agents:\n  - id: c\n    type: claude\n    mcp_servers:\n      files: {args: [x]}\n",
			`agnogo.yaml:5: files in mcp_servers in agent "c": want a command (a local server) or a url (type: http or sse)`},
		{"quoted strict_mcp_config", "agents:\n  - id: c\n    type: claude\n    strict_mcp_config: yes\n",
			`agnogo.yaml:4: strict_mcp_config in agent "c": want true or false, got "yes"`},
		{"bad setting source", "agents:\n  - id: c\n    type: claude\n    setting_sources: [user, global]\n",
			`agnogo.yaml:4: setting_sources in agent "c": "global" is not one of user, project, local`},
		{"setting sources not a list", "agents:\n  - id: c\n    type: claude\n    setting_sources: user\n",
			`agnogo.yaml:4: setting_sources in agent "c": want a list such as [user, project], got "user"`},
		{"zero max_turns", "agents:\n  - id: c\n    type: claude\n    max_turns: 0\n",
			`agnogo.yaml:4: max_turns in agent "c": want a number of at least 1, got 0`},
		{"negative budget", "agents:\n  - id: c\n    type: claude\n    max_budget_usd: -1\n",
			`agnogo.yaml:4: max_budget_usd in agent "c": want a number from 0 to 1e+06, got -1`},
		{"budget in words", "agents:\n  - id: c\n    type: claude\n    max_budget_usd: five\n",
			`agnogo.yaml:4: max_budget_usd in agent "c": want a number, got "five"`},
		{"env not a mapping", "agents:\n  - id: c\n    type: claude\n    env: [A=1]\n",
			`agnogo.yaml:4: env in agent "c": want a mapping of keys, got a list`},
		{"env value not a string", "agents:\n  - id: c\n    type: codex\n    env: {A: [1]}\n",
			`agnogo.yaml:4: A in env in agent "c": want a string, got a list`},
		{"bad env name", "agents:\n  - id: c\n    type: codex\n    env: {1A: x}\n",
			`agnogo.yaml:4: env in agent "c": "1A" is not a variable name; use letters, digits and _, not starting with a digit`},
		{"managed env", "agents:\n  - id: c\n    type: claude\n    env:\n      CLAUDE_CODE_ENTRYPOINT: cli\n",
			`agnogo.yaml:5: env in agent "c": CLAUDE_CODE_ENTRYPOINT is managed by agnogo and cannot be set`},
		{"env with a key's variable", "agents:\n  - id: c\n    type: claude\n    env: {CLAUDE_CONFIG_DIR: /tmp/c}\n",
			`agnogo.yaml:4: env in agent "c": CLAUDE_CONFIG_DIR is managed by agnogo; set config_dir instead`},
		{"env with codex_home's variable", "agents:\n  - id: c\n    type: codex\n    env: {CODEX_HOME: /tmp/c}\n",
			`agnogo.yaml:4: env in agent "c": CODEX_HOME is managed by agnogo; set codex_home instead`},
		{"claude_bin not a string", "agents:\n  - id: c\n    type: claude\n    claude_bin: [claude]\n",
			`agnogo.yaml:4: claude_bin in agent "c": want a string, got a list`},
		{"codex_bin on claude", "agents:\n  - id: c\n    type: claude\n    codex_bin: codex\n",
			`agnogo.yaml:4: key "codex_bin" in agent "c" is for codex agents only; this is a claude agent`},
		{"config_dir not a string", "agents:\n  - id: c\n    type: claude\n    config_dir: {path: x}\n",
			`agnogo.yaml:4: config_dir in agent "c": want a string, got a mapping`},
		{"project_key not a string", "agents:\n  - id: c\n    type: claude\n    project_key: [a]\n",
			`agnogo.yaml:4: project_key in agent "c": want a string, got a list`},
		{"description not a string", "agents:\n  - id: c\n    type: codex\n    description: [a]\n",
			`agnogo.yaml:4: description in agent "c": want a string, got a list`},
		{"description on an agnogo agent", "agents:\n  - id: a\n    description: x\n",
			`agnogo.yaml:3: key "description" in agent "a" is for claude and codex agents only; this is an agnogo agent (no type key)`},
		{"quoted keep_uploads", "agents:\n  - id: c\n    type: claude\n    keep_uploads: \"no\"\n",
			`agnogo.yaml:4: keep_uploads in agent "c": want true or false, got "no"`},
		{"negative retries on an external agent", "agents:\n  - id: c\n    type: codex\n    retries: -2\n",
			`agnogo.yaml:4: retries in agent "c": want a number of at least 0, got -2`},
		{"zero delay on an external agent", "agents:\n  - id: c\n    type: claude\n    delay_between_retries: 0\n",
			`agnogo.yaml:4: delay_between_retries in agent "c": want a number from 0.001 to 86400, got 0`},
		{"quoted exponential_backoff", "agents:\n  - id: c\n    type: codex\n    exponential_backoff: \"true\"\n",
			`agnogo.yaml:4: exponential_backoff in agent "c": want true or false, got "true"`},
		{"quoted store_events", "agents:\n  - id: c\n    type: claude\n    store_events: \"true\"\n",
			`agnogo.yaml:4: store_events in agent "c": want true or false, got "true"`},
		{"external output schema not an object", "agents:\n  - id: c\n    type: claude\n    output_schema: {type: array}\n",
			`agnogo.yaml:4: output_schema in agent "c": output schema output: the answer must be an object`},
		{"bad approval mode", "agents:\n  - id: c\n    type: codex\n    approval_mode: always\n",
			`agnogo.yaml:4: approval_mode in agent "c": "always" is not one of auto_review, deny_all, ask`},
		{"bad reasoning effort", "agents:\n  - id: c\n    type: codex\n    reasoning_effort: max\n",
			`agnogo.yaml:4: reasoning_effort in agent "c": "max" is not one of minimal, low, medium, high, xhigh`},
		{"quoted ephemeral", "agents:\n  - id: c\n    type: codex\n    ephemeral: \"true\"\n",
			`agnogo.yaml:4: ephemeral in agent "c": want true or false, got "true"`},
		{"codex config not a mapping", "agents:\n  - id: c\n    type: codex\n    config: model=gpt-5\n",
			`agnogo.yaml:4: config in agent "c": want a mapping of Codex config.toml keys, such as {model_verbosity: low}, got "model=gpt-5"`},
		{"base_instructions not a string", "agents:\n  - id: c\n    type: codex\n    base_instructions: {a: b}\n",
			`agnogo.yaml:4: base_instructions in agent "c": want a string, got a mapping`},
		{"codex_home not a string", "agents:\n  - id: c\n    type: codex\n    codex_home: [a]\n",
			`agnogo.yaml:4: codex_home in agent "c": want a string, got a list`},
		{"cwd not a string", "agents:\n  - id: c\n    type: codex\n    cwd: [a]\n",
			`agnogo.yaml:4: cwd in agent "c": want a string, got a list`},
		{"resume", "agents:\n  - id: c\n    type: claude\n    resume: abc\n",
			`agnogo.yaml:4: key "resume" in agent "c" is managed by agnogo and cannot be set: agnogo resumes the CLI session of each agnogo session itself`},
		{"session_id", "agents:\n  - id: c\n    type: codex\n    session_id: abc\n",
			`agnogo.yaml:4: key "session_id" in agent "c" is managed by agnogo and cannot be set`},
		{"continue_conversation", "agents:\n  - id: c\n    type: claude\n    continue_conversation: true\n",
			`agnogo.yaml:4: key "continue_conversation" in agent "c" is managed by agnogo and cannot be set`},
		{"continue", "agents:\n  - id: c\n    type: claude\n    continue: true\n",
			`agnogo.yaml:4: key "continue" in agent "c" is managed by agnogo and cannot be set`},
		{"fork_session", "agents:\n  - id: c\n    type: claude\n    fork_session: true\n",
			`agnogo.yaml:4: key "fork_session" in agent "c" is managed by agnogo and cannot be set: agnogo forks CLI sessions itself`},
		{"include_partial_messages", "agents:\n  - id: c\n    type: claude\n    include_partial_messages: true\n",
			`agnogo.yaml:4: key "include_partial_messages" in agent "c" is managed by agnogo and cannot be set: agnogo asks for partial messages whenever a run streams`},
		{"skills", "agents:\n  - id: c\n    type: claude\n    skills: [pdf]\n",
			`agnogo.yaml:4: key "skills" in agent "c" is not supported yet for claude agents; remove it`},
		{"plugins", "agents:\n  - id: c\n    type: claude\n    plugins: [x]\n",
			`agnogo.yaml:4: key "plugins" in agent "c" is not supported yet for claude agents; remove it`},
		{"managed key on an agnogo agent is just unknown", "agents:\n  - id: a\n    session_id: x\n",
			`agnogo.yaml:3: unknown key "session_id" in agent "a"`},
		{"string for a number", "agents:\n  - id: a\n    retries: lots\n", `agnogo.yaml:3: retries in agent "a": want a whole number, got "lots"`},
		{"negative number", "agents:\n  - id: a\n    retries: -1\n", `agnogo.yaml:3: retries in agent "a": want a number of at least 0, got -1`},
		{"zero delay", "agents:\n  - id: a\n    delay_between_retries: 0\n", `agnogo.yaml:3: delay_between_retries in agent "a": want a number from 0.001 to 86400, got 0`},
		{"quoted bool", "agents:\n  - id: a\n    store_events: \"true\"\n", `agnogo.yaml:3: store_events in agent "a": want true or false, got "true"`},
		{"mapping for a string", "name: {first: x}\n", `agnogo.yaml:1: name: want a string, got a mapping`},
		{"scalar for a list", "agents:\n  - id: a\n    tools: workspace\n", `agnogo.yaml:3: tools in agent "a": want a list such as [a, b], got "workspace"`},
		{"agents not a list", "agents:\n  id: a\n", `agnogo.yaml:2: agents: want a list of agents`},
		{"duplicate agent id", "agents:\n  - id: a\n  - id: b\n  - id: a\n",
			`agnogo.yaml:4: duplicate agent id "a" (first defined at line 2)`},
		{"agent without id", "agents:\n  - name: Helper\n", `agnogo.yaml:2: agents[0] has no id`},
		{"duplicate key", "name: a\nname: b\n", `agnogo.yaml:2: duplicate key "name" at top level (first at line 1)`},
		{"unknown model reference", "models:\n  fast: openai:gpt-5-mini\nagents:\n  - id: a\n    model: quick\n",
			`agnogo.yaml:5: unknown model "quick" in agent "a": not a key of models (fast) nor provider:id such as openai:gpt-5-mini`},
		{"unknown provider in a reference", "agents:\n  - id: a\n    model: gemini:pro\n",
			`agnogo.yaml:3: unknown provider "gemini" in model "gemini:pro" (use openai, anthropic or ollama) in agent "a"`},
		{"unknown provider in models", "models:\n  m: {provider: gemini, id: pro}\n",
			`agnogo.yaml:2: unknown provider "gemini" in model "m"; use openai, anthropic or ollama`},
		{"model without provider", "models:\n  m: {id: gpt-5}\n", `agnogo.yaml:2: model "m" has no provider`},
		{"model without id", "models:\n  m: {provider: openai}\n", `agnogo.yaml:2: model "m" has no id`},
		{"api on anthropic", "models:\n  m: {provider: anthropic, id: c, api: chat}\n", `agnogo.yaml:2: api in model "m": api applies to openai and ollama models only`},
		{"bad api", "models:\n  m: {provider: openai, id: g, api: completions}\n", `agnogo.yaml:2: api in model "m": "completions" is not one of chat, responses`},
		{"bad base_url", "models:\n  m: {provider: openai, id: g, base_url: localhost:8000}\n", `agnogo.yaml:2: base_url in model "m": URL scheme "localhost" is not http, https`},
		{"unknown tool", "agents:\n  - id: a\n    tools:\n      - workspace\n      - web\n",
			`agnogo.yaml:5: unknown tool "web" in agent "a"; the built-in toolkits are: workspace`},
		{"workspace without the tool", "agents:\n  - id: a\n    workspace: {root: .}\n",
			`agnogo.yaml:3: workspace in agent "a" is set but tools does not list workspace`},
		{"unknown agent type", "agents:\n  - id: a\n    type: gemini\n", `agnogo.yaml:3: type in agent "a": "gemini" is not one of agent, claude, codex`},
		{"bad permission mode", "agents:\n  - id: a\n    type: claude\n    permission_mode: yolo\n", `agnogo.yaml:4: permission_mode in agent "a": "yolo" is not one of`},
		{"bad sandbox", "agents:\n  - id: a\n    type: codex\n    sandbox: none\n", `agnogo.yaml:4: sandbox in agent "a": "none" is not one of read-only, workspace-write, danger-full-access`},
		{"output schema not an object", "agents:\n  - id: a\n    output_schema: {type: string}\n",
			`agnogo.yaml:3: output_schema in agent "a": output schema output: the answer must be an object`},
		{"output schema not a mapping", "agents:\n  - id: a\n    output_schema: [a]\n", `agnogo.yaml:3: output_schema in agent "a": want a JSON Schema as a mapping`},
		{"bad db", "db: mysql://x/y\n", `agnogo.yaml:1: db: database URL scheme "mysql" is not supported; use sqlite://PATH`},
		{"bad redis", "redis: http://x\n", `agnogo.yaml:1: redis: URL scheme "http" is not redis, rediss, unix`},
		{"queue depth zero", "queue: {max_queue_depth: 0}\n", `agnogo.yaml:1: max_queue_depth in queue: want a number of at least 1, got 0`},
		{"bad jwt algorithm", "auth: {jwt: {verification_keys: [k], algorithm: none}}\n", `agnogo.yaml:1: algorithm in auth.jwt: "none" is not one of RS256`},
		{"jwt without keys", "auth:\n  jwt: {audience: x}\n", `agnogo.yaml:2: auth.jwt needs verification_keys or jwks_file`},
		{"temperature out of range", "models:\n  m: {provider: openai, id: g, temperature: 3}\n", `agnogo.yaml:2: temperature in model "m": want a number from 0 to 2, got 3`},
		{"malformed variable", "name: ${not closed\n", `agnogo.yaml:1: malformed variable in "${not closed"`},
		{"unclosed flow list", "name: x\nagents: [a\n", `agnogo.yaml:2: invalid YAML: did not find expected ',' or ']'`},
		{"bad indentation", "agents:\n  - id: a\n   name: x\n", `agnogo.yaml:2: invalid YAML: did not find expected '-' indicator`},
		{"colon in a plain value", "name: x\ndb: a: b\n", `agnogo.yaml:2: invalid YAML: mapping values are not allowed in this context`},
		{"not a mapping", "- a\n- b\n", `agnogo.yaml:1: the file: want a mapping of keys, got a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tt.yaml), "agnogo.yaml", env(nil))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			var configErr *Error
			require.ErrorAs(t, err, &configErr)
			require.Equal(t, "agnogo.yaml", configErr.Source)
		})
	}
}

func TestParseReportsEveryProblemInLineOrder(t *testing.T) {
	t.Parallel()
	yaml := "agents:\n  - id: a\n    model: nowhere\n  - id: a\n    retries: x\nextra: 1\n"
	_, err := parse([]byte(yaml), "agnogo.yaml", env(nil))
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, []string{
		`agnogo.yaml:3: unknown model "nowhere" in agent "a": not a key of models (none) nor provider:id such as openai:gpt-5-mini`,
		`agnogo.yaml:4: duplicate agent id "a" (first defined at line 2); agent ids must be unique`,
		`agnogo.yaml:5: retries in agent "a": want a whole number, got "x"`,
		`agnogo.yaml:6: unknown key "extra" at top level; known keys: name, db, redis, queue, auth, cors_allowed_origins, server, mcp_server, tracing, prometheus, scheduler, block_private_media_urls, media_url_allow, media_url_deny, media_storage, max_upload_bytes, max_upload_bytes_per_type, models, agents, teams, workflows`,
	}, lines)

	var many strings.Builder
	many.WriteString("agents:\n  - id: a\n")
	for i := range 15 {
		many.WriteString("    bad" + string(rune('a'+i)) + ": 1\n")
	}
	_, err = parse([]byte(many.String()), "agnogo.yaml", env(nil))
	require.ErrorContains(t, err, "agnogo.yaml: and 5 more problems")
	require.Len(t, strings.Split(err.Error(), "\n"), 11)
}

func TestExpandVariables(t *testing.T) {
	t.Parallel()
	values := map[string]string{
		"NAME":    "Prod OS",
		"KEY":     "sk-123",
		"RETRIES": "4",
		"EMPTY":   "",
		"TRICKY":  "a: b # not a comment\n- not a list",
		"ID":      "0123",
	}
	yaml := `name: ${NAME}
models:
  m: {provider: openai, id: "gpt-${ID}", api_key: ${KEY}, base_url: ${BASE:-http://127.0.0.1:9/v1}}
agents:
  - id: a
    model: m
    retries: ${RETRIES}
    instructions: ${TRICKY}
  - id: b
    model: m
    instructions: "cost $${HOME} dollars, ${UNSET}|${EMPTY:-fallback}|${UNSET:-}"
  - id: ${ID}
    model: m
    tool_call_limit: ${LIMIT:-3}
`
	file := mustParse(t, yaml, values)
	require.Equal(t, "Prod OS", file.Name)
	m := file.Models["m"]
	require.Equal(t, "gpt-0123", m.ID)
	require.Equal(t, "sk-123", m.APIKey, "a ${VAR} inside a flow mapping keeps the mapping intact")
	require.Equal(t, "http://127.0.0.1:9/v1", m.BaseURL, "${VAR:-default} takes the default when VAR is unset")
	require.Equal(t, 4, file.Agents[0].Retries, "an expanded plain value is typed by its new text")
	require.Equal(t, values["TRICKY"], file.Agents[0].Instructions, "an expanded value never changes the file's structure")
	require.Equal(t, "cost ${HOME} dollars, |fallback|", file.Agents[1].Instructions,
		"$${ is a literal ${, an unset variable is empty, an empty one takes its default")
	require.Equal(t, "0123", file.Agents[2].ID, "an expanded id stays a string")
	require.Equal(t, 3, file.Agents[2].ToolCallLimit)

	_, err := parse([]byte("agents:\n  - id: a\n    retries: ${RETRIES}\n"), "agnogo.yaml", env(map[string]string{"RETRIES": "many"}))
	require.ErrorContains(t, err, `agnogo.yaml:3: retries in agent "a": want a whole number, got "many"`)

	// An unset security key is a warning, not silence.
	file = mustParse(t, "auth:\n  security_key: ${OS_SECURITY_KEY}\n", nil)
	require.Equal(t, []string{"agnogo.yaml:2: auth.security_key is empty (an unset variable?): requests need no key"}, file.Warnings)
}

func TestModelReferences(t *testing.T) {
	t.Parallel()
	yaml := `models:
  fast: {provider: openai, id: gpt-5-nano}
agents:
  - {id: a, model: fast}
  - {id: b, model: openai:gpt-5-mini}
  - {id: c, model: openai:gpt-5-mini}
  - {id: d, model: anthropic:claude-sonnet-4-6}
  - {id: e, model: ollama:llama3}
  - {id: f, model: "ollama:qwen3:8b"}
`
	file := mustParse(t, yaml, nil)
	byID := map[string]*Model{}
	for _, a := range file.Agents {
		byID[a.ID] = a.ResolvedModel
	}
	require.Same(t, file.Models["fast"], byID["a"])
	require.Equal(t, &Model{Name: "openai:gpt-5-mini", Provider: ProviderOpenAI, ID: "gpt-5-mini", API: "chat"}, byID["b"])
	require.Same(t, byID["b"], byID["c"], "agents naming the same provider:id share one model")
	require.Equal(t, &Model{Name: "anthropic:claude-sonnet-4-6", Provider: ProviderAnthropic, ID: "claude-sonnet-4-6"}, byID["d"])
	require.Equal(t, &Model{Name: "ollama:llama3", Provider: ProviderOllama, ID: "llama3", API: "chat", BaseURL: DefaultOllamaBaseURL}, byID["e"])
	require.Equal(t, "qwen3:8b", byID["f"].ID, "only the first colon separates the provider")

	// A models key wins over the provider:id reading of the same text.
	file = mustParse(t, "models:\n  openai:gpt-5: {provider: ollama, id: gpt-oss}\nagents:\n  - {id: a, model: openai:gpt-5}\n", nil)
	require.Equal(t, ProviderOllama, file.Agents[0].ResolvedModel.Provider)
}

func TestOutputSchema(t *testing.T) {
	t.Parallel()
	yaml := `agents:
  - id: yaml
    output_schema:
      type: object
      properties:
        answer: {type: string}
        score: {type: number, minimum: 0}
        tags: {type: array, items: {type: string}}
      required: [answer]
  - id: json
    output_schema: '{"title": "My Answer", "type": "object", "properties": {"n": {"type": "integer"}}}'
`
	file := mustParse(t, yaml, nil)
	schema := file.Agents[0].OutputSchema
	require.NotNil(t, schema)
	require.Equal(t, "output", schema.Name, "without a title the answer's content_type is output")
	var decoded map[string]any
	require.NoError(t, json.Unmarshal(schema.Schema, &decoded))
	require.Equal(t, map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer": map[string]any{"type": "string"},
			"score":  map[string]any{"type": "number", "minimum": float64(0)},
			"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required": []any{"answer"},
	}, decoded)

	schema = file.Agents[1].OutputSchema
	require.Equal(t, "output", schema.Name, "a title that is not a valid schema name is not used")
	require.JSONEq(t, `{"title": "My Answer", "type": "object", "properties": {"n": {"type": "integer"}}}`, string(schema.Schema))
}

func TestMergeKeys(t *testing.T) {
	t.Parallel()
	yaml := `base: &base
  model: openai:gpt-5-mini
  retries: 3
  add_history_to_context: true
agents:
  - {<<: *base, id: a}
  - <<: *base
    id: b
    retries: 1
`
	_, err := parse([]byte(yaml), "agnogo.yaml", env(nil))
	require.ErrorContains(t, err, `agnogo.yaml:1: unknown key "base" at top level`, "anchors must live inside known keys")

	yaml = `agents:
  - &base {id: a, model: openai:gpt-5-mini, retries: 3, add_history_to_context: true}
  - <<: *base
    id: b
    retries: 1
`
	file := mustParse(t, yaml, nil)
	require.Equal(t, 3, file.Agents[0].Retries)
	b := file.Agents[1]
	require.Equal(t, "b", b.ID)
	require.Equal(t, 1, b.Retries, "keys written in the mapping win over merged ones")
	require.True(t, b.AddHistoryToContext)
	require.Equal(t, "gpt-5-mini", b.ResolvedModel.ID)
}

func TestDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		agnogoModel string
		want        *Model
	}{
		{"", &Model{Name: "openai:gpt-5-mini", Provider: ProviderOpenAI, ID: "gpt-5-mini", API: "chat"}},
		{"anthropic:claude-sonnet-4-6", &Model{Name: "anthropic:claude-sonnet-4-6", Provider: ProviderAnthropic, ID: "claude-sonnet-4-6"}},
		{"ollama:llama3", &Model{Name: "ollama:llama3", Provider: ProviderOllama, ID: "llama3", API: "chat", BaseURL: DefaultOllamaBaseURL}},
	}
	for _, tt := range tests {
		file, err := Default(env(map[string]string{"AGNOGO_MODEL": tt.agnogoModel}))
		require.NoError(t, err)
		require.Equal(t, DefaultName, file.Name)
		require.Equal(t, DefaultDB, file.DB)
		require.Len(t, file.Agents, 1)
		a := file.Agents[0]
		require.Equal(t, DefaultAgentID, a.ID)
		require.Equal(t, TypeNative, a.Type)
		require.True(t, a.AddHistoryToContext)
		require.Equal(t, tt.want, a.ResolvedModel)
	}

	_, err := Default(env(map[string]string{"AGNOGO_MODEL": "gpt-5"}))
	require.EqualError(t, err, `AGNOGO_MODEL="gpt-5": want provider:id, such as openai:gpt-5-mini, anthropic:claude-sonnet-4-6 or ollama:llama3`)
	_, err = Default(env(map[string]string{"AGNOGO_MODEL": "gemini:pro"}))
	require.EqualError(t, err, `AGNOGO_MODEL: unknown provider "gemini" in model "gemini:pro" (use openai, anthropic or ollama)`)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	path := filepath.Join(t.TempDir(), "os.yaml")
	require.NoError(t, os.WriteFile(path, []byte("name: Loaded\nagents:\n  - id: a\n    modle: x\n"), 0o600))
	_, err = Load(path)
	require.EqualError(t, err, path+`:4: unknown key "modle" in agent "a"; did you mean "model"?`)

	require.NoError(t, os.WriteFile(path, []byte("name: Loaded\n"), 0o600))
	file, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, "Loaded", file.Name)
	require.Equal(t, path, file.Source)
}

// TestDocumentedExamplesParse keeps the YAML of the documentation valid.
func TestDocumentedExamplesParse(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"../docs/config.md", "../docs/server.md", "../README.md"} {
		data, err := os.ReadFile(doc)
		require.NoError(t, err)
		blocks := 0
		for _, block := range strings.Split(string(data), "```yaml\n")[1:] {
			yaml, _, found := strings.Cut(block, "```")
			require.True(t, found, doc)
			_, err := parse([]byte(yaml), doc, env(nil))
			require.NoError(t, err, "%s:\n%s", doc, yaml)
			blocks++
		}
		require.NotZero(t, blocks, doc)
	}
}
