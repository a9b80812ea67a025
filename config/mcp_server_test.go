package config_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/config"
)

func TestMCPServerKeyReachesTheServer(t *testing.T) {
	file, err := config.Parse([]byte(`mcp_server: {enabled: true, exclude_tags: [session], result_mode: full, allowed_origins: ["https://app.example"]}
`), "agnogo.yaml")
	require.NoError(t, err)
	os := &config.OS{File: file}
	cfg := os.Server(config.ServerOptions{}).MCPServer
	require.NotNil(t, cfg)
	require.True(t, cfg.Enabled)
	require.Equal(t, []string{"session"}, cfg.ExcludeTags)
	require.Equal(t, "full", cfg.ResultMode)
	require.Equal(t, []string{"https://app.example"}, cfg.AllowedOrigins)

	_, err = config.Parse([]byte("mcp_server:\n  enabled: true\n  include_tags: [core, memory]\n  mode: x\n"), "agnogo.yaml")
	require.ErrorContains(t, err, `agnogo.yaml:3: include_tags in mcp_server: tag "memory" is not one of core, session`)
	require.ErrorContains(t, err, `agnogo.yaml:4: unknown key "mode" in mcp_server`)
}

// TestMCPServerToolkits: toolkits listed under mcp_server are built and
// served as its custom tools.
func TestMCPServerToolkits(t *testing.T) {
	file, err := config.Parse([]byte(fmt.Sprintf("db: sqlite://%s\nmcp_server:\n  enabled: true\n  tools: [calculator: {include_tools: [add]}, time]\n",
		filepath.Join(t.TempDir(), "os.db"))), "agnogo.yaml")
	require.NoError(t, err)
	built, err := file.Build(t.Context(), config.BuildOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = built.Close() })
	var names []string
	for _, served := range built.Server(config.ServerOptions{}).MCPServer.Tools {
		names = append(names, served.Spec().Name)
	}
	require.Equal(t, []string{"add", "get_current_time", "convert_time"}, names)

	_, err = config.Parse([]byte("mcp_server:\n  enabled: true\n  tools: [workspace, {name: x, external_execution: true}]\n"), "agnogo.yaml")
	require.ErrorContains(t, err, `agnogo.yaml:3: tools in mcp_server: list toolkits, with their settings`)
	require.ErrorContains(t, err, `tools in mcp_server: workspace needs a person or a workspace of an agent's run`)
}
