package schedtool_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tools/schedtool"
)

// An agent's create_schedule makes a schedule of its own runs, owned by
// the run's user and carrying its provenance; a second call with the same
// name updates it; another agent's runs are refused unless allowed.
func TestAnAgentSchedulesItsOwnRuns(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agnogo.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	m := scripted.New([]scripted.Reply{
		scripted.ToolCall("create_schedule", `{"name":"standup","cron":"0 9 * * 1-5","timezone":"Europe/Paris","payload":"{\"message\":\"post the standup\"}"}`),
		scripted.ToolCall("create_schedule", `{"name":"standup","cron":"30 9 * * 1-5","payload":"{\"message\":\"post it later\"}"}`),
		scripted.ToolCall("create_schedule", `{"name":"theirs","cron":"0 9 * * *","endpoint":"/agents/other/runs","payload":"{\"message\":\"x\"}"}`),
		scripted.ToolCall("create_schedule", `{"name":"no message","cron":"0 9 * * *"}`),
		scripted.Text("done"),
	})
	a, err := agent.New(agent.Config{ID: "planner", Model: m, Store: store, Tools: schedtool.Tools(schedtool.Settings{})})
	require.NoError(t, err)
	out, err := a.Run(t.Context(), &run.Input{InputContent: "set up my standup", UserID: "ana", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Len(t, out.Tools, 4)
	require.False(t, *out.Tools[0].ToolCallError, "%v", *out.Tools[0].Result)
	require.Contains(t, *out.Tools[1].Result, `"updated":true`)
	require.True(t, *out.Tools[2].ToolCallError)
	require.Contains(t, *out.Tools[2].Result, "this agent may schedule its own runs (/agents/planner/runs)")
	require.True(t, *out.Tools[3].ToolCallError)
	require.Contains(t, *out.Tools[3].Result, "payload.message")

	list, total, err := store.ListSchedules(t.Context(), storage.ScheduleQuery{Page: storage.Page{Limit: 10, Page: 1}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	s := list[0]
	require.Equal(t, "standup", s.Name)
	require.Equal(t, "ana", s.UserID)
	require.Equal(t, "/agents/planner/runs", s.Endpoint)
	require.Equal(t, "30 9 * * 1-5", s.CronExpr)
	require.Equal(t, map[string]any{"message": "post it later"}, s.Payload)
	require.Equal(t, schedtool.ManagedBy, s.ManagedBy)
	require.Equal(t, "agent", s.TargetType)
	require.Equal(t, "planner", s.TargetID)
	require.Equal(t, out.RunID, s.CreatedByRunID)
	require.Equal(t, "s1", s.CreatedBySessionID)
	require.Equal(t, out.RunID, s.UpdatedByRunID)
}
