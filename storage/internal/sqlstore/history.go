package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// maxForkChain bounds how many forks of forks the history follows back: a
// lineage longer than this (or a cycle, which no write makes) ends there.
const maxForkChain = 256

// ContextRuns implements [storage.RunStore].
func (s *Store) ContextRuns(ctx context.Context, sessionID, userID string, n int) ([]*run.Output, error) {
	return s.HistoryRuns(ctx, storage.HistoryQuery{SessionID: sessionID, UserID: userID, N: n})
}

// HistoryRuns implements [storage.RunStore].
func (s *Store) HistoryRuns(ctx context.Context, q storage.HistoryQuery) ([]*run.Output, error) {
	if q.N <= 0 {
		return nil, storage.Invalidf("number of history runs must be positive, got %d", q.N)
	}
	if q.SessionID == "" {
		return nil, storage.Invalidf("session_id of the history is required")
	}
	if q.UserID != "" {
		// Scope by the session's owner, so a session of another user is
		// reported missing rather than empty.
		if _, err := s.GetSession(ctx, q.SessionID, storage.GetSessionOptions{UserID: q.UserID}); err != nil {
			return nil, err
		}
	}
	runs, err := s.historyRuns(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("history of session %s: %w", q.SessionID, err)
	}
	return runs, nil
}

// contextRuns is the history of a run after every stored run of the
// session.
func (s *Store) contextRuns(ctx context.Context, sessionID string, n int) ([]*run.Output, error) {
	return s.historyRuns(ctx, storage.HistoryQuery{SessionID: sessionID, N: n})
}

// historyRuns walks the session's finished top-level runs backwards
// through the (session_id, run_index) index from where the run's history
// ends, and jumps over the runs a fork replaced whenever it takes a fork
// (see [storage.HistoryQuery]).
func (s *Store) historyRuns(ctx context.Context, q storage.HistoryQuery) ([]*run.Output, error) {
	bound, follow := int64(math.MaxInt64), q.ForkedFromRunID
	if q.RunID != "" {
		index, forkedFrom, found, err := s.lineage(ctx, q.SessionID, q.RunID)
		if err != nil {
			return nil, err
		}
		if found {
			bound, follow = index, forkedFrom
		}
	}
	if follow != "" {
		var err error
		if bound, err = s.forkBound(ctx, q.SessionID, follow, bound); err != nil {
			return nil, err
		}
	}
	query := fmt.Sprintf(`SELECT run_index, run_data FROM %s
WHERE session_id = ? AND parent_run_id IS NULL AND (status = ? OR status IS NULL) AND run_index < ?
ORDER BY run_index DESC LIMIT %d`, s.tables.runs, q.N)
	var newestFirst []*run.Output
	for len(newestFirst) < q.N {
		page, err := queryAll(ctx, s.db.Reader(), scanIndexedRun, query, q.SessionID, string(run.StatusCompleted), bound)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			if r.index >= bound {
				// Replaced by a fork taken on this page.
				continue
			}
			newestFirst = append(newestFirst, r.run)
			bound = r.index
			if r.run.ForkedFromRunID != "" {
				if bound, err = s.forkBound(ctx, q.SessionID, r.run.ForkedFromRunID, bound); err != nil {
					return nil, err
				}
			}
			if len(newestFirst) == q.N {
				break
			}
		}
		if len(page) < q.N {
			break
		}
		if last := page[len(page)-1].index; last < bound {
			bound = last
		}
	}
	runs := make([]*run.Output, len(newestFirst))
	for i, r := range newestFirst {
		runs[len(runs)-1-i] = r
	}
	return runs, nil
}

// forkBound returns where the history before a fork of source ends: the
// run_index of the first run in source's lineage that is no fork (the runs
// before it precede the fork), or bound when the lineage leaves the session.
func (s *Store) forkBound(ctx context.Context, sessionID, source string, bound int64) (int64, error) {
	for range maxForkChain {
		index, forkedFrom, found, err := s.lineage(ctx, sessionID, source)
		if err != nil || !found {
			return bound, err
		}
		bound = min(bound, index)
		if forkedFrom == "" {
			return bound, nil
		}
		source = forkedFrom
	}
	return bound, nil
}

// lineage reads a run's run_index and the run it was forked from, when the
// run is stored in the session.
func (s *Store) lineage(ctx context.Context, sessionID, runID string) (index int64, forkedFrom string, found bool, err error) {
	query := fmt.Sprintf("SELECT run_index, %s FROM %s WHERE run_id = ? AND session_id = ?",
		s.dialect.jsonText("run_data", "forked_from_run_id"), s.tables.runs)
	err = s.db.Reader().QueryRow(ctx, query, runID, sessionID).Scan(nullInt64{&index}, nullString{&forkedFrom})
	if errors.Is(err, ErrNoRows) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("read the lineage of run %s: %w", runID, err)
	}
	return index, forkedFrom, true, nil
}

// indexedRun is a run with its run_index.
type indexedRun struct {
	index int64
	run   *run.Output
}

func scanIndexedRun(row Row) (indexedRun, error) {
	var (
		r   indexedRun
		doc []byte
	)
	if err := row.Scan(nullInt64{&r.index}, jsonBytes{&doc}); err != nil {
		return r, err
	}
	r.run = new(run.Output)
	if err := json.Unmarshal(doc, r.run); err != nil {
		return r, fmt.Errorf("decode run_data: %w", err)
	}
	return r, nil
}
