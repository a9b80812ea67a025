package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agnogo/agnogo/config"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/dburl"
	"github.com/agnogo/agnogo/storage/migrate"
)

// migrateFlags are the flags of `agnogo migrate`.
type migrateFlags struct {
	config            string
	db                string
	target            string
	schema            string
	json              bool
	cleanupLegacyRuns bool
	force             bool
}

// migrateResult is the document `agnogo migrate --json` prints.
type migrateResult struct {
	// Database is the URL, without its password.
	Database string `json:"database"`
	// Target is the version asked for, or the newest this build writes.
	Target string `json:"target"`
	// Tables are the tables handled, in order; a failed one carries its error.
	Tables []migrate.TableReport `json:"tables"`
	// LegacyRunsDropped is set when --cleanup-legacy-runs ran: whether the
	// agno_sessions.runs column was dropped.
	LegacyRunsDropped *bool `json:"legacy_runs_dropped,omitempty"`
	// Error is the message of the failure that stopped the command.
	Error string `json:"error,omitempty"`
}

func (c *cli) migrateCommand() *cobra.Command {
	var flags migrateFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move a database to the schema this build writes",
		Long: `Migrate moves an agnogo database, or one written by Agno 2.x/3.x, to the schema
this build writes, one table at a time, printing a line per table.

The database is --db, else the config's db (--config, else ./agnogo.yaml when
it exists), else ` + defaultDB + `.

It is idempotent and non-destructive: a second run does nothing, no column is
dropped, and runs that Agno 2.x kept inside agno_sessions.runs are copied into
agno_runs while the old column stays as a backup. Once you have checked the
result (and kept a backup), --cleanup-legacy-runs --force drops that column.`,
		Example: `  agnogo migrate
  agnogo migrate --config /etc/agnogo/agnogo.yaml
  agnogo migrate --db postgres://agno@localhost:5432/agno --json
  agnogo migrate --db sqlite:///var/lib/agnogo.db --target 3.0.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.runMigrate(cmd, flags)
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.config, "config", "", "config file (YAML) whose db to migrate; defaults to ./agnogo.yaml when it exists")
	f.StringVar(&flags.db, "db", "", "database URL, overriding the config's db: sqlite://PATH or postgres://user:pass@host:5432/db (default "+defaultDB+")")
	f.StringVar(&flags.target, "target", "", "schema version to migrate to, such as 3.0.0 (default: the newest this build writes)")
	f.StringVar(&flags.schema, "schema", "ai", "PostgreSQL schema that holds the tables")
	f.BoolVar(&flags.json, "json", false, "print one JSON report on stdout instead of progress lines")
	f.BoolVar(&flags.cleanupLegacyRuns, "cleanup-legacy-runs", false, "after migrating, drop the legacy agno_sessions.runs column (refused while sessions still hold runs, unless --force)")
	f.BoolVar(&flags.force, "force", false, "with --cleanup-legacy-runs: drop the column even though sessions still hold legacy runs")
	return cmd
}

func (c *cli) runMigrate(cmd *cobra.Command, flags migrateFlags) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	if flags.force && !flags.cleanupLegacyRuns {
		return usagef("--force only applies to --cleanup-legacy-runs")
	}
	if flags.target != "" {
		if err := migrate.ParseVersion(flags.target); err != nil {
			return usagef("--target: %v; leave --target out to migrate to the newest schema", err)
		}
	}
	file, err := loadRunConfig(flags.config)
	if err != nil {
		return err
	}
	dbURL := cmp.Or(flags.db, file.DB, config.DefaultDB)
	target, err := dburl.Parse(dbURL)
	if err != nil {
		if flags.db == "" {
			return usagef("%s: db: %v", file.Source, err)
		}
		return usagef("--db: %v", err)
	}
	if target.Kind != dburl.Postgres && cmd.Flags().Changed("schema") {
		return usagef("--schema applies to postgres:// databases only")
	}

	store, err := dburl.Open(ctx, dbURL, dburl.Options{Schema: flags.schema, SkipSchemaCheck: true})
	if errors.Is(err, storage.ErrInvalid) {
		return &usageError{err: err}
	}
	result := migrateResult{Database: target.String(), Target: flags.target, Tables: []migrate.TableReport{}}
	if err != nil {
		return c.finishMigrate(out, flags, &result, err)
	}
	defer store.Close()

	tables := store.Tables()
	newest := newestVersion(tables)
	if flags.target != "" && migrate.CompareVersions(flags.target, newest) > 0 {
		return usagef("--target %s is newer than the newest schema this build writes (%s)", flags.target, newest)
	}
	if result.Target == "" {
		result.Target = newest
	}

	progress := func(migrate.TableReport) {}
	if !flags.json {
		fmt.Fprintf(out, "migrating %s to %s\n", result.Database, describeTarget(flags.target, newest))
		progress = func(report migrate.TableReport) {
			if line := tableLine(report, flags.target, tables); line != "" {
				fmt.Fprintln(out, line)
			}
		}
	}
	started := time.Now()
	reports, err := migrate.Up(ctx, store, migrate.Options{Target: flags.target, Progress: progress})
	result.Tables = append(result.Tables, reports...)
	if err != nil {
		return c.finishMigrate(out, flags, &result, err)
	}
	if !flags.json {
		fmt.Fprintln(out, summaryLine(reports, time.Since(started), flags.cleanupLegacyRuns))
	}

	if flags.cleanupLegacyRuns {
		dropped, err := migrate.CleanupLegacyRuns(ctx, store, flags.force)
		if err != nil {
			if errors.Is(err, storage.ErrInvalid) && !flags.force {
				err = fmt.Errorf("%w (add --force to drop it anyway)", err)
			}
			return c.finishMigrate(out, flags, &result, err)
		}
		result.LegacyRunsDropped = &dropped
		if !flags.json {
			if dropped {
				fmt.Fprintln(out, "dropped the legacy agno_sessions.runs column")
			} else {
				fmt.Fprintln(out, "no legacy agno_sessions.runs column to drop")
			}
		}
	}
	return c.finishMigrate(out, flags, &result, nil)
}

// finishMigrate prints the JSON report when asked for and returns err.
func (c *cli) finishMigrate(out io.Writer, flags migrateFlags, result *migrateResult, err error) error {
	if !flags.json {
		return err
	}
	if err != nil {
		result.Error = err.Error()
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if encErr := enc.Encode(result); encErr != nil && err == nil {
		return encErr
	}
	return err
}

// newestVersion is the newest schema version among tables.
func newestVersion(tables []migrate.Table) string {
	newest := ""
	for _, table := range tables {
		if newest == "" || migrate.CompareVersions(table.Version, newest) > 0 {
			newest = table.Version
		}
	}
	return newest
}

func describeTarget(target, newest string) string {
	if target == "" {
		return "the newest schema (" + newest + ")"
	}
	return target
}

// tableLine renders one finished table, or "" for a table just starting.
func tableLine(report migrate.TableReport, target string, tables []migrate.Table) string {
	var what string
	switch {
	case report.Action == migrate.ActionFailed:
		what = fmt.Sprintf("%-15s-> %s", "failed", report.To)
	case report.Action == migrate.ActionCreated:
		what = fmt.Sprintf("%-15s-> %s", "created", report.To)
	case report.Action == migrate.ActionMigrated:
		what = fmt.Sprintf("migrated %s -> %s", report.From, report.To)
	case report.Action == migrate.ActionUpToDate:
		what = "up to date " + report.To
	case report.Action == migrate.ActionSkipped:
		what = fmt.Sprintf("skipped (target %s older than %s, the version it is created at)", target, tableVersion(tables, report.Table))
	default:
		return ""
	}
	if report.ImportedRuns > 0 {
		what += fmt.Sprintf(" (imported %d legacy %s)", report.ImportedRuns, plural(report.ImportedRuns, "run", "runs"))
	}
	return fmt.Sprintf("%-18s %s", report.Table, what)
}

func tableVersion(tables []migrate.Table, name string) string {
	for _, table := range tables {
		if table.Name == name {
			return table.Version
		}
	}
	return "?"
}

// summaryLine is the last progress line of a successful migration.
func summaryLine(reports []migrate.TableReport, took time.Duration, cleaningUp bool) string {
	counts := map[migrate.Action]int{}
	imported := 0
	for _, report := range reports {
		counts[report.Action]++
		imported += report.ImportedRuns
	}
	if counts[migrate.ActionCreated]+counts[migrate.ActionMigrated] == 0 {
		return "done: already up to date"
	}
	var parts []string
	for _, action := range []migrate.Action{migrate.ActionCreated, migrate.ActionMigrated, migrate.ActionUpToDate, migrate.ActionSkipped} {
		if n := counts[action]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(string(action), "_", " ")))
		}
	}
	line := fmt.Sprintf("done in %s: %s", took.Round(time.Millisecond), strings.Join(parts, ", "))
	if imported > 0 {
		line += fmt.Sprintf("; imported %d legacy %s", imported, plural(imported, "run", "runs"))
		if !cleaningUp {
			line += " (agno_sessions.runs is kept as a backup; drop it later with --cleanup-legacy-runs --force)"
		}
	}
	return line
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
