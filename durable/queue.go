package durable

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	// SQLite support for DBOS, on modernc.org/sqlite like the run store.
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite"
	"github.com/redis/go-redis/v9"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Defaults of [Config].
const (
	// DefaultMaxConcurrency is how many runs one process executes at once.
	DefaultMaxConcurrency = 32
	// DefaultMaxQueueDepth is how many runs may wait before submissions are
	// refused with [ErrQueueFull].
	DefaultMaxQueueDepth = 1000
	// DefaultMaxAttempts is how many times a run is started: a run whose
	// worker is lost goes on from its last completed step, up to twice.
	DefaultMaxAttempts = 3
	// DefaultApplicationVersion tags the workflows this build runs. Recovery
	// only picks up workflows of the same version, so it changes only when
	// the workflow code changes incompatibly.
	DefaultApplicationVersion = "runs-v1"
	// DefaultPollInterval is how often an idle queue looks for work.
	DefaultPollInterval = 50 * time.Millisecond
	// DefaultCancelCheckInterval is how often running runs are checked for
	// a cancel from another replica.
	DefaultCancelCheckInterval = 200 * time.Millisecond
	// MaxIdempotencyKeyLength bounds an Idempotency-Key.
	MaxIdempotencyKeyLength = 512
	// DefaultRetryDelay is the base delay before a failed run's next
	// attempt (see [Config.RetryDelay]).
	DefaultRetryDelay = 30 * time.Second
	// DefaultTimeout is how long one execution of a run may take.
	DefaultTimeout = time.Hour
)

// queueName is the one queue background runs go through.
const queueName = "agent-runs"

// Errors of [Queue.Submit]. Match them with errors.Is.
var (
	// ErrQueueFull: MaxQueueDepth runs are waiting already.
	ErrQueueFull = errors.New("the background queue is full")
	// ErrIdempotencyConflict: the Idempotency-Key was used for another
	// agent, or for the other stream mode.
	ErrIdempotencyConflict = errors.New("idempotency key already used for a different request")
	// ErrInvalidKey: the Idempotency-Key is longer than
	// MaxIdempotencyKeyLength.
	ErrInvalidKey = errors.New("invalid idempotency key")
)

// Config configures a [Queue].
type Config struct {
	// Observer observes the background runs (spans, metrics, run log
	// lines), with the queue's own retries and takeovers. Defaults to nil:
	// none.
	Observer *observe.Observer
	// DatabaseURL is the database DBOS keeps its workflows in: the runs'
	// own database, as sqlite:file:/path/agnogo.db or a postgres:// URL
	// (DBOS uses its own "dbos" schema there). Required.
	DatabaseURL string
	// Schema is the Postgres schema DBOS keeps its tables in (ignored on
	// SQLite). Defaults to "dbos".
	Schema string
	// Store keeps the sessions and runs. Required.
	Store storage.Store
	// Runners are the agents runs can be submitted to.
	Runners []run.Runner
	// Events receives every run's events, numbered. Required.
	Events *eventlog.Memory
	// ExecutorID names this process; a process restarted with the same id
	// resumes its unfinished runs. Two live processes never share one:
	// [Queue.Launch] refuses an id a live process heartbeats
	// ([ErrExecutorInUse]). Defaults to the host name.
	ExecutorID string
	// ApplicationVersion defaults to [DefaultApplicationVersion].
	ApplicationVersion string
	// MaxConcurrency defaults to [DefaultMaxConcurrency].
	MaxConcurrency int
	// MaxQueueDepth defaults to [DefaultMaxQueueDepth].
	MaxQueueDepth int
	// MaxAttempts is how many times a run is started: a run whose worker
	// was lost, or that failed for a reason another attempt may not meet,
	// starts again until it has had MaxAttempts, going on from its last
	// completed step (only the step in flight when the worker was lost runs
	// again: see [run.StepKey]). While attempts remain, a failure is never
	// stored on the run's row. 1 starts a run at most once: a lost run ends
	// ERROR with the requeue hint. Defaults to [DefaultMaxAttempts].
	MaxAttempts int
	// RetryDelay is the base delay before a failed run's next attempt:
	// attempt N+1 waits a random time between 0 and min(RetryDelay·2^(N−1),
	// 10·RetryDelay) (full jitter). Runs that failed for good — invalid
	// input or output, a refused continuation, a bad request, an
	// authentication, context-window or content-policy error — are not
	// retried. Zero means [DefaultRetryDelay]; negative retries at once.
	RetryDelay time.Duration
	// Timeout bounds one execution of a run (its start, and each
	// continuation after a pause): past it the run ends ERROR. Zero means
	// [DefaultTimeout]; negative means no limit.
	Timeout time.Duration
	// PollInterval defaults to [DefaultPollInterval].
	PollInterval time.Duration
	// Retention is how long a finished run's queue record (workflow, steps,
	// event stream) is kept; a cleanup runs about hourly. Paused runs are
	// kept. Zero means [DefaultRetention]; negative keeps records forever.
	Retention time.Duration
	// LockGrace is how long another executor may stay silent before its
	// unfinished runs are taken over here. Defaults to [DefaultLockGrace];
	// at least [MinLockGrace].
	LockGrace time.Duration
	// AbandonAfter is how long a RUNNING row with no workflow — a run a
	// server executed outside the queue — may show no sign of life before
	// the sweep ends it ERROR, taking it for the leftover of a server that
	// died mid-run. Defaults to [DefaultAbandonAfter].
	AbandonAfter time.Duration
	// CancelCheckInterval is how often the runs executing here are checked
	// for a cancel made on another replica. Defaults to
	// [DefaultCancelCheckInterval].
	CancelCheckInterval time.Duration
	// Redis, when set, carries each run's events to followers on other
	// replicas as they happen ([Queue.Events]) and cancels to the replica
	// executing the run at once: with P the prefix and N the database's
	// namespace, the stream P:N:os:events:<run_id>:1:events and the key
	// P:N:os:events:<run_id>:status, the channel P:N:run:cancellation and
	// the key P:N:run:cancellation:<run_id> (see [Queue.RedisKeyPrefix]).
	// It is never the only copy: without it, or while it fails, events
	// reach other replicas step by step through the database and cancels
	// within CancelCheckInterval. A standalone server (not a cluster); the
	// queue does not close it. Defaults to nil: no Redis.
	Redis *redis.Client
	// RedisPrefix starts the queue's Redis keys and channels, before the
	// database's namespace. Defaults to [DefaultRedisPrefix].
	RedisPrefix string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Queue accepts background runs and executes them durably.
type Queue struct {
	cfg     Config
	log     *slog.Logger
	dbos    dbos.Context
	eng     *engine // what the queue uses of the engine beyond its public API
	queue   dbos.Queue
	runners map[string]run.Runner

	// submit serialises continuations of paused runs in this process.
	submit sync.Mutex
	// requeues serialises requeues in this process, so two requests for
	// one run cannot both reset it.
	requeues sync.Mutex

	redis    *redisLink // nil without Redis
	withdraw withdrawal // set by Launch

	mu       sync.Mutex
	running  map[string]*journal // runs executing here, by run id
	working  int                 // runs doing work here (not parked)
	busy     chan struct{}       // closed when working drops to zero; nil while it is zero
	draining bool                // Shutdown began: no new run starts here

	stop    context.CancelFunc // ends the background loops
	stopped sync.WaitGroup
}

// New connects to the database and registers the queue. Call
// [Queue.Launch] to start executing runs, and [Queue.Shutdown] to stop: the
// queue outlives ctx, which only carries values.
func New(ctx context.Context, cfg Config) (*Queue, error) {
	if cfg.DatabaseURL == "" || cfg.Store == nil || cfg.Events == nil {
		return nil, errors.New("durable: DatabaseURL, Store and Events are required")
	}
	cfg.ApplicationVersion = cmp.Or(cfg.ApplicationVersion, DefaultApplicationVersion)
	cfg.MaxConcurrency = cmp.Or(cfg.MaxConcurrency, DefaultMaxConcurrency)
	cfg.MaxQueueDepth = cmp.Or(cfg.MaxQueueDepth, DefaultMaxQueueDepth)
	cfg.MaxAttempts = max(1, cmp.Or(cfg.MaxAttempts, DefaultMaxAttempts))
	cfg.RetryDelay = max(0, cmp.Or(cfg.RetryDelay, DefaultRetryDelay))
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, DefaultPollInterval)
	cfg.CancelCheckInterval = cmp.Or(cfg.CancelCheckInterval, DefaultCancelCheckInterval)
	cfg.LockGrace = max(cmp.Or(cfg.LockGrace, DefaultLockGrace), MinLockGrace)
	cfg.AbandonAfter = cmp.Or(cfg.AbandonAfter, DefaultAbandonAfter)
	cfg.RedisPrefix = cmp.Or(cfg.RedisPrefix, DefaultRedisPrefix)
	if cfg.ExecutorID == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "agnogo"
		}
		cfg.ExecutorID = host
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	q := &Queue{cfg: cfg, log: cfg.Logger, runners: map[string]run.Runner{}, running: map[string]*journal{}}
	for _, r := range cfg.Runners {
		q.runners[r.ID()] = r
	}
	// The engine's context lives until Shutdown, not until ctx ends: ending
	// it would cancel every run in flight, durably.
	pool, err := enginePool(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	dctx, err := dbos.NewContext(context.WithoutCancel(ctx), dbos.Config{
		AppName:            "agnogo",
		DatabaseURL:        cfg.DatabaseURL,
		SystemDBPool:       pool,
		ApplicationVersion: cfg.ApplicationVersion,
		ExecutorID:         cfg.ExecutorID,
		DatabaseSchema:     cfg.Schema,
		Logger:             cfg.Logger.With(slog.String("component", "durable")),
	})
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, fmt.Errorf("durable: open the queue database: %w", err)
	}
	q.dbos = dctx
	if q.eng, err = engineOf(dctx); err != nil {
		_ = dbos.Shutdown(dctx, time.Second)
		return nil, fmt.Errorf("durable: open the queue database: %w", err)
	}
	if cfg.Redis != nil {
		setup, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		namespace, err := redisNamespace(setup, q.eng)
		cancel()
		if err != nil {
			_ = dbos.Shutdown(dctx, time.Second)
			return nil, err
		}
		q.redis = newRedisLink(cfg.Redis, cfg.RedisPrefix+":"+namespace, cfg.Logger)
	}
	dbos.RegisterWorkflow(dctx, q.execute, dbos.WithWorkflowName(workflowName))
	q.queue, err = dbos.RegisterQueue(dctx, queueName,
		dbos.WithWorkerConcurrency(cfg.MaxConcurrency),
		dbos.WithPartitionConcurrency(1),
		dbos.WithQueueBasePollingInterval(cfg.PollInterval))
	if err != nil {
		_ = dbos.Shutdown(dctx, time.Second)
		return nil, fmt.Errorf("durable: register the queue: %w", err)
	}
	return q, nil
}

// Launch starts executing queued runs, first resuming the runs this
// executor left unfinished. It refuses, with an error wrapping
// [ErrExecutorInUse], when a live process heartbeats the same executor id:
// resuming its runs would take them from under it. Telling a live holder
// from a crashed one takes a few heartbeat intervals when the id's last
// heartbeat is recent (a restart right after a crash); a holder that
// stopped gracefully, or went silent longer than the lock grace ago, is
// not waited for.
func (q *Queue) Launch() error {
	h := &heartbeats{eng: q.eng, id: q.cfg.ExecutorID, grace: q.cfg.LockGrace}
	check, cancel := context.WithTimeout(context.Background(), settleTimeout+h.liveWindow())
	err := h.ensure(check)
	if err == nil {
		err = h.refuseLive(check, q.log)
	}
	if err == nil {
		// The first heartbeat lands before any run starts here: an executor
		// that dies before its beat loop wrote a row would be invisible to
		// the other replicas, its runs never taken over.
		err = h.beat(check)
	}
	cancel()
	if err != nil {
		return err
	}
	if err := dbos.Launch(q.dbos); err != nil {
		return fmt.Errorf("durable: launch: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	q.stop, q.withdraw = stop, h.withdrawal(q.cfg.DatabaseURL)
	q.redis.launch()
	q.stopped.Go(func() { q.beat(ctx, h) })
	q.stopped.Go(func() { q.watchCancels(ctx) })
	if q.redis != nil {
		q.stopped.Go(func() { q.watchRedisCancels(ctx) })
	}
	q.stopped.Go(func() { q.watchExecutors(ctx, h) })
	if q.cfg.Retention >= 0 {
		stopRetention := q.StartRetention(ctx, Retention{OlderThan: q.cfg.Retention})
		q.stopped.Go(func() { <-ctx.Done(); stopRetention() })
	}
	return nil
}

// RedisKeyPrefix is what starts this queue's Redis keys and channels:
// [Config.RedisPrefix], a colon and the namespace of the queue's database;
// "" without Redis. The namespace is generated when a queue with Redis
// first opens the database and is stored in it, so two deployments sharing
// one Redis — or a database dropped and created again under the same URL —
// never read each other's streams.
func (q *Queue) RedisKeyPrefix() string {
	if q.redis == nil {
		return ""
	}
	return q.redis.prefix
}

// watchCancels stops the runs executing here that were cancelled elsewhere
// (another replica's cancel only marks the workflow), or that another
// executor took over: one query for all of them every CancelCheckInterval.
func (q *Queue) watchCancels(ctx context.Context) {
	ticker := time.NewTicker(q.cfg.CancelCheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if ids := q.runningIDs(); len(ids) > 0 {
			q.checkRunning(ctx, ids)
		}
	}
}

// runningIDs lists the runs executing here: all of them, or those among
// only.
func (q *Queue) runningIDs(only ...string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var ids []string
	if len(only) > 0 {
		for _, id := range only {
			if _, ok := q.running[id]; ok {
				ids = append(ids, id)
			}
		}
		return ids
	}
	ids = make([]string, 0, len(q.running))
	for id := range q.running {
		ids = append(ids, id)
	}
	return ids
}

// checkRunning stops the runs among ids (executing here) whose workflow
// is cancelled, and disowns those another executor took over — its
// workflow queued again for recovery, or executing under another executor
// id — when this executor was taken for a dead one: they stop at once,
// writing nothing more, instead of at their next step.
func (q *Queue) checkRunning(ctx context.Context, ids []string) {
	found, err := dbos.ListWorkflows(q.dbos, dbos.WithFilterWorkflowIDs(ids...), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		if ctx.Err() == nil {
			q.log.Warn("durable: checking for cancelled runs failed", slog.String("error", err.Error()))
		}
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, wf := range found {
		jr, ok := q.running[wf.ID]
		if !ok {
			continue
		}
		switch {
		case wf.Status == dbos.WorkflowStatusCancelled:
			jr.cancelRun(context.Canceled)
		case wf.Status == dbos.WorkflowStatusEnqueued, wf.Status == dbos.WorkflowStatusPending && wf.ExecutorID != q.cfg.ExecutorID:
			if !jr.isDisowned() {
				q.log.Warn("durable: another executor took this run over (this one was taken for dead); it stops here without writing its outcome",
					slog.String("run_id", wf.ID), slog.String("workflow_status", string(wf.Status)), slog.String("workflow_executor_id", wf.ExecutorID))
			}
			jr.disown()
		}
	}
}

// Shutdown stops the queue gracefully. It stops starting runs here and
// waits up to timeout for the runs executing here to finish; heartbeats go on meanwhile, so no other replica
// takes them over. The runs still executing then are interrupted: each
// saves its progress and stays RUNNING, and is handed back — this
// executor's heartbeat is withdrawn, so a live replica takes its runs over
// within a second (continuing them from their last completed step when
// attempts remain, ending them ERROR with the requeue hint at MaxAttempts
// 1); with no other replica they resume when an executor with the same id
// starts again. Runs waiting for a person stay parked.
func (q *Queue) Shutdown(timeout time.Duration) error {
	q.mu.Lock()
	q.draining = true
	q.mu.Unlock()
	if !q.waitIdle(max(timeout, 0)) {
		q.mu.Lock()
		executing := len(q.running)
		q.mu.Unlock()
		q.log.Warn("durable: runs still executing at the end of the stop timeout are handed back",
			slog.Int("runs", executing), slog.Duration("stop_timeout", timeout))
	}
	// Stopping the engine ends the workflows' contexts, which interrupts
	// the runs still executing: each saves its progress, and the step it
	// was in is not recorded, so it runs again wherever the run resumes.
	return q.halt(true, settleTimeout)
}

// halt stops the background loops and the engine, which it gives up to
// wait for the workflows still executing; with handBack it then withdraws
// this executor's heartbeat.
func (q *Queue) halt(handBack bool, wait time.Duration) error {
	launched := q.stop != nil
	if launched {
		q.stop()
		q.stopped.Wait()
	}
	err := dbos.Shutdown(q.dbos, wait)
	if launched && handBack {
		q.handBack()
	}
	// The runs that ended during the shutdown still send their last events.
	q.redis.close(time.Second)
	if err != nil {
		return fmt.Errorf("durable: shutdown: %w", err)
	}
	return nil
}

// waitIdle waits up to timeout until no run does work here.
func (q *Queue) waitIdle(timeout time.Duration) bool {
	q.mu.Lock()
	busy := q.busy
	q.mu.Unlock()
	if busy == nil {
		return true
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-busy:
		return true
	case <-timer.C:
		return false
	}
}

// work changes by delta the count of runs doing work here, and signals
// waitIdle when it drops to zero. The caller holds q.mu.
func (q *Queue) work(delta int) {
	if q.working == 0 && delta > 0 {
		q.busy = make(chan struct{})
	}
	q.working += delta
	if q.working == 0 && q.busy != nil {
		close(q.busy)
		q.busy = nil
	}
}

// begin counts a run that starts doing work here; false once Shutdown
// began, when the run must be left for another executor.
func (q *Queue) begin() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.draining {
		return false
	}
	q.work(1)
	return true
}

// resume counts a parked run that has work again, even while draining: its
// continuation was accepted.
func (q *Queue) resume() {
	q.mu.Lock()
	q.work(1)
	q.mu.Unlock()
}

// end counts a run that stops doing work here: it ended, parked or was
// interrupted.
func (q *Queue) end() {
	q.mu.Lock()
	q.work(-1)
	q.mu.Unlock()
}

// Submission is a run to accept.
type Submission struct {
	// AgentID names the runner: an agent's or a team's id (the field keeps
	// its name, as the queue's stored jobs do).
	AgentID string
	// Input is the run's input, with its RunID, SessionID and UserID set.
	Input *run.Input
	// Stream records the stream mode the client chose; a repeated
	// Idempotency-Key must come with the same mode.
	Stream bool
	// IdempotencyKey, when not empty, makes a repeated submission (same key,
	// same user) return the run the first one created.
	IdempotencyKey string
}

// Accepted is a run the queue took.
type Accepted struct {
	RunID, SessionID string
	// Duplicate is set when the Idempotency-Key named an earlier run, which
	// is the one returned.
	Duplicate bool
}

// job is a run as the workflow receives it.
type job struct {
	AgentID        string         `json:"agent_id"`
	RunID          string         `json:"run_id"`
	SessionID      string         `json:"session_id"`
	UserID         string         `json:"user_id,omitempty"`
	Input          run.Input      `json:"input"`
	Metadata       map[string]any `json:"metadata,omitempty"`
	SessionState   map[string]any `json:"session_state,omitempty"`
	Stream         bool           `json:"stream"`
	IdempotencyKey string         `json:"idempotency_key,omitempty"`
}

// Submit accepts a run: unless MaxQueueDepth runs are waiting
// ([ErrQueueFull]), its PENDING row is written and it is enqueued. On
// Postgres with a [TxStore] that is one transaction and the depth limit is
// exact; otherwise the row is written first, and concurrent submissions may
// overshoot the limit by their number.
func (q *Queue) Submit(ctx context.Context, s Submission) (Accepted, error) {
	runner, ok := q.runners[s.AgentID]
	if !ok {
		return Accepted{}, fmt.Errorf("durable: unknown agent or team %q", s.AgentID)
	}
	in := s.Input
	if len(s.IdempotencyKey) > MaxIdempotencyKeyLength {
		return Accepted{}, fmt.Errorf("%w: Idempotency-Key is %d characters; the limit is %d", ErrInvalidKey, len(s.IdempotencyKey), MaxIdempotencyKeyLength)
	}
	j := job{AgentID: s.AgentID, RunID: in.RunID, SessionID: in.SessionID, UserID: in.UserID, Input: *in,
		Metadata: in.Metadata, SessionState: in.SessionState, Stream: s.Stream, IdempotencyKey: s.IdempotencyKey}
	if s.IdempotencyKey != "" {
		j.RunID = idempotentRunID(s.IdempotencyKey, in.UserID)
		prior, found, err := q.prior(j.RunID)
		if err != nil {
			return Accepted{}, err
		}
		if !found {
			// The queue's record may be gone (retention) while the run row
			// stays. A PENDING row without a record is a submission whose
			// server died before enqueueing it: this one takes it over.
			if rec, err := q.cfg.Store.GetRun(ctx, j.RunID, in.UserID); err == nil && rec.Run.Status != run.StatusPending {
				prior, found = job{AgentID: rec.Run.RunnerID(), RunID: rec.Run.RunID, SessionID: rec.SessionID, Stream: s.Stream}, true
			}
		}
		if found {
			if prior.AgentID != j.AgentID || prior.Stream != j.Stream {
				return Accepted{}, fmt.Errorf("%w: it was sent for %s with stream=%t", ErrIdempotencyConflict, prior.AgentID, prior.Stream)
			}
			return Accepted{RunID: prior.RunID, SessionID: prior.SessionID, Duplicate: true}, nil
		}
		in.RunID = j.RunID
	}
	return q.accept(ctx, runner, in, j)
}

// prior reads the job an earlier submission queued under runID.
func (q *Queue) prior(runID string) (job, bool, error) {
	found, err := dbos.ListWorkflows(q.dbos, dbos.WithFilterWorkflowIDs(runID), dbos.WithFilterLoadInput(true), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return job{}, false, fmt.Errorf("durable: look up idempotency key: %w", err)
	}
	if len(found) == 0 {
		return job{}, false, nil
	}
	j, err := decodeJob(found[0].Input)
	if err != nil {
		return job{}, false, fmt.Errorf("durable: read run %s: %w", runID, err)
	}
	return j, true, nil
}

// idempotentRunID derives a run id from an Idempotency-Key and its user: the
// same pair always names the same run.
func idempotentRunID(key, userID string) string {
	sum := sha256.Sum256([]byte(key + "\x00" + userID))
	s := hex.EncodeToString(sum[:16])
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// Cancel cancels a queued or executing run. A queued run is stored
// CANCELLED at once; one executing here stops at its next step. It reports
// whether the queue knew the run.
func (q *Queue) Cancel(ctx context.Context, runID string) (bool, error) {
	found, err := dbos.ListWorkflows(q.dbos, dbos.WithFilterWorkflowIDs(runID), dbos.WithFilterLoadInput(true), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return false, fmt.Errorf("durable: find run %s: %w", runID, err)
	}
	if len(found) == 0 {
		return false, nil
	}
	status := found[0].Status
	if status != dbos.WorkflowStatusEnqueued && status != dbos.WorkflowStatusPending && status != dbos.WorkflowStatusDelayed {
		return true, nil // over already
	}
	j, decodeErr := decodeJob(found[0].Input)
	if status == dbos.WorkflowStatusPending && decodeErr == nil && q.rowPaused(ctx, runID, j.UserID) {
		// A paused run's workflow waits for a message, on whichever replica:
		// wake it with the cancellation.
		if err := dbos.Send(q.dbos, runID, continuation{Cancel: true}, continueTopic); err != nil {
			return true, fmt.Errorf("durable: cancel run %s: %w", runID, err)
		}
		return true, nil
	}
	if err := dbos.CancelWorkflow(q.dbos, runID); err != nil {
		return true, fmt.Errorf("durable: cancel run %s: %w", runID, err)
	}
	q.mu.Lock()
	jr, executing := q.running[runID]
	q.mu.Unlock()
	if !executing {
		// It may be executing on another replica (or start there in a
		// moment): a signal stops it now; its cancel watcher would later.
		q.redis.cancel(runID)
	}
	switch {
	case executing:
		jr.cancelRun(context.Canceled)
	case status == dbos.WorkflowStatusPending:
		// Executing on another replica: stopped there by the signal or the
		// watcher.
	case decodeErr == nil:
		q.settle(j, run.StatusCancelled, "the run was cancelled before it started")
	}
	return true, nil
}

// ErrNotParked: the run is not waiting for a continuation on the queue.
var ErrNotParked = errors.New("the run is not paused on the durable queue")

// Parked reports whether a run of the queue is paused, its workflow waiting
// for a continuation: such a run is continued with [Queue.Continue] only.
func (q *Queue) Parked(ctx context.Context, runID string, userID string) (bool, error) {
	found, err := dbos.ListWorkflows(q.dbos, dbos.WithFilterWorkflowIDs(runID), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return false, fmt.Errorf("durable: find run %s: %w", runID, err)
	}
	if len(found) == 0 || found[0].Status != dbos.WorkflowStatusPending {
		return false, nil
	}
	rec, err := q.cfg.Store.GetRun(ctx, runID, userID)
	if err != nil {
		return false, fmt.Errorf("durable: read run %s: %w", runID, err)
	}
	return rec.Run.Status == run.StatusPaused, nil
}

// rowPaused reports whether the run row of a workflow known to be PENDING
// says PAUSED: the workflow is parked, waiting for its continuation.
func (q *Queue) rowPaused(ctx context.Context, runID, userID string) bool {
	status, ok := q.rowStatus(ctx, runID, userID)
	return ok && status == run.StatusPaused
}

// rowStatus reads the status on a run's row; false when it cannot be read.
func (q *Queue) rowStatus(ctx context.Context, runID, userID string) (run.Status, bool) {
	rec, err := q.cfg.Store.GetRun(ctx, runID, userID)
	if err != nil {
		return "", false
	}
	return rec.Run.Status, true
}

// Continue hands a paused run its continuation (the resolved tools, or new
// input); the run goes on where its workflow waits, on whichever replica.
// A run that is not paused on the queue is [ErrNotParked].
func (q *Queue) Continue(ctx context.Context, req *run.ContinueRequest) error {
	q.submit.Lock() // one continuation per paused run from this process
	defer q.submit.Unlock()
	parked, err := q.Parked(ctx, req.RunID, req.UserID)
	if err != nil {
		return err
	}
	if !parked {
		return fmt.Errorf("%w: run %s", ErrNotParked, req.RunID)
	}
	message := *req
	message.Run = nil
	if err := dbos.Send(q.dbos, req.RunID, continuation{Request: &message}, continueTopic); err != nil {
		return fmt.Errorf("durable: continue run %s: %w", req.RunID, err)
	}
	q.register(req.RunID, run.StatusRunning)
	return nil
}

// register makes a run known, or known again, with a status: to the event
// log and to Redis.
func (q *Queue) register(runID string, status run.Status) {
	q.cfg.Events.Register(runID, status)
	q.redis.status(runID, status)
}

// finish records a run's terminal status (PAUSED included): in the event
// log and in Redis.
func (q *Queue) finish(runID string, status run.Status) {
	q.cfg.Events.Finish(runID, status)
	q.redis.status(runID, status)
}
