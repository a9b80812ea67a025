// Package run is the shared vocabulary of agnogo: the data a run consumes,
// produces and reports, shaped exactly as Agno's AgentOS writes it, so agnogo
// and Python AgentOS clients, databases and dashboards can read each other's
// JSON.
//
// # The run record
//
// A run is one execution of an agent, team or workflow for one input. It is
// described by an [Output] (Agno's RunOutput), which storage persists as one
// row: identity (run, agent, session and user ids), the caller's [Input], the
// answer and its media, the transcript ([Message]), the tool calls
// ([ToolExecution]), usage ([RunMetrics]), the [Status], and lineage fields for
// forks and regenerations. A paused run lists what it waits for as
// [Requirement] values, resolved with [Requirement.Confirm],
// [Requirement.Reject], [Requirement.ProvideUserInput] and friends.
//
// Free-form Metadata carries two lists with helpers: the attempt history
// agnogo writes when a run needed more than one attempt ([Output.AppendAttempt],
// [Attempt]) and warnings from runs that still completed ([Output.AppendWarning]).
//
// # Metrics
//
// [Metrics] holds the token counts and cost every metrics type shares.
// [MessageMetrics] times one model reply, [RunMetrics] totals a run with a
// per-model breakdown, and [SessionMetrics.AccumulateFromRun] folds runs into a
// session's totals. Timers take the current time as an argument, so tests
// control the clock.
//
// # Events
//
// A run reports progress as a sequence of events: RunStarted, RunContent
// deltas, tool calls, RunCompleted and so on. Each has a concrete type here,
// embedding [BaseEvent], and all satisfy [Event]. Encoding always sets the
// "event" key to the type's name and leaves out empty optional keys, as Agno
// drops None:
//
//	data, _ := json.Marshal(&run.RunContent{
//		BaseEvent:   run.BaseEvent{RunID: "r1", CreatedAt: 1767000000},
//		Content:     "Hel",
//		ContentType: "str",
//	})
//	// {"created_at":1767000000,"event":"RunContent","run_id":"r1","nested_depth":0,
//	//  "content":"Hel","workflow_agent":false,"content_type":"str"}
//
// [DecodeEvent] reverses this, choosing the type from the "event" key. Names
// without a type here — team and workflow events, future additions — decode to
// a [GenericEvent] that re-encodes unchanged, so a stream or stored run never
// loses an event it does not understand. [EventList] uses it to store events on
// a run.
//
// An event stream stamps each event with a per-run index
// ([BaseEvent.SetIndex]); a stored event keeps its index so replay after a
// reconnect uses the same numbers. Indices increase but may have gaps.
//
// Two event shapes are agnogo's own decisions rather than Agno's: [RunRetry],
// sent when a run is about to be attempted again, and the
// parent_tool_call_id on tool events made inside a subagent
// ([ToolCallStarted.ParentToolCallID]).
//
// # Failures
//
// [ErrorClass] is the taxonomy of failures every runner, driver and queue
// shares: each class knows the error_type its RunError reports and whether
// another attempt may help. An error carries its class as a [ClassError]
// ([Classify]) or as any [Classified] error; [ClassOf] finds it through
// wrapping and also classes this package's sentinels, and [Retryable],
// [Permanent], [ErrorTypeOf] and [PermanentErrorType] answer from the same
// table.
//
// # JSON conventions
//
// Agno drops None values but keeps empty strings and lists, and a few types
// (tool executions, reasoning steps, references) write every key with null for
// the unset ones. This package follows each type's Agno behaviour: slices and
// maps use omitzero so nil is left out while an empty list is kept; optional
// values whose zero is meaningful (a confirmation, a tool result, a cost) are
// pointers. Encoding never escapes <, > and &, matching AgentOS's frames; a
// caller using json.Marshal still gets escaped output.
package run
