package storage

// HistoryQuery asks [RunStore.HistoryRuns] for the runs that make the
// history of one run: the conversation as the branch this run belongs to
// took it.
//
// The history of a run is the last N finished (COMPLETED) top-level runs
// of its session that precede it in session order (run_index); pending,
// running, paused, failed, cancelled and regenerated runs are never part
// of it. A fork replaces the run it was forked from: it holds that run's
// messages up to the cut, so the run it forked from, and every run after
// that one up to the fork, belong to a branch the conversation left. So the
// runs before a fork are the runs before its source (followed through forks
// of forks), and a later run whose history reaches a fork goes on from the
// fork's source's predecessors. Each message of the conversation is
// therefore seen once.
type HistoryQuery struct {
	// SessionID is the session; required.
	SessionID string
	// UserID scopes the read: when non-empty, a session of another user is
	// reported missing ([ErrNotFound]).
	UserID string
	// RunID is the run whose history this is. When it is stored, only the
	// runs before it count, and when it is a fork the runs before its
	// source. When it is empty or not stored yet, the run comes after every
	// stored run.
	RunID string
	// ForkedFromRunID is the run a run that is not stored yet was forked
	// from; a stored run's own lineage wins.
	ForkedFromRunID string
	// N is how many runs at most; required, positive.
	N int
}
