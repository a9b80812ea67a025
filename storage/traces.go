package storage

import (
	"context"
	"time"
)

// The tables of traces, as Agno 3.x names them.
const (
	// TracesTable holds one row per trace.
	TracesTable = "agno_traces"
	// SpansTable holds the spans of every trace.
	SpansTable = "agno_spans"
)

// Span is one span of a trace (a row of agno_spans).
type Span struct {
	// SpanID is 16 lowercase hex digits.
	SpanID string `json:"span_id"`
	// TraceID is 32 lowercase hex digits.
	TraceID string `json:"trace_id"`
	// ParentSpanID is the parent's span id; "" for a root span (or one
	// whose parent lives in another process's trace).
	ParentSpanID string `json:"parent_span_id,omitempty"`
	// Name is the span's name ("Assistant.run", "gpt-5-mini.invoke", a
	// tool's name).
	Name string `json:"name"`
	// SpanKind is INTERNAL, SERVER, CLIENT, PRODUCER or CONSUMER.
	SpanKind string `json:"span_kind"`
	// StatusCode is UNSET, OK or ERROR.
	StatusCode string `json:"status_code"`
	// StatusMessage describes an error.
	StatusMessage string `json:"status_message,omitempty"`
	// StartTime and EndTime bound the span.
	StartTime time.Time `json:"start_time"`
	EndTime   time.Time `json:"end_time"`
	// DurationMS is EndTime - StartTime in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Attributes are the span's attributes (OpenInference names:
	// openinference.span.kind, input.value, llm.model_name, …); values are
	// strings, numbers, booleans or lists of them.
	Attributes map[string]any `json:"attributes"`
	// CreatedAt is when the span was written.
	CreatedAt time.Time `json:"created_at"`
}

// Trace is one trace (a row of agno_traces), with the counts computed from
// its spans when it is read.
type Trace struct {
	// TraceID is 32 lowercase hex digits.
	TraceID string `json:"trace_id"`
	// Name is the name of the trace's highest-level span: a workflow's
	// over a team's over an agent's over any other.
	Name string `json:"name"`
	// Status is OK or ERROR; ERROR once any write said so.
	Status string `json:"status"`
	// StartTime and EndTime are the earliest start and latest end of its
	// spans; DurationMS is the difference in milliseconds.
	StartTime  time.Time `json:"start_time"`
	EndTime    time.Time `json:"end_time"`
	DurationMS int64     `json:"duration_ms"`
	// The context of the trace, from its root spans; the first value
	// written for each is kept.
	RunID      string `json:"run_id,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	UserID     string `json:"user_id,omitempty"`
	AgentID    string `json:"agent_id,omitempty"`
	TeamID     string `json:"team_id,omitempty"`
	WorkflowID string `json:"workflow_id,omitempty"`
	// CreatedAt is when the trace was first written.
	CreatedAt time.Time `json:"created_at"`
	// TotalSpans and ErrorCount are computed from the spans on read; they
	// are not stored.
	TotalSpans int `json:"total_spans"`
	ErrorCount int `json:"error_count"`
	// Input is the input.value of the trace's root span (its first span
	// without a parent), read with the trace by ListTraces; not stored.
	Input string `json:"input,omitempty"`
}

// The levels of a trace's name: a write replaces the stored name only with
// a higher one.
const (
	TraceLevelChild    = 0
	TraceLevelAgent    = 1
	TraceLevelTeam     = 2
	TraceLevelWorkflow = 3
)

// TraceWrite is what one export batch writes of one trace: the trace's
// fields as the batch sees them, merged into the stored row (start the
// earliest, end the latest, the duration recomputed from them, status ERROR
// when either side is, the name replaced only by a higher NameLevel; the
// context replaced whole by a higher-level write that names its run — a
// team's run over its member's — ignored from a lower-level one, and
// between writes of one level each field kept once set), and the batch's
// spans, inserted
// (a span id already stored is left as it is). A write needs a TraceID, and
// start and end times (those missing are taken from its spans).
type TraceWrite struct {
	// Trace holds the batch's view: TraceID, Name, Status, StartTime,
	// EndTime and the context fields (empty when the batch has only child
	// spans). CreatedAt is the write's time. Counts are ignored.
	Trace Trace
	// NameLevel ranks Name ([TraceLevelChild] … [TraceLevelWorkflow]).
	NameLevel int
	// Spans are the batch's spans of the trace; a span without a TraceID
	// takes the write's.
	Spans []Span
}

// TraceFilter selects traces. Empty fields select everything.
type TraceFilter struct {
	// RunID, SessionID, UserID, AgentID, TeamID and WorkflowID match the
	// trace's context exactly; Status is OK or ERROR.
	RunID, SessionID, UserID, AgentID, TeamID, WorkflowID, Status string
	// StartTime keeps traces that started at or after it, EndTime those
	// that ended at or before it; zero leaves the side open.
	StartTime, EndTime time.Time
	// Expr, when set, must hold too (POST /traces/search).
	Expr *FilterExpr
	// Page (from 1; 0 is the first) and Limit page the newest traces
	// first; Limit 0 means 20, and more than 100 means 100.
	Page, Limit int
}

// FilterExpr is a condition of Agno's filter language over a trace's
// fields: the comparisons EQ, NEQ, GT, GTE, LT, LTE, CONTAINS and
// STARTSWITH of Key with Value; IN of Key with Values; AND and OR of
// Conditions; NOT of Condition. Keys are those of [TraceFilterKeys].
//
// CONTAINS and STARTSWITH ignore case and take % and _ literally; a
// datetime value is an ISO-8601 time, compared as an instant; IN of no
// values matches nothing; NEQ and NOT match a trace that lacks the field.
// Conditions nest at most 10 deep. A store refuses an unknown key or
// operator, or a value of the wrong type, with an error wrapping
// [ErrInvalid].
type FilterExpr struct {
	Op         string        `json:"op"`
	Key        string        `json:"key,omitempty"`
	Value      any           `json:"value,omitempty"`
	Values     []any         `json:"values,omitempty"`
	Conditions []*FilterExpr `json:"conditions,omitempty"`
	Condition  *FilterExpr   `json:"condition,omitempty"`
}

// TraceFilterKeys are the trace fields a [FilterExpr] may name, each with
// its type: string, enum (status: OK, ERROR), number or datetime (an
// ISO-8601 string).
var TraceFilterKeys = map[string]string{
	"status": "enum", "user_id": "string", "agent_id": "string", "team_id": "string", "workflow_id": "string",
	"session_id": "string", "run_id": "string", "name": "string", "trace_id": "string", "duration_ms": "number",
	"start_time": "datetime", "end_time": "datetime", "created_at": "datetime",
}

// TraceSessionStats counts the traces of one session.
type TraceSessionStats struct {
	SessionID    string    `json:"session_id"`
	UserID       string    `json:"user_id,omitempty"`
	AgentID      string    `json:"agent_id,omitempty"`
	TeamID       string    `json:"team_id,omitempty"`
	WorkflowID   string    `json:"workflow_id,omitempty"`
	TotalTraces  int       `json:"total_traces"`
	FirstTraceAt time.Time `json:"first_trace_at"`
	LastTraceAt  time.Time `json:"last_trace_at"`
}

// TraceStore keeps traces and their spans (agno_traces, agno_spans), which
// the tracing exporter writes and the /traces routes read. Both SQL stores
// implement it.
type TraceStore interface {
	// WriteTraces writes export batches, each trace merged into its
	// stored row (see [TraceWrite]), in one transaction.
	WriteTraces(ctx context.Context, writes []TraceWrite) error
	// ListTraces returns a page of the traces the filter selects, newest
	// (by start time) first, with their span counts, and how many it
	// selects in all.
	ListTraces(ctx context.Context, f TraceFilter) ([]Trace, int, error)
	// GetTrace returns a trace with its counts and all its spans, by start
	// time; [ErrNotFound] when there is none.
	GetTrace(ctx context.Context, traceID string) (*Trace, []Span, error)
	// TraceSessionStats returns a page of per-session counts of the traces
	// the filter selects (traces without a session left out), the most
	// recently traced session first, and how many sessions there are.
	TraceSessionStats(ctx context.Context, f TraceFilter) ([]TraceSessionStats, int, error)
	// DeleteTracesBefore deletes the traces created before t with their
	// spans, and returns how many traces it deleted.
	DeleteTracesBefore(ctx context.Context, t time.Time) (int64, error)
}
