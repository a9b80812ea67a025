package workflow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/workflow"
)

func TestContinuedRunPausesAgainAtALaterCondition(t *testing.T) {
	store := openStore(t)
	wf, err := workflow.New("twice", workflow.WithStore(store),
		constant("first", "one").Review(workflow.HumanReview{RequiresConfirmation: true}),
		workflow.Condition("gate", workflow.CEL(`true`), constant("inside", "two")).
			Review(workflow.HumanReview{RequiresConfirmation: true, OnReject: workflow.OnRejectElse}).
			Else(constant("otherwise", "three")),
	)
	require.NoError(t, err)
	p := paused(t, collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "x", PersistOnStart: true})))
	require.Equal(t, "first", p.PausedStepName)

	events := collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID,
		StepRequirements: answer(t, p.StepRequirements[0], func(r *run.StepRequirement) { r.Confirmed = new(true) })}))
	require.Contains(t, names(events), "ConditionPaused")
	p2 := paused(t, events)
	require.Equal(t, "gate", p2.PausedStepName, "the continued run pauses again at the condition")
	require.Equal(t, 1, *p2.PausedStepIndex)

	events = collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID,
		StepRequirements: answer(t, p2.StepRequirements[0], func(r *run.StepRequirement) { r.Confirmed = new(false) })}))
	done := final(t, events).(*run.RunCompleted)
	require.Equal(t, "three", done.Content, "rejected with on_reject else, the condition ran its else branch")
}

func TestLoopIterationReview(t *testing.T) {
	store := openStore(t)
	n := 0
	wf, err := workflow.New("loop", workflow.WithStore(store),
		workflow.Loop("refine", 5, workflow.Predicate{}, workflow.Function("step", func(context.Context, *workflow.StepInput) (*run.StepOutput, error) {
			n++
			return &run.StepOutput{Content: strings.Repeat("x", n)}, nil
		})).Review(workflow.HumanReview{RequiresIterationReview: true, IterationReviewMessage: "Again?"}),
	)
	require.NoError(t, err)
	p := paused(t, collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "x", PersistOnStart: true})))
	require.Equal(t, "Again?", p.StepRequirements[0].ConfirmationMessage)
	require.Equal(t, "x", p.StepRequirements[0].StepOutput.Content)
	p2 := paused(t, collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID,
		StepRequirements: answer(t, p.StepRequirements[0], func(r *run.StepRequirement) { r.Confirmed = new(true) })})))
	require.Equal(t, 2, n, "confirmed: one more iteration, the first not run again")
	done := final(t, collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID,
		StepRequirements: answer(t, p2.StepRequirements[0], func(r *run.StepRequirement) { r.Confirmed = new(false) })}))).(*run.RunCompleted)
	require.Equal(t, "xx", done.Content, "rejected: the loop ends")
	require.Equal(t, 2, n)
	require.Len(t, done.StepResults[0].Steps, 2)
}

func TestOnErrorPauseRetriesOrSkips(t *testing.T) {
	store := openStore(t)
	calls := 0
	wf, err := workflow.New("flaky", workflow.WithStore(store),
		workflow.Function("flaky", func(context.Context, *workflow.StepInput) (*run.StepOutput, error) {
			calls++
			if calls == 1 {
				return nil, context.DeadlineExceeded
			}
			return &run.StepOutput{Content: "worked"}, nil
		}).Review(workflow.HumanReview{OnError: workflow.OnErrorPause}),
	)
	require.NoError(t, err)
	events := collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "x", PersistOnStart: true}))
	require.Contains(t, names(events), "StepError")
	p := paused(t, events)
	require.Contains(t, p.StepRequirements[0].ConfirmationMessage, "failed")
	done := final(t, collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID,
		StepRequirements: answer(t, p.StepRequirements[0], func(r *run.StepRequirement) { r.Confirmed = new(true) })}))).(*run.RunCompleted)
	require.Equal(t, "worked", done.Content)
	require.Equal(t, 2, calls)
}

func TestReviewTimeoutAppliesOnTimeout(t *testing.T) {
	store := openStore(t)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, tc := range []struct {
		onTimeout string
		want      string
	}{{workflow.OnTimeoutSkip, "before"}, {workflow.OnTimeoutApprove, "reviewed"}, {workflow.OnTimeoutCancel, "WorkflowCancelled"}} {
		t.Run(tc.onTimeout, func(t *testing.T) {
			wf, err := workflow.FromConfig(workflow.Config{ID: "timed-" + tc.onTimeout, Store: store, Now: clock, Steps: []*workflow.Node{
				constant("before", "before"),
				constant("reviewed", "reviewed").Review(workflow.HumanReview{RequiresConfirmation: true, TimeoutSeconds: 60, OnTimeout: tc.onTimeout}),
			}})
			require.NoError(t, err)
			p := paused(t, collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "x", PersistOnStart: true})))
			require.Equal(t, "2026-12-02T10:01:00Z", p.StepRequirements[0].TimeoutAt)
			now = now.Add(2 * time.Minute)
			defer func() { now = now.Add(-2 * time.Minute) }()
			// Answered late: rejecting is overridden by on_timeout.
			events := collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID,
				StepRequirements: answer(t, p.StepRequirements[0], func(r *run.StepRequirement) { r.Confirmed = new(false) })}))
			if done, ok := final(t, events).(*run.RunCompleted); ok {
				require.Equal(t, tc.want, done.Content)
				return
			}
			require.Equal(t, tc.want, run.NameOf(final(t, events)))
		})
	}
}

func TestWorkflowHistoryReachesTheStep(t *testing.T) {
	store := openStore(t)
	writer := newEcho(t, "writer", "w", store)
	wf, err := workflow.New("chat", workflow.WithStore(store), workflow.Step("answer", writer).WithHistory(2))
	require.NoError(t, err)
	for _, msg := range []string{"first", "second"} {
		_, err := wf.Run(t.Context(), &run.Input{InputContent: msg, SessionID: "s", PersistOnStart: true})
		require.NoError(t, err)
	}
	requests := writer.model.Requests()
	last := requests[len(requests)-1].Messages
	got := last[len(last)-1].Content
	require.Contains(t, got, "<workflow_history_context>")
	require.Contains(t, got, "input: first\nresponse: w(first)")
	require.True(t, strings.HasSuffix(got.(string), "second"), got)
}

func TestWorkflowHistoryReachesAStepInAParallelBranch(t *testing.T) {
	store := openStore(t)
	writer := newEcho(t, "writer", "w", store)
	other := newEcho(t, "other", "o", store)
	wf, err := workflow.New("chat", workflow.WithStore(store),
		workflow.Parallel("fan", workflow.Step("answer", writer).WithHistory(2), workflow.Step("plain", other)))
	require.NoError(t, err)
	for _, msg := range []string{"first", "second"} {
		_, err := wf.Run(t.Context(), &run.Input{InputContent: msg, SessionID: "s", PersistOnStart: true})
		require.NoError(t, err)
	}
	requests := writer.model.Requests()
	last := requests[len(requests)-1].Messages
	got := last[len(last)-1].Content.(string)
	require.Contains(t, got, "<workflow_history_context>", "a branch's step sees the history it asks for")
	require.Contains(t, got, "input: first")
	otherRequests := other.model.Requests()
	plain := otherRequests[len(otherRequests)-1].Messages
	require.NotContains(t, plain[len(plain)-1].Content, "<workflow_history_context>", "a step that does not ask gets none")
}
