package external

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// DefaultFollowUp is the prompt of a continued run that brings no input
// and does not replay its run's own prompt.
const DefaultFollowUp = "Continue from where you left off."

var _ run.Continuer = (*Agent)(nil)

// Continue implements [run.Continuer] for a driver that can branch its
// harness sessions ([Brancher]): the run's transcript is forked at the
// chosen message (continue_from: "end", "last_user" or a message count)
// and a new turn runs on the branch, as a new run of the same session with
// fork lineage. The prompt is req.Input; without one, "last_user" (or a
// count of 0) replays the run's own prompt, and anything else asks the
// harness to continue. Later turns of the session go on from the branch.
// Paused runs (human-in-the-loop) and cancelled runs cannot be continued.
func (a *Agent) Continue(ctx context.Context, req *run.ContinueRequest) iter.Seq2[run.Event, error] {
	return a.ExecuteContinue(ctx, req, run.Execution{})
}

// ExecuteContinue is [Agent.Continue] under an explicit execution policy;
// see [run.Executor].
func (a *Agent) ExecuteContinue(ctx context.Context, req *run.ContinueRequest, exec run.Execution) iter.Seq2[run.Event, error] {
	return a.host.Execute(ctx, exec, a.continuation(req))
}

// ContinueRun is [Agent.Continue] returning the run, like [Agent.Run].
func (a *Agent) ContinueRun(ctx context.Context, req *run.ContinueRequest) (*run.Output, error) {
	return a.host.Collect(ctx, run.Execution{}, a.continuation(req))
}

// continuation opens a continued run for the run host: a paused run goes
// on in place with the user's decisions; any other is branched.
func (a *Agent) continuation(req *run.ContinueRequest) runhost.Opener {
	return func(ctx context.Context, exec run.Execution) (*runhost.Spec, error) {
		src, err := a.source(ctx, req)
		if err != nil {
			return nil, err
		}
		if src.Status == run.StatusPaused {
			return a.decide(ctx, src, req, exec)
		}
		return a.branch(ctx, src, req, exec)
	}
}

// branch opens a new run of the session on a branch of src's harness
// session.
func (a *Agent) branch(ctx context.Context, src *run.Output, req *run.ContinueRequest, exec run.Execution) (*runhost.Spec, error) {
	brancher, ok := a.cfg.Driver.(Brancher)
	if !ok {
		return nil, fmt.Errorf("continue run %s: %s runs cannot be continued from a message: %w", req.RunID, a.cfg.Driver.SDK(), run.ErrNotContinuable)
	}
	cut, replay, err := continueCut(src, req)
	if err != nil {
		return nil, err
	}
	prompt := req.Input
	switch {
	case prompt == "" && replay:
		prompt = src.Input.ContentString()
	case prompt == "":
		prompt = DefaultFollowUp
	}
	runID := a.cfg.NewID()
	release, session, err := a.claim(ctx, src.SessionID, runID, req.UserID, exec.Queued)
	if err != nil {
		return nil, err
	}
	kept := src.Messages[:cut]
	branch, err := brancher.Branch(ctx, &BranchRequest{SessionID: src.SessionID, UserID: req.UserID, Run: src, Kept: kept})
	if err != nil {
		release()
		return nil, fmt.Errorf("continue run %s: %w", src.RunID, err)
	}

	in := &run.Input{InputContent: prompt, SessionID: src.SessionID, UserID: req.UserID, RunID: runID, PersistOnStart: true}
	if src.Input != nil {
		in.OutputSchema = src.Input.OutputSchema
	}
	t := a.open(in, session, src.SessionID, runID, nil)
	t.harness = branch
	if session.SessionData == nil {
		session.SessionData = map[string]any{}
	}
	session.SessionData[a.cfg.Driver.SessionKey()] = branch
	t.out.ForkedFromRunID, t.out.ForkedFromMessageIndex = src.RunID, &cut
	t.out.Messages = run.CloneMessages(kept)
	t.out.Tools = run.KeptTools(src.Tools, t.out.Messages)
	return a.spec(t, session, in, &run.RunContinued{}, release), nil
}

// source reads the run to continue and checks it can be.
func (a *Agent) source(ctx context.Context, req *run.ContinueRequest) (*run.Output, error) {
	src := req.Run
	if src == nil {
		if a.cfg.Store == nil {
			return nil, fmt.Errorf("continue run %s: the agent has no store to read its transcript from: %w", req.RunID, run.ErrNotContinuable)
		}
		rec, err := a.cfg.Store.GetRun(ctx, req.RunID, req.UserID)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("continue run %s: %w", req.RunID, run.ErrRunNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("continue run %s: %w", req.RunID, err)
		}
		src = rec.Run
	}
	switch {
	case req.SessionID != "" && src.SessionID != req.SessionID:
		return nil, fmt.Errorf("continue run %s: not in session %s: %w", src.RunID, req.SessionID, run.ErrRunNotFound)
	case src.AgentID != "" && src.AgentID != a.cfg.ID:
		return nil, fmt.Errorf("continue run %s: it belongs to agent %s: %w", src.RunID, src.AgentID, run.ErrNotContinuable)
	case src.Status == run.StatusCancelled:
		return nil, fmt.Errorf("continue run %s: it was cancelled: %w", src.RunID, run.ErrNotContinuable)
	case src.Status == run.StatusPaused:
		return src, nil
	case !src.Status.Terminal():
		return nil, fmt.Errorf("continue run %s: it is %s; continue it once it has ended: %w", src.RunID, src.Status, run.ErrNotContinuable)
	case len(req.Tools) > 0:
		return nil, fmt.Errorf("continue run %s: it is not paused, so it takes no tool confirmations: %w", src.RunID, run.ErrInvalidContinue)
	}
	return src, nil
}

// continueCut is how many of the run's messages the branch keeps, and
// whether the run's own prompt is sent again (the cut is before it).
func continueCut(src *run.Output, req *run.ContinueRequest) (int, bool, error) {
	messages := src.Messages
	switch req.ContinueFrom {
	case "", "end":
		return len(messages), false, nil
	case "last_user":
		for i := len(messages) - 1; i >= 0; i-- {
			if messages[i].Role == run.RoleUser {
				return i, true, nil
			}
		}
		return 0, true, nil
	}
	n, err := strconv.Atoi(req.ContinueFrom)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("continue_from %q: want end, last_user or a message index >= 0: %w", req.ContinueFrom, run.ErrInvalidContinue)
	}
	if err := run.CheckContinueIndex(n, len(messages)); err != nil {
		return 0, false, err
	}
	n = run.SafeCut(messages, n)
	if n == 0 && req.Input == "" {
		return 0, false, fmt.Errorf("continue_from 0 starts before the run's prompt: send input, or continue_from last_user to replay the prompt: %w", run.ErrInvalidContinue)
	}
	return n, false, nil
}

// CompactInput is the input that compacts an external agent's harness
// session: the conversation so far is replaced by a summary, in the
// transcript the database keeps, so every replica resumes the compacted
// session. It is an ordinary turn: refused while another turn of the
// session is in flight.
const CompactInput = "/compact"

// Compact compacts a session's harness session (see [CompactInput]) and
// returns the compaction's run.
func (a *Agent) Compact(ctx context.Context, sessionID, userID string) (*run.Output, error) {
	if sessionID == "" {
		return nil, fmt.Errorf("compact: %w: a session id is required", run.ErrInvalidInput)
	}
	return a.Run(ctx, &run.Input{InputContent: CompactInput, SessionID: sessionID, UserID: userID, PersistOnStart: true})
}

// decide continues a paused run in place with the user's decisions on its
// tool calls: the harness session goes on, told what the user decided, and
// an approved call it makes again is allowed.
func (a *Agent) decide(ctx context.Context, src *run.Output, req *run.ContinueRequest, exec run.Execution) (*runhost.Spec, error) {
	byID := map[string]*run.ToolExecution{}
	for _, tool := range req.Tools {
		if tool != nil && tool.Confirmed != nil {
			byID[tool.ToolCallID] = tool
		}
	}
	var decisions []*run.ToolExecution
	var waiting []string
	for _, tool := range src.Tools {
		if !tool.RequiresConfirmation || tool.Confirmed != nil {
			continue
		}
		answer, ok := byID[tool.ToolCallID]
		if !ok {
			waiting = append(waiting, fmt.Sprintf("%s (%s)", tool.ToolName, tool.ToolCallID))
			continue
		}
		tool.Confirmed, tool.ConfirmationNote = answer.Confirmed, answer.ConfirmationNote
		decisions = append(decisions, tool)
	}
	if len(waiting) > 0 {
		return nil, fmt.Errorf("continue run %s: %w: confirm or reject %s", src.RunID, run.ErrUnresolved, strings.Join(waiting, ", "))
	}
	for _, r := range src.Requirements {
		if r.ToolExecution == nil || r.Confirmation != nil {
			continue
		}
		if answer, ok := byID[r.ToolExecution.ToolCallID]; ok {
			r.Confirmation, r.ConfirmationNote = answer.Confirmed, answer.ConfirmationNote
			r.ToolExecution.Confirmed, r.ToolExecution.ConfirmationNote = answer.Confirmed, answer.ConfirmationNote
		}
	}
	release, session, err := a.claim(ctx, src.SessionID, src.RunID, req.UserID, exec.Queued)
	if err != nil {
		return nil, err
	}
	in := src.Input
	if in == nil {
		in = &run.Input{}
	}
	in.PersistOnStart = true
	src.Status = run.StatusRunning
	if src.Metrics == nil {
		src.Metrics = &run.RunMetrics{}
	}
	src.Metrics.StartTimer(a.cfg.Now())
	harness, _ := session.SessionData[a.cfg.Driver.SessionKey()].(string)
	t := &turn{out: src, schema: a.cfg.OutputSchema, prompt: decisionPrompt(decisions), harness: harness, decisions: decisions}
	if len(in.OutputSchema) > 0 {
		t.schema = in.OutputSchema
	}
	t.history = func(context.Context) (string, error) { return t.prompt, nil }
	return a.spec(t, session, in, &run.RunContinued{}, release), nil
}

// decisionPrompt tells the harness what the user decided on each call.
func decisionPrompt(decisions []*run.ToolExecution) string {
	var b strings.Builder
	for _, d := range decisions {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if *d.Confirmed {
			fmt.Fprintf(&b, "The user approved your call to %s (tool_use_id %s). Make that call again now, exactly as before.", d.ToolName, d.ToolCallID)
			continue
		}
		fmt.Fprintf(&b, "The user declined your call to %s (tool_use_id %s).", d.ToolName, d.ToolCallID)
		if d.ConfirmationNote != "" {
			fmt.Fprintf(&b, " Their note: %s", d.ConfirmationNote)
		}
		b.WriteString(" Do not make it; go on without it.")
	}
	return b.String()
}
