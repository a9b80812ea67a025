package runhost

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Admin approvals. A tool that requires approval
// ([github.com/agnogo/agnogo/tool.Spec.RequiresApproval]) pauses its calls
// with approval_type "required". When such a run pauses and the host's
// store keeps approvals ([storage.ApprovalStore]), the host records one
// pending approval for the calls that wait, and stamps its id on them so
// a later save or a replay of the pause records no second one. As the run
// moves on — continued, completed, failed, cancelled — the approval's
// run_status follows. Only a run without a parent records approvals: a
// member's or a step's pause surfaces in its parent's requirements, and
// the parent — the run a client continues — records it.

// The metadata keys of a run started by a schedule, copied onto its
// approvals.
const (
	ScheduleIDKey    = "schedule_id"
	ScheduleRunIDKey = "schedule_run_id"
)

// approvalRequired is the approval_type of a call waiting for an admin's
// approval.
const approvalRequired = "required"

// ApprovalCalls returns the calls of a run that wait for an admin's
// approval (approval_type "required") and have no answer yet: its own
// waiting calls, its members' (through its requirements) and its steps'
// executors'. A call appears once, in the order the run's requirements
// list it.
func ApprovalCalls(out *run.Output) []*run.ToolExecution {
	var calls []*run.ToolExecution
	seen := map[string]bool{}
	add := func(t *run.ToolExecution) {
		if t == nil || t.ApprovalType != approvalRequired || !t.Paused() || seen[t.ToolCallID] {
			return
		}
		seen[t.ToolCallID] = true
		calls = append(calls, t)
	}
	for _, r := range out.Requirements {
		if r != nil && !r.IsResolved() {
			add(r.ToolExecution)
		}
	}
	for _, t := range run.WaitingCalls(out) {
		add(t)
	}
	for _, s := range out.StepRequirements {
		if s == nil || !s.RequiresExecutorInput {
			continue
		}
		for _, r := range s.ExecutorRequirements {
			if r != nil && !r.IsResolved() {
				add(r.ToolExecution)
			}
		}
	}
	return calls
}

// ApprovalIDs returns the ids of the approvals a run's calls were ever
// stamped with, in the order found, each once.
func ApprovalIDs(out *run.Output) []string {
	var ids []string
	forEachExecution(out, func(t *run.ToolExecution) {
		if t.ApprovalID != "" && !slices.Contains(ids, t.ApprovalID) {
			ids = append(ids, t.ApprovalID)
		}
	})
	return ids
}

// forEachExecution calls fn with every tool execution a run holds: its
// tools, its requirements' and its steps' executors' requirements'. One
// call may be held by several executions.
func forEachExecution(out *run.Output, fn func(*run.ToolExecution)) {
	for _, t := range out.Tools {
		if t != nil {
			fn(t)
		}
	}
	for _, r := range out.Requirements {
		if r != nil && r.ToolExecution != nil {
			fn(r.ToolExecution)
		}
	}
	for _, s := range out.StepRequirements {
		if s == nil {
			continue
		}
		for _, r := range s.ExecutorRequirements {
			if r != nil && r.ToolExecution != nil {
				fn(r.ToolExecution)
			}
		}
	}
}

// PauseTypeOf is the pause_type of an approval for call: user_input,
// external_execution or confirmation, the first that applies.
func PauseTypeOf(call *run.ToolExecution) string {
	switch {
	case call.RequiresUserInput:
		return string(run.PauseUserInput)
	case call.ExternalExecutionRequired:
		return string(run.PauseExternalExecution)
	}
	return string(run.PauseConfirmation)
}

// recordApproval records the approval a paused run waits for, when its
// calls need one not recorded yet, and stamps its id on them. It reports
// the id, "" when it recorded none. A failure is logged: the run stays
// paused, and the continue route refuses callers who may not approve while
// an approval call has no approval (see the agentos package).
func (h *Host) recordApproval(parent context.Context, r *Run) string {
	approvals, ok := h.cfg.Store.(storage.ApprovalStore)
	out := r.out
	if !ok || out.ParentRunID != "" {
		return ""
	}
	r.Lock()
	defer r.Unlock()
	var fresh []*run.ToolExecution
	for _, call := range ApprovalCalls(out) {
		if call.ApprovalID == "" {
			fresh = append(fresh, call)
		}
	}
	if len(fresh) == 0 {
		return ""
	}
	a, err := h.approvalFor(out, fresh)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), persistTimeout)
		a, err = approvals.CreateApproval(ctx, a)
		cancel()
	}
	if err != nil {
		h.cfg.Logger.ErrorContext(parent, "recording the approval a paused run waits for failed", "run_id", out.RunID, "error", err)
		return ""
	}
	waiting := map[string]bool{}
	for _, call := range fresh {
		waiting[call.ToolCallID] = true
	}
	forEachExecution(out, func(t *run.ToolExecution) {
		if t.ApprovalType == approvalRequired && t.ApprovalID == "" && waiting[t.ToolCallID] {
			t.ApprovalID = a.ID
		}
	})
	return a.ID
}

// approvalFor builds the pending approval of a paused run for its calls
// that wait for one; the first call gives the approval its tool and pause
// type.
func (h *Host) approvalFor(out *run.Output, calls []*run.ToolExecution) (*storage.Approval, error) {
	now := h.cfg.Now()
	first := calls[0]
	a := &storage.Approval{
		RunID: out.RunID, SessionID: out.SessionID, UserID: out.UserID,
		Status: storage.ApprovalPending, ApprovalType: approvalRequired, PauseType: PauseTypeOf(first),
		ToolName: first.ToolName, ToolArgs: first.ToolArgs,
		AgentID: out.AgentID, TeamID: out.TeamID, WorkflowID: out.WorkflowID,
		RunStatus: string(run.StatusPaused), CreatedAt: now.Unix(), UpdatedAt: now.Unix(),
	}
	switch {
	case out.TeamID != "":
		a.SourceType, a.SourceName = string(run.KindTeam), out.TeamName
	case out.WorkflowID != "":
		a.SourceType, a.SourceName = string(run.KindWorkflow), out.WorkflowName
	default:
		a.SourceType, a.SourceName = string(run.KindAgent), out.AgentName
	}
	a.ScheduleID, _ = out.Metadata[ScheduleIDKey].(string)
	a.ScheduleRunID, _ = out.Metadata[ScheduleRunIDKey].(string)
	if expiry := h.cfg.ApprovalExpiry; expiry > 0 {
		at := now.Add(expiry).Unix()
		a.ExpiresAt = &at
	}
	names := make([]string, len(calls))
	for i, call := range calls {
		names[i] = call.ToolName
	}
	a.Context = map[string]any{"tool_names": names}
	if a.SourceName != "" {
		a.Context["source_name"] = a.SourceName
	}
	var requirements any = out.Requirements
	if len(out.Requirements) == 0 && len(out.StepRequirements) > 0 {
		requirements = out.StepRequirements
	}
	if requirements != nil {
		data, err := json.Marshal(requirements)
		if err != nil {
			return nil, err
		}
		a.Requirements = data
	}
	return a, nil
}

// syncApprovals records a run's status on the approvals its calls carry,
// when there are any, and logs a failure: the run is not failed for it.
func (h *Host) syncApprovals(ctx context.Context, out *run.Output) {
	approvals, ok := h.cfg.Store.(storage.ApprovalStore)
	if !ok || len(ApprovalIDs(out)) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), persistTimeout)
	defer cancel()
	if err := approvals.SetApprovalRunStatus(ctx, out.RunID, string(out.Status), h.cfg.Now().Unix()); err != nil {
		h.cfg.Logger.WarnContext(ctx, "recording a run's status on its approvals failed", "run_id", out.RunID, "status", out.Status, "error", err)
	}
}
