package run

import (
	"context"
	"errors"
)

// ErrorClass says what kind of failure ended a run, a turn or a call. It is
// the one place that knows, for every kind of failure, the error_type a
// RunError reports ([ErrorClass.ErrorType]) and whether another attempt may
// succeed ([ErrorClass.Retryable], [ErrorClass.Permanent]). Runners, drivers
// and queues classify failures with it rather than keep lists of their own.
//
// Every class is one of three kinds:
//
//   - retryable: a transient failure (a rate limit, a server error, a
//     provider timeout, a failed connection, storage out of reach) that
//     another attempt, after a wait, may not meet;
//   - permanent: a failure no attempt can help — the request, the
//     credentials, the account, the limits or the answer are wrong;
//   - neither: the class does not say ([ClassUnknown], [ClassOther]), or the
//     run was stopped rather than failed ([ClassRunTimeLimit],
//     [ClassCancelled], [ClassInterrupted]).
//
// For the last kind the caller's policy decides. A runner retrying inside
// its run takes only retryable failures (the native agent), or everything
// not permanent (external agents, whose drivers classify what they
// recognise); the durable queue, which sees only the final RunError's
// error_type, starts again every run whose failure is not permanent
// ([PermanentErrorType]).
//
// The zero value is [ClassUnknown].
type ErrorClass uint8

// The error classes. The comment of each names its error_type.
const (
	// ClassUnknown (unknown) is a failure its reporter could not tell the
	// kind of, such as a provider's answer of no known kind. Neither
	// retryable nor permanent.
	ClassUnknown ErrorClass = iota
	// ClassOther (run_error) is a failure no other class names: what
	// [ClassOf] answers for an error nothing classified. Neither retryable
	// nor permanent.
	ClassOther

	// ClassBadRequest (bad_request) is a request the provider refused as
	// malformed (HTTP 400, 404, 413, 422). Permanent.
	ClassBadRequest
	// ClassAuthentication (authentication_error) is a missing, wrong or
	// unauthorised credential (HTTP 401, 403). Permanent.
	ClassAuthentication
	// ClassBilling (billing_error) is an account out of credit or over its
	// usage limit (HTTP 402). Permanent.
	ClassBilling
	// ClassContextWindow (context_window_exceeded) is a conversation that
	// no longer fits the model. Permanent.
	ClassContextWindow
	// ClassContentPolicy (content_policy) is content the provider refused
	// under its policies. Permanent.
	ClassContentPolicy

	// ClassRateLimit (rate_limit) is a provider's rate limit (HTTP 429).
	// Retryable.
	ClassRateLimit
	// ClassServer (server_error) is a provider failing or overloaded (HTTP
	// 5xx, 529). Retryable.
	ClassServer
	// ClassConnection (connection_error) is a connection refused, reset or
	// dropped on the way to the provider. Retryable.
	ClassConnection
	// ClassTimeout (timeout) is a call to the provider that took too long
	// (HTTP 408, a network timeout). It is not the run's own time limit,
	// [ClassRunTimeLimit]. Retryable.
	ClassTimeout
	// ClassStorageUnavailable (storage_unavailable) is a store that could
	// not be reached or answered with a transient failure. Retryable.
	ClassStorageUnavailable

	// ClassRunTimeLimit (run_timeout) is a run that outlived its time limit
	// ([ErrTimedOut]). Neither: the run's context is over, but a new
	// attempt gets a new limit (the durable queue starts one).
	ClassRunTimeLimit
	// ClassCancelled (cancelled) is a run stopped by a cancel
	// ([context.Canceled]). Neither: nothing failed; the run ends
	// CANCELLED.
	ClassCancelled
	// ClassInterrupted (interrupted) is a run stopped because its process
	// is shutting down ([ErrInterrupted]). Neither: the run is not over,
	// and its owner runs it again.
	ClassInterrupted

	// ClassInvalidInput (invalid_input) is a run or continue request that
	// cannot be run as given ([ErrInvalidInput], [ErrInvalidContinue],
	// [ErrUnresolved]). Permanent.
	ClassInvalidInput
	// ClassUnsupportedMedia (unsupported_media) is media the runner cannot
	// take ([ErrUnsupportedMedia]). Permanent.
	ClassUnsupportedMedia
	// ClassInputCheck (input_check_error) is input a check (a guardrail)
	// rejected. Permanent.
	ClassInputCheck
	// ClassOutputCheck (output_check_error) is an answer a check (a
	// guardrail) rejected. Permanent.
	ClassOutputCheck
	// ClassInvalidOutput (output_validation_error) is an answer that does
	// not match the output schema the run asked for. Permanent.
	ClassInvalidOutput
	// ClassMaxTurns (max_turns) is a harness that reached its turn limit.
	// Permanent.
	ClassMaxTurns
	// ClassMaxBudget (max_budget) is a harness that reached its spending
	// limit. Permanent.
	ClassMaxBudget
	// ClassCLINotFound (cli_not_found) is an external agent's CLI missing
	// from the machine. Permanent.
	ClassCLINotFound
	// ClassNotResumable (not_resumable) is a run that cannot be continued:
	// it is gone, cancelled, or another runner's ([ErrRunNotFound],
	// [ErrNotContinuable]). Permanent.
	ClassNotResumable
	// ClassSessionBusy (session_busy) is a turn refused because its session
	// has another in flight ([ErrSessionBusy]). Permanent.
	ClassSessionBusy

	// classCount counts the classes; it is not one.
	classCount
)

// retryKind is whether another attempt at a failure of a class may
// succeed.
type retryKind uint8

const (
	// undecided: the class does not say; the caller's policy decides.
	undecided retryKind = iota
	// transient: another attempt may succeed.
	transient
	// permanent: no attempt can succeed.
	permanent
)

// classInfo is what the taxonomy knows of one class.
type classInfo struct {
	// errorType is the class's RunError error_type.
	errorType string
	// retry says whether another attempt may succeed.
	retry retryKind
}

// classTable is the taxonomy, indexed by class. It is read, never written.
var classTable = [classCount]classInfo{
	ClassUnknown: {"unknown", undecided},
	ClassOther:   {"run_error", undecided},

	ClassBadRequest:     {"bad_request", permanent},
	ClassAuthentication: {"authentication_error", permanent},
	ClassBilling:        {"billing_error", permanent},
	ClassContextWindow:  {"context_window_exceeded", permanent},
	ClassContentPolicy:  {"content_policy", permanent},

	ClassRateLimit:          {"rate_limit", transient},
	ClassServer:             {"server_error", transient},
	ClassConnection:         {"connection_error", transient},
	ClassTimeout:            {"timeout", transient},
	ClassStorageUnavailable: {"storage_unavailable", transient},

	ClassRunTimeLimit: {"run_timeout", undecided},
	ClassCancelled:    {"cancelled", undecided},
	ClassInterrupted:  {"interrupted", undecided},

	ClassInvalidInput:     {"invalid_input", permanent},
	ClassUnsupportedMedia: {"unsupported_media", permanent},
	ClassInputCheck:       {"input_check_error", permanent},
	ClassOutputCheck:      {"output_check_error", permanent},
	ClassInvalidOutput:    {"output_validation_error", permanent},
	ClassMaxTurns:         {"max_turns", permanent},
	ClassMaxBudget:        {"max_budget", permanent},
	ClassCLINotFound:      {"cli_not_found", permanent},
	ClassNotResumable:     {"not_resumable", permanent},
	ClassSessionBusy:      {ErrorTypeSessionBusy, permanent},
}

// info is c's entry in the taxonomy; a value outside it is [ClassUnknown].
func (c ErrorClass) info() classInfo {
	if c < classCount {
		return classTable[c]
	}
	return classTable[ClassUnknown]
}

// ErrorType is the class's RunError error_type, e.g. "rate_limit".
func (c ErrorClass) ErrorType() string { return c.info().errorType }

// String implements fmt.Stringer: the class's error_type.
func (c ErrorClass) String() string { return c.ErrorType() }

// Retryable reports whether the class is a transient failure that another
// attempt may not meet.
func (c ErrorClass) Retryable() bool { return c.info().retry == transient }

// Permanent reports whether the class is a failure no attempt can help.
func (c ErrorClass) Permanent() bool { return c.info().retry == permanent }

// Classes returns every class, in declaration order.
func Classes() []ErrorClass {
	all := make([]ErrorClass, classCount)
	for c := range all {
		all[c] = ErrorClass(c)
	}
	return all
}

// ParseErrorType returns the class whose error_type is errorType; false
// when no class has it (a type some runner made up, or none).
func ParseErrorType(errorType string) (ErrorClass, bool) {
	for c, info := range classTable {
		if info.errorType == errorType {
			return ErrorClass(c), true
		}
	}
	return ClassUnknown, false
}

// PermanentErrorType reports whether a RunError's error_type names a
// permanent class: no attempt can help the run. An error_type no class has
// is not permanent. It is how a caller that sees only the final event
// (the durable queue) decides.
func PermanentErrorType(errorType string) bool {
	class, ok := ParseErrorType(errorType)
	return ok && class.Permanent()
}

// Classified is an error that knows its class. [ClassError] is one, and a
// package's own error types (a provider's failure) may be others; [ClassOf]
// finds one anywhere in an error's chain.
type Classified interface {
	error
	// ErrorClass returns the error's class.
	ErrorClass() ErrorClass
}

// ClassError is an error with its class.
type ClassError struct {
	// Class is the failure's class.
	Class ErrorClass
	// Err is the failure.
	Err error
}

// Classify returns err with class; nil when err is nil.
func Classify(class ErrorClass, err error) error {
	if err == nil {
		return nil
	}
	return &ClassError{Class: class, Err: err}
}

// Error implements error: the failure's own message.
func (e *ClassError) Error() string {
	if e.Err == nil {
		return e.Class.ErrorType()
	}
	return e.Err.Error()
}

// Unwrap returns the failure.
func (e *ClassError) Unwrap() error { return e.Err }

// ErrorClass implements [Classified].
func (e *ClassError) ErrorClass() ErrorClass { return e.Class }

// ClassOf returns the class of err. How a run was stopped comes first — its
// time limit ([ErrTimedOut]), an interrupt ([ErrInterrupted]) or a cancel
// ([context.Canceled]) — whatever it was doing then; then the first
// [Classified] error in err's chain; then this package's sentinels
// ([ErrSessionBusy], [ErrUnsupportedMedia], [ErrInvalidInput],
// [ErrInvalidContinue], [ErrUnresolved], [ErrRunNotFound],
// [ErrNotContinuable]). Any other error is [ClassOther]; nil is
// [ClassUnknown].
func ClassOf(err error) ErrorClass {
	switch {
	case err == nil:
		return ClassUnknown
	case errors.Is(err, ErrTimedOut):
		return ClassRunTimeLimit
	case errors.Is(err, ErrInterrupted):
		return ClassInterrupted
	case errors.Is(err, context.Canceled):
		return ClassCancelled
	}
	var classified Classified
	if errors.As(err, &classified) {
		return classified.ErrorClass()
	}
	switch {
	case errors.Is(err, ErrSessionBusy):
		return ClassSessionBusy
	case errors.Is(err, ErrUnsupportedMedia):
		return ClassUnsupportedMedia
	case errors.Is(err, ErrInvalidInput), errors.Is(err, ErrInvalidContinue), errors.Is(err, ErrUnresolved):
		return ClassInvalidInput
	case errors.Is(err, ErrRunNotFound), errors.Is(err, ErrNotContinuable):
		return ClassNotResumable
	}
	return ClassOther
}

// Retryable reports whether err is a transient failure another attempt may
// not meet (its class is retryable). An unclassified error is not.
func Retryable(err error) bool { return ClassOf(err).Retryable() }

// Permanent reports whether err is a failure no attempt can help (its
// class is permanent). An unclassified error is not.
func Permanent(err error) bool { return ClassOf(err).Permanent() }

// ErrorTypeOf is the RunError error_type of err: its class's; "" for nil.
func ErrorTypeOf(err error) string {
	if err == nil {
		return ""
	}
	return ClassOf(err).ErrorType()
}
