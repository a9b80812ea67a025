package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agnogo/agnogo/agent"
)

// The keys of an agent.
var (
	// agentKeys are the keys of every agent type; agentTypeKeys those of one.
	agentKeys     = []string{"id", "name", "type", "model", "instructions"}
	agentTypeKeys = map[string][]string{
		TypeNative: {"tools", "workspace", "session_state", "add_history_to_context", "num_history_runs", "session_cache_size", "retries", "delay_between_retries",
			"exponential_backoff", "tool_call_limit", "store_events", "output_schema", "offload_tool_results", "offload_threshold",
			"max_model_media_bytes", "update_memory_on_run", "enable_user_memories", "add_memories_to_context", "enable_agentic_memory",
			"memory_model", "mcp_servers", "code_mode", "approvals"},
		TypeClaude: {"description", "cwd", "claude_bin", "permission_mode", "tools", "allowed_tools", "disallowed_tools",
			"mcp_servers", "strict_mcp_config", "confirm_tools", "setting_sources", "max_turns", "max_budget_usd", "env", "config_dir",
			"project_key", "keep_uploads", "retries", "delay_between_retries", "exponential_backoff", "store_events",
			"output_schema"},
		TypeCodex: {"description", "cwd", "codex_bin", "sandbox", "approval_mode", "reasoning_effort", "base_instructions",
			"ephemeral", "config", "env", "codex_home", "keep_uploads", "retries", "delay_between_retries",
			"exponential_backoff", "store_events", "output_schema"},
	}
	workspaceKeys = []string{"root", "confirm_writes", "max_read_bytes", "max_shell_output_bytes", "shell_timeout_seconds"}
	// nativeUnsupportedKeys are options of Agno's Agent that agnogo agents
	// do not have, with why.
	nativeUnsupportedKeys = map[string]string{
		"reasoning":           reasoningUnsupported,
		"reasoning_model":     reasoningUnsupported,
		"reasoning_agent":     reasoningUnsupported,
		"reasoning_min_steps": reasoningUnsupported,
		"reasoning_max_steps": reasoningUnsupported,
		"reasoning_effort": "agnogo's openai and anthropic models send no reasoning effort or thinking budget yet, so the " +
			"model's default applies (the reasoning a model does shows in reasoning_content)",
	}
	// managedKeys are options of the Claude and Codex SDKs that agnogo
	// sets itself on external agents, with what it does instead.
	managedKeys = map[string]string{
		"resume":                   "agnogo resumes the CLI session of each agnogo session itself",
		"session_id":               "agnogo resumes the CLI session of each agnogo session itself",
		"continue":                 "agnogo resumes the CLI session of each agnogo session itself",
		"continue_conversation":    "agnogo resumes the CLI session of each agnogo session itself",
		"fork_session":             "agnogo forks CLI sessions itself when a run continues from an earlier point",
		"include_partial_messages": "agnogo asks for partial messages whenever a run streams",
	}
	// unsupportedKeys are claude agent options agnogo does not pass on yet.
	unsupportedKeys = []string{"skills", "plugins"}
	// managedEnv are the environment variables each external driver sets,
	// with the key to use instead ("" when there is none).
	managedEnv = map[string]map[string]string{
		TypeClaude: {"CLAUDE_CODE_ENTRYPOINT": "", "CLAUDE_CONFIG_DIR": "config_dir"},
		TypeCodex:  {"CODEX_HOME": "codex_home"},
	}
)

// The values external agents' keys accept.
var (
	// claudePermissionModes are the claude CLI's --permission-mode values.
	claudePermissionModes = []string{"default", "acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan"}
	// claudeSettingSources are the claude CLI's --setting-sources values.
	claudeSettingSources = []string{"user", "project", "local"}
	// codexSandboxes maps each accepted spelling to codex's own.
	codexSandboxes = map[string]string{
		"read-only": "read-only", "read_only": "read-only", "readonly": "read-only",
		"workspace-write": "workspace-write", "workspace_write": "workspace-write",
		"danger-full-access": "danger-full-access", "danger_full_access": "danger-full-access",
		"full-access": "danger-full-access", "full_access": "danger-full-access",
	}
	codexApprovalModes    = []string{"auto_review", "deny_all", "ask"}
	codexReasoningEfforts = []string{"minimal", "low", "medium", "high", "xhigh"}
	// envNamePattern is what an environment variable's name may be.
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// reasoningUnsupported says why Agno's reasoning options are refused.
const reasoningUnsupported = "agnogo agents have no separate reasoning step (Agno's chain-of-thought agent); a reasoning " +
	"model (gpt-5, o-series, Claude) reasons on its own, and what it shows is on the run as reasoning_content"

// maxBudgetUSD bounds max_budget_usd, to catch a misplaced digit.
const maxBudgetUSD = 1_000_000

// The defaults of agents, as agent.Config and external.Config apply them.
const (
	defaultNumHistoryRuns      = 3
	defaultDelayBetweenRetries = time.Second
)

// decodeAgents reads the agents list.
func (d *decoder) decodeAgents(node *yaml.Node) []*Agent {
	return decodeList(d, node, "agents", "an agent needs at least an id", d.decodeAgent)
}

// decodeAgent reads one agent. Its id and type are read first, so that every
// other problem can name the agent and tell a key of another agent type from
// an unknown one.
func (d *decoder) decodeAgent(node *yaml.Node, index int) *Agent {
	a := &Agent{Type: TypeNative, Line: deref(node).Line}
	fields := d.fields(node, fmt.Sprintf("agents[%d]", index))
	what := fmt.Sprintf("agents[%d]", index)
	a.ID, what = d.entryID(node, fields, what, "agent")
	for _, f := range fields {
		if f.name() == "type" {
			a.Type = d.oneOf(f.value, label("type", what), true, TypeNative, TypeClaude, TypeCodex)
			if a.Type == "" {
				a.Type = TypeNative
			}
		}
	}
	var outputSchema, workspaceNode, thresholdNode, memoryModelNode, updateMemoryNode *yaml.Node
	addMemoriesSet := false
	for _, f := range fields {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "id", "type":
			continue
		case "name":
			a.Name = d.str(f.value, keyWhat)
			continue
		case "model":
			a.Model = d.str(f.value, keyWhat)
			a.modelLine = f.value.Line
			continue
		case "instructions":
			a.Instructions = d.str(f.value, keyWhat)
			continue
		}
		if why, managed := managedKeys[f.name()]; managed && a.External() {
			d.errorf(f.key, "key %q %s is managed by agnogo and cannot be set: %s", f.name(), where(what), why)
			continue
		}
		if why, unsupported := nativeUnsupportedKeys[f.name()]; unsupported && a.Type == TypeNative {
			d.errorf(f.key, "key %q %s is not supported for agnogo agents: %s", f.name(), where(what), why)
			continue
		}
		if slices.Contains(unsupportedKeys, f.name()) && a.Type == TypeClaude {
			d.errorf(f.key, "key %q %s is not supported yet for claude agents; remove it", f.name(), where(what))
			continue
		}
		if !slices.Contains(agentTypeKeys[a.Type], f.name()) {
			if others := typesOfKey(f.name()); len(others) > 0 {
				d.errorf(f.key, "key %q %s is for %s only; this is %s", f.name(), where(what), describeTypes(others), describeType(a.Type))
			} else {
				d.unknownKey(f, what, append(append([]string(nil), agentKeys...), agentTypeKeys[a.Type]...))
			}
			continue
		}
		switch f.name() {
		case "tools":
			if a.Type == TypeClaude {
				a.ClaudeTools = d.claudeTools(f.value, keyWhat)
				continue
			}
			a.Tools, a.ToolkitSettings, a.ToolOptions = d.nativeTools(f.value, keyWhat, what)
		case "workspace":
			workspaceNode = f.value
			a.Workspace = d.decodeWorkspace(f.value, what)
		case "add_history_to_context":
			a.AddHistoryToContext = d.boolean(f.value, keyWhat)
		case "num_history_runs":
			a.NumHistoryRuns = d.integer(f.value, keyWhat, 1)
		case "session_cache_size":
			// 0 keeps none; agent.Config reads 0 as its default.
			if a.SessionCacheSize = d.integer(f.value, keyWhat, 0); a.SessionCacheSize == 0 {
				a.SessionCacheSize = -1
			}
		case "retries":
			a.Retries = d.integer(f.value, keyWhat, 0)
		case "delay_between_retries":
			// 0 would mean the default to agent.Config, not "no delay".
			seconds := d.number(f.value, keyWhat, 0.001, 24*60*60)
			a.DelayBetweenRetries = time.Duration(seconds * float64(time.Second))
		case "exponential_backoff":
			a.ExponentialBackoff = d.boolean(f.value, keyWhat)
		case "tool_call_limit":
			a.ToolCallLimit = d.integer(f.value, keyWhat, 0)
		case "store_events":
			a.StoreEvents = d.boolean(f.value, keyWhat)
		case "output_schema":
			outputSchema = f.value
		case "session_state":
			a.SessionState = d.jsonObject(f.value, keyWhat, "a mapping, such as {cart: [], currency: EUR}")
		case "offload_tool_results":
			a.OffloadToolResults = d.boolean(f.value, keyWhat)
		case "code_mode":
			a.CodeMode = d.codeMode(f.value, keyWhat)
		case "approvals":
			a.Approvals = d.decodeApprovals(f.value, what)
		case "offload_threshold":
			thresholdNode = f.value
			a.OffloadThreshold = d.integer(f.value, keyWhat, 1)
		case "max_model_media_bytes":
			a.MaxModelMediaBytes = d.byteSize(f.value, keyWhat)
			if a.MaxModelMediaBytes == 0 {
				a.MaxModelMediaBytes = -1 // 0 is no bound here, as for max_upload_bytes
			}
		case "update_memory_on_run", "enable_user_memories":
			if updateMemoryNode != nil {
				d.errorf(f.key, "update_memory_on_run and enable_user_memories (its alias) are both set %s; keep update_memory_on_run", where(what))
			}
			updateMemoryNode = f.key
			a.UpdateMemoryOnRun = d.boolean(f.value, keyWhat)
		case "add_memories_to_context":
			addMemoriesSet = true
			a.AddMemoriesToContext = d.boolean(f.value, keyWhat)
		case "enable_agentic_memory":
			a.EnableAgenticMemory = d.boolean(f.value, keyWhat)
		case "memory_model":
			memoryModelNode = f.value
			a.MemoryModel = d.str(f.value, keyWhat)
			a.memoryModelLine = f.value.Line
		case "description":
			a.Description = d.str(f.value, keyWhat)
		case "claude_bin", "codex_bin":
			a.Bin = d.str(f.value, keyWhat)
		case "cwd":
			a.Cwd = d.str(f.value, keyWhat)
		case "env":
			a.Env = d.env(f.value, keyWhat, a.Type)
		case "keep_uploads":
			a.KeepUploads = d.boolean(f.value, keyWhat)
		case "permission_mode":
			a.PermissionMode = d.oneOf(f.value, keyWhat, true, claudePermissionModes...)
		case "allowed_tools":
			a.AllowedTools = d.nonEmptyStrings(f.value, keyWhat)
		case "disallowed_tools":
			a.DisallowedTools = d.nonEmptyStrings(f.value, keyWhat)
		case "mcp_servers":
			if a.Type == TypeNative {
				a.MCP = d.nativeMCPServers(f.value, keyWhat)
				continue
			}
			a.MCPServers = d.mcpServers(f.value, keyWhat)
		case "strict_mcp_config":
			a.StrictMCPConfig = d.boolean(f.value, keyWhat)
		case "confirm_tools":
			a.ConfirmTools = d.boolean(f.value, keyWhat)
		case "setting_sources":
			a.SettingSources = d.settingSources(f.value, keyWhat)
		case "max_turns":
			a.MaxTurns = d.integer(f.value, keyWhat, 1)
		case "max_budget_usd":
			a.MaxBudgetUSD = d.number(f.value, keyWhat, 0, maxBudgetUSD)
		case "config_dir":
			a.ConfigDir = d.str(f.value, keyWhat)
		case "project_key":
			a.ProjectKey = d.str(f.value, keyWhat)
		case "sandbox":
			spelling := d.str(f.value, keyWhat)
			if sandbox, ok := codexSandboxes[spelling]; ok {
				a.Sandbox = sandbox
			} else if spelling != "" {
				d.errorf(f.value, "%s: %q is not one of read-only, workspace-write, danger-full-access", keyWhat, spelling)
			}
		case "approval_mode":
			a.ApprovalMode = d.oneOf(f.value, keyWhat, true, codexApprovalModes...)
		case "reasoning_effort":
			a.ReasoningEffort = d.oneOf(f.value, keyWhat, true, codexReasoningEfforts...)
		case "base_instructions":
			a.BaseInstructions = d.str(f.value, keyWhat)
		case "ephemeral":
			a.Ephemeral = d.boolean(f.value, keyWhat)
		case "config":
			a.CodexConfig = d.jsonObject(f.value, keyWhat, "a mapping of Codex config.toml keys, such as {model_verbosity: low}")
		case "codex_home":
			a.CodexHome = d.str(f.value, keyWhat)
		}
	}
	if a.Name == "" {
		a.Name = a.ID
	}
	if a.NumHistoryRuns == 0 && a.Type == TypeNative {
		a.NumHistoryRuns = defaultNumHistoryRuns
	}
	if a.DelayBetweenRetries == 0 {
		a.DelayBetweenRetries = defaultDelayBetweenRetries
	}
	if outputSchema != nil {
		a.OutputSchema = d.decodeOutputSchema(outputSchema, label("output_schema", what))
	}
	if a.Type == TypeNative {
		d.checkNative(a, what, thresholdNode, memoryModelNode, addMemoriesSet)
	}
	if slices.Contains(a.Tools, ToolWorkspace) && a.Workspace == nil {
		a.Workspace = &Workspace{Root: ".", ConfirmWrites: true}
	}
	if workspaceNode != nil && !slices.Contains(a.Tools, ToolWorkspace) {
		d.errorf(workspaceNode, "workspace %s is set but tools does not list workspace; add tools: [workspace]", where(what))
	}
	return a
}

// checkNative fills in the defaults of an agnogo agent's keys that depend
// on others, and reports keys set to no effect.
func (d *decoder) checkNative(a *Agent, what string, thresholdNode, memoryModelNode *yaml.Node, addMemoriesSet bool) {
	if a.OffloadThreshold == 0 {
		a.OffloadThreshold = agent.DefaultOffloadThreshold
	}
	if thresholdNode != nil && !a.OffloadToolResults {
		d.errorf(thresholdNode, "offload_threshold %s has no effect without offload_tool_results: true", where(what))
	}
	if a.MaxModelMediaBytes == 0 {
		a.MaxModelMediaBytes = agent.DefaultMaxModelMediaBytes
	}
	if !addMemoriesSet {
		// Agno's default: the memories an agent keeps are the ones it reads.
		a.AddMemoriesToContext = a.UpdateMemoryOnRun || a.EnableAgenticMemory
	}
	if memoryModelNode != nil && !a.UpdateMemoryOnRun {
		d.errorf(memoryModelNode, "memory_model %s is the model update_memory_on_run asks for memories; set update_memory_on_run: true or remove it",
			where(what))
	}
	d.checkToolOptions(a, what)
	if a.CodeMode != nil && len(a.Tools) == 0 && len(a.ToolOptions) == 0 && len(a.MCP) == 0 {
		d.errorAt(a.CodeMode.Line, "code_mode %s gives the model run_code to call the agent's tools, but it has none: add tools or mcp_servers, or remove code_mode",
			where(what))
	}
}

func (d *decoder) decodeWorkspace(node *yaml.Node, agentWhat string) *Workspace {
	workspace := &Workspace{Root: ".", ConfirmWrites: true, Line: deref(node).Line}
	what := "workspace of " + agentWhat
	for _, f := range d.fields(node, what) {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "root":
			if root := d.str(f.value, keyWhat); root != "" {
				workspace.Root = root
			}
		case "confirm_writes":
			workspace.ConfirmWrites = d.boolean(f.value, keyWhat)
		case "max_read_bytes":
			workspace.MaxReadBytes = int(d.byteSize(f.value, keyWhat))
		case "max_shell_output_bytes":
			workspace.MaxShellOutputBytes = int(d.byteSize(f.value, keyWhat))
		case "shell_timeout_seconds":
			seconds := d.number(f.value, keyWhat, 0.001, 24*60*60)
			workspace.ShellTimeout = time.Duration(seconds * float64(time.Second))
		default:
			d.unknownKey(f, what, workspaceKeys)
		}
	}
	return workspace
}

// schemaNamePattern is what providers accept as a schema name.
var schemaNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// decodeOutputSchema reads a JSON Schema written as YAML (or as a JSON
// string) and checks it. The answer's content_type is the schema's title
// when that is a valid name, else "output".
func (d *decoder) decodeOutputSchema(node *yaml.Node, what string) *agent.OutputSchema {
	node = deref(node)
	var raw []byte
	switch {
	case node.Kind == yaml.MappingNode:
		value := d.jsonValue(node, what)
		encoded, err := json.Marshal(value)
		if err != nil {
			d.errorf(node, "%s: %v", what, err)
			return nil
		}
		raw = encoded
	case node.Kind == yaml.ScalarNode && json.Valid([]byte(node.Value)):
		raw = []byte(node.Value)
	default:
		d.errorf(node, "%s: want a JSON Schema as a mapping, such as {type: object, properties: {answer: {type: string}}}, got %s", what, kindName(node))
		return nil
	}
	var header struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(raw, &header)
	name := "output"
	if schemaNamePattern.MatchString(header.Title) {
		name = header.Title
	}
	schema, err := agent.JSONSchema(name, raw)
	if err != nil {
		d.errorf(node, "%s: %v", what, err)
		return nil
	}
	return schema
}

// typesOfKey returns the agent types a type-specific key belongs to.
func typesOfKey(key string) []string {
	var types []string
	for _, agentType := range []string{TypeNative, TypeClaude, TypeCodex} {
		if slices.Contains(agentTypeKeys[agentType], key) {
			types = append(types, agentType)
		}
	}
	return types
}

// describeType names an agent type in messages.
func describeType(agentType string) string {
	switch agentType {
	case TypeClaude:
		return "a claude agent"
	case TypeCodex:
		return "a codex agent"
	}
	return "an agnogo agent (no type key)"
}

// describeTypes names agent types in messages: "claude and codex agents".
func describeTypes(types []string) string {
	names := make([]string, len(types))
	for i, agentType := range types {
		names[i] = agentType
		if agentType == TypeNative {
			names[i] = "agnogo"
		}
	}
	return strings.Join(names, " and ") + " agents"
}
