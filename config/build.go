package config

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/agnogo/agnogo/codemode"
	"github.com/agnogo/agnogo/tool"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/dburl"
	"github.com/agnogo/agnogo/team"
	"github.com/agnogo/agnogo/tools/mcp"
	"github.com/agnogo/agnogo/workflow"
)

// ErrUnknownAgent is the error of [OS.Runner] when no agent, team or
// workflow has the id. Match it with errors.Is.
var ErrUnknownAgent = errors.New("unknown agent")

// toolsError marks a toolkit or tool entry that could not be built, so
// that the error points at its settings.
type toolsError struct {
	err  error
	line int // the settings' line; 0 for the agent's
}

// Error implements error.
func (e *toolsError) Error() string { return e.err.Error() }

// Unwrap returns the toolkit's error.
func (e *toolsError) Unwrap() error { return e.err }

// BuildOptions tune [File.Build].
type BuildOptions struct {
	// DB overrides the file's db key, as the --db flag does. Defaults to
	// [File.DB].
	DB string
	// Getenv reads the model credentials: OPENAI_API_KEY, OPENAI_BASE_URL,
	// ANTHROPIC_API_KEY. Defaults to os.Getenv.
	Getenv func(string) string
	// HTTPClient sends the model requests. Defaults to each provider's own
	// client.
	HTTPClient *http.Client
	// Logger receives the agents' logs. Defaults to slog.Default().
	Logger *slog.Logger
	// RunLog receives one line per run start, end and failure (run, session,
	// user, runner, duration, tokens, cost, error type, trace id). Defaults
	// to nil: none (agnogo serve sets its logger).
	RunLog *slog.Logger
}

// OS is what a config file builds: the opened database, the agents, the
// teams and the workflows, ready to run. Close it when done.
type OS struct {
	// Name is the AgentOS name.
	Name string
	// File is the configuration the OS was built from.
	File *File
	// Store is the opened database.
	Store dburl.Store
	// Agents are the native agents by id.
	Agents map[string]*agent.Agent
	// External are the external agents (claude, codex) by id.
	External map[string]*external.Agent
	// AgentIDs lists every configured agent id in file order, external
	// agents included.
	AgentIDs []string
	// Teams are the teams by id (package team).
	Teams map[string]*team.Team
	// TeamIDs lists every configured team id in file order.
	TeamIDs []string
	// Workflows are the workflows by id (package workflow).
	Workflows map[string]*workflow.Workflow
	// WorkflowIDs lists every configured workflow id in file order.
	WorkflowIDs []string
	// Warnings are problems that do not stop the OS from starting but will
	// fail some runs, such as a model without credentials; the file's own
	// warnings come first.
	Warnings []string
	// MissingCredentials lists the models built without credentials and
	// the agents whose runs fail until they are set; each also has a
	// warning in Warnings.
	MissingCredentials []MissingCredential
	// Media is the opened media store (media_storage), which every native
	// agent and the HTTP server ([OS.Server]) keep the media of runs in.
	Media media.Store
	// MediaLocation says where Media keeps its blobs, for logs: a
	// directory, or the store's URL without its parameters.
	MediaLocation string

	dbURL      string
	queue      *durable.Queue
	redis      io.Closer                  // the queue's Redis client, when it has one
	mcpServers map[*MCPServer]*mcp.Server // the native agents' MCP servers
	mcpTools   []tool.Tool                // the toolkits mcp_server serves
	// Observer observes the OS's runs: spans (tracing), Prometheus metrics
	// and a log line per run. Never nil once built.
	Observer      *observe.Observer
	stopRetention func() // stops deleting old traces; nil when none are
}

// MissingCredential is a model built without credentials: its agents' runs
// fail with an authentication error until Variable is set.
type MissingCredential struct {
	// Model is the model's name: its key in models, or its provider:id.
	Model string
	// Variable is the environment variable to set, such as OPENAI_API_KEY.
	Variable string
	// Agents are the ids of the agents, then of the teams, on the model, in
	// file order.
	Agents []string
}

// Runner returns the agent, team or workflow with the given id; agents are
// native or external. An unknown id returns an error wrapping
// [ErrUnknownAgent] that lists the known ids.
func (o *OS) Runner(id string) (run.Runner, error) {
	if a, ok := o.Agents[id]; ok {
		return a, nil
	}
	if a, ok := o.External[id]; ok {
		return a, nil
	}
	if t, ok := o.Teams[id]; ok {
		return t, nil
	}
	if w, ok := o.Workflows[id]; ok {
		return w, nil
	}
	if len(o.WorkflowIDs) > 0 {
		return nil, fmt.Errorf("%w, team or workflow %q; known agents: %s; teams: %s; workflows: %s", ErrUnknownAgent, id,
			orNoneText(o.AgentIDs), orNoneText(o.TeamIDs), strings.Join(o.WorkflowIDs, ", "))
	}
	if len(o.TeamIDs) == 0 {
		known := "no agents are configured"
		if len(o.AgentIDs) > 0 {
			known = "known agents: " + strings.Join(o.AgentIDs, ", ")
		}
		return nil, fmt.Errorf("%w %q; %s", ErrUnknownAgent, id, known)
	}
	return nil, fmt.Errorf("%w or team %q; known agents: %s; teams: %s", ErrUnknownAgent, id, orNoneText(o.AgentIDs), strings.Join(o.TeamIDs, ", "))
}

// Runners returns every agent, in file order, then every team, then every
// workflow, each in file order: what [OS.Server] serves.
func (o *OS) Runners() []run.Runner {
	ids := slices.Concat(o.AgentIDs, o.TeamIDs, o.WorkflowIDs)
	runners := make([]run.Runner, 0, len(ids))
	for _, id := range ids {
		if r, err := o.Runner(id); err == nil {
			runners = append(runners, r)
		}
	}
	return runners
}

// Close stops the durable queue, if one was started, closes the native
// agents' MCP servers (stopping the processes of stdio ones), and closes the
// media store and the database — after the queue, whose runs use them all.
func (o *OS) Close() error {
	var errs []error
	if o.queue != nil {
		errs = append(errs, o.queue.Shutdown(time.Duration(o.File.Queue.StopTimeoutSeconds)*time.Second))
		o.queue = nil
	}
	if o.stopRetention != nil {
		o.stopRetention()
		o.stopRetention = nil
	}
	if o.Observer != nil {
		// The spans of the last runs are exported before the database
		// closes.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, o.Observer.Shutdown(ctx))
		cancel()
		o.Observer = nil
	}
	if o.mcpServers != nil {
		errs = append(errs, closeMCP(o.mcpServers))
		o.mcpServers = nil
	}
	if o.redis != nil {
		errs = append(errs, o.redis.Close())
		o.redis = nil
	}
	if o.Media != nil {
		errs = append(errs, o.Media.Close())
		o.Media = nil
	}
	if o.Store != nil {
		errs = append(errs, o.Store.Close())
	}
	return errors.Join(errs...)
}

// Build opens the database and the media store, and builds every agent of
// the file, then every team — each after the teams among its members —
// then every workflow — each after the workflows its steps run — on the
// same database as the agents.
//
// The database is opened as it is: one with an older schema is refused with
// an error naming `agnogo migrate`, and a new SQLite file is created. The
// media store (media_storage) is opened without touching it: a directory is
// created by the first upload; a URL it cannot open is an [*Error] at the
// key's line. A model whose credentials are missing does not fail Build: its
// agents are built, [OS.Warnings] names the variable to set, and each run of
// those agents fails with an authentication error naming it. External agents are
// built without starting their CLI: a missing binary fails their runs, not
// Build.
//
// The MCP servers of native agents (mcp_servers) are connected, all at once,
// before the agents are built: a stdio server's command is started, and one
// that cannot be reached is an [*Error] at its line naming the server and
// the agent. Each entry is connected once per Build and closed by
// [OS.Close].
func (f *File) Build(ctx context.Context, opts BuildOptions) (*OS, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	dbURL := cmp.Or(opts.DB, f.DB, DefaultDB)
	store, err := dburl.Open(ctx, dbURL, dburl.Options{})
	if err != nil {
		return nil, err
	}
	mediaStore, mediaLocation, mediaWarning, err := f.openMedia(ctx, dbURL)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	built := &OS{
		Name:          f.Name,
		File:          f,
		Store:         store,
		Media:         mediaStore,
		MediaLocation: mediaLocation,
		dbURL:         dbURL,
		Agents:        map[string]*agent.Agent{},
		Warnings:      slices.Clone(f.Warnings),
		External:      map[string]*external.Agent{},
		Teams:         map[string]*team.Team{},
		Workflows:     map[string]*workflow.Workflow{},
	}
	if mediaWarning != "" {
		built.Warnings = append(built.Warnings, mediaWarning)
	}
	if err := f.buildObserver(ctx, built, &opts); err != nil {
		_ = built.Close()
		return nil, err
	}
	if built.mcpServers, err = f.connectMCP(ctx, opts); err != nil {
		_ = built.Close()
		return nil, err
	}
	if m := f.MCPServer; m != nil && len(m.Tools) > 0 {
		if built.mcpTools, _, err = buildTools(&Agent{Tools: m.Tools, ToolkitSettings: m.ToolkitSettings}); err != nil {
			_ = built.Close()
			return nil, &Error{Source: f.Source, Line: m.Line, Message: fmt.Sprintf("mcp_server tools: %v", err)}
		}
	}
	models := map[*Model]model.Model{}
	missing := map[*Model]int{} // index in built.MissingCredentials
	// modelFor builds a configured model once, however many agents use it,
	// and notes the agents of a model without credentials.
	modelFor := func(configured *Model, agentID string) (model.Model, error) {
		m, ok := models[configured]
		if !ok {
			var warning string
			var err error
			m, warning, err = buildModel(configured, opts)
			if err != nil {
				return nil, err
			}
			if warning != "" {
				built.Warnings = append(built.Warnings, warning)
			}
			if keyless, ok := m.(*keylessModel); ok {
				missing[configured] = len(built.MissingCredentials)
				built.MissingCredentials = append(built.MissingCredentials, MissingCredential{Model: keyless.name, Variable: keyless.variable})
			}
			models[configured] = m
		}
		if i, ok := missing[configured]; ok && !slices.Contains(built.MissingCredentials[i].Agents, agentID) {
			built.MissingCredentials[i].Agents = append(built.MissingCredentials[i].Agents, agentID)
		}
		return m, nil
	}
	for _, a := range f.Agents {
		built.AgentIDs = append(built.AgentIDs, a.ID)
		if a.External() {
			ext, err := buildExternal(a, store, opts)
			if err != nil {
				_ = built.Close()
				return nil, f.errorAt(a.Line, a, err)
			}
			built.External[a.ID] = ext
			continue
		}
		if a.ResolvedModel == nil {
			_ = built.Close()
			return nil, f.errorAt(a.Line, a, errors.New("no model: read the file with config.Load or config.Parse"))
		}
		m, err := modelFor(a.ResolvedModel, a.ID)
		if err != nil {
			_ = built.Close()
			return nil, f.errorAt(a.ResolvedModel.Line, a, err)
		}
		var memoryModel model.Model
		if a.ResolvedMemoryModel != nil {
			if memoryModel, err = modelFor(a.ResolvedMemoryModel, a.ID); err != nil {
				_ = built.Close()
				return nil, f.errorAt(cmp.Or(a.ResolvedMemoryModel.Line, a.memoryModelLine), a, err)
			}
		}
		native, err := f.buildAgent(a, m, memoryModel, store, mediaStore, opts, built.mcpServers)
		if err != nil {
			_ = built.Close()
			line := a.Line
			var toolsErr *toolsError
			if errors.As(err, &toolsErr) && toolsErr.line != 0 {
				line = toolsErr.line
			}
			return nil, f.errorAt(line, a, err)
		}
		built.Agents[a.ID] = native
	}
	if err := f.buildTeams(built, store, opts, modelFor); err != nil {
		_ = built.Close()
		return nil, err
	}
	if err := f.buildWorkflows(built, store, opts); err != nil {
		_ = built.Close()
		return nil, err
	}
	return built, nil
}

// errorAt places a build failure of agent a at a line of the file.
func (f *File) errorAt(line int, a *Agent, err error) error {
	if line == 0 {
		line = a.Line
	}
	return &Error{Source: f.Source, Line: line, Message: fmt.Sprintf("agent %q: %v", a.ID, err)}
}

// buildAgent builds one native agent.
// Its MCP servers' tools (mcp_servers) come from connected.
func (f *File) buildAgent(a *Agent, m, memoryModel model.Model, store dburl.Store, mediaStore media.Store, opts BuildOptions,
	connected map[*MCPServer]*mcp.Server) (*agent.Agent, error) {
	cfg, err := f.agentConfig(a, m, memoryModel, store, mediaStore, opts)
	if err != nil {
		return nil, err
	}
	if cfg.Tools, err = addMCPTools(a, cfg.Tools, connected); err != nil {
		return nil, err
	}
	if cfg.Tools, err = a.Approvals.apply(cfg.Tools); err != nil {
		return nil, err
	}
	if a.CodeMode != nil {
		cm, err := codemode.New(cfg.Tools, a.CodeMode.config())
		if err != nil {
			return nil, &toolsError{err: err, line: a.CodeMode.Line}
		}
		cfg.Tools = cm.Tools()
	}
	return agent.New(cfg)
}

// agentConfig is the agent.Config a native agent's keys describe.
func (f *File) agentConfig(a *Agent, m, memoryModel model.Model, store dburl.Store, mediaStore media.Store, opts BuildOptions) (agent.Config, error) {
	tools, toolInstructions, err := buildTools(a)
	if err != nil {
		return agent.Config{}, err
	}
	instructions := a.Instructions
	for _, extra := range toolInstructions {
		instructions = strings.TrimSpace(instructions + "\n\n" + extra)
	}
	return agent.Config{
		ID:                   a.ID,
		Name:                 a.Name,
		Model:                m,
		Instructions:         instructions,
		Tools:                tools,
		Store:                store,
		SessionState:         a.SessionState,
		AddHistoryToContext:  a.AddHistoryToContext,
		NumHistoryRuns:       a.NumHistoryRuns,
		SessionCacheSize:     a.SessionCacheSize,
		OutputSchema:         a.OutputSchema,
		Retries:              a.Retries,
		DelayBetweenRetries:  a.DelayBetweenRetries,
		ExponentialBackoff:   a.ExponentialBackoff,
		ToolCallLimit:        a.ToolCallLimit,
		StoreEvents:          a.StoreEvents,
		OffloadToolResults:   a.OffloadToolResults,
		OffloadThreshold:     a.OffloadThreshold,
		MediaURLPolicy:       f.MediaURLPolicy(),
		Media:                mediaStore,
		MaxModelMediaBytes:   a.MaxModelMediaBytes,
		UpdateMemoryOnRun:    a.UpdateMemoryOnRun,
		AddMemoriesToContext: a.AddMemoriesToContext,
		MemoryModel:          memoryModel,
		EnableAgenticMemory:  a.EnableAgenticMemory,
		Prices:               agentPrices(a),
		ApprovalExpiry:       a.Approvals.expiry(),
		Logger:               opts.Logger,
	}, nil
}

// agentPrices is the built-in price table with the prices the file gives
// the agent's models, which win.
func agentPrices(a *Agent) agent.PriceTable {
	if (a.ResolvedModel == nil || a.ResolvedModel.Prices == nil) && (a.ResolvedMemoryModel == nil || a.ResolvedMemoryModel.Prices == nil) {
		return nil // the built-in table, shared
	}
	prices := agent.DefaultPrices()
	for _, m := range []*Model{a.ResolvedMemoryModel, a.ResolvedModel} {
		if m != nil && m.Prices != nil {
			prices[m.ID] = *m.Prices
		}
	}
	return prices
}
