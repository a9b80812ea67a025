package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// Admin approvals (approvals-and-service-accounts.md §h.1–h.2). A run that
// pauses on a tool requiring approval has a pending approval, recorded by
// the run host. The routes below list and resolve approvals; resolving
// does not continue the run: the client polls /approvals/{id}/status, then
// calls /continue, which applies the resolution to the run's calls and,
// under authorization, refuses callers who may not resolve approvals while
// one is pending.

// approvalRoutes mounts the /approvals routes, and starts the sweep that
// expires approvals past their expires_at (it ends at Shutdown).
func (o *OS) approvalRoutes(mux *http.ServeMux) {
	mountFeature[storage.ApprovalStore](o, mux, "Approvals", "approvals", []endpoint{
		{"GET /approvals", "approvals", "read", "", o.handleListApprovals},
		{"GET /approvals/count", "approvals", "read", "", o.handleCountApprovals},
		{"GET /approvals/{approval_id}/status", "approvals", "read", "approval_id", o.handleApprovalStatus},
		{"GET /approvals/{approval_id}", "approvals", "read", "approval_id", o.handleGetApproval},
		{"POST /approvals/{approval_id}/resolve", "approvals", "write", "approval_id", o.handleResolveApproval},
		{"DELETE /approvals/{approval_id}", "approvals", "delete", "approval_id", o.handleDeleteApproval},
	})
	if store, ok := o.cfg.Store.(storage.ApprovalStore); ok {
		o.sweepApprovals(store, approvalSweepInterval)
	}
}

// The values the approval routes accept.
var (
	approvalStatuses = []string{storage.ApprovalPending, storage.ApprovalApproved, storage.ApprovalRejected, storage.ApprovalExpired,
		storage.ApprovalCancelled}
	approvalTypes = []string{"required", "audit"}
)

// The limits of the approval routes.
const (
	// approvalSweepInterval is how often pending approvals past their
	// expires_at are moved to expired; reads expire them too, so none is
	// shown pending after its expiry.
	approvalSweepInterval = 30 * time.Second
	// defaultApprovalLimit is GET /approvals's default page size.
	defaultApprovalLimit = 100
	// maxResolvedByChars bounds resolved_by, as Agno's schema does.
	maxResolvedByChars = 255
	// maxRunApprovals bounds how many approvals of one run /continue reads.
	maxRunApprovals = 100
)

// approvalNotFound is the 404 detail of an approval the caller cannot see.
const approvalNotFound = "Approval not found"

// approvalGateDetail is the 403 detail of a continuation that waits for an
// admin's approval.
const approvalGateDetail = "This run requires admin approval before it can be continued"

// expiredNote is the confirmation note of a call whose approval expired:
// the call is rejected, and the model reads why.
const expiredNote = "The approval this call waited for expired before anyone resolved it."

// approvalSchema is an approval as the API returns it (ApprovalResponse):
// every column of agno_approvals, times in epoch seconds, unset ones null.
type approvalSchema struct {
	ID             string          `json:"id"`
	RunID          string          `json:"run_id"`
	SessionID      string          `json:"session_id"`
	Status         string          `json:"status"`
	SourceType     string          `json:"source_type"`
	ApprovalType   *string         `json:"approval_type"`
	PauseType      *string         `json:"pause_type"`
	ToolName       *string         `json:"tool_name"`
	ToolArgs       map[string]any  `json:"tool_args"`
	ExpiresAt      *int64          `json:"expires_at"`
	AgentID        *string         `json:"agent_id"`
	TeamID         *string         `json:"team_id"`
	WorkflowID     *string         `json:"workflow_id"`
	UserID         *string         `json:"user_id"`
	ScheduleID     *string         `json:"schedule_id"`
	ScheduleRunID  *string         `json:"schedule_run_id"`
	SourceName     *string         `json:"source_name"`
	Requirements   json.RawMessage `json:"requirements"`
	Context        map[string]any  `json:"context"`
	ResolutionData map[string]any  `json:"resolution_data"`
	ResolvedBy     *string         `json:"resolved_by"`
	ResolvedAt     *int64          `json:"resolved_at"`
	CreatedAt      int64           `json:"created_at"`
	UpdatedAt      *int64          `json:"updated_at"`
	RunStatus      *string         `json:"run_status"`
}

// approvalStatusSchema is GET /approvals/{id}/status: what a client polls.
type approvalStatusSchema struct {
	ApprovalID string  `json:"approval_id"`
	Status     string  `json:"status"`
	RunID      string  `json:"run_id"`
	ResolvedAt *int64  `json:"resolved_at"`
	ResolvedBy *string `json:"resolved_by"`
}

// effectiveStatus is an approval's status at now: a pending approval past
// its expires_at is expired, whether or not a sweep moved it yet.
func effectiveStatus(a *storage.Approval, now int64) string {
	if a.Status == storage.ApprovalPending && a.ExpiresAt != nil && *a.ExpiresAt <= now {
		return storage.ApprovalExpired
	}
	return a.Status
}

func (o *OS) approvalSchema(a *storage.Approval) approvalSchema {
	s := approvalSchema{
		ID: a.ID, RunID: a.RunID, SessionID: a.SessionID, Status: effectiveStatus(a, o.cfg.Now().Unix()), SourceType: a.SourceType,
		ApprovalType: nullIfEmpty(a.ApprovalType), PauseType: nullIfEmpty(a.PauseType), ToolName: nullIfEmpty(a.ToolName),
		ToolArgs: a.ToolArgs, ExpiresAt: a.ExpiresAt, AgentID: nullIfEmpty(a.AgentID), TeamID: nullIfEmpty(a.TeamID),
		WorkflowID: nullIfEmpty(a.WorkflowID), UserID: nullIfEmpty(a.UserID), ScheduleID: nullIfEmpty(a.ScheduleID),
		ScheduleRunID: nullIfEmpty(a.ScheduleRunID), SourceName: nullIfEmpty(a.SourceName), Requirements: a.Requirements,
		Context: a.Context, ResolutionData: a.ResolutionData, ResolvedBy: nullIfEmpty(a.ResolvedBy), ResolvedAt: a.ResolvedAt,
		CreatedAt: a.CreatedAt, RunStatus: nullIfEmpty(a.RunStatus),
	}
	if len(s.Requirements) == 0 {
		s.Requirements = json.RawMessage("null")
	}
	if a.UpdatedAt != 0 {
		s.UpdatedAt = &a.UpdatedAt
	}
	return s
}

// expireApprovals moves the pending approvals past their expiry to expired
// before a read, so none is shown (or resolved, or gating a run) pending
// after it expired. A failure is logged: the read renders such approvals
// expired anyway ([effectiveStatus]).
func (o *OS) expireApprovals(ctx context.Context, store storage.ApprovalStore) {
	if _, err := store.ExpireApprovals(ctx, o.cfg.Now().Unix()); err != nil {
		o.log.WarnContext(ctx, "expiring approvals failed", "error", err)
	}
}

// sweepApprovals expires approvals every interval until the server shuts
// down; each sweep is one bounded statement.
func (o *OS) sweepApprovals(store storage.ApprovalStore, interval time.Duration) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-o.followers.Done():
				return
			case <-ticker.C:
				ctx, cancel := context.WithTimeout(o.followers, interval)
				o.expireApprovals(ctx, store)
				cancel()
			}
		}
	}()
}

// approvalStore is the server's store as an approval store; the routes are
// mounted only when it is one.
func (o *OS) approvalStore() storage.ApprovalStore {
	store, _ := o.cfg.Store.(storage.ApprovalStore)
	return store
}

// writeApprovalError answers a store error of an approval route; a row the
// caller cannot see is Agno's 404.
func (o *OS) writeApprovalError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, storage.ErrNotFound) {
		writeError(w, http.StatusNotFound, approvalNotFound)
		return
	}
	o.writeStoreError(w, r, err)
}

func (o *OS) handleListApprovals(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	q := newQueryReader(r)
	query := storage.ApprovalQuery{
		Status:       q.enum("status", "", approvalStatuses...),
		SourceType:   q.str("source_type"),
		ApprovalType: q.enum("approval_type", "", approvalTypes...),
		PauseType:    q.str("pause_type"),
		AgentID:      q.str("agent_id"),
		TeamID:       q.str("team_id"),
		WorkflowID:   q.str("workflow_id"),
		UserID:       o.userScope(r, q.str("user_id")),
		ScheduleID:   q.str("schedule_id"),
		RunID:        q.str("run_id"),
	}
	page := q.paginationFrom(defaultApprovalLimit)
	if q.failed(w) {
		return
	}
	query.Page = page.store()
	store := o.approvalStore()
	o.expireApprovals(r.Context(), store)
	approvals, total, err := store.ListApprovals(r.Context(), query)
	if err != nil {
		o.writeApprovalError(w, r, err)
		return
	}
	items := make([]approvalSchema, 0, len(approvals))
	for _, a := range approvals {
		items = append(items, o.approvalSchema(a))
	}
	writeJSON(w, http.StatusOK, paginate(items, page, total, started))
}

func (o *OS) handleCountApprovals(w http.ResponseWriter, r *http.Request) {
	store := o.approvalStore()
	o.expireApprovals(r.Context(), store)
	n, err := store.CountPendingApprovals(r.Context(), o.userScope(r, r.URL.Query().Get("user_id")))
	if err != nil {
		o.writeApprovalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"count": n})
}

// readApproval reads the path's approval in the caller's scope, expired
// first when past its expiry, or answers 404.
func (o *OS) readApproval(w http.ResponseWriter, r *http.Request) (*storage.Approval, bool) {
	store := o.approvalStore()
	o.expireApprovals(r.Context(), store)
	a, err := store.GetApproval(r.Context(), r.PathValue("approval_id"), o.userScope(r, ""))
	if err != nil {
		o.writeApprovalError(w, r, err)
		return nil, false
	}
	return a, true
}

func (o *OS) handleApprovalStatus(w http.ResponseWriter, r *http.Request) {
	a, ok := o.readApproval(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, approvalStatusSchema{ApprovalID: a.ID, Status: effectiveStatus(a, o.cfg.Now().Unix()), RunID: a.RunID,
		ResolvedAt: a.ResolvedAt, ResolvedBy: nullIfEmpty(a.ResolvedBy)})
}

func (o *OS) handleGetApproval(w http.ResponseWriter, r *http.Request) {
	if a, ok := o.readApproval(w, r); ok {
		writeJSON(w, http.StatusOK, o.approvalSchema(a))
	}
}

// adminOnlyUnderIsolation answers 404 to a non-admin caller under user
// isolation, for whom resolving and deleting approvals do not exist.
func (o *OS) adminOnlyUnderIsolation(w http.ResponseWriter, r *http.Request) bool {
	if o.cfg.Auth.UserIsolation && !principalFrom(r.Context()).Admin {
		writeError(w, http.StatusNotFound, approvalNotFound)
		return false
	}
	return true
}

func (o *OS) handleResolveApproval(w http.ResponseWriter, r *http.Request) {
	if !o.adminOnlyUnderIsolation(w, r) {
		return
	}
	body, ok := readJSONObject(w, r, true)
	if !ok {
		return
	}
	status := body.str("status")
	switch {
	case !body.has("status"):
		body.issue(missingField("status"))
	case status != storage.ApprovalApproved && status != storage.ApprovalRejected:
		body.invalid("status", "String should match pattern '^(approved|rejected)$'", "string_pattern_mismatch")
	}
	resolvedBy := body.str("resolved_by")
	if utf8.RuneCountInString(resolvedBy) > maxResolvedByChars {
		body.invalid("resolved_by", fmt.Sprintf("String should have at most %d characters", maxResolvedByChars), "string_too_long")
	}
	data := body.object("resolution_data")
	if body.failed(w) {
		return
	}
	if subject := principalFrom(r.Context()).Subject; subject != "" {
		resolvedBy = subject // who resolved is who is signed in, whatever the body says
	}
	store := o.approvalStore()
	o.expireApprovals(r.Context(), store)
	resolved, err := store.ResolveApproval(r.Context(), r.PathValue("approval_id"), o.userScope(r, ""), storage.ApprovalResolution{
		Status: status, ResolvedBy: resolvedBy, ResolutionData: data, At: o.cfg.Now().Unix(),
	})
	switch {
	case errors.Is(err, storage.ErrConflict) && resolved != nil:
		writeError(w, http.StatusConflict, fmt.Sprintf("Approval is already '%s' and cannot be resolved", effectiveStatus(resolved, o.cfg.Now().Unix())))
		return
	case err != nil:
		o.writeApprovalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, o.approvalSchema(resolved))
}

func (o *OS) handleDeleteApproval(w http.ResponseWriter, r *http.Request) {
	if !o.adminOnlyUnderIsolation(w, r) {
		return
	}
	if err := o.approvalStore().DeleteApproval(r.Context(), r.PathValue("approval_id"), o.userScope(r, "")); err != nil {
		o.writeApprovalError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// gateContinue applies a run's admin approvals to a continuation of it
// (req, not yet handed to the runner). While a call of the run waits for an
// approval that is pending — or was never recorded, or was deleted — a
// caller who may not resolve approvals (approvals:write) is refused with
// 403. A resolved approval decides its calls, whatever the request says:
// approved confirms them (with the user input or external result of its
// resolution_data), rejected or expired rejects them. It reports false
// when it answered the request.
func (o *OS) gateContinue(w http.ResponseWriter, r *http.Request, runner run.Runner, req *run.ContinueRequest) bool {
	store, ok := o.cfg.Store.(storage.ApprovalStore)
	if !ok {
		return true
	}
	ctx := r.Context()
	rec, err := o.cfg.Store.GetRun(ctx, req.RunID, req.UserID)
	if errors.Is(err, storage.ErrNotFound) {
		return true // the runner says so
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return false
	}
	calls := runhost.ApprovalCalls(rec.Run)
	if len(calls) == 0 {
		return true
	}
	o.expireApprovals(ctx, store)
	approvals, _, err := store.ListApprovals(ctx, storage.ApprovalQuery{RunID: req.RunID, ApprovalType: "required",
		Page: storage.Page{Limit: maxRunApprovals, Page: 1}})
	if err != nil {
		o.writeStoreError(w, r, err)
		return false
	}
	now := o.cfg.Now().Unix()
	decided := map[string]*storage.Approval{} // by tool_call_id
	waiting := false
	for _, call := range calls {
		i := slices.IndexFunc(approvals, func(a *storage.Approval) bool { return a.ID == call.ApprovalID })
		if call.ApprovalID == "" || i < 0 || effectiveStatus(approvals[i], now) == storage.ApprovalPending {
			waiting = true
			continue
		}
		if status := effectiveStatus(approvals[i], now); status != storage.ApprovalCancelled {
			decided[call.ToolCallID] = approvals[i]
		}
	}
	if waiting && !o.allowed(principalFrom(ctx), "approvals", "", "write") {
		writeError(w, http.StatusForbidden, approvalGateDetail)
		return false
	}
	if len(decided) == 0 {
		return true
	}
	if kindOf(runner) == run.KindWorkflow {
		req.StepRequirements = decideSteps(req.StepRequirements, rec.Run.StepRequirements, decided, now)
		return true
	}
	req.Tools = decideTools(req.Tools, calls, decided, now)
	return true
}

// decideTools returns the tool executions of a continuation with the
// calls an approval decided resolved as it says: a call the request sends
// is overridden, one it leaves out is added from the paused run.
func decideTools(given, calls []*run.ToolExecution, decided map[string]*storage.Approval, now int64) []*run.ToolExecution {
	tools := slices.Clone(given)
	for _, call := range calls {
		a, ok := decided[call.ToolCallID]
		if !ok {
			continue
		}
		i := slices.IndexFunc(tools, func(t *run.ToolExecution) bool { return t != nil && t.ToolCallID == call.ToolCallID })
		if i < 0 {
			tools = append(tools, call) // read from the store for this request: ours to change
			i = len(tools) - 1
		} else {
			copied := *tools[i]
			tools[i] = &copied
		}
		applyApproval(tools[i], call, a, now)
	}
	return tools
}

// decideSteps is [decideTools] for a workflow: the decided calls are those
// of its steps' executors. Without step requirements in the request, the
// paused run's executor requirements are sent, decided.
func decideSteps(given, stored []*run.StepRequirement, decided map[string]*storage.Approval, now int64) []*run.StepRequirement {
	steps := given
	if len(steps) == 0 {
		for _, s := range stored {
			if s != nil && s.RequiresExecutorInput {
				steps = append(steps, s) // read from the store for this request
			}
		}
	}
	for _, s := range steps {
		if s == nil {
			continue
		}
		for _, req := range s.ExecutorRequirements {
			if req == nil || req.ToolExecution == nil {
				continue
			}
			a, ok := decided[req.ToolExecution.ToolCallID]
			if !ok {
				continue
			}
			applyApproval(req.ToolExecution, req.ToolExecution, a, now)
			req.Confirmation = req.ToolExecution.Confirmed
			req.ConfirmationNote = req.ToolExecution.ConfirmationNote
			if req.ToolExecution.Result != nil {
				req.ExternalExecutionResult = req.ToolExecution.Result
			}
			req.UserInputSchema = req.ToolExecution.UserInputSchema
		}
	}
	return steps
}

// applyApproval resolves t, the continuation's answer for call, as approval
// a decided it (approvals-and-service-accounts.md §h.1): approved confirms
// it, with the user-input values of resolution_data.values (or of
// resolution_data itself) and the external result of
// resolution_data.result; rejected rejects it, and so does an expired
// approval, with a note saying so. What the flags of call do not ask for
// is left as the request has it.
func applyApproval(t, call *run.ToolExecution, a *storage.Approval, now int64) {
	switch effectiveStatus(a, now) {
	case storage.ApprovalApproved:
		if call.RequiresConfirmation {
			t.Confirmed, t.ConfirmationNote = new(true), ""
		}
		if call.RequiresUserInput {
			values, _ := a.ResolutionData["values"].(map[string]any)
			if values == nil {
				values = a.ResolutionData
			}
			fields := t.UserInputSchema // the values the request gives, which the approval's complete
			if len(fields) == 0 {
				fields = call.UserInputSchema
			}
			t.UserInputSchema = slices.Clone(fields)
			for i, field := range t.UserInputSchema {
				if value, ok := values[field.Name]; ok {
					t.UserInputSchema[i].Value = value
				}
			}
			if t.Confirmed != nil && !*t.Confirmed {
				t.Confirmed = nil // a rejection the approval overrules
			}
		}
		if result, ok := a.ResolutionData["result"]; ok && call.ExternalExecutionRequired {
			text, isText := result.(string)
			if !isText {
				data, _ := json.Marshal(result)
				text = string(data)
			}
			t.Result = &text
		}
	case storage.ApprovalRejected:
		t.Confirmed = new(false)
	case storage.ApprovalExpired:
		t.Confirmed, t.ConfirmationNote = new(false), expiredNote
	}
}
