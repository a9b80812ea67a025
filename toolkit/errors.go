package toolkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/urlpolicy"
)

// The classes toolkits report most.
const (
	classUnknown    = run.ClassUnknown
	classBadRequest = run.ClassBadRequest
)

// Error is a toolkit call's failure, classified with run's error taxonomy
// (rate_limit, authentication_error, timeout, …) so that the model, the
// logs and the run's tool execution say what kind of failure it was. The
// model reads its message as the call's result and may try again.
type Error struct {
	// Toolkit names the toolkit, e.g. web_search.
	Toolkit string
	// Class is the kind of failure.
	Class run.ErrorClass
	// StatusCode is the API's HTTP status, or 0 when it gave none.
	StatusCode int
	// Message says what went wrong, in the API's words where it gave
	// some.
	Message string
	// Err is the underlying error.
	Err error
}

// Error implements error: "web_search: rate_limit (HTTP 429): …".
func (e *Error) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s: %s (HTTP %d): %s", e.Toolkit, e.Class, e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", e.Toolkit, e.Class, e.Message)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ErrorClass implements [run.Classified].
func (e *Error) ErrorClass() run.ErrorClass { return e.Class }

// ClassifyStatus maps an API's HTTP status to a class.
func ClassifyStatus(status int) run.ErrorClass {
	switch {
	case status == 401 || status == 403:
		return run.ClassAuthentication
	case status == 402:
		return run.ClassBilling
	case status == 408:
		return run.ClassTimeout
	case status == 429:
		return run.ClassRateLimit
	case status >= 500:
		return run.ClassServer
	case status >= 400:
		return run.ClassBadRequest
	}
	return run.ClassUnknown
}

// maxMessage bounds the part of an error body a message quotes.
const maxMessage = 500

// StatusError is the [*Error] of an API that answered status with body:
// the message is the body's error text (a JSON "error", "message" or
// "detail" when there is one), cut to a readable length.
func StatusError(toolkit string, status int, body []byte) *Error {
	msg := strings.TrimSpace(errorText(body))
	if msg == "" {
		msg = "the API answered with no message"
	}
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "…"
	}
	return &Error{Toolkit: toolkit, Class: ClassifyStatus(status), StatusCode: status, Message: msg}
}

// Classify wraps err, the failure of a request that got no answer, in an
// [*Error]: a refused address is bad_request (naming the settings that
// allow it), a deadline timeout, anything else on the network
// connection_error. A cancelled context, and an error already classified,
// are returned as they are.
func Classify(toolkit string, err error) error {
	if err == nil {
		return nil
	}
	var classified *Error
	if errors.As(err, &classified) || errors.Is(err, context.Canceled) {
		return err
	}
	switch {
	case errors.Is(err, urlpolicy.ErrDialRefused):
		return &Error{Toolkit: toolkit, Class: run.ClassBadRequest, Err: err,
			Message: fmt.Sprintf("%v (set allow_private or allow_hosts in the toolkit's settings to reach it)", err)}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return &Error{Toolkit: toolkit, Class: run.ClassTimeout, Message: err.Error(), Err: err}
	}
	return &Error{Toolkit: toolkit, Class: run.ClassConnection, Message: err.Error(), Err: err}
}

// isTimeout reports a network timeout.
func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
