package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agnogo/agnogo/storage"
)

// ForkSession implements [storage.SessionStore]. It runs three statements in
// one transaction, whatever the number of runs:
//
//  1. INSERT … SELECT of the new session row from the source's, which on
//     Postgres also share-locks the source row: no run of the source is
//     written until the fork commits, so the copy is of one moment;
//  2. the source's run ids (in the caller's scope), each paired in Go with a
//     fresh id from the store's id generator;
//  3. INSERT … SELECT of every run, joined with those pairs (passed as one
//     JSON object) and relinked inside run_data with the dialect's JSON
//     functions.
//
// The copies count nothing in the daily metrics: they are not new model
// calls, and no run write goes through them (see [Store.applyMetrics]). The
// fork counts as a session once a run of its own ends.
func (s *Store) ForkSession(ctx context.Context, f storage.SessionFork) (*storage.Session, error) {
	if f.SessionID == "" {
		return nil, storage.Invalidf("session_id of the session to fork is required")
	}
	forkID := f.ForkID
	if forkID == "" {
		forkID = s.newID()
	}
	if forkID == f.SessionID {
		return nil, storage.Invalidf("a fork of session %s needs an id of its own", f.SessionID)
	}
	dropKeys := f.DropSessionData
	if dropKeys == nil {
		dropKeys = []string{}
	}
	drop, err := json.Marshal(dropKeys)
	if err != nil {
		return nil, fmt.Errorf("fork session %s: encode session_data keys: %w", f.SessionID, err)
	}
	now := s.nowSeconds()
	var fork *storage.Session
	err = s.db.InTx(ctx, func(tx Conn) error {
		var err error
		if fork, err = s.copySessionRow(ctx, tx, f, forkID, string(drop), now); err != nil {
			return err
		}
		ids, err := s.forkRunIDs(ctx, tx, f)
		if err != nil || len(ids) == 0 {
			return err
		}
		pairs, err := json.Marshal(ids)
		if err != nil {
			return fmt.Errorf("encode run ids: %w", err)
		}
		copied, err := tx.Exec(ctx, s.forkRunsStatement(), string(pairs), forkID, nullable(fork.UserID), forkID, f.SessionID, now, f.SessionID)
		if err != nil {
			return fmt.Errorf("copy runs: %w", err)
		}
		if copied != int64(len(ids)) {
			return fmt.Errorf("copy runs: %d of %d runs copied", copied, len(ids))
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrInvalid) {
			return nil, err
		}
		return nil, fmt.Errorf("fork session %s: %w", f.SessionID, err)
	}
	return fork, nil
}

// copySessionRow inserts the fork's session row, copied from the source's,
// and returns it. A source missing from the caller's scope is not found; a
// fork id already in use is refused.
func (s *Store) copySessionRow(ctx context.Context, tx Conn, f storage.SessionFork, forkID, drop string, now int64) (*storage.Session, error) {
	sessionData := "session_data"
	args := []any{forkID}
	if drop != "[]" {
		sessionData = s.dialect.jsonWithoutKeys("session_data", s.dialect.jsonArg())
		args = append(args, drop)
	}
	where, whereArgs := userScope("user_id", f.UserID, "session_id = ?", f.SessionID)
	args = append(append(args, now, now), whereArgs...)
	query := fmt.Sprintf(`INSERT INTO %[1]s (%[6]s)
SELECT CAST(? AS TEXT), session_type, agent_id, team_id, workflow_id, user_id, %[3]s,
	agent_data, team_data, workflow_data, metadata, summary, CAST(? AS BIGINT), CAST(? AS BIGINT)
FROM %[1]s WHERE %[4]s%[5]s
ON CONFLICT (session_id) DO NOTHING
RETURNING %[2]s`, s.tables.sessions, sessionColumns, sessionData, where, s.dialect.forShare(), sessionInsertColumns)
	fork, err := scanSession(tx.QueryRow(ctx, query, args...))
	if !errors.Is(err, ErrNoRows) {
		return fork, err
	}
	// Nothing inserted: the source is missing, or the fork id is taken.
	var exists int
	err = tx.QueryRow(ctx, fmt.Sprintf("SELECT 1 FROM %s WHERE %s", s.tables.sessions, where), whereArgs...).Scan(&exists)
	switch {
	case errors.Is(err, ErrNoRows):
		return nil, notFound("session", f.SessionID)
	case err != nil:
		return nil, err
	}
	return nil, storage.Invalidf("fork of session %s: session %s already exists", f.SessionID, forkID)
}

// forkRunIDs pairs the id of every run of the source in the caller's scope
// with a fresh id for its copy.
func (s *Store) forkRunIDs(ctx context.Context, tx Conn, f storage.SessionFork) (map[string]string, error) {
	where, args := userScope("user_id", f.UserID, "session_id = ?", f.SessionID)
	rows, err := tx.Query(ctx, fmt.Sprintf("SELECT run_id FROM %s WHERE %s", s.tables.runs, where), args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	ids := map[string]string{}
	for rows.Next() {
		var runID string
		if err := rows.Scan(&runID); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		ids[runID] = s.newID()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return ids, nil
}

// forkRunsStatement copies the runs named in a JSON object of old → new run
// ids into the fork, relinked (parent, child runs of tools, and the runs
// each was forked or regenerated from, so the fork's history follows its
// own copies). Its arguments: the id pairs, the fork's id,
// its owner (for runs without a user), the fork's id and the source's for
// run_data, now, and the source's id. The pairs are materialized once: the
// statement looks them up for each run's id, its parent and its tools,
// and SQLite would otherwise parse the JSON object again for every lookup.
func (s *Store) forkRunsStatement() string {
	d := s.dialect
	relinked := d.jsonMerge(d.jsonWithoutKey("r.run_data", "events"),
		d.jsonObject("'run_id'", "ids.new_id", "'session_id'", "CAST(? AS TEXT)", "'forked_from_session_id'", "CAST(? AS TEXT)"))
	relinked = d.jsonMerge(relinked, fmt.Sprintf("CASE WHEN parent.new_id IS NULL THEN %s ELSE %s END",
		d.jsonEmptyObject(), d.jsonObject("'parent_run_id'", "parent.new_id")))
	for _, link := range []struct{ key, alias string }{{"forked_from_run_id", "forked"}, {"regenerated_from", "regenerated"}} {
		relinked = d.jsonMerge(relinked, fmt.Sprintf("CASE WHEN %[1]s.new_id IS NULL THEN %[2]s ELSE %[3]s END",
			link.alias, d.jsonEmptyObject(), d.jsonObject("'"+link.key+"'", link.alias+".new_id")))
	}
	relinked = d.jsonMerge(relinked, fmt.Sprintf("CASE WHEN %s THEN %s ELSE %s END",
		d.jsonIsArray("r.run_data", "tools"), d.jsonObject("'tools'", d.jsonRelinkArray("r.run_data", "tools", "child_run_id", "fork_ids")), d.jsonEmptyObject()))
	return fmt.Sprintf(`WITH fork_ids (old_id, new_id) AS MATERIALIZED (SELECT key, value FROM %[1]s)
INSERT INTO %[2]s (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, status, parent_run_id, run_index, run_data, created_at, updated_at)
SELECT ids.new_id, CAST(? AS TEXT), r.run_type, r.agent_id, r.team_id, r.workflow_id, COALESCE(r.user_id, CAST(? AS TEXT)), r.status,
	COALESCE(parent.new_id, r.parent_run_id), r.run_index,
	%[3]s,
	r.created_at, CAST(? AS BIGINT)
FROM fork_ids AS ids
JOIN %[2]s AS r ON r.run_id = ids.old_id
LEFT JOIN fork_ids AS parent ON parent.old_id = r.parent_run_id
LEFT JOIN fork_ids AS forked ON forked.old_id = %[4]s
LEFT JOIN fork_ids AS regenerated ON regenerated.old_id = %[5]s
WHERE r.session_id = ?`, d.jsonObjectEntries(d.jsonArg()), s.tables.runs, relinked,
		d.jsonText("r.run_data", "forked_from_run_id"), d.jsonText("r.run_data", "regenerated_from"))
}
