package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/agnogo/agnogo/storage"
)

// legacyBatchSize is how many sessions the legacy-runs import reads at a
// time, bounding memory on large databases.
const legacyBatchSize = 50

// importLegacyRuns copies the runs that Agno 2.x embedded in the sessions'
// runs column into agno_runs, one row each, with their position in the blob as
// run_index. A run already in agno_runs is newer than the blob and is left
// alone, so the import can run any number of times. The column itself is kept.
func (s *Store) importLegacyRuns(ctx context.Context, tx Conn) (int, error) {
	cols, err := s.columns(ctx, tx, SessionsTable)
	if err != nil || !cols["runs"] {
		return 0, err
	}
	insert := fmt.Sprintf(`INSERT INTO %s (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, status, parent_run_id, run_index, run_data, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`, s.tables.runs)
	imported := 0
	for session, err := range s.legacySessions(ctx, tx) {
		if err != nil {
			return imported, err
		}
		for index, raw := range session.runs {
			row, ok, err := legacyRunRow(session, index, raw)
			if err != nil {
				return imported, fmt.Errorf("session %s run %d: %w", session.id, index, err)
			}
			if !ok {
				continue
			}
			n, err := tx.Exec(ctx, insert, row...)
			if err != nil {
				return imported, fmt.Errorf("session %s run %d: %w", session.id, index, err)
			}
			imported += int(n)
		}
	}
	return imported, nil
}

// legacySessions yields every session that still holds legacy runs, reading
// them in batches (keyset paging on session_id) to bound memory.
func (s *Store) legacySessions(ctx context.Context, tx Conn) iter.Seq2[legacySession, error] {
	query := fmt.Sprintf(`SELECT session_id, session_type, user_id, created_at, runs FROM %s
WHERE runs IS NOT NULL AND session_id > ? ORDER BY session_id LIMIT %d`, s.tables.sessions, legacyBatchSize)
	return func(yield func(legacySession, error) bool) {
		after := ""
		for {
			batch, err := queryAll(ctx, tx, scanLegacySession, query, after)
			if err != nil {
				yield(legacySession{}, err)
				return
			}
			for _, session := range batch {
				if !yield(session, nil) {
					return
				}
			}
			if len(batch) < legacyBatchSize {
				return
			}
			after = batch[len(batch)-1].id
		}
	}
}

type legacySession struct {
	id, sessionType, userID string
	createdAt               int64
	runs                    []json.RawMessage
}

func scanLegacySession(row Row) (legacySession, error) {
	var session legacySession
	var blob []byte
	if err := row.Scan(&session.id, nullString{&session.sessionType}, nullString{&session.userID}, nullInt64{&session.createdAt}, jsonBytes{&blob}); err != nil {
		return session, err
	}
	if len(blob) > 0 && string(blob) != "null" {
		if err := json.Unmarshal(blob, &session.runs); err != nil {
			return session, fmt.Errorf("session %s: legacy runs column is not a JSON array: %w", session.id, err)
		}
	}
	return session, nil
}

// legacyRunRow builds the insert arguments of one legacy run. The run's JSON
// is stored as written, so fields this build does not model survive.
func legacyRunRow(session legacySession, index int, raw json.RawMessage) ([]any, bool, error) {
	var fields struct {
		RunID       string `json:"run_id"`
		AgentID     string `json:"agent_id"`
		TeamID      string `json:"team_id"`
		WorkflowID  string `json:"workflow_id"`
		UserID      string `json:"user_id"`
		Status      string `json:"status"`
		ParentRunID string `json:"parent_run_id"`
		CreatedAt   int64  `json:"created_at"`
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, false, fmt.Errorf("decode legacy run: %w", err)
	}
	if fields.RunID == "" {
		return nil, false, nil // a run without an id cannot be addressed; Agno never wrote one
	}
	runType := storage.RunTypeAgent
	switch {
	case fields.ParentRunID != "" && fields.AgentID != "":
		// a team member's run inside a team session
	case session.sessionType == string(storage.SessionTypeTeam):
		runType = storage.RunTypeTeam
	case session.sessionType == string(storage.SessionTypeWorkflow):
		runType = storage.RunTypeWorkflow
	}
	userID := fields.UserID
	if userID == "" {
		userID = session.userID
	}
	createdAt := fields.CreatedAt
	if createdAt == 0 {
		createdAt = session.createdAt
	}
	return []any{fields.RunID, session.id, string(runType), nullable(fields.AgentID), nullable(fields.TeamID), nullable(fields.WorkflowID),
		nullable(userID), nullable(fields.Status), nullable(fields.ParentRunID), int64(index), string(raw), createdAt, createdAt}, true, nil
}
