package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/storage"
)

var _ storage.ScheduleStore = (*Store)(nil)

const scheduleColumns = "id, name, description, method, endpoint, payload, cron_expr, timezone, timeout_seconds, max_retries, " +
	"retry_delay_seconds, enabled, next_run_at, locked_by, locked_at, user_id, managed_by, target_type, target_id, created_by_run_id, " +
	"created_by_session_id, updated_by_run_id, updated_by_session_id, disabled_reason, created_at, updated_at"

// CreateSchedule implements [storage.ScheduleStore].
func (s *Store) CreateSchedule(ctx context.Context, in *storage.Schedule) (*storage.Schedule, error) {
	if in == nil {
		return nil, storage.Invalidf("a schedule is required")
	}
	for _, field := range []struct{ name, value string }{{"name", in.Name}, {"method", in.Method}, {"endpoint", in.Endpoint}, {"cron_expr", in.CronExpr}} {
		if strings.TrimSpace(field.value) == "" {
			return nil, storage.Invalidf("schedule %s is required", field.name)
		}
	}
	docs, err := marshalAll(in.Payload)
	if err != nil {
		return nil, fmt.Errorf("create schedule '%s': %w", in.Name, err)
	}
	now := s.nowSeconds()
	id := cmp.Or(in.ID, s.newID())
	args := []any{id, in.Name, nullable(in.Description), in.Method, in.Endpoint, docs[0], in.CronExpr, in.Timezone, in.TimeoutSeconds,
		in.MaxRetries, in.RetryDelaySeconds, in.Enabled, optional(in.NextRunAt), nullable(in.LockedBy), optional(in.LockedAt),
		nullable(in.UserID), nullable(in.ManagedBy), nullable(in.TargetType), nullable(in.TargetID), nullable(in.CreatedByRunID),
		nullable(in.CreatedBySessionID), nullable(in.UpdatedByRunID), nullable(in.UpdatedBySessionID), nullable(in.DisabledReason),
		cmp.Or(in.CreatedAt, now), cmp.Or(in.UpdatedAt, now)}
	query := insertStatement(s.tables.schedules, scheduleColumns)
	var out *storage.Schedule
	err = s.db.InTx(ctx, func(tx Conn) error {
		out, err = scanSchedule(tx.QueryRow(ctx, query, args...))
		return err
	})
	if err != nil {
		if in.ID != "" && uniqueViolation(err) && s.scheduleExists(ctx, in.ID) {
			return nil, fmt.Errorf("create schedule: %w: schedule id '%s' exists", storage.ErrConflict, in.ID)
		}
		return nil, scheduleWriteErr("create", id, in.Name, err)
	}
	return out, nil
}

// scheduleExists reports whether a schedule has the id, in any scope.
func (s *Store) scheduleExists(ctx context.Context, id string) bool {
	var n int
	err := s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE id = ?", s.tables.schedules), id).Scan(&n)
	return err == nil && n > 0
}

// scheduleWriteErr turns a schedule write's error into the store's: a name
// another schedule of the owner holds is a conflict.
func scheduleWriteErr(verb, id, name string, err error) error {
	switch {
	case errors.Is(err, ErrNoRows):
		return notFound("schedule", id)
	case uniqueViolation(err):
		return fmt.Errorf("%s schedule %s: %w: schedule name '%s' is taken", verb, id, storage.ErrConflict, name)
	case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrInvalid), errors.Is(err, storage.ErrConflict):
		return err
	}
	return fmt.Errorf("%s schedule %s: %w", verb, id, err)
}

// GetSchedule implements [storage.ScheduleStore].
func (s *Store) GetSchedule(ctx context.Context, id, userID string) (*storage.Schedule, error) {
	where, args := userScope("user_id", userID, "id = ?", id)
	out, err := scanSchedule(s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", scheduleColumns, s.tables.schedules, where), args...))
	if errors.Is(err, ErrNoRows) {
		return nil, notFound("schedule", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get schedule %s: %w", id, err)
	}
	return out, nil
}

// ListSchedules implements [storage.ScheduleStore].
func (s *Store) ListSchedules(ctx context.Context, q storage.ScheduleQuery) ([]*storage.Schedule, int, error) {
	limitClause, err := pageClause(q.Page)
	if err != nil {
		return nil, 0, err
	}
	var conds []string
	var args []any
	if q.UserID != "" {
		conds, args = append(conds, "user_id = ?"), append(args, q.UserID)
	}
	if q.Enabled != nil {
		conds = append(conds, "enabled = "+sqlBool(*q.Enabled))
	}
	schedules, total, err := listPage(ctx, s.db.Reader(), listing{
		table: s.tables.schedules, columns: scheduleColumns, where: whereClause(conds), args: args,
		order: "created_at DESC, id DESC", limit: limitClause,
	}, scanSchedule)
	if err != nil {
		return nil, 0, fmt.Errorf("list schedules: %w", err)
	}
	return schedules, total, nil
}

// UpdateSchedule implements [storage.ScheduleStore].
func (s *Store) UpdateSchedule(ctx context.Context, id, userID string, u storage.ScheduleUpdate) (*storage.Schedule, error) {
	sets := []string{"updated_at = ?"}
	args := []any{s.nowSeconds()}
	set := func(column string, value any) {
		sets, args = append(sets, column+" = ?"), append(args, value)
	}
	for _, field := range []struct {
		column string
		value  *string
	}{{"name", u.Name}, {"method", u.Method}, {"endpoint", u.Endpoint}, {"cron_expr", u.CronExpr}} {
		if field.value == nil {
			continue
		}
		if strings.TrimSpace(*field.value) == "" {
			return nil, storage.Invalidf("update schedule %s: %s must not be empty", id, field.column)
		}
		set(field.column, *field.value)
	}
	if u.Description != nil {
		set("description", nullable(*u.Description))
	}
	if u.SetPayload {
		docs, err := marshalAll(u.Payload)
		if err != nil {
			return nil, fmt.Errorf("update schedule %s: %w", id, err)
		}
		set("payload", docs[0])
	}
	if u.Timezone != nil {
		set("timezone", *u.Timezone)
	}
	for _, field := range []struct {
		column string
		value  *int64
	}{{"timeout_seconds", u.TimeoutSeconds}, {"max_retries", u.MaxRetries}, {"retry_delay_seconds", u.RetryDelaySeconds}} {
		if field.value != nil {
			set(field.column, *field.value)
		}
	}
	if u.Enabled != nil {
		sets = append(sets, "enabled = "+sqlBool(*u.Enabled))
	}
	if u.SetNextRunAt {
		set("next_run_at", optional(u.NextRunAt))
	}
	if u.DisabledReason != nil {
		set("disabled_reason", nullable(*u.DisabledReason))
	}
	if u.UpdatedByRunID != "" {
		set("updated_by_run_id", u.UpdatedByRunID)
	}
	if u.UpdatedBySessionID != "" {
		set("updated_by_session_id", u.UpdatedBySessionID)
	}
	where, whereArgs := userScope("user_id", userID, "id = ?", id)
	query := fmt.Sprintf("UPDATE %s SET %s WHERE %s RETURNING %s", s.tables.schedules, strings.Join(sets, ", "), where, scheduleColumns)
	args = append(args, whereArgs...)
	var out *storage.Schedule
	err := s.db.InTx(ctx, func(tx Conn) error {
		var err error
		out, err = scanSchedule(tx.QueryRow(ctx, query, args...))
		return err
	})
	if err != nil {
		name := ""
		if u.Name != nil {
			name = *u.Name
		}
		return nil, scheduleWriteErr("update", id, name, err)
	}
	return out, nil
}

// DeleteSchedule implements [storage.ScheduleStore]. The runs go by the
// foreign key's cascade, and are deleted in the same transaction too, for
// a SQLite connection that has foreign keys off.
func (s *Store) DeleteSchedule(ctx context.Context, id, userID string) error {
	err := s.db.InTx(ctx, func(tx Conn) error {
		where, args := userScope("user_id", userID, "id = ?", id)
		deleted, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s", s.tables.schedules, where), args...)
		if err != nil {
			return err
		}
		if deleted == 0 {
			return ErrNoRows
		}
		_, err = tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE schedule_id = ?", s.tables.scheduleRuns), id)
		return err
	})
	if errors.Is(err, ErrNoRows) {
		return notFound("schedule", id)
	}
	if err != nil {
		return fmt.Errorf("delete schedule %s: %w", id, err)
	}
	return nil
}

// DueSchedules implements [storage.ScheduleStore].
func (s *Store) DueSchedules(ctx context.Context, now int64, limit int) ([]*storage.Schedule, error) {
	limitClause, err := limitOnly(limit)
	if err != nil {
		return nil, err
	}
	query := fmt.Sprintf("SELECT %s FROM %s WHERE enabled = TRUE AND next_run_at <= ? ORDER BY next_run_at, id%s", scheduleColumns, s.tables.schedules, limitClause)
	due, err := queryAll(ctx, s.db.Reader(), scanSchedule, query, now)
	if err != nil {
		return nil, fmt.Errorf("due schedules: %w", err)
	}
	return due, nil
}

// NextDue implements [storage.ScheduleStore].
func (s *Store) NextDue(ctx context.Context) (*int64, error) {
	var next *int64
	err := s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT MIN(next_run_at) FROM %s WHERE enabled = TRUE", s.tables.schedules)).Scan(optionalInt64{&next})
	if err != nil {
		return nil, fmt.Errorf("next due schedule: %w", err)
	}
	return next, nil
}

// FireSchedule implements [storage.ScheduleStore]. The compare-and-set is
// one UPDATE: on Postgres a second firer of the same due time waits for
// the first's row lock, then finds next_run_at moved and updates nothing;
// SQLite runs one write transaction at a time.
func (s *Store) FireSchedule(ctx context.Context, f storage.ScheduleFire) (*storage.ScheduleRun, error) {
	if f.ScheduleID == "" {
		return nil, storage.Invalidf("fire schedule: schedule_id is required")
	}
	var insert func(ctx context.Context, tx Conn, owner string) (*storage.ScheduleRun, error)
	if f.Run != nil {
		if f.Run.ScheduleID != "" && f.Run.ScheduleID != f.ScheduleID {
			return nil, storage.Invalidf("fire schedule %s: its run names schedule %s", f.ScheduleID, f.Run.ScheduleID)
		}
		r := *f.Run
		r.ScheduleID = f.ScheduleID
		var err error
		if insert, err = s.scheduleRunInsert(&r); err != nil {
			return nil, fmt.Errorf("fire schedule %s: %w", f.ScheduleID, err)
		}
	}
	sets := "next_run_at = ?, updated_at = ?"
	args := []any{optional(f.NextRunAt), s.nowSeconds()}
	if f.Disable != "" {
		sets += ", enabled = FALSE, disabled_reason = ?"
		args = append(args, f.Disable)
	}
	args = append(args, f.ScheduleID, f.Due)
	query := fmt.Sprintf("UPDATE %s SET %s WHERE id = ? AND enabled = TRUE AND next_run_at = ? RETURNING user_id", s.tables.schedules, sets)
	var out *storage.ScheduleRun
	err := s.db.InTx(ctx, func(tx Conn) error {
		var owner string
		if err := tx.QueryRow(ctx, query, args...).Scan(nullString{&owner}); err != nil {
			return err
		}
		if insert == nil {
			return nil
		}
		var err error
		out, err = insert(ctx, tx, owner)
		return err
	})
	if errors.Is(err, ErrNoRows) {
		return nil, fmt.Errorf("fire schedule %s due at %d: %w: fired by another caller, or disabled or deleted", f.ScheduleID, f.Due, storage.ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("fire schedule %s: %w", f.ScheduleID, err)
	}
	return out, nil
}

func scanSchedule(row Row) (*storage.Schedule, error) {
	var out storage.Schedule
	var payload []byte
	err := row.Scan(nullString{&out.ID}, nullString{&out.Name}, nullString{&out.Description}, nullString{&out.Method}, nullString{&out.Endpoint},
		jsonBytes{&payload}, nullString{&out.CronExpr}, nullString{&out.Timezone}, nullInt64{&out.TimeoutSeconds}, nullInt64{&out.MaxRetries},
		nullInt64{&out.RetryDelaySeconds}, flexBool{&out.Enabled}, optionalInt64{&out.NextRunAt}, nullString{&out.LockedBy},
		optionalInt64{&out.LockedAt}, nullString{&out.UserID}, nullString{&out.ManagedBy}, nullString{&out.TargetType}, nullString{&out.TargetID},
		nullString{&out.CreatedByRunID}, nullString{&out.CreatedBySessionID}, nullString{&out.UpdatedByRunID},
		nullString{&out.UpdatedBySessionID}, nullString{&out.DisabledReason}, nullInt64{&out.CreatedAt}, nullInt64{&out.UpdatedAt})
	if err != nil {
		return nil, err
	}
	if err := unmarshalObject(payload, &out.Payload); err != nil {
		return nil, fmt.Errorf("schedule %s: payload: %w", out.ID, err)
	}
	return &out, nil
}

// insertStatement inserts one row of columns into table and returns them.
func insertStatement(table, columns string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", table, columns)
	placeholders(&b, 1, strings.Count(columns, ",")+1)
	fmt.Fprintf(&b, " RETURNING %s", columns)
	return b.String()
}

// limitOnly is the LIMIT of a listing capped at limit rows; 0 is no limit.
func limitOnly(limit int) (string, error) {
	switch {
	case limit < 0:
		return "", storage.Invalidf("limit %d: must be positive (or 0 for no limit)", limit)
	case limit == 0:
		return "", nil
	}
	return fmt.Sprintf(" LIMIT %d", limit), nil
}

// sqlBool is a boolean literal both dialects read (SQLite stores 1 and 0).
func sqlBool(v bool) string {
	if v {
		return "TRUE"
	}
	return "FALSE"
}

// rawJSONParam converts a JSON document the caller encoded into a statement
// argument; nil is NULL and anything but JSON is [storage.ErrInvalid].
func rawJSONParam(column string, doc json.RawMessage) (any, error) {
	if doc == nil {
		return nil, nil
	}
	if !json.Valid(doc) {
		return nil, storage.Invalidf("%s is not a JSON document", column)
	}
	return string(storableJSON(doc)), nil
}

// optional turns a nil pointer into SQL NULL.
func optional(n *int64) any {
	if n == nil {
		return nil
	}
	return *n
}

func deref(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}

// optionalInt64 scans a nullable integer column into a pointer, nil for
// NULL.
type optionalInt64 struct{ p **int64 }

func (o optionalInt64) Scan(src any) error {
	if src == nil {
		*o.p = nil
		return nil
	}
	var n int64
	if err := (nullInt64{&n}).Scan(src); err != nil {
		return err
	}
	*o.p = &n
	return nil
}

// flexBool scans a boolean column: Postgres's boolean, or SQLite's 1 and 0
// (or text, as another writer may have left it). NULL is false.
type flexBool struct{ b *bool }

func (f flexBool) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*f.b = false
	case bool:
		*f.b = v
	case int64:
		*f.b = v != 0
	case string:
		*f.b = v == "1" || strings.EqualFold(v, "true") || strings.EqualFold(v, "t")
	case []byte:
		return f.Scan(string(v))
	default:
		return fmt.Errorf("scan %T into bool", src)
	}
	return nil
}
