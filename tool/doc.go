// Package tool defines what an agent's model can call and how one turn's
// tool calls are executed.
//
// # Tools
//
// A [Tool] has a [Spec] (name, description, JSON Schema of its arguments
// and the flags that tell the run loop to pause for a person) and a Call
// method that takes the model's JSON arguments and returns the text the
// model reads. An error from Call is reported to the model as a failed tool
// call; it never ends the run.
//
// Most tools are typed Go functions built with [New], in the manner of
// google/adk-go's functiontool:
//
//	type weatherArgs struct {
//		City string `json:"city" jsonschema:"the city to look up"`
//	}
//	weather, err := tool.New(tool.Config{Name: "get_weather", Description: "Current weather in a city."},
//		func(ctx context.Context, args weatherArgs) (string, error) { … })
//
// The arguments schema is inferred from the Args type with
// github.com/google/jsonschema-go, resolved once, and every call is
// validated against it before the function runs: a model that sends a
// string for a number, leaves out a required field or invents one gets an
// [*ArgumentError] explaining the mistake, and the function is not called.
// A string result is returned as is, any other result as JSON. A panic in
// the function becomes a [*PanicError] naming the tool.
//
// Toolkits and tools whose arguments have no Go type use [Func] with a
// hand-written schema; the same validation applies.
//
// Tools are immutable values: build them once and share them between agents
// and goroutines.
//
// # Sets and execution
//
// A [Set] holds an agent's tools, rejecting duplicate names. [Execute] runs
// the calls of one model turn against a set: in parallel (bounded by
// [ExecuteOptions.MaxParallel]), honouring the run's tool_call_limit, and
// returns one [Outcome] per call, in call order, each carrying the
// [run.ToolExecution] the run records. Calls of unknown tools or past the
// limit fail with a message for the model; calls of tools that require
// confirmation, user input or external execution are not run but returned
// paused, so the agent can pause the run (Agno's human-in-the-loop) and run
// them later with [ExecuteOptions.Resolved].
//
// # Flags and user input
//
// [WithFlags] returns a copy of a tool with other pause and stop flags — a
// toolkit's tool made to need confirmation, or to ask a person for some of
// its arguments ([UserInputFields] types them from the parameters schema).
// A tool implementing [UserInputAsker] decides per call which fields a
// person is asked for: [GetUserInput], Agno's get_user_input, asks for the
// fields the model names and returns the answers as its result.
package tool
