// Package internal holds test support shared across agnogo's packages:
// wire-protocol fakes of model APIs, fake CLIs, and clock and ID seams. See
// internal/testdb for the database services tests run against.
package internal
