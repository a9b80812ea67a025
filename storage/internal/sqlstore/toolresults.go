package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/agnogo/agnogo/storage"
)

const toolResultColumns = "result_id, namespace, path, session_id, run_id, tool_call_id, tool_name, args_hash, content_type, size_bytes, line_count, preview, user_id, created_at, expires_at, content"

// PutToolResult implements [storage.ToolResultStore].
func (s *Store) PutToolResult(ctx context.Context, r *storage.ToolResult) error {
	if r == nil || r.ResultID == "" || r.Namespace == "" || r.Path == "" {
		return storage.Invalidf("a tool result needs result_id, namespace and path")
	}
	createdAt := r.CreatedAt
	if createdAt == 0 {
		createdAt = s.nowSeconds()
	}
	var expiresAt any
	if r.ExpiresAt != 0 {
		expiresAt = r.ExpiresAt
	}
	query := fmt.Sprintf(`INSERT INTO %s (%s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (result_id) DO UPDATE SET namespace = excluded.namespace, path = excluded.path, session_id = excluded.session_id,
	run_id = excluded.run_id, tool_call_id = excluded.tool_call_id, tool_name = excluded.tool_name, args_hash = excluded.args_hash,
	content_type = excluded.content_type, size_bytes = excluded.size_bytes, line_count = excluded.line_count, preview = excluded.preview,
	user_id = excluded.user_id, created_at = excluded.created_at, expires_at = excluded.expires_at, content = excluded.content`, s.tables.toolResults, toolResultColumns)
	err := s.db.InTx(ctx, func(tx Conn) error {
		_, err := tx.Exec(ctx, query, r.ResultID, r.Namespace, r.Path, nullable(r.SessionID), nullable(r.RunID), nullable(r.ToolCallID),
			nullable(r.ToolName), nullable(r.ArgsHash), nullable(r.ContentType), r.SizeBytes, r.LineCount, nullable(storableText(r.Preview)),
			nullable(r.UserID), createdAt, expiresAt, storableText(r.Content))
		return err
	})
	if err != nil {
		return fmt.Errorf("put tool result %s: %w", r.ResultID, err)
	}
	return nil
}

// GetToolResult implements [storage.ToolResultStore]. An expired result is
// reported as not found.
func (s *Store) GetToolResult(ctx context.Context, resultID, userID string) (*storage.ToolResult, error) {
	where, args := userScope("user_id", userID, "result_id = ?", resultID)
	where += " AND (expires_at IS NULL OR expires_at > ?)"
	args = append(args, s.nowSeconds())
	var r storage.ToolResult
	err := s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", toolResultColumns, s.tables.toolResults, where), args...).Scan(
		&r.ResultID, &r.Namespace, &r.Path, nullString{&r.SessionID}, nullString{&r.RunID}, nullString{&r.ToolCallID}, nullString{&r.ToolName},
		nullString{&r.ArgsHash}, nullString{&r.ContentType}, &r.SizeBytes, &r.LineCount, nullString{&r.Preview}, nullString{&r.UserID},
		&r.CreatedAt, nullInt64{&r.ExpiresAt}, &r.Content)
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("tool result", resultID)
	}
	if err != nil {
		return nil, fmt.Errorf("get tool result %s: %w", resultID, err)
	}
	return &r, nil
}
