package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agnogo/agnogo/config"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/observe"
	agnorun "github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
)

// `agnogo run --continue RUN_ID --approve|--reject` resolves the
// confirmations a paused run waits for and runs it on, in this process, as
// POST /agents/{id}/runs/{run_id}/continue does over HTTP.

// continueCollector is a continuer that can also return the whole
// continued run, as agents do.
type continueCollector interface {
	ContinueRun(ctx context.Context, req *agnorun.ContinueRequest) (*agnorun.Output, error)
}

// continuePaused continues the paused run flags.continueRun, confirming or
// rejecting every tool call it waits for, and presents it like a new run.
func (c *cli) continuePaused(cmd *cobra.Command, flags runFlags) error {
	ctx := cmd.Context()
	switch {
	case flags.approve && flags.reject:
		return usagef("--approve and --reject cannot both be given")
	case !flags.approve && !flags.reject:
		return usagef("--continue needs --approve (run the tool calls the run waits for) or --reject (refuse them)")
	}
	if flags.db != "" {
		if _, err := dburl.Parse(flags.db); err != nil {
			return usagef("--db: %v", err)
		}
	}
	file, err := loadRunConfig(flags.config)
	if err != nil {
		return err
	}
	dbURL, err := existingDatabase(flags.db, file)
	if err != nil {
		return err
	}
	agentOS, err := buildAgents(ctx, file, dbURL)
	if err != nil {
		return err
	}
	defer agentOS.Close()
	ctx = observe.With(ctx, agentOS.Observer) // traced with tracing on, like a server's runs

	runID := flags.continueRun
	paused, err := pausedRun(ctx, agentOS.Store, runID, flags.user, flags.session)
	if err != nil {
		return err
	}
	var tools []*agnorun.ToolExecution
	var steps []*agnorun.StepRequirement
	if isWorkflowRun(paused) {
		steps, err = stepAnswers(paused, flags.approve)
	} else {
		tools, err = confirmations(paused, flags.approve)
	}
	if err != nil {
		return err
	}
	runnerID := paused.RunnerID()
	runner, err := agentOS.Runner(runnerID)
	if errors.Is(err, config.ErrUnknownAgent) {
		return &usageError{err: fmt.Errorf("run %s belongs to %w", runID, err)}
	}
	if err != nil {
		return err
	}
	continuer, ok := runner.(agnorun.Continuer)
	if !ok {
		return fmt.Errorf("run %s: agent %s's runs cannot be continued", runID, runner.ID())
	}
	parked, err := c.parkedOnQueue(ctx, file, dbURL, agentOS.Store, runID, paused.UserID)
	if err != nil {
		return err
	}
	if parked {
		return fmt.Errorf("run %s is paused on the durable queue of a server: continue it through that server's AgentOS API (POST %s/runs/%s/continue with background=true)",
			runID, runnerPath(paused), runID)
	}

	req := &agnorun.ContinueRequest{RunID: runID, SessionID: flags.session, UserID: cmp.Or(flags.user, paused.UserID), Tools: tools,
		StepRequirements: steps}
	return c.present(ctx, cmd.OutOrStdout(), flags, runner.ID(), runExecution{
		stream: func(ctx context.Context) iter.Seq2[agnorun.Event, error] { return continuer.Continue(ctx, req) },
		collect: func(ctx context.Context) (*agnorun.Output, error) {
			if r, ok := runner.(continueCollector); ok {
				return r.ContinueRun(ctx, req)
			}
			return collect(continuer.Continue(ctx, req), runner.ID())
		},
	})
}

// pausedRun reads the run to continue and checks that it is paused (in
// sessionID, when given).
func pausedRun(ctx context.Context, store storage.RunStore, runID, userID, sessionID string) (*agnorun.Output, error) {
	rec, err := store.GetRun(ctx, runID, userID)
	switch {
	case errors.Is(err, storage.ErrNotFound) && userID != "":
		return nil, fmt.Errorf("no run %s for user %s", runID, userID)
	case errors.Is(err, storage.ErrNotFound):
		return nil, fmt.Errorf("no run %s", runID)
	case err != nil:
		return nil, fmt.Errorf("load run %s: %w", runID, err)
	}
	out := rec.Run
	if sessionID != "" && out.SessionID != sessionID {
		return nil, fmt.Errorf("run %s is in session %s, not %s", runID, out.SessionID, sessionID)
	}
	if out.Status != agnorun.StatusPaused {
		return nil, fmt.Errorf("run %s is %s, not paused: it waits for no confirmation", runID, out.Status)
	}
	return out, nil
}

// confirmations answers every confirmation a paused run waits for with
// approved. A run that also waits for something else (user input, an
// external result) cannot be continued from the command line.
func confirmations(paused *agnorun.Output, approved bool) ([]*agnorun.ToolExecution, error) {
	var (
		tools  []*agnorun.ToolExecution
		others []string
	)
	for _, req := range paused.ActiveRequirements() {
		if !req.NeedsConfirmation() {
			name := "?"
			if req.ToolExecution != nil {
				name = req.ToolExecution.ToolName
			}
			others = append(others, requirementAction(req)+" "+name)
			continue
		}
		tools = append(tools, &agnorun.ToolExecution{ToolCallID: req.ToolExecution.ToolCallID, Confirmed: &approved})
	}
	if len(others) > 0 {
		return nil, fmt.Errorf("run %s also waits to %s, which --approve and --reject do not give: continue it through the AgentOS API (POST %s/runs/%s/continue)",
			paused.RunID, strings.Join(others, ", "), runnerPath(paused), paused.RunID)
	}
	return tools, nil
}

// parkedOnQueue reports whether a server's durable queue holds the run,
// paused: that server continues it, and continuing it here as well would
// leave the queue's copy waiting for ever. Nothing is executed: the queue
// is opened only to look.
func (c *cli) parkedOnQueue(ctx context.Context, file *config.File, dbURL string, store dburl.Store, runID, userID string) (bool, error) {
	if !file.Queue.Durable {
		return false, nil
	}
	target, err := dburl.Parse(dbURL)
	if err != nil {
		return false, err
	}
	queueURL, err := target.QueueURL()
	if err != nil {
		return false, err
	}
	q, err := durable.New(ctx, durable.Config{
		DatabaseURL: queueURL,
		Store:       store,
		Events:      eventlog.NewMemory(eventlog.MemoryConfig{}),
		ExecutorID:  cliExecutorID,
		Logger:      slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return false, fmt.Errorf("check the durable queue for run %s: %w", runID, err)
	}
	defer func() { _ = q.Shutdown(time.Second) }()
	return q.Parked(ctx, runID, userID)
}

// stepAnswers answers every requirement a paused workflow run waits for
// with approved: a step's confirmation, its output review, or the tool
// confirmations of its agent or team. A run that waits for input or a
// route cannot be continued from the command line.
func stepAnswers(paused *agnorun.Output, approved bool) ([]*agnorun.StepRequirement, error) {
	var answers []*agnorun.StepRequirement
	for _, req := range paused.StepRequirements {
		answer := *req
		switch {
		case req.RequiresExecutorInput:
			answer.ExecutorRequirements = nil
			for _, r := range req.ExecutorRequirements {
				if !r.NeedsConfirmation() || r.ToolExecution == nil {
					return nil, fmt.Errorf("run %s: step %s's %s waits to %s, which --approve and --reject do not give: continue it through the AgentOS API (POST %s/runs/%s/continue)",
						paused.RunID, req.StepName, req.ExecutorType, requirementAction(r), runnerPath(paused), paused.RunID)
				}
				resolved := *r
				te := *r.ToolExecution
				te.Confirmed, resolved.Confirmation = &approved, &approved
				resolved.ToolExecution = &te
				answer.ExecutorRequirements = append(answer.ExecutorRequirements, &resolved)
			}
		case req.RequiresRouteSelection || (req.RequiresUserInput && !req.RequiresConfirmation):
			return nil, fmt.Errorf("run %s: step %s waits for a route or input, which --approve and --reject do not give: continue it through the AgentOS API (POST %s/runs/%s/continue with step_requirements)",
				paused.RunID, req.StepName, runnerPath(paused), paused.RunID)
		default:
			answer.Confirmed = &approved
		}
		answers = append(answers, &answer)
	}
	if len(answers) == 0 {
		return nil, fmt.Errorf("run %s waits for nothing --approve or --reject can give", paused.RunID)
	}
	return answers, nil
}
