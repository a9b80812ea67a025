package sqlite_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// growingTables are the tables whose rows accumulate with use: a statement
// a turn or a request runs must never read one whole.
var growingTables = map[string]bool{
	sqlstore.SessionsTable: true, sqlstore.RunsTable: true, sqlstore.TranscriptsTable: true, sqlstore.MemoriesTable: true,
	sqlstore.MetricsTable: true, sqlstore.ToolResultsTable: true, sqlstore.TracesTable: true, sqlstore.SpansTable: true,
	sqlstore.SchedulesTable: true, sqlstore.ScheduleRunsTable: true, sqlstore.ApprovalsTable: true, sqlstore.ServiceAccountsTable: true,
}

var (
	// tableAlias finds the aliases a statement gives tables (agno_runs AS
	// o): EXPLAIN QUERY PLAN names an aliased table by its alias.
	tableAlias = regexp.MustCompile(`(?i)\b(agno_\w+)\s+AS\s+(\w+)\b`)
	// planScan is a plan step that reads every row of what it names, a
	// table (through the table or one of its indexes), a CTE or a
	// subquery's result; SEARCH is a lookup through an index.
	planScan = regexp.MustCompile(`^SCAN (\S+)`)
)

// fullScans returns the lines of an EXPLAIN QUERY PLAN of query that read a
// growing table whole.
func fullScans(query, plan string) []string {
	tables := map[string]bool{}
	for table := range growingTables {
		tables[table] = true
	}
	for _, m := range tableAlias.FindAllStringSubmatch(query, -1) {
		if growingTables[m[1]] {
			tables[m[2]] = true
		}
	}
	var scans []string
	for line := range strings.SplitSeq(plan, "\n") {
		line = strings.TrimSpace(line)
		if m := planScan.FindStringSubmatch(line); m != nil && tables[m[1]] {
			scans = append(scans, line)
		}
	}
	return scans
}

// TestExplainHotQueriesUseIndexes has SQLite plan every statement a run
// turn or an AgentOS request runs: none may scan a table that grows with
// use, so that a save or a turn costs the same with a million runs stored
// as with ten.
func TestExplainHotQueriesUseIndexes(t *testing.T) {
	store, _ := openTemp(t)
	queries, err := store.PlanHotQueries(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, queries)
	for _, q := range queries {
		if scans := fullScans(q.SQL, q.Plan); len(scans) > 0 {
			t.Errorf("%s reads a whole growing table (%s)\nstatement:\n%s\nplan:\n%s", q.Name, strings.Join(scans, "; "), q.SQL, q.Plan)
		}
		// The runs of one session are found through the session's index,
		// not through one that holds every run of a status or of a user.
		if strings.HasPrefix(q.Name, "GetRuns of a session") && !strings.Contains(q.Plan, "idx_agno_runs_session_run_index") {
			t.Errorf("%s does not go through the session's runs\nstatement:\n%s\nplan:\n%s", q.Name, q.SQL, q.Plan)
		}
	}
}

// TestExplainCatchesAFullScan makes sure the check above sees a scan: a
// condition on a column no index holds reads the whole table, under its
// name or its alias, while an indexed lookup does not.
func TestExplainCatchesAFullScan(t *testing.T) {
	store, _ := openTemp(t)
	for query, scans := range map[string]bool{
		"SELECT run_id FROM agno_runs WHERE parent_run_id = ?":                                                           true,
		"SELECT o.run_id FROM agno_sessions AS s JOIN agno_runs AS o ON o.session_id = s.session_id WHERE s.summary = ?": true,
		"SELECT run_id FROM agno_runs WHERE session_id = ? ORDER BY run_index DESC LIMIT 1":                              false,
	} {
		plan, err := store.Explain(t.Context(), sqlstore.HotQuery{Name: query, SQL: query, Args: []any{"x"}})
		require.NoError(t, err)
		require.Equal(t, scans, len(fullScans(query, plan)) > 0, "%s\nplan:\n%s", query, plan)
	}
}
