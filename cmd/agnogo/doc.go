// Command agnogo runs and maintains an agnogo AgentOS.
//
// Usage:
//
//	agnogo migrate [--db URL] [--target VERSION] [--schema NAME] [--json] [--cleanup-legacy-runs [--force]]
//	agnogo run [--config FILE] [--db URL] AGENT|TEAM MESSAGE [--session ID] [--user U] [--json] [--stream]
//	agnogo run [--config FILE] [--db URL] --continue RUN_ID --approve|--reject [--session ID] [--user U] [--json] [--stream]
//	agnogo sessions list|show|delete [--config FILE] [--db URL] [--user U] [--json]
//	agnogo serve [--config FILE] [--addr 127.0.0.1:7777] [--db URL] [--log-format text|json]
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
// `agnogo run` loads the config file (--config, else ./agnogo.yaml when it
// exists, else the default "assistant" agent on $AGNOGO_MODEL; see package
// config and docs/config.md), runs AGENT — an agent, or a team of the
// config's teams — on MESSAGE in this process and prints the answer, then a
// status line on stderr. A team's answer is the team's own; its members'
// runs are stored in its session with its run as their parent_run_id, and
// --stream shows their tool calls indented under the team's delegations. --json prints the whole
// run (RunOutput); --stream prints answer deltas and tool calls as they
// happen, or with --json each event as a JSON line. When stdout is a
// terminal, and --json is not given, the run is shown as --stream shows it,
// with a spinner on stderr while the model or a tool works. A run that
// fails, is cancelled (Ctrl-C) or pauses for a confirmation exits with
// status 1; an unknown agent or team or an invalid config file with status
// 2.
// `agnogo run --continue RUN_ID --approve` (or --reject) confirms (or
// rejects) the tool calls a paused run waits for and runs it on.
//
// `agnogo sessions list|show|delete` reads and deletes the stored sessions
// of the database directly, as GET and DELETE /sessions do over HTTP;
// --user scopes them to one user's sessions.
//
// `agnogo serve` opens (or creates) the database, checks its schema and serves
// the AgentOS HTTP API on --addr (routes at /docs and /openapi.json) until
// SIGINT or SIGTERM, then cancels the runs in flight, waits for them to save
// and exits 0.
//
// Exit codes: 0 success, 1 failure, 2 usage error (an unknown command or flag,
// a bad flag value, an invalid config file, an unknown agent). Errors are printed on stderr as "agnogo: <message>".
package main
