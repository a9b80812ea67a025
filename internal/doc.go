// Package internal holds what agnogo's packages share but do not export:
// test support (wire-protocol fakes of model APIs, fake CLIs, clock and ID
// seams; internal/testdb for the database services tests run against) and
// the HTTP server's bounds on clients (internal/httpbound).
package internal
