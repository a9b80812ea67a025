package agentos

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/storage"
)

// The trace routes (tracing.md §c.4): the spans the tracing exporter wrote
// to agno_traces and agno_spans, as Agno's TraceSummary, TraceDetail and
// TraceNode. They are mounted whether tracing is on or not (off, they find
// nothing), need traces:read, and under user isolation show a caller only
// their own traces.
func (o *OS) traceRoutes(mux *http.ServeMux) {
	o.mount(mux, []endpoint{
		{"GET /traces", "traces", "read", "", o.handleListTraces},
		{"GET /traces/filter-schema", "traces", "read", "", o.handleTraceFilterSchema},
		{"GET /traces/{trace_id}", "traces", "read", "", o.handleGetTrace},
		{"GET /trace_session_stats", "traces", "read", "", o.handleTraceSessionStats},
		{"POST /traces/search", "traces", "read", "", o.handleSearchTraces},
	})
}

// traceStore is the store's trace tables; nil when it has none.
func (o *OS) traceStore() storage.TraceStore {
	ts, _ := o.cfg.Store.(storage.TraceStore)
	return ts
}

// traceSummary is Agno's TraceSummary.
type traceSummary struct {
	TraceID    string  `json:"trace_id"`
	Name       string  `json:"name"`
	Status     string  `json:"status"`
	Duration   string  `json:"duration"`
	StartTime  string  `json:"start_time"`
	EndTime    string  `json:"end_time"`
	TotalSpans int     `json:"total_spans"`
	ErrorCount int     `json:"error_count"`
	Input      *string `json:"input,omitempty"`
	RunID      string  `json:"run_id,omitempty"`
	SessionID  string  `json:"session_id,omitempty"`
	UserID     string  `json:"user_id,omitempty"`
	AgentID    string  `json:"agent_id,omitempty"`
	TeamID     string  `json:"team_id,omitempty"`
	WorkflowID string  `json:"workflow_id,omitempty"`
	CreatedAt  string  `json:"created_at"`
}

// traceDetail is Agno's TraceDetail: a summary, the trace's answer or
// error, and its spans as a tree.
type traceDetail struct {
	traceSummary
	Output *string      `json:"output,omitempty"`
	Error  *string      `json:"error,omitempty"`
	Tree   []*traceNode `json:"tree"`
}

// traceNode is Agno's TraceNode: a span with its children under spans.
type traceNode struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Type      string         `json:"type"`
	Duration  string         `json:"duration"`
	StartTime string         `json:"start_time"`
	EndTime   string         `json:"end_time"`
	Status    string         `json:"status"`
	Input     *string        `json:"input,omitempty"`
	Output    *string        `json:"output,omitempty"`
	Error     *string        `json:"error,omitempty"`
	Spans     []*traceNode   `json:"spans,omitempty"`
	StepType  *string        `json:"step_type,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	ExtraData map[string]any `json:"extra_data,omitempty"`

	end time.Time
}

// isoTime renders a trace time as Agno's API does.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

// formatDuration is Agno's format_duration_ms: "150ms", else "1.50s".
func formatDuration(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%dms", ms)
	}
	return fmt.Sprintf("%.2fs", float64(ms)/1000)
}

func summaryOf(t storage.Trace) traceSummary {
	return traceSummary{TraceID: t.TraceID, Name: t.Name, Status: t.Status, Duration: formatDuration(t.DurationMS),
		StartTime: isoTime(t.StartTime), EndTime: isoTime(t.EndTime), TotalSpans: t.TotalSpans, ErrorCount: t.ErrorCount,
		RunID: t.RunID, SessionID: t.SessionID, UserID: t.UserID, AgentID: t.AgentID, TeamID: t.TeamID, WorkflowID: t.WorkflowID,
		CreatedAt: isoTime(t.CreatedAt)}
}

// traceFilter reads the filters GET /traces and /trace_session_stats share.
func (o *OS) traceFilter(r *http.Request, q *queryReader) storage.TraceFilter {
	f := storage.TraceFilter{
		RunID: q.str("run_id"), SessionID: q.str("session_id"), UserID: o.userScope(r, q.str("user_id")),
		AgentID: q.str("agent_id"), TeamID: q.str("team_id"), WorkflowID: q.str("workflow_id"),
	}
	f.StartTime = q.isoTime("start_time")
	f.EndTime = q.isoTime("end_time")
	return f
}

// isoTime reads an ISO-8601 timestamp parameter, converted to UTC; zero
// when absent.
func (q *queryReader) isoTime(name string) time.Time {
	raw := strings.TrimSpace(q.values.Get(name))
	if raw == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, raw); err == nil {
			return t.UTC()
		}
	}
	q.issues = append(q.issues, validationIssue{Loc: []string{"query", name},
		Msg: "Input should be a valid datetime in ISO-8601 format, such as 2026-12-02T15:04:05+00:00", Type: "datetime_from_date_parsing"})
	return time.Time{}
}

func (o *OS) handleListTraces(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	q := newQueryReader(r)
	page := q.pagination()
	f := o.traceFilter(r, q)
	f.Status = q.enum("status", "", "OK", "ERROR")
	if q.failed(w) {
		return
	}
	ts := o.traceStore()
	if ts == nil {
		writeJSON(w, http.StatusOK, paginate([]traceSummary{}, page, 0, started))
		return
	}
	f.Page, f.Limit = max(page.Page, 1), page.Limit
	traces, total, err := ts.ListTraces(r.Context(), f)
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	items := make([]traceSummary, 0, len(traces))
	for _, t := range traces {
		summary := summaryOf(t)
		if t.Input != "" {
			summary.Input = &t.Input
		}
		items = append(items, summary)
	}
	writeJSON(w, http.StatusOK, paginate(items, page, total, started))
}

func (o *OS) handleGetTrace(w http.ResponseWriter, r *http.Request) {
	traceID := r.PathValue("trace_id")
	q := newQueryReader(r)
	spanID, runID := q.str("span_id"), q.str("run_id")
	ts := o.traceStore()
	notFound := func() { writeError(w, http.StatusNotFound, fmt.Sprintf("Trace with ID %s not found", traceID)) }
	if ts == nil {
		notFound()
		return
	}
	t, spans, err := ts.GetTrace(r.Context(), traceID)
	if errors.Is(err, storage.ErrNotFound) {
		notFound()
		return
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	if scoped := o.userScope(r, ""); scoped != "" && t.UserID != scoped || runID != "" && t.RunID != runID {
		notFound() // another user's trace is not there for this caller
		return
	}
	detail := buildTraceDetail(*t, spans)
	if spanID == "" {
		writeJSON(w, http.StatusOK, detail)
		return
	}
	if node := findNode(detail.Tree, spanID); node != nil {
		writeJSON(w, http.StatusOK, node)
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("Span with ID %s not found in trace %s", spanID, traceID))
}

// findNode finds a span in a tree.
func findNode(nodes []*traceNode, id string) *traceNode {
	for _, n := range nodes {
		if n.ID == id {
			return n
		}
		if found := findNode(n.Spans, id); found != nil {
			return found
		}
	}
	return nil
}

// buildTraceDetail builds the span tree of a trace: spans under their
// parents, by start time; a span whose parent is not in the trace (its
// parent ran in a process that died, or is the caller's) is a root.
func buildTraceDetail(t storage.Trace, spans []storage.Span) traceDetail {
	detail := traceDetail{traceSummary: summaryOf(t), Tree: []*traceNode{}}
	nodes := make(map[string]*traceNode, len(spans))
	for _, s := range spans {
		nodes[s.SpanID] = nodeOf(s)
	}
	var roots []*traceNode
	var rootSpans []storage.Span
	for _, s := range spans {
		node := nodes[s.SpanID]
		if parent, ok := nodes[s.ParentSpanID]; ok && s.ParentSpanID != s.SpanID {
			parent.Spans = append(parent.Spans, node)
			continue
		}
		roots = append(roots, node)
		rootSpans = append(rootSpans, s)
	}
	byStart := func(list []*traceNode) {
		sort.SliceStable(list, func(i, j int) bool { return list[i].StartTime < list[j].StartTime })
	}
	for _, n := range nodes {
		byStart(n.Spans)
	}
	byStart(roots)
	if len(roots) > 0 {
		root := roots[0]
		var input, output int64
		for _, s := range spans {
			if s.Attributes[observe.AttrSpanKind] == observe.KindLLM {
				input += attrInt(s.Attributes, observe.AttrPromptTokens)
				output += attrInt(s.Attributes, observe.AttrOutputTokens)
			}
		}
		if root.Metadata == nil {
			root.Metadata = map[string]any{}
		}
		root.Metadata["total_input_tokens"], root.Metadata["total_output_tokens"] = input, output
		detail.Input, detail.Output, detail.Error = root.Input, root.Output, root.Error
		if (detail.Output == nil || *detail.Output == "") && root.Type == "WORKFLOW" && len(root.Spans) > 0 {
			last := root.Spans[0]
			for _, child := range root.Spans {
				if child.end.After(last.end) {
					last = child
				}
			}
			detail.Output = last.Output
		}
		if root.Type == "WORKFLOW" {
			var stepTypes []string
			if s := rootSpans[0]; s.SpanID == root.ID {
				stepTypes = attrStrings(s.Attributes, "agno.workflow.step_types")
			}
			for i, child := range root.Spans {
				if i < len(stepTypes) && child.StepType == nil {
					child.StepType = &stepTypes[i]
				}
			}
		}
	}
	detail.Tree = roots
	if detail.Tree == nil {
		detail.Tree = []*traceNode{}
	}
	return detail
}

// nodeOf is a span as a tree node, with the metadata of its kind.
func nodeOf(s storage.Span) *traceNode {
	a := s.Attributes
	str := func(key string) *string {
		if v, ok := a[key].(string); ok && v != "" {
			return &v
		}
		return nil
	}
	n := &traceNode{ID: s.SpanID, Name: s.Name, Duration: formatDuration(s.DurationMS), StartTime: isoTime(s.StartTime),
		EndTime: isoTime(s.EndTime), Status: s.StatusCode, Input: str(observe.AttrInput), Output: str(observe.AttrOutput), end: s.EndTime}
	if s.StatusCode == "ERROR" {
		msg := s.StatusMessage
		if msg == "" {
			msg, _ = a["exception.message"].(string)
		}
		n.Error = &msg
	}
	kind, _ := a[observe.AttrSpanKind].(string)
	metadata := map[string]any{}
	switch {
	case kind == observe.KindAgent && a[observe.AttrTeamID] != nil:
		n.Type = "TEAM"
		metadata["run_id"] = a[observe.AttrRunID]
	case kind == observe.KindAgent:
		n.Type = "AGENT"
		metadata["run_id"] = a[observe.AttrRunID]
	case kind == observe.KindChain && a[observe.AttrWorkflowID] != nil:
		n.Type = "WORKFLOW"
		metadata["run_id"] = a[observe.AttrRunID]
		for _, key := range []string{"description", "steps_count", "steps", "step_types"} {
			if v, ok := a["agno.workflow."+key]; ok {
				metadata[key] = v
			}
		}
	case kind == observe.KindLLM:
		n.Type = "LLM"
		metadata["model"] = a[observe.AttrModelName]
		metadata["input_tokens"] = attrInt(a, observe.AttrPromptTokens)
		metadata["output_tokens"] = attrInt(a, observe.AttrOutputTokens)
		if cost, ok := a[observe.AttrCost]; ok {
			metadata["cost"] = cost
		}
	case kind == observe.KindTool:
		n.Type = "TOOL"
		metadata["tool_name"] = a[observe.AttrToolName]
		metadata["parameters"] = a[observe.AttrToolParameters]
	case kind != "":
		n.Type = kind
	default:
		n.Type = "UNKNOWN"
	}
	n.StepType = str(observe.AttrStepType)
	for _, key := range []string{observe.AttrSessionID, observe.AttrUserID} {
		if v, ok := a[key].(string); ok && v != "" {
			metadata[strings.ReplaceAll(key, ".", "_")] = v
		}
	}
	for key, value := range metadata {
		if value == nil {
			delete(metadata, key)
		}
	}
	if len(metadata) > 0 {
		n.Metadata = metadata
	}
	return n
}

// attrInt reads a numeric attribute.
func attrInt(a map[string]any, key string) int64 {
	switch v := a[key].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case json.Number:
		n, _ := v.Int64()
		return n
	case int:
		return int64(v)
	}
	return 0
}

// attrStrings reads a list-of-strings attribute.
func attrStrings(a map[string]any, key string) []string {
	switch v := a[key].(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			s, _ := item.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

// traceSessionStats is Agno's TraceSessionStats.
type traceSessionStats struct {
	SessionID    string `json:"session_id"`
	UserID       string `json:"user_id,omitempty"`
	AgentID      string `json:"agent_id,omitempty"`
	TeamID       string `json:"team_id,omitempty"`
	WorkflowID   string `json:"workflow_id,omitempty"`
	TotalTraces  int    `json:"total_traces"`
	FirstTraceAt string `json:"first_trace_at"`
	LastTraceAt  string `json:"last_trace_at"`
}

// statsList is a page of per-session counts as the API answers them.
func statsList(stats []storage.TraceSessionStats) []traceSessionStats {
	items := make([]traceSessionStats, 0, len(stats))
	for _, s := range stats {
		items = append(items, statsOf(s))
	}
	return items
}

func statsOf(s storage.TraceSessionStats) traceSessionStats {
	return traceSessionStats{SessionID: s.SessionID, UserID: s.UserID, AgentID: s.AgentID, TeamID: s.TeamID, WorkflowID: s.WorkflowID,
		TotalTraces: s.TotalTraces, FirstTraceAt: isoTime(s.FirstTraceAt), LastTraceAt: isoTime(s.LastTraceAt)}
}

func (o *OS) handleTraceSessionStats(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	q := newQueryReader(r)
	page := pageParams{Limit: q.integer("limit", 20, 1), Page: q.integer("page", 1, 1)}
	f := o.traceFilter(r, q)
	if q.failed(w) {
		return
	}
	ts := o.traceStore()
	if ts == nil {
		writeJSON(w, http.StatusOK, paginate([]traceSessionStats{}, page, 0, started))
		return
	}
	f.Page, f.Limit = page.Page, min(page.Limit, maxPageLimit)
	stats, total, err := ts.TraceSessionStats(r.Context(), f)
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, paginate(statsList(stats), page, total, started))
}

// traceFilterField is one field of GET /traces/filter-schema.
type traceFilterField struct {
	Key       string   `json:"key"`
	Label     string   `json:"label"`
	Type      string   `json:"type"`
	Operators []string `json:"operators"`
	Values    []string `json:"values,omitempty"`
}

func (o *OS) handleTraceFilterSchema(w http.ResponseWriter, _ *http.Request) {
	operators := map[string][]string{
		"string":   {"EQ", "NEQ", "CONTAINS", "STARTSWITH", "IN"},
		"enum":     {"EQ", "NEQ", "IN"},
		"number":   {"EQ", "NEQ", "GT", "GTE", "LT", "LTE", "IN"},
		"datetime": {"EQ", "GT", "GTE", "LT", "LTE"},
	}
	labels := map[string]string{"status": "Status", "user_id": "User ID", "agent_id": "Agent ID", "team_id": "Team ID",
		"workflow_id": "Workflow ID", "session_id": "Session ID", "run_id": "Run ID", "name": "Name", "trace_id": "Trace ID",
		"duration_ms": "Duration (ms)", "start_time": "Start time", "end_time": "End time", "created_at": "Created at"}
	order := []string{"status", "user_id", "agent_id", "team_id", "workflow_id", "session_id", "run_id", "name", "trace_id",
		"duration_ms", "start_time", "end_time", "created_at"}
	fields := make([]traceFilterField, 0, len(order))
	for _, key := range order {
		typ := storage.TraceFilterKeys[key]
		field := traceFilterField{Key: key, Label: labels[key], Type: typ, Operators: operators[typ]}
		if key == "status" {
			field.Values = []string{"OK", "ERROR"}
		}
		fields = append(fields, field)
	}
	writeJSON(w, http.StatusOK, map[string]any{"fields": fields, "logical_operators": []string{"AND", "OR"}})
}

// maxFilterDepth bounds a search filter's nesting, as Agno's from_dict.
const maxFilterDepth = 10

// checkFilter reports what is wrong with a search filter, or "".
func checkFilter(f *storage.FilterExpr, depth int) string {
	if f == nil {
		return "a condition is null"
	}
	if depth > maxFilterDepth {
		return fmt.Sprintf("the filter nests deeper than %d levels", maxFilterDepth)
	}
	switch f.Op {
	case "AND", "OR":
		if len(f.Conditions) == 0 {
			return f.Op + " needs conditions: a list of at least one condition"
		}
		for _, c := range f.Conditions {
			if problem := checkFilter(c, depth+1); problem != "" {
				return problem
			}
		}
		return ""
	case "NOT":
		return checkFilter(f.Condition, depth+1)
	case "EQ", "NEQ", "GT", "GTE", "LT", "LTE", "CONTAINS", "STARTSWITH", "IN":
	default:
		return fmt.Sprintf("unknown op %q: use EQ, NEQ, GT, GTE, LT, LTE, CONTAINS, STARTSWITH, IN, AND, OR or NOT", f.Op)
	}
	if _, ok := storage.TraceFilterKeys[f.Key]; !ok {
		keys := make([]string, 0, len(storage.TraceFilterKeys))
		for k := range storage.TraceFilterKeys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return fmt.Sprintf("unknown key %q: filter on %s", f.Key, strings.Join(keys, ", "))
	}
	if f.Op == "IN" {
		if len(f.Values) == 0 {
			return "IN on " + f.Key + " needs values: a list"
		}
		return ""
	}
	if f.Value == nil {
		return f.Op + " on " + f.Key + " needs a value"
	}
	return ""
}

// searchRequest is the body of POST /traces/search.
type searchRequest struct {
	Filter  *storage.FilterExpr `json:"filter"`
	GroupBy string              `json:"group_by"`
	Page    int                 `json:"page"`
	Limit   int                 `json:"limit"`
}

func (o *OS) handleSearchTraces(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	// The body's text is checked as every JSON body's (422 for a NUL or
	// bytes that are not UTF-8); fields Agno's model does not know are
	// ignored, as FastAPI does.
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	var req searchRequest
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			writeValidation(w, validationIssue{Loc: []string{"body"}, Msg: "JSON decode error: " + err.Error(), Type: "json_invalid"})
			return
		}
	}
	req.GroupBy = cmp.Or(req.GroupBy, "run")
	if req.Page == 0 {
		req.Page = 1
	}
	if req.Limit == 0 {
		req.Limit = 20
	}
	switch {
	case req.GroupBy != "run" && req.GroupBy != "session":
		writeError(w, http.StatusBadRequest, fmt.Sprintf("group_by %q: use run or session", req.GroupBy))
		return
	case req.Page < 1:
		writeError(w, http.StatusBadRequest, "page must be at least 1")
		return
	case req.Limit < 1 || req.Limit > 100:
		writeError(w, http.StatusBadRequest, "limit must be from 1 to 100")
		return
	}
	if req.Filter != nil {
		if problem := checkFilter(req.Filter, 1); problem != "" {
			writeError(w, http.StatusBadRequest, "Invalid filter: "+problem)
			return
		}
	}
	f := storage.TraceFilter{Expr: req.Filter, Page: req.Page, Limit: req.Limit, UserID: o.userScope(r, "")}
	page := pageParams{Page: req.Page, Limit: req.Limit}
	ts := o.traceStore()
	if ts == nil {
		writeJSON(w, http.StatusOK, paginate([]any{}, page, 0, started))
		return
	}
	if req.GroupBy == "session" {
		stats, total, err := ts.TraceSessionStats(r.Context(), f)
		if err != nil {
			o.writeStoreError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, paginate(statsList(stats), page, total, started))
		return
	}
	traces, total, err := ts.ListTraces(r.Context(), f)
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	items := make([]traceDetail, 0, len(traces))
	for _, t := range traces {
		full, spans, err := ts.GetTrace(r.Context(), t.TraceID)
		if errors.Is(err, storage.ErrNotFound) {
			continue // deleted by retention meanwhile
		}
		if err != nil {
			o.writeStoreError(w, r, err)
			return
		}
		items = append(items, buildTraceDetail(*full, spans))
	}
	writeJSON(w, http.StatusOK, paginate(items, page, total, started))
}
