package agentos_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
)

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, body := call(t, http.MethodGet, url, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, into), string(body))
}

// /info, / , /config and /models carry what Agno's clients read first.
func TestSurfaceAClientProbesFirst(t *testing.T) {
	s := newServer(t, nil, func(_ *agent.Config, c *agentos.Config) {
		c.ID, c.Name, c.Version = "os-1", "Test OS", "v1.2.3"
	})

	var info map[string]any
	getJSON(t, s.URL+"/info", &info)
	require.Equal(t, "os-1", info["os_id"])
	require.Equal(t, "Test OS", info["name"])
	require.Equal(t, "v1.2.3", info["os_version"])
	require.EqualValues(t, 1, info["agent_count"])
	require.EqualValues(t, 0, info["team_count"])
	require.EqualValues(t, 0, info["workflow_count"])
	require.Equal(t, map[string]any{"enabled": false, "path": nil, "oauth": nil}, info["mcp"])
	require.Equal(t, "none", info["auth_mode"])
	require.Contains(t, info, "agno_version")

	var root map[string]any
	getJSON(t, s.URL+"/", &root)
	require.Equal(t, "Test OS", root["name"])
	require.Equal(t, "/health", root["health"])
	require.Equal(t, "/info", root["info"])
	require.Equal(t, "/docs", root["docs"])

	var cfg map[string]any
	getJSON(t, s.URL+"/config", &cfg)
	for _, key := range []string{"os_id", "name", "description", "available_models", "os_database", "databases", "chat",
		"manifest", "session", "metrics", "memory", "learning", "knowledge", "evals", "traces", "agents", "teams",
		"workflows", "interfaces"} {
		require.Contains(t, cfg, key)
	}
	require.Equal(t, []any{map[string]any{"id": "scripted", "provider": "Scripted"}}, cfg["available_models"])
	session := cfg["session"].(map[string]any)
	dbs := session["dbs"].([]any)
	require.Len(t, dbs, 1)
	db := dbs[0].(map[string]any)
	require.Equal(t, cfg["os_database"], db["db_id"])
	require.Equal(t, []any{"agno_sessions"}, db["tables"])
	require.Equal(t, []any{"agno_memories"}, cfg["memory"].(map[string]any)["dbs"].([]any)[0].(map[string]any)["tables"])
	require.Equal(t, map[string]any{"dbs": []any{}, "knowledge_instances": []any{}}, cfg["knowledge"])
	require.Equal(t, []any{}, cfg["interfaces"])

	var models []map[string]any
	getJSON(t, s.URL+"/models", &models)
	require.Equal(t, []map[string]any{{"id": "scripted", "provider": "Scripted"}}, models)
}
