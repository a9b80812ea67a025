package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/workflow"
)

// pipelineYAML is the workflow of the documentation: every step type but
// the router, over two agents of a fake model.
const pipelineYAML = `
db: ${DB}
models:
  fake: {provider: openai, id: gpt-test, base_url: "${FAKE_URL}", api_key: sk-fake}
agents:
  - {id: writer, model: fake, instructions: Write.}
  - {id: checker, model: fake, instructions: Check.}
workflows:
  - id: pipeline
    steps:
      - {name: draft, agent: writer}
      - name: check
        condition: 'previous_step_content.contains("ok")'
        steps: [{name: polish, agent: checker}]
        else: [{name: redo, agent: writer}]
      - name: fan
        parallel: [{name: a, agent: writer}, {name: b, agent: checker}]
      - name: refine
        loop: {max_iterations: 3, until: 'iteration >= 2'}
        steps: [{name: again, agent: writer}]
      - name: publish
        agent: checker
        human_review: {requires_confirmation: true, confirmation_message: "Publish?", on_reject: cancel}
`

func TestParseWorkflows(t *testing.T) {
	t.Parallel()
	file := mustParse(t, pipelineYAML, map[string]string{"FAKE_URL": "http://127.0.0.1:1/v1", "DB": "sqlite://x.db"})
	require.Len(t, file.Workflows, 1)
	w := file.Workflows[0]
	require.Equal(t, "pipeline", w.ID)
	require.Equal(t, "pipeline", w.Name, "the name defaults to the id")
	require.Equal(t, 3, w.NumHistoryRuns)
	require.True(t, w.StreamExecutorEvents)
	require.Equal(t, 9, w.Line)
	require.Len(t, w.Steps, 5)
	draft, check, fan, refine, publish := w.Steps[0], w.Steps[1], w.Steps[2], w.Steps[3], w.Steps[4]

	require.Equal(t, &WorkflowStep{Name: "draft", Type: workflow.TypeStep, Agent: "writer", NumHistoryRuns: 3, Line: 11, refLine: 11}, draft,
		"the keys as written, every other at its default")

	require.Equal(t, workflow.TypeCondition, check.Type)
	require.Equal(t, `previous_step_content.contains("ok")`, check.Condition)
	require.Equal(t, "polish", check.Steps[0].Name)
	require.Equal(t, "checker", check.Steps[0].Agent)
	require.Equal(t, "redo", check.Else[0].Name)

	require.Equal(t, workflow.TypeParallel, fan.Type)
	require.Equal(t, workflow.DefaultMaxConcurrency, fan.MaxConcurrency)
	require.Equal(t, []string{"a", "b"}, []string{fan.Steps[0].Name, fan.Steps[1].Name})

	require.Equal(t, workflow.TypeLoop, refine.Type)
	require.Equal(t, 3, refine.MaxIterations)
	require.Equal(t, "iteration >= 2", refine.Until)
	require.Equal(t, "again", refine.Steps[0].Name)

	require.Equal(t, workflow.TypeStep, publish.Type)
	require.Equal(t, &workflow.HumanReview{
		RequiresConfirmation: true, ConfirmationMessage: "Publish?",
		OnReject: workflow.OnRejectCancel, OnError: workflow.OnErrorSkip, MaxRetries: 3, OnTimeout: workflow.OnTimeoutCancel,
	}, publish.HumanReview, "the review with its defaults")

	var names []string
	for s := range allSteps(w.Steps) {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"draft", "check", "polish", "redo", "fan", "a", "b", "refine", "again", "publish"}, names)
}

func TestParseWorkflowEveryKey(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
agents: [{id: writer}, {id: checker}]
teams: [{id: desk, members: [writer, checker]}]
workflows:
  - id: outer
    name: Outer
    description: Runs the inner workflow.
    input_schema: {type: object, properties: {topic: {type: string}}, required: [topic]}
    session_state: {count: 0}
    add_workflow_history: true
    num_history_runs: 5
    stream_executor_events: false
    store_events: true
    steps:
      - name: group
        description: A group.
        human_review: {requires_confirmation: true}
        steps:
          - {name: via_team, team: desk, max_retries: 2, skip_on_failure: true}
          - {name: via_workflow, workflow: inner}
      - name: pick
        router: 'input.contains("tech") ? ["tech"] : ["general", "extra"]'
        choices:
          - {name: tech, agent: writer}
          - {name: general, agent: checker}
          - {name: extra, agent: checker}
      - name: person_picks
        router:
        human_review: {requires_user_input: true, user_input_message: Pick one., allow_multiple_selections: true}
        choices: [{name: left, agent: writer}, {name: right, agent: checker}]
      - name: fan
        max_concurrency: 2
        parallel: [{name: p1, agent: writer}, {name: p2, agent: writer}]
  - id: inner
    steps:
      - name: ask
        agent: writer
        add_workflow_history: true
        num_history_runs: 2
        human_review:
          requires_user_input: true
          user_input_message: Tell me more.
          user_input_schema:
            - {name: tone, field_type: str, description: The tone, required: false, allowed_values: [formal, casual]}
            - {name: words}
          requires_output_review: true
          output_review_message: Good?
          on_reject: retry
          on_error: pause
          max_retries: 5
          timeout: 60
          on_timeout: approve
      - name: iterate
        loop: {max_iterations: 4}
        human_review: {requires_iteration_review: true, iteration_review_message: "Again?"}
        steps: [{name: body, agent: writer}]
      - name: gate
        condition: 'size(step_outputs) > 0'
        human_review: {requires_confirmation: true, on_reject: else}
        steps: [{name: yes, agent: writer}]
        else: [{name: no, agent: checker}]
`, nil)
	outer, inner := file.Workflows[0], file.Workflows[1]
	require.Equal(t, "Outer", outer.Name)
	require.Equal(t, "Runs the inner workflow.", outer.Description)
	require.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"topic": map[string]any{"type": "string"}}, "required": []any{"topic"}}, outer.InputSchema)
	require.Equal(t, map[string]any{"count": 0}, outer.SessionState)
	require.True(t, outer.AddWorkflowHistory)
	require.Equal(t, 5, outer.NumHistoryRuns)
	require.False(t, outer.StreamExecutorEvents)
	require.True(t, outer.StoreEvents)

	group := outer.Steps[0]
	require.Equal(t, workflow.TypeSteps, group.Type, "steps alone make a group")
	require.Equal(t, "A group.", group.Description)
	require.Equal(t, "desk", group.Steps[0].Team)
	require.Equal(t, 2, group.Steps[0].MaxRetries)
	require.True(t, group.Steps[0].SkipOnFailure)
	require.Equal(t, "inner", group.Steps[1].Workflow, "a workflow declared later")

	pick, person, fan := outer.Steps[1], outer.Steps[2], outer.Steps[3]
	require.Equal(t, workflow.TypeRouter, pick.Type)
	require.Len(t, pick.Steps, 3, "the choices")
	require.Equal(t, workflow.TypeRouter, person.Type)
	require.Empty(t, person.Router)
	require.True(t, person.HumanReview.AllowMultipleSelections)
	require.Equal(t, 2, fan.MaxConcurrency)

	ask := inner.Steps[0]
	require.True(t, ask.AddWorkflowHistory)
	require.Equal(t, 2, ask.NumHistoryRuns)
	require.Equal(t, &workflow.HumanReview{
		RequiresUserInput: true, UserInputMessage: "Tell me more.",
		UserInputSchema: []run.UserInputField{
			{Name: "tone", FieldType: "str", Description: "The tone", Required: new(false), AllowedValues: []any{"formal", "casual"}},
			{Name: "words", FieldType: "str"},
		},
		RequiresOutputReview: true, OutputReviewMessage: "Good?", OnReject: workflow.OnRejectRetry, OnError: workflow.OnErrorPause,
		MaxRetries: 5, TimeoutSeconds: 60, OnTimeout: workflow.OnTimeoutApprove,
	}, ask.HumanReview)
	require.Equal(t, 4, inner.Steps[1].MaxIterations)
	require.Empty(t, inner.Steps[1].Until)
	require.True(t, inner.Steps[1].HumanReview.RequiresIterationReview)
	require.Equal(t, workflow.OnRejectElse, inner.Steps[2].HumanReview.OnReject)
}

func TestParseWorkflowErrors(t *testing.T) {
	t.Parallel()
	// Lines 1-4: two agents and a team.
	const head = "agents:\n  - id: writer\n  - id: checker\nteams: [{id: desk, members: [writer]}]\nworkflows:\n"
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"workflows not a list", "workflows: {id: w}\n",
			`agnogo.yaml:1: workflows: want a list of workflows (each starting with - id: …), got a mapping`},
		{"no id", head + "  - steps: [{name: s, agent: writer}]\n",
			`agnogo.yaml:6: workflows[0] has no id; add id: followed by a unique name`},
		{"no steps", head + "  - id: w\n",
			`agnogo.yaml:6: workflow "w" has no steps; add steps: followed by a list of steps`},
		{"empty steps", head + "  - id: w\n    steps: []\n",
			`agnogo.yaml:7: steps in workflow "w": want at least one step`},
		{"unknown workflow key", head + "  - id: w\n    stpes: [{name: s, agent: writer}]\n",
			`agnogo.yaml:7: unknown key "stpes" in workflow "w"; did you mean "steps"?`},
		{"a model on a workflow", head + "  - id: w\n    model: openai:gpt-5\n    steps: [{name: s, agent: writer}]\n",
			`agnogo.yaml:7: key "model" in workflow "w": a workflow has no model of its own`},
		{"a team's key on a workflow", head + "  - id: w\n    members: [writer]\n    steps: [{name: s, agent: writer}]\n",
			`agnogo.yaml:7: key "members" in workflow "w" is a key of agents or teams, not of workflows; a workflow's keys are: id, name,`},
		{"a step's key on a workflow", head + "  - id: w\n    agent: writer\n    steps: [{name: s, agent: writer}]\n",
			`agnogo.yaml:7: key "agent" in workflow "w" is a key of a workflow's steps, not of the workflow`},
		{"unknown step key", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        max_retires: 2\n",
			`agnogo.yaml:10: unknown key "max_retires" in step "s" of workflow "w"; did you mean "max_retries"?`},
		{"a review key on a step", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        requires_confirmation: true\n",
			`agnogo.yaml:10: key "requires_confirmation" in step "s" of workflow "w" belongs in human_review: write human_review: {requires_confirmation: …}`},
		{"a function step", head + "  - id: w\n    steps:\n      - name: s\n        function: upper\n",
			`agnogo.yaml:9: key "function" in step "s" of workflow "w": a step of agnogo.yaml runs an agent, a team or a workflow of the file`},
		{"unknown review key", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        human_review:\n          requires_confirmation: true\n          on_rejekt: cancel\n",
			`agnogo.yaml:12: unknown key "on_rejekt" in human_review in step "s" of workflow "w"; did you mean "on_reject"?`},
		{"unknown loop key", head + "  - id: w\n    steps:\n      - name: l\n        loop: {max_iteration: 2}\n        steps: [{name: s, agent: writer}]\n",
			`agnogo.yaml:9: unknown key "max_iteration" in loop in step "l" of workflow "w"; did you mean "max_iterations"?`},
		{"unknown field key", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        human_review:\n          requires_user_input: true\n          user_input_schema:\n            - {name: a, type: str}\n",
			`agnogo.yaml:13: unknown key "type" in user_input_schema[0] in human_review in step "s" of workflow "w"; the field's type is field_type: one of str, int, float, bool, list, dict`},
		{"a step without a name", head + "  - id: w\n    steps:\n      - agent: writer\n",
			`agnogo.yaml:8: steps[0] of workflow "w" has no name; add name: followed by a name unique in the workflow`},
		{"a step without anything to run", head + "  - id: w\n    steps:\n      - name: s\n",
			`agnogo.yaml:8: step "s" of workflow "w" has nothing to run; give it one of agent: ID, team: ID, workflow: ID, steps: [...], parallel: [...], loop: {...} with steps, condition: EXPR with steps, or router: EXPR with choices`},
		{"a step with two kinds", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        team: desk\n",
			`agnogo.yaml:10: step "s" of workflow "w" has both agent and team: a step is exactly one of agent: ID, team: ID,`},
		{"an agent step with steps", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        steps: [{name: t, agent: writer}]\n",
			`agnogo.yaml:10: key "steps" in step "s" of workflow "w" does not go with agent: steps are the body of a group (steps alone), a loop or a condition`},
		{"a condition without steps", head + "  - id: w\n    steps:\n      - name: c\n        condition: 'true'\n",
			`agnogo.yaml:9: step "c" of workflow "w" is a condition but has no steps; add steps:`},
		{"a loop without steps", head + "  - id: w\n    steps:\n      - name: l\n        loop: {max_iterations: 2}\n",
			`agnogo.yaml:9: step "l" of workflow "w" is a loop but has no steps`},
		{"else outside a condition", head + "  - id: w\n    steps:\n      - name: s\n        steps: [{name: t, agent: writer}]\n        else: [{name: u, agent: writer}]\n",
			`agnogo.yaml:10: key "else" in step "s" of workflow "w" belongs to a condition step; this is a group of steps`},
		{"choices outside a router", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        choices: [{name: u, agent: writer}]\n",
			`agnogo.yaml:10: key "choices" in step "s" of workflow "w" belongs to a router step; this step runs an agent`},
		{"a router with steps", head + "  - id: w\n    steps:\n      - name: r\n        router: '\"t\"'\n        steps: [{name: t, agent: writer}]\n",
			`agnogo.yaml:10: key "steps" in step "r" of workflow "w": a router's steps are its choices; write choices: instead`},
		{"a router without choices", head + "  - id: w\n    steps:\n      - name: r\n        router: '\"t\"'\n",
			`agnogo.yaml:9: step "r" of workflow "w" is a router but has no choices; add choices:`},
		{"a router nobody chooses for", head + "  - id: w\n    steps:\n      - name: r\n        router:\n        choices: [{name: t, agent: writer}]\n",
			`agnogo.yaml:9: router in step "r" of workflow "w" is empty: give a CEL expression`},
		{"a router chosen twice", head + "  - id: w\n    steps:\n      - name: r\n        router: '\"t\"'\n        human_review: {requires_user_input: true}\n        choices: [{name: t, agent: writer}]\n",
			`agnogo.yaml:9: router in step "r" of workflow "w" has a CEL expression and human_review.requires_user_input`},
		{"bad condition CEL", head + "  - id: w\n    steps:\n      - name: c\n        steps: [{name: t, agent: writer}]\n        condition: >-\n          previous_step_content.contains(\"ok\") &&\n",
			`agnogo.yaml:10: condition in step "c" of workflow "w": CEL expression "previous_step_content.contains(\"ok\") &&": ERROR: <input>:1:40: Syntax error`},
		{"a condition that is no bool", head + "  - id: w\n    steps:\n      - name: c\n        condition: 'input + \"x\"'\n        steps: [{name: t, agent: writer}]\n",
			`agnogo.yaml:9: condition in step "c" of workflow "w": CEL expression "input + \"x\"" yields`},
		{"an empty condition", head + "  - id: w\n    steps:\n      - name: c\n        condition: ''\n        steps: [{name: t, agent: writer}]\n",
			`agnogo.yaml:9: condition in step "c" of workflow "w" is empty: want a CEL expression yielding true or false`},
		{"bad until CEL", head + "  - id: w\n    steps:\n      - name: l\n        loop:\n          until: 'iteration >= \"2\"'\n        steps: [{name: t, agent: writer}]\n",
			`agnogo.yaml:10: until in loop in step "l" of workflow "w": CEL expression`},
		{"bad router CEL", head + "  - id: w\n    steps:\n      - name: r\n        router: 'nowhere'\n        choices: [{name: t, agent: writer}]\n",
			`agnogo.yaml:9: router in step "r" of workflow "w": CEL expression "nowhere": ERROR: <input>:1:1: undeclared reference to 'nowhere'`},
		{"duplicate step names", head + "  - id: w\n    steps:\n      - {name: s, agent: writer}\n      - name: g\n        steps:\n          - {name: s, agent: checker}\n",
			`agnogo.yaml:11: duplicate step name "s" in workflow "w" (first at line 8); step names must be unique in a workflow, nested steps included`},
		{"unknown agent", head + "  - id: w\n    steps:\n      - name: s\n        agent: nobody\n",
			`agnogo.yaml:9: unknown agent "nobody" in step "s" of workflow "w": no agent of this file has that id (agents: writer, checker)`},
		{"an agent that is a team", head + "  - id: w\n    steps:\n      - name: s\n        agent: desk\n",
			`agnogo.yaml:9: agent "desk" in step "s" of workflow "w" is a team, not an agent: write team: desk`},
		{"a team that is an agent", head + "  - id: w\n    steps:\n      - name: s\n        team: writer\n",
			`agnogo.yaml:9: team "writer" in step "s" of workflow "w" is an agent, not a team: write agent: writer`},
		{"unknown workflow", head + "  - id: w\n    steps:\n      - name: s\n        workflow: other\n",
			`agnogo.yaml:9: unknown workflow "other" in step "s" of workflow "w": no workflow of this file has that id (workflows: w)`},
		{"an empty agent", head + "  - id: w\n    steps:\n      - name: s\n        agent: ''\n",
			`agnogo.yaml:9: agent in step "s" of workflow "w": want the id of an agent of this file`},
		{"a workflow running itself", head + "  - id: w\n    steps:\n      - name: g\n        steps:\n          - name: s\n            workflow: w\n",
			`agnogo.yaml:11: step "s" of workflow "w" runs workflow "w" itself; a workflow cannot run itself`},
		{"a cycle of workflows", head + "  - id: a\n    steps: [{name: s, workflow: b}]\n  - id: b\n    steps:\n      - {name: t, agent: writer}\n      - {name: u, workflow: a}\n",
			`agnogo.yaml:11: workflow "a" in step "u" of workflow "b" makes a cycle of workflows, "a" → "b" → "a": a workflow cannot run itself, directly or through other workflows`},
		{"a workflow with an agent's id", head + "  - id: writer\n    steps: [{name: s, agent: checker}]\n",
			`agnogo.yaml:6: duplicate id "writer": workflow "writer" has the id of the agent at line 2; agent, team and workflow ids must be unique`},
		{"a workflow with a team's id", head + "  - id: desk\n    steps: [{name: s, agent: checker}]\n",
			`agnogo.yaml:6: duplicate id "desk": workflow "desk" has the id of the team at line 4`},
		{"two workflows with one id", head + "  - {id: w, steps: [{name: s, agent: writer}]}\n  - {id: w, steps: [{name: s, agent: writer}]}\n",
			`agnogo.yaml:7: duplicate workflow id "w" (first defined at line 6)`},
		{"retries on a group", head + "  - id: w\n    steps:\n      - name: g\n        max_retries: 2\n        steps: [{name: s, agent: writer}]\n",
			`agnogo.yaml:9: max_retries in step "g" of workflow "w" applies to a step running an agent, a team or a workflow; this is a group of steps: put it on the steps inside`},
		{"history runs without history", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        num_history_runs: 2\n",
			`agnogo.yaml:10: num_history_runs in step "s" of workflow "w" counts the runs add_workflow_history gives the step; add add_workflow_history: true`},
		{"a step turning the history off", head + "  - id: w\n    add_workflow_history: true\n    steps:\n      - name: s\n        agent: writer\n        add_workflow_history: false\n",
			`agnogo.yaml:11: add_workflow_history: false in step "s" of workflow "w" cannot turn off the workflow's add_workflow_history: true (line 7)`},
		{"max_concurrency outside a parallel", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        max_concurrency: 2\n",
			`agnogo.yaml:10: max_concurrency in step "s" of workflow "w" bounds the branches of a parallel step; this step runs an agent: remove it`},
		{"a confirmation on a parallel", head + "  - id: w\n    steps:\n      - name: p\n        parallel: [{name: s, agent: writer}]\n        human_review: {requires_confirmation: true}\n",
			`agnogo.yaml:10: human_review.requires_confirmation in step "p" of workflow "w" is for every step but a parallel`},
		{"an iteration review outside a loop", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        human_review:\n          requires_iteration_review: true\n",
			`agnogo.yaml:11: human_review.requires_iteration_review in step "s" of workflow "w" is for a loop; this step runs an agent`},
		{"on_reject else outside a condition", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        human_review: {requires_confirmation: true, on_reject: else}\n",
			`agnogo.yaml:10: human_review.on_reject in step "s" of workflow "w" is for a condition`},
		{"unknown on_reject", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        human_review: {requires_confirmation: true, on_reject: ignore}\n",
			`agnogo.yaml:10: on_reject in human_review in step "s" of workflow "w": "ignore" is not one of skip, cancel, else, retry`},
		{"unknown field type", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        human_review:\n          requires_user_input: true\n          user_input_schema: [{name: n, field_type: string}]\n",
			`agnogo.yaml:12: field_type in user_input_schema[0] in human_review in step "s" of workflow "w": "string" is not one of str, int, float, bool, list, dict`},
		{"a schema without user input", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        human_review:\n          requires_confirmation: true\n          user_input_schema: [{name: n}]\n",
			`agnogo.yaml:12: human_review.user_input_schema in step "s" of workflow "w" names the values a person gives a step that asks for them: it needs requires_user_input: true`},
		{"a review asking nothing", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        human_review: {on_reject: cancel}\n",
			`agnogo.yaml:10: human_review in step "s" of workflow "w" asks a person nothing`},
		{"review max_retries 0", head + "  - id: w\n    steps:\n      - name: s\n        agent: writer\n        human_review: {requires_output_review: true, max_retries: 0}\n",
			`agnogo.yaml:10: max_retries in human_review in step "s" of workflow "w": want a number of at least 1, got 0`},
		{"bad input schema", head + "  - id: w\n    input_schema: {properties: [topic]}\n    steps: [{name: s, agent: writer}]\n",
			`agnogo.yaml:7: input_schema in workflow "w": `},
		{"input schema not a mapping", head + "  - id: w\n    input_schema: [a]\n    steps: [{name: s, agent: writer}]\n",
			`agnogo.yaml:7: input_schema in workflow "w": want a JSON Schema as a mapping`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tt.yaml), "agnogo.yaml", env(nil))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			var configErr *Error
			require.True(t, errors.As(err, &configErr), "an error naming its line")
		})
	}
}

func TestBuildRunsWorkflow(t *testing.T) {
	t.Parallel()
	b := build(t, pipelineYAML)
	require.Equal(t, []string{"pipeline"}, b.os.WorkflowIDs)
	runner, err := b.os.Runner("pipeline")
	require.NoError(t, err)
	wf, ok := runner.(*workflow.Workflow)
	require.True(t, ok)
	require.Same(t, b.os.Workflows["pipeline"], wf)
	require.Equal(t, run.KindWorkflow, wf.Kind())
	require.Same(t, b.os.Store, wf.Settings().Store, "the agents' store")
	require.Equal(t, []run.Runner{b.os.Agents["writer"], b.os.Agents["checker"]}, wf.Runners())

	var ids []string
	for _, r := range b.os.Runners() {
		ids = append(ids, r.ID())
	}
	require.Equal(t, []string{"writer", "checker", "pipeline"}, ids, "agents, then teams, then workflows")
	var served []string
	for _, r := range b.os.Server(ServerOptions{Getenv: env(nil)}).Runners {
		served = append(served, r.ID())
	}
	require.Equal(t, ids, served)
	_, err = b.os.Runner("nobody")
	require.ErrorIs(t, err, ErrUnknownAgent)
	require.EqualError(t, err, `unknown agent, team or workflow "nobody"; known agents: writer, checker; teams: none; workflows: pipeline`)

	// draft says ok, so the condition runs polish; both branches of fan
	// answer alike (they run at once); the loop runs twice; publish waits
	// for a confirmation.
	b.fake.Enqueue(
		fakeopenai.Text("draft ok"),
		fakeopenai.Text("polished"),
		fakeopenai.Text("fanned"), fakeopenai.Text("fanned"),
		fakeopenai.Text("again 1"), fakeopenai.Text("again 2"),
	)
	out, err := wf.Run(t.Context(), &run.Input{InputContent: "A haiku, please.", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, out.Status)
	require.Equal(t, "pipeline", out.WorkflowID)
	require.Equal(t, "publish", out.PausedStepName)
	require.Len(t, out.StepRequirements, 1)
	req := out.StepRequirements[0]
	require.True(t, req.RequiresConfirmation)
	require.Equal(t, "Publish?", req.ConfirmationMessage)
	require.Zero(t, b.fake.Pending(), "every scripted reply was used")

	byName := map[string]*run.StepOutput{}
	for _, res := range out.StepResults {
		byName[res.StepName] = res
	}
	require.Equal(t, "draft ok", byName["draft"].Content)
	require.Equal(t, "polish", byName["check"].Steps[0].StepName, "the condition held")
	require.Equal(t, "## a\n\nfanned\n\n## b\n\nfanned", byName["fan"].Content)
	require.Len(t, byName["refine"].Steps, 2, "the loop ended when iteration >= 2")
	requests := b.fake.Requests()
	require.Equal(t, []string{"system: Check.", "user: draft ok"}, messageTexts(requests[1]), "polish runs on the draft")

	// The person confirms: publish runs and the workflow completes.
	b.fake.Enqueue(fakeopenai.Text("published"))
	confirmed := true
	var last run.Event
	for e, err := range wf.Continue(t.Context(), &run.ContinueRequest{RunID: out.RunID,
		StepRequirements: []*run.StepRequirement{{StepID: req.StepID, Confirmed: &confirmed}}}) {
		require.NoError(t, err)
		last = e
	}
	done, ok := last.(*run.RunCompleted)
	require.True(t, ok, "the last event is %T", last)
	require.Equal(t, "published", done.Content)
	rec, err := b.os.Store.GetRun(t.Context(), out.RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, rec.Run.Status)
	require.Len(t, rec.Run.StepResults, 5)
}

// TestBuildWorkflowElseAndRejection takes the condition's else branch and
// has the person reject publishing, which cancels the run (on_reject:
// cancel).
func TestBuildWorkflowElseAndRejection(t *testing.T) {
	t.Parallel()
	b := build(t, pipelineYAML)
	b.fake.Enqueue(
		fakeopenai.Text("draft"),
		fakeopenai.Text("redone"),
		fakeopenai.Text("fanned"), fakeopenai.Text("fanned"),
		fakeopenai.Text("again 1"), fakeopenai.Text("again 2"),
	)
	wf := b.os.Workflows["pipeline"]
	out, err := wf.Run(t.Context(), &run.Input{InputContent: "Go."})
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, out.Status)
	require.Equal(t, "redo", out.StepResults[1].Steps[0].StepName, "no ok in the draft: the else branch ran")

	rejected := false
	for _, err := range wf.Continue(t.Context(), &run.ContinueRequest{RunID: out.RunID,
		StepRequirements: []*run.StepRequirement{{StepID: out.StepRequirements[0].StepID, Confirmed: &rejected}}}) {
		_ = err
	}
	rec, err := b.os.Store.GetRun(t.Context(), out.RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, rec.Run.Status)
	require.Zero(t, b.fake.Pending())
	require.Len(t, b.fake.Requests(), 6, "publish never ran")
}

// nestedYAML has a workflow whose steps run a team, a router's choice and
// a workflow declared after it.
const nestedYAML = `
db: ${DB}
models:
  fake: {provider: openai, id: gpt-test, base_url: "${FAKE_URL}", api_key: sk-fake}
agents:
  - {id: writer, model: fake, instructions: Write.}
  - {id: checker, model: fake, instructions: Check.}
teams:
  - {id: desk, model: fake, mode: route, members: [writer, checker]}
workflows:
  - id: outer
    description: Routes, then runs inner.
    steps:
      - name: pick
        router: 'input.contains("tech") ? "tech" : "general"'
        choices:
          - {name: tech, agent: writer}
          - {name: general, team: desk}
      - {name: nested, workflow: inner}
  - id: inner
    steps: [{name: check, agent: checker}]
`

func TestBuildNestedWorkflows(t *testing.T) {
	t.Parallel()
	b := build(t, nestedYAML)
	require.Equal(t, []string{"outer", "inner"}, b.os.WorkflowIDs, "file order")
	outer, inner := b.os.Workflows["outer"], b.os.Workflows["inner"]
	require.Equal(t, "Routes, then runs inner.", outer.Description())
	require.Equal(t, []run.Runner{b.os.Agents["writer"], b.os.Teams["desk"], inner}, outer.Runners(),
		"the steps run the built agent, team and workflow")

	b.fake.Enqueue(fakeopenai.Text("tech draft"), fakeopenai.Text("checked"))
	out, err := outer.Run(t.Context(), &run.Input{InputContent: "tech news"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "checked", out.Content)
	require.Equal(t, "tech", out.StepResults[0].Steps[0].StepName, "the router chose tech")
	requests := b.fake.Requests()
	require.Len(t, requests, 2)
	require.Equal(t, []string{"system: Check.", "user: tech draft"}, messageTexts(requests[1]), "the inner workflow ran on the router's output")
}

func TestWorkflowOrder(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
agents: [{id: w}]
workflows:
  - {id: top, steps: [{name: a, workflow: mid}, {name: b, steps: [{name: c, workflow: low}]}]}
  - {id: mid, steps: [{name: a, workflow: low}]}
  - {id: low, steps: [{name: a, agent: w}]}
  - {id: side, steps: [{name: a, agent: w}]}
`, nil)
	var ids []string
	for _, w := range workflowOrder(file.Workflows) {
		ids = append(ids, w.ID)
	}
	require.Equal(t, []string{"low", "mid", "top", "side"}, ids, "each workflow after those its steps run, file order otherwise")
}

// TestWorkflowKeysAreDocumented fails when a key of a workflow, of a step,
// of a loop, of a human review or of a user input field has no row in the
// workflows section of docs/config.md.
func TestWorkflowKeysAreDocumented(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/config.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(data), "\n## `workflows`\n")
	require.True(t, found, "docs/config.md has a ## `workflows` section")
	section, _, _ = strings.Cut(section, "\n## ")
	for _, key := range workflowKeys {
		require.Contains(t, section, fmt.Sprintf("| `%s` |", key), "no row for the workflow key %q", key)
	}
	for _, key := range workflowStepKeys {
		require.Contains(t, section, fmt.Sprintf("| `%s` |", key), "no row for the step key %q", key)
	}
	for _, key := range workflowLoopKeys {
		require.Contains(t, section, fmt.Sprintf("| `loop.%s` |", key), "no row for loop.%s", key)
	}
	for _, key := range humanReviewKeys {
		require.Contains(t, section, fmt.Sprintf("| `human_review.%s` |", key), "no row for human_review.%s", key)
	}
	for _, key := range userInputFieldKeys {
		require.Contains(t, section, fmt.Sprintf("| `user_input_schema[].%s` |", key), "no row for user_input_schema[].%s", key)
	}
}
