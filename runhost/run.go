package runhost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Run is the host's handle on one run in flight, given to its [Turn]: the
// turn emits its events and asks for its progress to be saved through it,
// and reads the run's output and session here.
type Run struct {
	host *Host
	spec *Spec
	out  *run.Output

	// mu guards out and session against the heartbeat's saves and the
	// turn's other goroutines (see [Run.Lock]).
	mu      sync.Mutex
	session *storage.Session
	// counted is set once the completed run's metrics were added to the
	// session.
	counted bool
	// stored is set when the run's row was written before it started (a
	// background run, or a run executed again); fresh when the run's first
	// save inserts it, after every run stored before (a new run not stored
	// before, not a fork); saved once a save succeeded.
	stored, fresh, saved bool
	// deferredUntil, while not zero, is when the run's first progress save
	// may write its row ([Spec.PersistDelay]); only the turn's goroutine
	// reads and clears it.
	deferredUntil time.Time

	// emu orders the events and guards the consumer's state.
	emu    sync.Mutex
	yield  func(run.Event, error) bool
	cancel context.CancelFunc
	gone   bool // the consumer stopped ranging
}

func newRun(h *Host, spec *Spec, yield func(run.Event, error) bool, cancel context.CancelFunc) *Run {
	return &Run{host: h, spec: spec, out: spec.Output, session: spec.Session, yield: yield, cancel: cancel}
}

// Output is the run. The turn changes it from the goroutine running its
// attempt; from any other goroutine, under [Run.Lock].
func (r *Run) Output() *run.Output { return r.out }

// Session is the run's session as last saved; the turn changes it like
// [Run.Output].
func (r *Run) Session() *storage.Session { return r.session }

// Lock locks the run's output and session against saves.
func (r *Run) Lock() { r.mu.Lock() }

// Unlock undoes [Run.Lock].
func (r *Run) Unlock() { r.mu.Unlock() }

// Emit stamps e with the run's identity and time, keeps it on the stored
// run when the spec says so, and hands it to the consumer. It reports
// whether the consumer still listens; one that stopped ranging cancels the
// run. It is safe to call from several goroutines.
func (r *Run) Emit(e run.Event) bool {
	r.emu.Lock()
	defer r.emu.Unlock()
	r.recordLocked(e)
	return r.deliverLocked(e)
}

// Forward passes on an event of a child run (a team member's) in this
// run's stream: it is kept with the run's events and handed to the
// consumer like [Run.Emit], with its own identity — agent_id, run_id and
// created_at stay the child's; parent_run_id defaults to this run. It
// reports whether the consumer still listens.
func (r *Run) Forward(e run.Event) bool {
	member := run.AsMember(e)
	base := member.Base()
	if base.ParentRunID == "" {
		base.ParentRunID = r.out.RunID
	}
	r.emu.Lock()
	defer r.emu.Unlock()
	if r.spec.StoreEvents {
		r.mu.Lock()
		r.out.Events = append(r.out.Events, member)
		r.mu.Unlock()
	}
	return r.deliverLocked(member)
}

type runKey struct{}

// withRun returns ctx carrying r, for the run's tools (see [FromContext]).
func withRun(ctx context.Context, r *Run) context.Context { return context.WithValue(ctx, runKey{}, r) }

// FromContext returns the run a tool call's ctx belongs to: a tool that
// runs child runs (a team's delegation) reads the run's identity from it
// and passes the children's events on with [Run.Forward].
func FromContext(ctx context.Context) (*Run, bool) {
	r, ok := ctx.Value(runKey{}).(*Run)
	return r, ok
}

// record stamps and keeps e without handing it over (see [Run.deliver]).
func (r *Run) record(e run.Event) {
	r.emu.Lock()
	defer r.emu.Unlock()
	r.recordLocked(e)
}

// deliver hands a recorded event to the consumer.
func (r *Run) deliver(e run.Event) {
	r.emu.Lock()
	defer r.emu.Unlock()
	r.deliverLocked(e)
}

func (r *Run) recordLocked(e run.Event) {
	base := e.Base()
	base.CreatedAt = r.host.cfg.Now().Unix()
	base.AgentID, base.AgentName = r.out.AgentID, r.out.AgentName
	base.TeamID, base.TeamName = r.out.TeamID, r.out.TeamName
	base.WorkflowID, base.WorkflowName = r.out.WorkflowID, r.out.WorkflowName
	base.RunID, base.SessionID, base.ParentRunID = r.out.RunID, r.out.SessionID, r.out.ParentRunID
	if r.spec.StoreEvents {
		r.mu.Lock()
		r.out.Events = append(r.out.Events, e)
		r.mu.Unlock()
	}
}

func (r *Run) deliverLocked(e run.Event) bool {
	if r.yield == nil || r.gone {
		return !r.gone
	}
	if !r.yield(e, nil) {
		r.gone = true
		r.cancel()
	}
	return !r.gone
}

// Streaming reports whether someone consumes the run's events as they come,
// so deltas are worth producing.
func (r *Run) Streaming() bool {
	r.emu.Lock()
	defer r.emu.Unlock()
	return r.yield != nil && !r.gone
}

// Active reports whether an event would go anywhere: to a consumer, or onto
// the stored run.
func (r *Run) Active() bool { return r.spec.StoreEvents || r.Streaming() }

// stopped reports whether the consumer stopped ranging.
func (r *Run) stopped() bool {
	r.emu.Lock()
	defer r.emu.Unlock()
	return r.gone
}

// SaveProgress saves the run in flight, status RUNNING, when it is
// persisted: a turn calls it after each batch of tool results, so readers
// see the run progress and a crash keeps what it did. A database that is
// briefly unreachable is waited for (see [Config.SaveRetry]).
func (r *Run) SaveProgress(ctx context.Context) error {
	if !r.spec.Persist {
		return nil
	}
	if !r.deferredUntil.IsZero() {
		if r.host.cfg.Now().Before(r.deferredUntil) {
			return nil // the row is written once the run has lasted, or as it ends
		}
		r.deferredUntil = time.Time{}
	}
	return r.saveRetrying(ctx)
}

// saveRetrying saves the run, trying again after a transient failure of
// the database ([storage.Transient]: a restart, a dropped connection, a
// busy SQLite file) with a doubling delay, for up to Config.SaveRetry or
// until ctx ends. Every failed try is logged with the run's id.
func (r *Run) saveRetrying(ctx context.Context) error {
	return r.host.retrying(ctx, func() error { return r.save(ctx) }, func(delay time.Duration, err error) {
		r.host.cfg.Logger.WarnContext(ctx, "saving the run failed; trying again", "run_id", r.out.RunID, "status", r.out.Status,
			"retry_in", delay, "error", err)
	})
}

// save writes the session (with the run's metrics once it completed) and
// the run, as one transaction.
func (r *Run) save(ctx context.Context) error {
	store := r.host.cfg.Store
	if store == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sync(false)
	session := r.session
	if r.out.Status == run.StatusCompleted && !r.counted {
		// Once: a save tried again must not count the run twice.
		session.AddRunMetrics(r.out.Metrics)
		r.counted = true
	}
	spanCtx, span := observe.StartStep(ctx, "storage.save_run", observe.KindUnknown, attribute.String("db.operation.name", "save_run"))
	stored, rec, err := store.SaveRun(spanCtx, session, storage.RunRecord{SessionID: session.SessionID, UserID: r.out.UserID, Run: r.out})
	span.End(err)
	if err != nil {
		return fmt.Errorf("save run %s: %w", r.out.RunID, err)
	}
	if rec.RunIndex != nil {
		r.host.sessions.saved(r, session, stored, *rec.RunIndex)
	}
	r.session, r.saved = stored, true
	return nil
}

// sync lets the turn write what it keeps outside the output; r.mu is held.
func (r *Run) sync(final bool) {
	if s, ok := r.spec.Turn.(Syncer); ok {
		s.Sync(r.out, final)
	}
}

// saveFinal saves the run's final state under a context of its own, so a
// cancelled run is still recorded, trying again while the database is
// briefly unreachable. With deferred set a failed run is saved RUNNING, for
// the caller to settle; the output keeps its ERROR status.
func (r *Run) saveFinal(parent context.Context, deferred bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), max(persistTimeout, r.host.cfg.SaveRetry+persistTimeout))
	defer cancel()
	deferred = deferred && r.out.Status == run.StatusError
	if deferred {
		r.out.Status = run.StatusRunning
	}
	err := r.saveRetrying(ctx)
	if deferred {
		r.out.Status = run.StatusError
	}
	return err
}

// heartbeat keeps a persisted run's RUNNING row alive while its attempts
// run, and returns a function that stops it: every spec.Heartbeat it saves
// the run whole; without one, every Config.TouchInterval it only moves the
// row's updated_at, which reads nothing of the output the attempt is
// changing.
func (r *Run) heartbeat(ctx context.Context) func() {
	store := r.host.cfg.Store
	if !r.spec.Persist || store == nil {
		return func() {}
	}
	every, beat := r.spec.Heartbeat, func(ctx context.Context) error { return r.save(ctx) }
	if every <= 0 {
		toucher, ok := store.(storage.RunToucher)
		if !ok || r.host.cfg.TouchInterval <= 0 {
			return func() {}
		}
		runID := r.out.RunID
		every = r.host.cfg.TouchInterval
		beat = func(ctx context.Context) error { _, err := toucher.TouchRun(ctx, runID); return err }
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	runID := r.out.RunID
	go func() {
		defer close(done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if err := beat(ctx); err != nil && ctx.Err() == nil {
					r.host.cfg.Logger.Warn("refreshing a running run's row failed", "run_id", runID, "error", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
