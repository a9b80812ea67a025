// Package durable executes background runs on DBOS Transact: acceptance with a
// PENDING run row, bounded concurrency, idempotency keys, per-session FIFO,
// cancellation from any replica, crash recovery and a step journal, so every
// accepted run reaches a visible terminal state.
package durable
