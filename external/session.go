package external

import (
	"context"
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
	inFlight map[string]string // run id by session id
}

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
	return &Turns{store: cfg.Store, staleAfter: cfg.StaleAfter, now: cfg.Now, inFlight: map[string]string{}}
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
	t.mu.Lock()
	if other, busy := t.inFlight[sessionID]; busy && other != runID {
		t.mu.Unlock()
		return nil, &run.SessionBusyError{SessionID: sessionID, RunID: other}
	}
	t.mu.Unlock()
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
	if other, busy := t.inFlight[sessionID]; busy && other != runID {
		return nil, &run.SessionBusyError{SessionID: sessionID, RunID: other}
	}
	t.inFlight[sessionID] = runID
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			if t.inFlight[sessionID] == runID {
				delete(t.inFlight, sessionID)
			}
			t.mu.Unlock()
		})
	}, nil
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
