package storage

// SessionFork asks [SessionStore.ForkSession] for a copy of a session.
//
// The new session is the source row with a new id, session_data without
// DropSessionData's keys, and created_at and updated_at set to now; the
// owner, component ids and every other column are copied. Every run of the
// source in the caller's scope is copied under a fresh run id, keeping its
// run_index (and so its order), created_at, run type and user (a run
// without one takes the session's owner). The copies are relinked to the
// fork: in run_data, run_id and session_id are the copy's and
// forked_from_session_id names the source; a parent_run_id, a tool's
// child_run_id, a forked_from_run_id or a regenerated_from that names a
// copied run names that run's copy instead (the parent_run_id column
// follows). A copy's stored events are left out: they
// describe the original execution, with the original ids.
type SessionFork struct {
	// SessionID is the session to copy; required.
	SessionID string
	// UserID scopes the fork: when non-empty, the source must be this
	// user's session and only this user's runs are copied.
	UserID string
	// ForkID is the new session's id. The store generates one when it is
	// empty; an id already in use is refused with [ErrInvalid].
	ForkID string
	// DropSessionData lists session_data keys the copy leaves out.
	DropSessionData []string
}
