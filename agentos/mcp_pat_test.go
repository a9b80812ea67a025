package agentos_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/tool"
)

// TestMCPServerCustomToolsServiceAccountOpenServer: on a server without
// authentication, a custom tool called with a service account's token runs
// only when the account holds mcp_tools:<name>:run, and knows the account
// as its caller; a caller without a token is still an admin.
func TestMCPServerCustomToolsServiceAccountOpenServer(t *testing.T) {
	type greetArgs struct {
		Name string `json:"name"`
	}
	greet := tool.MustNew(tool.Config{Name: "greet", Description: "Greet someone."}, func(ctx context.Context, a greetArgs) (string, error) {
		caller, _ := agentos.CallerFromContext(ctx)
		return "hello " + a.Name + " from " + caller.Subject, nil
	})
	s := newServer(t, nil, withMCP(func(_ *agent.Config, c *agentos.Config) {
		c.MCPServer.Tools = []tool.Tool{greet}
	}))
	granted := seedAccount(t, s.store, "greeter", "mcp_tools:greet:run")
	other := seedAccount(t, s.store, "other", "mcp_tools:deploy:run", "agents:run")

	res := callTool(t, mcpClient(t, s.URL, granted), "greet", map[string]any{"name": "Bob"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "hello Bob from sa:greeter", text(res))

	refused := callTool(t, mcpClient(t, s.URL, other), "greet", map[string]any{"name": "Bob"})
	require.True(t, refused.IsError, text(refused))
	require.Contains(t, text(refused), "403 Forbidden: Insufficient permissions: missing scope mcp_tools:greet:run")

	anonymous := callTool(t, mcpClient(t, s.URL, ""), "greet", map[string]any{"name": "Bob"})
	require.False(t, anonymous.IsError, text(anonymous))
	require.Equal(t, "hello Bob from ", text(anonymous), "no token: an admin without a subject")
}
