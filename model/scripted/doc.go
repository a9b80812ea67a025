// Package scripted is a deterministic model for tests, examples and benchmarks:
// its replies, tool calls included, are scripted turn by turn.
package scripted
