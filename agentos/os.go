package agentos

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/scheduler"
	"github.com/agnogo/agnogo/storage"
)

// Config configures an [OS].
type Config struct {
	// ID is the os_id reported by /config. Defaults to "agnogo".
	ID string
	// Name is reported by /info and /config. Defaults to "AgentOS".
	Name string
	// Description is reported by /config.
	Description string
	// Runners are the agents and teams served, by their IDs (unique across
	// both): each under the routes of its kind (run.Runner.Kind), an agent
	// under /agents and a team under /teams.
	Runners []run.Runner
	// Store keeps sessions, runs and memories. Without one, the session and
	// memory routes answer 503.
	Store storage.Store
	// DBID names the database in the API (db_id). Defaults to "agnogo-db".
	DBID string
	// Auth configures authentication and authorization. Defaults to none.
	Auth AuthConfig
	// CORSAllowedOrigins replaces AgentOS's default browser origins.
	CORSAllowedOrigins []string
	// Version is reported by /info. Defaults to "dev".
	Version string
	// MCPServer, when enabled, serves the AgentOS's actions as MCP tools at
	// /mcp (see [MCPServerConfig]). Defaults to nil: /mcp answers 503.
	MCPServer *MCPServerConfig
	// Queue, when set, runs background runs (background=true) durably: they
	// survive a crash or restart of the server, the runs of one session
	// execute in submission order, and Idempotency-Key is honoured. Without
	// one, background runs execute in this process only. Its event log must
	// be Events. *durable.Queue is the implementation.
	Queue Queue
	// Events numbers and keeps the runs' streamed events for POST …/resume.
	// Defaults to a new in-memory log; set it when a Queue shares it.
	Events *eventlog.Memory
	// BackgroundMaxConcurrency caps how many background runs (background=true)
	// execute at once without a Queue; the others wait, PENDING, in
	// submission order. Zero means 32; a negative value removes the cap.
	BackgroundMaxConcurrency int
	// SSEWriteTimeout bounds the write of each Server-Sent Events frame: a
	// client that has not taken a frame by then (it stopped reading) is
	// dropped — its stream ends and, as when a client leaves, a run bound to
	// the request is cancelled — and logged at Info with the run id. Zero
	// means 30s; a negative value removes the bound.
	SSEWriteTimeout time.Duration
	// Media, when set, keeps uploaded media out of memory and out of run
	// rows for the runners that read media back from it (an agent whose
	// agent.Config.Media is the same store): each uploaded file is streamed
	// into the store as it arrives, bounded by the store's limits (413
	// above them), and the run keeps a reference (media_id) instead of the
	// bytes; a run's answer then carries no media bytes unless the client
	// sends include_media_content=true. Other runners get their uploads
	// inline, as without a store. Defaults to nil: uploads are read into
	// memory and travel inline.
	Media media.Store
	// Logger receives request and run logs. Defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Observer observes the runs the server starts (spans, Prometheus
	// metrics, run log lines), and takes the W3C traceparent of incoming
	// requests. Defaults to nil: none.
	Observer *observe.Observer
	// PrometheusPath is where the observer's Prometheus metrics are served
	// (under metrics:read). Defaults to [DefaultPrometheusPath].
	PrometheusPath string
	// Scheduler fires the schedules of /schedules when enabled (see
	// [SchedulerConfig]). Defaults to off: schedules are kept, not fired.
	Scheduler SchedulerConfig
}

// OS serves the AgentOS API. It is an http.Handler.
type OS struct {
	cfg     Config
	started time.Time
	log     *slog.Logger
	runners map[string]run.Runner
	order   []string
	handler http.Handler
	auth    *authenticator

	slots  chan struct{} // background run slots; nil when uncapped
	events *eventlog.Log

	mu       sync.Mutex
	inflight map[string]*inflightRun // by run id
	closing  bool
	wg       sync.WaitGroup

	scheduler *scheduler.Scheduler // nil unless Config.Scheduler.Enabled

	// followers ends, at shutdown, the streams that follow runs this
	// process does not own (background runs): their clients resume them.
	followers    context.Context
	endFollowers context.CancelFunc
}

// Queue is the durable queue of background runs as the server uses it:
// accepting runs, cancelling and continuing them, finding and following
// them wherever they execute, and the /queue routes. *durable.Queue
// implements it.
type Queue interface {
	// Submit accepts a background run.
	Submit(ctx context.Context, s durable.Submission) (durable.Accepted, error)
	// Cancel cancels a queued, executing or paused run, on any replica.
	Cancel(ctx context.Context, runID string) (bool, error)
	// Parked reports whether the run waits for a person on the queue.
	Parked(ctx context.Context, runID, userID string) (bool, error)
	// Continue hands a parked run its continuation.
	Continue(ctx context.Context, req *run.ContinueRequest) error
	// Events yields the run's events after the given index, from any
	// replica; with follow, until the run ends. It is the source of the
	// event log for runs other replicas execute.
	Events(ctx context.Context, runID string, after int64, follow bool) iter.Seq2[eventlog.Entry, error]
	// Jobs, Job, Requeue and Stats serve the /queue routes.
	Jobs(ctx context.Context, query durable.JobQuery) ([]durable.Job, int, error)
	// Job reads one job.
	Job(ctx context.Context, id string) (durable.Job, error)
	// Requeue runs a failed or cancelled job again.
	Requeue(ctx context.Context, id string, opts durable.RequeueOptions) (durable.Job, error)
	// Stats counts the jobs.
	Stats(ctx context.Context) (durable.Stats, error)
}

var _ Queue = (*durable.Queue)(nil)

// inflightRun is a run executing in this process.
type inflightRun struct {
	runner            run.Runner // the agent or team running it
	sessionID, userID string
	cancel            context.CancelFunc
}

// New checks cfg and builds the server.
func New(cfg Config) (*OS, error) {
	cfg.ID = cmp.Or(cfg.ID, "agnogo")
	cfg.Name = cmp.Or(cfg.Name, "AgentOS")
	cfg.DBID = cmp.Or(cfg.DBID, "agnogo-db")
	cfg.Version = cmp.Or(cfg.Version, "dev")
	cfg.SSEWriteTimeout = sseWriteTimeout(cfg.SSEWriteTimeout)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MCPServer != nil {
		if err := cfg.MCPServer.check(); err != nil {
			return nil, fmt.Errorf("agentos: %w", err)
		}
	}
	if q, ok := cfg.Queue.(*durable.Queue); ok && q == nil {
		cfg.Queue = nil // no queue, passed as a typed nil
	}
	o := &OS{cfg: cfg, started: cfg.Now(), log: cfg.Logger, runners: map[string]run.Runner{}, inflight: map[string]*inflightRun{}}
	o.followers, o.endFollowers = context.WithCancel(context.Background())
	mem := cfg.Events
	if mem == nil {
		mem = eventlog.NewMemory(eventlog.MemoryConfig{Now: cfg.Now})
	}
	var source eventlog.Source // every run is produced here
	if cfg.Queue != nil {
		source = cfg.Queue // a run of the queue may execute on another replica
	}
	o.events = eventlog.NewLog(mem, source)
	switch n := cfg.BackgroundMaxConcurrency; {
	case n == 0:
		o.slots = make(chan struct{}, defaultBackgroundMaxConcurrency)
	case n > 0:
		o.slots = make(chan struct{}, n)
	}
	for _, r := range cfg.Runners {
		if r == nil {
			return nil, errors.New("agentos: nil runner")
		}
		if _, dup := o.runners[r.ID()]; dup {
			return nil, fmt.Errorf("agentos: two runners with id %q", r.ID())
		}
		o.runners[r.ID()] = r
		o.order = append(o.order, r.ID())
	}
	auth, err := newAuthenticator(cfg.Auth)
	if err != nil {
		return nil, fmt.Errorf("agentos: %w", err)
	}
	o.auth = auth
	mux := http.NewServeMux()
	o.systemRoutes(mux)
	o.agentRoutes(mux)
	o.runRoutes(mux)
	o.websocketRoutes(mux)
	o.sessionRoutes(mux)
	o.memoryRoutes(mux)
	o.metricsRoutes(mux)
	o.databaseRoutes(mux)
	o.queueRoutes(mux)
	o.docsRoutes(mux)
	o.mcpRoutes(mux)
	o.traceRoutes(mux)
	o.scheduleRoutes(mux)
	o.approvalRoutes(mux)
	o.serviceAccountRoutes(mux)
	o.prometheusRoutes(mux)
	disabledRoutes(mux, o.mcpEnabled())
	o.handler = o.withCORS(o.withAuth(o.withCleanText(withJSONUnrouted(mux))))
	o.handler = o.withObserver(o.handler)
	o.handler = o.withSSEWriteTimeout(o.handler)
	o.handler = o.withAccessLog(withoutTrailingSlash(o.handler))
	if err := o.startScheduler(); err != nil {
		return nil, fmt.Errorf("agentos: %w", err)
	}
	return o, nil
}

// ServeHTTP implements http.Handler.
func (o *OS) ServeHTTP(w http.ResponseWriter, r *http.Request) { o.handler.ServeHTTP(w, r) }

// Shutdown stops accepting runs, cancels the runs in flight and waits until
// each has saved its final state, or ctx ends. Streams following background
// runs end at once (the runs go on; their clients resume them).
func (o *OS) Shutdown(ctx context.Context) error {
	if o.scheduler != nil {
		if err := o.scheduler.Stop(ctx); err != nil {
			return fmt.Errorf("agentos shutdown: %w", err)
		}
	}
	o.endFollowers()
	o.mu.Lock()
	o.closing = true
	for _, r := range o.inflight {
		r.cancel()
	}
	o.mu.Unlock()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("agentos shutdown: %w", ctx.Err())
	}
}

// following returns a context for a stream that follows a background run:
// it ends with the request, or when the server shuts down.
func (o *OS) following(r *http.Request) (*http.Request, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(o.followers, cancel)
	return r.WithContext(ctx), func() { stop(); cancel() }
}

// track registers a run in flight; the returned function unregisters it.
// It fails when the server is shutting down.
func (o *OS) track(runID string, r *inflightRun) (func(), bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closing {
		return nil, false
	}
	o.inflight[runID] = r
	o.wg.Add(1)
	return func() {
		o.mu.Lock()
		if o.inflight[runID] == r {
			// A continuation of the run tracked since is not this one's.
			delete(o.inflight, runID)
		}
		o.mu.Unlock()
		o.wg.Done()
	}, true
}

// forkedAs makes a run in flight also known by the id of the new run it
// continues as (a fork), once its events name it, so that cancelling
// either id stops it. The alias goes when the events end.
func (o *OS) forkedAs(events iter.Seq2[run.Event, error], runID string, r *inflightRun) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		alias := ""
		defer func() {
			if alias != "" {
				o.mu.Lock()
				if o.inflight[alias] == r {
					delete(o.inflight, alias)
				}
				o.mu.Unlock()
			}
		}()
		for event, err := range events {
			_, member := event.(*run.MemberEvent) // a team member's run is not a fork
			if event != nil && !member && alias == "" {
				if id := event.Base().RunID; id != "" && id != runID {
					alias = id
					o.mu.Lock()
					if _, taken := o.inflight[id]; !taken {
						o.inflight[id] = r
					}
					o.mu.Unlock()
				}
			}
			if !yield(event, err) {
				return
			}
		}
	}
}

// cancelRun cancels a run in flight and reports whether it was found.
func (o *OS) cancelRun(runID string) (*inflightRun, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.inflight[runID]
	if ok {
		r.cancel()
	}
	return r, ok
}

// newID returns a random UUID for runs and sessions.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	s := hex.EncodeToString(b[:])
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}
