package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agnogo/agnogo/run"
)

// ChildPause is the error a tool returns when the child run it started
// waits for a person (a team's delegation to a member that paused for a
// confirmation): the call is not over. [Execute] records the child's run
// id on the call (child_run_id) and the outcome's Child; the run pauses
// with the child's requirements, and once they are resolved the call is
// finished by the tool's [Resumer].
type ChildPause struct {
	// RunID is the child run's id.
	RunID string `json:"run_id"`
	// Requirements are what the child waits for, each naming the child
	// (MemberAgentID, MemberRunID).
	Requirements []*run.Requirement `json:"requirements"`
}

// Error implements error.
func (p *ChildPause) Error() string {
	return fmt.Sprintf("child run %s waits for a person (%d requirements)", p.RunID, len(p.Requirements))
}

type childKey struct{}

// children is what a call records of the child runs it started, with the
// call's id.
type children struct {
	callID  string
	mu      sync.Mutex
	runID   string
	metrics *run.RunMetrics
	images  []run.Image
	nested  []*run.ToolExecution
}

// withChildren returns ctx with a fresh record of child runs for the call
// callID.
func withChildren(ctx context.Context, callID string) (context.Context, *children) {
	c := &children{callID: callID}
	return context.WithValue(ctx, childKey{}, c), c
}

// CallID is the tool_call_id of the call ctx belongs to, the same each
// time a journaled call is executed; "" outside a call.
func CallID(ctx context.Context) string {
	if c, ok := ctx.Value(childKey{}).(*children); ok {
		return c.callID
	}
	return ""
}

// record copies what the call recorded onto its outcome.
func (c *children) record(o *Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runID != "" {
		o.Execution.ChildRunID = c.runID
	}
	o.ChildMetrics = c.metrics
	o.Images = c.images
	o.Nested = c.nested
}

// SetChildRunID records, from inside a tool's call, the child run the call
// started (a team's delegation: the member's run), as the call's
// child_run_id. Outside a call it does nothing.
func SetChildRunID(ctx context.Context, runID string) {
	if c, ok := ctx.Value(childKey{}).(*children); ok {
		c.mu.Lock()
		c.runID = runID
		c.mu.Unlock()
	}
}

// AddChildMetrics records, from inside a tool's call, the metrics of a
// child run the call ran: the caller adds them to its run's
// ([Outcome.ChildMetrics]), and a journal keeps them with the call, so a
// replayed call counts them again. Safe for concurrent use (a call that
// runs children at once). Outside a call it does nothing.
func AddChildMetrics(ctx context.Context, m *run.RunMetrics) {
	c, ok := ctx.Value(childKey{}).(*children)
	if !ok || m == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.metrics == nil {
		c.metrics = &run.RunMetrics{}
	}
	c.metrics.AddRun(m)
}

// AddImages records, from inside a tool's call, images the call produced
// (an MCP server's image content, say): the caller adds them to its run's
// images ([Outcome.Images]), and a journal keeps them with the call.
// Outside a call it does nothing.
func AddImages(ctx context.Context, images ...run.Image) {
	c, ok := ctx.Value(childKey{}).(*children)
	if !ok || len(images) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.images = append(c.images, images...)
}

// RecordNested records, from inside a tool's call, calls the call made of
// other tools (a CodeMode program's): the caller adds them to its run's
// tools before the call itself ([Outcome.Nested]), and a journal keeps them
// with the call. Safe for concurrent use. Outside a call it does nothing.
func RecordNested(ctx context.Context, execs ...*run.ToolExecution) {
	c, ok := ctx.Value(childKey{}).(*children)
	if !ok || len(execs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nested = append(c.nested, execs...)
}

// Resumer is a [Tool] whose calls can wait on a child run ([ChildPause]):
// Resume finishes such a call once the child's requirements are resolved.
type Resumer interface {
	// Resume continues the child run of call with the resolved
	// requirements and returns the call's result, or another
	// [*ChildPause] when the child pauses again.
	Resume(ctx context.Context, call *run.ToolExecution, requirements []*run.Requirement) (string, error)
}

// journaledResume is what a journal records of a resumed call.
type journaledResume struct {
	Result       string               `json:"result,omitempty"`
	Error        string               `json:"error,omitempty"`
	Child        *ChildPause          `json:"child,omitempty"`
	ChildMetrics *run.RunMetrics      `json:"child_metrics,omitempty"`
	Nested       []*run.ToolExecution `json:"nested,omitempty"`
}

// Resume finishes a call that waited on a child run: it calls the tool's
// [Resumer] (as a journaled step when opts has a Journal) and records the
// result, the failure or a new pause on call, as [Execute] does.
func Resume(ctx context.Context, tools *Set, call *run.ToolExecution, requirements []*run.Requirement, opts ExecuteOptions) Outcome {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	out := Outcome{Execution: call, Call: run.ToolCall{ID: call.ToolCallID, Type: "function", Function: run.ToolCallFunction{Name: call.ToolName}}}
	t, ok := tools.Lookup(call.ToolName)
	resumer, can := t.(Resumer)
	if !ok || !can {
		out.fail(fmt.Errorf("tool %s cannot resume the child run it waits on", call.ToolName))
		return out
	}
	metrics := &run.ToolCallMetrics{}
	metrics.StartTimer(now())
	var childMetrics *run.RunMetrics
	var nested []*run.ToolExecution
	resume := func(ctx context.Context) (string, error) {
		ctx, kids := withChildren(ctx, call.ToolCallID)
		result, err := safeResume(ctx, resumer, call, requirements)
		kids.mu.Lock()
		childMetrics, nested = kids.metrics, kids.nested
		kids.mu.Unlock()
		return result, err
	}
	var result string
	var err error
	if opts.Journal != nil {
		var data []byte
		data, err = opts.Journal.Step(ctx, "tool:"+call.ToolName+":resume", func(ctx context.Context) ([]byte, error) {
			result, err := resume(ctx)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			record := journaledResume{Result: result, ChildMetrics: childMetrics, Nested: nested}
			var child *ChildPause
			switch {
			case errors.As(err, &child):
				record.Child = child
			case err != nil:
				record.Error = err.Error()
			}
			return json.Marshal(record)
		})
		if err == nil {
			var record journaledResume
			if err = json.Unmarshal(data, &record); err == nil {
				result, childMetrics, nested = record.Result, record.ChildMetrics, record.Nested
				switch {
				case record.Child != nil:
					err = record.Child
				case record.Error != "":
					err = errors.New(record.Error)
				}
			}
		}
	} else {
		result, err = resume(run.WithStepKey(ctx, opts.RunID+":"+call.ToolCallID+":resume"))
	}
	metrics.StopTimer(now())
	call.Metrics = metrics
	out.ChildMetrics, out.Nested = childMetrics, nested
	out.settle(result, err)
	return out
}

// safeResume calls a resumer, recovering a panic.
func safeResume(ctx context.Context, r Resumer, call *run.ToolExecution, requirements []*run.Requirement) (result string, err error) {
	defer recoverPanic(call.ToolName, &err)
	return r.Resume(ctx, call, requirements)
}
