package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// Config configures a [Workflow]. ID and Steps are required.
type Config struct {
	// ID identifies the workflow (workflow_id on runs and sessions).
	ID string
	// Name is the display name. Defaults to ID.
	Name string
	// Description describes the workflow (GET /workflows).
	Description string
	// Steps run one after the other.
	Steps []*Node
	// InputSchema, when set, is a JSON Schema the run's input must meet:
	// the input is read as JSON and checked before anything runs.
	InputSchema map[string]any
	// SessionState is the initial state of a new workflow session.
	SessionState map[string]any
	// AddWorkflowHistory gives every Step's runner the workflow's earlier
	// runs in the session (see [Node.WithHistory] for one step).
	AddWorkflowHistory bool
	// NumHistoryRuns is how many earlier runs make that history. Defaults
	// to 3.
	NumHistoryRuns int
	// StreamExecutorEvents passes the events of the steps' agents and
	// teams on in the workflow's stream. Defaults to true (nil).
	StreamExecutorEvents *bool
	// Store keeps the workflow's sessions and runs; give its agents and
	// teams the same store. A workflow pauses for a person only with one.
	Store storage.Store
	// StoreEvents keeps the run's events on the stored run.
	StoreEvents bool
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// NewID generates ids. Defaults to random UUIDs.
	NewID func() string
	// Logger receives the workflow's logs. Defaults to slog.Default().
	Logger *slog.Logger
}

// Item is an argument of [New]: a step ([*Node]) or an [Option].
type Item interface{ applyTo(c *Config) }

func (n *Node) applyTo(c *Config) { c.Steps = append(c.Steps, n) }

// Option sets a field of a workflow's [Config] in [New].
type Option func(c *Config)

func (o Option) applyTo(c *Config) { o(c) }

// WithStore keeps the workflow's runs and sessions in store.
func WithStore(store storage.Store) Option { return func(c *Config) { c.Store = store } }

// WithName sets the display name.
func WithName(name string) Option { return func(c *Config) { c.Name = name } }

// WithDescription sets the description.
func WithDescription(description string) Option {
	return func(c *Config) { c.Description = description }
}

// WithInputSchema checks every run's input against a JSON Schema.
func WithInputSchema(schema map[string]any) Option {
	return func(c *Config) { c.InputSchema = schema }
}

// WithHistory gives every Step the workflow's last numRuns runs of the
// session.
func WithHistory(numRuns int) Option {
	return func(c *Config) { c.AddWorkflowHistory, c.NumHistoryRuns = true, numRuns }
}

// Workflow is a configured workflow: steps run in order as one run of
// their own, each agent or team a child run of it. It implements
// [run.Runner], [run.Continuer], [run.Collector] and [run.Executor].
type Workflow struct {
	cfg    Config
	host   *runhost.Host
	schema *jsonschema.Resolved
}

var (
	_ run.Runner    = (*Workflow)(nil)
	_ run.Continuer = (*Workflow)(nil)
	_ run.Collector = (*Workflow)(nil)
	_ run.Executor  = (*Workflow)(nil)
)

// New builds the workflow id from its steps and options, e.g.
//
//	workflow.New("pipeline", workflow.WithStore(db),
//		workflow.Step("draft", writer),
//		workflow.Condition("check", workflow.CEL(`previous_step_content.contains("ok")`),
//			workflow.Step("polish", checker)).Else(workflow.Step("redo", writer)))
func New(id string, items ...Item) (*Workflow, error) {
	cfg := Config{ID: id}
	for _, item := range items {
		if item != nil {
			item.applyTo(&cfg)
		}
	}
	return FromConfig(cfg)
}

// FromConfig checks cfg and returns the workflow.
func FromConfig(cfg Config) (*Workflow, error) {
	if cfg.Name == "" {
		cfg.Name = cfg.ID
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = run.NewUUID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var errs []error
	if cfg.ID == "" {
		errs = append(errs, errors.New("a workflow needs an id"))
	}
	if len(cfg.Steps) == 0 {
		errs = append(errs, errors.New("a workflow needs at least one step"))
	}
	if cfg.NumHistoryRuns < 0 {
		errs = append(errs, fmt.Errorf("num_history_runs %d must not be negative", cfg.NumHistoryRuns))
	}
	seen := map[string]string{}
	for i, n := range cfg.Steps {
		if n == nil {
			errs = append(errs, fmt.Errorf("step %d is nil", i))
			continue
		}
		if n.runner != nil && n.runner.ID() == cfg.ID && n.runner.Kind() == run.KindWorkflow {
			errs = append(errs, fmt.Errorf("step %q runs the workflow itself", n.name))
		}
		errs = append(errs, n.prepare(cfg.ID, fmt.Sprint(i), seen))
	}
	w := &Workflow{cfg: cfg}
	if cfg.InputSchema != nil {
		schema, err := resolveSchema(cfg.InputSchema)
		if err != nil {
			errs = append(errs, fmt.Errorf("input_schema: %w", err))
		}
		w.schema = schema
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("workflow %s: %w", cfg.ID, err)
	}
	w.host = runhost.New(runhost.Config{Store: cfg.Store, Now: cfg.Now, Logger: cfg.Logger})
	return w, nil
}

// resolveSchema reads a JSON Schema given as a map.
func resolveSchema(m map[string]any) (*jsonschema.Resolved, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// ID implements [run.Runner].
func (w *Workflow) ID() string { return w.cfg.ID }

// Name implements [run.Runner].
func (w *Workflow) Name() string { return w.cfg.Name }

// Kind implements [run.Runner]: [run.KindWorkflow].
func (w *Workflow) Kind() run.Kind { return run.KindWorkflow }

// Description describes the workflow.
func (w *Workflow) Description() string { return w.cfg.Description }

// Steps returns the workflow's top-level steps, in order.
func (w *Workflow) Steps() []*Node { return append([]*Node(nil), w.cfg.Steps...) }

// StepDicts describes the steps as GET /workflows/{id} shows them.
func (w *Workflow) StepDicts() []map[string]any { return dicts(w.cfg.Steps) }

// InputSchema is the JSON Schema the input must meet; nil when any goes.
func (w *Workflow) InputSchema() map[string]any { return w.cfg.InputSchema }

// Settings returns the workflow's configuration with defaults applied;
// its slices are the workflow's own: do not change them.
func (w *Workflow) Settings() Config { return w.cfg }

// Runners lists the agents, teams and workflows the steps run, each
// once, in the order the steps name them.
func (w *Workflow) Runners() []run.Runner {
	var out []run.Runner
	seen := map[string]bool{}
	var walk func(nodes []*Node)
	walk = func(nodes []*Node) {
		for _, n := range nodes {
			if n.runner != nil && !seen[string(n.runner.Kind())+"/"+n.runner.ID()] {
				seen[string(n.runner.Kind())+"/"+n.runner.ID()] = true
				out = append(out, n.runner)
			}
			walk(n.children)
			walk(n.otherwise)
		}
	}
	walk(w.cfg.Steps)
	return out
}

// Stream runs the workflow on in and yields its events; see [run.Runner].
func (w *Workflow) Stream(ctx context.Context, in *run.Input) iter.Seq2[run.Event, error] {
	return w.Execute(ctx, in, run.Execution{})
}

// Execute is [Workflow.Stream] under an explicit execution policy: with a
// journal, each step's result is a durable step, so a workflow executed
// again after a crash takes its completed steps' outputs from the journal.
func (w *Workflow) Execute(ctx context.Context, in *run.Input, exec run.Execution) iter.Seq2[run.Event, error] {
	return w.host.Execute(ctx, exec, w.opener(in))
}

// Run runs the workflow on in and returns the run, whatever its status;
// the error is non-nil when it did not complete or pause.
func (w *Workflow) Run(ctx context.Context, in *run.Input) (*run.Output, error) {
	return w.host.Collect(ctx, run.Execution{}, w.opener(in))
}

// Continue goes on with a paused workflow run once its step requirements
// are resolved (req.StepRequirements); see [run.Continuer].
func (w *Workflow) Continue(ctx context.Context, req *run.ContinueRequest) iter.Seq2[run.Event, error] {
	return w.ExecuteContinue(ctx, req, run.Execution{})
}

// ExecuteContinue is [Workflow.Continue] under an explicit execution
// policy.
func (w *Workflow) ExecuteContinue(ctx context.Context, req *run.ContinueRequest, exec run.Execution) iter.Seq2[run.Event, error] {
	return w.host.Execute(ctx, exec, w.continueOpener(req))
}

// CheckContinue reports why req would be refused, without running or
// writing anything.
func (w *Workflow) CheckContinue(ctx context.Context, req *run.ContinueRequest) error {
	_, _, err := w.loadPaused(ctx, req)
	return err
}

// opener opens a new run of in.
func (w *Workflow) opener(in *run.Input) runhost.Opener {
	return func(ctx context.Context, _ run.Execution) (*runhost.Spec, error) {
		if in == nil {
			in = &run.Input{}
		}
		if err := w.checkInput(in); err != nil {
			return nil, err
		}
		now := w.cfg.Now()
		sessionID, runID := in.SessionID, in.RunID
		if sessionID == "" {
			sessionID = w.cfg.NewID()
		}
		if runID == "" {
			runID = w.cfg.NewID()
		}
		session, err := w.openSession(ctx, sessionID, in.UserID)
		if err != nil {
			return nil, err
		}
		out := &run.Output{
			RunID: runID, SessionID: sessionID, ParentRunID: in.ParentRunID, UserID: in.UserID, Input: in,
			Status: run.StatusRunning, Metadata: in.Metadata, CreatedAt: now.Unix(), Metrics: &run.RunMetrics{},
		}
		out.SetRunner(run.KindWorkflow, w.cfg.ID, w.cfg.Name)
		out.Metrics.StartTimer(now)
		out.SessionState = session.MergeState(w.cfg.SessionState, in.SessionState)
		return w.spec(out, session, in.PersistOnStart, &run.RunStarted{}, &turn{w: w}), nil
	}
}

// spec is the run host's view of a workflow run.
func (w *Workflow) spec(out *run.Output, session *storage.Session, persist bool, first run.Event, t *turn) *runhost.Spec {
	return &runhost.Spec{Output: out, Session: session, First: first, Turn: t, Persist: persist, StoreEvents: w.cfg.StoreEvents}
}

// checkInput checks a run's input against the input schema.
func (w *Workflow) checkInput(in *run.Input) error {
	if w.schema == nil {
		return nil
	}
	var value any
	if err := json.Unmarshal([]byte(in.ContentString()), &value); err != nil {
		return fmt.Errorf("%w: workflow %s takes JSON input matching its input_schema: %v", run.ErrInvalidInput, w.cfg.ID, err)
	}
	if err := w.schema.Validate(value); err != nil {
		return fmt.Errorf("%w: workflow %s: the input does not match its input_schema: %v", run.ErrInvalidInput, w.cfg.ID, err)
	}
	return nil
}

// stableID derives a UUID-shaped id from key: the same key, the same id.
func stableID(key string) string {
	sum := sha256.Sum256([]byte(key))
	sum[6] = sum[6]&0x0f | 0x80 // version 8: name-based, own hash
	sum[8] = sum[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}
