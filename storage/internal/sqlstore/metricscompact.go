package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// On Postgres the changes to the daily metrics are written as pending rows
// (see pendingPeriodPrefix), which readers count with their day's row. A
// compactor folds them in, in the background, a moment after the first
// one written since its last pass, so that a write never waits for a
// (user, day) row and readers never read more than a moment's worth of
// pending rows.

// compactDelay is how long the compactor gathers pending rows before it
// folds them: one pass, and so one update of each (user, day) row, per
// delay however many runs end meanwhile.
const compactDelay = time.Second

// compactBatch bounds the pending rows one compaction transaction folds.
const compactBatch = 1000

// compactor runs [Store.CompactMetrics] in the background when woken.
type compactor struct {
	wakeCh chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// wake asks for a pass; a pass already asked for covers it. A nil
// compactor (SQLite) does nothing.
func (c *compactor) wake() {
	if c == nil {
		return
	}
	select {
	case c.wakeCh <- struct{}{}:
	default:
	}
}

// startCompactor starts the background compactor. Its passes run under
// base without its cancellation, until [Store.Close] stops them.
func (s *Store) startCompactor(base context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(base))
	c := &compactor{wakeCh: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	s.compactor = c
	go func() {
		defer close(c.done)
		timer := time.NewTimer(compactDelay)
		timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.wakeCh:
			}
			timer.Reset(compactDelay)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			// A pass that fails leaves the rows pending, counted by
			// readers as they are; the next write wakes another pass.
			_, _ = s.CompactMetrics(ctx)
		}
	}()
}

// stopCompactor stops the background compactor and waits for a pass
// under way to end.
func (s *Store) stopCompactor() {
	if c := s.compactor; c != nil {
		c.cancel()
		<-c.done
	}
}

// CompactMetrics folds the pending daily-metrics rows into their days'
// rows and reports how many it folded: in transactions of at most
// compactBatch rows, each deleting the rows it takes (skipping those
// another compaction holds) and adding them to their (user, day) rows in
// (user, day) order. Folding changes no figure a reader sees. Postgres
// runs it in the background; it is exported for tests and tools.
func (s *Store) CompactMetrics(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.compactMetricsBatch(ctx)
		total += n
		if err != nil {
			return total, fmt.Errorf("compact daily metrics: %w", err)
		}
		if n < compactBatch {
			return total, nil
		}
	}
}

// compactMetricsBatch folds up to compactBatch pending rows in one
// transaction.
func (s *Store) compactMetricsBatch(ctx context.Context) (int, error) {
	var folded int
	err := s.db.InTx(ctx, func(tx Conn) error {
		folded = 0
		rows, err := tx.Query(ctx, fmt.Sprintf(`DELETE FROM %[1]s WHERE id IN (
	SELECT id FROM %[1]s WHERE %[2]s LIMIT %[3]d%[4]s)
RETURNING user_id, %[5]s, %[6]s, token_metrics, model_metrics`,
			s.tables.metrics, pendingRows, compactBatch, s.dialect.skipLocked(), s.dialect.dateText("date"), metricsCountColumns))
		if err != nil {
			return err
		}
		changes := metricsChanges{}
		for rows.Next() {
			var (
				key              metricsKey
				runs, sessions   [kinds]int
				users            int
				tokens, modelDoc []byte
			)
			err := rows.Scan(nullString{&key.userID}, &key.date, nullInt{&runs[kindAgent]}, nullInt{&runs[kindTeam]}, nullInt{&runs[kindWorkflow]},
				nullInt{&sessions[kindAgent]}, nullInt{&sessions[kindTeam]}, nullInt{&sessions[kindWorkflow]}, nullInt{&users},
				jsonBytes{&tokens}, jsonBytes{&modelDoc})
			if err != nil {
				rows.Close()
				return err
			}
			d := changes.delta(key)
			for k := range kinds {
				d.runs[k] += runs[k]
				d.sessions[k] += sessions[k]
			}
			addTokens(&d.tokens, decodeTokenMetrics(tokens), 1)
			for model, n := range decodeModelMetrics(modelDoc) {
				d.addModel(model, n)
			}
			folded++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		keys := make([]metricsKey, 0, len(changes))
		for key := range changes {
			keys = append(keys, key)
		}
		slices.SortFunc(keys, func(a, b metricsKey) int { return cmp.Or(cmp.Compare(a.userID, b.userID), cmp.Compare(a.date, b.date)) })
		for _, key := range keys {
			if err := s.writeMetrics(ctx, tx, s.stmts.metricsUpsert, key, aggregationDaily, changes[key], false); err != nil {
				return fmt.Errorf("fold into %s for user %q: %w", key.date, key.userID, err)
			}
		}
		return nil
	})
	return folded, err
}
