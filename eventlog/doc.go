// Package eventlog is the per-run indexed event log: every event of a run gets
// a strictly increasing event_index, is appended, can be replayed after an
// index and tailed live. Backends: memory, database, Redis.
package eventlog
