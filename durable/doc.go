// Package durable runs background runs on a durable queue, so an accepted
// run is never lost: it survives a crash or a restart of the process that
// accepted it and reaches a visible terminal state.
//
// The engine is DBOS Transact, on the same database as the runs (SQLite or
// Postgres). A run is a DBOS workflow on one queue, partitioned by session,
// so the runs of a session execute one at a time in submission order while
// different sessions run concurrently. Inside the workflow every model call
// and every tool call is a step ([run.Journal]): when a run is re-executed
// after a crash, the steps that completed are not repeated.
//
// Accepting a run writes its PENDING row and enqueues it — on Postgres in
// one transaction, with the queue depth checked inside it; on SQLite the row
// first, a row whose enqueue a crash cut off being adopted later — and the
// answer names the run only once both are done. A process that restarts with the same
// executor id picks up its unfinished runs, and a live replica those of a
// process that died: with MaxAttempts 2 or more (the default is 3) they
// continue from their last completed step, announced by a RunRetry event —
// only the step in flight at the crash runs again, which is what
// [run.StepKey] is for; with MaxAttempts 1 (at most once) they end ERROR
// with a message saying how to run them again. While attempts remain, the
// run's row never shows ERROR. With MaxAttempts 2 or more a run that
// failed for a reason another attempt may not meet also starts again, after
// a jittered delay (Config.RetryDelay), from the step that failed; one
// execution of a run is bounded by Config.Timeout.
//
// [Queue.Shutdown] drains: it starts no new run, waits for the runs
// executing, then interrupts the rest ([run.ErrInterrupted]: they save their
// progress and stay RUNNING) and hands them back, so a live replica takes
// them over at once.
package durable
