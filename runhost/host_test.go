package runhost_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// scriptedTurn is a runner kind reduced to its work: each attempt emits a
// delta and returns the next scripted outcome.
type scriptedTurn struct {
	outcomes []error
	answer   string
	attempts atomic.Int32
	retried  atomic.Int32
	// during runs inside an attempt, before it returns.
	during func(ctx context.Context, r *runhost.Run)
}

func (s *scriptedTurn) Attempt(ctx context.Context, r *runhost.Run, n int) error {
	s.attempts.Add(1)
	r.Emit(&run.RunContent{Content: fmt.Sprintf("attempt %d", n)})
	if s.during != nil {
		s.during(ctx, r)
	}
	if n <= len(s.outcomes) && s.outcomes[n-1] != nil {
		return s.outcomes[n-1]
	}
	r.Lock()
	r.Output().Content = s.answer
	r.Unlock()
	return nil
}

func (s *scriptedTurn) Retry() { s.retried.Add(1) }

func openStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "runs.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return store
}

// opener opens run r1 of session s with turn and persist set.
func opener(turn runhost.Turn, tune ...func(*runhost.Spec)) runhost.Opener {
	return func(context.Context, run.Execution) (*runhost.Spec, error) {
		out := &run.Output{RunID: "r1", AgentID: "a", AgentName: "A", SessionID: "s", Status: run.StatusRunning,
			Input: &run.Input{InputContent: "hi"}, Metrics: &run.RunMetrics{}}
		spec := &runhost.Spec{Output: out, Session: &storage.Session{SessionID: "s", SessionType: storage.SessionTypeAgent, AgentID: "a"},
			First: &run.RunStarted{}, Turn: turn, Persist: true}
		for _, f := range tune {
			f(spec)
		}
		return spec, nil
	}
}

func storedRun(t *testing.T, store storage.Store, runID string) *run.Output {
	t.Helper()
	rec, err := store.GetRun(context.WithoutCancel(t.Context()), runID, "")
	require.NoError(t, err)
	return rec.Run
}

func eventNames(t *testing.T, events []run.Event) []string {
	t.Helper()
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = e.EventName()
	}
	return names
}

// TestHostSavesTheRunBeforeItsTerminalEvent: whoever reads the run as soon
// as it receives RunCompleted — or RunError — finds the final row; while
// the run streams, the row is RUNNING.
func TestHostSavesTheRunBeforeItsTerminalEvent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome error
		status  run.Status
		event   string
	}{
		{"completed", nil, run.StatusCompleted, run.EventRunCompleted},
		{"failed", errors.New("boom"), run.StatusError, run.EventRunError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t)
			host := runhost.New(runhost.Config{Store: store})
			turn := &scriptedTurn{outcomes: []error{tc.outcome}, answer: "done"}
			var seen []run.Event
			for event, err := range host.Execute(t.Context(), run.Execution{}, opener(turn)) {
				require.NoError(t, err)
				seen = append(seen, event)
				switch event.EventName() {
				case run.EventRunStarted, run.EventRunContent:
					require.Equal(t, run.StatusRunning, storedRun(t, store, "r1").Status, "RUNNING while it streams")
				case tc.event:
					stored := storedRun(t, store, "r1")
					require.Equal(t, tc.status, stored.Status, "final before the terminal event goes out")
				}
			}
			require.Equal(t, []string{run.EventRunStarted, run.EventRunContent, tc.event}, eventNames(t, seen))
			for _, e := range seen {
				require.Equal(t, "r1", e.Base().RunID, "events carry the run's identity")
				require.Equal(t, "a", e.Base().AgentID)
			}
		})
	}
}

// TestHostRetriesWhatAnotherAttemptMayFix: a retryable failure is tried
// again with RunRetry and recorded in metadata.attempts; a permanent one is
// not.
func TestHostRetriesWhatAnotherAttemptMayFix(t *testing.T) {
	store := openStore(t)
	host := runhost.New(runhost.Config{Store: store, Sleep: func(context.Context, time.Duration) error { return nil }})
	transient := &run.ClassError{Class: run.ClassServer, Err: errors.New("overloaded")}
	turn := &scriptedTurn{outcomes: []error{transient}, answer: "second time lucky"}
	retry := func(s *runhost.Spec) { s.Retry = runhost.Retry{Retries: 2, Delay: time.Second, Exponential: true} }
	var names []string
	var retryEvent *run.RunRetry
	for event, err := range host.Execute(t.Context(), run.Execution{}, opener(turn, retry)) {
		require.NoError(t, err)
		names = append(names, event.EventName())
		if r, ok := event.(*run.RunRetry); ok {
			retryEvent = r
		}
	}
	require.Equal(t, []string{run.EventRunStarted, run.EventRunContent, run.EventRunRetry, run.EventRunContent, run.EventRunCompleted}, names)
	require.Equal(t, 2, retryEvent.Attempt)
	require.Equal(t, 3, retryEvent.MaxAttempts)
	require.Equal(t, int32(1), turn.retried.Load(), "the turn prepared its second attempt")
	stored := storedRun(t, store, "r1")
	require.Equal(t, run.StatusCompleted, stored.Status)
	require.Equal(t, "second time lucky", stored.Content)
	attempts, err := stored.Attempts()
	require.NoError(t, err)
	require.Len(t, attempts, 2)
	require.NotNil(t, attempts[0].Error)
	require.Contains(t, *attempts[0].Error, "overloaded")
	require.Nil(t, attempts[1].Error)

	permanent := &scriptedTurn{outcomes: []error{&run.ClassError{Class: run.ClassAuthentication, Err: errors.New("bad key")}}}
	out, err := runhost.New(runhost.Config{Store: openStore(t)}).Collect(t.Context(), run.Execution{}, opener(permanent, retry))
	require.Error(t, err)
	require.Equal(t, run.StatusError, out.Status)
	require.Equal(t, int32(1), permanent.attempts.Load(), "a permanent failure is not tried again")
}

// TestHostDeferredFailure: under an execution whose caller settles
// failures, a failed run still ends its stream with RunError but its row
// stays RUNNING; a completed run is stored as usual.
func TestHostDeferredFailure(t *testing.T) {
	store := openStore(t)
	host := runhost.New(runhost.Config{Store: store})
	turn := &scriptedTurn{outcomes: []error{errors.New("upstream down")}}
	var last run.Event
	for event, err := range host.Execute(t.Context(), run.Execution{DeferFailure: true}, opener(turn)) {
		require.NoError(t, err)
		last = event
	}
	require.IsType(t, &run.RunError{}, last)
	stored := storedRun(t, store, "r1")
	require.Equal(t, run.StatusRunning, stored.Status, "the caller settles a deferred failure")
	require.Equal(t, "upstream down", stored.Content)
}

// TestHostTimeLimit: an execution's time limit ends the run ERROR with
// error_type run_timeout, not CANCELLED.
func TestHostTimeLimit(t *testing.T) {
	store := openStore(t)
	host := runhost.New(runhost.Config{Store: store})
	turn := &scriptedTurn{during: func(ctx context.Context, _ *runhost.Run) { <-ctx.Done() }}
	turn.outcomes = []error{context.Canceled}
	var last run.Event
	for event, err := range host.Execute(t.Context(), run.Execution{TimeLimit: 20 * time.Millisecond}, opener(turn)) {
		require.NoError(t, err)
		last = event
	}
	failed, ok := last.(*run.RunError)
	require.True(t, ok, "got %T", last)
	require.Equal(t, "run_timeout", failed.ErrorType)
	require.Equal(t, run.StatusError, storedRun(t, store, "r1").Status)
}

// TestHostInterrupted: a run stopped by its process shutting down sends no
// terminal event, keeps its row RUNNING with its progress, and ends its
// stream with run.ErrInterrupted.
func TestHostInterrupted(t *testing.T) {
	store := openStore(t)
	host := runhost.New(runhost.Config{Store: store})
	ctx, cancel := context.WithCancelCause(t.Context())
	turn := &scriptedTurn{during: func(ctx context.Context, _ *runhost.Run) {
		run.Interrupt(cancel)
		<-ctx.Done()
	}}
	turn.outcomes = []error{context.Canceled}
	var names []string
	var end error
	for event, err := range host.Execute(ctx, run.Execution{}, opener(turn)) {
		if err != nil {
			end = err
			continue
		}
		names = append(names, event.EventName())
	}
	require.ErrorIs(t, end, run.ErrInterrupted)
	require.Equal(t, []string{run.EventRunStarted, run.EventRunContent}, names, "no terminal event")
	require.Equal(t, run.StatusRunning, storedRun(t, store, "r1").Status)
}

// TestHostStartError: a run its kind refuses to open yields only the error
// and writes nothing.
func TestHostStartError(t *testing.T) {
	store := openStore(t)
	host := runhost.New(runhost.Config{Store: store})
	refused := errors.New("session belongs to someone else")
	var events int
	var got error
	for event, err := range host.Execute(t.Context(), run.Execution{}, func(context.Context, run.Execution) (*runhost.Spec, error) {
		return nil, refused
	}) {
		if err != nil {
			got = err
			continue
		}
		_ = event
		events++
	}
	require.ErrorIs(t, got, refused)
	require.Zero(t, events)
	out, err := host.Collect(t.Context(), run.Execution{}, func(context.Context, run.Execution) (*runhost.Spec, error) { return nil, refused })
	require.ErrorIs(t, err, refused)
	require.Nil(t, out)
}

// TestHostHeartbeat: a long turn's RUNNING row is refreshed while it runs,
// so other replicas keep seeing it alive.
func TestHostHeartbeat(t *testing.T) {
	store := openStore(t)
	host := runhost.New(runhost.Config{Store: store})
	turn := &scriptedTurn{answer: "ok"}
	turn.during = func(ctx context.Context, r *runhost.Run) {
		r.Lock()
		r.Output().Content = "progress the heartbeat saves"
		r.Unlock()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if storedRun(t, store, "r1").Content == "progress the heartbeat saves" {
				return
			}
			_ = run.Sleep(ctx, 5*time.Millisecond)
		}
		t.Error("the heartbeat never saved the run in flight")
	}
	out, err := host.Collect(t.Context(), run.Execution{}, opener(turn, func(s *runhost.Spec) { s.Heartbeat = 10 * time.Millisecond }))
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
}

// touchCounter counts the touches of a store's running rows.
type touchCounter struct {
	storage.Store
	touches atomic.Int32
}

func (c *touchCounter) TouchRun(ctx context.Context, runID string) (bool, error) {
	c.touches.Add(1)
	return c.Store.(storage.RunToucher).TouchRun(ctx, runID)
}

// TestHostTouchesARunningRow: a persisted run without a heartbeat of its
// own marks its RUNNING row alive while it runs (its updated_at only), so
// a sweep can tell it from the row of a process that died; it stops when
// the run ends.
func TestHostTouchesARunningRow(t *testing.T) {
	store := &touchCounter{Store: openStore(t)}
	host := runhost.New(runhost.Config{Store: store, TouchInterval: 5 * time.Millisecond})
	turn := &scriptedTurn{answer: "ok"}
	turn.during = func(ctx context.Context, r *runhost.Run) {
		deadline := time.Now().Add(10 * time.Second)
		for store.touches.Load() < 2 && time.Now().Before(deadline) {
			_ = run.Sleep(ctx, 5*time.Millisecond)
		}
		if store.touches.Load() < 2 {
			t.Error("the running row was never touched")
		}
	}
	out, err := host.Collect(t.Context(), run.Execution{}, opener(turn))
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	after := store.touches.Load()
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.Equal(t, after, store.touches.Load(), "no touch once the run ended")
		_ = run.Sleep(t.Context(), 5*time.Millisecond)
	}

	quiet := &touchCounter{Store: openStore(t)}
	_, err = runhost.New(runhost.Config{Store: quiet, TouchInterval: -1}).Collect(t.Context(), run.Execution{}, opener(&scriptedTurn{answer: "ok"}))
	require.NoError(t, err)
	require.Zero(t, quiet.touches.Load(), "a negative TouchInterval never touches")
}

// TestHostClaimContest: a run that claimed its session outside a queue
// withdraws its row and is refused as busy when another replica's run is
// found in flight once its own row is written.
func TestHostClaimContest(t *testing.T) {
	store := openStore(t)
	_, _, err := store.SaveRun(t.Context(), &storage.Session{SessionID: "s", SessionType: storage.SessionTypeAgent, AgentID: "a"},
		storage.RunRecord{SessionID: "s", Run: &run.Output{RunID: "other", AgentID: "a", SessionID: "s", Status: run.StatusRunning}})
	require.NoError(t, err)
	host := runhost.New(runhost.Config{Store: store})
	turn := &scriptedTurn{answer: "never"}
	_, err = host.Collect(t.Context(), run.Execution{}, opener(turn, func(s *runhost.Spec) {
		s.Claim = &runhost.Claim{Turns: runhost.NewTurns(runhost.TurnsConfig{Store: store})}
	}))
	var busy *run.SessionBusyError
	require.ErrorAs(t, err, &busy)
	require.Equal(t, "other", busy.RunID)
	require.Zero(t, turn.attempts.Load(), "the refused turn never ran")
	_, err = store.GetRun(t.Context(), "r1", "")
	require.ErrorIs(t, err, storage.ErrNotFound, "its row was withdrawn")
}

// TestHostParked: a run executed again while it waits for a person sends
// its RunPaused again and does no work.
func TestHostParked(t *testing.T) {
	host := runhost.New(runhost.Config{})
	turn := &scriptedTurn{}
	var names []string
	for event, err := range host.Execute(t.Context(), run.Execution{}, func(context.Context, run.Execution) (*runhost.Spec, error) {
		return &runhost.Spec{Output: &run.Output{RunID: "r1", Status: run.StatusPaused}, Turn: turn, Parked: true}, nil
	}) {
		require.NoError(t, err)
		names = append(names, event.EventName())
	}
	require.Equal(t, []string{run.EventRunPaused}, names)
	require.Zero(t, turn.attempts.Load())
}

// flakyStore fails SaveRun with a Postgres admin shutdown (57P01) while
// down is above zero, counting down at each try.
type flakyStore struct {
	storage.Store
	down  atomic.Int32
	tries atomic.Int32
}

func (f *flakyStore) SaveRun(ctx context.Context, s *storage.Session, rec storage.RunRecord) (*storage.Session, storage.RunRecord, error) {
	f.tries.Add(1)
	if f.down.Add(-1) >= 0 {
		return nil, storage.RunRecord{}, fmt.Errorf("save: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"})
	}
	return f.Store.SaveRun(ctx, s, rec)
}

// TestHostSaveRidesOutADatabaseRestart: a final save refused once by a
// restarting Postgres is tried again and the run completes normally, its
// metrics counted once in the session.
func TestHostSaveRidesOutADatabaseRestart(t *testing.T) {
	store := &flakyStore{Store: openStore(t)}
	host := runhost.New(runhost.Config{Store: store, Sleep: func(context.Context, time.Duration) error { return nil }})
	turn := &scriptedTurn{answer: "saved at last"}
	turn.during = func(context.Context, *runhost.Run) { store.down.Store(1) } // the restart hits the final save
	var last run.Event
	for event, err := range host.Execute(t.Context(), run.Execution{}, opener(turn)) {
		require.NoError(t, err)
		last = event
	}
	require.IsType(t, &run.RunCompleted{}, last)
	stored := storedRun(t, store, "r1")
	require.Equal(t, run.StatusCompleted, stored.Status)
	require.Equal(t, "saved at last", stored.Content)
	require.Equal(t, int32(3), store.tries.Load(), "the RUNNING row, the refused final save, the final save again")
}

// TestHostStoreDownEndsStorageUnavailable: a store that stays down past
// the save's retry budget ends the run with RunError storage_unavailable, a
// failure the durable queue may retry — never with a RunCompleted whose run
// a reader cannot find.
func TestHostStoreDownEndsStorageUnavailable(t *testing.T) {
	store := &flakyStore{Store: openStore(t)}
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	sleep := func(_ context.Context, d time.Duration) error { now.Add(int64(d)); return nil } // time passes only in waits
	host := runhost.New(runhost.Config{Store: store, Now: clock, Sleep: sleep, SaveRetry: 10 * time.Second})
	turn := &scriptedTurn{answer: "lost?"}
	turn.during = func(context.Context, *runhost.Run) { store.down.Store(1 << 20) }
	var last run.Event
	for event, err := range host.Execute(t.Context(), run.Execution{}, opener(turn)) {
		require.NoError(t, err)
		last = event
	}
	failed, ok := last.(*run.RunError)
	require.True(t, ok, "got %T", last)
	require.Equal(t, "storage_unavailable", failed.ErrorType)
	require.Contains(t, failed.Content, "could not be saved")
	require.False(t, run.PermanentErrorType(failed.ErrorType), "the queue may run it again")
	require.Greater(t, store.tries.Load(), int32(3), "the save was tried again before giving up")
	require.Equal(t, run.StatusRunning, storedRun(t, store.Store, "r1").Status, "the row is as last saved")
}

// countingSaves counts a store's SaveRun calls.
type countingSaves struct {
	storage.Store
	saves atomic.Int32
}

func (s *countingSaves) SaveRun(ctx context.Context, session *storage.Session, rec storage.RunRecord) (*storage.Session, storage.RunRecord, error) {
	s.saves.Add(1)
	return s.Store.SaveRun(ctx, session, rec)
}

// stepClock is a clock that moves only when told to.
type stepClock struct{ now atomic.Int64 }

func (c *stepClock) Now() time.Time          { return time.Unix(0, c.now.Load()) }
func (c *stepClock) advance(d time.Duration) { c.now.Add(int64(d)) }
func newStepClock() *stepClock               { c := &stepClock{}; c.now.Store(time.Now().UnixNano()); return c }

// TestDeferredRunningRow: with a PersistDelay, a run that ends within it is
// written once, as it ends, whatever progress saves it makes meanwhile;
// one that lasts longer is written RUNNING by its first progress save
// after the delay, then finished.
func TestDeferredRunningRow(t *testing.T) {
	t.Run("ends within the delay", func(t *testing.T) {
		store := &countingSaves{Store: openStore(t)}
		h := runhost.New(runhost.Config{Store: store})
		turn := &scriptedTurn{answer: "done", during: func(ctx context.Context, r *runhost.Run) {
			require.NoError(t, r.SaveProgress(ctx), "a progress save within the delay writes nothing")
		}}
		out, err := h.Collect(t.Context(), run.Execution{}, opener(turn, func(s *runhost.Spec) { s.PersistDelay = time.Hour }))
		require.NoError(t, err)
		require.Equal(t, run.StatusCompleted, out.Status)
		require.Equal(t, int32(1), store.saves.Load(), "one write: the finished run")
		require.Equal(t, run.StatusCompleted, storedRun(t, store, "r1").Status)
	})
	t.Run("lasts longer", func(t *testing.T) {
		store := &countingSaves{Store: openStore(t)}
		clock := newStepClock()
		h := runhost.New(runhost.Config{Store: store, Now: clock.Now})
		turn := &scriptedTurn{answer: "done", during: func(ctx context.Context, r *runhost.Run) {
			require.NoError(t, r.SaveProgress(ctx))
			_, err := store.GetRun(ctx, "r1", "")
			require.ErrorIs(t, err, storage.ErrNotFound, "not written before the delay")
			clock.advance(time.Second)
			require.NoError(t, r.SaveProgress(ctx))
			require.Equal(t, run.StatusRunning, storedRun(t, store, "r1").Status, "listed in flight once the delay passed")
			require.NoError(t, r.SaveProgress(ctx), "later progress saves write as usual")
		}}
		out, err := h.Collect(t.Context(), run.Execution{}, opener(turn, func(s *runhost.Spec) { s.PersistDelay = 250 * time.Millisecond }))
		require.NoError(t, err)
		require.Equal(t, run.StatusCompleted, out.Status)
		require.Equal(t, int32(3), store.saves.Load(), "RUNNING twice, then the finished run")
		require.Equal(t, run.StatusCompleted, storedRun(t, store, "r1").Status)
	})
	t.Run("a run stored before it started is saved at once", func(t *testing.T) {
		store := &countingSaves{Store: openStore(t)}
		h := runhost.New(runhost.Config{Store: store})
		stored := &run.Output{RunID: "r1", AgentID: "a", SessionID: "s", Status: run.StatusPending, Input: &run.Input{InputContent: "hi"}}
		_, _, err := store.SaveRun(t.Context(), &storage.Session{SessionID: "s", SessionType: storage.SessionTypeAgent, AgentID: "a"},
			storage.RunRecord{SessionID: "s", Run: stored})
		require.NoError(t, err)
		turn := &scriptedTurn{answer: "done", during: func(ctx context.Context, r *runhost.Run) {
			require.Equal(t, run.StatusRunning, storedRun(t, store, "r1").Status, "its row says RUNNING before the turn")
		}}
		out, err := h.Collect(t.Context(), run.Execution{}, opener(turn, func(s *runhost.Spec) { s.PersistDelay = time.Hour }))
		require.NoError(t, err)
		require.Equal(t, run.StatusCompleted, out.Status)
		require.Equal(t, int32(3), store.saves.Load(), "PENDING, RUNNING, then the finished run")
	})
}
