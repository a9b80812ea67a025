package migrate

import "context"

// Table is one table a [Driver] manages, with the upgrade steps it knows.
type Table struct {
	// Name is the table's name, e.g. agno_runs.
	Name string
	// Version is the schema version this build writes for the table.
	Version string
	// Steps upgrade an existing table, oldest first; each Step.Version is at
	// most Version.
	Steps []Step
}

// Step is one upgrade of one table to one version.
type Step struct {
	Version     string
	Description string
}

// State is what the database says about one table.
type State struct {
	// Exists reports whether the table is there.
	Exists bool
	// Stamped is the version in agno_schema_versions, or "" when none is.
	Stamped string
}

// Plan is what [Up] asks a driver to do to one table, in one transaction.
type Plan struct {
	// Create makes the table in its current shape (it does not exist yet).
	Create bool
	// Steps are applied in order to an existing table.
	Steps []Step
	// Stamp is the version to record once the work succeeded.
	Stamp string
}

// Outcome reports what a driver did to one table.
type Outcome struct {
	// ImportedRuns counts legacy session runs copied into agno_runs.
	ImportedRuns int
}

// Driver is a database that can be migrated. The storage adapters implement it.
type Driver interface {
	// Tables lists the managed tables in the order they must be migrated
	// (a table comes after the tables its foreign keys name).
	Tables() []Table
	// TableState reads whether a table exists and its stamped version.
	TableState(ctx context.Context, table string) (State, error)
	// MigrateTable carries out plan in one transaction and stamps the table.
	// A failing step returns its error and leaves the table and its stamp as
	// they were.
	MigrateTable(ctx context.Context, table string, plan Plan) (Outcome, error)
}

// LegacyRunsCleaner is a [Driver] that can drop the legacy sessions.runs column.
type LegacyRunsCleaner interface {
	// CleanupLegacyRuns drops the column. Unless force is set it refuses
	// while any session still holds legacy runs. It reports whether a column
	// was dropped.
	CleanupLegacyRuns(ctx context.Context, force bool) (bool, error)
}
