package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agnogo/agnogo/storage"
)

var _ storage.ApprovalStore = (*Store)(nil)

const approvalColumns = "id, run_id, session_id, status, source_type, source_name, approval_type, pause_type, tool_name, tool_args, " +
	"expires_at, agent_id, team_id, workflow_id, user_id, schedule_id, schedule_run_id, requirements, context, resolution_data, " +
	"resolved_by, resolved_at, created_at, updated_at, run_status"

// CreateApproval implements [storage.ApprovalStore]. An empty Status is
// pending.
func (s *Store) CreateApproval(ctx context.Context, a *storage.Approval) (*storage.Approval, error) {
	if a == nil || a.RunID == "" {
		return nil, storage.Invalidf("an approval needs a run_id")
	}
	status := cmp.Or(a.Status, storage.ApprovalPending)
	if !validApprovalStatus(status) {
		return nil, storage.Invalidf("approval status %q: want pending, approved, rejected, expired or cancelled", a.Status)
	}
	docs, err := marshalAll(a.ToolArgs, a.Context, a.ResolutionData)
	if err != nil {
		return nil, fmt.Errorf("create approval of run %s: %w", a.RunID, err)
	}
	requirements, err := rawJSONParam("requirements", a.Requirements)
	if err != nil {
		return nil, fmt.Errorf("create approval of run %s: %w", a.RunID, err)
	}
	now := s.nowSeconds()
	id := cmp.Or(a.ID, s.newID())
	args := []any{id, a.RunID, nullable(a.SessionID), status, nullable(a.SourceType), nullable(a.SourceName), nullable(a.ApprovalType),
		nullable(a.PauseType), nullable(a.ToolName), docs[0], optional(a.ExpiresAt), nullable(a.AgentID), nullable(a.TeamID),
		nullable(a.WorkflowID), nullable(a.UserID), nullable(a.ScheduleID), nullable(a.ScheduleRunID), requirements, docs[1], docs[2],
		nullable(a.ResolvedBy), optional(a.ResolvedAt), cmp.Or(a.CreatedAt, now), cmp.Or(a.UpdatedAt, now), nullable(a.RunStatus)}
	query := insertStatement(s.tables.approvals, approvalColumns)
	var out *storage.Approval
	err = s.db.InTx(ctx, func(tx Conn) error {
		out, err = scanApproval(tx.QueryRow(ctx, query, args...))
		return err
	})
	switch {
	case err == nil:
		return out, nil
	case uniqueViolation(err):
		return nil, fmt.Errorf("create approval: %w: approval id '%s' exists", storage.ErrConflict, id)
	case errors.Is(err, storage.ErrInvalid):
		return nil, err
	}
	return nil, fmt.Errorf("create approval of run %s: %w", a.RunID, err)
}

// GetApproval implements [storage.ApprovalStore].
func (s *Store) GetApproval(ctx context.Context, id, userID string) (*storage.Approval, error) {
	out, err := s.readApproval(ctx, s.db.Reader(), id, userID)
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("approval", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get approval %s: %w", id, err)
	}
	return out, nil
}

func (s *Store) readApproval(ctx context.Context, conn Conn, id, userID string) (*storage.Approval, error) {
	where, args := userScope("user_id", userID, "id = ?", id)
	return scanApproval(conn.QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", approvalColumns, s.tables.approvals, where), args...))
}

// ListApprovals implements [storage.ApprovalStore].
func (s *Store) ListApprovals(ctx context.Context, q storage.ApprovalQuery) ([]*storage.Approval, int, error) {
	limitClause, err := pageClause(q.Page)
	if err != nil {
		return nil, 0, err
	}
	var conds []string
	var args []any
	for _, filter := range []struct{ column, value string }{
		{"status", q.Status}, {"source_type", q.SourceType}, {"approval_type", q.ApprovalType}, {"pause_type", q.PauseType},
		{"agent_id", q.AgentID}, {"team_id", q.TeamID}, {"workflow_id", q.WorkflowID}, {"user_id", q.UserID},
		{"schedule_id", q.ScheduleID}, {"run_id", q.RunID},
	} {
		if filter.value != "" {
			conds, args = append(conds, filter.column+" = ?"), append(args, filter.value)
		}
	}
	approvals, total, err := listPage(ctx, s.db.Reader(), listing{
		table: s.tables.approvals, columns: approvalColumns, where: whereClause(conds), args: args,
		order: "created_at DESC, id DESC", limit: limitClause,
	}, scanApproval)
	if err != nil {
		return nil, 0, fmt.Errorf("list approvals: %w", err)
	}
	return approvals, total, nil
}

// CountPendingApprovals implements [storage.ApprovalStore].
func (s *Store) CountPendingApprovals(ctx context.Context, userID string) (int, error) {
	where, args := userScope("user_id", userID, "status = ?", storage.ApprovalPending)
	var n int
	if err := s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", s.tables.approvals, where), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending approvals: %w", err)
	}
	return n, nil
}

// ResolveApproval implements [storage.ApprovalStore]: a compare-and-set on
// status pending, so of two resolvers racing exactly one wins.
func (s *Store) ResolveApproval(ctx context.Context, id, userID string, r storage.ApprovalResolution) (*storage.Approval, error) {
	if r.Status != storage.ApprovalApproved && r.Status != storage.ApprovalRejected {
		return nil, storage.Invalidf("resolve approval %s: status %q: want approved or rejected", id, r.Status)
	}
	docs, err := marshalAll(r.ResolutionData)
	if err != nil {
		return nil, fmt.Errorf("resolve approval %s: %w", id, err)
	}
	at := cmp.Or(r.At, s.nowSeconds())
	where, whereArgs := userScope("user_id", userID, "id = ?", id)
	query := fmt.Sprintf(`UPDATE %s SET status = ?, resolved_by = ?, resolution_data = ?, resolved_at = ?, updated_at = ?
WHERE %s AND status = ? RETURNING %s`, s.tables.approvals, where, approvalColumns)
	args := append([]any{r.Status, nullable(r.ResolvedBy), docs[0], at, at}, whereArgs...)
	args = append(args, storage.ApprovalPending)
	var out *storage.Approval
	var resolved bool
	err = s.db.InTx(ctx, func(tx Conn) error {
		var err error
		out, err = scanApproval(tx.QueryRow(ctx, query, args...))
		if !errors.Is(err, ErrNoRows) {
			resolved = err == nil
			return err
		}
		out, err = s.readApproval(ctx, tx, id, userID)
		return err
	})
	switch {
	case errors.Is(err, ErrNoRows):
		return nil, notFound("approval", id)
	case err != nil:
		return nil, fmt.Errorf("resolve approval %s: %w", id, err)
	case !resolved:
		return out, fmt.Errorf("resolve approval %s: %w: approval is already '%s' and cannot be resolved", id, storage.ErrConflict, out.Status)
	}
	return out, nil
}

// DeleteApproval implements [storage.ApprovalStore].
func (s *Store) DeleteApproval(ctx context.Context, id, userID string) error {
	where, args := userScope("user_id", userID, "id = ?", id)
	return s.execOne(ctx, "delete", "approval", id, fmt.Sprintf("DELETE FROM %s WHERE %s", s.tables.approvals, where), args...)
}

// execOne runs one write in a transaction: verb names it in an error, and
// a write that touched no row is kind id not found.
func (s *Store) execOne(ctx context.Context, verb, kind, id, query string, args ...any) error {
	var touched int64
	err := s.db.InTx(ctx, func(tx Conn) error {
		var err error
		touched, err = tx.Exec(ctx, query, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", verb, kind, id, err)
	}
	if touched == 0 {
		return notFound(kind, id)
	}
	return nil
}

// SetApprovalRunStatus implements [storage.ApprovalStore]. A run without
// approvals is no error.
func (s *Store) SetApprovalRunStatus(ctx context.Context, runID, status string, now int64) error {
	if runID == "" {
		return storage.Invalidf("set approval run status: run_id is required")
	}
	err := s.db.InTx(ctx, func(tx Conn) error {
		_, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET run_status = ?, updated_at = ? WHERE run_id = ?", s.tables.approvals),
			nullable(status), cmp.Or(now, s.nowSeconds()), runID)
		return err
	})
	if err != nil {
		return fmt.Errorf("set run status of approvals of run %s: %w", runID, err)
	}
	return nil
}

// ExpireApprovals implements [storage.ApprovalStore].
func (s *Store) ExpireApprovals(ctx context.Context, now int64) (int64, error) {
	now = cmp.Or(now, s.nowSeconds())
	var expired int64
	err := s.db.InTx(ctx, func(tx Conn) error {
		var err error
		expired, err = tx.Exec(ctx, fmt.Sprintf(`UPDATE %s SET status = ?, updated_at = ?
WHERE status = ? AND expires_at IS NOT NULL AND expires_at <= ?`, s.tables.approvals),
			storage.ApprovalExpired, now, storage.ApprovalPending, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("expire approvals: %w", err)
	}
	return expired, nil
}

func validApprovalStatus(status string) bool {
	switch status {
	case storage.ApprovalPending, storage.ApprovalApproved, storage.ApprovalRejected, storage.ApprovalExpired, storage.ApprovalCancelled:
		return true
	}
	return false
}

func scanApproval(row Row) (*storage.Approval, error) {
	var out storage.Approval
	var toolArgs, requirements, contextDoc, resolutionData []byte
	err := row.Scan(nullString{&out.ID}, nullString{&out.RunID}, nullString{&out.SessionID}, nullString{&out.Status},
		nullString{&out.SourceType}, nullString{&out.SourceName}, nullString{&out.ApprovalType}, nullString{&out.PauseType},
		nullString{&out.ToolName}, jsonBytes{&toolArgs}, optionalInt64{&out.ExpiresAt}, nullString{&out.AgentID}, nullString{&out.TeamID},
		nullString{&out.WorkflowID}, nullString{&out.UserID}, nullString{&out.ScheduleID}, nullString{&out.ScheduleRunID},
		jsonBytes{&requirements}, jsonBytes{&contextDoc}, jsonBytes{&resolutionData}, nullString{&out.ResolvedBy},
		optionalInt64{&out.ResolvedAt}, nullInt64{&out.CreatedAt}, nullInt64{&out.UpdatedAt}, nullString{&out.RunStatus})
	if err != nil {
		return nil, err
	}
	targets := []*map[string]any{&out.ToolArgs, &out.Context, &out.ResolutionData}
	for i, doc := range [][]byte{toolArgs, contextDoc, resolutionData} {
		if err := unmarshalObject(doc, targets[i]); err != nil {
			return nil, fmt.Errorf("approval %s: %w", out.ID, err)
		}
	}
	if len(requirements) > 0 {
		out.Requirements = json.RawMessage(requirements)
	}
	return &out, nil
}
