// Package team runs a team: a leader model that works with member runners —
// native agents, Claude Code and Codex agents, nested teams, any
// [run.Runner] — the way Agno's Team does.
//
// The leader is a native agent loop ([agent.Agent] with run.KindTeam) whose
// runs, sessions and events are the team's (team_id, session_type team,
// Team* events). It reaches its members through tools:
// delegate_task_to_member(member_id, task) in the coordinate and route
// modes, delegate_task_to_members(task) in broadcast mode. Each delegation
// is a run of the member — a child run with parent_run_id set to the
// team's run, in the team's session, with its own row and metrics — driven
// by the member's own run host, so it is persisted, cancelled and retried
// like any run. The team's metrics add the members'. A member that fails
// reaches the leader as a failed tool call, which the leader can react to;
// it never fails the team by itself. Cancelling the team's run cancels the
// member runs in flight (their contexts derive from the team's).
//
// With StreamMemberEvents (the default) the members' events are passed on
// in the team's stream, with their own agent_id, run_id and parent_run_id,
// between the team's TeamToolCallStarted and TeamToolCallCompleted.
//
// Under a durable queue the leader's model calls and each delegation are
// journaled steps: a run executed again after a crash replays completed
// delegations from the journal instead of running their members again. A
// member run's id is derived from its step's idempotency key, so a
// delegation that was in flight runs again as the same member run.
package team
