// Package scheduler fires cron schedules (agno_schedules) and records each
// attempt (agno_schedule_runs) through to the end of the run it started.
//
// Every fire is claimed exactly once across replicas: a replica consumes a
// due fire with a compare-and-set that moves the schedule's next_run_at on
// and inserts the fire's first attempt in the same transaction
// ([storage.ScheduleStore.FireSchedule]), so of the replicas that saw one
// fire only one wins it. The attempt is then leased to the replica
// executing it, which renews the lease while it waits for the run; when a
// replica dies, its lease lapses and another replica takes the attempt over
// ([storage.ScheduleStore.ClaimScheduleRuns]) and follows the same run: the
// run is started with an idempotency key derived from the attempt, so a
// takeover never starts a second run. Retries are attempts written with
// their delay ahead of them, taken by whichever replica is alive then.
package scheduler

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Defaults of [Config].
const (
	DefaultPollInterval    = 15 * time.Second
	DefaultMaxConcurrent   = 10
	DefaultRunPollInterval = time.Second
)

// Executor carries out a schedule's attempts; the AgentOS server
// implements it by calling its own routes in-process as the schedule's
// owner.
type Executor interface {
	// Start starts an attempt. A run endpoint starts a background run
	// (idempotently: starting the same attempt twice starts one run) and
	// returns at once with the run's ids; any other endpoint is called to
	// its end and returns Done with the final outcome.
	Start(ctx context.Context, s *storage.Schedule, attempt *storage.ScheduleRun) (Started, error)
	// RunState reads the state of a run an attempt started.
	RunState(ctx context.Context, s *storage.Schedule, runID string) (RunState, error)
	// Cancel cancels a run whose attempt timed out.
	Cancel(ctx context.Context, s *storage.Schedule, runID, sessionID string) error
}

// Started is what [Executor.Start] did.
type Started struct {
	// StatusCode is the HTTP status of the call.
	StatusCode int
	// RunID and SessionID name the run started.
	RunID, SessionID string
	// Done is set when the call was the whole attempt (not a run
	// endpoint): Status, Error and Output are then its outcome.
	Done   bool
	Status string
	Error  string
	Output map[string]any
}

// RunState is a run's state as an attempt follows it.
type RunState struct {
	Status       run.Status
	Content      any
	ContentType  string
	Requirements json.RawMessage
	Error        string
}

// Config configures a [Scheduler].
type Config struct {
	// Store keeps the schedules. Required.
	Store storage.ScheduleStore
	// Executor starts the attempts. Required.
	Executor Executor
	// PollInterval bounds how long the scheduler sleeps between looks for
	// due schedules and orphaned attempts; it wakes earlier for a fire it
	// knows is due. Default [DefaultPollInterval].
	PollInterval time.Duration
	// MaxConcurrent caps the attempts this replica executes at once.
	// Default [DefaultMaxConcurrent].
	MaxConcurrent int
	// RunPollInterval is how often an attempt reads the state of its run.
	// Default [DefaultRunPollInterval].
	RunPollInterval time.Duration
	// LeaseTTL is how long an attempt stays leased to a replica that
	// stopped renewing it (it died) before another replica takes it over.
	// Default: three poll intervals, at least 15 s.
	LeaseTTL time.Duration
	// Worker names this replica in leases. Default: a random name.
	Worker string
	// Logger receives the scheduler's logs. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Scheduler fires due schedules and follows their attempts.
type Scheduler struct {
	cfg   Config
	log   *slog.Logger
	slots chan struct{}
	wake  chan struct{}

	mu      sync.Mutex
	running bool
	ctx     context.Context // the loop's: ends at Stop
	stop    context.CancelFunc
	wg      sync.WaitGroup
	waiters map[string][]chan *storage.ScheduleRun // attempt id → waiting for its end
}

// New checks cfg and builds a scheduler; Start starts it.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Store == nil || cfg.Executor == nil {
		return nil, errors.New("scheduler: a store and an executor are required")
	}
	cfg.PollInterval = cmp.Or(cfg.PollInterval, DefaultPollInterval)
	cfg.MaxConcurrent = cmp.Or(cfg.MaxConcurrent, DefaultMaxConcurrent)
	cfg.RunPollInterval = cmp.Or(cfg.RunPollInterval, DefaultRunPollInterval)
	cfg.LeaseTTL = cmp.Or(cfg.LeaseTTL, max(3*cfg.PollInterval, 15*time.Second))
	if cfg.Worker == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		cfg.Worker = "worker-" + hex.EncodeToString(b[:])
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Scheduler{
		cfg: cfg, log: cfg.Logger.With("worker", cfg.Worker),
		slots: make(chan struct{}, cfg.MaxConcurrent), wake: make(chan struct{}, 1),
		waiters: map[string][]chan *storage.ScheduleRun{},
	}, nil
}

// Worker is the name this replica leases attempts under.
func (s *Scheduler) Worker() string { return s.cfg.Worker }

// Running reports whether Start has been called and Stop has not.
func (s *Scheduler) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Start starts firing schedules until Stop (or ctx ends).
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return
	}
	s.ctx, s.stop = context.WithCancel(ctx)
	s.running = true
	s.wg.Add(1)
	go s.loop(s.ctx)
}

// Stop stops firing and waits, until ctx ends, for the attempts in
// flight to let go. An attempt left running keeps its row: its lease
// lapses and a live replica follows its run to the end.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.running {
		s.mu.Unlock()
		return nil
	}
	s.running = false
	s.stop()
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("scheduler: stop: %w", ctx.Err())
	}
}

// Wake makes the scheduler look for due schedules now (a schedule was
// created or enabled).
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop polls until ctx ends.
func (s *Scheduler) loop(ctx context.Context) {
	defer s.wg.Done()
	for {
		s.tick(ctx)
		timer := time.NewTimer(s.untilNext(ctx))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// untilNext is how long to sleep: until the earliest due fire, at most a
// poll interval.
func (s *Scheduler) untilNext(ctx context.Context) time.Duration {
	wait := s.cfg.PollInterval
	next, err := s.cfg.Store.NextDue(ctx)
	if err != nil || next == nil {
		return wait
	}
	until := time.Unix(*next, 0).Sub(s.cfg.Now())
	if until < wait {
		wait = max(until, 50*time.Millisecond)
	}
	return wait
}

// tick fires what is due and takes over orphaned or delayed attempts.
func (s *Scheduler) tick(ctx context.Context) {
	now := s.cfg.Now()
	if free := cap(s.slots) - len(s.slots); free > 0 {
		due, err := s.cfg.Store.DueSchedules(ctx, now.Unix(), free)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "scheduler: read due schedules", "error", err)
			}
			return
		}
		for _, sched := range due {
			s.fire(ctx, sched, now)
		}
	}
	free := cap(s.slots) - len(s.slots)
	if free <= 0 {
		return
	}
	claimed, err := s.cfg.Store.ClaimScheduleRuns(ctx, storage.ScheduleRunClaim{
		Worker: s.cfg.Worker, Now: now.Unix(), StaleBefore: now.Add(-s.cfg.LeaseTTL).Unix(), Limit: free,
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "scheduler: claim attempts", "error", err)
		}
		return
	}
	for _, attempt := range claimed {
		sched, err := s.cfg.Store.GetSchedule(ctx, attempt.ScheduleID, "")
		if err != nil {
			s.log.WarnContext(ctx, "scheduler: read the schedule of an attempt", "schedule_id", attempt.ScheduleID, "error", err)
			continue
		}
		s.spawn(ctx, sched, attempt)
	}
}

// fire consumes one due fire of sched and starts its first attempt.
func (s *Scheduler) fire(ctx context.Context, sched *storage.Schedule, now time.Time) {
	f := storage.ScheduleFire{ScheduleID: sched.ID, Due: *sched.NextRunAt}
	next, err := NextRun(sched.CronExpr, sched.Timezone, now)
	if err != nil {
		// A cron that no longer parses disables its schedule.
		f.Disable = "invalid_cron:" + err.Error()
	} else {
		f.NextRunAt = &next
	}
	at := now.Unix()
	attempt := &storage.ScheduleRun{
		ScheduleID: sched.ID, Attempt: 1, TriggeredAt: &at, Status: storage.ScheduleRunRunning,
		Input: sched.Payload, LockedBy: s.cfg.Worker, LockedAt: &at,
	}
	if drift := Drift(sched); drift != "" {
		f.Disable = drift
		attempt.Status = storage.ScheduleRunFailed
		attempt.Error = fmt.Sprintf("Schedule %s endpoint '%s' does not match its provenance target %s:%s; refusing to execute",
			sched.ID, sched.Endpoint, sched.TargetType, sched.TargetID)
		attempt.CompletedAt = &at
		attempt.LockedBy, attempt.LockedAt = "", nil
	}
	if f.Disable != "" && attempt.Status == storage.ScheduleRunRunning {
		attempt = nil // an invalid cron fires nothing
	}
	f.Run = attempt
	inserted, err := s.cfg.Store.FireSchedule(ctx, f)
	switch {
	case errors.Is(err, storage.ErrConflict):
		return // another replica fired it
	case err != nil:
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "scheduler: fire", "schedule_id", sched.ID, "error", err)
		}
		return
	}
	if f.Disable != "" {
		s.log.WarnContext(ctx, "scheduler: schedule disabled", "schedule_id", sched.ID, "name", sched.Name, "reason", f.Disable)
	}
	if inserted != nil && inserted.Status == storage.ScheduleRunRunning {
		s.log.InfoContext(ctx, "scheduler: fired", "schedule_id", sched.ID, "name", sched.Name, "attempt_id", inserted.ID)
		s.spawn(ctx, sched, inserted)
	}
}

// Trigger starts an attempt of sched now, outside its cron (POST
// /schedules/{id}/trigger), and returns its running row; done receives
// the attempt's final row. It does not move the schedule's next fire.
func (s *Scheduler) Trigger(ctx context.Context, sched *storage.Schedule) (attempt *storage.ScheduleRun, done <-chan *storage.ScheduleRun, err error) {
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if !running {
		return nil, nil, ErrNotRunning
	}
	at := s.cfg.Now().Unix()
	attempt, err = s.cfg.Store.CreateScheduleRun(ctx, &storage.ScheduleRun{
		ScheduleID: sched.ID, Attempt: 1, TriggeredAt: &at, Status: storage.ScheduleRunRunning,
		Input: sched.Payload, LockedBy: s.cfg.Worker, LockedAt: &at,
	}, "")
	if err != nil {
		return nil, nil, fmt.Errorf("scheduler: trigger: %w", err)
	}
	ch := s.waitFor(attempt.ID)
	s.spawnAlways(sched, attempt)
	return attempt, ch, nil
}

// ErrNotRunning is a trigger on a server whose scheduler is off.
var ErrNotRunning = errors.New("Scheduler is not running")

// waitFor registers a waiter for an attempt's end.
func (s *Scheduler) waitFor(attemptID string) <-chan *storage.ScheduleRun {
	ch := make(chan *storage.ScheduleRun, 1)
	s.mu.Lock()
	s.waiters[attemptID] = append(s.waiters[attemptID], ch)
	s.mu.Unlock()
	return ch
}

// ended hands an attempt's final row to its waiters.
func (s *Scheduler) ended(final *storage.ScheduleRun) {
	s.mu.Lock()
	chans := s.waiters[final.ID]
	delete(s.waiters, final.ID)
	s.mu.Unlock()
	for _, ch := range chans {
		ch <- final
	}
}

// spawn executes an attempt in a slot; without a free slot the attempt
// stays leased and is taken over when its lease lapses.
func (s *Scheduler) spawn(ctx context.Context, sched *storage.Schedule, attempt *storage.ScheduleRun) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.slots }()
		s.execute(ctx, sched, attempt)
	}()
}

// spawnAlways executes a triggered attempt whatever the slots: a person
// asked for it.
func (s *Scheduler) spawnAlways(sched *storage.Schedule, attempt *storage.ScheduleRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.execute(s.ctx, sched, attempt)
	}()
}
