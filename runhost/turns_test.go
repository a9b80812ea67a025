package runhost_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

func TestTurnsOnePerSessionInProcess(t *testing.T) {
	turns := runhost.NewTurns(runhost.TurnsConfig{})
	release, err := turns.Begin(t.Context(), "s1", "r1", runhost.BeginOptions{})
	require.NoError(t, err)

	_, err = turns.Begin(t.Context(), "s1", "r2", runhost.BeginOptions{})
	require.ErrorIs(t, err, run.ErrSessionBusy)
	var busy *run.SessionBusyError
	require.ErrorAs(t, err, &busy)
	require.Equal(t, "r1", busy.RunID)
	require.Equal(t, "Session s1 already has run r1 in progress", err.Error())

	other, err := turns.Begin(t.Context(), "s2", "r3", runhost.BeginOptions{})
	require.NoError(t, err, "other sessions are free")
	other()

	release()
	release() // releasing twice is harmless
	again, err := turns.Begin(t.Context(), "s1", "r2", runhost.BeginOptions{})
	require.NoError(t, err, "a finished turn frees the session")
	again()
}

// saveRun stores a run of session s with a status.
func saveRun(t *testing.T, store storage.Store, runID string, status run.Status) {
	t.Helper()
	_, _, err := store.SaveRun(t.Context(), &storage.Session{SessionID: "s", SessionType: storage.SessionTypeAgent, AgentID: "claude"},
		storage.RunRecord{SessionID: "s", Run: &run.Output{RunID: runID, AgentID: "claude", SessionID: "s", Status: status}})
	require.NoError(t, err)
}

func TestTurnsSeeRunsOfOtherReplicas(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "runs.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	now := time.Now()
	turns := runhost.NewTurns(runhost.TurnsConfig{Store: store, Now: func() time.Time { return now }})

	saveRun(t, store, "done", run.StatusCompleted)
	saveRun(t, store, "stopped", run.StatusCancelled)
	saveRun(t, store, "failed", run.StatusError)
	release, err := turns.Begin(t.Context(), "s", "mine", runhost.BeginOptions{})
	require.NoError(t, err, "finished, cancelled and failed runs leave the session free")
	release()

	saveRun(t, store, "elsewhere", run.StatusRunning)
	_, err = turns.Begin(t.Context(), "s", "mine", runhost.BeginOptions{})
	var busy *run.SessionBusyError
	require.ErrorAs(t, err, &busy, "a RUNNING row written by another replica")
	require.Equal(t, "elsewhere", busy.RunID)

	saveRun(t, store, "elsewhere", run.StatusCompleted)
	saveRun(t, store, "queued", run.StatusPending)
	_, err = turns.Begin(t.Context(), "s", "mine", runhost.BeginOptions{})
	require.ErrorIs(t, err, run.ErrSessionBusy, "a PENDING run is in flight too")
	release, err = turns.Begin(t.Context(), "s", "mine", runhost.BeginOptions{QueuedBehind: true})
	require.NoError(t, err, "runs queued behind an elected run do not block it")
	release()

	saveRun(t, store, "queued", run.StatusCompleted)
	saveRun(t, store, "mine", run.StatusRunning)
	release, err = turns.Begin(t.Context(), "s", "mine", runhost.BeginOptions{})
	require.NoError(t, err, "a run's own row does not block it (a retry, or a run taken over)")
	release()

	saveRun(t, store, "crashed", run.StatusRunning)
	now = now.Add(runhost.DefaultStaleAfter + time.Minute)
	saveRun(t, store, "mine", run.StatusCompleted)
	release, err = turns.Begin(t.Context(), "s", "next", runhost.BeginOptions{})
	require.NoError(t, err, "a RUNNING row not updated for longer than StaleAfter is a crashed turn's")
	release()
}

// A turn whose run is final already (cancelled, its row written) but whose
// process still winds down does not make the next turn busy: the next one
// waits until it frees the session. One still running does.
func TestTurnsWaitForAnEndedTurnToWindDown(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "runs.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	turns := runhost.NewTurns(runhost.TurnsConfig{Store: store})

	saveRun(t, store, "first", run.StatusRunning)
	release, err := turns.Begin(t.Context(), "s", "first", runhost.BeginOptions{})
	require.NoError(t, err)
	_, err = turns.Begin(t.Context(), "s", "second", runhost.BeginOptions{})
	require.ErrorIs(t, err, run.ErrSessionBusy, "a turn still running makes the session busy at once")

	saveRun(t, store, "first", run.StatusCancelled) // the client sees it end…
	began := make(chan error, 1)
	go func() {
		next, err := turns.Begin(t.Context(), "s", "second", runhost.BeginOptions{})
		if err == nil {
			next()
		}
		began <- err
	}()
	select {
	case err := <-began:
		t.Fatalf("the next turn began before the first freed the session: %v", err)
	default:
	}
	release() // …and its process is done winding down
	require.NoError(t, <-began, "the next turn takes the session")
}
