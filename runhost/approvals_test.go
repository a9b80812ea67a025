package runhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// pausingTurn pauses its run on the calls it is given, as an agent's turn
// does on calls that wait for a person; calls without an approval type
// wait for a plain confirmation.
type pausingTurn struct {
	calls []*run.ToolExecution
}

func (p *pausingTurn) Attempt(_ context.Context, r *runhost.Run, _ int) error {
	r.Lock()
	defer r.Unlock()
	out := r.Output()
	for _, call := range p.calls {
		out.Tools = append(out.Tools, call)
		out.Requirements = append(out.Requirements, run.NewRequirement(call, time.Unix(1_700_000_000, 0)))
	}
	return runhost.ErrPaused
}

// approvalCall is a call of send_email waiting for an admin's approval.
func approvalCall(id string) *run.ToolExecution {
	return &run.ToolExecution{ToolCallID: id, ToolName: "send_email", ToolArgs: map[string]any{"to": "bob"},
		RequiresConfirmation: true, ApprovalType: "required"}
}

// runApprovals lists the approvals of run r1.
func runApprovals(t *testing.T, store storage.Store) []*storage.Approval {
	t.Helper()
	approvals, total, err := store.(storage.ApprovalStore).ListApprovals(context.WithoutCancel(t.Context()),
		storage.ApprovalQuery{RunID: "r1", Page: storage.Page{Limit: 10, Page: 1}})
	require.NoError(t, err)
	require.Len(t, approvals, total)
	return approvals
}

// TestHostRecordsTheApprovalAPausedRunWaitsFor: a run that pauses on calls
// requiring approval gets one pending approval describing the first of
// them, whose id the paused run's calls — in its row and in RunPaused —
// carry; the clock and the expiry give its expires_at; the schedule that
// started the run is on it.
func TestHostRecordsTheApprovalAPausedRunWaitsFor(t *testing.T) {
	store := openStore(t)
	now := time.Unix(1_750_000_000, 0)
	host := runhost.New(runhost.Config{Store: store, Now: func() time.Time { return now }, ApprovalExpiry: time.Hour})
	userInput := approvalCall("c2")
	userInput.RequiresConfirmation, userInput.RequiresUserInput = false, true
	plain := &run.ToolExecution{ToolCallID: "c3", ToolName: "lookup", RequiresConfirmation: true}
	turn := &pausingTurn{calls: []*run.ToolExecution{approvalCall("c1"), userInput, plain}}
	var paused *run.RunPaused
	for event, err := range host.Execute(t.Context(), run.Execution{}, opener(turn, func(s *runhost.Spec) {
		s.Output.UserID, s.Session.UserID = "alice", "alice"
		s.Output.Metadata = map[string]any{runhost.ScheduleIDKey: "sched-1", runhost.ScheduleRunIDKey: "sched-run-1"}
	})) {
		require.NoError(t, err)
		if e, ok := event.(*run.RunPaused); ok {
			paused = e
		}
	}
	approvals := runApprovals(t, store)
	require.Len(t, approvals, 1)
	a := approvals[0]
	require.Equal(t, storage.ApprovalPending, a.Status)
	require.Equal(t, "required", a.ApprovalType)
	require.Equal(t, "confirmation", a.PauseType, "the first approval call's")
	require.Equal(t, "send_email", a.ToolName)
	require.Equal(t, map[string]any{"to": "bob"}, a.ToolArgs)
	require.Equal(t, "agent", a.SourceType)
	require.Equal(t, "A", a.SourceName)
	require.Equal(t, "a", a.AgentID)
	require.Equal(t, "alice", a.UserID)
	require.Equal(t, "s", a.SessionID)
	require.Equal(t, "sched-1", a.ScheduleID)
	require.Equal(t, "sched-run-1", a.ScheduleRunID)
	require.Equal(t, "PAUSED", a.RunStatus)
	require.Equal(t, now.Unix(), a.CreatedAt)
	require.NotNil(t, a.ExpiresAt)
	require.Equal(t, now.Add(time.Hour).Unix(), *a.ExpiresAt)
	require.Equal(t, map[string]any{"tool_names": []any{"send_email", "send_email"}, "source_name": "A"}, a.Context)
	var requirements []map[string]any
	require.NoError(t, json.Unmarshal(a.Requirements, &requirements))
	require.Len(t, requirements, 3, "the run's requirements, all of them")

	stored := storedRun(t, store, "r1")
	require.Equal(t, run.StatusPaused, stored.Status)
	ids := map[string]string{}
	for _, tool := range stored.Tools {
		ids[tool.ToolCallID] = tool.ApprovalID
	}
	require.Equal(t, map[string]string{"c1": a.ID, "c2": a.ID, "c3": ""}, ids, "the stored run's approval calls carry the approval's id")
	require.NotNil(t, paused)
	require.Equal(t, a.ID, paused.Tools[0].ApprovalID, "and so does RunPaused")
}

// TestHostRecordsOneApprovalPerPause: a pause whose calls carry an approval
// id already (a replay, a save of the paused run again) records none; a
// run with a parent records none, its parent does; without approval calls
// nothing is recorded.
func TestHostRecordsOneApprovalPerPause(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []*run.ToolExecution
		tune  func(*runhost.Spec)
	}{
		{"stamped already", []*run.ToolExecution{func() *run.ToolExecution { c := approvalCall("c1"); c.ApprovalID = "earlier"; return c }()}, nil},
		{"a child run", []*run.ToolExecution{approvalCall("c1")}, func(s *runhost.Spec) { s.Output.ParentRunID = "parent" }},
		{"no approval call", []*run.ToolExecution{{ToolCallID: "c1", ToolName: "lookup", RequiresConfirmation: true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t)
			host := runhost.New(runhost.Config{Store: store})
			var tune []func(*runhost.Spec)
			if tc.tune != nil {
				tune = append(tune, tc.tune)
			}
			out, err := host.Collect(t.Context(), run.Execution{}, opener(&pausingTurn{calls: tc.calls}, tune...))
			require.NoError(t, err)
			require.Equal(t, run.StatusPaused, out.Status)
			require.Empty(t, runApprovals(t, store))
		})
	}
}

// continuedTurn ends a continued run as its outcome says.
type continuedTurn struct{ outcome error }

func (c *continuedTurn) Attempt(context.Context, *runhost.Run, int) error { return c.outcome }

// TestHostKeepsTheApprovalsRunStatus: as a run with an approval goes on,
// the approval's run_status follows: settled outside an execution
// (cancelled while paused), RUNNING while it runs again, then its end.
func TestHostKeepsTheApprovalsRunStatus(t *testing.T) {
	store := openStore(t)
	host := runhost.New(runhost.Config{Store: store})
	_, err := host.Collect(t.Context(), run.Execution{}, opener(&pausingTurn{calls: []*run.ToolExecution{approvalCall("c1")}}))
	require.NoError(t, err)
	require.Equal(t, "PAUSED", runApprovals(t, store)[0].RunStatus)
	_, _, err = runhost.Settle(t.Context(), store, "r1", "", run.StatusCancelled, "cancelled")
	require.NoError(t, err)
	require.Equal(t, "CANCELLED", runApprovals(t, store)[0].RunStatus, "a settled run's approvals follow it")

	for _, tc := range []struct {
		outcome error
		want    run.Status
	}{{nil, run.StatusCompleted}, {fmt.Errorf("boom"), run.StatusError}} {
		var during []string
		turn := &continuedTurn{outcome: tc.outcome}
		events := host.Execute(t.Context(), run.Execution{}, func(context.Context, run.Execution) (*runhost.Spec, error) {
			out := storedRun(t, store, "r1")
			out.Status = run.StatusRunning
			return &runhost.Spec{Output: out, Session: &storage.Session{SessionID: "s", SessionType: storage.SessionTypeAgent, AgentID: "a"},
				First: &run.RunContinued{}, Turn: turn, Persist: true}, nil
		})
		for event := range events {
			if event != nil && event.EventName() == run.EventRunContinued {
				during = append(during, runApprovals(t, store)[0].RunStatus)
			}
		}
		require.Equal(t, []string{"RUNNING"}, during, "a continued run's approvals see it running")
		require.Equal(t, string(tc.want), runApprovals(t, store)[0].RunStatus)
	}
}
