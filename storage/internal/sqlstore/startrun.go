package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/agnogo/agnogo/storage"
)

// StartRunIn writes a run that is starting inside tx, a write transaction
// the caller owns and commits: the run's session is created from session
// when it does not exist (an existing one is left as it is), then the run is
// upserted as by [Store.UpsertRun], scoped the same way. The caller can so
// make the run row part of a larger atomic write.
//
// A new session costs one statement more than the run itself; an existing
// one, two (the insert that finds it, and the lock of its row).
func (s *Store) StartRunIn(ctx context.Context, tx Conn, session *storage.Session, rec storage.RunRecord) (storage.RunRecord, error) {
	insertSession, err := s.sessionInsert(session)
	if err != nil {
		return rec, err
	}
	if rec.SessionID == "" {
		rec.SessionID = session.SessionID
	}
	if rec.SessionID != session.SessionID {
		return rec, storage.Invalidf("run is saved to session %s but the session given is %s", rec.SessionID, session.SessionID)
	}
	writeRun, err := s.runWrite(rec, false)
	if err != nil {
		return rec, err
	}
	owner, created, err := insertSession(ctx, tx)
	if err != nil {
		return rec, fmt.Errorf("start run %s: create session %s: %w", rec.Run.RunID, session.SessionID, err)
	}
	var knownOwner *string
	if created {
		// The insert has just locked the new row: no need to read it again.
		knownOwner = &owner
	}
	// A starting run counts nothing, but the row it replaces may have (a
	// failed run started again).
	changes := metricsChanges{}
	if rec, err = writeRun.write(ctx, tx, knownOwner, changes); err != nil {
		return rec, fmt.Errorf("start run %s: %w", rec.Run.RunID, err)
	}
	if err := s.applyMetrics(ctx, tx, changes); err != nil {
		return rec, fmt.Errorf("start run %s: %w", rec.Run.RunID, err)
	}
	return rec, nil
}

// sessionInsert validates and encodes a session and returns the statement
// that inserts it inside a transaction unless a session with its id exists;
// the statement reports whether it inserted, and the new row's owner.
func (s *Store) sessionInsert(in *storage.Session) (func(ctx context.Context, tx Conn) (owner string, created bool, err error), error) {
	args, err := s.sessionArgs(in, "create")
	if err != nil {
		return nil, err
	}
	query := fmt.Sprintf(`INSERT INTO %s (%s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session_id) DO NOTHING
RETURNING user_id`, s.tables.sessions, sessionInsertColumns)
	return func(ctx context.Context, tx Conn) (string, bool, error) {
		var owner string
		err := tx.QueryRow(ctx, query, args...).Scan(nullString{&owner})
		switch {
		case errors.Is(err, ErrNoRows):
			return "", false, nil // the session exists
		case err != nil:
			return "", false, err
		}
		return owner, true, nil
	}, nil
}
