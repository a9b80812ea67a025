package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

var _ storage.MetricsStore = (*Store)(nil)

// DailyMetrics implements [storage.MetricsStore]: one indexed read of the
// aggregate rows of the days asked for (one per user and day), summed per
// day.
func (s *Store) DailyMetrics(ctx context.Context, q storage.MetricsQuery) ([]storage.DayMetrics, error) {
	days, err := s.dailyMetrics(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read daily metrics: %w", err)
	}
	return days, nil
}

// metricsRowsFilter is the condition that an agno_metrics row is one of the
// daily rows agnogo reads: a day's row, or a pending change to it (see
// pendingPeriodPrefix).
func metricsRowsFilter() string {
	return fmt.Sprintf("(aggregation_period = '%s' OR aggregation_period LIKE '%s%%')", aggregationDaily, pendingPeriodPrefix)
}

func (s *Store) dailyMetrics(ctx context.Context, q storage.MetricsQuery) ([]storage.DayMetrics, error) {
	conds := []string{metricsRowsFilter()}
	var args []any
	if q.UserID != "" {
		conds, args = append(conds, "user_id = ?"), append(args, q.UserID)
	}
	if !q.From.IsZero() {
		conds, args = append(conds, "date >= "+s.dialect.dateArg()), append(args, q.From.Format(time.DateOnly))
	}
	if !q.To.IsZero() {
		conds, args = append(conds, "date <= "+s.dialect.dateArg()), append(args, q.To.Format(time.DateOnly))
	}
	query := fmt.Sprintf("SELECT %s, user_id, %s, token_metrics, model_metrics, created_at, updated_at FROM %s%s ORDER BY date, user_id",
		s.dialect.dateText("date"), metricsCountColumns, s.tables.metrics, whereClause(conds))
	rows, err := s.db.Reader().Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var days []storage.DayMetrics
	var models map[modelKey]int
	// A user's day is its row and its pending rows: the user counts once
	// while they count anything; the row without a user keeps the count it
	// holds (see [Store.metricsUpsertStatement]).
	var user struct {
		id             string
		runs, sessions [kinds]int
		users          int
	}
	endUser := func() {
		if n := len(days); n > 0 {
			switch {
			case user.id == "":
				days[n-1].Users += user.users
			case user.runs != [kinds]int{} || user.sessions != [kinds]int{}:
				days[n-1].Users++
			}
		}
		user.runs, user.sessions, user.users = [kinds]int{}, [kinds]int{}, 0
	}
	endDay := func() {
		endUser()
		if n := len(days); n > 0 {
			days[n-1].Models = modelCounts(models)
			if !days[n-1].Active() {
				days = days[:n-1]
			}
		}
		models = nil
	}
	for rows.Next() {
		var (
			date, userID         string
			runs, sessions       [kinds]int
			users                int
			tokens, modelDoc     []byte
			createdAt, updatedAt int64
		)
		err := rows.Scan(&date, nullString{&userID}, nullInt{&runs[kindAgent]}, nullInt{&runs[kindTeam]}, nullInt{&runs[kindWorkflow]},
			nullInt{&sessions[kindAgent]}, nullInt{&sessions[kindTeam]}, nullInt{&sessions[kindWorkflow]}, nullInt{&users},
			jsonBytes{&tokens}, jsonBytes{&modelDoc}, nullInt64{&createdAt}, nullInt64{&updatedAt})
		if err != nil {
			return nil, err
		}
		switch {
		case len(days) == 0 || days[len(days)-1].Date != date:
			endDay()
			days = append(days, storage.DayMetrics{Date: date, CreatedAt: createdAt, UpdatedAt: updatedAt})
			user.id = userID
		case user.id != userID:
			endUser()
			user.id = userID
		}
		day := &days[len(days)-1]
		for k := range kinds {
			user.runs[k] += runs[k]
			user.sessions[k] += sessions[k]
		}
		user.users += users
		day.AgentRuns += runs[kindAgent]
		day.TeamRuns += runs[kindTeam]
		day.WorkflowRuns += runs[kindWorkflow]
		day.AgentSessions += sessions[kindAgent]
		day.TeamSessions += sessions[kindTeam]
		day.WorkflowSessions += sessions[kindWorkflow]
		day.Tokens.Add(decodeTokenMetrics(tokens))
		mergeModels(&models, decodeModelMetrics(modelDoc))
		day.CreatedAt, day.UpdatedAt = min(day.CreatedAt, createdAt), max(day.UpdatedAt, updatedAt)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	endDay()
	return days, nil
}

// RefreshMetrics implements [storage.MetricsStore]. Each day is one
// transaction: the day's aggregate rows in the scope (pending ones
// included) are deleted, and
// written again from the day's sessions and counted runs (the copies a fork
// made left out: their run_data names forked_from_session_id). On Postgres
// the transaction first takes agno_metrics in EXCLUSIVE mode, which lets
// reads through but makes every write that would change an aggregate wait
// for the day to be written (and this wait for the writes already under
// way): a run saved meanwhile is either in what the refresh reads, or adds
// its change on top of what it wrote, never both and never neither.
// SQLite's single writer gives the same order.
func (s *Store) RefreshMetrics(ctx context.Context, q storage.MetricsQuery) ([]storage.DayMetrics, error) {
	first, last, err := refreshWindow(q)
	if err != nil {
		return nil, err
	}
	for day := first; !day.After(last); day = day.AddDate(0, 0, 1) {
		err := s.db.InTx(ctx, func(tx Conn) error { return s.recomputeDay(ctx, tx, day, q.UserID) })
		if err != nil {
			return nil, fmt.Errorf("refresh metrics of %s: %w", day.Format(time.DateOnly), err)
		}
	}
	days, err := s.DailyMetrics(ctx, storage.MetricsQuery{UserID: q.UserID, From: first, To: last})
	if err != nil {
		return nil, err
	}
	return days, nil
}

// refreshWindow checks a refresh's days and returns the first and the last
// as UTC midnights.
func refreshWindow(q storage.MetricsQuery) (first, last time.Time, err error) {
	if q.From.IsZero() || q.To.IsZero() {
		return first, last, storage.Invalidf("a metrics refresh needs its first and last day")
	}
	first = time.Date(q.From.Year(), q.From.Month(), q.From.Day(), 0, 0, 0, 0, time.UTC)
	last = time.Date(q.To.Year(), q.To.Month(), q.To.Day(), 0, 0, 0, 0, time.UTC)
	if first.After(last) {
		return first, last, storage.Invalidf("metrics refresh from %s to %s: the first day is after the last", first.Format(time.DateOnly), last.Format(time.DateOnly))
	}
	if days := int(last.Sub(first).Hours()/24) + 1; days > storage.MaxMetricsRefreshDays {
		return first, last, storage.Invalidf("metrics refresh from %s to %s: %d days, at most %d at once", first.Format(time.DateOnly), last.Format(time.DateOnly), days, storage.MaxMetricsRefreshDays)
	}
	return first, last, nil
}

// recomputeDay writes one day's aggregate rows in userID's scope ("" for
// every user) again from the stored sessions and runs.
func (s *Store) recomputeDay(ctx context.Context, tx Conn, day time.Time, userID string) error {
	if lock := s.dialect.lockExclusive(s.tables.metrics); lock != "" {
		if _, err := tx.Exec(ctx, lock); err != nil {
			return fmt.Errorf("lock %s: %w", MetricsTable, err)
		}
	}
	date := day.Format(time.DateOnly)
	where, args := userScope("user_id", userID, fmt.Sprintf("date = %s AND %s", s.dialect.dateArg(), metricsRowsFilter()), date)
	if _, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s", s.tables.metrics, where), args...); err != nil {
		return fmt.Errorf("delete the day's rows: %w", err)
	}
	start, end := day.Unix(), day.AddDate(0, 0, 1).Unix()
	changes := metricsChanges{}
	// The day's runs come through the created_at index, whatever else
	// narrows them.
	unindexedUser := s.dialect.unindexed("user_id")
	runWhere, runArgs := userScope(unindexedUser, userID, "created_at >= ? AND created_at < ? AND "+s.countedStatusesOf(s.dialect.unindexed("status")), start)
	runArgs = slices.Insert(runArgs, 1, any(end))
	rows, err := tx.Query(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", s.runUsageColumns(), s.tables.runs, runWhere), runArgs...)
	if err != nil {
		return fmt.Errorf("read the day's runs: %w", err)
	}
	for rows.Next() {
		usage, copied, err := scanRunUsage(rows)
		if err != nil {
			rows.Close()
			return fmt.Errorf("read the day's runs: %w", err)
		}
		if !copied {
			changes.addRun(usage, 1)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the day's runs: %w", err)
	}
	// A session counts once a run of its own counts (see priorRunStatement).
	sessionWhere, sessionArgs := userScope(s.dialect.unindexed("s.user_id"), userID, fmt.Sprintf(`s.created_at >= ? AND s.created_at < ?
	AND EXISTS (SELECT 1 FROM %s AS o WHERE o.session_id = s.session_id AND %s AND %s)`,
		s.tables.runs, s.countedStatusesOf(s.dialect.unindexed("o.status")), s.dialect.jsonTextAbsent("o.run_data", "forked_from_session_id")), start)
	sessionArgs = slices.Insert(sessionArgs, 1, any(end))
	sessionRows, err := tx.Query(ctx, fmt.Sprintf("SELECT s.user_id, s.session_type, s.created_at FROM %s AS s WHERE %s", s.tables.sessions, sessionWhere), sessionArgs...)
	if err != nil {
		return fmt.Errorf("read the day's sessions: %w", err)
	}
	for sessionRows.Next() {
		var owner, sessionType string
		var createdAt int64
		if err := sessionRows.Scan(nullString{&owner}, &sessionType, &createdAt); err != nil {
			sessionRows.Close()
			return fmt.Errorf("read the day's sessions: %w", err)
		}
		changes.addSession(owner, storage.SessionType(sessionType), createdAt, 1)
	}
	sessionRows.Close()
	if err := sessionRows.Err(); err != nil {
		return fmt.Errorf("read the day's sessions: %w", err)
	}
	for key, d := range changes {
		if !d.active() {
			continue
		}
		if err := s.writeMetrics(ctx, tx, s.stmts.metricsUpsert, key, aggregationDaily, d, false); err != nil {
			return fmt.Errorf("write the day's rows: %w", err)
		}
	}
	return nil
}

// countedStatusesOf is the condition that the status in column counts in
// the aggregates.
func (s *Store) countedStatusesOf(column string) string {
	statuses := storage.MetricsStatuses()
	quoted := make([]string, len(statuses))
	for i, status := range statuses {
		quoted[i] = "'" + string(status) + "'"
	}
	return column + " IN (" + strings.Join(quoted, ", ") + ")"
}

// runUsageColumns selects what a run row counts for, for [scanRunUsage]:
// the members of run_data it needs are extracted by the database in one
// parse, and only for a status that counts, so neither a run's messages
// nor a run that does not count are ever decoded here.
func (s *Store) runUsageColumns() string {
	return fmt.Sprintf("status, user_id, created_at, run_type, CASE WHEN %s THEN %s END AS usage_members",
		s.countedStatusesOf("status"), s.dialect.jsonMembers("run_data", "metrics", "model", "model_provider", "forked_from_session_id"))
}

// priorRunStatement reads, before a run is written, what its stored row
// counts for (the columns of [Store.runUsageColumns], all NULL when there is
// none) and its session's owner, type and created_at, as [priorRun] scans
// them. When the write changes whether the run counts (the argument says
// whether the new row does), it also says whether another run of the
// session counts (a fork's copies left out): the session counts while one
// does. Its arguments: whether the new row counts (1 or 0), the run id
// twice, the session id.
func (s *Store) priorRunStatement() string {
	d, counted := s.dialect, s.countedStatusesOf("r.status")
	return fmt.Sprintf(`SELECT r.status, r.user_id, r.created_at, r.run_type,
	CASE WHEN %[1]s THEN %[2]s END AS usage_members,
	s.user_id AS session_owner, s.session_type, s.created_at AS session_created,
	CASE WHEN (CASE WHEN %[1]s THEN 1 ELSE 0 END) <> ? THEN
		CASE WHEN EXISTS (SELECT 1 FROM %[4]s AS o WHERE o.session_id = s.session_id AND o.run_id <> ? AND %[5]s AND %[6]s) THEN 1 ELSE 0 END
	END AS others_counted
FROM %[3]s AS s LEFT JOIN %[4]s AS r ON r.run_id = ?
WHERE s.session_id = ?`, counted, d.jsonMembers("r.run_data", "metrics", "model", "model_provider", "forked_from_session_id"),
		s.tables.sessions, s.tables.runs, s.countedStatusesOf(d.unindexed("o.status")), d.jsonTextAbsent("o.run_data", "forked_from_session_id"))
}

// priorRunReturning is the RETURNING columns that return, from a CTE named
// prior holding [Store.priorRunStatement], what [priorRun] scans.
const priorRunReturning = `, (SELECT status FROM prior), (SELECT user_id FROM prior), (SELECT created_at FROM prior), (SELECT run_type FROM prior),
	(SELECT usage_members FROM prior), (SELECT session_owner FROM prior), (SELECT session_type FROM prior), (SELECT session_created FROM prior),
	(SELECT others_counted FROM prior)`

// priorRun receives what [Store.priorRunStatement] reads.
type priorRun struct {
	usageColumns
	sessionUser, sessionType string
	sessionCreated           int64
	othersCounted            int64
}

// dest lists the scan destinations of the columns, in order.
func (p *priorRun) dest() []any {
	return append(p.usageColumns.dest(), nullString{&p.sessionUser}, nullString{&p.sessionType}, nullInt64{&p.sessionCreated}, nullInt64{&p.othersCounted})
}

// addChanges adds what writing the run changes in the daily metrics: the
// new row's usage less the stored row's, and the session when the run is
// the one that makes it count, or stop counting. A fork's copy never makes
// its session count.
func (p *priorRun) addChanges(changes metricsChanges, newUsage *runUsage, copied bool) {
	prior, _ := p.usage()
	changes.addRun(prior, -1)
	changes.addRun(newUsage, 1)
	if copied || (prior != nil) == (newUsage != nil) || p.othersCounted != 0 {
		return
	}
	sign := 1
	if newUsage == nil {
		sign = -1
	}
	changes.addSession(p.sessionUser, storage.SessionType(p.sessionType), p.sessionCreated, sign)
}

// usageMembers are the run_data members [Store.runUsageColumns] extracts,
// in order.
type usageMembers struct {
	Metrics    *run.Metrics
	Model      string
	Provider   string
	ForkedFrom string
}

// UnmarshalJSON reads the members from their JSON array. A member of an
// unexpected type is left zero rather than fail the write that reads it.
func (m *usageMembers) UnmarshalJSON(data []byte) error {
	var members []json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return err
	}
	for i, target := range []any{&m.Metrics, &m.Model, &m.Provider, &m.ForkedFrom} {
		if i < len(members) {
			_ = json.Unmarshal(members[i], target)
		}
	}
	return nil
}

// usageColumns receives the columns of [Store.runUsageColumns]; all NULL
// (no stored row) reads as a run that counts nothing.
type usageColumns struct {
	status, userID, runType string
	createdAt               int64
	members                 []byte
}

// dest lists the scan destinations of the columns, in order.
func (c *usageColumns) dest() []any {
	return []any{nullString{&c.status}, nullString{&c.userID}, nullInt64{&c.createdAt}, nullString{&c.runType}, jsonBytes{&c.members}}
}

// usage is what the row counts for (nil when its status does not count),
// and whether it is a fork's copy.
func (c *usageColumns) usage() (usage *runUsage, copied bool) {
	if !storage.CountsInMetrics(run.Status(c.status)) {
		return nil, false
	}
	var members usageMembers
	if len(c.members) > 0 {
		// Unreadable members count as none rather than fail the write.
		_ = json.Unmarshal(c.members, &members)
	}
	out := &run.Output{Model: members.Model, ModelProvider: members.Provider}
	if members.Metrics != nil {
		out.Metrics = &run.RunMetrics{Metrics: *members.Metrics}
	}
	return newRunUsage(run.Status(c.status), c.userID, c.createdAt, storage.RunType(c.runType), out), members.ForkedFrom != ""
}

// scanRunUsage reads a row of [Store.runUsageColumns]: what the run counts
// for (nil when its status does not count), and whether it is a fork's
// copy.
func scanRunUsage(row Row) (usage *runUsage, copied bool, err error) {
	var cols usageColumns
	if err = row.Scan(cols.dest()...); err != nil {
		return nil, false, err
	}
	usage, copied = cols.usage()
	return usage, copied, nil
}

// readPriorRun reads, before a write replaces the stored row of a run, what
// [Store.priorRunStatement] reads. The caller has locked the run's session,
// which every write of the run locks first, so nothing it reads can change
// before the write.
func (s *Store) readPriorRun(ctx context.Context, tx Conn, sessionID, runID string, newCounts bool) (*priorRun, error) {
	var p priorRun
	err := tx.QueryRow(ctx, s.stmts.priorRun, countsFlag(newCounts), runID, runID, sessionID).Scan(p.dest()...)
	if err != nil && !errors.Is(err, ErrNoRows) {
		return nil, fmt.Errorf("read stored run %s: %w", runID, err)
	}
	return &p, nil
}

// countsFlag is whether a row counts, as [Store.priorRunStatement] takes it.
func countsFlag(counts bool) int {
	if counts {
		return 1
	}
	return 0
}
