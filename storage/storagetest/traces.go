package storagetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

func traceTests() []conformanceTest {
	return []conformanceTest{
		{"MergeWrites", testTraceMerge},
		{"MergeWithinOneCall", testTraceMergeOneCall},
		{"SpansInsertedOnce", testSpansInsertedOnce},
		{"GetTrace", testGetTrace},
		{"Filters", testTraceFilters},
		{"FilterExpr", testTraceFilterExpr},
		{"FilterExprInvalid", testTraceFilterExprInvalid},
		{"PagingAndCounts", testTracePaging},
		{"SessionStats", testTraceSessionStats},
		{"DeleteBefore", testDeleteTracesBefore},
		{"Invalid", testTraceWriteInvalid},
		{"ConcurrentSpans", testConcurrentSpans},
		{"RootInput", testTraceRootInput},
		{"HigherLevelContextWins", testTraceHigherLevelContext},
	}
}

// testTraceHigherLevelContext: a team's run, written after its member's in
// another batch, gives the trace its context — all of it; a lower-level
// write never replaces it.
func testTraceHigherLevelContext(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	member := storage.TraceWrite{NameLevel: storage.TraceLevelAgent, Trace: storage.Trace{TraceID: "hl", Name: "Member.run", Status: "OK",
		StartTime: at(2), EndTime: at(5), RunID: "member-run", AgentID: "member", SessionID: "s1"},
		Spans: []storage.Span{testSpan("hl", "hl-member", "hl-team", "Member.run", 2, 5, "OK")}}
	team := storage.TraceWrite{NameLevel: storage.TraceLevelTeam, Trace: storage.Trace{TraceID: "hl", Name: "Crew.run", Status: "OK",
		StartTime: at(1), EndTime: at(9), RunID: "team-run", TeamID: "crew", SessionID: "s1"},
		Spans: []storage.Span{testSpan("hl", "hl-team", "", "Crew.run", 1, 9, "OK")}}
	child := storage.TraceWrite{NameLevel: storage.TraceLevelAgent, Trace: storage.Trace{TraceID: "hl", Name: "Other.run", Status: "OK",
		StartTime: at(3), EndTime: at(4), RunID: "other-run", AgentID: "other"}}
	writeTraces(t, store, member)
	writeTraces(t, store, team)
	writeTraces(t, store, child)
	tr, _ := getTrace(t, store, "hl")
	require.Equal(t, "Crew.run", tr.Name)
	require.Equal(t, "team-run", tr.RunID, "the team's write, of a higher level, replaced the member's context")
	require.Equal(t, "crew", tr.TeamID)
	require.Empty(t, tr.AgentID, "the member's agent is not the team trace's")
	require.Equal(t, "s1", tr.SessionID)

	// Within one call the same holds.
	writeTraces(t, store, storage.TraceWrite{NameLevel: storage.TraceLevelAgent, Trace: storage.Trace{TraceID: "hl2", Name: "Member.run",
		Status: "OK", StartTime: at(2), EndTime: at(5), RunID: "member-run"}},
		storage.TraceWrite{NameLevel: storage.TraceLevelWorkflow, Trace: storage.Trace{TraceID: "hl2", Name: "Flow.run", Status: "OK",
			StartTime: at(1), EndTime: at(9), RunID: "flow-run", WorkflowID: "flow"}})
	tr, _ = getTrace(t, store, "hl2")
	require.Equal(t, "flow-run", tr.RunID)
	require.Equal(t, "flow", tr.WorkflowID)
}

// testTraceRootInput: a listed trace's input is its root span's, a root
// being a span whose parent is not in the trace (a caller's remote parent
// included).
func testTraceRootInput(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	child := testSpan("ri", "ri-child", "ri-root", "tool", 5, 6, "OK")
	root := testSpan("ri", "ri-root", "remote-parent", "Agent.run", 1, 9, "OK")
	writeTraces(t, store, storage.TraceWrite{Trace: storage.Trace{TraceID: "ri", Name: "Agent.run", Status: "OK", StartTime: at(1), EndTime: at(9)},
		Spans: []storage.Span{child, root}})
	page, _, err := store.ListTraces(t.Context(), storage.TraceFilter{RunID: ""})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "hello ri-root", page[0].Input)
}

// traceStore returns store as a [storage.TraceStore]; every SQL store is one.
func traceStore(t *testing.T, store storage.Store) storage.TraceStore {
	t.Helper()
	traces, ok := store.(storage.TraceStore)
	require.True(t, ok, "%T does not implement storage.TraceStore", store)
	return traces
}

// traceEpoch is the start of the suite's traces; it has microseconds, which
// must survive the round trip.
var traceEpoch = time.Date(2026, 12, 2, 14, 4, 36, 123456000, time.UTC)

// at is traceEpoch plus ms milliseconds.
func at(ms int) time.Time { return traceEpoch.Add(time.Duration(ms) * time.Millisecond) }

// testSpan is a span of traceID from start to end (milliseconds after
// traceEpoch).
func testSpan(traceID, spanID, parent, name string, start, end int, status string) storage.Span {
	return storage.Span{
		SpanID: spanID, TraceID: traceID, ParentSpanID: parent, Name: name, SpanKind: "INTERNAL", StatusCode: status,
		StartTime: at(start), EndTime: at(end), DurationMS: int64(end - start),
		Attributes: map[string]any{"openinference.span.kind": "CHAIN", "input.value": "hello " + spanID, "llm.token_count.prompt": 12,
			"agno.workflow.steps": []any{"a", "b"}, "flag": true},
	}
}

// requireSameTime asserts that got is the instant want, in UTC.
func requireSameTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	require.True(t, want.Equal(got), "%s: want %s, got %s", what, want, got)
	require.Equal(t, time.UTC, got.Location(), "%s is read back in UTC", what)
}

func writeTraces(t *testing.T, store storage.TraceStore, writes ...storage.TraceWrite) {
	t.Helper()
	require.NoError(t, store.WriteTraces(t.Context(), writes))
}

func getTrace(t *testing.T, store storage.TraceStore, traceID string) (*storage.Trace, []storage.Span) {
	t.Helper()
	tr, spans, err := store.GetTrace(t.Context(), traceID)
	require.NoError(t, err, "get trace %s", traceID)
	return tr, spans
}

func testTraceMerge(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	const id = "0123456789abcdef0123456789abcdef"
	created := traceEpoch.Add(time.Hour)
	// A batch of a child span only: no context, a level-0 name.
	writeTraces(t, store, storage.TraceWrite{
		Trace: storage.Trace{TraceID: id, Name: "gpt-5-mini.invoke", Status: "OK", StartTime: at(50), EndTime: at(200), CreatedAt: created},
		Spans: []storage.Span{testSpan(id, "00000000000000c1", "00000000000000a1", "gpt-5-mini.invoke", 50, 200, "OK")},
	})
	// The agent's batch: earlier start, an error, the context.
	writeTraces(t, store, storage.TraceWrite{
		Trace: storage.Trace{TraceID: id, Name: "Assistant.run", Status: "ERROR", StartTime: at(0), EndTime: at(150),
			RunID: "run-1", SessionID: "session-1", UserID: alice, AgentID: "assistant", CreatedAt: created.Add(time.Minute)},
		NameLevel: storage.TraceLevelAgent,
		Spans:     []storage.Span{testSpan(id, "00000000000000a1", "", "Assistant.run", 0, 150, "ERROR")},
	})
	// A later OK batch of a lower level with other context: it moves the
	// end, and changes nothing else.
	writeTraces(t, store, storage.TraceWrite{
		Trace: storage.Trace{TraceID: id, Name: "search.invoke", Status: "OK", StartTime: at(10), EndTime: at(300),
			RunID: "run-other", AgentID: "other", TeamID: "team-1", CreatedAt: created.Add(2 * time.Minute)},
		Spans: []storage.Span{testSpan(id, "00000000000000c2", "00000000000000a1", "search", 10, 300, "OK")},
	})

	tr, spans := getTrace(t, store, id)
	require.Equal(t, "Assistant.run", tr.Name, "the agent's name outranks a child's, before and after it")
	require.Equal(t, "ERROR", tr.Status, "a later OK batch does not mask an ERROR")
	requireSameTime(t, at(0), tr.StartTime, "start_time")
	requireSameTime(t, at(300), tr.EndTime, "end_time")
	require.EqualValues(t, 300, tr.DurationMS, "the duration is recomputed from the merged bounds")
	require.Equal(t, "run-1", tr.RunID, "the first context written is kept")
	require.Equal(t, "session-1", tr.SessionID)
	require.Equal(t, alice, tr.UserID)
	require.Equal(t, "assistant", tr.AgentID)
	require.Empty(t, tr.TeamID, "a lower-level write's context is ignored: the agent's run names the trace")
	require.Empty(t, tr.WorkflowID)
	requireSameTime(t, created, tr.CreatedAt, "created_at is the first write's")
	require.Equal(t, 3, tr.TotalSpans)
	require.Equal(t, 1, tr.ErrorCount)
	require.Len(t, spans, 3)

	// A workflow's name outranks the agent's; an equal level does not
	// replace it again.
	writeTraces(t, store, storage.TraceWrite{
		Trace:     storage.Trace{TraceID: id, Name: "Pipeline", Status: "OK", StartTime: at(0), EndTime: at(100)},
		NameLevel: storage.TraceLevelWorkflow,
	})
	writeTraces(t, store, storage.TraceWrite{
		Trace:     storage.Trace{TraceID: id, Name: "Other pipeline", Status: "OK", StartTime: at(0), EndTime: at(100)},
		NameLevel: storage.TraceLevelWorkflow,
	})
	tr, _ = getTrace(t, store, id)
	require.Equal(t, "Pipeline", tr.Name)
	require.Equal(t, "run-1", tr.RunID, "a write naming no run leaves the context as it is")
	require.Equal(t, "ERROR", tr.Status)
	require.EqualValues(t, 300, tr.DurationMS, "bounds inside the stored ones change nothing")
}

func testTraceMergeOneCall(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	const id = "11111111111111111111111111111111"
	writeTraces(t, store,
		storage.TraceWrite{Trace: storage.Trace{TraceID: id, Name: "child", Status: "ERROR", StartTime: at(20), EndTime: at(40)},
			Spans: []storage.Span{testSpan(id, "1111111111111111", "2222222222222222", "child", 20, 40, "ERROR")}},
		storage.TraceWrite{Trace: storage.Trace{TraceID: id, Name: "Team.run", Status: "OK", StartTime: at(0), EndTime: at(30), SessionID: "s-1"},
			NameLevel: storage.TraceLevelTeam,
			Spans:     []storage.Span{testSpan(id, "2222222222222222", "", "Team.run", 0, 30, "OK")}},
	)
	tr, spans := getTrace(t, store, id)
	require.Equal(t, "Team.run", tr.Name)
	require.Equal(t, "ERROR", tr.Status)
	require.EqualValues(t, 40, tr.DurationMS)
	require.Equal(t, "s-1", tr.SessionID)
	require.Len(t, spans, 2)
}

func testSpansInsertedOnce(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	const id = "22222222222222222222222222222222"
	first := testSpan(id, "aaaaaaaaaaaaaaaa", "", "first", 0, 10, "OK")
	writeTraces(t, store, storage.TraceWrite{Trace: storage.Trace{TraceID: id, Name: "first", StartTime: at(0), EndTime: at(10)},
		Spans: []storage.Span{first}})
	again := first
	again.Name = "second"
	writeTraces(t, store, storage.TraceWrite{Trace: storage.Trace{TraceID: id, Name: "first", StartTime: at(0), EndTime: at(20)},
		Spans: []storage.Span{again, testSpan(id, "bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa", "other", 5, 20, "OK"), again}})
	tr, spans := getTrace(t, store, id)
	require.Equal(t, 2, tr.TotalSpans, "a span id is stored once")
	require.Len(t, spans, 2)
	require.Equal(t, "first", spans[0].Name, "a stored span is left as it is")
}

func testGetTrace(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	const id = "33333333333333333333333333333333"
	_, _, err := store.GetTrace(t.Context(), id)
	require.ErrorIs(t, err, storage.ErrNotFound)

	root := testSpan(id, "000000000000000a", "", "Assistant.run", 0, 500, "ERROR")
	root.SpanKind, root.StatusMessage = "SERVER", "the model failed"
	late := testSpan(id, "000000000000000b", "000000000000000a", "tool", 300, 400, "OK")
	early := testSpan(id, "000000000000000c", "000000000000000a", "gpt.invoke", 100, 250, "UNSET")
	early.Attributes = nil
	created := traceEpoch.Add(time.Second)
	writeTraces(t, store, storage.TraceWrite{
		Trace: storage.Trace{TraceID: id, Name: "Assistant.run", Status: "ERROR", StartTime: at(0), EndTime: at(500), RunID: "r-1",
			WorkflowID: "wf", CreatedAt: created},
		NameLevel: storage.TraceLevelAgent,
		Spans:     []storage.Span{late, root, early},
	})
	tr, spans := getTrace(t, store, id)
	require.Equal(t, id, tr.TraceID)
	require.EqualValues(t, 500, tr.DurationMS)
	require.Equal(t, "wf", tr.WorkflowID)
	require.Equal(t, 3, tr.TotalSpans)
	require.Equal(t, 1, tr.ErrorCount)
	require.Equal(t, []string{"000000000000000a", "000000000000000c", "000000000000000b"},
		[]string{spans[0].SpanID, spans[1].SpanID, spans[2].SpanID}, "spans come by start time")

	got := spans[0]
	require.Equal(t, id, got.TraceID)
	require.Empty(t, got.ParentSpanID)
	require.Equal(t, "Assistant.run", got.Name)
	require.Equal(t, "SERVER", got.SpanKind)
	require.Equal(t, "ERROR", got.StatusCode)
	require.Equal(t, "the model failed", got.StatusMessage)
	requireSameTime(t, at(0), got.StartTime, "span start_time")
	requireSameTime(t, at(500), got.EndTime, "span end_time")
	requireSameTime(t, created, got.CreatedAt, "span created_at defaults to the write's")
	require.EqualValues(t, 500, got.DurationMS)
	requireJSONEqual(t, root.Attributes, got.Attributes, "attributes round-trip")
	require.Equal(t, "000000000000000a", spans[1].ParentSpanID)
	require.Empty(t, spans[1].Attributes)
}

// seedFilterTraces stores five traces, each with one span, and returns their
// ids newest first.
func seedFilterTraces(t *testing.T, store storage.TraceStore) []string {
	t.Helper()
	type seed struct {
		id, name, status, run, session, user, agent string
		start, end                                  int
	}
	seeds := []seed{
		{"f1", "Assistant.run", "OK", "r1", "s1", alice, "assistant", 0, 100},
		{"f2", "100% done", "ERROR", "r2", "s1", alice, "assistant", 1000, 1300},
		{"f3", "100 done", "OK", "r3", "s2", bob, "writer", 2000, 2050},
		{"f4", "a_b", "OK", "r4", "", bob, "writer", 3000, 3400},
		{"f5", "axb", "ERROR", "r5", "", "", "", 4000, 4010},
	}
	for _, sd := range seeds {
		writeTraces(t, store, storage.TraceWrite{
			Trace: storage.Trace{TraceID: sd.id, Name: sd.name, Status: sd.status, StartTime: at(sd.start), EndTime: at(sd.end),
				RunID: sd.run, SessionID: sd.session, UserID: sd.user, AgentID: sd.agent, CreatedAt: at(sd.start)},
			NameLevel: storage.TraceLevelAgent,
			Spans:     []storage.Span{testSpan(sd.id, "span-"+sd.id, "", sd.name, sd.start, sd.end, sd.status)},
		})
	}
	return []string{"f5", "f4", "f3", "f2", "f1"}
}

// listIDs lists the traces f selects and returns their ids and the total.
func listIDs(t *testing.T, store storage.TraceStore, f storage.TraceFilter) ([]string, int) {
	t.Helper()
	traces, total, err := store.ListTraces(t.Context(), f)
	require.NoError(t, err)
	ids := make([]string, 0, len(traces))
	for _, tr := range traces {
		ids = append(ids, tr.TraceID)
	}
	return ids, total
}

func testTraceFilters(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	all := seedFilterTraces(t, store)
	for _, tc := range []struct {
		name   string
		filter storage.TraceFilter
		want   []string
	}{
		{"All", storage.TraceFilter{}, all},
		{"RunID", storage.TraceFilter{RunID: "r3"}, []string{"f3"}},
		{"SessionID", storage.TraceFilter{SessionID: "s1"}, []string{"f2", "f1"}},
		{"UserID", storage.TraceFilter{UserID: bob}, []string{"f4", "f3"}},
		{"AgentAndStatus", storage.TraceFilter{AgentID: "assistant", Status: "ERROR"}, []string{"f2"}},
		{"TeamID", storage.TraceFilter{TeamID: "nobody"}, nil},
		{"StartTime", storage.TraceFilter{StartTime: at(2000)}, []string{"f5", "f4", "f3"}},
		{"EndTime", storage.TraceFilter{EndTime: at(2050)}, []string{"f3", "f2", "f1"}},
		{"Window", storage.TraceFilter{StartTime: at(1000), EndTime: at(3400)}, []string{"f4", "f3", "f2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, total := listIDs(t, store, tc.filter)
			require.Equal(t, nilIfEmpty(tc.want), nilIfEmpty(ids))
			require.Equal(t, len(tc.want), total)
		})
	}
}

// expr decodes a filter expression as POST /traces/search receives it.
func expr(t *testing.T, doc string) *storage.FilterExpr {
	t.Helper()
	var e storage.FilterExpr
	require.NoError(t, json.Unmarshal([]byte(doc), &e))
	return &e
}

func testTraceFilterExpr(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	seedFilterTraces(t, store)
	for _, tc := range []struct {
		name, expr string
		want       []string
	}{
		{"AndOfEqAndGt", `{"op":"AND","conditions":[{"op":"EQ","key":"agent_id","value":"writer"},{"op":"GT","key":"duration_ms","value":100}]}`, []string{"f4"}},
		{"GteFraction", `{"op":"GTE","key":"duration_ms","value":299.5}`, []string{"f4", "f2"}},
		{"In", `{"op":"IN","key":"run_id","values":["r1","r3","nope"]}`, []string{"f3", "f1"}},
		{"InEmpty", `{"op":"IN","key":"run_id","values":[]}`, nil},
		{"Not", `{"op":"NOT","condition":{"op":"EQ","key":"user_id","value":"bob"}}`, []string{"f5", "f2", "f1"}},
		{"NotMatchesMissing", `{"op":"NOT","condition":{"op":"IN","key":"session_id","values":["s1","s2"]}}`, []string{"f5", "f4"}},
		{"Neq", `{"op":"NEQ","key":"agent_id","value":"writer"}`, []string{"f5", "f2", "f1"}},
		{"Or", `{"op":"OR","conditions":[{"op":"EQ","key":"status","value":"ERROR"},{"op":"LT","key":"start_time","value":"2026-12-02T14:04:36.200Z"}]}`, []string{"f5", "f2", "f1"}},
		{"StatusLowerCase", `{"op":"EQ","key":"status","value":"error"}`, []string{"f5", "f2"}},
		{"ContainsPercentIsLiteral", `{"op":"CONTAINS","key":"name","value":"0% d"}`, []string{"f2"}},
		{"ContainsUnderscoreIsLiteral", `{"op":"CONTAINS","key":"name","value":"a_b"}`, []string{"f4"}},
		{"ContainsIgnoresCase", `{"op":"CONTAINS","key":"name","value":"ASSISTANT"}`, []string{"f1"}},
		{"StartsWith", `{"op":"STARTSWITH","key":"name","value":"100"}`, []string{"f3", "f2"}},
		// 15:04:38.123456+01:00 is 14:04:38.123456Z: traceEpoch + 2s.
		{"DatetimeWithOffset", `{"op":"GTE","key":"start_time","value":"2026-12-02T15:04:38.123456+01:00"}`, []string{"f5", "f4", "f3"}},
		{"DatetimeEq", `{"op":"EQ","key":"end_time","value":"2026-12-02T14:04:36.223456Z"}`, []string{"f1"}},
		{"Nested", `{"op":"AND","conditions":[{"op":"OR","conditions":[{"op":"EQ","key":"user_id","value":"alice"},{"op":"EQ","key":"user_id","value":"bob"}]},
			{"op":"NOT","condition":{"op":"CONTAINS","key":"name","value":"done"}}]}`, []string{"f4", "f1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, total := listIDs(t, store, storage.TraceFilter{Expr: expr(t, tc.expr)})
			require.Equal(t, nilIfEmpty(tc.want), nilIfEmpty(ids))
			require.Equal(t, len(tc.want), total)
		})
	}
	// An expression narrows the plain filters.
	ids, _ := listIDs(t, store, storage.TraceFilter{UserID: alice, Expr: expr(t, `{"op":"EQ","key":"status","value":"OK"}`)})
	require.Equal(t, []string{"f1"}, ids)
}

// nestNot wraps e in n NOTs.
func nestNot(e *storage.FilterExpr, n int) *storage.FilterExpr {
	for range n {
		e = &storage.FilterExpr{Op: "NOT", Condition: e}
	}
	return e
}

func testTraceFilterExprInvalid(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	seedFilterTraces(t, store)
	leaf := &storage.FilterExpr{Op: "EQ", Key: "run_id", Value: "r1"}
	ids, _ := listIDs(t, store, storage.TraceFilter{Expr: nestNot(leaf, 9)})
	require.Equal(t, []string{"f5", "f4", "f3", "f2"}, ids, "ten levels (nine NOTs around a comparison) are allowed")
	for name, e := range map[string]*storage.FilterExpr{
		"UnknownKey":        expr(t, `{"op":"EQ","key":"attributes","value":"x"}`),
		"InjectedKey":       expr(t, `{"op":"EQ","key":"run_id = run_id OR 1","value":"x"}`),
		"UnknownOp":         expr(t, `{"op":"LIKE","key":"name","value":"x"}`),
		"NumberNotNumber":   expr(t, `{"op":"GT","key":"duration_ms","value":"fast"}`),
		"BadDatetime":       expr(t, `{"op":"GT","key":"start_time","value":"yesterday"}`),
		"BadStatus":         expr(t, `{"op":"EQ","key":"status","value":"MAYBE"}`),
		"StringNotString":   expr(t, `{"op":"EQ","key":"user_id","value":7}`),
		"ContainsOnNumber":  expr(t, `{"op":"CONTAINS","key":"duration_ms","value":"1"}`),
		"EmptyAnd":          expr(t, `{"op":"AND","conditions":[]}`),
		"NotWithoutInner":   expr(t, `{"op":"NOT"}`),
		"ElevenLevelsDeep":  nestNot(leaf, 10),
		"BadValueInsideAnd": expr(t, `{"op":"AND","conditions":[{"op":"EQ","key":"run_id","value":"r1"},{"op":"IN","key":"duration_ms","values":["x"]}]}`),
	} {
		_, _, err := store.ListTraces(t.Context(), storage.TraceFilter{Expr: e})
		require.ErrorIs(t, err, storage.ErrInvalid, name)
		_, _, err = store.TraceSessionStats(t.Context(), storage.TraceFilter{Expr: e})
		require.ErrorIs(t, err, storage.ErrInvalid, name)
	}
	_, _, err := store.ListTraces(t.Context(), storage.TraceFilter{Page: -1})
	require.ErrorIs(t, err, storage.ErrInvalid)
	_, _, err = store.ListTraces(t.Context(), storage.TraceFilter{Limit: -1})
	require.ErrorIs(t, err, storage.ErrInvalid)
}

func testTracePaging(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	const traces = 25
	var writes []storage.TraceWrite
	for i := range traces {
		id := fmt.Sprintf("p%02d", i)
		write := storage.TraceWrite{Trace: storage.Trace{TraceID: id, Name: "run", Status: "OK", StartTime: at(i * 10), EndTime: at(i*10 + 5)}}
		// Trace i has i%4 spans, every third of them an error.
		for j := range i % 4 {
			status := "OK"
			if j == 2 {
				status = "ERROR"
			}
			write.Spans = append(write.Spans, testSpan(id, fmt.Sprintf("%s-%d", id, j), "", "span", i*10, i*10+5, status))
		}
		writes = append(writes, write)
	}
	writeTraces(t, store, writes...)

	page, total, err := store.ListTraces(t.Context(), storage.TraceFilter{})
	require.NoError(t, err)
	require.Equal(t, traces, total)
	require.Len(t, page, 20, "the default limit is 20")
	require.Equal(t, "p24", page[0].TraceID, "newest first")

	page, total, err = store.ListTraces(t.Context(), storage.TraceFilter{Page: 3, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, traces, total)
	require.Len(t, page, 5)
	for i, tr := range page {
		n := 4 - i // p04 … p00
		require.Equal(t, fmt.Sprintf("p%02d", n), tr.TraceID)
		require.Equal(t, n%4, tr.TotalSpans, "trace %s", tr.TraceID)
		wantErrors := 0
		if n%4 == 3 {
			wantErrors = 1
		}
		require.Equal(t, wantErrors, tr.ErrorCount, "trace %s", tr.TraceID)
		require.EqualValues(t, 5, tr.DurationMS)
	}

	page, total, err = store.ListTraces(t.Context(), storage.TraceFilter{Page: 4, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, traces, total, "a page past the end still counts")
	require.Empty(t, page)

	page, _, err = store.ListTraces(t.Context(), storage.TraceFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, page, traces, "a limit above 100 is cut to 100")
}

func testTraceSessionStats(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	write := func(id, session, user string, start int) storage.TraceWrite {
		return storage.TraceWrite{Trace: storage.Trace{TraceID: id, Name: "run", Status: "OK", StartTime: at(start), EndTime: at(start + 5),
			SessionID: session, UserID: user, AgentID: "agent-" + session}}
	}
	writeTraces(t, store,
		write("t1", "s-a", alice, 0), write("t2", "s-a", alice, 100), write("t3", "s-a", alice, 50),
		write("t4", "s-b", bob, 70),
		write("t5", "", bob, 500), write("t6", "", "", 600),
		write("t7", "s-c", bob, 10),
	)
	stats, total, err := store.TraceSessionStats(t.Context(), storage.TraceFilter{})
	require.NoError(t, err)
	require.Equal(t, 3, total, "traces without a session are left out")
	require.Len(t, stats, 3)
	require.Equal(t, []string{"s-a", "s-b", "s-c"}, []string{stats[0].SessionID, stats[1].SessionID, stats[2].SessionID},
		"the most recently traced session first")
	a := stats[0]
	require.Equal(t, 3, a.TotalTraces)
	require.Equal(t, alice, a.UserID)
	require.Equal(t, "agent-s-a", a.AgentID)
	require.Empty(t, a.TeamID)
	requireSameTime(t, at(0), a.FirstTraceAt, "first_trace_at")
	requireSameTime(t, at(100), a.LastTraceAt, "last_trace_at")

	stats, total, err = store.TraceSessionStats(t.Context(), storage.TraceFilter{UserID: bob})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, "s-b", stats[0].SessionID)

	stats, total, err = store.TraceSessionStats(t.Context(), storage.TraceFilter{Page: 2, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Len(t, stats, 1)
	require.Equal(t, "s-c", stats[0].SessionID)

	stats, total, err = store.TraceSessionStats(t.Context(), storage.TraceFilter{Expr: expr(t, `{"op":"GTE","key":"start_time","value":"2026-12-02T14:04:36.183456Z"}`)})
	require.NoError(t, err)
	require.Equal(t, 2, total, "s-a and s-b have traces from +60ms on")
	require.Equal(t, "s-a", stats[0].SessionID)
	require.Equal(t, 1, stats[0].TotalTraces, "only s-a's trace at +100ms is selected")
}

func testDeleteTracesBefore(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	old, recent := traceEpoch.Add(-48*time.Hour), traceEpoch
	for i, created := range []time.Time{old, old, recent} {
		id := fmt.Sprintf("d%d", i)
		writeTraces(t, store, storage.TraceWrite{
			Trace: storage.Trace{TraceID: id, Name: "run", Status: "OK", StartTime: at(0), EndTime: at(10), CreatedAt: created},
			Spans: []storage.Span{testSpan(id, id+"-root", "", "run", 0, 10, "OK"), testSpan(id, id+"-child", id+"-root", "llm", 1, 9, "OK")},
		})
	}
	deleted, err := store.DeleteTracesBefore(t.Context(), traceEpoch.Add(-24*time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 2, deleted)
	_, _, err = store.GetTrace(t.Context(), "d0")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, spans := getTrace(t, store, "d2")
	require.Len(t, spans, 2, "a recent trace keeps its spans")

	// The trace written again holds no spans: the old ones went with it.
	writeTraces(t, store, storage.TraceWrite{Trace: storage.Trace{TraceID: "d0", Name: "run", Status: "OK", StartTime: at(0), EndTime: at(10)}})
	tr, spans := getTrace(t, store, "d0")
	require.Empty(t, spans, "the spans of a deleted trace are deleted")
	require.Zero(t, tr.TotalSpans)

	deleted, err = store.DeleteTracesBefore(t.Context(), traceEpoch.Add(-24*time.Hour))
	require.NoError(t, err)
	require.Zero(t, deleted)
}

func testTraceWriteInvalid(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	require.NoError(t, store.WriteTraces(t.Context(), nil))
	for name, write := range map[string]storage.TraceWrite{
		"NoTraceID":      {Trace: storage.Trace{Name: "x", StartTime: at(0), EndTime: at(1)}},
		"NoTimes":        {Trace: storage.Trace{TraceID: "t", Name: "x"}},
		"NoSpanID":       {Trace: storage.Trace{TraceID: "t", StartTime: at(0), EndTime: at(1)}, Spans: []storage.Span{{Name: "x"}}},
		"OtherTrace":     {Trace: storage.Trace{TraceID: "t"}, Spans: []storage.Span{{SpanID: "s", TraceID: "u", StartTime: at(0), EndTime: at(1)}}},
		"LevelTooHigh":   {Trace: storage.Trace{TraceID: "t", StartTime: at(0), EndTime: at(1)}, NameLevel: 7},
		"NULInTraceID":   {Trace: storage.Trace{TraceID: "t\x00", StartTime: at(0), EndTime: at(1)}},
		"InvalidUTF8Key": {Trace: storage.Trace{TraceID: "t", RunID: "\xff", StartTime: at(0), EndTime: at(1)}},
	} {
		require.ErrorIs(t, store.WriteTraces(t.Context(), []storage.TraceWrite{write}), storage.ErrInvalid, name)
	}
	_, _, err := store.GetTrace(t.Context(), "t")
	require.ErrorIs(t, err, storage.ErrNotFound, "a refused write leaves nothing")

	// A batch without the trace's bounds is bounded by its spans; statuses
	// and kinds are upper case.
	bounded := testSpan("", "b1", "", "child", 40, 90, "error")
	bounded.SpanKind = "client"
	writeTraces(t, store, storage.TraceWrite{Trace: storage.Trace{TraceID: "bounded", Name: "child", Status: "error"}, Spans: []storage.Span{bounded}})
	tr, spans := getTrace(t, store, "bounded")
	requireSameTime(t, at(40), tr.StartTime, "start_time from the spans")
	requireSameTime(t, at(90), tr.EndTime, "end_time from the spans")
	require.EqualValues(t, 50, tr.DurationMS)
	require.Equal(t, "ERROR", tr.Status)
	require.Equal(t, 1, tr.ErrorCount)
	require.Equal(t, "bounded", spans[0].TraceID, "a span without a trace id takes its write's")
	require.Equal(t, "CLIENT", spans[0].SpanKind)

	// Content a database cannot hold is kept as U+FFFD, and a value JSON
	// cannot encode as its text.
	span := testSpan("t", "s", "", "bad\x00name", 0, 1, "ERROR")
	span.StatusMessage = "bytes \xff"
	span.Attributes = map[string]any{"nan": nanValue(), "ok": 1}
	writeTraces(t, store, storage.TraceWrite{Trace: storage.Trace{TraceID: "t", Name: "x", StartTime: at(0), EndTime: at(1)}, Spans: []storage.Span{span}})
	_, spans = getTrace(t, store, "t")
	require.Equal(t, "bad\uFFFDname", spans[0].Name)
	require.Equal(t, "bytes \uFFFD", spans[0].StatusMessage)
	require.Equal(t, "NaN", spans[0].Attributes["nan"])
	require.EqualValues(t, 1, spans[0].Attributes["ok"])
}

// nanValue is a float JSON cannot encode.
func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

// traceWriters is how many goroutines write spans of one trace at once.
const traceWriters = 8

func testConcurrentSpans(t *testing.T, s storage.Store) {
	store := traceStore(t, s)
	const id = "44444444444444444444444444444444"
	const perWriter = 5
	runConcurrently(t, traceWriters, func(i int) error {
		write := storage.TraceWrite{
			Trace: storage.Trace{TraceID: id, Name: fmt.Sprintf("writer-%d", i), Status: "OK", StartTime: at(i), EndTime: at(100 + i),
				UserID: alice, SessionID: "s-1"},
			NameLevel: i % 4,
			// Every writer also carries the root span, as retried exports do.
			Spans: []storage.Span{testSpan(id, "root", "", "root", 0, 200, "OK")},
		}
		if i == 3 {
			write.Trace.Status = "ERROR"
		}
		for j := range perWriter {
			write.Spans = append(write.Spans, testSpan(id, fmt.Sprintf("w%d-%d", i, j), "root", "child", i, 100+i, "OK"))
		}
		return store.WriteTraces(t.Context(), []storage.TraceWrite{write})
	})
	tr, spans := getTrace(t, store, id)
	require.Len(t, spans, traceWriters*perWriter+1, "every writer's spans landed, the shared one once")
	require.Equal(t, "ERROR", tr.Status)
	requireSameTime(t, at(0), tr.StartTime, "start_time")
	requireSameTime(t, at(200), tr.EndTime, "end_time: the root span's end bounds the trace")
	require.EqualValues(t, 200, tr.DurationMS)
	require.True(t, strings.HasPrefix(tr.Name, "writer-"))
	var level int
	_, err := fmt.Sscanf(tr.Name, "writer-%d", &level)
	require.NoError(t, err)
	require.Equal(t, storage.TraceLevelWorkflow, level%4, "a writer of the highest level named the trace")
}
