package workflow_test

import (
	"context"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/internal/journaltest"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/workflow"
)

// crashing is an agent whose first call stops the run (as a crash of its
// process would), and which answers on later calls.
func crashing(t *testing.T, id string, store storage.Store, before func(), stop context.CancelFunc) (*agent.Agent, *atomic.Int64) {
	t.Helper()
	calls := new(atomic.Int64)
	m := scripted.New([]scripted.Reply{scripted.Respond(func(*model.Request) scripted.Reply {
		if calls.Add(1) == 1 {
			if before != nil {
				before()
			}
			stop()
			return scripted.Reply{Err: context.Canceled}
		}
		return scripted.Reply{Content: id + " done"}
	})}, scripted.Loop())
	a, err := agent.New(agent.Config{ID: id, Store: store, Model: m})
	require.NoError(t, err)
	return a, calls
}

func TestJournaledWorkflowResumesAtTheStepInFlight(t *testing.T) {
	store := openStore(t)
	writer := newEcho(t, "writer", "w", store)
	crash, stop := context.WithCancel(t.Context())
	checker, checks := crashing(t, "checker", store, nil, stop)
	wf, err := workflow.New("pipeline", workflow.WithStore(store), workflow.Step("draft", writer), workflow.Step("check", checker))
	require.NoError(t, err)

	journal := journaltest.New("wf-run")
	in := &run.Input{InputContent: "topic", RunID: "wf-run", SessionID: "s", PersistOnStart: true}
	var childRun string
	for e := range wf.Execute(crash, in, run.Execution{Journal: journal}) {
		if m, ok := e.(*run.MemberEvent); ok && m.Base().AgentID == "checker" {
			childRun = m.Base().RunID
		}
	}
	require.Equal(t, []string{"workflow step draft"}, journal.Ran(), "the stopped step recorded nothing")

	journal.Restart()
	events := collect(t, wf.Execute(t.Context(), in, run.Execution{Journal: journal}))
	done := final(t, events).(*run.RunCompleted)
	require.Equal(t, "checker done", done.Content)
	require.EqualValues(t, 1, writer.calls.Load(), "the completed step's agent is not called again")
	require.EqualValues(t, 2, checks.Load())
	require.Equal(t, childRun, done.StepResults[1].StepRunID, "the step in flight ran again as the same child run")
	rec, err := store.GetRun(t.Context(), childRun, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, rec.Run.Status)
}

func TestJournaledParallelRerunsOnlyTheUnfinishedBranch(t *testing.T) {
	store := openStore(t)
	a, b := newEcho(t, "a", "a", store), newEcho(t, "b", "b", store)
	journal := journaltest.New("wf-run")
	crash, stop := context.WithCancel(t.Context())
	// The third branch crashes once the two others are recorded.
	waitForSiblings := func() {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := journal.WaitRan(ctx, "workflow branch a", "workflow branch b"); err != nil {
			t.Error("the other branches never finished:", err)
		}
	}
	c, cCalls := crashing(t, "c", store, waitForSiblings, stop)
	wf, err := workflow.New("fan", workflow.WithStore(store),
		workflow.Parallel("fan", workflow.Step("a", a), workflow.Step("b", b), workflow.Step("c", c)))
	require.NoError(t, err)
	in := &run.Input{InputContent: "go", RunID: "wf-run", SessionID: "s", PersistOnStart: true}
	for range wf.Execute(crash, in, run.Execution{Journal: journal}) {
	}
	require.ElementsMatch(t, []string{"workflow branch a", "workflow branch b"}, journal.Ran())

	journal.Restart()
	done := final(t, collect(t, wf.Execute(t.Context(), in, run.Execution{Journal: journal}))).(*run.RunCompleted)
	require.Equal(t, "## a\n\na(go)\n\n## b\n\nb(go)\n\n## c\n\nc done", done.Content)
	require.EqualValues(t, 1, a.calls.Load())
	require.EqualValues(t, 1, b.calls.Load())
	require.EqualValues(t, 2, cCalls.Load(), "only the third branch ran again")
}

func TestCancelStopsEveryParallelBranch(t *testing.T) {
	store := openStore(t)
	started := make(chan struct{}, 3)
	blocking := func(id string) *agent.Agent {
		m := scripted.New([]scripted.Reply{scripted.Respond(func(req *model.Request) scripted.Reply {
			started <- struct{}{}
			return scripted.Reply{Content: "never"}
		})}, scripted.Loop())
		// The model's answer is held until the run is cancelled.
		ag, err := agent.New(agent.Config{ID: id, Store: store, Model: blockUntilDone{m}})
		require.NoError(t, err)
		return ag
	}
	wf, err := workflow.New("fan", workflow.WithStore(store),
		workflow.Parallel("fan", workflow.Step("a", blocking("a")), workflow.Step("b", blocking("b")), workflow.Step("c", blocking("c"))))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for range 3 {
			<-started
		}
		cancel()
	}()
	events := collect(t, wf.Stream(ctx, &run.Input{InputContent: "go", RunID: "wf-run", SessionID: "s", PersistOnStart: true}))
	require.Equal(t, "WorkflowCancelled", run.NameOf(final(t, events)))
	recs, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s", Page: storage.Page{Limit: 10, Page: 1}})
	require.NoError(t, err)
	require.Len(t, recs, 4)
	for _, rec := range recs {
		require.Equal(t, run.StatusCancelled, rec.Run.Status, "run %s (%s)", rec.Run.RunID, rec.Run.RunnerID())
	}
}

// blockUntilDone is a model that answers only once its request's context
// ends.
type blockUntilDone struct{ *scripted.Model }

func (m blockUntilDone) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	_, _ = m.Model.Invoke(ctx, req)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (m blockUntilDone) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		_, _ = m.Model.Invoke(ctx, req)
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}
