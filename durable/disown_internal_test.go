package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

// TestJournalDisownsOnAConflict: a step the engine refuses to record
// because another execution owns the workflow disowns the run: it is
// interrupted — it saves its progress and writes no final state — and the
// execution ends without an outcome. Any other step error is the run's to
// handle.
func TestJournalDisownsOnAConflict(t *testing.T) {
	t.Parallel()
	jr := newJournal(nil, "r1", slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	jr.stopWith(cancel)

	jr.checkOwned(errors.New("step model: connection reset"))
	require.False(t, jr.isDisowned())
	require.NoError(t, ctx.Err())

	conflict := fmt.Errorf("step model: %w", &dbos.Error{Code: dbos.ErrorCodeConflictingID, Message: "Workflow r1 is no longer owned by this execution"})
	jr.checkOwned(conflict)
	require.True(t, jr.isDisowned())
	require.True(t, run.Interrupted(ctx), "the run stops as on a shutdown, writing no final state")

	jr.disown() // a second notice changes nothing
	require.True(t, run.Interrupted(ctx))
}
