package external

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

// TestClassifyTakesTheClassDecision: a driver names the class; the
// error_type and whether the agent tries again come from run's taxonomy,
// the same the durable queue reads.
func TestClassifyTakesTheClassDecision(t *testing.T) {
	for _, class := range run.Classes() {
		err := fmt.Errorf("turn: %w", Classify(class, errors.New("failed")))
		var turnErr *TurnError
		require.ErrorAs(t, err, &turnErr)
		require.Equal(t, class.ErrorType(), turnErr.Type)
		require.Equal(t, class.Permanent(), turnErr.Permanent, "%s", class)
		require.Equal(t, class.ErrorType(), errorType(err))
		require.EqualError(t, err, "turn: failed", "the message is the failure's own")
		if class == run.ClassCancelled || class == run.ClassInterrupted || class == run.ClassRunTimeLimit {
			continue // the run is stopped, whatever the class says
		}
		require.Equal(t, run.ClassOf(err), class)
		require.Equal(t, !class.Permanent(), retryable(err), "%s: tried again unless permanent", class)
		require.Equal(t, class.Permanent(), run.PermanentErrorType(errorType(err)), "%s: the queue agrees", class)
	}
}

// TestPermanentAndTransientDeferToTheTaxonomy: a driver cannot make a
// failure of one of run's decided classes retryable, or the reverse; a
// type of its own keeps the driver's word.
func TestPermanentAndTransientDeferToTheTaxonomy(t *testing.T) {
	cause := errors.New("no")
	for _, c := range []struct {
		err       error
		errorType string
		permanent bool
	}{
		{Transient("billing_error", cause), "billing_error", true},
		{Permanent("server_error", cause), "server_error", false},
		{Permanent("authentication_error", cause), "authentication_error", true},
		{Transient("rate_limit", cause), "rate_limit", false},
		{Transient("run_error", cause), "run_error", false},
		{Permanent("run_error", cause), "run_error", true},
		{Permanent("api_error", cause), "api_error", true},
		{Transient("api_error", cause), "api_error", false},
	} {
		var turnErr *TurnError
		require.ErrorAs(t, c.err, &turnErr)
		require.Equal(t, c.errorType, turnErr.Type)
		require.Equal(t, c.permanent, turnErr.Permanent, c.errorType)
		require.Equal(t, !c.permanent, retryable(c.err), c.errorType)
		require.Equal(t, c.errorType, errorType(c.err))
		require.ErrorIs(t, c.err, cause)
	}
}

func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"success", nil, false},
		{"unclassified", errors.New("the CLI crashed"), true},
		{"cancelled", fmt.Errorf("codex: the turn was interrupted: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, false},
		{"paused", &PauseError{}, false},
		{"invalid input", fmt.Errorf("%w: bad schema", run.ErrInvalidInput), false},
		{"not continuable", fmt.Errorf("branch: %w", run.ErrNotContinuable), false},
		{"transient, wrapped", fmt.Errorf("attempt 2: %w", Classify(run.ClassServer, errors.New("overloaded"))), true},
		{"permanent, wrapped", fmt.Errorf("attempt 2: %w", Classify(run.ClassMaxTurns, errors.New("limit"))), false},
	} {
		require.Equal(t, c.want, retryable(c.err), c.name)
	}
}

func TestErrorType(t *testing.T) {
	require.Equal(t, "run_error", errorType(errors.New("boom")))
	require.Equal(t, "run_timeout", errorType(fmt.Errorf("run r1: %w", run.ErrTimedOut)))
	require.Equal(t, "api_error", errorType(Permanent("api_error", errors.New("no"))))
	require.Equal(t, "max_budget", errorType(fmt.Errorf("turn: %w", Classify(run.ClassMaxBudget, errors.New("spent")))))
}
