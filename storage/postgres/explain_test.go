package postgres

import (
	"encoding/json"
	"fmt"
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

// selective are partial indexes that hold only the rows their statement
// reads: walking one whole reads no other row.
var selective = map[string]bool{"idx_agno_metrics_pending": true}

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan, with what tells how
// it reads a table.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	IndexCond    string     `json:"Index Cond"`
	Plans        []planNode `json:"Plans"`
}

// fullScans returns the nodes of an EXPLAIN (FORMAT JSON) plan that read a
// growing table whole: a Seq Scan, or an index scan with no condition on
// the index, which walks every entry.
func fullScans(t *testing.T, plan string) []string {
	t.Helper()
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal([]byte(plan), &doc), plan)
	require.NotEmpty(t, doc, plan)
	var scans []string
	var walk func(n planNode)
	walk = func(n planNode) {
		if growingTables[n.RelationName] {
			switch {
			case n.NodeType == "Seq Scan":
				scans = append(scans, "Seq Scan on "+n.RelationName)
			case (n.NodeType == "Index Scan" || n.NodeType == "Index Only Scan") && n.IndexCond == "" && !selective[n.IndexName]:
				scans = append(scans, fmt.Sprintf("%s of all of %s using %s", n.NodeType, n.RelationName, n.IndexName))
			}
		}
		for _, child := range n.Plans {
			walk(child)
		}
	}
	walk(doc[0].Plan)
	return scans
}

// TestExplainHotQueriesUseIndexes has Postgres plan every statement a run
// turn or an AgentOS request runs: none may scan a table that grows with
// use, so that a save or a turn costs the same with a million runs stored
// as with ten. Plans are made with sequential scans disabled (see
// [sqlstore.Store.Explain]): a tiny test table still shows whether an index
// can serve the statement.
func TestExplainHotQueriesUseIndexes(t *testing.T) {
	store, _ := openTemp(t)
	queries, err := store.PlanHotQueries(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, queries)
	for _, q := range queries {
		if scans := fullScans(t, q.Plan); len(scans) > 0 {
			t.Errorf("%s reads a whole growing table (%s)\nstatement:\n%s\nplan:\n%s", q.Name, strings.Join(scans, "; "), q.SQL, q.Plan)
		}
	}
}

// TestExplainCatchesAFullScan makes sure the check above sees a scan: a
// condition on a column no index holds reads the whole table, while an
// indexed lookup does not.
func TestExplainCatchesAFullScan(t *testing.T) {
	store, cfg := openTemp(t)
	runs, sessions := fmt.Sprintf("%q.%s", cfg.Schema, sqlstore.RunsTable), fmt.Sprintf("%q.%s", cfg.Schema, sqlstore.SessionsTable)
	for query, scans := range map[string]bool{
		"SELECT run_id FROM " + runs + " WHERE parent_run_id = ?":                                                                       true,
		"SELECT o.run_id FROM " + sessions + " AS s JOIN " + runs + " AS o ON o.session_id = s.session_id WHERE s.summary->>'text' = ?": true,
		"SELECT run_id FROM " + runs + " WHERE session_id = ? ORDER BY run_index DESC LIMIT 1":                                          false,
	} {
		plan, err := store.Explain(t.Context(), sqlstore.HotQuery{Name: query, SQL: query, Args: []any{"x"}})
		require.NoError(t, err)
		require.Equal(t, scans, len(fullScans(t, plan)) > 0, "%s\nplan:\n%s", query, plan)
	}
}
