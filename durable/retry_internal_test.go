package durable

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

// TestJitteredDelay: attempt n waits up to min(base·2^(n−1), 10·base),
// scaled by the random draw (full jitter).
func TestJitteredDelay(t *testing.T) {
	t.Parallel()
	base := 30 * time.Second
	for _, c := range []struct {
		n       int
		u       float64
		want    time.Duration
		comment string
	}{
		{1, 0.5, 15 * time.Second, "half of base·2^0"},
		{2, 0.5, 30 * time.Second, "half of base·2^1"},
		{3, 1, 120 * time.Second, "base·2^2"},
		{4, 1, 240 * time.Second, "base·2^3"},
		{5, 1, 300 * time.Second, "capped at 10·base"},
		{60, 1, 300 * time.Second, "capped, no overflow"},
		{2, 0, 0, "the draw may be zero"},
	} {
		require.Equal(t, c.want, jitteredDelay(base, c.n, c.u), "attempt %d: %s", c.n, c.comment)
	}
	require.Zero(t, jitteredDelay(0, 3, 0.9), "no base, no wait")
}

// TestPermanentErrorTypes: a run that failed for good is not started again;
// any other failure is, including one of a kind nobody classified.
func TestPermanentErrorTypes(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{
		"output_validation_error", "input_check_error", "output_check_error", "authentication_error",
		"bad_request", "context_window_exceeded", "content_policy", "billing_error", "max_turns",
		"max_budget", "cli_not_found", "session_busy", "not_resumable", "invalid_input", "unsupported_media",
	} {
		require.True(t, run.PermanentErrorType(typ), typ)
	}
	for _, typ := range []string{
		"rate_limit", "server_error", "timeout", "connection_error", "run_timeout", "run_error",
		"unknown", "api_error", "",
	} {
		require.False(t, run.PermanentErrorType(typ), "%q is retried", typ)
	}
}

// TestPermanentError: a run that could not start is not started again when
// its failure is one no attempt can help.
func TestPermanentError(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("%w: output_schema must describe an object", run.ErrInvalidInput),
		fmt.Errorf("continue run r1: %w", run.ErrRunNotFound),
		fmt.Errorf("continue run r1: it was cancelled: %w", run.ErrNotContinuable),
		fmt.Errorf("continue_from: %w", run.ErrInvalidContinue),
		fmt.Errorf("continue run r1: %w: confirm t1", run.ErrUnresolved),
		run.Classify(run.ClassAuthentication, errors.New("invalid api key")),
	} {
		require.True(t, run.Permanent(err), "%v", err)
	}
	for _, err := range []error{
		errors.New("connection reset"),
		run.Classify(run.ClassStorageUnavailable, errors.New("database is down")),
		fmt.Errorf("run r1: %w", run.ErrTimedOut),
		fmt.Errorf("run r1: %w", run.ErrInterrupted),
		context.Canceled,
	} {
		require.False(t, run.Permanent(err), "%v", err)
	}
}
