package config

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/team"
)

// Where each field of agent.Config is set in agnogo.yaml. A key is written
// scope:key, the scope being agent (a key of an agnogo agent), file (a
// top-level key) or model (a key of an entry of models). A field may take
// several keys: an alias, or a key whose settings feed it.
var agentConfigKeys = map[string][]string{
	"ID":                   {"agent:id"},
	"Name":                 {"agent:name"},
	"Model":                {"agent:model"},
	"Instructions":         {"agent:instructions"},
	"Tools":                {"agent:tools", "agent:workspace", "agent:mcp_servers", "agent:code_mode"},
	"SessionState":         {"agent:session_state"},
	"AddHistoryToContext":  {"agent:add_history_to_context"},
	"NumHistoryRuns":       {"agent:num_history_runs"},
	"SessionCacheSize":     {"agent:session_cache_size"},
	"OutputSchema":         {"agent:output_schema"},
	"Retries":              {"agent:retries"},
	"DelayBetweenRetries":  {"agent:delay_between_retries"},
	"ExponentialBackoff":   {"agent:exponential_backoff"},
	"ToolCallLimit":        {"agent:tool_call_limit"},
	"StoreEvents":          {"agent:store_events"},
	"OffloadToolResults":   {"agent:offload_tool_results"},
	"OffloadThreshold":     {"agent:offload_threshold"},
	"MediaURLPolicy":       {"file:block_private_media_urls", "file:media_url_allow", "file:media_url_deny"},
	"Media":                {"file:media_storage"},
	"MaxModelMediaBytes":   {"agent:max_model_media_bytes"},
	"UpdateMemoryOnRun":    {"agent:update_memory_on_run", "agent:enable_user_memories"},
	"AddMemoriesToContext": {"agent:add_memories_to_context"},
	"MemoryModel":          {"agent:memory_model"},
	"EnableAgenticMemory":  {"agent:enable_agentic_memory"},
	"Prices":               {"model:prices"},
	"ApprovalExpiry":       {"agent:approvals"},
}

// The fields of agent.Config no key sets, and why.
var agentConfigWithoutKey = map[string]string{
	"Store":      "the server's database (the db key), one for every agent",
	"Kind":       "set by package team for a team's leader (the teams key builds those); an agent of the file is always an agent",
	"Iterations": "set by package team for the leader of a team in mode tasks (the teams key builds those)",
	"Now":        "a test seam: the server runs on the real clock",
	"NewID":      "a test seam: the server uses random UUIDs",
	"Sleep":      "a test seam: the server waits on real timers between retries",
	"Logger":     "the server's own logger (agnogo serve --log-format), given through config.BuildOptions",
}

// TestParityAgentConfigFieldsHaveKeys fails when agent.Config has a field
// that neither has a key in agnogo.yaml nor is listed, with a reason, as
// set by the server; and when either list names a field or key that does
// not exist.
func TestParityAgentConfigFieldsHaveKeys(t *testing.T) {
	t.Parallel()
	nativeKeys := append(slices.Clone(agentKeys), agentTypeKeys[TypeNative]...)
	mapped := checkFieldsHaveKeys(t, reflect.TypeFor[agent.Config](), "agent", "config/decode_agent.go", agentConfigKeys, agentConfigWithoutKey,
		map[string][]string{"agent": nativeKeys, "file": fileKeys, "model": modelKeys})
	// And every key of an agnogo agent sets some field of agent.Config.
	for _, key := range nativeKeys {
		if key == "type" {
			continue // picks the kind of agent, not a setting of one
		}
		require.True(t, mapped["agent:"+key], "the agent key %q reaches no field of agent.Config in agentConfigKeys", key)
	}
}

// checkFieldsHaveKeys checks the fields of a config struct (agent.Config,
// team.Config) against their keys: each field is mapped to keys or listed,
// with a reason, as set by the server (never both); both lists name
// existing fields; every mapped scope:key is one the decoder accepts in
// that scope. It returns the mapped scope:keys.
func checkFieldsHaveKeys(t *testing.T, configType reflect.Type, scope, decoder string, configKeys map[string][]string,
	withoutKey map[string]string, accepted map[string][]string) map[string]bool {
	t.Helper()
	name := configType.String()
	fields := map[string]bool{}
	for field := range configType.Fields() {
		if !field.IsExported() {
			continue
		}
		fields[field.Name] = true
		keys, hasKey := configKeys[field.Name]
		reason, serverSet := withoutKey[field.Name]
		switch {
		case hasKey && serverSet:
			t.Errorf("%s.%s is both mapped to %v and listed as set by the server; keep one", name, field.Name, keys)
		case !hasKey && !serverSet:
			t.Errorf("%s.%s has no key in agnogo.yaml: add one (%s, docs/config.md) and map it in %sConfigKeys, "+
				"or list it in %sConfigWithoutKey with the reason a server user needs none", name, field.Name, decoder, scope, scope)
		case serverSet && strings.TrimSpace(reason) == "":
			t.Errorf("%s.%s is listed in %sConfigWithoutKey without a reason", name, field.Name, scope)
		}
	}
	for field := range configKeys {
		require.True(t, fields[field], "%sConfigKeys maps %s, which %s does not have", scope, field, name)
	}
	for field := range withoutKey {
		require.True(t, fields[field], "%sConfigWithoutKey lists %s, which %s does not have", scope, field, name)
	}
	mapped := map[string]bool{}
	for field, keys := range configKeys {
		for _, scoped := range keys {
			keyScope, key, ok := strings.Cut(scoped, ":")
			require.True(t, ok, "%s.%s: %q is not scope:key", name, field, scoped)
			require.Contains(t, accepted, keyScope, "%s.%s: unknown scope in %q", name, field, scoped)
			require.Contains(t, accepted[keyScope], key, "%s.%s is mapped to %q, which the decoder does not accept", name, field, scoped)
			mapped[scoped] = true
		}
	}
	return mapped
}

// TestParityAgentKeysReachAgentConfig builds the agent.Config of an agent
// with every mapped key set and of one with none, and requires every
// mapped field to differ: each key reaches its field.
func TestParityAgentKeysReachAgentConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := mustParse(t, fmt.Sprintf(`
block_private_media_urls: true
media_storage: %s
models:
  priced: {provider: openai, id: gpt-parity, base_url: http://127.0.0.1:1/v1, api_key: k, prices: {input: 1, output: 2}}
  memory: {provider: openai, id: gpt-memory, base_url: http://127.0.0.1:1/v1, api_key: k}
agents:
  - id: full
    name: Full
    model: priced
    instructions: Be brief.
    tools: [workspace, {name: ask_city, requires_user_input: true, parameters: {type: object, properties: {city: {type: string}}}}]
    workspace: {root: %s}
    session_state: {cart: []}
    add_history_to_context: true
    num_history_runs: 7
    session_cache_size: 64
    output_schema: {type: object, properties: {answer: {type: string}}}
    retries: 2
    delay_between_retries: 0.5
    exponential_backoff: true
    tool_call_limit: 9
    store_events: true
    offload_tool_results: true
    offload_threshold: 20000
    max_model_media_bytes: 1MiB
    update_memory_on_run: true
    add_memories_to_context: true
    memory_model: memory
    enable_agentic_memory: true
    approvals: {tools: [ask_city], expires_after_seconds: 3600}
`, filepath.Join(dir, "media"), dir), nil)
	minimal := mustParse(t, "agents:\n  - id: minimal\n    model: openai:gpt-minimal\n", nil)

	fullConfig := parityConfig(t, full)
	minimalConfig := parityConfig(t, minimal)
	fullValue, minimalValue := reflect.ValueOf(fullConfig), reflect.ValueOf(minimalConfig)
	for field := range agentConfigKeys {
		require.False(t, reflect.DeepEqual(fullValue.FieldByName(field).Interface(), minimalValue.FieldByName(field).Interface()),
			"agent.Config.%s is the same with its keys %v set as without: the key does not reach the field", field, agentConfigKeys[field])
	}
	require.Equal(t, agent.Price{Input: 1, Output: 2, CacheRead: 1, CacheWrite: 1, CachedInInput: true}, fullConfig.Prices["gpt-parity"])
	require.Nil(t, minimalConfig.Prices, "without prices, the built-in table")
	_, err := agent.New(fullConfig)
	require.NoError(t, err, "the config built is valid")
}

// parityConfig builds the agent.Config of the file's only agent, without
// opening its database.
func parityConfig(t *testing.T, f *File) agent.Config {
	t.Helper()
	require.Len(t, f.Agents, 1)
	a := f.Agents[0]
	opts := BuildOptions{Getenv: env(nil)}
	build := func(configured *Model) model.Model {
		if configured == nil {
			return nil
		}
		m, _, err := buildModel(configured, opts)
		require.NoError(t, err)
		return m
	}
	mediaStore, _, _, err := f.openMedia(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "agnogo.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mediaStore.Close() })
	cfg, err := f.agentConfig(a, build(a.ResolvedModel), build(a.ResolvedMemoryModel), nil, mediaStore, opts)
	require.NoError(t, err)
	// The Store is the server's; the agent needs one for memories and
	// offloading.
	cfg.Store = openParityStore(t)
	return cfg
}

// TestParityUnsupportedAgnoKeysSayWhy checks that each option of Agno's
// Agent that agnogo agents lack is refused with its reason, not taken for
// a typo or another agent type's key.
func TestParityUnsupportedAgnoKeysSayWhy(t *testing.T) {
	t.Parallel()
	for key, why := range nativeUnsupportedKeys {
		_, err := parse([]byte(fmt.Sprintf("agents:\n  - id: a\n    %s: true\n", key)), "agnogo.yaml", env(nil))
		require.Error(t, err, key)
		require.Contains(t, err.Error(), fmt.Sprintf(`agnogo.yaml:3: key %q in agent "a" is not supported for agnogo agents: %s`, key, why))
	}
}

// openParityStore opens a SQLite database for one test.
func openParityStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "parity.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// TestParityKeysAreDocumented fails when a key of an agnogo agent, of its
// workspace, of a tool entry or of a model has no row in docs/config.md.
func TestParityKeysAreDocumented(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/config.md")
	require.NoError(t, err)
	doc := string(data)
	row := func(key string) string { return "| `" + key + "` |" }
	keys := append(slices.Clone(agentKeys), agentTypeKeys[TypeNative]...)
	keys = append(keys, toolOptionKeys...)
	keys = append(keys, modelKeys...)
	for _, key := range keys {
		if key == "enable_user_memories" {
			require.Contains(t, doc, "`enable_user_memories`", "the alias is documented with update_memory_on_run")
			continue
		}
		require.Contains(t, doc, row(key), "docs/config.md has no row for the key %q", key)
	}
	for _, key := range workspaceKeys {
		require.Contains(t, doc, row("workspace."+key), "docs/config.md has no row for workspace.%s", key)
	}
	for _, key := range priceKeys {
		require.Contains(t, doc, "`"+key+"`", "docs/config.md does not name the price %q", key)
	}
	for key := range nativeUnsupportedKeys {
		require.Contains(t, doc, "`"+key+"`", "docs/config.md does not say %q is not supported", key)
	}
	for id := range agent.DefaultPrices() {
		require.Contains(t, doc, "`"+id+"`", "docs/config.md's price table lacks %s", id)
	}
}

// Where each field of team.Config is set in agnogo.yaml, as agentConfigKeys
// does for agent.Config; the scope team is a key of an entry of teams.
var teamConfigKeys = map[string][]string{
	"ID":                       {"team:id"},
	"Name":                     {"team:name"},
	"Description":              {"team:description"},
	"Role":                     {"team:role"},
	"Model":                    {"team:model"},
	"Instructions":             {"team:instructions"},
	"Members":                  {"team:members"},
	"Mode":                     {"team:mode"},
	"RespondDirectly":          {"team:respond_directly", "team:mode"},
	"DelegateToAllMembers":     {"team:delegate_to_all_members", "team:mode"},
	"DetermineInputForMembers": {"team:determine_input_for_members"},
	"MaxIterations":            {"team:max_iterations"},
	"StreamMemberEvents":       {"team:stream_member_events"},
	"StoreMemberResponses":     {"team:store_member_responses"},
	"MaxParallelMembers":       {"team:max_parallel_members"},
	"AddHistoryToContext":      {"team:add_history_to_context"},
	"NumHistoryRuns":           {"team:num_history_runs"},
	"Tools":                    {"team:tools", "team:workspace"},
	"ToolCallLimit":            {"team:tool_call_limit"},
	"SessionState":             {"team:session_state"},
	"MediaURLPolicy":           {"file:block_private_media_urls", "file:media_url_allow", "file:media_url_deny"},
	"Media":                    {"file:media_storage"},
	"MaxModelMediaBytes":       {"team:max_model_media_bytes"},
	"OutputSchema":             {"team:output_schema"},
	"StoreEvents":              {"team:store_events"},
	"Retries":                  {"team:retries"},
	"DelayBetweenRetries":      {"team:delay_between_retries"},
	"ExponentialBackoff":       {"team:exponential_backoff"},
	"Prices":                   {"model:prices"},
}

// The fields of team.Config no key sets, and why.
var teamConfigWithoutKey = map[string]string{
	"Store":  "the server's database (the db key), the agents' own, so member runs are kept beside the team's",
	"Now":    "a test seam: the server runs on the real clock",
	"NewID":  "a test seam: the server uses random UUIDs",
	"Logger": "the server's own logger (agnogo serve --log-format), given through config.BuildOptions",
}

// TestParityTeamConfigFieldsHaveKeys fails when team.Config has a field
// that neither has a key of a team in agnogo.yaml nor is listed, with a
// reason, as set by the server; when either list names a field or key
// that does not exist; and when a key of a team reaches no field.
func TestParityTeamConfigFieldsHaveKeys(t *testing.T) {
	t.Parallel()
	mapped := checkFieldsHaveKeys(t, reflect.TypeFor[team.Config](), "team", "config/decode_team.go", teamConfigKeys, teamConfigWithoutKey,
		map[string][]string{"team": teamKeys, "file": fileKeys, "model": modelKeys})
	for _, key := range teamKeys {
		require.True(t, mapped["team:"+key], "the team key %q reaches no field of team.Config in teamConfigKeys", key)
	}
}

// TestParityTeamKeysReachTeamConfig builds the team.Config of teams with
// every mapped key set (one per mode, as some keys belong to one mode) and
// of one with none, and requires every mapped field to differ from the
// minimal team's in at least one of them: each key reaches its field.
func TestParityTeamKeysReachTeamConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := mustParse(t, fmt.Sprintf(`
block_private_media_urls: true
media_storage: %s
models:
  priced: {provider: openai, id: gpt-parity, base_url: http://127.0.0.1:1/v1, api_key: k, prices: {input: 1, output: 2}}
agents:
  - {id: writer, model: priced}
  - {id: checker, model: priced}
teams:
  - id: minimal
    model: openai:gpt-minimal
    members: [writer]
  - &full
    id: routed
    name: Routed
    description: Routes.
    role: Router
    model: priced
    instructions: Pick one.
    members: [writer, checker]
    mode: route
    respond_directly: true
    determine_input_for_members: false
    stream_member_events: false
    store_member_responses: true
    add_history_to_context: true
    num_history_runs: 7
    tools: [workspace, {name: ask_city, requires_user_input: true, parameters: {type: object, properties: {city: {type: string}}}}]
    workspace: {root: %s}
    tool_call_limit: 9
    session_state: {cart: []}
    max_model_media_bytes: 1MiB
    output_schema: {type: object, properties: {answer: {type: string}}}
    store_events: true
    retries: 2
    delay_between_retries: 0.5
    exponential_backoff: true
  - <<: *full
    id: broadcast
    mode: broadcast
    respond_directly: false
    delegate_to_all_members: true
    max_parallel_members: 3
  - <<: *full
    id: planned
    mode: tasks
    respond_directly: false
    max_iterations: 4
`, filepath.Join(dir, "media"), dir), nil)
	configs := map[string]team.Config{}
	for _, tm := range full.Teams {
		configs[tm.ID] = teamParityConfig(t, full, tm)
	}
	// The baseline is a minimal team of a file without the top-level keys,
	// so those keys count too.
	bare := mustParse(t, `
agents:
  - {id: writer, model: openai:gpt-minimal}
teams:
  - id: minimal
    model: openai:gpt-minimal
    members: [writer]
`, nil)
	minimal := reflect.ValueOf(teamParityConfig(t, bare, bare.Teams[0]))
	for field := range teamConfigKeys {
		differs := false
		for _, id := range []string{"routed", "broadcast", "planned"} {
			if !reflect.DeepEqual(reflect.ValueOf(configs[id]).FieldByName(field).Interface(), minimal.FieldByName(field).Interface()) {
				differs = true
			}
		}
		require.True(t, differs, "team.Config.%s is the same with its keys %v set as without: the key does not reach the field", field, teamConfigKeys[field])
	}
	require.Equal(t, agent.Price{Input: 1, Output: 2, CacheRead: 1, CacheWrite: 1, CachedInInput: true}, configs["routed"].Prices["gpt-parity"])
	require.Nil(t, configs["minimal"].Prices, "without prices, the built-in table")
	for _, id := range []string{"minimal", "routed", "broadcast", "planned"} {
		_, err := team.New(configs[id])
		require.NoError(t, err, "the config built for %s is valid", id)
	}
}

// parityRunner is a member that is never run: teamParityConfig needs
// members, not agents.
type parityRunner struct{ id string }

func (r parityRunner) ID() string     { return r.id }
func (r parityRunner) Name() string   { return r.id }
func (r parityRunner) Kind() run.Kind { return run.KindAgent }
func (r parityRunner) Stream(context.Context, *run.Input) iter.Seq2[run.Event, error] {
	return func(func(run.Event, error) bool) {}
}

// teamParityConfig builds the team.Config of one team of f, without
// opening its database.
func teamParityConfig(t *testing.T, f *File, tm *Team) team.Config {
	t.Helper()
	m, _, err := buildModel(tm.ResolvedModel, BuildOptions{Getenv: env(nil)})
	require.NoError(t, err)
	members := make([]run.Runner, 0, len(tm.Members))
	for _, id := range tm.Members {
		members = append(members, parityRunner{id: id})
	}
	mediaStore, _, _, err := f.openMedia(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "agnogo.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mediaStore.Close() })
	cfg, err := f.teamConfig(tm, m, members, nil, mediaStore, BuildOptions{Getenv: env(nil)})
	require.NoError(t, err)
	return cfg
}
