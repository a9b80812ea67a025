package runhost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// DefaultStaleAfter is how long a RUNNING row may go without an update
// before a busy check takes it for the leftover of a crashed process.
const DefaultStaleAfter = 2 * time.Minute

// Turns lets an external agent run one turn per session at a time. A
// session is busy while this process runs a turn on it, or while the runs
// table holds another run of it that is PENDING, or RUNNING and updated
// within StaleAfter (a turn in flight updates its row; one whose process
// crashed stops doing so and frees the session after StaleAfter). It is
// safe for concurrent use.
type Turns struct {
	store      storage.Store
	staleAfter time.Duration
	now        func() time.Time

	mu       sync.Mutex
	inFlight map[string]*turn // by session id
}

// turn is a turn this process runs; done closes when it frees its session.
type turn struct {
	runID string
	done  chan struct{}
}

// handoverWait bounds how long a new turn waits for one whose run is
// already final (cancelled, failed or completed, its row written) to free
// the session: such a turn only winds down (a CLI interrupted, then
// killed after a grace). A client that saw the run end must not be told
// the session is busy with it.
const handoverWait = 5 * time.Second

// TurnsConfig configures [NewTurns].
type TurnsConfig struct {
	// Store holds the runs other replicas write; nil checks this process
	// only.
	Store storage.Store
	// StaleAfter defaults to [DefaultStaleAfter].
	StaleAfter time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// NewTurns returns an empty guard.
func NewTurns(cfg TurnsConfig) *Turns {
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Turns{store: cfg.Store, staleAfter: cfg.StaleAfter, now: cfg.Now, inFlight: map[string]*turn{}}
}

// BeginOptions tune [Turns.Begin].
type BeginOptions struct {
	// QueuedBehind is set when the durable queue elected the run: PENDING
	// runs of the session wait behind it and do not make it busy.
	QueuedBehind bool
}

// Begin claims sessionID for runID's turn, or returns a
// [*run.SessionBusyError] naming the run in flight. Call the returned function
// when the turn ends, whatever its outcome, to free the session.
func (t *Turns) Begin(ctx context.Context, sessionID, runID string, opts BeginOptions) (func(), error) {
	if err := t.awaitLocal(ctx, sessionID, runID); err != nil {
		return nil, err
	}
	if t.store != nil {
		other, err := t.unfinished(ctx, sessionID, runID, opts)
		if err != nil {
			return nil, err
		}
		if other != "" {
			return nil, &run.SessionBusyError{SessionID: sessionID, RunID: other}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if other, busy := t.inFlight[sessionID]; busy && other.runID != runID {
		return nil, &run.SessionBusyError{SessionID: sessionID, RunID: other.runID}
	}
	mine := &turn{runID: runID, done: make(chan struct{})}
	t.inFlight[sessionID] = mine
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			if t.inFlight[sessionID] == mine {
				delete(t.inFlight, sessionID)
			}
			t.mu.Unlock()
			close(mine.done)
		})
	}, nil
}

// awaitLocal returns once no other turn of this process holds sessionID.
// A turn whose run is final already is waited for, up to handoverWait; one
// still running makes the session busy at once.
func (t *Turns) awaitLocal(ctx context.Context, sessionID, runID string) error {
	for {
		t.mu.Lock()
		other, busy := t.inFlight[sessionID]
		t.mu.Unlock()
		if !busy || other.runID == runID {
			return nil
		}
		busyErr := &run.SessionBusyError{SessionID: sessionID, RunID: other.runID}
		if !t.ended(ctx, other.runID) {
			return busyErr
		}
		timer := time.NewTimer(handoverWait)
		select {
		case <-other.done:
			timer.Stop()
		case <-timer.C:
			return busyErr
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("wait for session %s: %w", sessionID, ctx.Err())
		}
	}
}

// ended reports whether runID's row is final: its turn only winds down. A
// PAUSED run keeps its session.
func (t *Turns) ended(ctx context.Context, runID string) bool {
	if t.store == nil {
		return false
	}
	rec, err := t.store.GetRun(ctx, runID, "")
	if err != nil || rec.Run == nil {
		return false
	}
	return rec.Run.Status.Terminal() && rec.Run.Status != run.StatusPaused
}

// unfinished returns another run of the session the runs table shows in
// flight, or "".
func (t *Turns) unfinished(ctx context.Context, sessionID, runID string, opts BeginOptions) (string, error) {
	statuses := []run.Status{run.StatusPending, run.StatusRunning}
	if opts.QueuedBehind {
		statuses = []run.Status{run.StatusRunning}
	}
	recs, _, err := t.store.GetRuns(ctx, storage.RunQuery{SessionID: sessionID, Statuses: statuses, Page: storage.Page{Limit: 20, Page: 1}})
	if err != nil {
		return "", fmt.Errorf("check session %s for a turn in flight: %w", sessionID, err)
	}
	fresh := t.now().Add(-t.staleAfter).Unix()
	for _, rec := range recs {
		if rec.Run == nil || rec.Run.RunID == runID {
			continue
		}
		if rec.Run.Status == run.StatusRunning && rec.UpdatedAt != 0 && rec.UpdatedAt < fresh {
			continue // left by a crashed process
		}
		return rec.Run.RunID, nil
	}
	return "", nil
}

// Claim is a run's claim on its session under one turn per session: the
// host checks it again once the run's RUNNING row is written (see
// [Host.Claim]).
type Claim struct {
	// Turns is the guard the session was claimed from.
	Turns *Turns
	// PollInterval is how often a run a queue elected waits for a turn
	// running outside the queue to end. Defaults to 1s.
	PollInterval time.Duration
}

// Claim claims sessionID for runID's turn; call release when the turn
// ends. A run a queue elected (queued) waits, polling every poll, for a
// turn running outside the queue instead of being refused.
func (h *Host) Claim(ctx context.Context, turns *Turns, sessionID, runID string, queued bool, poll time.Duration) (release func(), err error) {
	for {
		release, err := turns.Begin(ctx, sessionID, runID, BeginOptions{QueuedBehind: queued})
		if err == nil || !queued || !errors.Is(err, run.ErrSessionBusy) {
			return release, err
		}
		if err := h.cfg.Sleep(ctx, pollInterval(poll)); err != nil {
			return nil, err
		}
	}
}

// pollInterval is poll, or its default.
func pollInterval(poll time.Duration) time.Duration {
	if poll <= 0 {
		return time.Second
	}
	return poll
}

// settleClaim settles a race between replicas once the run's RUNNING row
// is written: two turns on one session may both pass the busy check before
// either row is written. A run claimed outside a queue checks again, and
// when it sees another unfinished run it withdraws its row and is refused
// as busy, so two turns never run at once (in the rarest interleaving both
// withdraw, and both are refused). A run a queue elected instead steps back
// to PENDING while another replica's turn outside the queue is RUNNING, and
// waits, then claims the session again.
func (h *Host) settleClaim(ctx context.Context, r *Run, queued bool) error {
	turns, out := r.spec.Claim.Turns, r.out
	if turns.store == nil {
		return nil
	}
	if !queued {
		other, err := turns.unfinished(ctx, out.SessionID, out.RunID, BeginOptions{})
		if err != nil || other == "" {
			return nil // a failed check does not stop a turn the first check allowed
		}
		if err := turns.store.DeleteRun(context.WithoutCancel(ctx), out.RunID, out.UserID); err != nil {
			h.cfg.Logger.Warn("withdrawing a contested run failed", "run_id", out.RunID, "error", err)
		}
		return &run.SessionBusyError{SessionID: out.SessionID, RunID: other}
	}
	for {
		other, err := turns.unfinished(ctx, out.SessionID, out.RunID, BeginOptions{QueuedBehind: true})
		if err != nil || other == "" {
			return nil
		}
		r.Lock()
		out.Status = run.StatusPending
		r.Unlock()
		if err := r.save(ctx); err != nil {
			return err
		}
		if err := h.cfg.Sleep(ctx, pollInterval(r.spec.Claim.PollInterval)); err != nil {
			return err
		}
		r.Lock()
		out.Status = run.StatusRunning
		r.Unlock()
		if err := r.save(ctx); err != nil {
			return err
		}
	}
}
