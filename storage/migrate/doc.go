// Package migrate moves an agnogo (or Agno 2.x/3.x) database forward to the
// schema this build writes.
//
// Every table carries its own schema version in agno_schema_versions. [Up]
// walks the tables in order and, for each one behind the target, applies the
// steps between its stamped version and the target in one transaction, then
// stamps the table. A table that has no stamp but exists is an Agno 2.x table
// and counts as 2.0.0; a missing table is created in its current shape.
//
// Migrating is idempotent and non-destructive: running [Up] twice does the
// work once, no column is dropped, and rows already in their new home are never
// overwritten. The 3.0.0 step of agno_runs copies the runs that Agno 2.x kept
// in the sessions' `runs` JSON column into one row each, in batches, keeping
// their order as run_index; the legacy column stays as a backup until
// [CleanupLegacyRuns] is called with force.
//
// Storage adapters implement [Driver]; the command `agnogo migrate` drives it.
package migrate
