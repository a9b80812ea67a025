package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, to inspect results

	"github.com/agnogo/agnogo/storage/migrate"
)

// agnoTables are the tables a migrated database holds.
var agnoTables = []string{"agno_sessions", "agno_runs", "agno_transcripts", "agno_memories", "agno_metrics", "agno_tool_results", "agno_traces",
	"agno_spans", "agno_schedules", "agno_schedule_runs", "agno_approvals", "agno_service_accounts", "agno_schema_versions"}

func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func tableNames(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
	require.NoError(t, err)
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		names = append(names, name)
	}
	require.NoError(t, rows.Err())
	return names
}

func stampedVersions(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query("SELECT table_name, version FROM agno_schema_versions")
	require.NoError(t, err)
	defer rows.Close()
	versions := map[string]string{}
	for rows.Next() {
		var table, version string
		require.NoError(t, rows.Scan(&table, &version))
		versions[table] = version
	}
	require.NoError(t, rows.Err())
	return versions
}

func decodeResult(t *testing.T, stdout string) migrateResult {
	t.Helper()
	var doc migrateResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), "stdout is one JSON document: %s", stdout)
	return doc
}

func TestMigrateEmptyDatabase(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)

	got := agnogo(t, "migrate", "--db", dbURL)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Empty(t, got.stderr)
	require.Equal(t, []string{
		"migrating " + dbURL + " to the newest schema (3.1.0)",
		"agno_sessions      created        -> 3.0.0",
		"agno_runs          created        -> 3.0.0",
		"agno_memories      created        -> 3.0.0",
		"agno_metrics       created        -> 3.0.0",
		"agno_transcripts   created        -> 3.1.0",
		"agno_tool_results  created        -> 3.0.0",
		"agno_traces        created        -> 3.0.0",
		"agno_spans         created        -> 3.0.0",
		"agno_schedules     created        -> 3.0.0",
		"agno_schedule_runs created        -> 3.0.0",
		"agno_approvals     created        -> 3.0.0",
		"agno_service_accounts created        -> 3.0.0",
	}, lines(got.stdout)[:13])
	require.Regexp(t, `^done in \S+: 12 created\n$`, lines(got.stdout)[13]+"\n")

	db := openRaw(t, path)
	require.Subset(t, tableNames(t, db), agnoTables)
	require.Equal(t, map[string]string{
		"agno_sessions": "3.0.0", "agno_runs": "3.0.0", "agno_memories": "3.0.0",
		"agno_metrics": "3.0.0", "agno_transcripts": "3.1.0", "agno_tool_results": "3.0.0", "agno_traces": "3.0.0", "agno_spans": "3.0.0",
		"agno_schedules": "3.0.0", "agno_schedule_runs": "3.0.0", "agno_approvals": "3.0.0", "agno_service_accounts": "3.0.0",
	}, stampedVersions(t, db))

	again := agnogo(t, "migrate", "--db", dbURL)
	require.Equal(t, exitOK, again.code, again.stderr)
	require.Equal(t, []string{
		"migrating " + dbURL + " to the newest schema (3.1.0)",
		"agno_sessions      up to date 3.0.0",
		"agno_runs          up to date 3.0.0",
		"agno_memories      up to date 3.0.0",
		"agno_metrics       up to date 3.0.0",
		"agno_transcripts   up to date 3.1.0",
		"agno_tool_results  up to date 3.0.0",
		"agno_traces        up to date 3.0.0",
		"agno_spans         up to date 3.0.0",
		"agno_schedules     up to date 3.0.0",
		"agno_schedule_runs up to date 3.0.0",
		"agno_approvals     up to date 3.0.0",
		"agno_service_accounts up to date 3.0.0",
		"done: already up to date",
	}, lines(again.stdout))
}

func TestMigrateJSON(t *testing.T) {
	t.Parallel()
	dbURL, _ := tempDB(t)

	got := agnogo(t, "migrate", "--db", dbURL, "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	doc := decodeResult(t, got.stdout)
	require.Equal(t, dbURL, doc.Database)
	require.Equal(t, "3.1.0", doc.Target)
	require.Empty(t, doc.Error)
	require.Len(t, doc.Tables, 12)
	for _, table := range doc.Tables {
		require.Equal(t, migrate.ActionCreated, table.Action, table.Table)
		require.Empty(t, table.From)
	}

	got = agnogo(t, "migrate", "--db", dbURL, "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	doc = decodeResult(t, got.stdout)
	require.Len(t, doc.Tables, 12)
	for _, table := range doc.Tables {
		require.Equal(t, migrate.ActionUpToDate, table.Action, table.Table)
	}
	require.Nil(t, doc.LegacyRunsDropped, "no cleanup was asked for")
}

func TestMigrateToOlderTarget(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)

	got := agnogo(t, "migrate", "--db", dbURL, "--target", "3.0.0")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Contains(t, got.stdout, "migrating "+dbURL+" to 3.0.0\n")
	require.Contains(t, got.stdout, "agno_transcripts   skipped (target 3.0.0 older than 3.1.0, the version it is created at)\n")
	require.NotContains(t, stampedVersions(t, openRaw(t, path)), "agno_transcripts")

	got = agnogo(t, "migrate", "--db", dbURL)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Contains(t, got.stdout, "agno_transcripts   created        -> 3.1.0\n")
	require.Contains(t, got.stdout, "agno_sessions      up to date 3.0.0\n")
}

// legacySession is one Agno 2.x session row: its runs live in a JSON column.
type legacySession struct {
	id, sessionType string
	runIDs          []string
}

// createAgno2Database writes the agno_sessions table as Agno 2.x left it.
func createAgno2Database(t *testing.T, path string, sessions []legacySession) map[string]string {
	t.Helper()
	db := openRaw(t, path)
	_, err := db.Exec(`CREATE TABLE agno_sessions (
		session_id VARCHAR PRIMARY KEY, session_type VARCHAR NOT NULL, agent_id VARCHAR, team_id VARCHAR,
		workflow_id VARCHAR, user_id VARCHAR, session_data JSON, agent_data JSON, team_data JSON,
		workflow_data JSON, metadata JSON, runs JSON, summary JSON, created_at BIGINT NOT NULL, updated_at BIGINT)`)
	require.NoError(t, err)
	blobs := map[string]string{}
	for i, session := range sessions {
		var runs []map[string]any
		for j, runID := range session.runIDs {
			runs = append(runs, map[string]any{
				"run_id": runID, "agent_id": "assistant", "session_id": session.id, "status": "COMPLETED",
				"content": fmt.Sprintf("answer %d of %s", j, session.id), "created_at": 1_700_000_000 + 100*i + j,
			})
		}
		blob, err := json.Marshal(runs)
		require.NoError(t, err)
		blobs[session.id] = string(blob)
		_, err = db.Exec(`INSERT INTO agno_sessions (session_id, session_type, agent_id, user_id, session_data, runs, created_at, updated_at)
			VALUES (?, ?, 'assistant', 'u1', '{}', ?, ?, ?)`, session.id, session.sessionType, string(blob), 1_700_000_000+i, 1_700_000_000+i)
		require.NoError(t, err)
	}
	return blobs
}

// runsInOrder lists each session's run ids in run_index order, checking that
// the indexes are 0..n-1.
func runsInOrder(t *testing.T, db *sql.DB) map[string][]string {
	t.Helper()
	rows, err := db.Query("SELECT session_id, run_id, run_index FROM agno_runs ORDER BY session_id, run_index")
	require.NoError(t, err)
	defer rows.Close()
	bySession := map[string][]string{}
	for rows.Next() {
		var sessionID, runID string
		var runIndex int
		require.NoError(t, rows.Scan(&sessionID, &runID, &runIndex))
		require.Equal(t, len(bySession[sessionID]), runIndex, "run_index of %s in session %s", runID, sessionID)
		bySession[sessionID] = append(bySession[sessionID], runID)
	}
	require.NoError(t, rows.Err())
	return bySession
}

func TestMigrateAgno2Database(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)
	sessions := []legacySession{
		// Run ids deliberately out of lexical order: the blob's order wins.
		{id: "s-alpha", sessionType: "agent", runIDs: []string{"run-c", "run-a", "run-b"}},
		{id: "s-beta", sessionType: "agent", runIDs: []string{"run-z", "run-y"}},
	}
	blobs := createAgno2Database(t, path, sessions)

	got := agnogo(t, "migrate", "--db", dbURL)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Contains(t, got.stdout, "agno_sessions      migrated 2.0.0 -> 3.0.0\n")
	require.Contains(t, got.stdout, "agno_runs          created        -> 3.0.0 (imported 5 legacy runs)\n")
	require.Contains(t, got.stdout, "; imported 5 legacy runs (agno_sessions.runs is kept as a backup")

	db := openRaw(t, path)
	want := map[string][]string{"s-alpha": {"run-c", "run-a", "run-b"}, "s-beta": {"run-z", "run-y"}}
	require.Equal(t, want, runsInOrder(t, db))
	var status, runType string
	require.NoError(t, db.QueryRow("SELECT status, run_type FROM agno_runs WHERE run_id = 'run-a'").Scan(&status, &runType))
	require.Equal(t, "COMPLETED", status)
	require.Equal(t, "agent", runType)

	again := agnogo(t, "migrate", "--db", dbURL, "--json")
	require.Equal(t, exitOK, again.code, again.stderr)
	doc := decodeResult(t, again.stdout)
	for _, table := range doc.Tables {
		require.Equal(t, migrate.ActionUpToDate, table.Action, table.Table)
		require.Zero(t, table.ImportedRuns, table.Table)
	}
	require.Equal(t, want, runsInOrder(t, db), "a second migration imports nothing")

	// The legacy column stays, untouched, as a backup.
	for _, session := range sessions {
		var blob string
		require.NoError(t, db.QueryRow("SELECT runs FROM agno_sessions WHERE session_id = ?", session.id).Scan(&blob))
		require.JSONEq(t, blobs[session.id], blob)
	}
}

func TestMigrateCleanupLegacyRuns(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)
	createAgno2Database(t, path, []legacySession{{id: "s1", sessionType: "agent", runIDs: []string{"r1", "r2"}}})

	refused := agnogo(t, "migrate", "--db", dbURL, "--cleanup-legacy-runs")
	require.Equal(t, exitFailure, refused.code, refused.stderr)
	require.Contains(t, refused.stdout, "imported 2 legacy runs", "the migration itself happened")
	require.Contains(t, refused.stderr, "agnogo: clean up legacy runs: ")
	require.Contains(t, refused.stderr, "1 session(s) still hold legacy runs")
	require.Contains(t, refused.stderr, "add --force")

	db := openRaw(t, path)
	var columns int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM pragma_table_info('agno_sessions') WHERE name = 'runs'").Scan(&columns))
	require.Equal(t, 1, columns, "a refused cleanup keeps the column")

	forced := agnogo(t, "migrate", "--db", dbURL, "--cleanup-legacy-runs", "--force", "--json")
	require.Equal(t, exitOK, forced.code, forced.stderr)
	doc := decodeResult(t, forced.stdout)
	require.NotNil(t, doc.LegacyRunsDropped)
	require.True(t, *doc.LegacyRunsDropped)
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM pragma_table_info('agno_sessions') WHERE name = 'runs'").Scan(&columns))
	require.Zero(t, columns)
	require.Equal(t, map[string][]string{"s1": {"r1", "r2"}}, runsInOrder(t, db), "the imported runs stay")

	again := agnogo(t, "migrate", "--db", dbURL, "--cleanup-legacy-runs")
	require.Equal(t, exitOK, again.code, again.stderr)
	require.Contains(t, again.stdout, "no legacy agno_sessions.runs column to drop\n")
}

func TestMigrateFailingStep(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)
	createAgno2Database(t, path, nil)
	db := openRaw(t, path)
	_, err := db.Exec(`INSERT INTO agno_sessions (session_id, session_type, runs, created_at) VALUES ('broken', 'agent', '{"not": "a list"}', 1)`)
	require.NoError(t, err)

	got := agnogo(t, "migrate", "--db", dbURL)
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stdout, "agno_runs          failed         -> 3.0.0\n")
	require.NotContains(t, got.stdout, "done")
	require.Contains(t, got.stderr, "agnogo: migrate agno_runs to 3.0.0: ")
	require.Contains(t, got.stderr, "session broken")
	require.NotContains(t, got.stderr, "--help", "a failure is not a usage error")

	got = agnogo(t, "migrate", "--db", dbURL, "--json")
	require.Equal(t, exitFailure, got.code)
	doc := decodeResult(t, got.stdout)
	require.Contains(t, doc.Error, "migrate agno_runs to 3.0.0: ")
	last := doc.Tables[len(doc.Tables)-1]
	require.Equal(t, "agno_runs", last.Table)
	require.NotEmpty(t, last.Error)
	require.NotContains(t, stampedVersions(t, db), "agno_runs", "a failed table keeps no stamp")
}

func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// `agnogo migrate --config F` migrates the database F names, not the
// default ./agnogo.db; --db still overrides it.
func TestMigrateTheConfigsDatabase(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)
	cfg := filepath.Join(t.TempDir(), "agnogo.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("db: "+dbURL+"\n"), 0o600))

	got := agnogo(t, "migrate", "--config", cfg, "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	doc := decodeResult(t, got.stdout)
	require.Equal(t, dbURL, doc.Database)
	require.Subset(t, tableNames(t, openRaw(t, path)), agnoTables)

	other, otherPath := tempDB(t)
	got = agnogo(t, "migrate", "--config", cfg, "--db", other, "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, other, decodeResult(t, got.stdout).Database)
	require.Subset(t, tableNames(t, openRaw(t, otherPath)), agnoTables)

	missing := agnogo(t, "migrate", "--config", filepath.Join(t.TempDir(), "nope.yaml"))
	require.Equal(t, exitUsage, missing.code)
	require.Contains(t, missing.stderr, "--config")
}
