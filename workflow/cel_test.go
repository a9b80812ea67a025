package workflow_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/workflow"
)

func constant(name, content string) *workflow.Node {
	return workflow.Function(name, func(context.Context, *workflow.StepInput) (*run.StepOutput, error) {
		return &run.StepOutput{Content: content}, nil
	})
}

func TestCELSeesStepOutputsIterationAndState(t *testing.T) {
	n := 0
	count := workflow.Function("critique", func(context.Context, *workflow.StepInput) (*run.StepOutput, error) {
		n++
		if n == 3 {
			return &run.StepOutput{Content: "LGTM"}, nil
		}
		return &run.StepOutput{Content: "more"}, nil
	})
	wf, err := workflow.FromConfig(workflow.Config{ID: "improve", SessionState: map[string]any{"mode": "fast"}, Steps: []*workflow.Node{
		workflow.Loop("polish", 5, workflow.CEL(`step_outputs["critique"].contains("LGTM") || iteration >= 4`), count),
		workflow.Router("route", workflow.RouteCEL(`session_state.mode == "fast" ? ["page", "summarise"] : ["summarise"]`),
			constant("page", "paged"), constant("summarise", "summary")),
	}})
	require.NoError(t, err)
	out, err := wf.Run(t.Context(), &run.Input{InputContent: "x"})
	require.NoError(t, err)
	require.Equal(t, 3, n, "the loop ended when the critique said LGTM")
	require.Equal(t, "summary", out.Content)
	require.Equal(t, []string{"page", "summarise"}, []string{out.StepResults[1].Steps[0].StepName, out.StepResults[1].Steps[1].StepName})
}

func TestBadWorkflowsAreRefusedNamingTheStep(t *testing.T) {
	for name, tc := range map[string]struct {
		steps []*workflow.Node
		want  string
	}{
		"bad CEL":        {[]*workflow.Node{workflow.Condition("c", workflow.CEL(`previous_step_content.`), constant("x", "x"))}, `step "c"`},
		"non-bool CEL":   {[]*workflow.Node{workflow.Condition("c", workflow.CEL(`"text"`), constant("x", "x"))}, "want a bool"},
		"duplicate name": {[]*workflow.Node{constant("x", "x"), constant("x", "y")}, "has the name of step"},
		"empty loop":     {[]*workflow.Node{workflow.Loop("l", 2, workflow.Predicate{})}, "has no steps"},
		"no selector":    {[]*workflow.Node{workflow.Router("r", workflow.Selector{}, constant("x", "x"))}, "has no selector"},
		"bad review": {[]*workflow.Node{constant("x", "x").Review(workflow.HumanReview{RequiresIterationReview: true})},
			"requires_iteration_review is not available on a Function step"},
		"bad on_reject": {[]*workflow.Node{constant("x", "x").Review(workflow.HumanReview{RequiresConfirmation: true, OnReject: "else"})},
			"on_reject else is only for a Condition"},
		"no steps": {nil, "at least one step"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := workflow.FromConfig(workflow.Config{ID: "w", Steps: tc.steps})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestInputSchemaRefusesBadInputBeforeAnythingRuns(t *testing.T) {
	ran := false
	wf, err := workflow.New("typed", workflow.WithInputSchema(map[string]any{
		"type": "object", "required": []any{"topic"}, "properties": map[string]any{"topic": map[string]any{"type": "string"}},
	}), workflow.Function("f", func(_ context.Context, in *workflow.StepInput) (*run.StepOutput, error) {
		ran = true
		return &run.StepOutput{Content: in.InputString()}, nil
	}))
	require.NoError(t, err)
	_, err = wf.Run(t.Context(), &run.Input{InputContent: `{"subject": "x"}`})
	require.ErrorIs(t, err, run.ErrInvalidInput)
	require.False(t, ran)
	out, err := wf.Run(t.Context(), &run.Input{InputContent: `{"topic": "x"}`})
	require.NoError(t, err)
	require.Equal(t, `{"topic": "x"}`, out.Content)
}

func TestFailedStepsFailSkipOrRetry(t *testing.T) {
	calls := 0
	flaky := workflow.Function("flaky", func(context.Context, *workflow.StepInput) (*run.StepOutput, error) {
		calls++
		if calls < 3 {
			return nil, context.DeadlineExceeded
		}
		return &run.StepOutput{Content: "third time"}, nil
	})
	wf, err := workflow.New("retry", flaky.Retries(2))
	require.NoError(t, err)
	out, err := wf.Run(t.Context(), &run.Input{InputContent: "x"})
	require.NoError(t, err)
	require.Equal(t, "third time", out.Content)

	broken := func() *workflow.Node {
		return workflow.Function("broken", func(context.Context, *workflow.StepInput) (*run.StepOutput, error) {
			panic("boom")
		})
	}
	wf, err = workflow.New("fail", broken(), constant("after", "after"))
	require.NoError(t, err)
	out, err = wf.Run(t.Context(), &run.Input{InputContent: "x"})
	require.Error(t, err)
	require.Equal(t, run.StatusError, out.Status)
	require.Contains(t, out.ContentString(), "step broken failed: function panicked: boom")

	wf, err = workflow.New("skip", broken().SkipOnFailure(), constant("after", "after"))
	require.NoError(t, err)
	out, err = wf.Run(t.Context(), &run.Input{InputContent: "x"})
	require.NoError(t, err)
	require.Equal(t, "after", out.Content)
	require.False(t, out.StepResults[0].Success)
}
