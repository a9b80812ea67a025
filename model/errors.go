package model

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Class says what kind of failure a provider call met, which decides whether
// retrying can help.
type Class int

// The error classes.
const (
	// ClassUnknown is any other failure; it is not retried.
	ClassUnknown Class = iota
	// ClassRateLimit is HTTP 429: retry after a delay.
	ClassRateLimit
	// ClassServer is HTTP 5xx (and 529 overloaded): retry.
	ClassServer
	// ClassTimeout is a timeout talking to the provider: retry.
	ClassTimeout
	// ClassConnection is a refused or reset connection: retry.
	ClassConnection
	// ClassAuth is HTTP 401/403: never retried.
	ClassAuth
	// ClassBadRequest is HTTP 400/404/422: the request itself is wrong; never retried.
	ClassBadRequest
	// ClassContextWindow means the conversation no longer fits the model; never retried.
	ClassContextWindow
	// ClassContentPolicy means the provider refused the content; never retried.
	ClassContentPolicy
)

// String implements fmt.Stringer.
func (c Class) String() string {
	switch c {
	case ClassRateLimit:
		return "rate_limit"
	case ClassServer:
		return "server_error"
	case ClassTimeout:
		return "timeout"
	case ClassConnection:
		return "connection_error"
	case ClassAuth:
		return "authentication_error"
	case ClassBadRequest:
		return "bad_request"
	case ClassContextWindow:
		return "context_window_exceeded"
	case ClassContentPolicy:
		return "content_policy"
	}
	return "unknown"
}

// Error is a provider failure with its class. Providers wrap their SDK's
// errors in it.
type Error struct {
	// Provider names the provider, e.g. OpenAI.
	Provider string
	// StatusCode is the HTTP status, or 0 when the request got no answer.
	StatusCode int
	Class      Class
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

// ClassOf returns the class of err: the class of a wrapped [*Error], or a
// class inferred from timeouts and connection failures.
func ClassOf(err error) Class {
	if err == nil {
		return ClassUnknown
	}
	var modelErr *Error
	if errors.As(err, &modelErr) {
		return modelErr.Class
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
// succeed: rate limits, server errors, timeouts and connection failures. Auth
// failures, bad requests, context-window overflows, content-policy refusals
// and a cancelled context are never retried.
func IsRetryable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	switch ClassOf(err) {
	case ClassRateLimit, ClassServer, ClassTimeout, ClassConnection:
		return true
	}
	return false
}
