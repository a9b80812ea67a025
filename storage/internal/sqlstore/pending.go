package sqlstore

import (
	"context"
	"fmt"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// RecordPendingRun implements [storage.RunStore]: the session insert and the
// run insert in one transaction. A new session costs two statements; an
// existing one three (the insert that finds it, the lock of its row that
// also reads its owner, and the run). Two acceptances racing on a new
// session create it once: on Postgres the second insert waits for the
// first to commit and then finds the row.
func (s *Store) RecordPendingRun(ctx context.Context, session *storage.Session, rec storage.RunRecord) error {
	if rec.Run == nil || rec.Run.RunID == "" {
		return storage.Invalidf("run_id is required")
	}
	if rec.Run.Status != run.StatusPending {
		return storage.Invalidf("run %s: a pending run's status is %s, not %q", rec.Run.RunID, run.StatusPending, rec.Run.Status)
	}
	insertSession, err := s.sessionInsert(session)
	if err != nil {
		return err
	}
	if rec.SessionID == "" {
		rec.SessionID = session.SessionID
	}
	if rec.SessionID != session.SessionID {
		return storage.Invalidf("run %s is recorded in session %s but the session given is %s", rec.Run.RunID, rec.SessionID, session.SessionID)
	}
	switch {
	case rec.UserID == "":
		rec.UserID = session.UserID
	case session.UserID != "" && session.UserID != rec.UserID:
		return storage.Invalidf("run %s belongs to user %s but its session to user %s", rec.Run.RunID, rec.UserID, session.UserID)
	}
	insertRun, err := s.runWrite(rec, true)
	if err != nil {
		return err
	}
	err = s.db.InTx(ctx, func(tx Conn) error {
		owner, created, err := insertSession(ctx, tx)
		if err != nil {
			return fmt.Errorf("create session %s: %w", session.SessionID, err)
		}
		var knownOwner *string
		if created {
			// The insert has just locked the new row: no need to read it again.
			knownOwner = &owner
		}
		// A PENDING run counts nothing in the daily metrics.
		_, err = insertRun.write(ctx, tx, knownOwner, metricsChanges{})
		return err
	})
	if err != nil {
		return fmt.Errorf("record pending run %s: %w", rec.Run.RunID, err)
	}
	return nil
}
