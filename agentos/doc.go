// Package agentos is the AgentOS HTTP server: the REST and SSE API that
// Agno's AgentOS clients speak, over any set of [run.Runner]s and a
// [storage.Store].
//
//	os, err := agentos.New(agentos.Config{Runners: []run.Runner{assistant}, Store: store})
//	err = os.ListenAndServe(ctx, "127.0.0.1:7777", agentos.ServeOptions{})
//
// [OS.ListenAndServe] and [OS.Serve] serve as `agnogo serve` does, with its
// defaults ([ServeOptions]): request bodies, idle connections and the
// connections open at once are bounded, and when ctx ends the server stops
// gracefully, cancelling the runs in flight and waiting for them to be
// saved. An *OS is also an http.Handler, so it mounts inside a user's own
// server. Background runs (background=true) execute in the process unless
// [Config.Queue] is a durable queue, which keeps them across crashes and
// restarts:
//
//	events := agentos.NewEventLog()
//	queue, err := durable.New(ctx, durable.Config{DatabaseURL: "sqlite:file:/abs/path/agnogo.db",
//		Store: store, Runners: runners, Events: events})
//	err = queue.Launch()
//	defer queue.Shutdown(30 * time.Second) // after Serve returns: waits for the runs executing here
//	os, err := agentos.New(agentos.Config{Runners: runners, Store: store, Queue: queue, Events: events})
//
// Runs are created with form fields (multipart or urlencoded) and answered
// as JSON or as Server-Sent Events (`event: Name`, `data: {compact JSON}`);
// the rest is JSON REST with `{"detail": …}` error bodies. The server never
// switches on a runner's concrete type: continuing, collecting and the rest
// are optional interfaces of package run. [OS.Shutdown] cancels the runs in
// flight and waits until each has saved its final state.
package agentos
