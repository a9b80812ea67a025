package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
)

// Errors of [Agent.Continue]; they are run's, so a server can tell them apart
// without knowing the runner. Match them with errors.Is.
var (
	// ErrRunNotFound: the run to continue does not exist (for this user).
	ErrRunNotFound = run.ErrRunNotFound
	// ErrNotContinuable: the run was cancelled, or belongs to another agent.
	ErrNotContinuable = run.ErrNotContinuable
	// ErrUnresolved: the run still waits for a confirmation, input or result.
	ErrUnresolved = run.ErrUnresolved
	// ErrInvalidRequest: the request itself is malformed (e.g. continue_from).
	ErrInvalidRequest = run.ErrInvalidContinue
)

// ContinueFrom says where a continued run picks up: after every message
// (the default), after the last user message, or after the first N messages.
// The cut is moved down so a tool call is never separated from its result.
type ContinueFrom struct {
	lastUser bool
	index    int
	set      bool
}

// ContinueFromEnd keeps every message.
var ContinueFromEnd = ContinueFrom{}

// ContinueFromLastUser keeps everything up to and including the last user message.
var ContinueFromLastUser = ContinueFrom{lastUser: true}

// ContinueFromIndex keeps the first n messages.
func ContinueFromIndex(n int) ContinueFrom { return ContinueFrom{index: n, set: true} }

// ParseContinueFrom reads "end", "last_user" or a message count.
func ParseContinueFrom(text string) (ContinueFrom, error) {
	switch text {
	case "", "end":
		return ContinueFromEnd, nil
	case "last_user":
		return ContinueFromLastUser, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		return ContinueFrom{}, fmt.Errorf("continue_from %q: want end, last_user or a message index >= 0", text)
	}
	return ContinueFromIndex(n), nil
}

// String renders the value as ParseContinueFrom reads it.
func (c ContinueFrom) String() string {
	switch {
	case c.lastUser:
		return "last_user"
	case c.set:
		return strconv.Itoa(c.index)
	}
	return "end"
}

// ContinueRequest says which run to continue and how; see
// [run.ContinueRequest].
type ContinueRequest = run.ContinueRequest

// Continue resumes a paused run, or restarts any run but a cancelled one from
// a message boundary, and yields its events like [Agent.Stream].
func (a *Agent) Continue(ctx context.Context, req *ContinueRequest) iter.Seq2[run.Event, error] {
	return a.ExecuteContinue(ctx, req, run.Execution{})
}

// ExecuteContinue is [Agent.Continue] under an explicit execution policy;
// see [run.Executor].
func (a *Agent) ExecuteContinue(ctx context.Context, req *ContinueRequest, exec run.Execution) iter.Seq2[run.Event, error] {
	return a.host.Execute(ctx, exec, a.continuation(req))
}

// ContinueRun is [Agent.Continue] returning the run, like [Agent.Run].
func (a *Agent) ContinueRun(ctx context.Context, req *ContinueRequest) (*run.Output, error) {
	return a.host.Collect(ctx, run.Execution{}, a.continuation(req))
}

// continuation opens a continued run for the run host.
func (a *Agent) continuation(req *ContinueRequest) runhost.Opener {
	return func(ctx context.Context, _ run.Execution) (*runhost.Spec, error) {
		p, err := a.prepare()
		if err != nil {
			return nil, err
		}
		st, err := a.reopen(ctx, req, p)
		if err != nil {
			return nil, err
		}
		st.input = req.Input
		return a.spec(st, false, &run.RunContinued{}), nil
	}
}

// Begin implements [runhost.Beginner]: a continued run first runs its
// confirmed tool calls and takes the caller's new input.
func (st *runState) Begin(ctx context.Context, r *runhost.Run) error {
	st.r = r
	if err := st.a.resolvePending(st.a.withUser(ctx, st.out.UserID), st); err != nil {
		return err
	}
	if st.input != "" {
		st.messages = append(st.messages, st.a.newMessage(run.RoleUser, st.input, st.a.cfg.Now()))
	}
	return nil
}

// reopen loads the run, applies the caller's resolutions and the cut, and
// decides between continuing in place and forking.
func (a *Agent) reopen(ctx context.Context, req *ContinueRequest, p *prepared) (*runState, error) {
	src := req.Run
	if src == nil {
		if a.cfg.Store == nil {
			return nil, fmt.Errorf("continue run %s: the agent has no store to find it in (pass the run itself): %w", req.RunID, ErrRunNotFound)
		}
		rec, err := runhost.Read(ctx, a.host, "run", req.RunID, func(ctx context.Context) (storage.RunRecord, error) {
			return a.cfg.Store.GetRun(ctx, req.RunID, req.UserID)
		})
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("continue run %s: %w", req.RunID, ErrRunNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("continue run %s: %w", req.RunID, err)
		}
		src = rec.Run
	}
	from, err := ParseContinueFrom(req.ContinueFrom)
	if err != nil {
		return nil, fmt.Errorf("continue run %s: %w: %w", src.RunID, ErrInvalidRequest, err)
	}
	switch {
	case req.SessionID != "" && src.SessionID != req.SessionID:
		return nil, fmt.Errorf("continue run %s: not in session %s: %w", src.RunID, req.SessionID, ErrRunNotFound)
	case src.RunnerID() != "" && src.RunnerID() != a.cfg.ID:
		return nil, fmt.Errorf("continue run %s: it belongs to %s: %w", src.RunID, src.RunnerID(), ErrNotContinuable)
	case src.Status == run.StatusCancelled:
		return nil, fmt.Errorf("continue run %s: it was cancelled: %w", src.RunID, ErrNotContinuable)
	}
	session, err := a.loadSession(ctx, src.SessionID, req.UserID)
	if err != nil {
		return nil, err
	}
	applyResolutions(src, req.Tools)

	messages := src.Messages
	cut := len(messages)
	if from.set {
		if err := run.CheckContinueIndex(from.index, len(messages)); err != nil {
			return nil, fmt.Errorf("continue run %s: %w", src.RunID, err)
		}
	}
	if from != ContinueFromEnd {
		cut = from.cutIndex(messages)
	}
	fork := req.Fork || src.Status == run.StatusCompleted || src.Status == run.StatusRegenerated
	out := src
	if fork {
		out = a.forkOf(src, cut)
	}
	out.Messages = run.CloneMessages(messages[:cut])
	out.Tools = run.KeptTools(src.Tools, out.Messages)
	out.Requirements = run.KeptRequirements(src.Requirements, out.Tools)
	if waiting := unresolved(out); len(waiting) > 0 {
		return nil, fmt.Errorf("continue run %s: %w: %s", src.RunID, ErrUnresolved, strings.Join(waiting, ", "))
	}
	out.Status = run.StatusRunning
	if out.Metrics == nil {
		out.Metrics = &run.RunMetrics{}
	}
	out.Metrics.StartTimer(a.cfg.Now())
	schema, err := a.outputSchema(out.Input)
	if err != nil {
		return nil, err
	}
	st := &runState{p: p, out: out, session: session, schema: schema}
	st.messages, err = a.withHistory(ctx, out)
	return st, err
}

// forkOf copies src into a new run of the same session.
func (a *Agent) forkOf(src *run.Output, cut int) *run.Output {
	fork := *src
	fork.RunID = a.cfg.NewID()
	// A fork of a run a session fork copied is a run of its own, whose
	// usage counts: it is no copy.
	fork.ForkedFromSessionID = ""
	fork.ForkedFromRunID = src.RunID
	fork.ForkedFromMessageIndex = &cut
	fork.CreatedAt = a.cfg.Now().Unix()
	fork.Events = nil
	fork.Metrics = &run.RunMetrics{}
	fork.Metadata = nil
	fork.Content, fork.ContentType = nil, ""
	return &fork
}

// withHistory puts the session's history back in front of a reopened run's
// own messages (after its system message), as the first attempt saw it.
func (a *Agent) withHistory(ctx context.Context, out *run.Output) ([]*run.Message, error) {
	messages := append([]*run.Message(nil), out.Messages...)
	if !a.cfg.AddHistoryToContext || a.cfg.Store == nil {
		return messages, nil
	}
	history, err := a.history(ctx, nil, out)
	if err != nil {
		return nil, err
	}
	split := 0
	for split < len(messages) && (messages[split].Role == run.RoleSystem || messages[split].Role == run.RoleDeveloper) {
		split++
	}
	result := make([]*run.Message, 0, len(messages)+len(history))
	result = append(append(append(result, messages[:split]...), history...), messages[split:]...)
	return result, nil
}

// cutIndex returns how many of messages to keep.
func (c ContinueFrom) cutIndex(messages []*run.Message) int {
	k := len(messages)
	switch {
	case c.lastUser:
		k = 0
		for i, msg := range messages {
			if msg.Role == run.RoleUser {
				k = i + 1
			}
		}
	case c.set:
		k = c.index
	}
	return run.SafeCut(messages, k)
}

// applyResolutions copies the caller's answers onto the run's waiting tool
// calls, and onto their requirements so the run shows what was answered.
// Only answers a call asks for are taken: a confirmation, user-input values
// of the fields asked (merged by name, each of the field's type), the
// result of an external execution. What is missing or does not fit stays
// unanswered, for [unresolved] to report; [run.CheckResolutions] names
// every problem of the request itself.
func applyResolutions(out *run.Output, updates []*run.ToolExecution) {
	byID := map[string]*run.ToolExecution{}
	for _, u := range updates {
		if u != nil && u.ToolCallID != "" {
			if _, seen := byID[u.ToolCallID]; !seen {
				byID[u.ToolCallID] = u
			}
		}
	}
	requirements := map[string]*run.Requirement{}
	for _, r := range out.Requirements {
		if r != nil && r.ToolExecution != nil {
			requirements[r.ToolExecution.ToolCallID] = r
		}
	}
	for _, t := range run.WaitingCalls(out) {
		u, ok := byID[t.ToolCallID]
		if !ok {
			continue
		}
		req := requirements[t.ToolCallID]
		if t.RequiresConfirmation && u.Confirmed != nil || rejectsApproval(t, u) {
			t.Confirmed, t.ConfirmationNote = new(*u.Confirmed), u.ConfirmationNote
			if req != nil {
				req.Confirmation, req.ConfirmationNote = new(*u.Confirmed), u.ConfirmationNote
			}
		}
		if rejected(t) {
			continue // a rejected call needs no input or result
		}
		if t.RequiresUserInput {
			provideUserInput(t, req, u.UserInputSchema)
		}
		if t.ExternalExecutionRequired && u.Result != nil {
			t.Result = new(*u.Result)
			if req != nil {
				req.ExternalExecutionResult = new(*u.Result)
			}
		}
	}
}

// rejectsApproval reports an answer rejecting a call that waits for an
// admin's approval on user input or an external result rather than a
// confirmation: an approval decides the call whatever it waits for, so
// confirmed false rejects it too.
func rejectsApproval(t, u *run.ToolExecution) bool {
	return t.ApprovalType == tool.ApprovalRequired && !t.RequiresConfirmation && u.Confirmed != nil && !*u.Confirmed
}

// rejected reports a call a person (or an approval) rejected.
func rejected(t *run.ToolExecution) bool { return t.Confirmed != nil && !*t.Confirmed }

// provideUserInput fills the fields a call asks for with the values given
// for them, on the call and on its requirement; the call is answered once
// every field has a value. A value of another type than its field's is
// not taken.
func provideUserInput(t *run.ToolExecution, req *run.Requirement, given []run.UserInputField) {
	values := map[string]any{}
	for _, field := range given {
		values[field.Name] = field.Value
	}
	fill := func(fields []run.UserInputField) {
		for i := range fields {
			if value, ok := values[fields[i].Name]; ok && fields[i].Check(value) == nil {
				fields[i].Value = value
			}
		}
	}
	t.UserInputSchema = slices.Clone(t.UserInputSchema)
	fill(t.UserInputSchema)
	if req != nil {
		req.UserInputSchema = slices.Clone(req.UserInputSchema)
		fill(req.UserInputSchema)
	}
	if len(missingInput(t)) == 0 {
		t.Answered = new(true)
	}
}

// CheckContinue reports why req would be refused, without running or
// writing anything: a run that is not found or cannot be continued, a
// malformed request, resolutions that do not fit the run's waiting tool
// calls ([run.CheckResolutions]), or calls left unresolved. A server calls
// it before it answers a continuation it hands to a queue, so the client
// learns what to fix instead of the run failing later.
func (a *Agent) CheckContinue(ctx context.Context, req *ContinueRequest) error {
	p, err := a.prepare()
	if err != nil {
		return err
	}
	probe := *req
	if req.Run != nil {
		// Reopening changes the run it reads: work on a copy of the caller's.
		if probe.Run, err = copyRun(req.Run); err != nil {
			return fmt.Errorf("continue run %s: %w", req.Run.RunID, err)
		}
	} else if a.cfg.Store != nil {
		rec, err := runhost.Read(ctx, a.host, "run", req.RunID, func(ctx context.Context) (storage.RunRecord, error) {
			return a.cfg.Store.GetRun(ctx, req.RunID, req.UserID)
		})
		if errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("continue run %s: %w", req.RunID, ErrRunNotFound)
		}
		if err != nil {
			return fmt.Errorf("continue run %s: %w", req.RunID, err)
		}
		probe.Run = rec.Run
	}
	var resolutions error
	if probe.Run != nil {
		if err := run.CheckResolutions(probe.Run, req.Tools); err != nil {
			resolutions = fmt.Errorf("continue run %s: %w", probe.Run.RunID, err)
		}
	}
	// A run that is not there, not this caller's or not continuable is
	// reported as such before what is wrong with the resolutions.
	_, err = a.reopen(ctx, &probe, p)
	switch {
	case err != nil && !errors.Is(err, ErrUnresolved):
		return err
	case resolutions != nil:
		return resolutions
	}
	return err
}

// copyRun returns a deep copy of a run, through its JSON form.
func copyRun(src *run.Output) (*run.Output, error) {
	data, err := json.Marshal(src)
	if err != nil {
		return nil, fmt.Errorf("copy run: %w", err)
	}
	var copied run.Output
	if err := json.Unmarshal(data, &copied); err != nil {
		return nil, fmt.Errorf("copy run: %w", err)
	}
	return &copied, nil
}
