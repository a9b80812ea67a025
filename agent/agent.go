package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/tool"
)

// Agent is a configured native agent. It implements [run.Runner].
type Agent struct {
	cfg  Config
	host *runhost.Host
	// prepared holds what the first run builds: New only validates, so
	// building an agent per request stays cheap.
	prepared atomic.Pointer[prepared]
}

// prepared is the part of an agent built on first use.
type prepared struct {
	info     model.Info
	tools    *tool.Set
	toolDefs []model.ToolDefinition
}

var _ run.Runner = (*Agent)(nil)

// New checks cfg and returns the agent.
func New(cfg Config) (*Agent, error) {
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := tool.CheckNames(cfg.Tools); err != nil {
		return nil, fmt.Errorf("agent %s: %w", cfg.ID, err)
	}
	cacheSize := cmp.Or(cfg.SessionCacheSize, runhost.DefaultSessionCacheSize)
	a := &Agent{cfg: cfg, host: runhost.New(runhost.Config{Store: cfg.Store, Now: cfg.Now, Sleep: cfg.Sleep, Logger: cfg.Logger,
		ApprovalExpiry: cfg.ApprovalExpiry, SessionCacheSize: cacheSize})}
	if cfg.OutputSchema != nil && cfg.OutputSchema.resolved == nil {
		checked, err := JSONSchema(cfg.OutputSchema.Name, cfg.OutputSchema.Schema)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", cfg.ID, err)
		}
		a.cfg.OutputSchema = checked
	}
	return a, nil
}

// prepare builds the tool set on first use. Concurrent first runs may both
// build it; one result wins and both are equivalent.
func (a *Agent) prepare() (*prepared, error) {
	if p := a.prepared.Load(); p != nil {
		return p, nil
	}
	tools := a.cfg.Tools
	if a.cfg.OffloadToolResults {
		extra, err := a.offloadTools()
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", a.cfg.ID, err)
		}
		tools = append(append([]tool.Tool(nil), tools...), extra...)
	}
	if a.cfg.EnableAgenticMemory {
		memoryTool, err := a.agenticMemoryTool()
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", a.cfg.ID, err)
		}
		tools = append(append([]tool.Tool(nil), tools...), memoryTool)
	}
	set, err := tool.NewSet(tools...)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", a.cfg.ID, err)
	}
	p := &prepared{info: a.cfg.Model.Info(), tools: set}
	for _, spec := range set.Specs() {
		p.toolDefs = append(p.toolDefs, model.ToolDefinition{Name: spec.Name, Description: spec.Description, Parameters: spec.Parameters})
	}
	if !a.prepared.CompareAndSwap(nil, p) {
		return a.prepared.Load(), nil
	}
	return p, nil
}

// ID implements [run.Runner].
func (a *Agent) ID() string { return a.cfg.ID }

// Name implements [run.Runner].
func (a *Agent) Name() string { return a.cfg.Name }

// Kind implements [run.Runner].
func (a *Agent) Kind() run.Kind { return a.cfg.Kind }

// Stream runs the agent on in and yields the run's events; see [run.Runner].
// A failed run ends with a RunError event rather than an error value; the
// error slot carries only failures to start the run at all (such as a
// session owned by another user).
func (a *Agent) Stream(ctx context.Context, in *run.Input) iter.Seq2[run.Event, error] {
	return a.Execute(ctx, in, run.Execution{})
}

// Execute is [Agent.Stream] under an explicit execution policy; see
// [run.Executor].
func (a *Agent) Execute(ctx context.Context, in *run.Input, exec run.Execution) iter.Seq2[run.Event, error] {
	return a.host.Execute(ctx, exec, a.opener(in))
}

// Run runs the agent on in and returns the run. The run is returned for
// every status; the error is non-nil when it did not complete (ERROR,
// CANCELLED) or could not start. A PAUSED run returns no error: inspect
// out.Status and out.Requirements, then call [Agent.Continue].
func (a *Agent) Run(ctx context.Context, in *run.Input) (*run.Output, error) {
	return a.host.Collect(ctx, run.Execution{}, a.opener(in))
}

// opener opens a new run of in for the run host: it reads the session and
// builds the run's output; the turn builds the messages the model sees.
func (a *Agent) opener(in *run.Input) runhost.Opener {
	return func(ctx context.Context, _ run.Execution) (*runhost.Spec, error) {
		if in == nil {
			in = &run.Input{}
		}
		if a.cfg.MediaURLPolicy != nil {
			if err := a.cfg.MediaURLPolicy.CheckInput(ctx, withoutStoredMedia(in)); err != nil {
				return nil, err
			}
		}
		p, err := a.prepare()
		if err != nil {
			return nil, err
		}
		st, err := a.start(ctx, in, p)
		if err != nil {
			return nil, err
		}
		// Offloaded once the session is known to be the caller's, so a refused
		// run leaves no blobs behind.
		if in, err = a.offloadInput(ctx, in); err != nil {
			return nil, err
		}
		st.in, st.out.Input = in, in
		// With PersistOnStart the RUNNING row is written before RunStarted
		// goes out, so a client reacting to RunStarted finds the session
		// and the run.
		spec := a.spec(st, in.PersistOnStart, &run.RunStarted{Model: p.info.ID, ModelProvider: p.info.Provider})
		spec.PersistDelay = in.PersistDelay
		return spec, nil
	}
}

// spec hands a run state to the run host.
func (a *Agent) spec(st *runState, persist bool, first run.Event) *runhost.Spec {
	st.a = a
	return &runhost.Spec{
		Output: st.out, Session: st.session, First: first, Turn: st, Persist: persist, Row: st.row,
		Retry:       runhost.Retry{Retries: a.cfg.Retries, Delay: a.cfg.DelayBetweenRetries, Exponential: a.cfg.ExponentialBackoff, Retryable: retryable},
		StoreEvents: a.cfg.StoreEvents,
	}
}

// withUser carries the run's user to the offload and memory tools.
func (a *Agent) withUser(ctx context.Context, userID string) context.Context {
	if !a.cfg.OffloadToolResults && !a.cfg.EnableAgenticMemory {
		return ctx
	}
	return context.WithValue(ctx, userKey{}, userID)
}

// encodeArgs renders parsed tool arguments back to JSON.
func encodeArgs(args map[string]any) string {
	if args == nil {
		return "{}"
	}
	data, err := json.Marshal(args)
	if err != nil {
		return "{}"
	}
	return string(data)
}

// ModelInfo names the agent's model and its provider.
func (a *Agent) ModelInfo() model.Info { return a.cfg.Model.Info() }

// Instructions returns the agent's instructions.
func (a *Agent) Instructions() string { return a.cfg.Instructions }

var (
	_ run.Continuer = (*Agent)(nil)
	_ run.Collector = (*Agent)(nil)
	_ run.Executor  = (*Agent)(nil)
)
