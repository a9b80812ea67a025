package team

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"time"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/urlpolicy"
)

// Mode is how a team's leader works with its members (Agno's TeamMode).
type Mode string

// The team modes.
const (
	// ModeCoordinate: the leader delegates tasks to members one by one
	// with delegate_task_to_member and writes the answer from their
	// results. The default.
	ModeCoordinate Mode = "coordinate"
	// ModeRoute: the leader picks one member, whose answer is the team's
	// answer as it is (RespondDirectly).
	ModeRoute Mode = "route"
	// ModeBroadcast: the leader sends one task to every member at once
	// with delegate_task_to_members and writes the answer from all their
	// results (DelegateToAllMembers).
	ModeBroadcast Mode = "broadcast"
	// ModeTasks: the leader keeps a task list, assigns tasks to members
	// and iterates until the goal is met or MaxIterations is reached.
	ModeTasks Mode = "tasks"
)

// Modes lists the modes a team can run in.
func Modes() []Mode { return []Mode{ModeCoordinate, ModeRoute, ModeBroadcast, ModeTasks} }

// Defaults of [Config].
const (
	// DefaultMaxIterations bounds the iterations of the tasks mode.
	DefaultMaxIterations = 10
	// DefaultMaxParallelMembers bounds how many members a broadcast runs
	// at once.
	DefaultMaxParallelMembers = 16
)

// Config configures a [Team]. Model and Members are required.
type Config struct {
	// ID identifies the team (team_id on runs and sessions). Defaults to
	// "team".
	ID string
	// Name is the display name. Defaults to ID.
	Name string
	// Description and Role describe the team (GET /teams, and to a leader
	// whose member it is).
	Description string
	Role        string
	// Model is the leader's model. Required.
	Model model.Model
	// Instructions tell the leader what to do; the leader's system message
	// adds the members and how to reach them.
	Instructions string
	// Members are the runners the leader delegates to, with unique ids.
	// Required.
	Members []run.Runner
	// Mode is how the leader works with the members. Defaults to
	// [ModeCoordinate].
	Mode Mode

	// RespondDirectly makes a member's answer the team's answer, as it is:
	// the leader's run ends with the delegation's result. Defaults to
	// false; [ModeRoute] sets it.
	RespondDirectly bool
	// DelegateToAllMembers gives the leader delegate_task_to_members,
	// which sends one task to every member at once. Defaults to false;
	// [ModeBroadcast] sets it.
	DelegateToAllMembers bool
	// DetermineInputForMembers lets the leader write each member's task;
	// false sends the members the team's input as it came. Defaults to
	// true (nil).
	DetermineInputForMembers *bool
	// MaxIterations bounds the iterations of [ModeTasks]. Defaults to
	// [DefaultMaxIterations].
	MaxIterations int
	// StreamMemberEvents passes the members' events on in the team's
	// stream. Defaults to true (nil).
	StreamMemberEvents *bool
	// StoreMemberResponses keeps the member runs on the team's run
	// (member_responses). Defaults to false: the member runs are rows of
	// their own, with parent_run_id.
	StoreMemberResponses bool
	// MaxParallelMembers bounds how many members a broadcast runs at once.
	// Defaults to [DefaultMaxParallelMembers].
	MaxParallelMembers int

	// AddHistoryToContext sends earlier runs of the session to the leader.
	// Defaults to false.
	AddHistoryToContext bool
	// NumHistoryRuns is how many earlier runs make the history. Defaults
	// to 3.
	NumHistoryRuns int
	// Tools are the leader's own tools, besides the delegation tools.
	Tools []tool.Tool
	// ToolCallLimit caps the leader's tool calls in a run, delegations
	// included; 0 means no cap.
	ToolCallLimit int
	// SessionState is the initial state of a new team session; see
	// agent.Config.SessionState.
	SessionState map[string]any
	// OutputSchema asks the leader for a structured answer. Defaults to
	// none.
	OutputSchema *agent.OutputSchema

	// Store keeps the team's sessions and runs; give the members the same
	// store so their runs are kept beside the team's. Defaults to nil.
	Store storage.Store
	// StoreEvents keeps the team run's events (with its members' when they
	// are streamed) on the stored run. Defaults to false.
	StoreEvents bool
	// Retries, DelayBetweenRetries and ExponentialBackoff retry the
	// leader's failed attempts as for an agent.
	Retries             int
	DelayBetweenRetries time.Duration
	ExponentialBackoff  bool
	// Prices give the leader's model calls a cost; see agent.Config.Prices.
	Prices agent.PriceTable
	// MediaURLPolicy checks the media URLs of a team run's input before it
	// starts; see agent.Config.MediaURLPolicy. Defaults to nil: no check.
	MediaURLPolicy *urlpolicy.Policy
	// Media keeps the bytes of the team run's media, as for an agent (see
	// agent.Config.Media); give the members the same store. Defaults to
	// nil: media stay inline.
	Media media.Store
	// MaxModelMediaBytes bounds the stored media read back into a leader's
	// model request; see agent.Config.MaxModelMediaBytes.
	MaxModelMediaBytes int64

	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// NewID generates ids. Defaults to random UUIDs.
	NewID func() string
	// Logger receives the team's logs. Defaults to slog.Default().
	Logger *slog.Logger
}

// Team is a configured team. It implements [run.Runner], [run.Continuer],
// [run.Collector] and [run.Executor].
type Team struct {
	cfg     Config
	leader  *agent.Agent
	members map[string]run.Runner
}

var (
	_ run.Runner    = (*Team)(nil)
	_ run.Continuer = (*Team)(nil)
	_ run.Collector = (*Team)(nil)
	_ run.Executor  = (*Team)(nil)
)

// New checks cfg and returns the team.
func New(cfg Config) (*Team, error) {
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &Team{cfg: cfg, members: make(map[string]run.Runner, len(cfg.Members))}
	for _, m := range cfg.Members {
		t.members[m.ID()] = m
	}
	tools := slices.Clone(cfg.Tools)
	var iterations agent.Iterations
	switch {
	case cfg.Mode == ModeTasks:
		taskTools, err := t.taskTools()
		if err != nil {
			return nil, fmt.Errorf("team %s: %w", cfg.ID, err)
		}
		tools = append(tools, taskTools...)
		iterations = &taskLoop{t: t}
	case cfg.DelegateToAllMembers:
		tools = append(tools, &broadcastTool{t: t})
	default:
		tools = append(tools, &delegateTool{t: t})
	}
	leader, err := agent.New(agent.Config{
		ID: cfg.ID, Name: cfg.Name, Kind: run.KindTeam, Model: cfg.Model,
		Instructions: t.systemMessage(), Tools: tools, Store: cfg.Store,
		ToolCallLimit: cfg.ToolCallLimit, SessionState: cfg.SessionState,
		MediaURLPolicy: cfg.MediaURLPolicy, Media: cfg.Media, MaxModelMediaBytes: cfg.MaxModelMediaBytes,
		AddHistoryToContext: cfg.AddHistoryToContext, NumHistoryRuns: cfg.NumHistoryRuns,
		OutputSchema: cfg.OutputSchema, StoreEvents: cfg.StoreEvents,
		Retries: cfg.Retries, DelayBetweenRetries: cfg.DelayBetweenRetries, ExponentialBackoff: cfg.ExponentialBackoff,
		Prices: cfg.Prices, Now: cfg.Now, NewID: cfg.NewID, Logger: cfg.Logger, Iterations: iterations,
	})
	if err != nil {
		return nil, fmt.Errorf("team %s: leader: %w", cfg.ID, err)
	}
	t.leader = leader
	return t, nil
}

func (c *Config) applyDefaults() {
	if c.ID == "" {
		c.ID = "team"
	}
	if c.Name == "" {
		c.Name = c.ID
	}
	if c.Mode == "" {
		c.Mode = ModeCoordinate
	}
	switch c.Mode {
	case ModeRoute:
		c.RespondDirectly = true
	case ModeBroadcast:
		c.DelegateToAllMembers = true
	}
	if c.MaxIterations == 0 {
		c.MaxIterations = DefaultMaxIterations
	}
	if c.MaxParallelMembers == 0 {
		c.MaxParallelMembers = DefaultMaxParallelMembers
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewID == nil {
		c.NewID = run.NewUUID
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Model == nil {
		errs = append(errs, errors.New("Model (the leader's model) is required"))
	}
	if !slices.Contains(Modes(), c.Mode) {
		errs = append(errs, fmt.Errorf("mode %q is not one of coordinate, route, broadcast, tasks", c.Mode))
	}
	if c.Mode == ModeTasks && (c.RespondDirectly || c.DelegateToAllMembers) {
		errs = append(errs, errors.New("mode tasks takes neither RespondDirectly nor DelegateToAllMembers: its leader executes tasks with execute_task"))
	}
	if c.RespondDirectly && c.DelegateToAllMembers {
		errs = append(errs, errors.New("RespondDirectly and DelegateToAllMembers exclude each other: one member's answer cannot be the answer of a task sent to all"))
	}
	if len(c.Members) == 0 {
		errs = append(errs, errors.New("a team needs at least one member"))
	}
	seen := map[string]bool{}
	for i, m := range c.Members {
		switch {
		case m == nil:
			errs = append(errs, fmt.Errorf("member %d is nil", i))
		case m.ID() == "":
			errs = append(errs, fmt.Errorf("member %d has no id", i))
		case seen[m.ID()]:
			errs = append(errs, fmt.Errorf("member id %q is used twice: the leader names members by id", m.ID()))
		case m.ID() == c.ID:
			errs = append(errs, fmt.Errorf("member id %q is the team's own id", m.ID()))
		default:
			seen[m.ID()] = true
		}
	}
	if c.MaxIterations < 0 {
		errs = append(errs, fmt.Errorf("MaxIterations %d must not be negative", c.MaxIterations))
	}
	if c.MaxParallelMembers < 0 {
		errs = append(errs, fmt.Errorf("MaxParallelMembers %d must not be negative", c.MaxParallelMembers))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("team %s: %w", c.ID, err)
	}
	return nil
}

// ID implements [run.Runner].
func (t *Team) ID() string { return t.cfg.ID }

// Name implements [run.Runner].
func (t *Team) Name() string { return t.cfg.Name }

// Kind implements [run.Runner]: [run.KindTeam].
func (t *Team) Kind() run.Kind { return run.KindTeam }

// Description describes the team.
func (t *Team) Description() string { return t.cfg.Description }

// Role is the team's role, as a leader whose member it is sees it.
func (t *Team) Role() string { return t.cfg.Role }

// Instructions returns the leader's instructions as configured.
func (t *Team) Instructions() string { return t.cfg.Instructions }

// Mode is how the leader works with the members.
func (t *Team) Mode() Mode { return t.cfg.Mode }

// Members returns the members, in order.
func (t *Team) Members() []run.Runner { return slices.Clone(t.cfg.Members) }

// Settings returns the team's configuration as given, with defaults
// applied; its slices are the team's own: do not change them.
func (t *Team) Settings() Config { return t.cfg }

// ModelInfo names the leader's model and its provider.
func (t *Team) ModelInfo() model.Info { return t.cfg.Model.Info() }

// Stream runs the team on in and yields the run's events; see
// [run.Runner].
func (t *Team) Stream(ctx context.Context, in *run.Input) iter.Seq2[run.Event, error] {
	return t.leader.Stream(ctx, in)
}

// Execute is [Team.Stream] under an explicit execution policy; see
// [run.Executor].
func (t *Team) Execute(ctx context.Context, in *run.Input, exec run.Execution) iter.Seq2[run.Event, error] {
	return t.leader.Execute(ctx, in, exec)
}

// Run runs the team on in and returns the run; see [agent.Agent.Run].
func (t *Team) Run(ctx context.Context, in *run.Input) (*run.Output, error) {
	return t.leader.Run(ctx, in)
}

// Continue continues a team run: one the leader's own tools paused, or a
// restart from a message; see [run.Continuer].
func (t *Team) Continue(ctx context.Context, req *run.ContinueRequest) iter.Seq2[run.Event, error] {
	return t.leader.Continue(ctx, req)
}

// ExecuteContinue is [Team.Continue] under an explicit execution policy.
func (t *Team) ExecuteContinue(ctx context.Context, req *run.ContinueRequest, exec run.Execution) iter.Seq2[run.Event, error] {
	return t.leader.ExecuteContinue(ctx, req, exec)
}

// CheckContinue reports why req would be refused, without running or
// writing anything; see [agent.Agent.CheckContinue].
func (t *Team) CheckContinue(ctx context.Context, req *run.ContinueRequest) error {
	return t.leader.CheckContinue(ctx, req)
}
