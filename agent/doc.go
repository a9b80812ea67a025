// Package agent is agnogo's native agent: a model, instructions and tools,
// with its conversations kept in a [storage.Store].
//
//	a, err := agent.New(agent.Config{
//		ID:                  "assistant",
//		Model:               m,
//		Instructions:        "You are helpful.",
//		Tools:               []tool.Tool{weather},
//		Store:               store,
//		AddHistoryToContext: true,
//	})
//	out, err := a.Run(ctx, &run.Input{InputContent: "Weather in Paris?", SessionID: "s1"})
//
// One run follows the reference loop: load (or start) the session, assemble
// the messages (instructions, the last runs of the session as history, the
// input), then call the model and execute the tools it asks for until it
// answers. Tools that need a person — confirmation, user input, or external
// execution — pause the run (status PAUSED, with requirements); [Agent.Continue]
// resolves them and carries on, and can also restart a run from an earlier
// message, in place or as a fork. Failed attempts are retried when the error is
// retryable; a structured answer is validated against its schema. Every run,
// whatever its end — completed, paused, failed or cancelled — is saved as one
// row, with its metrics added to the session's.
//
// [Agent.Stream] yields the run's events as they happen; [Agent.Run] runs the
// same loop and returns the output. An Agent is immutable and safe for
// concurrent use.
package agent
