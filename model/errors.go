package model

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/agnogo/agnogo/run"
)

// Class says what kind of failure a provider call met, which decides whether
// retrying can help. It is [run.ErrorClass]: the classes, their error_type
// strings and which of them a retry may help are run's taxonomy; a
// provider's failure may carry any of run's classes.
type Class = run.ErrorClass

// The error classes of provider calls, as run's taxonomy names them.
const (
	// ClassUnknown is any other failure; it is not retried.
	ClassUnknown = run.ClassUnknown
	// ClassRateLimit is HTTP 429: retry after a delay.
	ClassRateLimit = run.ClassRateLimit
	// ClassServer is HTTP 5xx (and 529 overloaded): retry.
	ClassServer = run.ClassServer
	// ClassTimeout is a timeout talking to the provider: retry.
	ClassTimeout = run.ClassTimeout
	// ClassConnection is a refused or reset connection: retry.
	ClassConnection = run.ClassConnection
	// ClassAuth is HTTP 401/403: never retried.
	ClassAuth = run.ClassAuthentication
	// ClassBadRequest is HTTP 400/404/422: the request itself is wrong; never retried.
	ClassBadRequest = run.ClassBadRequest
	// ClassContextWindow means the conversation no longer fits the model; never retried.
	ClassContextWindow = run.ClassContextWindow
	// ClassContentPolicy means the provider refused the content; never retried.
	ClassContentPolicy = run.ClassContentPolicy
)

// Error is a provider failure with its class. Providers wrap their SDK's
// errors in it.
type Error struct {
	// Provider names the provider, e.g. OpenAI.
	Provider string
	// StatusCode is the HTTP status, or 0 when the request got no answer.
	StatusCode int
	// Class is the kind of failure; it decides retries and the run's
	// error_type.
	Class Class
	// Message is the provider's own message.
	Message string
	// Err is the underlying error.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s: %s (HTTP %d): %s", e.Provider, e.Class, e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", e.Provider, e.Class, e.Message)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ErrorClass implements [run.Classified], so [run.ClassOf] and
// [run.ErrorTypeOf] see the class through any wrapping.
func (e *Error) ErrorClass() run.ErrorClass { return e.Class }

// ClassifyStatus maps an HTTP status to a class.
func ClassifyStatus(status int) Class {
	switch {
	case status == 429:
		return ClassRateLimit
	case status == 401 || status == 403:
		return ClassAuth
	case status == 408:
		return ClassTimeout
	case status >= 500:
		return ClassServer
	case status >= 400:
		return ClassBadRequest
	}
	return ClassUnknown
}

// ClassOf returns the class of err: the class of a wrapped [*Error] (or of
// any other [run.Classified] error), or a class inferred from timeouts and
// connection failures; [ClassUnknown] when there is none.
func ClassOf(err error) Class {
	if err == nil {
		return ClassUnknown
	}
	var classified run.Classified
	if errors.As(err, &classified) {
		return classified.ErrorClass()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ClassTimeout
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return ClassTimeout
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return ClassConnection
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return ClassConnection
	}
	return ClassUnknown
}

// IsRetryable reports whether retrying the call that failed with err can
// succeed: its class ([ClassOf]) is one run's taxonomy calls retryable —
// rate limits, server errors, timeouts and connection failures. Auth
// failures, bad requests, context-window overflows, content-policy
// refusals, failures of unknown kind and a cancelled context are never
// retried.
func IsRetryable(err error) bool {
	return !errors.Is(err, context.Canceled) && ClassOf(err).Retryable()
}
