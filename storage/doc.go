// Package storage defines where agnogo keeps what must outlive a process:
// sessions, runs, mirrored external-agent transcripts, user memories, and
// the daily usage aggregates kept beside them ([MetricsStore]).
//
// The tables and columns follow Agno 3.x (agno_sessions, agno_runs,
// agno_transcripts, agno_memories, agno_metrics, agno_schema_versions), so a
// database written by Agno can be opened after `agnogo migrate`.
//
// A session row stays small: every run lives in its own agno_runs row, ordered
// by run_index, so saving run N of a session costs the same as saving run 1.
//
// Every read and write takes a user scope. An empty user id means unscoped
// (administrative access); a non-empty one restricts the call to that user's
// rows, and another user's rows are reported as [ErrNotFound], never returned
// or overwritten.
//
// Adapters live in subpackages (storage/sqlite, storage/postgres) so a program
// links only the driver it uses; storage/storagetest is the conformance suite
// every adapter passes, and storage/migrate moves an older database forward.
package storage
