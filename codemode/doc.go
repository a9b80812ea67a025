// Package codemode gives a model one tool, run_code, in which it writes a
// small program calling the agent's other tools as functions, instead of
// one model turn per tool call: a task of ten dependent calls takes one or
// two turns instead of eleven.
//
// Programs are Starlark (go.starlark.net), a small deterministic dialect of
// Python with no imports, no file or network access and no clock: a
// program reaches the world only through the tools. Each program is bounded
// by steps ([Config.MaxSteps]), time ([Config.Timeout]), tool calls
// ([Config.MaxToolCalls]) and output ([Config.MaxOutputBytes]). It returns
// what it prints and the value of its final expression. Variables a program
// sets are kept for the session's next programs, in this process's memory
// (at most [Config.MaxSessions] sessions): a session continued on another
// replica, or after a restart, starts with none.
//
// Every call a program makes is a tool execution of the run: it is
// validated against the tool's schema, streamed as ToolCallStarted and
// ToolCallCompleted (or ToolCallError) events, and recorded in the run's
// tools with the id "<run_code call id>.<n>". A tool that requires
// confirmation, user input or external execution pauses the run as it
// would outside a program: run_code's call waits (its child_run_id is
// "code-<call id>", which its requirement carries as member_run_id), and
// once the requirement is resolved the program runs again from the start,
// the calls it made before answered from the run's record — not made again
// — and the waiting call answered as the person decided. A program must
// therefore depend on nothing but its tools' results, which Starlark
// guarantees.
//
//	cm, err := codemode.New(tools, codemode.Config{})
//	a, err := agent.New(agent.Config{Model: m, Tools: cm.Tools()})
//
// In agnogo.yaml, code_mode: true on an agent does the same with its tools.
package codemode
