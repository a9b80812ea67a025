package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agnogo/agnogo/storage"
)

const transcriptKeyCond = "framework = ? AND project_key = ? AND session_id = ? AND subpath = ?"

func transcriptKeyArgs(key storage.TranscriptKey) []any {
	return []any{key.Framework, key.ProjectKey, key.SessionID, key.Subpath}
}

func validTranscriptKey(key storage.TranscriptKey) error {
	if key.Framework == "" || key.ProjectKey == "" || key.SessionID == "" {
		return storage.Invalidf("transcript key needs framework, project_key and session_id")
	}
	return nil
}

// ownedSessionsCond narrows transcript rows to sessions of userID.
func (s *Store) ownedSessionsCond() string {
	return fmt.Sprintf("agno_session_id IN (SELECT session_id FROM %s WHERE user_id = ?)", s.tables.sessions)
}

// AppendTranscript implements [storage.TranscriptStore]. Positions are
// allocated inside the write transaction; on Postgres an advisory lock on the
// transcript key keeps concurrent appenders from taking the same position.
func (s *Store) AppendTranscript(ctx context.Context, key storage.TranscriptKey, agnoSessionID, userID string, entries []json.RawMessage) ([]storage.TranscriptEntry, error) {
	if err := validTranscriptKey(key); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, nil
	}
	stored := make([]storage.TranscriptEntry, len(entries))
	createdAt := s.now().UnixMilli()
	for i, entry := range entries {
		var fields struct {
			UUID string `json:"uuid"`
		}
		if !json.Valid(entry) {
			return nil, storage.Invalidf("transcript entry %d is not valid JSON", i)
		}
		_ = json.Unmarshal(entry, &fields) // not every entry is an object; those get a generated id
		stored[i] = storage.TranscriptEntry{EntryID: fields.UUID, Entry: append(json.RawMessage(nil), entry...), AgnoSessionID: agnoSessionID, CreatedAt: createdAt}
		if stored[i].EntryID == "" {
			stored[i].EntryID = s.newID()
		}
	}
	err := s.db.InTx(ctx, func(tx Conn) error {
		if userID != "" {
			if err := s.checkTranscriptOwner(ctx, tx, key, agnoSessionID, userID); err != nil {
				return err
			}
		}
		if s.dialect == Postgres {
			lockKey := fmt.Sprintf("%s\n%s\n%s\n%s\n%s", s.tables.transcripts, key.Framework, key.ProjectKey, key.SessionID, key.Subpath)
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", lockKey); err != nil {
				return err
			}
		}
		var last int64
		if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT COALESCE(MAX(position), 0) FROM %s WHERE %s", s.tables.transcripts, transcriptKeyCond), transcriptKeyArgs(key)...).Scan(&last); err != nil {
			return err
		}
		insert := fmt.Sprintf(`INSERT INTO %s (framework, project_key, session_id, subpath, position, entry_id, entry, agno_session_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, s.tables.transcripts)
		for i := range stored {
			stored[i].Position = last + int64(i) + 1
			args := append(transcriptKeyArgs(key), stored[i].Position, stored[i].EntryID, string(storableJSON([]byte(storableText(string(stored[i].Entry))))), nullable(agnoSessionID), createdAt)
			if _, err := tx.Exec(ctx, insert, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("append transcript %s/%s: %w", key.SessionID, key.Subpath, err)
	}
	return stored, nil
}

// checkTranscriptOwner refuses a scoped append to a session, or to a
// transcript, that belongs to another user.
func (s *Store) checkTranscriptOwner(ctx context.Context, tx Conn, key storage.TranscriptKey, agnoSessionID, userID string) error {
	if agnoSessionID == "" {
		return storage.Invalidf("a user-scoped transcript append needs the owning session id")
	}
	var owner string
	err := tx.QueryRow(ctx, fmt.Sprintf("SELECT user_id FROM %s WHERE session_id = ?", s.tables.sessions), agnoSessionID).Scan(nullString{&owner})
	if errors.Is(err, ErrNoRows) || (err == nil && owner != userID) {
		return notFound("session", agnoSessionID)
	}
	if err != nil {
		return err
	}
	var foreign int
	err = tx.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s AND (agno_session_id IS NULL OR agno_session_id <> ?)", s.tables.transcripts, transcriptKeyCond),
		append(transcriptKeyArgs(key), agnoSessionID)...).Scan(&foreign)
	if err != nil {
		return err
	}
	if foreign > 0 {
		return notFound("transcript", key.SessionID)
	}
	return nil
}

// ReadTranscript implements [storage.TranscriptStore].
func (s *Store) ReadTranscript(ctx context.Context, key storage.TranscriptKey, userID string, afterPosition int64) ([]storage.TranscriptEntry, error) {
	if err := validTranscriptKey(key); err != nil {
		return nil, err
	}
	query := fmt.Sprintf("SELECT position, entry_id, entry, agno_session_id, created_at FROM %s WHERE %s AND position > ?", s.tables.transcripts, transcriptKeyCond)
	args := append(transcriptKeyArgs(key), afterPosition)
	if userID != "" {
		query += " AND " + s.ownedSessionsCond()
		args = append(args, userID)
	}
	entries, err := queryAll(ctx, s.db.Reader(), scanTranscriptEntry, query+" ORDER BY position ASC", args...)
	if err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", key.SessionID, err)
	}
	return entries, nil
}

func scanTranscriptEntry(row Row) (storage.TranscriptEntry, error) {
	var e storage.TranscriptEntry
	var entry string
	err := row.Scan(&e.Position, &e.EntryID, &entry, nullString{&e.AgnoSessionID}, &e.CreatedAt)
	e.Entry = json.RawMessage(entry)
	return e, err
}

// ListTranscriptSessions implements [storage.TranscriptStore].
func (s *Store) ListTranscriptSessions(ctx context.Context, framework, projectKey, userID string) ([]string, error) {
	query := fmt.Sprintf("SELECT DISTINCT session_id FROM %s WHERE framework = ? AND project_key = ?", s.tables.transcripts)
	args := []any{framework, projectKey}
	if userID != "" {
		query += " AND " + s.ownedSessionsCond()
		args = append(args, userID)
	}
	return queryStringsOn(ctx, s.db.Reader(), query+" ORDER BY session_id", args...)
}

// ListTranscriptSubpaths implements [storage.TranscriptStore].
func (s *Store) ListTranscriptSubpaths(ctx context.Context, framework, projectKey, sessionID, userID string) ([]string, error) {
	query := fmt.Sprintf("SELECT DISTINCT subpath FROM %s WHERE framework = ? AND project_key = ? AND session_id = ? AND subpath <> ''", s.tables.transcripts)
	args := []any{framework, projectKey, sessionID}
	if userID != "" {
		query += " AND " + s.ownedSessionsCond()
		args = append(args, userID)
	}
	return queryStringsOn(ctx, s.db.Reader(), query+" ORDER BY subpath", args...)
}

// DeleteTranscript implements [storage.TranscriptStore].
func (s *Store) DeleteTranscript(ctx context.Context, framework, projectKey, sessionID, userID string) error {
	query := fmt.Sprintf("DELETE FROM %s WHERE framework = ? AND project_key = ? AND session_id = ?", s.tables.transcripts)
	args := []any{framework, projectKey, sessionID}
	if userID != "" {
		query += " AND " + s.ownedSessionsCond()
		args = append(args, userID)
	}
	err := s.db.InTx(ctx, func(tx Conn) error {
		_, err := tx.Exec(ctx, query, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete transcript %s: %w", sessionID, err)
	}
	return nil
}
