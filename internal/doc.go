// Package internal holds what agnogo's packages share but do not export:
// test support (wire-protocol fakes of model APIs, fake CLIs, clock and ID
// seams; internal/testdb for the database services tests run against), the
// HTTP server's bounds on clients (internal/httpbound), and CI's allocation
// guard over the hot paths' benchmarks (internal/benchguard).
package internal
