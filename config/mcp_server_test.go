package config_test

import (
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
