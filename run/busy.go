package run

import (
	"context"
	"errors"
	"fmt"
)

// ErrSessionBusy: the session already has a turn in flight and its runner
// takes one turn per session at a time (as external agents do). Match it
// with errors.Is; the error is a [*SessionBusyError] naming the blocking
// run.
var ErrSessionBusy = errors.New("session busy")

// ErrorTypeSessionBusy is the error_type (and error_id) of a refused turn.
const ErrorTypeSessionBusy = "session_busy"

// SessionBusyError refuses a second turn on a session whose turn is in
// flight — in this process, or per the runs table on another replica. A
// runner reports it from [Runner.Stream] as an error before any event.
// AgentOS answers it with HTTP 409 (error_type session_busy), or, to a
// streaming request, with that single RunError.
type SessionBusyError struct {
	SessionID string
	// RunID is the run in flight.
	RunID string
}

// Error implements error.
func (e *SessionBusyError) Error() string {
	return fmt.Sprintf("Session %s already has run %s in progress", e.SessionID, e.RunID)
}

// Is makes errors.Is(err, ErrSessionBusy) match.
func (e *SessionBusyError) Is(target error) bool { return target == ErrSessionBusy }

// ErrUnsupportedMedia: a run brings media its runner cannot take (audio or
// video for an external agent, or an attachment that cannot be staged
// safely). Nothing was started. AgentOS answers it with HTTP 400
// (error_type unsupported_media).
var ErrUnsupportedMedia = errors.New("unsupported media")

// Admitter is a [Runner] that can tell, before a run is accepted, whether
// it would be refused: a background submission asks first so that no
// PENDING row is written for a run that cannot start.
type Admitter interface {
	// Admit returns nil when in could start now, or the reason it could
	// not: its input refused (wrapping [ErrInvalidInput]), or its session
	// busy ([*SessionBusyError]). With queued set the run will wait in a
	// queue that runs its session's runs one at a time, so a busy session
	// does not refuse it.
	Admit(ctx context.Context, in *Input, queued bool) error
}
