package storage

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agnogo/agnogo/run"
)

// SessionStore keeps agno_sessions rows.
type SessionStore interface {
	// UpsertSession inserts s or replaces the stored row with it, and returns
	// the stored row (without runs). When s.UserID is non-empty and the row
	// exists for another user (or for no user), nothing is written and the
	// error wraps [ErrNotFound].
	UpsertSession(ctx context.Context, s *Session) (*Session, error)
	// GetSession reads one session; see [GetSessionOptions].
	GetSession(ctx context.Context, sessionID string, opts GetSessionOptions) (*Session, error)
	// ListSessions returns one page of sessions, without runs, and the total
	// number of sessions that match the query.
	ListSessions(ctx context.Context, q SessionQuery) ([]*Session, int, error)
	// RenameSession sets session_data.session_name and returns the updated row.
	RenameSession(ctx context.Context, sessionID, userID, name string) (*Session, error)
	// DeleteSession removes a session with its runs and transcripts.
	DeleteSession(ctx context.Context, sessionID, userID string) error
	// ForkSession copies a session and its runs into a new session in one
	// transaction, and returns the new session (without runs); see
	// [SessionFork] for what is copied and how the copies are relinked. A
	// source that does not exist, or is not f.UserID's, is [ErrNotFound] and
	// nothing is written.
	ForkSession(ctx context.Context, f SessionFork) (*Session, error)
}

// RunStore keeps agno_runs rows, one per run.
type RunStore interface {
	// UpsertRun inserts or replaces one run and returns the stored record,
	// with its run_index. The session must exist (and be the user's, when
	// scoped); otherwise the error wraps [ErrNotFound]. A run id that already
	// belongs to another session or user is never overwritten.
	UpsertRun(ctx context.Context, rec RunRecord) (RunRecord, error)
	// GetRun reads one run by id.
	GetRun(ctx context.Context, runID, userID string) (RunRecord, error)
	// GetRuns returns one page of runs and the total number that match.
	GetRuns(ctx context.Context, q RunQuery) ([]RunRecord, int, error)
	// SaveRun upserts a session and one of its runs in a single
	// transaction: what an agent does when a turn ends, with one durable
	// commit instead of two. The run's user scope follows [RunStore.UpsertRun];
	// the session's follows [SessionStore.UpsertSession]. The session it
	// returns is s — its documents shared, not copied — with the columns
	// the database sets (user_id, created_at, updated_at, update_count).
	SaveRun(ctx context.Context, s *Session, rec RunRecord) (*Session, RunRecord, error)
	// RecordPendingRun writes the PENDING row of an accepted run in one
	// transaction: the session is created from s when no session has its id
	// (an existing one is left untouched), then the run is inserted, taking
	// the next run_index. The run's user scope is rec.UserID, else
	// s.UserID: a session that exists for another user (or for no user) is
	// never written to, and the error wraps [ErrNotFound]. A run id that is
	// already stored is refused ([ErrInvalid], or [ErrNotFound] when it is
	// another user's run) and nothing is written. rec.Run.Status must be
	// [run.StatusPending].
	RecordPendingRun(ctx context.Context, s *Session, rec RunRecord) error
	// DeleteRun removes one run.
	DeleteRun(ctx context.Context, runID, userID string) error
	// ContextRuns returns the last n runs of the session's current branch
	// that may feed a model's context, oldest first: what
	// [RunStore.HistoryRuns] returns for a run after every stored one.
	ContextRuns(ctx context.Context, sessionID, userID string, n int) ([]*run.Output, error)
	// HistoryRuns returns the runs that make a run's history, oldest first
	// (see [HistoryQuery]).
	HistoryRuns(ctx context.Context, q HistoryQuery) ([]*run.Output, error)
}

// TranscriptStore keeps mirrored external-agent transcripts (agno_transcripts).
// When userID is non-empty, only transcripts owned by that user's sessions
// are visible, and appends to another user's session — or to a transcript
// another session owns — are refused with [ErrNotFound].
type TranscriptStore interface {
	// AppendTranscript appends entries to one transcript, numbering them
	// after the transcript's last position, and returns the stored entries.
	AppendTranscript(ctx context.Context, key TranscriptKey, agnoSessionID, userID string, entries []json.RawMessage) ([]TranscriptEntry, error)
	// ReadTranscript returns one transcript's entries in position order,
	// those after afterPosition (0 for all).
	ReadTranscript(ctx context.Context, key TranscriptKey, userID string, afterPosition int64) ([]TranscriptEntry, error)
	// ListTranscriptSessions lists the CLI session ids stored for a framework
	// and project key.
	ListTranscriptSessions(ctx context.Context, framework, projectKey, userID string) ([]string, error)
	// ListTranscriptSubpaths lists the subagent subpaths stored for one CLI
	// session (the main transcript's "" is left out).
	ListTranscriptSubpaths(ctx context.Context, framework, projectKey, sessionID, userID string) ([]string, error)
	// DeleteTranscript removes one CLI session's transcripts, subagents included.
	DeleteTranscript(ctx context.Context, framework, projectKey, sessionID, userID string) error
}

// MemoryStore keeps agno_memories rows.
type MemoryStore interface {
	// UpsertMemory inserts or replaces a memory. When m.UserID is non-empty
	// and the row belongs to another user, nothing is written ([ErrNotFound]).
	UpsertMemory(ctx context.Context, m *Memory) (*Memory, error)
	// GetMemory reads one memory.
	GetMemory(ctx context.Context, memoryID, userID string) (*Memory, error)
	// ListMemories returns one page of memories and the total that match.
	ListMemories(ctx context.Context, q MemoryQuery) ([]*Memory, int, error)
	// DeleteMemories removes memories by id; ids not visible to userID are
	// left alone. It returns how many were deleted.
	DeleteMemories(ctx context.Context, memoryIDs []string, userID string) (int, error)
}

// Store is everything an agnogo database keeps. Adapters implement it and
// pass storagetest.Run.
type Store interface {
	SessionStore
	RunStore
	TranscriptStore
	MemoryStore
	ToolResultStore
	// Close releases the store's connections.
	Close() error
}

// ToolResultStore keeps tool results too large for a model's context
// (agno_tool_results): the run shows an envelope with a preview, and the
// model pages through the whole result with the read_result and
// search_result tools.
type ToolResultStore interface {
	// PutToolResult stores a result; an existing id is replaced.
	PutToolResult(ctx context.Context, r *ToolResult) error
	// GetToolResult reads a result with its content.
	GetToolResult(ctx context.Context, resultID, userID string) (*ToolResult, error)
}

// PoolStats is the state of one connection pool of a store.
type PoolStats struct {
	// Name names the pool: "writer" and "reader" (SQLite), "pool"
	// (Postgres).
	Name string
	// Open, InUse and Idle count its connections; MaxOpen is its bound.
	Open, InUse, Idle, MaxOpen int
	// WaitCount is how many times a caller waited for a connection, and
	// WaitDuration how long in all.
	WaitCount    int64
	WaitDuration time.Duration
}

// PoolStatser is a store that reports its connection pools (both SQL
// stores), for the Prometheus metrics.
type PoolStatser interface {
	PoolStats() []PoolStats
}
