package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// pausedWorkflow reads the run id a paused workflow's error names.
var pausedWorkflow = regexp.MustCompile(`workflow run ([0-9a-f-]{36}) paused at step (\w+)`)

// TestRunWorkflow: `agnogo run WORKFLOW` runs its steps and prints the last
// step's answer; a step waiting for a confirmation prints what it waits
// for and exits 1, and `--continue RUN_ID --approve` runs it on without
// running the steps done before the pause again; --reject follows the
// step's on_reject.
func TestRunWorkflow(t *testing.T) {
	t.Parallel()
	b := setupRun(t, `  - {id: writer, model: fake, instructions: Write.}
  - {id: checker, model: fake, instructions: Check.}
workflows:
  - id: pipeline
    steps:
      - {name: draft, agent: writer}
      - name: check
        condition: 'previous_step_content.contains("ok")'
        steps: [{name: polish, agent: checker}]
        else: [{name: redo, agent: writer}]
      - name: publish
        agent: checker
        human_review: {requires_confirmation: true, confirmation_message: "Publish?", on_reject: cancel}
`)
	b.fake.Enqueue(
		fakeopenai.Text("a draft, ok"),   // draft
		fakeopenai.Text("polished"),      // polish: the condition held
		fakeopenai.Text("published"),     // publish, once approved
		fakeopenai.Text("another draft"), // the second run's draft
		fakeopenai.Text("redone"),        // redo: the condition did not hold
	)
	got := b.agnogo(t, "pipeline", "A story.")
	require.Equal(t, exitFailure, got.code, got.stderr)
	require.Contains(t, got.stdout, "paused: confirm step publish (Publish?)")
	ids := pausedWorkflow.FindStringSubmatch(got.stderr)
	require.NotNil(t, ids, got.stderr)
	require.Equal(t, "publish", ids[2])
	require.Contains(t, got.stderr, "agnogo run --continue "+ids[1]+" --approve")
	require.Len(t, b.fake.Requests(), 2)

	done := b.agnogo(t, "--continue", ids[1], "--approve")
	require.Equal(t, exitOK, done.code, done.stderr)
	require.Equal(t, "published\n", done.stdout)
	require.Len(t, b.fake.Requests(), 3, "the steps done before the pause did not run again")
	require.Contains(t, chatMessages(b.fake.Requests()[2]), [2]string{"user", "polished"}, "publish runs on the step before it")

	second := b.agnogo(t, "pipeline", "Another.")
	require.Equal(t, exitFailure, second.code, second.stderr)
	ids = pausedWorkflow.FindStringSubmatch(second.stderr)
	require.NotNil(t, ids, second.stderr)
	rejected := b.agnogo(t, "--continue", ids[1], "--reject")
	require.Equal(t, exitFailure, rejected.code, rejected.stderr)
	require.Contains(t, rejected.stderr, "cancelled")
	require.Len(t, b.fake.Requests(), 5, "rejected, publish did not run")
}
