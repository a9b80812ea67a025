package external

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

// TestContinueCutRange: an index past the run's messages is refused as out
// of range (a 422 over HTTP), never clamped; the last valid index is the
// number of messages.
func TestContinueCutRange(t *testing.T) {
	src := &run.Output{RunID: "r1", Messages: []*run.Message{
		{Role: run.RoleUser, Content: "hi"}, {Role: run.RoleAssistant, Content: "hello"},
	}}
	n, replay, err := continueCut(src, &run.ContinueRequest{ContinueFrom: "2"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.False(t, replay)

	_, _, err = continueCut(src, &run.ContinueRequest{ContinueFrom: "3"})
	require.ErrorIs(t, err, run.ErrContinueOutOfRange)
	require.ErrorIs(t, err, run.ErrInvalidContinue)
	require.Contains(t, err.Error(), "want a message index from 0 to 2")

	_, _, err = continueCut(src, &run.ContinueRequest{ContinueFrom: "-1"})
	require.ErrorIs(t, err, run.ErrInvalidContinue)
	require.NotErrorIs(t, err, run.ErrContinueOutOfRange)
}
