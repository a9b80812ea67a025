package config

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// TestApprovalsPolicy: an agent's approvals name the tools whose calls
// wait for an admin's approval — a toolkit's tool, a declared one — and
// how long an approval stays pending; a paused run then has its approval,
// expiring as the policy says.
func TestApprovalsPolicy(t *testing.T) {
	t.Parallel()
	b := build(t, `
db: ${DB}
models:
  fake: {provider: openai, id: gpt-test, base_url: "${FAKE_URL}", api_key: k}
agents:
  - id: a
    model: fake
    tools:
      - calculator
      - {name: get_weather, external_execution: true, parameters: {type: object, properties: {city: {type: string}}}}
    approvals:
      tools: [divide, get_weather]
      expires_after_seconds: 3600
`)
	require.Equal(t, &Approvals{Tools: []string{"divide", "get_weather"}, ExpiresAfter: time.Hour, Line: 11},
		mustParse(t, "agents:\n  - id: a\n    approvals: {tools: [divide, get_weather], expires_after_seconds: 3600}\n", nil).Agents[0].Approvals.withLine(11))

	b.fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("add", map[string]any{"a": 1, "b": 2}), fakeopenai.Call("divide", map[string]any{"a": 1, "b": 2}),
		fakeopenai.Call("get_weather", map[string]any{"city": "Paris"})))
	started := time.Now()
	out, err := b.runAgent(t, "a", "Compute.", "s1")
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, out.Status)
	require.Empty(t, out.Tools[0].ApprovalType, "add needs no approval")
	require.Equal(t, "required", out.Tools[1].ApprovalType)
	require.True(t, out.Tools[1].RequiresConfirmation, "divide waits for a confirmation the approval decides")
	require.Equal(t, "required", out.Tools[2].ApprovalType)
	require.True(t, out.Tools[2].ExternalExecutionRequired, "get_weather still waits for its result")

	approvals, total, err := b.os.Store.(storage.ApprovalStore).ListApprovals(context.WithoutCancel(t.Context()),
		storage.ApprovalQuery{RunID: out.RunID, Page: storage.Page{Limit: 10, Page: 1}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, "divide", approvals[0].ToolName)
	require.NotNil(t, approvals[0].ExpiresAt)
	require.InDelta(t, started.Add(time.Hour).Unix(), *approvals[0].ExpiresAt, 5)
	require.Equal(t, approvals[0].ID, out.Tools[1].ApprovalID)
}

// withLine sets the line the policy was read at, for comparing policies
// read from different files.
func (a *Approvals) withLine(line int) *Approvals {
	copied := *a
	copied.Line = line
	return &copied
}

// TestApprovalsPolicyErrors: a policy that is not a mapping, has an
// unknown key, lists a tool twice, expires after too long or names a tool
// the agent does not have is refused where it is written.
func TestApprovalsPolicyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"not a mapping", "agents:\n  - id: a\n    approvals: [send]\n",
			`agnogo.yaml:3: approvals in agent "a": want a mapping such as {tools: [send_email], expires_after_seconds: 86400}, got a list`},
		{"unknown key", "agents:\n  - id: a\n    approvals: {tool: [send]}\n",
			`agnogo.yaml:3: unknown key "tool" in approvals of agent "a"; did you mean "tools"?`},
		{"listed twice", "agents:\n  - id: a\n    approvals: {tools: [send, send]}\n",
			`agnogo.yaml:3: tools in approvals of agent "a": "send" is listed twice`},
		{"zero expiry", "agents:\n  - id: a\n    approvals: {expires_after_seconds: 0}\n",
			`agnogo.yaml:3: expires_after_seconds in approvals of agent "a": want a number of at least 1, got 0`},
		{"expiry too long", "agents:\n  - id: a\n    approvals: {expires_after_seconds: 99999999}\n",
			`agnogo.yaml:3: expires_after_seconds in approvals of agent "a": 99999999 is more than a year`},
		{"on a claude agent", "agents:\n  - id: a\n    type: claude\n    approvals: {tools: [Bash]}\n",
			`agnogo.yaml:4: key "approvals" in agent "a" is for agnogo agents only`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tc.yaml), "agnogo.yaml", env(nil))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}

	file := mustParse(t, "db: sqlite://"+t.TempDir()+"/os.db\nagents:\n  - id: a\n    model: openai:gpt-test\n    tools: [calculator]\n    approvals:\n      tools: [divde]\n", nil)
	_, err := file.Build(t.Context(), BuildOptions{Getenv: env(map[string]string{"OPENAI_API_KEY": "k"})})
	require.Error(t, err)
	require.Contains(t, err.Error(), `agnogo.yaml:7: agent "a": approvals.tools names "divde", which the agent does not have; its tools are add, subtract`)
}
