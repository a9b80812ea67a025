package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/storage"
)

const memoryColumns = "memory_id, memory, input, agent_id, team_id, user_id, topics, feedback, created_at, updated_at"

// UpsertMemory implements [storage.MemoryStore].
func (s *Store) UpsertMemory(ctx context.Context, m *storage.Memory) (*storage.Memory, error) {
	if m == nil || m.MemoryID == "" {
		return nil, storage.Invalidf("memory_id is required")
	}
	if strings.TrimSpace(m.Memory) == "" {
		return nil, storage.Invalidf("memory %s: the memory text is empty", m.MemoryID)
	}
	memoryDoc, _ := encodeJSON(m.Memory) // a string always encodes
	var topicsDoc any
	if m.Topics != nil {
		doc, _ := encodeJSON(m.Topics)
		topicsDoc = string(doc)
	}
	now := s.nowSeconds()
	createdAt, updatedAt := m.CreatedAt, m.UpdatedAt
	if createdAt == 0 {
		createdAt = now
	}
	if updatedAt == 0 {
		updatedAt = now
	}
	query := fmt.Sprintf(`INSERT INTO %[1]s (%[2]s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (memory_id) DO UPDATE SET
	memory = excluded.memory, input = excluded.input, agent_id = excluded.agent_id, team_id = excluded.team_id,
	user_id = COALESCE(excluded.user_id, %[1]s.user_id), topics = excluded.topics, feedback = excluded.feedback,
	updated_at = excluded.updated_at
WHERE excluded.user_id IS NULL OR %[1]s.user_id = excluded.user_id
RETURNING %[2]s`, s.tables.memories, memoryColumns)
	var out *storage.Memory
	err := s.db.InTx(ctx, func(tx Conn) error {
		var err error
		out, err = scanMemory(tx.QueryRow(ctx, query, m.MemoryID, string(memoryDoc), nullable(m.Input), nullable(m.AgentID), nullable(m.TeamID),
			nullable(m.UserID), topicsDoc, nullable(m.Feedback), createdAt, updatedAt))
		return err
	})
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("memory", m.MemoryID)
	}
	if err != nil {
		return nil, fmt.Errorf("upsert memory %s: %w", m.MemoryID, err)
	}
	return out, nil
}

// GetMemory implements [storage.MemoryStore].
func (s *Store) GetMemory(ctx context.Context, memoryID, userID string) (*storage.Memory, error) {
	where, args := userScope("user_id", userID, "memory_id = ?", memoryID)
	m, err := scanMemory(s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", memoryColumns, s.tables.memories, where), args...))
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("memory", memoryID)
	}
	if err != nil {
		return nil, fmt.Errorf("get memory %s: %w", memoryID, err)
	}
	return m, nil
}

// ListMemories implements [storage.MemoryStore].
func (s *Store) ListMemories(ctx context.Context, q storage.MemoryQuery) ([]*storage.Memory, int, error) {
	dir, err := sortDirection(q.SortOrder)
	if err != nil {
		return nil, 0, err
	}
	sortBy := q.SortBy
	switch sortBy {
	case "":
		sortBy = "updated_at"
	case "created_at", "updated_at", "memory_id":
	default:
		return nil, 0, storage.Invalidf("sort_by %q: want created_at, updated_at or memory_id", q.SortBy)
	}
	limitClause, err := pageClause(q.Page)
	if err != nil {
		return nil, 0, err
	}
	var conds []string
	var args []any
	add := func(cond string, arg ...any) { conds = append(conds, cond); args = append(args, arg...) }
	if q.UserID != "" {
		add("user_id = ?", q.UserID)
	}
	if q.AgentID != "" {
		add("agent_id = ?", q.AgentID)
	}
	if q.TeamID != "" {
		add("team_id = ?", q.TeamID)
	}
	if len(q.Topics) > 0 {
		marks := make([]string, len(q.Topics))
		for i, topic := range q.Topics {
			marks[i] = "?"
			args = append(args, topic)
		}
		conds = append(conds, fmt.Sprintf("EXISTS (SELECT 1 FROM %s WHERE value IN (%s))", s.dialect.jsonArrayValues("topics"), strings.Join(marks, ", ")))
	}
	if q.Search != "" {
		add(fmt.Sprintf(`LOWER(%s) LIKE ? ESCAPE '\'`, s.dialect.jsonScalarText("memory")), likePattern(q.Search))
	}
	memories, total, err := listPage(ctx, s.db.Reader(), listing{
		table: s.tables.memories, columns: memoryColumns, where: whereClause(conds), args: args,
		order: fmt.Sprintf("%s %s, memory_id %s", sortBy, dir, dir), limit: limitClause,
	}, scanMemory)
	if err != nil {
		return nil, 0, fmt.Errorf("list memories: %w", err)
	}
	return memories, total, nil
}

// DeleteMemories implements [storage.MemoryStore].
func (s *Store) DeleteMemories(ctx context.Context, memoryIDs []string, userID string) (int, error) {
	if len(memoryIDs) == 0 {
		return 0, nil
	}
	marks := make([]string, len(memoryIDs))
	args := make([]any, 0, len(memoryIDs)+1)
	for i, id := range memoryIDs {
		marks[i] = "?"
		args = append(args, id)
	}
	query := fmt.Sprintf("DELETE FROM %s WHERE memory_id IN (%s)", s.tables.memories, strings.Join(marks, ", "))
	if userID != "" {
		query += " AND user_id = ?"
		args = append(args, userID)
	}
	var deleted int64
	err := s.db.InTx(ctx, func(tx Conn) error {
		var err error
		deleted, err = tx.Exec(ctx, query, args...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete memories: %w", err)
	}
	return int(deleted), nil
}

func scanMemory(row Row) (*storage.Memory, error) {
	var (
		m                    storage.Memory
		memoryDoc, topicsDoc []byte
	)
	err := row.Scan(&m.MemoryID, jsonBytes{&memoryDoc}, nullString{&m.Input}, nullString{&m.AgentID}, nullString{&m.TeamID}, nullString{&m.UserID},
		jsonBytes{&topicsDoc}, nullString{&m.Feedback}, nullInt64{&m.CreatedAt}, nullInt64{&m.UpdatedAt})
	if err != nil {
		return nil, err
	}
	// Agno stores the memory as a JSON string; rows written by other tools
	// may hold an object, which is kept as its JSON text.
	if err := json.Unmarshal(memoryDoc, &m.Memory); err != nil {
		m.Memory = string(memoryDoc)
	}
	if len(topicsDoc) > 0 {
		if err := json.Unmarshal(topicsDoc, &m.Topics); err != nil {
			return nil, fmt.Errorf("memory %s: decode topics: %w", m.MemoryID, err)
		}
	}
	return &m, nil
}
