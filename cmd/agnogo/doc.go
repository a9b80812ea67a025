// Command agnogo runs and maintains an agnogo AgentOS.
//
// Usage:
//
//	agnogo migrate [--db URL] [--target VERSION] [--schema NAME] [--json] [--cleanup-legacy-runs [--force]]
//	agnogo serve [--config FILE] [--addr 127.0.0.1:7777] [--db URL]
//	agnogo version
//
// The database URL is sqlite://PATH (the default is sqlite://./agnogo.db) or
// postgres://user:pass@host:5432/db; see storage/dburl.
//
// `agnogo migrate` moves a database written by an older agnogo, or by Agno
// 2.x/3.x, to the schema this build writes, printing one line per table as it
// finishes (or, with --json, one JSON report). It is safe to run any number of
// times. Runs that Agno 2.x kept inside agno_sessions.runs are copied into
// agno_runs, and the old column is kept as a backup until
// `--cleanup-legacy-runs --force` drops it.
//
// `agnogo serve` opens (or creates) the database and checks its schema; the
// HTTP server itself is not part of this build yet.
//
// Exit codes: 0 success, 1 failure, 2 usage error (an unknown command or flag,
// a bad flag value). Errors are printed on stderr as "agnogo: <message>".
package main
