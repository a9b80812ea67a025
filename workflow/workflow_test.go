package workflow_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/workflow"
)

func openStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "wf.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// echo is an agent that answers "<prefix>(<its input>)" and counts its
// calls.
type echo struct {
	*agent.Agent
	calls *atomic.Int64
	model *scripted.Model
}

func newEcho(t *testing.T, id, prefix string, store storage.Store) echo {
	t.Helper()
	calls := new(atomic.Int64)
	m := scripted.New([]scripted.Reply{scripted.Respond(func(req *model.Request) scripted.Reply {
		calls.Add(1)
		last := req.Messages[len(req.Messages)-1]
		return scripted.Reply{Content: fmt.Sprintf("%s(%v)", prefix, last.Content), Usage: &run.Metrics{InputTokens: 3, OutputTokens: 2, TotalTokens: 5}}
	})}, scripted.Loop())
	a, err := agent.New(agent.Config{ID: id, Name: id, Store: store, Model: m})
	require.NoError(t, err)
	return echo{Agent: a, calls: calls, model: m}
}

func collect(t *testing.T, events func(func(run.Event, error) bool)) []run.Event {
	t.Helper()
	var out []run.Event
	for e, err := range events {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// names lists the workflow's own events' wire names (not its agents').
func names(events []run.Event) []string {
	var out []string
	for _, e := range events {
		if _, member := e.(*run.MemberEvent); member {
			continue
		}
		out = append(out, run.NameOf(e))
	}
	return out
}

func final(t *testing.T, events []run.Event) run.Event {
	t.Helper()
	require.NotEmpty(t, events)
	return events[len(events)-1]
}

func TestStepsRunInOrderAsChildRuns(t *testing.T) {
	store := openStore(t)
	writer := newEcho(t, "writer", "draft", store)
	upper := workflow.Function("upper", func(_ context.Context, in *workflow.StepInput) (*run.StepOutput, error) {
		return &run.StepOutput{Content: strings.ToUpper(in.PreviousContentString())}, nil
	})
	wf, err := workflow.New("pipeline", workflow.WithStore(store), workflow.Step("draft", writer), upper)
	require.NoError(t, err)

	events := collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "topic", SessionID: "s1", PersistOnStart: true}))
	require.Equal(t, []string{"WorkflowStarted", "StepStarted", "StepCompleted", "StepStarted", "StepCompleted", "WorkflowCompleted"}, names(events))
	done := final(t, events).(*run.RunCompleted)
	require.Equal(t, "DRAFT(TOPIC)", done.Content)
	require.Len(t, done.StepResults, 2)
	require.Equal(t, "draft(topic)", done.StepResults[0].Content)
	require.Equal(t, "agent", done.StepResults[0].ExecutorType)
	require.Len(t, done.StepExecutorRuns, 1)
	require.Equal(t, done.StepResults[0].StepRunID, done.StepExecutorRuns[0].RunID)

	// The agent's events are passed on, stamped with the step.
	var agentEvents int
	for _, e := range events {
		if m, ok := e.(*run.MemberEvent); ok {
			agentEvents++
			b := m.Base()
			require.Equal(t, "pipeline", b.WorkflowID)
			require.Equal(t, "draft", b.StepName)
			require.Equal(t, 0, b.StepIndex)
			require.NotEmpty(t, b.WorkflowRunID)
		}
	}
	require.Positive(t, agentEvents)

	rec, err := store.GetRun(t.Context(), done.RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, rec.Run.Status)
	require.Equal(t, "pipeline", rec.Run.WorkflowID)
	require.Equal(t, storage.RunTypeWorkflow, rec.RunType, "the run counts as a workflow run in the metrics")
	require.Len(t, rec.Run.StepResults, 2)
	child, err := store.GetRun(t.Context(), done.StepResults[0].StepRunID, "")
	require.NoError(t, err)
	require.Equal(t, done.RunID, child.Run.ParentRunID)
	require.Equal(t, storage.RunTypeAgent, child.RunType)
	session, err := store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Equal(t, storage.SessionTypeWorkflow, session.SessionType)
}

func TestConditionLoopParallelAndRouter(t *testing.T) {
	store := openStore(t)
	writer := newEcho(t, "writer", "w", store)
	checker := newEcho(t, "checker", "c", store)
	wf, err := workflow.New("pipeline", workflow.WithStore(store),
		workflow.Step("draft", writer),
		workflow.Condition("check", workflow.CEL(`previous_step_content.contains("nope")`), workflow.Step("polish", checker)).
			Else(workflow.Step("redo", writer)),
		workflow.Parallel("fan", workflow.Step("a", writer), workflow.Step("b", checker)),
		workflow.Loop("refine", 3, workflow.CEL(`iteration >= 2`), workflow.Step("again", writer)),
		workflow.Router("pick", workflow.RouteCEL(`input == "topic" ? "publish" : "drop"`),
			workflow.Function("publish", func(_ context.Context, in *workflow.StepInput) (*run.StepOutput, error) {
				return &run.StepOutput{Content: "published " + in.StepOutput("redo").ContentString()}, nil
			}),
			workflow.Function("drop", func(context.Context, *workflow.StepInput) (*run.StepOutput, error) {
				return &run.StepOutput{Content: "dropped"}, nil
			})),
	)
	require.NoError(t, err)
	events := collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "topic", PersistOnStart: true}))
	// Inside the Parallel, the branches' step events interleave: compare
	// the rest in order.
	var outside []string
	inside := false
	for _, n := range names(events) {
		switch {
		case n == "ParallelExecutionStarted":
			inside = true
		case n == "ParallelExecutionCompleted":
			inside = false
		case inside:
			continue
		}
		outside = append(outside, n)
	}
	require.Equal(t, []string{
		"WorkflowStarted",
		"StepStarted", "StepCompleted",
		"ConditionExecutionStarted", "StepStarted", "StepCompleted", "ConditionExecutionCompleted",
		"ParallelExecutionStarted", "ParallelExecutionCompleted",
		"LoopExecutionStarted",
		"LoopIterationStarted", "StepStarted", "StepCompleted", "LoopIterationCompleted",
		"LoopIterationStarted", "StepStarted", "StepCompleted", "LoopIterationCompleted",
		"LoopExecutionCompleted",
		"RouterExecutionStarted", "StepStarted", "StepCompleted", "RouterExecutionCompleted",
		"WorkflowCompleted",
	}, outside)
	done := final(t, events).(*run.RunCompleted)
	require.Equal(t, "published w(w(topic))", done.Content, "the else branch ran: the draft has no \"nope\"")
	byName := map[string]*run.StepOutput{}
	for _, r := range done.StepResults {
		byName[r.StepName] = r
	}
	require.Equal(t, "redo", byName["check"].Steps[0].StepName)
	fan := byName["fan"]
	require.Equal(t, []string{"a", "b"}, []string{fan.Steps[0].StepName, fan.Steps[1].StepName}, "branch outputs in declaration order")
	require.Equal(t, "## a\n\nw(w(w(topic)))\n\n## b\n\nc(w(w(topic)))", fan.Content)
	require.Len(t, byName["refine"].Steps, 2, "the loop ended when iteration >= 2")
	require.Equal(t, "Router", byName["pick"].StepType)
}

func TestNestedWorkflowRunsAsAStep(t *testing.T) {
	store := openStore(t)
	writer := newEcho(t, "writer", "w", store)
	inner, err := workflow.New("inner", workflow.WithStore(store), workflow.Step("write", writer))
	require.NoError(t, err)
	outer, err := workflow.New("outer", workflow.WithStore(store), workflow.Step("nested", inner),
		workflow.Function("after", func(_ context.Context, in *workflow.StepInput) (*run.StepOutput, error) {
			return &run.StepOutput{Content: "after " + in.PreviousContentString()}, nil
		}))
	require.NoError(t, err)
	events := collect(t, outer.Stream(t.Context(), &run.Input{InputContent: "topic", SessionID: "s", PersistOnStart: true}))
	done := final(t, events).(*run.RunCompleted)
	require.Equal(t, "outer", done.Base().WorkflowID)
	require.Equal(t, "after w(topic)", done.Content)
	require.Equal(t, "workflow", done.StepResults[0].ExecutorType)
	var innerOwn, innerAgent int
	for _, e := range events {
		m, ok := e.(*run.MemberEvent)
		if !ok {
			continue
		}
		b := m.Base()
		switch {
		case b.AgentID == "writer":
			innerAgent++
			require.Equal(t, "inner", b.WorkflowID, "the agent's events name the workflow that ran it")
			require.Equal(t, 1, b.NestedDepth)
		case b.WorkflowID == "inner":
			innerOwn++
			require.Equal(t, 1, b.NestedDepth)
			require.NotEmpty(t, b.ParentStepID)
		default:
			t.Fatalf("a forwarded event of no one: %s %+v", run.NameOf(e), b)
		}
	}
	require.Positive(t, innerOwn)
	require.Positive(t, innerAgent)
	child, err := store.GetRun(t.Context(), done.StepResults[0].StepRunID, "")
	require.NoError(t, err)
	require.Equal(t, "inner", child.Run.WorkflowID)
	require.Equal(t, done.RunID, child.Run.ParentRunID)
}
