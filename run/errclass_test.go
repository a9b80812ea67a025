package run_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

// wantClasses is the taxonomy as clients and stored runs see it: every
// class's error_type, byte for byte, and whether another attempt may help.
var wantClasses = []struct {
	class     run.ErrorClass
	errorType string
	retryable bool
	permanent bool
}{
	{run.ClassUnknown, "unknown", false, false},
	{run.ClassOther, "run_error", false, false},
	{run.ClassBadRequest, "bad_request", false, true},
	{run.ClassAuthentication, "authentication_error", false, true},
	{run.ClassBilling, "billing_error", false, true},
	{run.ClassContextWindow, "context_window_exceeded", false, true},
	{run.ClassContentPolicy, "content_policy", false, true},
	{run.ClassRateLimit, "rate_limit", true, false},
	{run.ClassServer, "server_error", true, false},
	{run.ClassConnection, "connection_error", true, false},
	{run.ClassTimeout, "timeout", true, false},
	{run.ClassStorageUnavailable, "storage_unavailable", true, false},
	{run.ClassRunTimeLimit, "run_timeout", false, false},
	{run.ClassCancelled, "cancelled", false, false},
	{run.ClassInterrupted, "interrupted", false, false},
	{run.ClassInvalidInput, "invalid_input", false, true},
	{run.ClassUnsupportedMedia, "unsupported_media", false, true},
	{run.ClassInputCheck, "input_check_error", false, true},
	{run.ClassOutputCheck, "output_check_error", false, true},
	{run.ClassInvalidOutput, "output_validation_error", false, true},
	{run.ClassMaxTurns, "max_turns", false, true},
	{run.ClassMaxBudget, "max_budget", false, true},
	{run.ClassCLINotFound, "cli_not_found", false, true},
	{run.ClassNotResumable, "not_resumable", false, true},
	{run.ClassSessionBusy, "session_busy", false, true},
}

func TestErrorClassTable(t *testing.T) {
	require.Len(t, run.Classes(), len(wantClasses), "every class is in the table, and the table covers every class")
	seen := map[string]run.ErrorClass{}
	for i, class := range run.Classes() {
		want := wantClasses[i]
		require.Equal(t, want.class, class, "Classes lists the classes in declaration order")
		typ := class.ErrorType()
		require.NotEmpty(t, typ, "class %d has an error_type", class)
		require.Equal(t, want.errorType, typ, "the error_type on the wire is unchanged")
		require.Equal(t, typ, class.String())
		require.Equal(t, typ, fmt.Sprint(class))
		other, dup := seen[typ]
		require.False(t, dup, "%s is the error_type of both %d and %d", typ, other, class)
		seen[typ] = class

		require.Equal(t, want.retryable, class.Retryable(), typ)
		require.Equal(t, want.permanent, class.Permanent(), typ)
		require.False(t, class.Retryable() && class.Permanent(), "%s cannot be both", typ)

		parsed, ok := run.ParseErrorType(typ)
		require.True(t, ok, typ)
		require.Equal(t, class, parsed, "an error_type reads back as its class")
		require.Equal(t, want.permanent, run.PermanentErrorType(typ), typ)
	}
	require.Equal(t, run.ErrorTypeSessionBusy, run.ClassSessionBusy.ErrorType())
}

func TestErrorClassZeroAndOutOfRange(t *testing.T) {
	var zero run.ErrorClass
	require.Equal(t, run.ClassUnknown, zero)
	require.Equal(t, "unknown", run.ErrorClass(250).ErrorType(), "a value outside the table is unknown")
	require.False(t, run.ErrorClass(250).Retryable())
	require.False(t, run.ErrorClass(250).Permanent())
}

// TestPermanentErrorTypeOfUnknownTypes: an error_type no class has is not
// permanent, so the durable queue retries it.
func TestPermanentErrorTypeOfUnknownTypes(t *testing.T) {
	for _, typ := range []string{"", "api_error", "resume_failed", "Bad_Request", "bad_request "} {
		_, ok := run.ParseErrorType(typ)
		require.False(t, ok, "%q", typ)
		require.False(t, run.PermanentErrorType(typ), "%q", typ)
	}
}

// providerError is a package's own classified error type.
type providerError struct{ class run.ErrorClass }

func (e *providerError) Error() string              { return "provider failed" }
func (e *providerError) ErrorClass() run.ErrorClass { return e.class }

func TestClassOf(t *testing.T) {
	limit, cancel := run.WithTimeLimit(t.Context(), time.Nanosecond)
	defer cancel()
	<-limit.Done()
	timedOut := run.TimedOut(limit)
	require.Error(t, timedOut)

	busy := &run.SessionBusyError{SessionID: "s", RunID: "r"}
	for _, c := range []struct {
		name string
		err  error
		want run.ErrorClass
	}{
		{"classified", run.Classify(run.ClassRateLimit, errors.New("slow down")), run.ClassRateLimit},
		{"classified, wrapped", fmt.Errorf("turn 2: %w", run.Classify(run.ClassMaxTurns, errors.New("limit"))), run.ClassMaxTurns},
		{"classified, joined", errors.Join(errors.New("first"), run.Classify(run.ClassBilling, errors.New("no credit"))), run.ClassBilling},
		{"own type", fmt.Errorf("call: %w", &providerError{run.ClassContextWindow}), run.ClassContextWindow},
		{"nearest class wins", run.Classify(run.ClassServer, run.Classify(run.ClassBadRequest, errors.New("x"))), run.ClassServer},
		{"unclassified", errors.New("boom"), run.ClassOther},
		{"deadline", context.DeadlineExceeded, run.ClassOther},
		{"time limit", fmt.Errorf("run r1: %w", timedOut), run.ClassRunTimeLimit},
		{"interrupted", fmt.Errorf("run r1: %w", run.ErrInterrupted), run.ClassInterrupted},
		{"cancelled", fmt.Errorf("run r1 cancelled: %w", context.Canceled), run.ClassCancelled},
		{"a cancel beats the class of the call it stopped", run.Classify(run.ClassConnection, context.Canceled), run.ClassCancelled},
		{"a time limit beats the class of the call it stopped", run.Classify(run.ClassServer, timedOut), run.ClassRunTimeLimit},
		{"a class beats a sentinel", run.Classify(run.ClassServer, run.ErrInvalidInput), run.ClassServer},
		{"session busy", fmt.Errorf("start: %w", busy), run.ClassSessionBusy},
		{"invalid input", fmt.Errorf("%w: output_schema must be an object", run.ErrInvalidInput), run.ClassInvalidInput},
		{"unsupported media", fmt.Errorf("%w: %w", run.ErrInvalidInput, run.ErrUnsupportedMedia), run.ClassUnsupportedMedia},
		{"invalid continue", fmt.Errorf("continue_from: %w", run.ErrInvalidContinue), run.ClassInvalidInput},
		{"unresolved", fmt.Errorf("continue run r1: %w", run.ErrUnresolved), run.ClassInvalidInput},
		{"run not found", fmt.Errorf("continue run r1: %w", run.ErrRunNotFound), run.ClassNotResumable},
		{"not continuable", fmt.Errorf("continue run r1: %w", run.ErrNotContinuable), run.ClassNotResumable},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := run.ClassOf(c.err)
			require.Equal(t, c.want, got, "got %s", got)
			require.Equal(t, c.want.ErrorType(), run.ErrorTypeOf(c.err))
			require.Equal(t, c.want.Retryable(), run.Retryable(c.err))
			require.Equal(t, c.want.Permanent(), run.Permanent(c.err))
		})
	}
}

func TestClassOfNil(t *testing.T) {
	require.Equal(t, run.ClassUnknown, run.ClassOf(nil))
	require.Empty(t, run.ErrorTypeOf(nil), "no failure, no error_type")
	require.False(t, run.Retryable(nil))
	require.False(t, run.Permanent(nil))
}

// TestRetryPolicies: the three callers' decisions, from the one table. The
// native agent retries only what is known to be transient; external agents
// and the durable queue retry all that is not known to be permanent.
func TestRetryPolicies(t *testing.T) {
	unclassified := errors.New("the harness crashed")
	require.False(t, run.Retryable(unclassified), "in-process retries of the native agent skip it")
	require.False(t, run.Permanent(unclassified), "the queue and external agents retry it")
	require.False(t, run.PermanentErrorType(run.ErrorTypeOf(unclassified)))

	timedOut := fmt.Errorf("run r1: %w", run.ErrTimedOut)
	require.False(t, run.Retryable(timedOut), "the run's time is up")
	require.False(t, run.PermanentErrorType(run.ErrorTypeOf(timedOut)), "the queue starts it again with a new limit")

	for _, class := range []run.ErrorClass{run.ClassAuthentication, run.ClassMaxTurns, run.ClassInvalidOutput, run.ClassCLINotFound} {
		err := run.Classify(class, errors.New("no"))
		require.False(t, run.Retryable(err), "%s", class)
		require.True(t, run.Permanent(err), "%s", class)
		require.True(t, run.PermanentErrorType(run.ErrorTypeOf(err)), "the queue agrees with the runner on %s", class)
	}
}

func TestClassError(t *testing.T) {
	cause := errors.New("invalid x-api-key")
	err := run.Classify(run.ClassAuthentication, cause)
	require.EqualError(t, err, "invalid x-api-key", "the message is the failure's own")
	require.ErrorIs(t, err, cause)
	var classified run.Classified
	require.ErrorAs(t, err, &classified)
	require.Equal(t, run.ClassAuthentication, classified.ErrorClass())
	require.NoError(t, run.Classify(run.ClassServer, nil), "nothing to classify")
	require.EqualError(t, &run.ClassError{Class: run.ClassMaxBudget}, "max_budget")
}

func ExampleClassOf() {
	err := fmt.Errorf("turn 3: %w", run.Classify(run.ClassRateLimit, errors.New("429 Too Many Requests")))
	fmt.Println(run.ClassOf(err), run.Retryable(err), run.Permanent(err))
	fmt.Println(run.ErrorTypeOf(errors.New("boom")), run.PermanentErrorType("max_turns"))
	// Output:
	// rate_limit true false
	// run_error true
}
