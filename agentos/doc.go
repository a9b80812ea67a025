// Package agentos is the AgentOS HTTP server: the REST and SSE API that
// Agno's AgentOS clients speak, over any set of [run.Runner]s and a
// [storage.Store].
//
//	os, err := agentos.New(agentos.Config{Runners: []run.Runner{assistant}, Store: store})
//	http.ListenAndServe("127.0.0.1:7777", os)
//
// An *OS is an http.Handler, so it mounts inside a user's own server. Runs
// are created with form fields (multipart or urlencoded) and answered as
// JSON or as Server-Sent Events (`event: Name`, `data: {compact JSON}`); the
// rest is JSON REST with `{"detail": …}` error bodies. The server never
// switches on a runner's concrete type: continuing, collecting and the rest
// are optional interfaces of package run. [OS.Shutdown] cancels the runs in
// flight and waits until each has saved its final state.
package agentos
