package agentos

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

// TestRunSchemaAddsRunInput: a run as the API returns it is the run's own
// JSON with run_input, the input as text, and nothing else changed.
func TestRunSchemaAddsRunInput(t *testing.T) {
	out := &run.Output{RunID: "r1", SessionID: "s1", Status: run.StatusCompleted, Content: "<b>done</b> & \"quoted\"",
		Input: &run.Input{InputContent: "say \"hi\" <now>"}}
	var got, own map[string]any
	require.NoError(t, json.Unmarshal(runSchema(out), &got))
	data, err := json.Marshal(out)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &own))
	require.Equal(t, `say "hi" <now>`, got["run_input"])
	delete(got, "run_input")
	require.Equal(t, own, got)

	var bare map[string]any
	require.NoError(t, json.Unmarshal(runSchema(&run.Output{RunID: "r2"}), &bare))
	require.Equal(t, "r2", bare["run_id"])
	require.NotContains(t, bare, "run_input", "a run without input has no run_input")
}
