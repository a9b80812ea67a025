package sqlstore

import (
	"fmt"
	"strings"
)

// Default table names, as Agno 3.x names them.
const (
	SessionsTable        = "agno_sessions"
	RunsTable            = "agno_runs"
	TranscriptsTable     = "agno_transcripts"
	MemoriesTable        = "agno_memories"
	MetricsTable         = "agno_metrics"
	ToolResultsTable     = "agno_tool_results"
	TracesTable          = "agno_traces"
	SpansTable           = "agno_spans"
	SchedulesTable       = "agno_schedules"
	ScheduleRunsTable    = "agno_schedule_runs"
	ApprovalsTable       = "agno_approvals"
	ServiceAccountsTable = "agno_service_accounts"
	SchemaVersionsTable  = "agno_schema_versions"
)

// tables holds the qualified (schema-prefixed on Postgres) names used in
// statements.
type tables struct {
	schema                                                                string
	sessions, runs, transcripts, memories, metrics, toolResults, versions string
	traces, spans                                                         string
	schedules, scheduleRuns, approvals, serviceAccounts                   string
}

func newTables(d Dialect, schema string) tables {
	q := func(name string) string {
		if d == Postgres {
			return fmt.Sprintf("%q.%s", schema, name)
		}
		return name
	}
	return tables{
		schema:          schema,
		sessions:        q(SessionsTable),
		runs:            q(RunsTable),
		transcripts:     q(TranscriptsTable),
		memories:        q(MemoriesTable),
		metrics:         q(MetricsTable),
		toolResults:     q(ToolResultsTable),
		versions:        q(SchemaVersionsTable),
		traces:          q(TracesTable),
		spans:           q(SpansTable),
		schedules:       q(SchedulesTable),
		scheduleRuns:    q(ScheduleRunsTable),
		approvals:       q(ApprovalsTable),
		serviceAccounts: q(ServiceAccountsTable),
	}
}

// ddl returns the statements that create a table in its current shape, with
// its indexes. Every statement is idempotent.
func (s *Store) ddl(table string) []string {
	t, j := s.tables, s.dialect.jsonType()
	idx := func(name, tableName, cols string) string {
		return fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s)", name, tableName, cols)
	}
	// set indexes the rows where col is set: a query col = ? is served
	// as by a full index, and a write leaves the index alone while col is
	// NULL (an agent run's team_id and workflow_id, a team run's
	// agent_id, the user_id of a run without one).
	set := func(name, tableName, col string) string {
		return fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s) WHERE %[3]s IS NOT NULL", name, tableName, col)
	}
	switch table {
	case SchemaVersionsTable:
		return []string{fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	table_name VARCHAR NOT NULL PRIMARY KEY,
	version VARCHAR NOT NULL,
	created_at VARCHAR NOT NULL,
	updated_at VARCHAR
)`, t.versions)}
	case SessionsTable:
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	session_id VARCHAR NOT NULL PRIMARY KEY,
	session_type VARCHAR NOT NULL,
	agent_id VARCHAR,
	team_id VARCHAR,
	workflow_id VARCHAR,
	user_id VARCHAR,
	session_data %[2]s,
	agent_data %[2]s,
	team_data %[2]s,
	workflow_data %[2]s,
	metadata %[2]s,
	summary %[2]s,
	created_at BIGINT NOT NULL,
	updated_at BIGINT,
	update_count BIGINT NOT NULL DEFAULT 0
)`, t.sessions, j),
			idx("idx_agno_sessions_session_type", t.sessions, "session_type"),
			idx("idx_agno_sessions_created_at", t.sessions, "created_at"),
			idx("idx_agno_sessions_user_id", t.sessions, "user_id"),
		}
	case RunsTable:
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	run_id VARCHAR NOT NULL PRIMARY KEY,
	session_id VARCHAR NOT NULL REFERENCES %s (session_id) ON DELETE CASCADE,
	run_type VARCHAR,
	agent_id VARCHAR,
	team_id VARCHAR,
	workflow_id VARCHAR,
	user_id VARCHAR,
	status VARCHAR,
	parent_run_id VARCHAR,
	run_index BIGINT,
	run_data %s NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT
)`, t.runs, t.sessions, j),
			// Also serves lookups by session_id alone (and the cascade).
			idx("idx_agno_runs_session_run_index", t.runs, "session_id, run_index"),
			idx("idx_agno_runs_run_type", t.runs, "run_type"),
			set("idx_agno_runs_agent_id", t.runs, "agent_id"),
			set("idx_agno_runs_team_id", t.runs, "team_id"),
			set("idx_agno_runs_workflow_id", t.runs, "workflow_id"),
			set("idx_agno_runs_user_id", t.runs, "user_id"),
			idx("idx_agno_runs_status", t.runs, "status"),
			idx("idx_agno_runs_created_at", t.runs, "created_at"),
		}
	case TranscriptsTable:
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	framework VARCHAR NOT NULL,
	project_key VARCHAR NOT NULL,
	session_id VARCHAR NOT NULL,
	subpath VARCHAR NOT NULL DEFAULT '',
	position BIGINT NOT NULL,
	entry_id VARCHAR NOT NULL,
	entry TEXT NOT NULL,
	agno_session_id VARCHAR,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (framework, project_key, session_id, subpath, position)
)`, t.transcripts),
			idx("idx_agno_transcripts_agno_session_id", t.transcripts, "agno_session_id"),
		}
	case MemoriesTable:
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	memory_id VARCHAR NOT NULL PRIMARY KEY,
	memory %[2]s NOT NULL,
	input VARCHAR,
	agent_id VARCHAR,
	team_id VARCHAR,
	user_id VARCHAR,
	topics %[2]s,
	feedback VARCHAR,
	created_at BIGINT,
	updated_at BIGINT
)`, t.memories, j),
			idx("idx_agno_memories_user_id", t.memories, "user_id"),
			idx("idx_agno_memories_updated_at", t.memories, "updated_at"),
		}
	case ToolResultsTable:
		// content is agnogo's addition: the result itself lives in the row
		// instead of a separate file store.
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	result_id VARCHAR NOT NULL PRIMARY KEY,
	namespace VARCHAR NOT NULL,
	path VARCHAR NOT NULL,
	session_id VARCHAR,
	run_id VARCHAR,
	tool_call_id VARCHAR,
	tool_name VARCHAR,
	args_hash VARCHAR,
	content_type VARCHAR,
	size_bytes BIGINT NOT NULL,
	line_count BIGINT NOT NULL,
	preview TEXT,
	user_id VARCHAR,
	created_at BIGINT NOT NULL,
	expires_at BIGINT,
	content TEXT NOT NULL,
	CONSTRAINT uq_tool_results_namespace_path UNIQUE (namespace, path)
)`, t.toolResults),
			idx("idx_agno_tool_results_session_created", t.toolResults, "session_id, created_at"),
			idx("idx_agno_tool_results_expires_at", t.toolResults, "expires_at"),
		}
	case TracesTable:
		// Times are ISO-8601 text in UTC with microseconds
		// (2026-12-02T14:04:36.123456+00:00), as Agno writes them, so they
		// sort as text. name_level is agnogo's addition: the level of the
		// span that named the trace (see storage.TraceWrite).
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	trace_id VARCHAR NOT NULL PRIMARY KEY,
	name VARCHAR NOT NULL,
	status VARCHAR NOT NULL,
	start_time VARCHAR NOT NULL,
	end_time VARCHAR NOT NULL,
	duration_ms BIGINT NOT NULL,
	run_id VARCHAR,
	session_id VARCHAR,
	user_id VARCHAR,
	agent_id VARCHAR,
	team_id VARCHAR,
	workflow_id VARCHAR,
	created_at VARCHAR NOT NULL,
	name_level INTEGER NOT NULL DEFAULT 0
)`, t.traces),
			idx("idx_agno_traces_status", t.traces, "status"),
			idx("idx_agno_traces_start_time", t.traces, "start_time"),
			idx("idx_agno_traces_run_id", t.traces, "run_id"),
			idx("idx_agno_traces_session_id", t.traces, "session_id"),
			idx("idx_agno_traces_user_id", t.traces, "user_id"),
			idx("idx_agno_traces_agent_id", t.traces, "agent_id"),
			idx("idx_agno_traces_team_id", t.traces, "team_id"),
			idx("idx_agno_traces_workflow_id", t.traces, "workflow_id"),
			idx("idx_agno_traces_created_at", t.traces, "created_at"),
		}
	case SpansTable:
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	span_id VARCHAR NOT NULL PRIMARY KEY,
	trace_id VARCHAR NOT NULL REFERENCES %s (trace_id) ON DELETE CASCADE,
	parent_span_id VARCHAR,
	name VARCHAR NOT NULL,
	span_kind VARCHAR NOT NULL,
	status_code VARCHAR NOT NULL,
	status_message TEXT,
	start_time VARCHAR NOT NULL,
	end_time VARCHAR NOT NULL,
	duration_ms BIGINT NOT NULL,
	attributes %s,
	created_at VARCHAR NOT NULL
)`, t.spans, t.traces, j),
			// Serves a trace's spans (and the cascade), and counts a
			// trace's spans and errors from the index alone.
			idx("idx_agno_spans_trace_id_status_code", t.spans, "trace_id, status_code"),
			idx("idx_agno_spans_parent_span_id", t.spans, "parent_span_id"),
		}
	case SchedulesTable:
		// The partial unique indexes keep a name unique per owner, and
		// among the unowned schedules: a NULL user_id never equals another.
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	id VARCHAR NOT NULL PRIMARY KEY,
	name VARCHAR NOT NULL,
	description TEXT,
	method VARCHAR NOT NULL,
	endpoint VARCHAR NOT NULL,
	payload %s,
	cron_expr VARCHAR NOT NULL,
	timezone VARCHAR NOT NULL,
	timeout_seconds BIGINT,
	max_retries BIGINT,
	retry_delay_seconds BIGINT,
	enabled BOOLEAN NOT NULL DEFAULT TRUE,
	next_run_at BIGINT,
	locked_by VARCHAR,
	locked_at BIGINT,
	user_id VARCHAR,
	managed_by VARCHAR,
	target_type VARCHAR,
	target_id VARCHAR,
	created_by_run_id VARCHAR,
	created_by_session_id VARCHAR,
	updated_by_run_id VARCHAR,
	updated_by_session_id VARCHAR,
	disabled_reason VARCHAR,
	created_at BIGINT NOT NULL,
	updated_at BIGINT
)`, t.schedules, j),
			idx("idx_agno_schedules_name", t.schedules, "name"),
			idx("idx_agno_schedules_next_run_at", t.schedules, "next_run_at"),
			idx("idx_agno_schedules_user_id", t.schedules, "user_id"),
			idx("idx_agno_schedules_managed_by", t.schedules, "managed_by"),
			idx("idx_agno_schedules_target_id", t.schedules, "target_id"),
			idx("idx_agno_schedules_created_at", t.schedules, "created_at"),
			idx("idx_agno_schedules_enabled_next_run_at", t.schedules, "enabled, next_run_at"),
			idx("idx_agno_schedules_user_enabled_next_run_at", t.schedules, "user_id, enabled, next_run_at"),
			fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS uq_user_name ON %s (user_id, name) WHERE user_id IS NOT NULL", t.schedules),
			fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS uq_unowned_name ON %s (name) WHERE user_id IS NULL", t.schedules),
		}
	case ScheduleRunsTable:
		// locked_by and locked_at are agnogo's additions: the lease of a
		// running attempt to the scheduler executing it.
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	id VARCHAR NOT NULL PRIMARY KEY,
	schedule_id VARCHAR NOT NULL REFERENCES %s (id) ON DELETE CASCADE,
	attempt BIGINT,
	triggered_at BIGINT,
	completed_at BIGINT,
	status VARCHAR NOT NULL,
	status_code BIGINT,
	run_id VARCHAR,
	session_id VARCHAR,
	error TEXT,
	input %[3]s,
	output %[3]s,
	requirements %[3]s,
	user_id VARCHAR,
	created_at BIGINT NOT NULL,
	locked_by VARCHAR,
	locked_at BIGINT
)`, t.scheduleRuns, t.schedules, j),
			// Also serves lookups by schedule_id alone (and the cascade).
			idx("idx_agno_schedule_runs_schedule_id_created_at", t.scheduleRuns, "schedule_id, created_at"),
			idx("idx_agno_schedule_runs_status_triggered_at", t.scheduleRuns, "status, triggered_at"),
			idx("idx_agno_schedule_runs_user_id", t.scheduleRuns, "user_id"),
			idx("idx_agno_schedule_runs_created_at", t.scheduleRuns, "created_at"),
		}
	case ApprovalsTable:
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	id VARCHAR NOT NULL PRIMARY KEY,
	run_id VARCHAR NOT NULL,
	session_id VARCHAR,
	status VARCHAR NOT NULL,
	source_type VARCHAR,
	source_name VARCHAR,
	approval_type VARCHAR,
	pause_type VARCHAR,
	tool_name VARCHAR,
	tool_args %[2]s,
	expires_at BIGINT,
	agent_id VARCHAR,
	team_id VARCHAR,
	workflow_id VARCHAR,
	user_id VARCHAR,
	schedule_id VARCHAR,
	schedule_run_id VARCHAR,
	requirements %[2]s,
	context %[2]s,
	resolution_data %[2]s,
	resolved_by VARCHAR,
	resolved_at BIGINT,
	created_at BIGINT NOT NULL,
	updated_at BIGINT,
	run_status VARCHAR
)`, t.approvals, j),
			idx("idx_agno_approvals_run_id", t.approvals, "run_id"),
			idx("idx_agno_approvals_session_id", t.approvals, "session_id"),
			idx("idx_agno_approvals_status", t.approvals, "status"),
			idx("idx_agno_approvals_source_type", t.approvals, "source_type"),
			idx("idx_agno_approvals_approval_type", t.approvals, "approval_type"),
			idx("idx_agno_approvals_pause_type", t.approvals, "pause_type"),
			idx("idx_agno_approvals_agent_id", t.approvals, "agent_id"),
			idx("idx_agno_approvals_team_id", t.approvals, "team_id"),
			idx("idx_agno_approvals_workflow_id", t.approvals, "workflow_id"),
			idx("idx_agno_approvals_user_id", t.approvals, "user_id"),
			idx("idx_agno_approvals_schedule_id", t.approvals, "schedule_id"),
			idx("idx_agno_approvals_schedule_run_id", t.approvals, "schedule_run_id"),
			idx("idx_agno_approvals_created_at", t.approvals, "created_at"),
			idx("idx_agno_approvals_run_status", t.approvals, "run_status"),
			// Serves the sweep of expired approvals.
			idx("idx_agno_approvals_status_expires_at", t.approvals, "status, expires_at"),
		}
	case ServiceAccountsTable:
		// Only the token's SHA-256 is kept; an unrevoked account's name is
		// unique, and a revoked one's may be reused.
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	id VARCHAR NOT NULL PRIMARY KEY,
	name VARCHAR NOT NULL,
	user_id VARCHAR,
	token_hash VARCHAR NOT NULL,
	token_prefix VARCHAR,
	scopes %s,
	created_at BIGINT NOT NULL,
	expires_at BIGINT,
	last_used_at BIGINT,
	revoked_at BIGINT,
	created_by VARCHAR
)`, t.serviceAccounts, j),
			fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS idx_agno_service_accounts_token_hash ON %s (token_hash)", t.serviceAccounts),
			idx("idx_agno_service_accounts_user_id", t.serviceAccounts, "user_id"),
			idx("idx_agno_service_accounts_created_at", t.serviceAccounts, "created_at"),
			fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS uq_active_name ON %s (name) WHERE revoked_at IS NULL", t.serviceAccounts),
		}
	case MetricsTable:
		return []string{
			fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	id VARCHAR NOT NULL PRIMARY KEY,
	agent_runs_count BIGINT NOT NULL DEFAULT 0,
	team_runs_count BIGINT NOT NULL DEFAULT 0,
	workflow_runs_count BIGINT NOT NULL DEFAULT 0,
	agent_sessions_count BIGINT NOT NULL DEFAULT 0,
	team_sessions_count BIGINT NOT NULL DEFAULT 0,
	workflow_sessions_count BIGINT NOT NULL DEFAULT 0,
	users_count BIGINT NOT NULL DEFAULT 0,
	token_metrics %[2]s NOT NULL DEFAULT '{}',
	model_metrics %[2]s NOT NULL DEFAULT '{}',
	date DATE NOT NULL,
	aggregation_period VARCHAR NOT NULL,
	user_id VARCHAR NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	updated_at BIGINT,
	completed BOOLEAN NOT NULL DEFAULT FALSE,
	CONSTRAINT uq_metrics_user_date_period UNIQUE (user_id, date, aggregation_period)
)`, t.metrics, j),
			idx("idx_agno_metrics_date", t.metrics, "date"),
			idx("idx_agno_metrics_user_id", t.metrics, "user_id"),
			// The pending rows Postgres folds in (see [Store.CompactMetrics]):
			// the fold finds them without reading every day's row.
			fmt.Sprintf("CREATE INDEX IF NOT EXISTS idx_agno_metrics_pending ON %s (id) WHERE %s", t.metrics, pendingRows),
		}
	}
	panic(fmt.Sprintf("sqlstore: no DDL for table %q", table)) // a programming error: tableSpecs and ddl disagree
}

// columnsOf extracts the column list of a CREATE TABLE statement, for the
// SQLite table rebuild that copies rows between shapes.
func columnsOf(createTable string) []string {
	body := createTable[strings.Index(createTable, "(")+1 : strings.LastIndex(createTable, ")")]
	var cols []string
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "CONSTRAINT") || strings.HasPrefix(line, "PRIMARY KEY") {
			continue
		}
		cols = append(cols, strings.Fields(line)[0])
	}
	return cols
}
