package config

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/external/codex"
	"github.com/agnogo/agnogo/run"
)

// buildFile parses yaml, in which DB stands for a new database, and builds
// it; the returned error is Build's.
func buildFile(t *testing.T, yaml string, values map[string]string) (*OS, error) {
	t.Helper()
	values["DB"] = "sqlite://" + filepath.Join(t.TempDir(), "agnogo.db")
	file := mustParse(t, yaml, values)
	built, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	if err == nil {
		t.Cleanup(func() { require.NoError(t, built.Close()) })
	}
	return built, err
}

func TestBuildClaudeAgent(t *testing.T) {
	t.Parallel()
	cwd, configDir := t.TempDir(), t.TempDir()
	built, err := buildFile(t, `
db: ${DB}
agents:
  - id: coder
    type: claude
    name: Coder
    description: Edits the code.
    cwd: ${CWD}
    config_dir: ${CONFIG_DIR}
  - id: opus
    type: claude
    model: claude-opus-4-1
    cwd: ${CWD}
    config_dir: ${CONFIG_DIR}
`, map[string]string{"CWD": cwd, "CONFIG_DIR": configDir})
	require.NoError(t, err)
	require.Equal(t, []string{"coder", "opus"}, built.AgentIDs)
	require.Empty(t, built.Agents)

	runner, err := built.Runner("coder")
	require.NoError(t, err)
	coder, ok := runner.(*external.Agent)
	require.True(t, ok, "%T", runner)
	require.Same(t, built.External["coder"], coder)
	require.Equal(t, run.KindAgent, coder.Kind())
	require.Equal(t, "coder", coder.ID())
	require.Equal(t, "Coder", coder.Name())
	require.Equal(t, "Edits the code.", coder.Description())
	driver, ok := coder.Driver().(*claude.Driver)
	require.True(t, ok, "%T", coder.Driver())
	modelID, provider := driver.Model()
	require.Equal(t, claude.DefaultModel, modelID, "no model key: the driver's default")
	require.Equal(t, "claude-sonnet-4-6", modelID)
	require.Equal(t, claude.ProviderName, provider)
	require.Equal(t, cwd, driver.Cwd())

	modelID, _ = built.External["opus"].Driver().Model()
	require.Equal(t, "claude-opus-4-1", modelID)
}

func TestClaudeOptions(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
agents:
  - id: coder
    type: claude
    model: claude-opus-4-1
    instructions: Be brief.
    cwd: /srv/repo
    claude_bin: /opt/claude
    permission_mode: plan
    tools: [Bash, Read]
    allowed_tools: [Read]
    disallowed_tools: [Write]
    mcp_servers: {files: {command: files-server}}
    strict_mcp_config: true
    confirm_tools: true
    setting_sources: [project]
    max_turns: 3
    max_budget_usd: 0.5
    env: {EXTRA: "1"}
    config_dir: /etc/claude
  - id: plain
    type: claude
  - id: keyed
    type: claude
    project_key: shared
`, nil)
	built, err := buildFile(t, "db: ${DB}\n", map[string]string{})
	require.NoError(t, err)
	store := built.Store

	paths := externalPaths{bin: "/opt/claude", cwd: "/srv/repo", configDir: "/etc/claude"}
	require.Equal(t, claude.Options{
		Bin: "/opt/claude", Model: "claude-opus-4-1", SystemPrompt: "Be brief.", Cwd: "/srv/repo", PermissionMode: "plan",
		Tools: []string{"Bash", "Read"}, AllowedTools: []string{"Read"}, DisallowedTools: []string{"Write"},
		MCPServers: map[string]any{"files": map[string]any{"command": "files-server"}}, StrictMCPConfig: true, ConfirmTools: true,
		SettingSources: []string{"project"}, MaxTurns: 3, MaxBudgetUSD: 0.5, Env: map[string]string{"EXTRA": "1"},
		ConfigDir: "/etc/claude", ProjectKey: "coder", Transcripts: store,
	}, claudeOptions(file.Agents[0], paths, store))

	require.Equal(t, claude.Options{ProjectKey: "plain", Transcripts: store}, claudeOptions(file.Agents[1], externalPaths{}, store),
		"left out, everything is the driver's default; transcripts go to the database under the agent's id")
	require.Equal(t, "shared", claudeOptions(file.Agents[2], externalPaths{}, store).ProjectKey)
}

func TestBuildCodexAgent(t *testing.T) {
	t.Parallel()
	cwd, home := t.TempDir(), t.TempDir()
	built, err := buildFile(t, `
db: ${DB}
agents:
  - id: reviewer
    type: codex
    name: Reviewer
    description: Reviews changes.
    cwd: ${CWD}
    codex_home: ${HOME_DIR}
  - id: fast
    type: codex
    model: gpt-5.5
    cwd: ${CWD}
    codex_home: ${HOME_DIR}
`, map[string]string{"CWD": cwd, "HOME_DIR": home})
	require.NoError(t, err)
	require.Equal(t, []string{"reviewer", "fast"}, built.AgentIDs)

	runner, err := built.Runner("reviewer")
	require.NoError(t, err)
	reviewer := built.External["reviewer"]
	require.Same(t, reviewer, runner)
	require.Equal(t, run.KindAgent, reviewer.Kind())
	require.Equal(t, "reviewer", reviewer.ID())
	require.Equal(t, "Reviewer", reviewer.Name())
	require.Equal(t, "Reviews changes.", reviewer.Description())
	_, ok := reviewer.Driver().(*codex.Driver)
	require.True(t, ok, "%T", reviewer.Driver())
	modelID, _ := reviewer.Driver().Model()
	require.Equal(t, codex.DefaultModel, modelID, "no model key: the driver's default")
	require.Equal(t, "gpt-5.6-luna", modelID)

	modelID, _ = built.External["fast"].Driver().Model()
	require.Equal(t, "gpt-5.5", modelID)
}

func TestCodexOptions(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
agents:
  - id: reviewer
    type: codex
    model: gpt-5.5
    instructions: Review only.
    base_instructions: You are a reviewer.
    sandbox: full_access
    approval_mode: auto_review
    reasoning_effort: low
    ephemeral: true
    config: {model_verbosity: low}
    env: {EXTRA: "1"}
  - id: plain
    type: codex
`, nil)
	paths := externalPaths{bin: "/opt/codex", cwd: "/srv/repo", codexHome: "/var/lib/codex"}
	require.Equal(t, codex.Options{
		Bin: "/opt/codex", Model: "gpt-5.5", Instructions: "Review only.", BaseInstructions: "You are a reviewer.",
		Sandbox: "danger-full-access", ApprovalMode: "auto_review", ReasoningEffort: "low", Cwd: "/srv/repo", Ephemeral: true,
		Config: map[string]any{"model_verbosity": "low"}, Env: map[string]string{"EXTRA": "1"}, CodexHome: "/var/lib/codex",
	}, codexOptions(file.Agents[0], paths))
	require.Equal(t, codex.Options{}, codexOptions(file.Agents[1], externalPaths{}), "left out, everything is the driver's default")
}

func TestExternalPaths(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	require.NoError(t, err)
	paths, err := resolvePaths(&Agent{Type: TypeClaude, Cwd: ".", Bin: "./bin/claude", ConfigDir: "state/claude", CodexHome: "state/codex"})
	require.NoError(t, err)
	require.Equal(t, externalPaths{bin: filepath.Join(wd, "bin/claude"), cwd: wd, configDir: filepath.Join(wd, "state/claude"),
		codexHome: filepath.Join(wd, "state/codex")}, paths, "relative paths are relative to the directory agnogo runs in")

	paths, err = resolvePaths(&Agent{Type: TypeCodex, Bin: "codex-nightly"})
	require.NoError(t, err)
	require.Equal(t, externalPaths{bin: "codex-nightly"}, paths, "a bare name is looked up on PATH; nothing set stays the default")

	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	_, err = buildFile(t, "db: ${DB}\nagents:\n  - id: a\n    model: ollama:x\n  - id: c\n    type: claude\n    cwd: ${CWD}\n",
		map[string]string{"CWD": missing})
	var configErr *Error
	require.ErrorAs(t, err, &configErr)
	require.Equal(t, 5, configErr.Line)
	require.ErrorContains(t, err, `agnogo.yaml:5: agent "c": cwd: stat `+missing+": no such file or directory")

	notDir := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	_, err = buildFile(t, "db: ${DB}\nagents:\n  - id: c\n    type: claude\n    cwd: ${CWD}\n", map[string]string{"CWD": notDir})
	require.ErrorContains(t, err, `agnogo.yaml:3: agent "c": cwd: `+notDir+" is not a directory")
}

// TestClaudeAgentPassesOptionsToTheCLI runs a claude agent on a stand-in
// for the CLI that records its flags, directory and environment, then
// fails: every option of the file must reach the command line. It is not
// parallel, so that no other test forks while the script is written (which
// could make running it fail with "text file busy").
func TestClaudeAgentPassesOptionsToTheCLI(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record.txt")
	bin := filepath.Join(dir, "claude")
	script := "#!/bin/sh\n{ printf '%s\\n' \"$@\"; echo \"pwd=$(pwd)\"; echo \"config=$CLAUDE_CONFIG_DIR\"; echo \"extra=$EXTRA\"; } > " + record + "\nexit 3\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o700))
	cwd, configDir := t.TempDir(), t.TempDir()
	built, err := buildFile(t, `
db: ${DB}
agents:
  - id: coder
    type: claude
    claude_bin: ${BIN}
    cwd: ${CWD}
    config_dir: ${CONFIG_DIR}
    instructions: Be brief.
    permission_mode: acceptEdits
    tools: [Bash, Read]
    allowed_tools: ["Bash(git log:*)", Read]
    disallowed_tools: [Write]
    mcp_servers: {files: {command: files-server, args: [--root, /srv]}}
    strict_mcp_config: true
    setting_sources: [project, local]
    max_turns: 4
    max_budget_usd: 2.5
    env: {EXTRA: from-config}
    output_schema: {type: object, properties: {summary: {type: string}}}
`, map[string]string{"BIN": bin, "CWD": cwd, "CONFIG_DIR": configDir})
	require.NoError(t, err)
	coder := built.External["coder"]

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := coder.Run(ctx, &run.Input{InputContent: "hi"})
	require.Error(t, err, "the stand-in exits at once")
	require.Equal(t, run.StatusError, out.Status)

	data, err := os.ReadFile(record)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	mcp, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"files": map[string]any{"command": "files-server", "args": []any{"--root", "/srv"}}}})
	for _, want := range []string{
		"--model=" + claude.DefaultModel,
		"--system-prompt=Be brief.",
		"--permission-mode=acceptEdits",
		"--tools=Bash,Read",
		"--allowedTools=Bash(git log:*),Read",
		"--disallowedTools=Write",
		"--mcp-config=" + string(mcp),
		"--strict-mcp-config",
		"--setting-sources=project,local",
		"--max-turns=4",
		"--max-budget-usd=2.5",
		`--json-schema={"properties":{"summary":{"type":"string"}},"type":"object"}`,
		"pwd=" + cwd,
		"config=" + configDir,
		"extra=from-config",
	} {
		require.Contains(t, lines, want, fmt.Sprintf("recorded:\n%s", data))
	}
	for _, line := range lines {
		require.NotContains(t, line, "--resume", "a first run resumes nothing")
	}
}
