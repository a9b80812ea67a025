package agentos_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/codemode"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/tool"
)

// TestCodeModeConfirmationOverHTTP: a CodeMode program's call of a tool
// that needs confirmation pauses the run over HTTP; the client confirms
// the requirement's tool execution with /continue, and the program
// finishes without repeating the calls it made before the pause.
func TestCodeModeConfirmationOverHTTP(t *testing.T) {
	var lookups, deploys atomic.Int64
	type target struct {
		Service string `json:"service"`
	}
	lookup := tool.MustNew(tool.Config{Name: "lookup_version"}, func(_ context.Context, a target) (string, error) {
		lookups.Add(1)
		return "v2", nil
	})
	deploy := tool.MustNew(tool.Config{Name: "deploy", RequiresConfirmation: true}, func(_ context.Context, a target) (string, error) {
		deploys.Add(1)
		return "deployed " + a.Service, nil
	})
	cm, err := codemode.New([]tool.Tool{lookup, deploy}, codemode.Config{})
	require.NoError(t, err)
	program, err := json.Marshal(map[string]string{"code": "v = lookup_version(service=\"api\")\ndeploy(service=\"api@\" + v)"})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.ToolCall(codemode.ToolName, string(program)), scripted.Text("Deployed api@v2.")},
		func(a *agent.Config, _ *agentos.Config) { a.Tools = cm.Tools() })

	paused := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"deploy api"}, "stream": {"false"}, "session_id": {"c1"}}))
	require.Equal(t, "PAUSED", paused["status"])
	requirements := paused["requirements"].([]any)
	require.Len(t, requirements, 1)
	waiting := requirements[0].(map[string]any)["tool_execution"].(map[string]any)
	require.Equal(t, "deploy", waiting["tool_name"])
	require.Equal(t, map[string]any{"service": "api@v2"}, waiting["tool_args"])
	require.EqualValues(t, 1, lookups.Load())

	waiting["confirmed"] = true
	encoded, err := json.Marshal([]any{waiting})
	require.NoError(t, err)
	resp := s.postForm(t, "/agents/assistant/runs/"+paused["run_id"].(string)+"/continue",
		url.Values{"tools": {string(encoded)}, "session_id": {"c1"}, "stream": {"false"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	done := decode[map[string]any](t, resp)
	require.Equal(t, "COMPLETED", done["status"])
	require.Equal(t, "Deployed api@v2.", done["content"])
	require.EqualValues(t, 1, lookups.Load(), "the call before the pause is answered from the run's record")
	require.EqualValues(t, 1, deploys.Load())
	var names []string
	for _, call := range done["tools"].([]any) {
		names = append(names, call.(map[string]any)["tool_name"].(string))
	}
	require.Equal(t, []string{"lookup_version", "deploy", codemode.ToolName}, names)
}
