package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agnogo/agnogo/storage"
)

// Action says what [Up] did to a table.
type Action string

// The actions.
const (
	// ActionCreated: the table did not exist and was created.
	ActionCreated Action = "created"
	// ActionMigrated: steps were applied and the stamp moved forward.
	ActionMigrated Action = "migrated"
	// ActionUpToDate: nothing to do.
	ActionUpToDate Action = "up_to_date"
	// ActionSkipped: the table does not exist and the target is older than
	// the version it would be created at.
	ActionSkipped Action = "skipped"
	// ActionFailed: a step failed; the table keeps its old stamp.
	ActionFailed Action = "failed"
)

// TableReport is one table's line of a migration report.
type TableReport struct {
	Table string `json:"table"`
	// From is the version before migrating ("" when the table did not exist).
	From string `json:"from"`
	// To is the version after migrating, or the version the table was
	// moving to when it failed.
	To           string   `json:"to"`
	Action       Action   `json:"action"`
	Steps        []string `json:"steps,omitempty"`
	ImportedRuns int      `json:"imported_runs,omitempty"`
	DurationMS   int64    `json:"duration_ms"`
	Error        string   `json:"error,omitempty"`
}

// Options tune [Up].
type Options struct {
	// Target is the version to migrate to. Defaults to each table's current
	// version (everything this build knows).
	Target string
	// Progress, when set, is called as each table starts (with Action "")
	// and again when it ends.
	Progress func(TableReport)
}

// StepError is the error of the step that stopped a migration.
type StepError struct {
	Table   string
	Version string
	Err     error
}

// Error implements error.
func (e *StepError) Error() string {
	if e.Version == "" {
		return fmt.Sprintf("migrate %s: %v", e.Table, e.Err)
	}
	return fmt.Sprintf("migrate %s to %s: %v", e.Table, e.Version, e.Err)
}

// Unwrap returns the step's own error.
func (e *StepError) Unwrap() error { return e.Err }

// Up migrates every table of d up to opts.Target. It stops at the first
// failing table and returns the reports of the tables handled so far (the last
// one carrying the error) with a [*StepError]. Tables migrated before the
// failure keep their new stamps.
func Up(ctx context.Context, d Driver, opts Options) ([]TableReport, error) {
	if opts.Target != "" {
		if err := ParseVersion(opts.Target); err != nil {
			return nil, fmt.Errorf("%w: target %w", storage.ErrInvalid, err)
		}
	}
	var reports []TableReport
	for _, table := range d.Tables() {
		report, err := upTable(ctx, d, table, opts)
		reports = append(reports, report)
		if opts.Progress != nil {
			opts.Progress(report)
		}
		if err != nil {
			return reports, err
		}
	}
	return reports, nil
}

func upTable(ctx context.Context, d Driver, table Table, opts Options) (report TableReport, err error) {
	started := time.Now()
	report = TableReport{Table: table.Name}
	defer func() { report.DurationMS = time.Since(started).Milliseconds() }()
	state, err := d.TableState(ctx, table.Name)
	if err != nil {
		report.Action, report.Error = ActionFailed, err.Error()
		return report, &StepError{Table: table.Name, Err: err}
	}
	target := table.Version
	if opts.Target != "" && CompareVersions(opts.Target, target) < 0 {
		target = opts.Target
	}
	plan, from := planTable(table, state, target)
	report.From, report.To = from, from
	if opts.Progress != nil {
		opts.Progress(report)
	}
	switch {
	case !state.Exists && CompareVersions(target, table.Version) < 0:
		// A new table is only ever created in its current shape.
		report.Action = ActionSkipped
		return report, nil
	case !plan.Create && plan.Stamp == "":
		report.Action = ActionUpToDate
		return report, nil
	}
	for _, step := range plan.Steps {
		report.Steps = append(report.Steps, step.Version)
	}
	outcome, err := d.MigrateTable(ctx, table.Name, plan)
	if err != nil {
		report.Action, report.To, report.Error = ActionFailed, plan.Stamp, err.Error()
		var stepErr *StepError
		if errors.As(err, &stepErr) {
			return report, err
		}
		return report, &StepError{Table: table.Name, Err: err}
	}
	report.To = plan.Stamp
	report.ImportedRuns = outcome.ImportedRuns
	report.Action = ActionMigrated
	if plan.Create {
		report.Action = ActionCreated
	}
	return report, nil
}

// planTable decides what migrating one table to target takes, and the version
// it starts from ("" for a missing table). A plan with no Stamp means there is
// nothing to do.
func planTable(table Table, state State, target string) (Plan, string) {
	if !state.Exists {
		return Plan{Create: true, Stamp: table.Version}, ""
	}
	from := state.Stamped
	if from == "" {
		from = UnstampedVersion
	}
	if CompareVersions(from, target) >= 0 {
		return Plan{}, from
	}
	plan := Plan{Stamp: target}
	for _, step := range table.Steps {
		if CompareVersions(step.Version, from) > 0 && CompareVersions(step.Version, target) <= 0 {
			plan.Steps = append(plan.Steps, step)
		}
	}
	return plan, from
}

// Pending lists the tables of d whose schema is behind this build, missing
// tables included (their Current is "").
func Pending(ctx context.Context, d Driver) ([]storage.PendingTable, error) {
	var pending []storage.PendingTable
	for _, table := range d.Tables() {
		state, err := d.TableState(ctx, table.Name)
		if err != nil {
			return nil, err
		}
		plan, from := planTable(table, state, table.Version)
		if plan.Create || plan.Stamp != "" {
			pending = append(pending, storage.PendingTable{Table: table.Name, Current: from, Target: table.Version})
		}
	}
	return pending, nil
}

// CleanupLegacyRuns drops the legacy sessions.runs column that the 3.0.0
// migration keeps as a backup. Without force it refuses while any session
// still holds legacy runs; take a backup first. It reports whether a column
// was dropped.
func CleanupLegacyRuns(ctx context.Context, d Driver, force bool) (bool, error) {
	cleaner, ok := d.(LegacyRunsCleaner)
	if !ok {
		return false, fmt.Errorf("%w: this database has no legacy runs column to clean up", storage.ErrInvalid)
	}
	return cleaner.CleanupLegacyRuns(ctx, force)
}
