package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

func pendingRecord(runID, sessionID, userID string) storage.RunRecord {
	return storage.RunRecord{SessionID: sessionID, UserID: userID, Run: &run.Output{
		RunID: runID, AgentID: "assistant", SessionID: sessionID, UserID: userID, Status: run.StatusPending}}
}

func TestStartRunTx(t *testing.T) {
	t.Parallel()
	store, _ := openTemp(t)
	ctx := t.Context()
	startRun := func(session *storage.Session, rec storage.RunRecord) error {
		return store.BeginFunc(ctx, func(tx pgx.Tx) error {
			_, err := store.StartRunTx(ctx, tx, session, rec)
			return err
		})
	}

	t.Run("creates a new session", func(t *testing.T) {
		require.NoError(t, startRun(&storage.Session{SessionID: "new", AgentID: "assistant", UserID: "u1"}, pendingRecord("r1", "new", "u1")))
		session, err := store.GetSession(ctx, "new", storage.GetSessionOptions{UserID: "u1"})
		require.NoError(t, err)
		require.Equal(t, "assistant", session.AgentID)
		rec, err := store.GetRun(ctx, "r1", "u1")
		require.NoError(t, err)
		require.Equal(t, run.StatusPending, rec.Run.Status)
		require.EqualValues(t, 0, *rec.RunIndex)
	})

	t.Run("keeps an existing session as it is", func(t *testing.T) {
		_, err := store.UpsertSession(ctx, &storage.Session{SessionID: "old", SessionType: storage.SessionTypeAgent, UserID: "u1",
			SessionData: map[string]any{storage.SessionNameKey: "kept"}})
		require.NoError(t, err)
		require.NoError(t, startRun(&storage.Session{SessionID: "old", UserID: "u1"}, pendingRecord("r2", "old", "u1")))
		require.NoError(t, startRun(&storage.Session{SessionID: "old", UserID: "u1"}, pendingRecord("r3", "old", "u1")))
		session, err := store.GetSession(ctx, "old", storage.GetSessionOptions{UserID: "u1"})
		require.NoError(t, err)
		require.Equal(t, "kept", session.Name())
		rec, err := store.GetRun(ctx, "r3", "u1")
		require.NoError(t, err)
		require.EqualValues(t, 1, *rec.RunIndex, "the next run_index of the session")
	})

	t.Run("refuses another user's session", func(t *testing.T) {
		err := startRun(&storage.Session{SessionID: "old", UserID: "u2"}, pendingRecord("r4", "old", "u2"))
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = store.GetRun(ctx, "r4", "")
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("writes nothing when the transaction rolls back", func(t *testing.T) {
		failure := errors.New("the caller's own statement failed")
		err := store.BeginFunc(ctx, func(tx pgx.Tx) error {
			if _, err := store.StartRunTx(ctx, tx, &storage.Session{SessionID: "gone", UserID: "u1"}, pendingRecord("r5", "gone", "u1")); err != nil {
				return err
			}
			return failure
		})
		require.ErrorIs(t, err, failure)
		require.Equal(t, failure, err, "the caller's error comes back unwrapped")
		_, err = store.GetRun(ctx, "r5", "")
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = store.GetSession(ctx, "gone", storage.GetSessionOptions{})
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("validates the run", func(t *testing.T) {
		err := startRun(&storage.Session{SessionID: "new"}, pendingRecord("r6", "other", ""))
		require.ErrorIs(t, err, storage.ErrInvalid)
		err = startRun(&storage.Session{SessionID: "new"}, storage.RunRecord{SessionID: "new"})
		require.ErrorIs(t, err, storage.ErrInvalid)
	})

	t.Run("honours a cancelled context", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		err := store.BeginFunc(cancelled, func(pgx.Tx) error { return nil })
		require.ErrorIs(t, err, context.Canceled)
	})
}
