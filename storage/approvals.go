package storage

import (
	"context"
	"encoding/json"
)

// ApprovalsTable holds one row per approval a paused run waits for, as Agno
// 3.x names it.
const ApprovalsTable = "agno_approvals"

// The statuses of an approval (Approval.Status).
const (
	ApprovalPending   = "pending"
	ApprovalApproved  = "approved"
	ApprovalRejected  = "rejected"
	ApprovalExpired   = "expired"
	ApprovalCancelled = "cancelled"
)

// Approval is one agno_approvals row. Times are epoch seconds; empty
// strings and nil pointers are NULL columns.
type Approval struct {
	ID        string
	RunID     string
	SessionID string
	// Status is pending, approved, rejected, expired or cancelled.
	Status string
	// SourceType is agent, team or workflow; SourceName its name.
	SourceType string
	SourceName string
	// ApprovalType is required or audit.
	ApprovalType string
	// PauseType is confirmation, user_input or external_execution.
	PauseType string
	ToolName  string
	ToolArgs  map[string]any
	// ExpiresAt is when a pending approval expires; nil never.
	ExpiresAt     *int64
	AgentID       string
	TeamID        string
	WorkflowID    string
	UserID        string
	ScheduleID    string
	ScheduleRunID string
	// Requirements are the paused run's requirements (a JSON array).
	Requirements   json.RawMessage
	Context        map[string]any
	ResolutionData map[string]any
	ResolvedBy     string
	ResolvedAt     *int64
	CreatedAt      int64
	UpdatedAt      int64
	// RunStatus is the run's status, kept in step as it moves on.
	RunStatus string
}

// ApprovalQuery filters and pages [ApprovalStore.ListApprovals], newest
// first; an empty field does not filter.
type ApprovalQuery struct {
	Status       string
	SourceType   string
	ApprovalType string
	PauseType    string
	AgentID      string
	TeamID       string
	WorkflowID   string
	UserID       string
	ScheduleID   string
	RunID        string
	Page
}

// ApprovalResolution resolves a pending approval.
type ApprovalResolution struct {
	// Status is approved or rejected.
	Status         string
	ResolvedBy     string
	ResolutionData map[string]any
	// At is when it was resolved (epoch seconds); 0 is now.
	At int64
}

// ApprovalStore keeps approvals. It is an optional ability of a [Store],
// discovered by type assertion; both SQL adapters implement it. A userID
// argument scopes the call to that user's approvals ("" is all); a row
// outside the scope is [ErrNotFound].
type ApprovalStore interface {
	// CreateApproval inserts a (an empty ID is assigned, zero times are
	// now, an empty Status is pending) and returns it. RunID is required.
	CreateApproval(ctx context.Context, a *Approval) (*Approval, error)
	// GetApproval reads one approval.
	GetApproval(ctx context.Context, id, userID string) (*Approval, error)
	// ListApprovals returns one page of approvals and the total that
	// match.
	ListApprovals(ctx context.Context, q ApprovalQuery) ([]*Approval, int, error)
	// CountPendingApprovals counts pending approvals.
	CountPendingApprovals(ctx context.Context, userID string) (int, error)
	// ResolveApproval sets a pending approval's resolution and returns it.
	// An approval no longer pending is [ErrConflict], returned with the
	// stored row so the caller can say what it is.
	ResolveApproval(ctx context.Context, id, userID string, r ApprovalResolution) (*Approval, error)
	// DeleteApproval removes one approval.
	DeleteApproval(ctx context.Context, id, userID string) error
	// SetApprovalRunStatus records a run's new status on its approvals
	// (updated_at = now; 0 is the store's clock). A run without approvals
	// is no error.
	SetApprovalRunStatus(ctx context.Context, runID, status string, now int64) error
	// ExpireApprovals moves pending approvals whose expires_at is at or
	// before now to expired, and returns how many moved.
	ExpireApprovals(ctx context.Context, now int64) (int64, error)
}
