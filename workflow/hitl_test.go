package workflow_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/workflow"
)

// paused runs the workflow to its pause and returns the stored paused run.
func paused(t *testing.T, events []run.Event) *run.RunPaused {
	t.Helper()
	p, ok := final(t, events).(*run.RunPaused)
	require.True(t, ok, "the workflow pauses, got %T", final(t, events))
	require.Equal(t, "WorkflowPaused", run.NameOf(p))
	require.Len(t, p.StepRequirements, 1)
	return p
}

// answer copies a requirement for the client to resolve, through JSON as
// a client would.
func answer(t *testing.T, req *run.StepRequirement, edit func(*run.StepRequirement)) []*run.StepRequirement {
	t.Helper()
	data, err := json.Marshal(req)
	require.NoError(t, err)
	var out run.StepRequirement
	require.NoError(t, json.Unmarshal(data, &out))
	edit(&out)
	return []*run.StepRequirement{&out}
}

func confirmPipeline(t *testing.T, onReject string) (*workflow.Workflow, echo, echo) {
	t.Helper()
	store := openStore(t)
	writer, checker := newEcho(t, "writer", "w", store), newEcho(t, "checker", "c", store)
	wf, err := workflow.New("pipeline", workflow.WithStore(store),
		workflow.Step("draft", writer),
		workflow.Step("publish", checker).Review(workflow.HumanReview{RequiresConfirmation: true, ConfirmationMessage: "Publish?", OnReject: onReject}),
		workflow.Function("after", func(_ context.Context, in *workflow.StepInput) (*run.StepOutput, error) {
			return &run.StepOutput{Content: "after " + in.PreviousContentString()}, nil
		}),
	)
	require.NoError(t, err)
	return wf, writer, checker
}

func TestConfirmationPausesAndContinues(t *testing.T) {
	wf, writer, checker := confirmPipeline(t, workflow.OnRejectCancel)
	events := collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "topic", PersistOnStart: true}))
	p := paused(t, events)
	req := p.StepRequirements[0]
	require.True(t, req.RequiresConfirmation)
	require.Equal(t, "Publish?", req.ConfirmationMessage)
	require.Equal(t, "publish", p.PausedStepName)
	require.Equal(t, 1, *p.PausedStepIndex)
	require.Equal(t, "step", p.PauseKind)
	require.Contains(t, names(events), "StepPaused")
	require.EqualValues(t, 0, checker.calls.Load(), "nothing ran past the pause")

	// Unresolved: refused, nothing runs.
	err := wf.CheckContinue(t.Context(), &run.ContinueRequest{RunID: p.RunID})
	require.ErrorIs(t, err, run.ErrUnresolved)

	cont := collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID,
		StepRequirements: answer(t, req, func(r *run.StepRequirement) { r.Confirmed = new(true) })}))
	require.Equal(t, []string{"WorkflowStarted", "StepContinued", "StepStarted", "StepCompleted", "StepStarted", "StepCompleted", "WorkflowCompleted"}, names(cont))
	done := final(t, cont).(*run.RunCompleted)
	require.Equal(t, p.RunID, done.RunID, "the run goes on under its own id")
	require.Equal(t, "after c(w(topic))", done.Content)
	require.Len(t, done.StepResults, 3)
	require.EqualValues(t, 1, writer.calls.Load(), "the step done before the pause did not run again")
}

func TestRejectedConfirmationFollowsOnReject(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		wf, _, checker := confirmPipeline(t, workflow.OnRejectCancel)
		p := paused(t, collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "topic", PersistOnStart: true})))
		cont := collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID,
			StepRequirements: answer(t, p.StepRequirements[0], func(r *run.StepRequirement) { r.Confirmed = new(false) })}))
		require.Equal(t, "WorkflowCancelled", run.NameOf(final(t, cont)))
		require.EqualValues(t, 0, checker.calls.Load())
	})
	t.Run("skip", func(t *testing.T) {
		wf, _, checker := confirmPipeline(t, workflow.OnRejectSkip)
		p := paused(t, collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "topic", PersistOnStart: true})))
		cont := collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID,
			StepRequirements: answer(t, p.StepRequirements[0], func(r *run.StepRequirement) { r.Confirmed = new(false) })}))
		done := final(t, cont).(*run.RunCompleted)
		require.Equal(t, "after w(topic)", done.Content, "the rejected step was skipped")
		require.EqualValues(t, 0, checker.calls.Load())
	})
}

func TestUserInputReachesTheStep(t *testing.T) {
	store := openStore(t)
	writer := newEcho(t, "writer", "w", store)
	wf, err := workflow.New("ask", workflow.WithStore(store),
		workflow.Step("write", writer).Review(workflow.HumanReview{RequiresUserInput: true, UserInputMessage: "Tone?",
			UserInputSchema: []run.UserInputField{{Name: "tone", FieldType: "str"}, {Name: "words", FieldType: "int"}}}),
	)
	require.NoError(t, err)
	p := paused(t, collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "topic", PersistOnStart: true})))
	req := p.StepRequirements[0]
	require.True(t, req.RequiresUserInput)

	// A value of the wrong type is refused with what to fix.
	err = wf.CheckContinue(t.Context(), &run.ContinueRequest{RunID: p.RunID, StepRequirements: answer(t, req, func(r *run.StepRequirement) {
		r.UserInput = map[string]any{"tone": "dry", "words": "many"}
	})})
	require.ErrorIs(t, err, run.ErrInvalidContinue)
	require.Contains(t, err.Error(), "words")

	cont := collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID, StepRequirements: answer(t, req, func(r *run.StepRequirement) {
		r.UserInput = map[string]any{"tone": "dry", "words": 20}
	})}))
	done := final(t, cont).(*run.RunCompleted)
	require.Equal(t, `w(topic

User input: {"tone":"dry","words":20})`, done.Content)
}

func TestOutputReviewRejectionRetriesTheStep(t *testing.T) {
	store := openStore(t)
	writer := newEcho(t, "writer", "w", store)
	wf, err := workflow.New("review", workflow.WithStore(store),
		workflow.Step("write", writer).Review(workflow.HumanReview{RequiresOutputReview: true, OutputReviewMessage: "Good?", OnReject: workflow.OnRejectRetry}),
	)
	require.NoError(t, err)
	events := collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "topic", PersistOnStart: true}))
	p := paused(t, events)
	require.Contains(t, names(events), "StepOutputReview")
	req := p.StepRequirements[0]
	require.True(t, req.RequiresOutputReview)
	require.Equal(t, "w(topic)", req.StepOutput.Content)

	cont := collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID, StepRequirements: answer(t, req, func(r *run.StepRequirement) {
		r.Confirmed, r.RejectionFeedback = new(false), "shorter"
	})}))
	p2 := paused(t, cont)
	require.Equal(t, "w(topic\n\nA reviewer rejected the previous answer: shorter)", p2.StepRequirements[0].StepOutput.Content)
	require.Equal(t, 1, p2.StepRequirements[0].RetryCount)
	require.EqualValues(t, 2, writer.calls.Load())

	cont = collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID, StepRequirements: answer(t, p2.StepRequirements[0], func(r *run.StepRequirement) {
		r.Confirmed, r.EditedOutput = new(true), "edited by hand"
	})}))
	done := final(t, cont).(*run.RunCompleted)
	require.Equal(t, "edited by hand", done.Content)
	require.EqualValues(t, 2, writer.calls.Load(), "approving does not run the step again")
}

func TestRouterLetsAPersonChoose(t *testing.T) {
	store := openStore(t)
	wf, err := workflow.New("route", workflow.WithStore(store),
		workflow.Router("pick", workflow.Selector{},
			workflow.Function("tech", func(context.Context, *workflow.StepInput) (*run.StepOutput, error) {
				return &run.StepOutput{Content: "tech"}, nil
			}),
			workflow.Function("art", func(context.Context, *workflow.StepInput) (*run.StepOutput, error) {
				return &run.StepOutput{Content: "art"}, nil
			}),
		).Review(workflow.HumanReview{RequiresUserInput: true, UserInputMessage: "Which?"}),
	)
	require.NoError(t, err)
	events := collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "x", PersistOnStart: true}))
	require.Contains(t, names(events), "RouterPaused")
	p := paused(t, events)
	req := p.StepRequirements[0]
	require.True(t, req.RequiresRouteSelection)
	require.Equal(t, []string{"tech", "art"}, req.AvailableChoices)

	err = wf.CheckContinue(t.Context(), &run.ContinueRequest{RunID: p.RunID, StepRequirements: answer(t, req, func(r *run.StepRequirement) {
		r.SelectedChoices = []string{"music"}
	})})
	require.ErrorIs(t, err, run.ErrInvalidContinue)

	cont := collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID, StepRequirements: answer(t, req, func(r *run.StepRequirement) {
		r.SelectedChoices = []string{"art"}
	})}))
	require.Equal(t, "art", final(t, cont).(*run.RunCompleted).Content)
}

func TestAgentPauseInsideAStepContinuesTheAgent(t *testing.T) {
	store := openStore(t)
	deleted := 0
	remove, err := tool.New(tool.Config{Name: "delete_file", RequiresConfirmation: true}, func(_ context.Context, args struct {
		Path string `json:"path"`
	}) (string, error) {
		deleted++
		return "deleted " + args.Path, nil
	})
	require.NoError(t, err)
	cleaner, err := agent.New(agent.Config{ID: "cleaner", Store: store, Tools: []tool.Tool{remove},
		Model: scripted.New([]scripted.Reply{scripted.ToolCall("delete_file", `{"path":"/tmp/x"}`), scripted.Text("cleaned up")})})
	require.NoError(t, err)
	wf, err := workflow.New("clean", workflow.WithStore(store), workflow.Step("clean", cleaner),
		workflow.Function("report", func(_ context.Context, in *workflow.StepInput) (*run.StepOutput, error) {
			return &run.StepOutput{Content: "report: " + in.PreviousContentString()}, nil
		}))
	require.NoError(t, err)

	events := collect(t, wf.Stream(t.Context(), &run.Input{InputContent: "clean", PersistOnStart: true}))
	require.Contains(t, names(events), "StepExecutorPaused")
	p := paused(t, events)
	require.Equal(t, "executor", p.PauseKind)
	req := p.StepRequirements[0]
	require.True(t, req.RequiresExecutorInput)
	require.Equal(t, "cleaner", req.ExecutorID)
	require.Len(t, req.ExecutorRequirements, 1)
	require.Zero(t, deleted)

	cont := collect(t, wf.Continue(t.Context(), &run.ContinueRequest{RunID: p.RunID, StepRequirements: answer(t, req, func(r *run.StepRequirement) {
		r.ExecutorRequirements[0].Confirmation = new(true)
		r.ExecutorRequirements[0].ToolExecution.Confirmed = new(true)
	})}))
	require.Contains(t, names(cont), "StepExecutorContinued")
	done := final(t, cont).(*run.RunCompleted)
	require.Equal(t, "report: cleaned up", done.Content)
	require.Equal(t, 1, deleted)
	child, err := store.GetRun(t.Context(), req.ExecutorRunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, child.Run.Status, "the agent's own run went on in place")
}
