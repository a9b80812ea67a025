package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
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

// seedExplain stores a few sessions of two users and of none, with runs,
// memories and an approval, and returns a session of alice's holding the
// run the hot queries work on.
func seedExplain(t *testing.T, store *Store) sqlstore.HotFixture {
	t.Helper()
	ctx := t.Context()
	for _, user := range []string{"alice", "bob", ""} {
		for i := range 3 {
			sessionID := fmt.Sprintf("s-%s-%d", user, i)
			_, err := store.UpsertSession(ctx, &storage.Session{SessionID: sessionID, SessionType: storage.SessionTypeAgent, AgentID: "agent", UserID: user})
			require.NoError(t, err)
			for j := range 4 {
				status := run.StatusCompleted
				if j == 3 {
					status = run.StatusRunning
				}
				_, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: sessionID, Run: &run.Output{
					RunID: fmt.Sprintf("r-%s-%d-%d", user, i, j), AgentID: "agent", UserID: user, Status: status}})
				require.NoError(t, err)
			}
		}
		if user != "" {
			_, err := store.UpsertMemory(ctx, &storage.Memory{MemoryID: "m-" + user, Memory: "likes tea", UserID: user})
			require.NoError(t, err)
		}
	}
	_, err := store.CreateApproval(ctx, &storage.Approval{ID: "a-alice", RunID: "r-alice-0-3", SessionID: "s-alice-0", UserID: "alice",
		Status: storage.ApprovalPending})
	require.NoError(t, err)
	return sqlstore.HotFixture{SessionID: "s-alice-0", UserID: "alice", RunID: "r-alice-0-1"}
}

// TestExplainHotQueriesUseIndexes has Postgres plan every statement a run
// turn or an AgentOS request runs: none may scan a table that grows with
// use, so that a save or a turn costs the same with a million runs stored
// as with ten. Plans are made with sequential scans disabled (see
// [sqlstore.Store.Explain]): a tiny test table still shows whether an index
// can serve the statement.
func TestExplainHotQueriesUseIndexes(t *testing.T) {
	store, _ := openTemp(t)
	ctx := t.Context()
	f := seedExplain(t, store)
	before, err := store.GetSession(ctx, f.SessionID, storage.GetSessionOptions{IncludeRuns: true})
	require.NoError(t, err)
	queries, err := store.HotQueries(ctx, f)
	require.NoError(t, err)
	require.NotEmpty(t, queries)
	after, err := store.GetSession(ctx, f.SessionID, storage.GetSessionOptions{IncludeRuns: true})
	require.NoError(t, err)
	require.Equal(t, before, after, "the hot queries' writes are rolled back")
	for _, q := range queries {
		plan, err := store.Explain(ctx, q)
		require.NoError(t, err, q.Name)
		if scans := fullScans(t, plan); len(scans) > 0 {
			t.Errorf("%s reads a whole growing table (%s)\nstatement:\n%s\nplan:\n%s", q.Name, strings.Join(scans, "; "), q.SQL, plan)
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
