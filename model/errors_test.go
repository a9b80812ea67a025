package model_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// TestClassStrings: a provider failure's class reads as the error_type runs
// report, unchanged.
func TestClassStrings(t *testing.T) {
	t.Parallel()
	for class, want := range map[model.Class]string{
		model.ClassUnknown:       "unknown",
		model.ClassRateLimit:     "rate_limit",
		model.ClassServer:        "server_error",
		model.ClassTimeout:       "timeout",
		model.ClassConnection:    "connection_error",
		model.ClassAuth:          "authentication_error",
		model.ClassBadRequest:    "bad_request",
		model.ClassContextWindow: "context_window_exceeded",
		model.ClassContentPolicy: "content_policy",
	} {
		require.Equal(t, want, class.String())
		require.Equal(t, want, class.ErrorType())
	}
	var zero model.Class
	require.Equal(t, model.ClassUnknown, zero, "an Error without a class is of unknown kind")
}

func TestClassifyStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]model.Class{
		200: model.ClassUnknown, 400: model.ClassBadRequest, 401: model.ClassAuth, 403: model.ClassAuth,
		404: model.ClassBadRequest, 408: model.ClassTimeout, 422: model.ClassBadRequest, 429: model.ClassRateLimit,
		500: model.ClassServer, 503: model.ClassServer, 529: model.ClassServer,
	} {
		require.Equal(t, want, model.ClassifyStatus(status), "HTTP %d", status)
	}
}

func TestIsRetryable(t *testing.T) {
	t.Parallel()
	fail := func(class model.Class) error {
		return fmt.Errorf("call: %w", &model.Error{Provider: "Test", Class: class, Message: "no", Err: errors.New("no")})
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"rate limit", fail(model.ClassRateLimit), true},
		{"server", fail(model.ClassServer), true},
		{"timeout", fail(model.ClassTimeout), true},
		{"connection", fail(model.ClassConnection), true},
		{"auth", fail(model.ClassAuth), false},
		{"bad request", fail(model.ClassBadRequest), false},
		{"context window", fail(model.ClassContextWindow), false},
		{"content policy", fail(model.ClassContentPolicy), false},
		{"unknown", fail(model.ClassUnknown), false},
		{"cancelled call", &model.Error{Provider: "Test", Class: model.ClassConnection, Err: context.Canceled}, false},
		{"deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), true},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"plain", errors.New("boom"), false},
		{"classified by run", run.Classify(run.ClassStorageUnavailable, errors.New("db down")), true},
		{"permanent by run", run.Classify(run.ClassMaxTurns, errors.New("limit")), false},
	} {
		require.Equal(t, c.want, model.IsRetryable(c.err), c.name)
		require.Equal(t, model.ClassOf(c.err).Retryable() && !errors.Is(c.err, context.Canceled), model.IsRetryable(c.err), "%s: IsRetryable is the class's retryability", c.name)
	}
}

// TestErrorIsClassifiedForRuns: a provider failure's class reaches the
// run's error_type and the retry decisions through any wrapping.
func TestErrorIsClassifiedForRuns(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("model call: %w", &model.Error{Provider: "OpenAI", StatusCode: 401, Class: model.ClassAuth, Message: "invalid api key"})
	require.Equal(t, run.ClassAuthentication, run.ClassOf(err))
	require.Equal(t, "authentication_error", run.ErrorTypeOf(err))
	require.True(t, run.Permanent(err))
	require.EqualError(t, err, "model call: OpenAI: authentication_error (HTTP 401): invalid api key")

	unknown := &model.Error{Provider: "Anthropic", Message: "odd"}
	require.Equal(t, "unknown", run.ErrorTypeOf(unknown))
	require.EqualError(t, unknown, "Anthropic: unknown: odd")
	require.Equal(t, model.ClassUnknown, model.ClassOf(errors.New("boom")))
	require.Equal(t, model.ClassUnknown, model.ClassOf(nil))
}
