package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// Agent is a configured native agent. It implements [run.Runner].
type Agent struct {
	cfg Config
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
	a := &Agent{cfg: cfg}
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
func (a *Agent) Kind() run.Kind { return run.KindAgent }

// Stream runs the agent on in and yields the run's events; see [run.Runner].
// A failed run ends with a RunError event rather than an error value; the
// error slot carries only failures to start the run at all (such as a
// session owned by another user).
func (a *Agent) Stream(ctx context.Context, in *run.Input) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		_, err := a.execute(ctx, in, yield)
		if startErr, ok := err.(*startError); ok {
			yield(nil, startErr.err)
		} else if errors.Is(err, run.ErrInterrupted) {
			yield(nil, err)
		}
	}
}

// Run runs the agent on in and returns the run. The run is returned for
// every status; the error is non-nil when it did not complete (ERROR,
// CANCELLED) or could not start. A PAUSED run returns no error: inspect
// out.Status and out.Requirements, then call [Agent.Continue].
func (a *Agent) Run(ctx context.Context, in *run.Input) (*run.Output, error) {
	out, err := a.execute(ctx, in, nil)
	if startErr, ok := err.(*startError); ok {
		return nil, startErr.err
	}
	return out, err
}

// startError marks a failure before the run existed: nothing was persisted
// and no event was sent.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }

// execute starts a new run and drives it to a terminal state.
func (a *Agent) execute(parent context.Context, in *run.Input, yield func(run.Event, error) bool) (*run.Output, error) {
	if in == nil {
		in = &run.Input{}
	}
	ctx, cancel, st, err := a.launch(parent, in.UserID, yield, func(ctx context.Context, p *prepared) (*runState, error) {
		return a.start(ctx, in, p)
	})
	if err != nil {
		return nil, err
	}
	defer cancel()
	// With PersistOnStart the RUNNING row is written before RunStarted goes
	// out, so a client reacting to RunStarted finds the session and the run.
	started := &run.RunStarted{Model: st.p.info.ID, ModelProvider: st.p.info.Provider}
	st.persist = in.PersistOnStart
	err = a.buildMessages(ctx, st, in)
	if err == nil && st.persist {
		err = a.saveRunning(ctx, st)
	}
	st.em.emit(started)
	if err != nil {
		return a.finish(parent, st, err)
	}
	err = a.attempts(ctx, st)
	if err == nil {
		a.updateMemories(ctx, st, in.ContentString())
	}
	return a.finish(parent, st, err)
}

// launch prepares the agent, opens a run with open under a cancellable
// context, and wires the run's events to yield. The caller must call cancel.
func (a *Agent) launch(parent context.Context, userID string, yield func(run.Event, error) bool,
	open func(ctx context.Context, p *prepared) (*runState, error)) (context.Context, context.CancelFunc, *runState, error) {
	p, err := a.prepare()
	if err != nil {
		return nil, nil, nil, &startError{err}
	}
	ctx, cancel := context.WithCancel(parent)
	if a.cfg.OffloadToolResults {
		ctx = context.WithValue(ctx, userKey{}, userID)
	}
	st, err := open(ctx, p)
	if err != nil {
		cancel()
		return nil, nil, nil, &startError{err}
	}
	st.em = &emitter{yield: yield, cancel: cancel, now: a.cfg.Now, keep: a.cfg.StoreEvents, out: st.out}
	return ctx, cancel, st, nil
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
)
