// Package testcli gives tests the real coding-agent CLIs and the
// environment that keeps them offline, against the in-repo fake model APIs.
//
// The binaries come from AGNOGO_CLAUDE_BIN and AGNOGO_CODEX_BIN (.ci/run
// installs the pinned versions and sets both). Without them a test skips
// with a loud message, or fails when CI=true.
package testcli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ClaudeBin returns the Claude Code binary (@anthropic-ai/claude-code
// 2.1.332).
func ClaudeBin(t testing.TB) string {
	t.Helper()
	return binary(t, "AGNOGO_CLAUDE_BIN", "@anthropic-ai/claude-code-linux-x64@2.1.332")
}

// CodexBin returns the Codex binary (@openai/codex 0.171.0).
func CodexBin(t testing.TB) string {
	t.Helper()
	return binary(t, "AGNOGO_CODEX_BIN", "@openai/codex 0.171.0-linux-x64")
}

// binary reads the variable, skipping or failing without it.
func binary(t testing.TB, variable, pkg string) string {
	t.Helper()
	bin := os.Getenv(variable)
	switch {
	case bin == "" && os.Getenv("CI") == "true":
		t.Fatalf("%s is not set; .ci/run installs %s and sets it", variable, pkg)
	case bin == "":
		t.Skipf("SKIPPED: %s is not set; install %s and point it at the binary", variable, pkg)
	}
	return bin
}

// ClaudeEnv is the environment of a Claude Code CLI that talks only to the
// fake Messages API at apiURL, keeps its configuration and transcripts in
// configDir, and may bypass permissions as root.
func ClaudeEnv(apiURL, configDir string) []string {
	env := os.Environ()
	for key, value := range ClaudeVars(apiURL, configDir) {
		env = append(env, key+"="+value)
	}
	return env
}

// ClaudeVars are the variables [ClaudeEnv] adds to this process's
// environment, for a driver that takes them as a map.
func ClaudeVars(apiURL, configDir string) map[string]string {
	return map[string]string{"ANTHROPIC_BASE_URL": apiURL, "ANTHROPIC_API_KEY": "dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
		"DISABLE_AUTOUPDATER": "1", "CLAUDE_CONFIG_DIR": configDir, "IS_SANDBOX": "1"}
}

// CodexEnv writes a CODEX_HOME whose model provider is the fake Responses
// API at apiURL (ending in /v1), with analytics and plugins off, and
// returns the environment of a Codex CLI that uses it.
func CodexEnv(t testing.TB, apiURL string) []string {
	t.Helper()
	env := os.Environ()
	for key, value := range CodexVars(t, apiURL) {
		env = append(env, key+"="+value)
	}
	return env
}

// CodexVars writes the CODEX_HOME of [CodexEnv] and returns the variables
// it adds to this process's environment, for a driver that takes them as
// a map.
func CodexVars(t testing.TB, apiURL string) map[string]string {
	t.Helper()
	home := t.TempDir()
	config := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "%s"
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
[features]
plugins = false
`, apiURL)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"CODEX_HOME": home, "FAKE_OPENAI_KEY": "dummy"}
}
