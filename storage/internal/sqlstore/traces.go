package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnogo/agnogo/storage"
)

var _ storage.TraceStore = (*Store)(nil)

// traceColumns are the columns of a trace row as it is read.
const traceColumns = "trace_id, name, status, start_time, end_time, duration_ms, run_id, session_id, user_id, agent_id, team_id, workflow_id, created_at"

// traceWriteColumns are the columns a trace write sets: the read columns
// and the level of the trace's name.
const traceWriteColumns = traceColumns + ", name_level"

const spanColumns = "span_id, trace_id, parent_span_id, name, span_kind, status_code, status_message, start_time, end_time, duration_ms, attributes, created_at"

// Counts of the columns above, for the placeholders of a multi-row INSERT.
const (
	traceWriteColumnCount = 14
	spanColumnCount       = 12
)

// traceRowsPerStatement bounds the rows of one multi-row INSERT: 500 spans
// are 6,000 arguments, far below either database's limit (SQLite 32,766,
// Postgres 65,535).
const traceRowsPerStatement = 500

// Trace statuses.
const (
	traceStatusOK    = "OK"
	traceStatusError = "ERROR"
)

// Paging of trace listings.
const (
	traceDefaultLimit = 20
	traceMaxLimit     = 100
)

// maxFilterDepth bounds the nesting of a [storage.FilterExpr]: the
// outermost condition is at depth 1.
const maxFilterDepth = 10

// isoLayout formats a time as Agno writes trace times, before the fixed
// +00:00 of UTC.
const isoLayout = "2006-01-02T15:04:05.000000"

// isoTime formats t in UTC as ISO-8601 text with microseconds and +00:00
// (2026-12-02T14:04:36.123456+00:00): every time the store writes has this
// one width, so text order is time order.
func isoTime(t time.Time) string {
	b := make([]byte, 0, len(isoLayout)+6)
	b = t.UTC().AppendFormat(b, isoLayout)
	return string(append(b, "+00:00"...))
}

// isoParseLayouts are the forms of an ISO-8601 time the store reads: with
// an offset (or Z), without one (UTC), and a bare date (midnight UTC).
var isoParseLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999", time.DateOnly}

// parseISOTime parses an ISO-8601 time into UTC.
func parseISOTime(text string) (time.Time, error) {
	text = strings.TrimSpace(text)
	for _, layout := range isoParseLayouts {
		if t, err := time.Parse(layout, text); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO-8601 time", text)
}

// millisBetween is the number of milliseconds, rounded, from the ISO-8601
// text start to the text end. SQLite reads times to the millisecond.
func (d Dialect) millisBetween(start, end string) string {
	if d == Postgres {
		return fmt.Sprintf("CAST(ROUND(EXTRACT(EPOCH FROM (CAST(%s AS TIMESTAMPTZ) - CAST(%s AS TIMESTAMPTZ))) * 1000) AS BIGINT)", end, start)
	}
	return fmt.Sprintf("CAST(ROUND((julianday(%s) - julianday(%s)) * 86400000.0) AS INTEGER)", end, start)
}

// traceDuration is end - start in whole milliseconds, rounded.
func traceDuration(start, end time.Time) int64 {
	if start.IsZero() || end.IsZero() {
		return 0
	}
	return end.Sub(start).Round(time.Millisecond).Milliseconds()
}

// pendingTrace is one trace of a WriteTraces call: its writes merged.
type pendingTrace struct {
	trace storage.Trace
	level int
}

// WriteTraces implements [storage.TraceStore]. The writes of one trace in
// the call are merged first, as the stored row merges them; then every
// trace row is upserted in one multi-row statement (per 500 traces) and
// every span inserted in another (per 500 spans), all in one transaction.
// Rows are written in id order, so that two writers of the same traces on
// Postgres lock them in the same order and never deadlock; each upsert is
// a single INSERT … ON CONFLICT statement, atomic however many replicas
// write the same trace at once.
func (s *Store) WriteTraces(ctx context.Context, writes []storage.TraceWrite) error {
	if len(writes) == 0 {
		return nil
	}
	traces, spans, err := s.mergeTraceWrites(writes)
	if err != nil {
		return err
	}
	traceArgs := make([]any, 0, len(traces)*traceWriteColumnCount)
	for _, p := range traces {
		tr := &p.trace
		traceArgs = append(traceArgs, tr.TraceID, storableText(tr.Name), tr.Status, isoTime(tr.StartTime), isoTime(tr.EndTime),
			traceDuration(tr.StartTime, tr.EndTime), nullable(tr.RunID), nullable(tr.SessionID), nullable(tr.UserID),
			nullable(tr.AgentID), nullable(tr.TeamID), nullable(tr.WorkflowID), isoTime(tr.CreatedAt), p.level)
	}
	spanArgs := make([]any, 0, len(spans)*spanColumnCount)
	for i := range spans {
		sp := &spans[i]
		attributes, err := encodeAttributes(sp.Attributes)
		if err != nil {
			return fmt.Errorf("write traces: span %s: %w", sp.SpanID, err)
		}
		spanArgs = append(spanArgs, sp.SpanID, sp.TraceID, nullable(sp.ParentSpanID), storableText(sp.Name), sp.SpanKind, sp.StatusCode,
			nullable(storableText(sp.StatusMessage)), isoTime(sp.StartTime), isoTime(sp.EndTime), sp.DurationMS, attributes, isoTime(sp.CreatedAt))
	}
	err = s.db.InTx(ctx, func(tx Conn) error {
		for start := 0; start < len(traces); start += traceRowsPerStatement {
			n := min(traceRowsPerStatement, len(traces)-start)
			args := traceArgs[start*traceWriteColumnCount : (start+n)*traceWriteColumnCount]
			if _, err := tx.Exec(ctx, s.traceUpsertStatement(n), args...); err != nil {
				return fmt.Errorf("upsert traces: %w", err)
			}
		}
		for start := 0; start < len(spans); start += traceRowsPerStatement {
			n := min(traceRowsPerStatement, len(spans)-start)
			args := spanArgs[start*spanColumnCount : (start+n)*spanColumnCount]
			if _, err := tx.Exec(ctx, s.spanInsertStatement(n), args...); err != nil {
				return fmt.Errorf("insert spans: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	return nil
}

// mergeTraceWrites validates writes and merges the writes of each trace
// (as [Store.traceUpsertStatement] merges a write into a stored row),
// returning the traces by id and their spans, each span id once, by id.
func (s *Store) mergeTraceWrites(writes []storage.TraceWrite) ([]*pendingTrace, []storage.Span, error) {
	now := s.now()
	byID := make(map[string]*pendingTrace, len(writes))
	traces := make([]*pendingTrace, 0, len(writes))
	spanCount := 0
	for i := range writes {
		spanCount += len(writes[i].Spans)
	}
	spans := make([]storage.Span, 0, spanCount)
	for i := range writes {
		w := &writes[i]
		in := w.Trace
		if in.TraceID == "" {
			return nil, nil, storage.Invalidf("a trace needs a trace_id")
		}
		if w.NameLevel < storage.TraceLevelChild || w.NameLevel > storage.TraceLevelWorkflow {
			return nil, nil, storage.Invalidf("trace %s: name level %d: want %d to %d", in.TraceID, w.NameLevel, storage.TraceLevelChild, storage.TraceLevelWorkflow)
		}
		if in.CreatedAt.IsZero() {
			in.CreatedAt = now
		}
		for _, sp := range w.Spans {
			if sp.SpanID == "" {
				return nil, nil, storage.Invalidf("trace %s: a span needs a span_id", in.TraceID)
			}
			if sp.TraceID == "" {
				sp.TraceID = in.TraceID
			} else if sp.TraceID != in.TraceID {
				return nil, nil, storage.Invalidf("span %s belongs to trace %s, written with trace %s", sp.SpanID, sp.TraceID, in.TraceID)
			}
			sp.SpanKind = cmp.Or(strings.ToUpper(sp.SpanKind), "INTERNAL")
			sp.StatusCode = cmp.Or(strings.ToUpper(sp.StatusCode), "UNSET")
			if sp.DurationMS == 0 {
				sp.DurationMS = traceDuration(sp.StartTime, sp.EndTime)
			}
			if sp.CreatedAt.IsZero() {
				sp.CreatedAt = in.CreatedAt
			}
			// A batch that did not bound its trace is bounded by its spans.
			if !sp.StartTime.IsZero() && (in.StartTime.IsZero() || sp.StartTime.Before(in.StartTime)) {
				in.StartTime = sp.StartTime
			}
			if sp.EndTime.After(in.EndTime) {
				in.EndTime = sp.EndTime
			}
			spans = append(spans, sp)
		}
		if in.StartTime.IsZero() || in.EndTime.IsZero() {
			return nil, nil, storage.Invalidf("trace %s: a trace needs its start and end time, or spans that have them", in.TraceID)
		}
		in.Status = traceStatusOK
		if strings.EqualFold(w.Trace.Status, traceStatusError) {
			in.Status = traceStatusError
		}
		p, seen := byID[in.TraceID]
		if !seen {
			p = &pendingTrace{trace: in, level: w.NameLevel}
			byID[in.TraceID] = p
			traces = append(traces, p)
			continue
		}
		mergeTrace(p, in, w.NameLevel)
	}
	slices.SortFunc(traces, func(a, b *pendingTrace) int { return strings.Compare(a.trace.TraceID, b.trace.TraceID) })
	slices.SortStableFunc(spans, func(a, b storage.Span) int { return strings.Compare(a.SpanID, b.SpanID) })
	// The first write of a span id wins, as it does against a stored one.
	spans = slices.CompactFunc(spans, func(a, b storage.Span) bool { return a.SpanID == b.SpanID })
	return traces, spans, nil
}

// mergeTrace merges a later write of the same trace into p.
func mergeTrace(p *pendingTrace, in storage.Trace, level int) {
	tr := &p.trace
	if !in.StartTime.IsZero() && (tr.StartTime.IsZero() || in.StartTime.Before(tr.StartTime)) {
		tr.StartTime = in.StartTime
	}
	if in.EndTime.After(tr.EndTime) {
		tr.EndTime = in.EndTime
	}
	if in.Status == traceStatusError {
		tr.Status = traceStatusError
	}
	higher, lower := level > p.level, level < p.level
	if in.Name != "" && (higher || tr.Name == "") {
		tr.Name, p.level = in.Name, level
	}
	// Only a write that names its run carries a context to replace the
	// trace's with.
	higher = higher && in.RunID != ""
	for _, field := range []struct {
		stored *string
		added  string
	}{
		{&tr.RunID, in.RunID}, {&tr.SessionID, in.SessionID}, {&tr.UserID, in.UserID},
		{&tr.AgentID, in.AgentID}, {&tr.TeamID, in.TeamID}, {&tr.WorkflowID, in.WorkflowID},
	} {
		// A higher-level write's context replaces the trace's (a team's
		// run over its member's), a lower-level one's is ignored, and
		// between writes of one level the first value written stays.
		switch {
		case higher:
			*field.stored = field.added
		case !lower:
			*field.stored = cmp.Or(*field.stored, field.added)
		}
	}
	if in.CreatedAt.Before(tr.CreatedAt) {
		tr.CreatedAt = in.CreatedAt
	}
}

// encodeAttributes encodes a span's attributes as a JSON object; nil is
// {}. A value encoding/json refuses (a NaN, a channel) is stored as its
// text, as Agno stores what is not a primitive or a list of them.
func encodeAttributes(attributes map[string]any) (string, error) {
	if len(attributes) == 0 {
		return "{}", nil
	}
	doc, err := encodeJSON(attributes)
	if err == nil {
		return string(doc), nil
	}
	kept := make(map[string]any, len(attributes))
	for key, value := range attributes {
		if _, err := json.Marshal(value); err != nil {
			value = fmt.Sprint(value)
		}
		kept[key] = value
	}
	doc, err = encodeJSON(kept)
	if err != nil {
		return "", fmt.Errorf("%w: encode attributes: %v", storage.ErrInvalid, err)
	}
	return string(doc), nil
}

// placeholders writes rows groups of columns placeholders each.
func placeholders(b *strings.Builder, rows, columns int) {
	group := "(" + strings.Repeat("?, ", columns-1) + "?)"
	b.Grow(rows * (len(group) + 2))
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(group)
	}
}

// traceUpsertStatement upserts rows trace rows, merging each into its
// stored row: start the earliest, end the latest, the duration recomputed
// when either moved, ERROR when either side is, the name replaced by a
// named write of a higher level (or when none is stored), each context
// column kept when set, created_at kept.
func (s *Store) traceUpsertStatement(rows int) string {
	t := s.tables.traces
	start := fmt.Sprintf("CASE WHEN excluded.start_time < %[1]s.start_time THEN excluded.start_time ELSE %[1]s.start_time END", t)
	end := fmt.Sprintf("CASE WHEN excluded.end_time > %[1]s.end_time THEN excluded.end_time ELSE %[1]s.end_time END", t)
	renamed := fmt.Sprintf("excluded.name <> '' AND (excluded.name_level > %[1]s.name_level OR %[1]s.name = '')", t)
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", t, traceWriteColumns)
	placeholders(&b, rows, traceWriteColumnCount)
	fmt.Fprintf(&b, `
ON CONFLICT (trace_id) DO UPDATE SET
	name = CASE WHEN %[2]s THEN excluded.name ELSE %[1]s.name END,
	name_level = CASE WHEN %[2]s THEN excluded.name_level ELSE %[1]s.name_level END,
	status = CASE WHEN %[1]s.status = 'ERROR' OR excluded.status = 'ERROR' THEN 'ERROR' ELSE excluded.status END,
	start_time = %[3]s,
	end_time = %[4]s,
	duration_ms = CASE WHEN excluded.start_time < %[1]s.start_time OR excluded.end_time > %[1]s.end_time
		THEN %[5]s ELSE %[1]s.duration_ms END`, t, renamed, start, end, s.dialect.millisBetween(start, end))
	for _, col := range []string{"run_id", "session_id", "user_id", "agent_id", "team_id", "workflow_id"} {
		// A higher-level write's context replaces the trace's (a team's
		// run over its member's, written in an earlier batch), a
		// lower-level one's is ignored, and between writes of one level
		// the first value written stays.
		fmt.Fprintf(&b, ",\n\t%[2]s = CASE WHEN excluded.name_level > %[1]s.name_level AND excluded.name <> '' AND COALESCE(excluded.run_id, '') <> '' THEN excluded.%[2]s "+
			"WHEN excluded.name_level < %[1]s.name_level THEN %[1]s.%[2]s "+
			"ELSE COALESCE(NULLIF(%[1]s.%[2]s, ''), excluded.%[2]s) END", t, col)
	}
	return b.String()
}

// spanInsertStatement inserts rows span rows, leaving a stored span id as
// it is.
func (s *Store) spanInsertStatement(rows int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", s.tables.spans, spanColumns)
	placeholders(&b, rows, spanColumnCount)
	b.WriteString(" ON CONFLICT (span_id) DO NOTHING")
	return b.String()
}

// ListTraces implements [storage.TraceStore].
func (s *Store) ListTraces(ctx context.Context, f storage.TraceFilter) ([]storage.Trace, int, error) {
	limit, offset, err := tracePage(f.Page, f.Limit)
	if err != nil {
		return nil, 0, err
	}
	conds, args, err := s.traceConditions(f)
	if err != nil {
		return nil, 0, err
	}
	where := whereClause(conds)
	conn := s.db.Reader()
	var total int
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s%s", s.tables.traces, where), args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count traces: %w", err)
	}
	if total <= offset {
		return nil, total, nil
	}
	// The page is cut first, so the spans are counted for its traces alone,
	// each from the (trace_id, status_code) index.
	query := fmt.Sprintf(`SELECT %[1]s,
	(SELECT COUNT(*) FROM %[2]s AS s WHERE s.trace_id = p.trace_id),
	(SELECT COUNT(*) FROM %[2]s AS s WHERE s.trace_id = p.trace_id AND s.status_code = 'ERROR')
FROM (SELECT %[3]s FROM %[4]s%[5]s ORDER BY start_time DESC, trace_id DESC LIMIT %[6]d OFFSET %[7]d) AS p
ORDER BY p.start_time DESC, p.trace_id DESC`, prefixColumns("p", traceColumns), s.tables.spans, traceColumns, s.tables.traces, where, limit, offset)
	traces, err := queryAll(ctx, conn, scanTraceWithCounts, query, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list traces: %w", err)
	}
	if err := s.rootInputs(ctx, conn, traces); err != nil {
		return nil, 0, err
	}
	return traces, total, nil
}

// rootInputs sets each trace's Input: the input.value of its first root
// span (one whose parent is not in the trace — none, or a caller's).
func (s *Store) rootInputs(ctx context.Context, conn Conn, traces []storage.Trace) error {
	if len(traces) == 0 {
		return nil
	}
	ids := make([]any, len(traces))
	for i, t := range traces {
		ids[i] = t.TraceID
	}
	query := fmt.Sprintf(`SELECT %[1]s FROM %[2]s AS s WHERE s.trace_id IN (%[3]s)
	AND NOT EXISTS (SELECT 1 FROM %[2]s AS parent WHERE parent.span_id = s.parent_span_id)
ORDER BY s.start_time, s.span_id`, prefixColumns("s", spanColumns), s.tables.spans, strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", "))
	roots, err := queryAll(ctx, conn, scanSpan, query, ids...)
	if err != nil {
		return fmt.Errorf("read the traces' root spans: %w", err)
	}
	first := make(map[string]string, len(traces))
	for _, root := range roots {
		if _, seen := first[root.TraceID]; seen {
			continue
		}
		input, _ := root.Attributes["input.value"].(string)
		first[root.TraceID] = input
	}
	for i := range traces {
		traces[i].Input = first[traces[i].TraceID]
	}
	return nil
}

// GetTrace implements [storage.TraceStore]. The counts are those of the
// spans returned.
func (s *Store) GetTrace(ctx context.Context, traceID string) (*storage.Trace, []storage.Span, error) {
	conn := s.db.Reader()
	tr, err := scanTrace(conn.QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE trace_id = ?", traceColumns, s.tables.traces), traceID))
	if errors.Is(err, ErrNoRows) {
		return nil, nil, notFound("trace", traceID)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get trace %s: %w", traceID, err)
	}
	spans, err := queryAll(ctx, conn, scanSpan, fmt.Sprintf("SELECT %s FROM %s WHERE trace_id = ? ORDER BY start_time, span_id", spanColumns, s.tables.spans), traceID)
	if err != nil {
		return nil, nil, fmt.Errorf("get spans of trace %s: %w", traceID, err)
	}
	tr.TotalSpans = len(spans)
	for i := range spans {
		if spans[i].StatusCode == traceStatusError {
			tr.ErrorCount++
		}
	}
	return &tr, spans, nil
}

// TraceSessionStats implements [storage.TraceStore]. A session's user,
// agent, team and workflow are the least of its traces' (traces of one
// session agree on them).
func (s *Store) TraceSessionStats(ctx context.Context, f storage.TraceFilter) ([]storage.TraceSessionStats, int, error) {
	limit, offset, err := tracePage(f.Page, f.Limit)
	if err != nil {
		return nil, 0, err
	}
	conds, args, err := s.traceConditions(f)
	if err != nil {
		return nil, 0, err
	}
	where := whereClause(append(conds, "session_id IS NOT NULL", "session_id <> ''"))
	conn := s.db.Reader()
	var total int
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(DISTINCT session_id) FROM %s%s", s.tables.traces, where), args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count traced sessions: %w", err)
	}
	if total <= offset {
		return nil, total, nil
	}
	query := fmt.Sprintf(`SELECT session_id, MIN(NULLIF(user_id, '')), MIN(NULLIF(agent_id, '')), MIN(NULLIF(team_id, '')), MIN(NULLIF(workflow_id, '')),
	COUNT(*), MIN(start_time), MAX(start_time)
FROM %s%s
GROUP BY session_id
ORDER BY MAX(start_time) DESC, session_id DESC
LIMIT %d OFFSET %d`, s.tables.traces, where, limit, offset)
	stats, err := queryAll(ctx, conn, scanTraceSessionStats, query, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("trace session stats: %w", err)
	}
	return stats, total, nil
}

// DeleteTracesBefore implements [storage.TraceStore]. The spans are
// deleted by name rather than by the foreign key's cascade, which SQLite
// applies only on connections that enable foreign keys.
func (s *Store) DeleteTracesBefore(ctx context.Context, t time.Time) (int64, error) {
	cutoff := isoTime(t)
	var deleted int64
	err := s.db.InTx(ctx, func(tx Conn) error {
		_, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE trace_id IN (SELECT trace_id FROM %s WHERE created_at < ?)", s.tables.spans, s.tables.traces), cutoff)
		if err != nil {
			return err
		}
		deleted, err = tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE created_at < ?", s.tables.traces), cutoff)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete traces before %s: %w", cutoff, err)
	}
	return deleted, nil
}

// tracePage returns the LIMIT and OFFSET of a trace listing: pages from 1
// (0 is the first), Limit 0 is 20 and more than 100 is 100.
func tracePage(page, limit int) (int, int, error) {
	if page < 0 {
		return 0, 0, storage.Invalidf("page %d: pages start at 1", page)
	}
	if limit < 0 {
		return 0, 0, storage.Invalidf("limit %d: must be positive", limit)
	}
	page = max(page, 1)
	if limit == 0 {
		limit = traceDefaultLimit
	}
	limit = min(limit, traceMaxLimit)
	if page-1 > math.MaxInt32/limit {
		return 0, 0, storage.Invalidf("page %d: too far", page)
	}
	return limit, (page - 1) * limit, nil
}

// traceConditions compiles a trace filter to WHERE conditions and their
// arguments.
func (s *Store) traceConditions(f storage.TraceFilter) ([]string, []any, error) {
	var conds []string
	var args []any
	for _, eq := range []struct{ column, value string }{
		{"run_id", f.RunID}, {"session_id", f.SessionID}, {"user_id", f.UserID}, {"agent_id", f.AgentID},
		{"team_id", f.TeamID}, {"workflow_id", f.WorkflowID}, {"status", f.Status},
	} {
		if eq.value != "" {
			conds, args = append(conds, eq.column+" = ?"), append(args, eq.value)
		}
	}
	if !f.StartTime.IsZero() {
		conds, args = append(conds, "start_time >= ?"), append(args, isoTime(f.StartTime))
	}
	if !f.EndTime.IsZero() {
		conds, args = append(conds, "end_time <= ?"), append(args, isoTime(f.EndTime))
	}
	if f.Expr != nil {
		c := filterCompiler{}
		cond, err := c.compile(f.Expr, 1)
		if err != nil {
			return nil, nil, err
		}
		conds, args = append(conds, cond), append(args, c.args...)
	}
	return conds, args, nil
}

// nullableTraceColumns are the trace columns that may be NULL.
var nullableTraceColumns = map[string]bool{
	"run_id": true, "session_id": true, "user_id": true, "agent_id": true, "team_id": true, "workflow_id": true,
}

// filterCompiler compiles a [storage.FilterExpr] to a SQL condition whose
// values are all arguments: a key is a column only once it is one of
// [storage.TraceFilterKeys], an operator only once it is known. Every
// condition is true or false, never NULL, where NOT could turn a missing
// value into a match: NEQ matches a NULL column, NOT matches a condition
// that is not true.
type filterCompiler struct{ args []any }

func (c *filterCompiler) compile(e *storage.FilterExpr, depth int) (string, error) {
	if e == nil {
		return "", storage.Invalidf("filter: empty condition")
	}
	if depth > maxFilterDepth {
		return "", storage.Invalidf("filter: nested deeper than %d", maxFilterDepth)
	}
	op := strings.ToUpper(strings.TrimSpace(e.Op))
	switch op {
	case "AND", "OR":
		if len(e.Conditions) == 0 {
			return "", storage.Invalidf("filter: %s needs conditions", op)
		}
		parts := make([]string, len(e.Conditions))
		for i, sub := range e.Conditions {
			part, err := c.compile(sub, depth+1)
			if err != nil {
				return "", err
			}
			parts[i] = part
		}
		return "(" + strings.Join(parts, " "+op+" ") + ")", nil
	case "NOT":
		inner, err := c.compile(e.Condition, depth+1)
		if err != nil {
			return "", err
		}
		return "(NOT COALESCE(" + inner + ", FALSE))", nil
	}
	kind, ok := storage.TraceFilterKeys[e.Key]
	if !ok {
		return "", storage.Invalidf("filter: unknown key %q", e.Key)
	}
	column := e.Key // a known key is its column's name
	switch op {
	case "EQ", "NEQ", "GT", "GTE", "LT", "LTE":
		value, err := filterValue(e.Key, kind, e.Value)
		if err != nil {
			return "", err
		}
		c.args = append(c.args, value)
		arg := filterArg(kind)
		switch op {
		case "EQ":
			return column + " = " + arg, nil
		case "NEQ":
			if nullableTraceColumns[column] {
				return "(" + column + " <> " + arg + " OR " + column + " IS NULL)", nil
			}
			return column + " <> " + arg, nil
		case "GT":
			return column + " > " + arg, nil
		case "GTE":
			return column + " >= " + arg, nil
		case "LT":
			return column + " < " + arg, nil
		default:
			return column + " <= " + arg, nil
		}
	case "CONTAINS", "STARTSWITH":
		if kind == "number" {
			return "", storage.Invalidf("filter: %s does not apply to the number %s", op, e.Key)
		}
		text, ok := e.Value.(string)
		if !ok {
			return "", storage.Invalidf("filter: %s %s needs a string value", e.Key, op)
		}
		pattern := likeEscaper.Replace(strings.ToLower(text)) + "%"
		if op == "CONTAINS" {
			pattern = "%" + pattern
		}
		c.args = append(c.args, pattern)
		return "LOWER(" + column + `) LIKE ? ESCAPE '\'`, nil
	case "IN":
		if len(e.Values) == 0 {
			return "(1 = 0)", nil
		}
		marks := make([]string, len(e.Values))
		for i, raw := range e.Values {
			value, err := filterValue(e.Key, kind, raw)
			if err != nil {
				return "", err
			}
			c.args = append(c.args, value)
			marks[i] = filterArg(kind)
		}
		return column + " IN (" + strings.Join(marks, ", ") + ")", nil
	}
	return "", storage.Invalidf("filter: unknown operator %q", e.Op)
}

// likeEscaper escapes LIKE's wildcards with a backslash.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// filterArg is the placeholder of a value of kind: numbers compare as
// floating point, so that 1.5 is a valid bound of a BIGINT column.
func filterArg(kind string) string {
	if kind == "number" {
		return "CAST(? AS DOUBLE PRECISION)"
	}
	return "?"
}

// filterValue converts a filter's value for key, of kind, to its argument.
func filterValue(key, kind string, value any) (any, error) {
	switch kind {
	case "number":
		n, ok := filterNumber(value)
		if !ok {
			return nil, storage.Invalidf("filter: %s needs a number, not %v", key, value)
		}
		return n, nil
	case "datetime":
		if t, ok := value.(time.Time); ok {
			return isoTime(t), nil
		}
		text, ok := value.(string)
		if !ok {
			return nil, storage.Invalidf("filter: %s needs an ISO-8601 time, not %v", key, value)
		}
		t, err := parseISOTime(text)
		if err != nil {
			return nil, storage.Invalidf("filter: %s: %v", key, err)
		}
		return isoTime(t), nil
	case "enum":
		text, ok := value.(string)
		text = strings.ToUpper(text)
		if !ok || (text != traceStatusOK && text != traceStatusError) {
			return nil, storage.Invalidf("filter: %s is OK or ERROR, not %v", key, value)
		}
		return text, nil
	}
	text, ok := value.(string)
	if !ok {
		return nil, storage.Invalidf("filter: %s needs a string, not %v", key, value)
	}
	return text, nil
}

// filterNumber reads a number as JSON or Go gives it.
func filterNumber(value any) (float64, bool) {
	var n float64
	switch v := value.(type) {
	case float64:
		n = v
	case float32:
		n = float64(v)
	case int:
		n = float64(v)
	case int64:
		n = float64(v)
	case int32:
		n = float64(v)
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return 0, false
		}
		n = f
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, false
		}
		n = f
	default:
		return 0, false
	}
	return n, !math.IsNaN(n) && !math.IsInf(n, 0)
}

// prefixColumns qualifies each of a comma-separated column list with alias.
func prefixColumns(alias, columns string) string {
	names := strings.Split(columns, ", ")
	for i, name := range names {
		names[i] = alias + "." + name
	}
	return strings.Join(names, ", ")
}

// traceTime scans an ISO-8601 text column into a UTC time.
type traceTime struct{ t *time.Time }

func (d traceTime) Scan(src any) error {
	var text string
	if err := (nullString{&text}).Scan(src); err != nil {
		return err
	}
	if text == "" {
		*d.t = time.Time{}
		return nil
	}
	t, err := parseISOTime(text)
	if err != nil {
		return fmt.Errorf("read time: %w", err)
	}
	*d.t = t
	return nil
}

// traceDest are the scan destinations of traceColumns.
func traceDest(tr *storage.Trace) []any {
	return []any{&tr.TraceID, nullString{&tr.Name}, nullString{&tr.Status}, traceTime{&tr.StartTime}, traceTime{&tr.EndTime},
		nullInt64{&tr.DurationMS}, nullString{&tr.RunID}, nullString{&tr.SessionID}, nullString{&tr.UserID}, nullString{&tr.AgentID},
		nullString{&tr.TeamID}, nullString{&tr.WorkflowID}, traceTime{&tr.CreatedAt}}
}

func scanTrace(row Row) (storage.Trace, error) {
	var tr storage.Trace
	err := row.Scan(traceDest(&tr)...)
	return tr, err
}

func scanTraceWithCounts(row Row) (storage.Trace, error) {
	var tr storage.Trace
	err := row.Scan(append(traceDest(&tr), &tr.TotalSpans, &tr.ErrorCount)...)
	return tr, err
}

func scanSpan(row Row) (storage.Span, error) {
	var (
		sp  storage.Span
		doc []byte
	)
	err := row.Scan(&sp.SpanID, &sp.TraceID, nullString{&sp.ParentSpanID}, nullString{&sp.Name}, nullString{&sp.SpanKind},
		nullString{&sp.StatusCode}, nullString{&sp.StatusMessage}, traceTime{&sp.StartTime}, traceTime{&sp.EndTime},
		nullInt64{&sp.DurationMS}, jsonBytes{&doc}, traceTime{&sp.CreatedAt})
	if err != nil {
		return sp, err
	}
	if err := unmarshalObject(doc, &sp.Attributes); err != nil {
		return sp, fmt.Errorf("span %s: attributes: %w", sp.SpanID, err)
	}
	return sp, nil
}

func scanTraceSessionStats(row Row) (storage.TraceSessionStats, error) {
	var st storage.TraceSessionStats
	err := row.Scan(&st.SessionID, nullString{&st.UserID}, nullString{&st.AgentID}, nullString{&st.TeamID}, nullString{&st.WorkflowID},
		&st.TotalTraces, traceTime{&st.FirstTraceAt}, traceTime{&st.LastTraceAt})
	return st, err
}
