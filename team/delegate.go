package team

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
)

// The leader's delegation tools.
const (
	// DelegateToolName sends a task to one member.
	DelegateToolName = "delegate_task_to_member"
	// BroadcastToolName sends a task to every member at once.
	BroadcastToolName = "delegate_task_to_members"
)

// delegateTool is delegate_task_to_member(member_id, task).
type delegateTool struct{ t *Team }

// Spec implements [tool.Tool].
func (d *delegateTool) Spec() tool.Spec {
	params := objectSchema(map[string]any{
		"member_id": map[string]any{"type": "string", "enum": d.t.memberIDs(), "description": "The member_id of the member to delegate to."},
		"task":      map[string]any{"type": "string", "description": "What the member should do and the answer it should give back."},
	}, "member_id", "task")
	return tool.Spec{
		Name: DelegateToolName,
		Description: "Delegate a task to one member of the team and get its answer back. " +
			"Describe the task clearly, with the output you expect.",
		Parameters:        params,
		StopAfterToolCall: d.t.cfg.RespondDirectly,
	}
}

// Call implements [tool.Tool]: it runs the member on the task.
func (d *delegateTool) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		MemberID string `json:"member_id"`
		Task     string `json:"task"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	member, ok := d.t.members[args.MemberID]
	if !ok {
		return "", fmt.Errorf("no member has member_id %q: choose one of %s", args.MemberID, strings.Join(d.t.memberIDs(), ", "))
	}
	r, ok := runhost.FromContext(ctx)
	if !ok {
		return "", errors.New("delegate_task_to_member runs only inside a team's run")
	}
	return d.t.runMember(ctx, r, member, args.Task, memberRunID(ctx, r.Output().RunID, member.ID()), true)
}

// broadcastTool is delegate_task_to_members(task).
type broadcastTool struct{ t *Team }

// Spec implements [tool.Tool].
func (b *broadcastTool) Spec() tool.Spec {
	params := objectSchema(map[string]any{
		"task": map[string]any{"type": "string", "description": "What every member should do and the answer it should give back."},
	}, "task")
	return tool.Spec{
		Name:        BroadcastToolName,
		Description: "Send one task to every member of the team at once and get all their answers back.",
		Parameters:  params,
	}
}

// Call implements [tool.Tool]: it runs every member on the task, at most
// MaxParallelMembers at once, and joins their answers. It fails only when
// every member failed.
func (b *broadcastTool) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	r, ok := runhost.FromContext(ctx)
	if !ok {
		return "", errors.New("delegate_task_to_members runs only inside a team's run")
	}
	t := b.t
	members := t.cfg.Members
	results := make([]string, len(members))
	errs := make([]error, len(members))
	slots := make(chan struct{}, t.cfg.MaxParallelMembers)
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				errs[i] = context.Cause(ctx)
				return
			}
			defer func() { <-slots }()
			results[i], errs[i] = t.runMember(ctx, r, m, args.Task, memberRunID(ctx, r.Output().RunID, m.ID()), false)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var out strings.Builder
	failed := 0
	for i, m := range members {
		if i > 0 {
			out.WriteString("\n\n")
		}
		if errs[i] != nil {
			failed++
			fmt.Fprintf(&out, "Member %s (%s) failed: %v", m.ID(), m.Name(), errs[i])
			continue
		}
		fmt.Fprintf(&out, "Member %s (%s):\n%s", m.ID(), m.Name(), results[i])
	}
	if failed == len(members) {
		return "", errors.New(out.String())
	}
	return out.String(), nil
}

// objectSchema is the parameters schema of a tool taking properties, the
// required ones named, and no others.
func objectSchema(properties map[string]any, required ...string) json.RawMessage {
	schema, _ := json.Marshal(map[string]any{ // maps of strings and slices always encode
		"type": "object", "properties": properties, "required": required, "additionalProperties": false,
	})
	return schema
}

// memberIDs lists the members' ids, in order.
func (t *Team) memberIDs() []string {
	ids := make([]string, 0, len(t.cfg.Members))
	for _, m := range t.cfg.Members {
		ids = append(ids, m.ID())
	}
	return ids
}

// noResponse is what the leader reads of a member that answered nothing.
const noResponse = "No response from the member."

// runMember runs one delegation: a child run of member, in the team's
// session (a member bound to an outside harness gets a session of its own
// within it), whose events are passed on in the team's stream. Its answer
// is returned; a member run that did not complete is an error, which the
// leader reads as a failed tool call.
func (t *Team) runMember(ctx context.Context, r *runhost.Run, member run.Runner, task, runID string, pausable bool) (string, error) {
	parent := r.Output()
	in := &run.Input{
		InputContent: task, SessionID: memberSession(member, parent.SessionID), UserID: parent.UserID,
		RunID: runID, ParentRunID: parent.RunID, PersistOnStart: true,
	}
	if from := parent.Input; from != nil {
		// The team's media go to every member.
		in.Images, in.Videos, in.Audios, in.Files = slices.Clone(from.Images), slices.Clone(from.Videos), slices.Clone(from.Audios), slices.Clone(from.Files)
		if !t.determineInput() {
			in.InputContent = from.InputContent
		}
	}
	// The member's own steps are not the team's: a completed delegation
	// is the team's journaled step, replayed whole.
	return t.follow(ctx, r, member, runID, member.Stream(run.WithJournal(ctx, nil), in), pausable)
}

// Resume implements [tool.Resumer]: the member run the delegation waits
// on goes on with the resolved requirements, and its answer is the
// delegation's result.
func (d *delegateTool) Resume(ctx context.Context, call *run.ToolExecution, requirements []*run.Requirement) (string, error) {
	id, _ := call.ToolArgs["member_id"].(string)
	return d.t.resumeMember(ctx, id, call, requirements)
}

// resumeMember continues the paused member run call waits on with the
// resolved requirements, and returns its answer.
func (t *Team) resumeMember(ctx context.Context, id string, call *run.ToolExecution, requirements []*run.Requirement) (string, error) {
	member, ok := t.members[id]
	if !ok {
		return "", fmt.Errorf("no member has member_id %q", id)
	}
	continuer, ok := member.(run.Continuer)
	if !ok {
		return "", fmt.Errorf("member %s cannot continue its paused run", id)
	}
	r, ok := runhost.FromContext(ctx)
	if !ok {
		return "", errors.New("a delegation runs only inside a team's run")
	}
	req := &run.ContinueRequest{RunID: call.ChildRunID, UserID: r.Output().UserID}
	for _, rq := range requirements {
		if rq.ToolExecution != nil {
			req.Tools = append(req.Tools, rq.ToolExecution)
		}
	}
	return t.follow(ctx, r, member, call.ChildRunID, continuer.Continue(run.WithJournal(ctx, nil), req), true)
}

// follow passes a member run's events on in the team's stream and turns
// its end into the delegation's result: its answer, or an error the leader
// reads. A member that pauses for a person pauses the delegation
// ([tool.ChildPause]) when pausable, with its requirements naming it.
func (t *Team) follow(ctx context.Context, r *runhost.Run, member run.Runner, runID string, events iter.Seq2[run.Event, error], pausable bool) (string, error) {
	parent := r.Output()
	if pausable {
		// One delegation, one child run (a broadcast has several).
		tool.SetChildRunID(ctx, runID)
	}
	var final run.Event
	var startErr error
	for e, err := range events {
		if err != nil {
			startErr = err
			break
		}
		if _, ok := run.FinalStatus(e); ok {
			final = e
		}
		if t.streamMembers() {
			r.Forward(e)
		}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var metrics *run.RunMetrics
	var answer string
	var err error
	switch e := final.(type) {
	case *run.RunCompleted:
		metrics = e.Metrics
		answer = contentText(e.Content)
		if strings.TrimSpace(answer) == "" {
			answer = noResponse
		}
	case *run.RunError:
		err = fmt.Errorf("member %s failed: %s", member.ID(), e.Content)
	case *run.RunCancelled:
		err = fmt.Errorf("member %s's run was cancelled", member.ID())
	case *run.RunPaused:
		if !pausable {
			err = fmt.Errorf("member %s paused to wait for a person, which a task sent to every member cannot: delegate to it alone", member.ID())
			break
		}
		pause := &tool.ChildPause{RunID: runID}
		for _, req := range e.Requirements {
			if req == nil || req.IsResolved() {
				continue
			}
			copied := *req
			if copied.MemberRunID == "" {
				// A nested team's member keeps its own name.
				copied.MemberAgentID, copied.MemberAgentName, copied.MemberRunID = member.ID(), member.Name(), runID
			}
			pause.Requirements = append(pause.Requirements, &copied)
		}
		err = pause
	default:
		if startErr != nil {
			err = fmt.Errorf("member %s could not start: %w", member.ID(), startErr)
		} else {
			err = fmt.Errorf("member %s ended without a final event", member.ID())
		}
	}
	tool.AddChildMetrics(ctx, metrics)
	if stored := t.storedMember(ctx, runID, parent.UserID); stored != nil {
		r.Lock()
		parent.MemberResponses = append(parent.MemberResponses, stored)
		r.Unlock()
	}
	return answer, err
}

// storedMember reads a finished member run for member_responses; nil
// when the team does not keep them or it cannot be read.
func (t *Team) storedMember(ctx context.Context, runID, userID string) *run.Output {
	if !t.cfg.StoreMemberResponses || t.cfg.Store == nil {
		return nil
	}
	rec, err := t.cfg.Store.GetRun(ctx, runID, userID)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			t.cfg.Logger.WarnContext(ctx, "reading a member run for member_responses failed", "run_id", runID, "error", err)
		}
		return nil
	}
	rec.Run.Events = nil
	return rec.Run
}

// memberSession is the session a member runs in: the team's, as Agno
// keeps member runs in the team session; a member whose sessions are bound
// to an outside harness (a Claude Code or Codex agent) gets one of its own
// beside it, so its conversation goes on across the team's delegations
// and two such members never wait on each other's turn.
func memberSession(member run.Runner, teamSession string) string {
	if _, bound := member.(run.SessionBinder); bound {
		return teamSession + "~" + member.ID()
	}
	return teamSession
}

// memberRunID derives a member run's id from the delegation's idempotency
// key (the team run and the tool call, or the journaled step): the same
// delegation executed again after a crash runs as the same member run.
func memberRunID(ctx context.Context, parentRunID, memberID string) string {
	key := run.StepKey(ctx)
	if key == "" {
		key = parentRunID + ":" + run.NewUUID()
	}
	sum := sha256.Sum256([]byte(key + "/" + memberID))
	sum[6] = sum[6]&0x0f | 0x80 // version 8: name-based, own hash
	sum[8] = sum[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// contentText renders a member's answer: text as is, anything else as
// JSON.
func contentText(content any) string {
	if content == nil {
		return ""
	}
	if s, ok := content.(string); ok {
		return s
	}
	data, err := json.Marshal(content)
	if err != nil {
		return fmt.Sprint(content)
	}
	return string(data)
}
