package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/migrate"
)

// Tables implements [migrate.Driver]: the managed tables in migration order.
func (s *Store) Tables() []migrate.Table {
	return []migrate.Table{
		// A sessions table Agno created lacks agnogo's update_count.
		{Name: SessionsTable, Version: "3.0.0", Steps: []migrate.Step{
			{Version: "3.0.0", Description: "add update_count column when missing"},
		}},
		// Created by 3.0.0, which imports the runs Agno 2.x kept in the
		// sessions' runs column; the import also runs for a runs table that
		// exists without a stamp.
		{Name: RunsTable, Version: "3.0.0", Steps: []migrate.Step{
			{Version: "3.0.0", Description: "import legacy runs from agno_sessions.runs"},
		}},
		{Name: MemoriesTable, Version: "3.0.0", Steps: []migrate.Step{
			{Version: "3.0.0", Description: "add created_at and feedback columns when missing"},
		}},
		{Name: MetricsTable, Version: "3.0.0", Steps: []migrate.Step{
			{Version: "3.0.0", Description: "scope metrics by user: user_id NOT NULL DEFAULT '' and UNIQUE (user_id, date, aggregation_period)"},
		}},
		{Name: TranscriptsTable, Version: "3.1.0"},
		{Name: ToolResultsTable, Version: "3.0.0"},
		// A traces table Agno created lacks agnogo's name_level.
		{Name: TracesTable, Version: "3.0.0", Steps: []migrate.Step{
			{Version: "3.0.0", Description: "add name_level column when missing"},
		}},
		{Name: SpansTable, Version: "3.0.0"},
		// A schedules table Agno 2.x created lacks the owner and
		// provenance columns, and may hold names that 3.0.0 makes unique.
		{Name: SchedulesTable, Version: "3.0.0", Steps: []migrate.Step{
			{Version: "3.0.0", Description: "add user_id and provenance columns when missing; refuse duplicate names"},
		}},
		// A schedule runs table Agno created lacks agnogo's lease columns
		// (and, from 2.x, user_id).
		{Name: ScheduleRunsTable, Version: "3.0.0", Steps: []migrate.Step{
			{Version: "3.0.0", Description: "add user_id, locked_by and locked_at columns when missing"},
		}},
		{Name: ApprovalsTable, Version: "3.0.0"},
		{Name: ServiceAccountsTable, Version: "3.0.0"},
	}
}

// TableState implements [migrate.Driver].
func (s *Store) TableState(ctx context.Context, table string) (migrate.State, error) {
	var state migrate.State
	reader := s.db.Reader()
	exists, err := s.tableExists(ctx, reader, table)
	if err != nil {
		return state, fmt.Errorf("probe table %s: %w", table, err)
	}
	state.Exists = exists
	hasVersions, err := s.tableExists(ctx, reader, SchemaVersionsTable)
	if err != nil || !hasVersions {
		return state, err
	}
	err = reader.QueryRow(ctx, fmt.Sprintf("SELECT version FROM %s WHERE table_name = ?", s.tables.versions), table).Scan(&state.Stamped)
	if err != nil && !errors.Is(err, ErrNoRows) {
		return state, fmt.Errorf("read schema version of %s: %w", table, err)
	}
	return state, nil
}

// MigrateTable implements [migrate.Driver].
func (s *Store) MigrateTable(ctx context.Context, table string, plan migrate.Plan) (migrate.Outcome, error) {
	var outcome migrate.Outcome
	err := s.db.InTx(ctx, func(tx Conn) error {
		if s.dialect == Postgres {
			if _, err := tx.Exec(ctx, fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %q", s.tables.schema)); err != nil {
				return err
			}
		}
		if err := s.execAll(ctx, tx, s.ddl(SchemaVersionsTable)); err != nil {
			return err
		}
		if plan.Create {
			if err := s.execAll(ctx, tx, s.ddl(table)); err != nil {
				return &migrate.StepError{Table: table, Version: plan.Stamp, Err: err}
			}
			if table == RunsTable {
				// A new runs table starts with whatever the sessions held.
				if err := s.applyStep(ctx, tx, table, "3.0.0", &outcome); err != nil {
					return &migrate.StepError{Table: table, Version: plan.Stamp, Err: err}
				}
			}
		}
		for _, step := range plan.Steps {
			if err := s.applyStep(ctx, tx, table, step.Version, &outcome); err != nil {
				return &migrate.StepError{Table: table, Version: step.Version, Err: err}
			}
		}
		if !plan.Create && plan.Stamp == s.currentVersion(table) {
			// A table brought to the current shape gets the indexes this
			// build queries by.
			if err := s.execAll(ctx, tx, s.ddl(table)); err != nil {
				return &migrate.StepError{Table: table, Version: plan.Stamp, Err: err}
			}
		}
		stamp := time.Now().UTC().Format(time.RFC3339)
		_, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (table_name, version, created_at, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (table_name) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`, s.tables.versions), table, plan.Stamp, stamp, stamp)
		return err
	})
	return outcome, err
}

// currentVersion is the version this build writes for table.
func (s *Store) currentVersion(table string) string {
	for _, t := range s.Tables() {
		if t.Name == table {
			return t.Version
		}
	}
	return ""
}

// applyStep runs one upgrade step of one table.
func (s *Store) applyStep(ctx context.Context, tx Conn, table, version string, outcome *migrate.Outcome) error {
	switch {
	case table == SessionsTable && version == "3.0.0":
		return s.addColumnIfMissing(ctx, tx, SessionsTable, s.tables.sessions, "update_count", "BIGINT NOT NULL DEFAULT 0")
	case table == RunsTable && version == "3.0.0":
		imported, err := s.importLegacyRuns(ctx, tx)
		outcome.ImportedRuns += imported
		if err != nil {
			return fmt.Errorf("import legacy runs: %w", err)
		}
		return nil
	case table == MemoriesTable && version == "3.0.0":
		for column, def := range map[string]string{"created_at": "BIGINT", "feedback": "VARCHAR"} {
			if err := s.addColumnIfMissing(ctx, tx, MemoriesTable, s.tables.memories, column, def); err != nil {
				return err
			}
		}
		return nil
	case table == TracesTable && version == "3.0.0":
		return s.addColumnIfMissing(ctx, tx, TracesTable, s.tables.traces, "name_level", "INTEGER NOT NULL DEFAULT 0")
	case table == SchedulesTable && version == "3.0.0":
		return s.upgradeSchedules(ctx, tx)
	case table == ScheduleRunsTable && version == "3.0.0":
		for _, column := range []struct{ name, def string }{{"user_id", "VARCHAR"}, {"locked_by", "VARCHAR"}, {"locked_at", "BIGINT"}} {
			if err := s.addColumnIfMissing(ctx, tx, ScheduleRunsTable, s.tables.scheduleRuns, column.name, column.def); err != nil {
				return err
			}
		}
		return nil
	case table == MetricsTable && version == "3.0.0":
		if s.dialect == Postgres {
			return s.scopeMetricsByUserPostgres(ctx, tx)
		}
		return s.rebuildMetricsSQLite(ctx, tx)
	}
	return fmt.Errorf("no step %s for table %s", version, table)
}

// scheduleColumnsSince300 are the agno_schedules columns a table Agno 2.x
// created may lack, with their types.
var scheduleColumnsSince300 = []struct{ name, def string }{
	{"locked_by", "VARCHAR"}, {"locked_at", "BIGINT"}, {"user_id", "VARCHAR"}, {"managed_by", "VARCHAR"}, {"target_type", "VARCHAR"},
	{"target_id", "VARCHAR"}, {"created_by_run_id", "VARCHAR"}, {"created_by_session_id", "VARCHAR"}, {"updated_by_run_id", "VARCHAR"},
	{"updated_by_session_id", "VARCHAR"}, {"disabled_reason", "VARCHAR"},
}

// upgradeSchedules brings a schedules table Agno created to 3.0.0: it adds
// the owner and provenance columns it lacks, and refuses a table where one
// owner (or no owner) uses a name twice, which the unique indexes of 3.0.0
// forbid: which of the two to rename is the operator's choice, not the
// migration's.
func (s *Store) upgradeSchedules(ctx context.Context, tx Conn) error {
	for _, column := range scheduleColumnsSince300 {
		if err := s.addColumnIfMissing(ctx, tx, SchedulesTable, s.tables.schedules, column.name, column.def); err != nil {
			return err
		}
	}
	duplicates, err := queryStringsOn(ctx, tx, fmt.Sprintf("SELECT DISTINCT name FROM %s GROUP BY user_id, name HAVING COUNT(*) > 1 ORDER BY name", s.tables.schedules))
	if err != nil {
		return fmt.Errorf("find duplicate schedule names: %w", err)
	}
	if len(duplicates) > 0 {
		return fmt.Errorf("%w: schedule names used twice by one owner: '%s'; rename or delete the duplicates, then migrate again",
			storage.ErrInvalid, strings.Join(duplicates, "', '"))
	}
	return nil
}

func (s *Store) execAll(ctx context.Context, tx Conn, statements []string) error {
	for _, stmt := range statements {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) tableExists(ctx context.Context, conn Conn, table string) (bool, error) {
	var n int
	var err error
	if s.dialect == Postgres {
		err = conn.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?", s.tables.schema, table).Scan(&n)
	} else {
		err = conn.QueryRow(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&n)
	}
	return n > 0, err
}

// columns lists a table's column names.
func (s *Store) columns(ctx context.Context, conn Conn, table string) (map[string]bool, error) {
	query, args := "SELECT name FROM pragma_table_info(?)", []any{table}
	if s.dialect == Postgres {
		query, args = "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ?", []any{s.tables.schema, table}
	}
	names, err := queryStringsOn(ctx, conn, query, args...)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	set := make(map[string]bool, len(names))
	for _, name := range names {
		set[name] = true
	}
	return set, nil
}

func (s *Store) addColumnIfMissing(ctx context.Context, tx Conn, table, qualified, column, definition string) error {
	cols, err := s.columns(ctx, tx, table)
	if err != nil || cols[column] {
		return err
	}
	_, err = tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", qualified, column, definition))
	return err
}

// scopeMetricsByUserPostgres makes user_id a NOT NULL part of the metrics key.
func (s *Store) scopeMetricsByUserPostgres(ctx context.Context, tx Conn) error {
	m := s.tables.metrics
	statements := []string{
		fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS user_id VARCHAR", m),
		fmt.Sprintf("UPDATE %s SET user_id = '' WHERE user_id IS NULL", m),
		fmt.Sprintf("ALTER TABLE %s ALTER COLUMN user_id SET DEFAULT ''", m),
		fmt.Sprintf("ALTER TABLE %s ALTER COLUMN user_id SET NOT NULL", m),
		fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT IF EXISTS uq_metrics_date_period", m),
		fmt.Sprintf("DROP INDEX IF EXISTS %q.uq_metrics_date_period", s.tables.schema),
		fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT IF EXISTS uq_metrics_user_date_period", m),
		fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT uq_metrics_user_date_period UNIQUE (user_id, date, aggregation_period)", m),
	}
	return s.execAll(ctx, tx, statements)
}

// metricsCopyDefaults are the values a rebuilt metrics row takes where the
// old row has NULL or lacks the column.
var metricsCopyDefaults = map[string]string{
	"agent_runs_count": "0", "team_runs_count": "0", "workflow_runs_count": "0",
	"agent_sessions_count": "0", "team_sessions_count": "0", "workflow_sessions_count": "0",
	"users_count": "0", "token_metrics": "'{}'", "model_metrics": "'{}'", "user_id": "''", "completed": "FALSE",
}

// rebuildMetricsSQLite rebuilds the metrics table in its current shape:
// SQLite cannot change a column's nullability or a table's unique key in place.
func (s *Store) rebuildMetricsSQLite(ctx context.Context, tx Conn) error {
	old, err := s.columns(ctx, tx, MetricsTable)
	if err != nil {
		return err
	}
	const tmp = MetricsTable + "__rebuild"
	create := s.ddl(MetricsTable)[0]
	createTmp := strings.Replace(create, "CREATE TABLE IF NOT EXISTS "+s.tables.metrics, "CREATE TABLE "+tmp, 1)
	var into, from []string
	for _, col := range columnsOf(create) {
		def, hasDefault := metricsCopyDefaults[col]
		switch {
		case old[col] && hasDefault:
			into, from = append(into, col), append(from, fmt.Sprintf("COALESCE(%s, %s)", col, def))
		case old[col]:
			into, from = append(into, col), append(from, col)
		case hasDefault:
			into, from = append(into, col), append(from, def)
		default:
			return fmt.Errorf("table %s lacks required column %s", MetricsTable, col)
		}
	}
	return s.execAll(ctx, tx, []string{
		"DROP TABLE IF EXISTS " + tmp,
		createTmp,
		fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s", tmp, strings.Join(into, ", "), strings.Join(from, ", "), s.tables.metrics),
		"DROP TABLE " + s.tables.metrics,
		fmt.Sprintf("ALTER TABLE %s RENAME TO %s", tmp, MetricsTable),
	})
}

// CleanupLegacyRuns implements [migrate.LegacyRunsCleaner].
func (s *Store) CleanupLegacyRuns(ctx context.Context, force bool) (bool, error) {
	dropped := false
	err := s.db.InTx(ctx, func(tx Conn) error {
		cols, err := s.columns(ctx, tx, SessionsTable)
		if err != nil || !cols["runs"] {
			return err
		}
		if !force {
			if err := s.refuseLegacyCleanup(ctx, tx); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DROP COLUMN runs", s.tables.sessions)); err != nil {
			return err
		}
		dropped = true
		s.legacyRunsColumn.Store(false)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("clean up legacy runs: %w", err)
	}
	return dropped, nil
}

// refuseLegacyCleanup returns the reason not to drop the legacy runs column
// while sessions still hold runs there, or nil when none does.
func (s *Store) refuseLegacyCleanup(ctx context.Context, tx Conn) error {
	var holding int
	if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE runs IS NOT NULL", s.tables.sessions)).Scan(&holding); err != nil {
		return err
	}
	if holding == 0 {
		return nil
	}
	missing, err := s.unimportedLegacyRuns(ctx, tx)
	if err != nil {
		return err
	}
	reason := fmt.Sprintf("refusing to drop %s.runs: %d session(s) still hold legacy runs", SessionsTable, holding)
	if missing > 0 {
		return fmt.Errorf("%w: %s, %d of them not yet in %s; run `%s` first", storage.ErrInvalid, reason, missing, RunsTable, s.migrateCommand)
	}
	return fmt.Errorf("%w: %s (all already copied to %s); keep a backup, then force the cleanup", storage.ErrInvalid, reason, RunsTable)
}

// unimportedLegacyRuns counts legacy runs with no row in agno_runs.
func (s *Store) unimportedLegacyRuns(ctx context.Context, tx Conn) (int, error) {
	exists, err := s.tableExists(ctx, tx, RunsTable)
	if err != nil {
		return 0, err
	}
	missing := 0
	for session, err := range s.legacySessions(ctx, tx) {
		if err != nil {
			return 0, err
		}
		for _, raw := range session.runs {
			var ref struct {
				RunID string `json:"run_id"`
			}
			if json.Unmarshal(raw, &ref) != nil || ref.RunID == "" {
				continue
			}
			found := 0
			if exists {
				if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE run_id = ?", s.tables.runs), ref.RunID).Scan(&found); err != nil {
					return 0, err
				}
			}
			if found == 0 {
				missing++
			}
		}
	}
	return missing, nil
}

func queryStringsOn(ctx context.Context, conn Conn, query string, args ...any) ([]string, error) {
	return queryAll(ctx, conn, scanString, query, args...)
}
