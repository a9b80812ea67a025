package config

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/workflow"
)

// Where each field of workflow.Config is set in agnogo.yaml, as
// agentConfigKeys does for agent.Config; the scope workflow is a key of an
// entry of workflows.
var workflowConfigKeys = map[string][]string{
	"ID":                   {"workflow:id"},
	"Name":                 {"workflow:name"},
	"Description":          {"workflow:description"},
	"Steps":                {"workflow:steps"},
	"InputSchema":          {"workflow:input_schema"},
	"SessionState":         {"workflow:session_state"},
	"AddWorkflowHistory":   {"workflow:add_workflow_history"},
	"NumHistoryRuns":       {"workflow:num_history_runs"},
	"StreamExecutorEvents": {"workflow:stream_executor_events"},
	"StoreEvents":          {"workflow:store_events"},
}

// The fields of workflow.Config no key sets, and why.
var workflowConfigWithoutKey = map[string]string{
	"Store":  "the server's database (the db key), the agents' and teams' own, so step runs are kept beside the workflow's",
	"Now":    "a test seam: the server runs on the real clock",
	"NewID":  "a test seam: the server uses random UUIDs",
	"Logger": "the server's own logger (agnogo serve --log-format), given through config.BuildOptions",
}

// Where each field of workflow.HumanReview is set: the scope review is a
// key of a step's human_review.
var humanReviewConfigKeys = map[string][]string{
	"RequiresConfirmation":    {"review:requires_confirmation"},
	"ConfirmationMessage":     {"review:confirmation_message"},
	"RequiresUserInput":       {"review:requires_user_input"},
	"UserInputMessage":        {"review:user_input_message"},
	"UserInputSchema":         {"review:user_input_schema"},
	"AllowMultipleSelections": {"review:allow_multiple_selections"},
	"RequiresOutputReview":    {"review:requires_output_review"},
	"OutputReviewMessage":     {"review:output_review_message"},
	"RequiresIterationReview": {"review:requires_iteration_review"},
	"IterationReviewMessage":  {"review:iteration_review_message"},
	"OnReject":                {"review:on_reject"},
	"OnError":                 {"review:on_error"},
	"MaxRetries":              {"review:max_retries"},
	"TimeoutSeconds":          {"review:timeout"},
	"OnTimeout":               {"review:on_timeout"},
}

// Where each field of run.UserInputField is set: the scope field is a key
// of an entry of user_input_schema.
var userInputFieldConfigKeys = map[string][]string{
	"Name":          {"field:name"},
	"FieldType":     {"field:field_type"},
	"Description":   {"field:description"},
	"Required":      {"field:required"},
	"AllowedValues": {"field:allowed_values"},
}

// TestParityWorkflowConfigFieldsHaveKeys fails when workflow.Config,
// workflow.HumanReview or run.UserInputField has a field that neither has
// a key in agnogo.yaml nor is listed, with a reason, as set by the server;
// and when a key of a workflow, of a human_review or of a user input field
// reaches no field.
func TestParityWorkflowConfigFieldsHaveKeys(t *testing.T) {
	t.Parallel()
	mapped := checkFieldsHaveKeys(t, reflect.TypeFor[workflow.Config](), "workflow", "config/decode_workflow.go", workflowConfigKeys, workflowConfigWithoutKey,
		map[string][]string{"workflow": workflowKeys})
	for _, key := range workflowKeys {
		require.True(t, mapped["workflow:"+key], "the workflow key %q reaches no field of workflow.Config in workflowConfigKeys", key)
	}
	mapped = checkFieldsHaveKeys(t, reflect.TypeFor[workflow.HumanReview](), "humanReview", "config/decode_workflow.go", humanReviewConfigKeys, nil,
		map[string][]string{"review": humanReviewKeys})
	for _, key := range humanReviewKeys {
		require.True(t, mapped["review:"+key], "the human_review key %q reaches no field of workflow.HumanReview", key)
	}
	mapped = checkFieldsHaveKeys(t, reflect.TypeFor[run.UserInputField](), "userInputField", "config/decode_workflow.go", userInputFieldConfigKeys,
		map[string]string{"Value": "the person's answer, given when the run is continued"},
		map[string][]string{"field": userInputFieldKeys})
	for _, key := range userInputFieldKeys {
		require.True(t, mapped["field:"+key], "the user_input_schema key %q reaches no field of run.UserInputField", key)
	}
}

// TestParityWorkflowKeysReachWorkflowConfig builds the workflow.Config of
// a workflow with every mapped key set and of one with none, and requires
// every mapped field to differ: each key reaches its field.
func TestParityWorkflowKeysReachWorkflowConfig(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
agents: [{id: writer}]
workflows:
  - id: minimal
    steps: [{name: s, agent: writer}]
  - id: full
    name: Full
    description: Every key.
    input_schema: {type: object}
    session_state: {count: 0}
    add_workflow_history: true
    num_history_runs: 7
    stream_executor_events: false
    store_events: true
    steps: [{name: s, agent: writer}, {name: t, agent: writer}]
`, nil)
	configs := map[string]workflow.Config{}
	for _, w := range file.Workflows {
		steps, err := workflowNodes(w.Steps, func(s *WorkflowStep) (run.Runner, error) {
			return standIn{id: s.Agent, kind: run.KindAgent}, nil
		})
		require.NoError(t, err)
		configs[w.ID] = workflowConfig(w, steps, nil, nil)
		_, err = workflow.FromConfig(configs[w.ID])
		require.NoError(t, err, "the config built for %s is valid", w.ID)
	}
	full, minimal := reflect.ValueOf(configs["full"]), reflect.ValueOf(configs["minimal"])
	for field := range workflowConfigKeys {
		require.False(t, reflect.DeepEqual(full.FieldByName(field).Interface(), minimal.FieldByName(field).Interface()),
			"workflow.Config.%s is the same with its keys %v set as without: the key does not reach the field", field, workflowConfigKeys[field])
	}
}
