// Package codex drives codex app-server (JSON-RPC) as a first-class agnogo agent.
//
// [Driver] implements [external.Driver]: each turn starts one
// `codex app-server` process, resumes the session's Codex thread (kept in
// session_data["codex_thread_id"]) or starts one seeded with the session's
// history, runs the turn, answers the app-server's approval requests per
// [Options.ApprovalMode], and maps its notifications to agnogo events with
// [Turn]. [Server] is the JSON-RPC client underneath.
package codex
