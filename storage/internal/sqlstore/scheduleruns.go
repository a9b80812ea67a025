package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agnogo/agnogo/storage"
)

const scheduleRunColumns = "id, schedule_id, attempt, triggered_at, completed_at, status, status_code, run_id, session_id, error, " +
	"input, output, requirements, user_id, created_at, locked_by, locked_at"

// leasable is the condition on a schedule run that ClaimScheduleRuns
// leases, with its arguments: the claim's Now and StaleBefore.
const leasable = "status = 'running' AND triggered_at <= ? AND (locked_by IS NULL OR locked_at <= ?)"

// CreateScheduleRun implements [storage.ScheduleStore].
func (s *Store) CreateScheduleRun(ctx context.Context, r *storage.ScheduleRun, userID string) (*storage.ScheduleRun, error) {
	if r == nil || r.ScheduleID == "" {
		return nil, storage.Invalidf("a schedule run needs a schedule_id")
	}
	insert, err := s.scheduleRunInsert(r)
	if err != nil {
		return nil, fmt.Errorf("create run of schedule %s: %w", r.ScheduleID, err)
	}
	where, args := userScope("user_id", userID, "id = ?", r.ScheduleID)
	// The schedule's row is held until the insert commits, so a delete
	// cannot slip in between.
	query := fmt.Sprintf("SELECT user_id FROM %s WHERE %s%s", s.tables.schedules, where, s.dialect.forShare())
	var out *storage.ScheduleRun
	err = s.db.InTx(ctx, func(tx Conn) error {
		var owner string
		if err := tx.QueryRow(ctx, query, args...).Scan(nullString{&owner}); err != nil {
			return err
		}
		out, err = insert(ctx, tx, owner)
		return err
	})
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("schedule", r.ScheduleID)
	}
	if err != nil {
		return nil, fmt.Errorf("create run of schedule %s: %w", r.ScheduleID, err)
	}
	return out, nil
}

// scheduleRunInsert validates and encodes r and returns the insert of its
// row, owned by the schedule's owner.
func (s *Store) scheduleRunInsert(r *storage.ScheduleRun) (func(ctx context.Context, tx Conn, owner string) (*storage.ScheduleRun, error), error) {
	if !validScheduleRunStatus(r.Status) {
		return nil, storage.Invalidf("schedule run status %q: want running, success, failed, paused or cancelled", r.Status)
	}
	docs, err := marshalAll(r.Input, r.Output)
	if err != nil {
		return nil, err
	}
	requirements, err := rawJSONParam("requirements", r.Requirements)
	if err != nil {
		return nil, err
	}
	id := cmp.Or(r.ID, s.newID())
	createdAt := cmp.Or(r.CreatedAt, s.nowSeconds())
	query := insertStatement(s.tables.scheduleRuns, scheduleRunColumns)
	return func(ctx context.Context, tx Conn, owner string) (*storage.ScheduleRun, error) {
		return scanScheduleRun(tx.QueryRow(ctx, query, id, r.ScheduleID, r.Attempt, optional(r.TriggeredAt), optional(r.CompletedAt), r.Status,
			optional(r.StatusCode), nullable(r.RunID), nullable(r.SessionID), nullable(storableText(r.Error)), docs[0], docs[1], requirements,
			nullable(owner), createdAt, nullable(r.LockedBy), optional(r.LockedAt)))
	}, nil
}

// ClaimScheduleRuns implements [storage.ScheduleStore]. One statement
// picks the attempts and leases them, checking each again. On Postgres the
// pick locks what it takes and skips what another claim holds; a row
// another claim leased and committed meanwhile is read again at its new
// version, whose fresh lease no longer matches. The pick is materialized:
// as a subquery of the UPDATE, Postgres may run it again for each row, and
// each run, skipping the rows the statement has already leased, would
// pick more than the limit. SQLite runs one write transaction at a time,
// across processes too.
func (s *Store) ClaimScheduleRuns(ctx context.Context, c storage.ScheduleRunClaim) ([]*storage.ScheduleRun, error) {
	if c.Worker == "" {
		return nil, storage.Invalidf("claim schedule runs: a worker is required")
	}
	limitClause, err := limitOnly(c.Limit)
	if err != nil {
		return nil, err
	}
	query := fmt.Sprintf(`WITH picked AS MATERIALIZED (SELECT id FROM %[1]s WHERE %[2]s ORDER BY triggered_at, id%[3]s%[4]s)
UPDATE %[1]s SET locked_by = ?, locked_at = ? WHERE id IN (SELECT id FROM picked) AND %[2]s
RETURNING %[5]s`, s.tables.scheduleRuns, leasable, limitClause, s.dialect.skipLocked(), scheduleRunColumns)
	var claimed []*storage.ScheduleRun
	err = s.db.InTx(ctx, func(tx Conn) error {
		var err error
		claimed, err = queryAll(ctx, tx, scanScheduleRun, query, c.Now, c.StaleBefore, c.Worker, c.Now, c.Now, c.StaleBefore)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim schedule runs: %w", err)
	}
	// RETURNING yields rows in no set order.
	slices.SortFunc(claimed, func(a, b *storage.ScheduleRun) int {
		return cmp.Or(cmp.Compare(deref(a.TriggeredAt), deref(b.TriggeredAt)), cmp.Compare(a.ID, b.ID))
	})
	return claimed, nil
}

// UpdateScheduleRun implements [storage.ScheduleStore].
func (s *Store) UpdateScheduleRun(ctx context.Context, id string, u storage.ScheduleRunUpdate) (*storage.ScheduleRun, error) {
	if u.Worker == "" {
		return nil, storage.Invalidf("update schedule run %s: a worker is required", id)
	}
	sets := []string{"locked_at = ?"}
	args := []any{cmp.Or(u.Now, s.nowSeconds())}
	set := func(column string, value any) {
		sets, args = append(sets, column+" = ?"), append(args, value)
	}
	if u.Status != nil {
		if !validScheduleRunStatus(*u.Status) {
			return nil, storage.Invalidf("schedule run status %q: want running, success, failed, paused or cancelled", *u.Status)
		}
		set("status", *u.Status)
	}
	if u.StatusCode != nil {
		set("status_code", *u.StatusCode)
	}
	if u.RunID != nil {
		set("run_id", nullable(*u.RunID))
	}
	if u.SessionID != nil {
		set("session_id", nullable(*u.SessionID))
	}
	if u.Error != nil {
		set("error", nullable(storableText(*u.Error)))
	}
	for _, field := range []struct {
		column string
		value  map[string]any
	}{{"input", u.Input}, {"output", u.Output}} {
		if field.value == nil {
			continue
		}
		docs, err := marshalAll(field.value)
		if err != nil {
			return nil, fmt.Errorf("update schedule run %s: %s: %w", id, field.column, err)
		}
		set(field.column, docs[0])
	}
	if u.Requirements != nil {
		requirements, err := rawJSONParam("requirements", u.Requirements)
		if err != nil {
			return nil, fmt.Errorf("update schedule run %s: %w", id, err)
		}
		set("requirements", requirements)
	}
	if u.CompletedAt != nil {
		set("completed_at", *u.CompletedAt)
	}
	query := fmt.Sprintf("UPDATE %s SET %s WHERE id = ? AND status = 'running' AND locked_by = ? RETURNING %s",
		s.tables.scheduleRuns, strings.Join(sets, ", "), scheduleRunColumns)
	args = append(args, id, u.Worker)
	var out *storage.ScheduleRun
	err := s.db.InTx(ctx, func(tx Conn) error {
		var err error
		out, err = scanScheduleRun(tx.QueryRow(ctx, query, args...))
		if !errors.Is(err, ErrNoRows) {
			return err
		}
		var status, holder string
		err = tx.QueryRow(ctx, fmt.Sprintf("SELECT status, locked_by FROM %s WHERE id = ?", s.tables.scheduleRuns), id).
			Scan(nullString{&status}, nullString{&holder})
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: schedule run %s is %s, leased to '%s', not '%s'", storage.ErrConflict, id, status, holder, u.Worker)
	})
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("schedule run", id)
	}
	if err != nil {
		return nil, fmt.Errorf("update schedule run %s: %w", id, err)
	}
	return out, nil
}

// GetScheduleRun implements [storage.ScheduleStore].
func (s *Store) GetScheduleRun(ctx context.Context, scheduleID, id, userID string) (*storage.ScheduleRun, error) {
	where, args := "id = ? AND schedule_id = ?", []any{id, scheduleID}
	if userID != "" {
		where, args = where+" AND user_id = ?", append(args, userID)
	}
	out, err := scanScheduleRun(s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", scheduleRunColumns, s.tables.scheduleRuns, where), args...))
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("schedule run", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get schedule run %s: %w", id, err)
	}
	return out, nil
}

// ListScheduleRuns implements [storage.ScheduleStore]. A schedule outside
// the scope is [storage.ErrNotFound], as its runs are.
func (s *Store) ListScheduleRuns(ctx context.Context, scheduleID, userID string, p storage.Page) ([]*storage.ScheduleRun, int, error) {
	limitClause, err := pageClause(p)
	if err != nil {
		return nil, 0, err
	}
	reader := s.db.Reader()
	where, args := userScope("user_id", userID, "id = ?", scheduleID)
	var schedules int
	if err := reader.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", s.tables.schedules, where), args...).Scan(&schedules); err != nil {
		return nil, 0, fmt.Errorf("list runs of schedule %s: %w", scheduleID, err)
	}
	if schedules == 0 {
		return nil, 0, notFound("schedule", scheduleID)
	}
	runs, total, err := listPage(ctx, reader, listing{
		table: s.tables.scheduleRuns, columns: scheduleRunColumns, where: " WHERE schedule_id = ?", args: []any{scheduleID},
		order: "created_at DESC, attempt DESC, id DESC", limit: limitClause,
	}, scanScheduleRun)
	if err != nil {
		return nil, 0, fmt.Errorf("list runs of schedule %s: %w", scheduleID, err)
	}
	return runs, total, nil
}

func validScheduleRunStatus(status string) bool {
	switch status {
	case storage.ScheduleRunRunning, storage.ScheduleRunSuccess, storage.ScheduleRunFailed, storage.ScheduleRunPaused, storage.ScheduleRunCancelled:
		return true
	}
	return false
}

func scanScheduleRun(row Row) (*storage.ScheduleRun, error) {
	var out storage.ScheduleRun
	var input, output, requirements []byte
	err := row.Scan(nullString{&out.ID}, nullString{&out.ScheduleID}, nullInt64{&out.Attempt}, optionalInt64{&out.TriggeredAt},
		optionalInt64{&out.CompletedAt}, nullString{&out.Status}, optionalInt64{&out.StatusCode}, nullString{&out.RunID},
		nullString{&out.SessionID}, nullString{&out.Error}, jsonBytes{&input}, jsonBytes{&output}, jsonBytes{&requirements},
		nullString{&out.UserID}, nullInt64{&out.CreatedAt}, nullString{&out.LockedBy}, optionalInt64{&out.LockedAt})
	if err != nil {
		return nil, err
	}
	if err := unmarshalObject(input, &out.Input); err != nil {
		return nil, fmt.Errorf("schedule run %s: input: %w", out.ID, err)
	}
	if err := unmarshalObject(output, &out.Output); err != nil {
		return nil, fmt.Errorf("schedule run %s: output: %w", out.ID, err)
	}
	if len(requirements) > 0 {
		out.Requirements = json.RawMessage(requirements)
	}
	return &out, nil
}
