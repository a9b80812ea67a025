package agentos_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// callJSON sends a request with body as its JSON (a string or []byte is
// sent as is; nil sends no body).
func (s *server) callJSON(t *testing.T, method, path string, body any) *http.Response {
	t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = bytes.NewBufferString(b)
	case []byte:
		reader = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, reader)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// runAgent runs the assistant once, without streaming, and returns the run.
func (s *server) runAgent(t *testing.T, fields url.Values) map[string]any {
	t.Helper()
	fields.Set("stream", "false")
	resp := s.postForm(t, "/agents/assistant/runs", fields)
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	return out
}

// requireIssue checks a 422 body names the location loc.
func requireIssue(t *testing.T, resp *http.Response, loc ...string) {
	t.Helper()
	body := readAll(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
	var parsed struct {
		Detail []struct {
			Loc  []string `json:"loc"`
			Msg  string   `json:"msg"`
			Type string   `json:"type"`
		} `json:"detail"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &parsed), body)
	require.NotEmpty(t, parsed.Detail, body)
	for _, issue := range parsed.Detail {
		if fmt.Sprint(issue.Loc) == fmt.Sprint(loc) {
			require.NotEmpty(t, issue.Msg)
			require.NotEmpty(t, issue.Type)
			return
		}
	}
	require.Failf(t, "no issue at the location", "want %v in %s", loc, body)
}

// requireDetail checks an error answer's status and that its detail is a string.
func requireDetail(t *testing.T, resp *http.Response, status int) string {
	t.Helper()
	body := readAll(t, resp)
	require.Equal(t, status, resp.StatusCode, body)
	var parsed struct {
		Detail string `json:"detail"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &parsed), body)
	require.NotEmpty(t, parsed.Detail)
	return parsed.Detail
}

func usage(input, output int64) *run.Metrics {
	return &run.Metrics{InputTokens: input, OutputTokens: output, TotalTokens: input + output}
}

func TestSessionFromAgentRun(t *testing.T) {
	t.Parallel()
	s := newServer(t, []scripted.Reply{
		{Content: "Hello!", Usage: usage(10, 5)},
		{Content: "Again!", Usage: usage(20, 10)},
	}, nil)
	first := s.runAgent(t, url.Values{"message": {"hi there"}, "session_id": {"s1"}, "user_id": {"u1"}})
	second := s.runAgent(t, url.Values{"message": {"once more"}, "session_id": {"s1"}, "user_id": {"u1"}})

	page := decode[map[string]any](t, s.get(t, "/sessions?type=agent&component_id=assistant&db_id=agnogo-db"))
	data := page["data"].([]any)
	require.Len(t, data, 1)
	item := data[0].(map[string]any)
	require.Equal(t, "s1", item["session_id"])
	require.Equal(t, "hi there", item["session_name"], "an unnamed session is named after its first message")
	require.Equal(t, "assistant", item["agent_id"])
	require.Equal(t, "u1", item["user_id"])
	require.Equal(t, "agent", item["session_type"])
	require.EqualValues(t, 45, item["total_tokens"])
	require.EqualValues(t, 45, item["metrics"].(map[string]any)["total_tokens"])
	require.NotZero(t, item["created_at"])
	require.NotContains(t, item, "runs", "listings carry no runs")
	require.Equal(t, map[string]any{"page": 1.0, "limit": 20.0, "total_pages": 1.0, "total_count": 1.0, "search_time_ms": page["meta"].(map[string]any)["search_time_ms"]}, page["meta"])

	detail := decode[map[string]any](t, s.get(t, "/sessions/s1"))
	require.Equal(t, "s1", detail["agent_session_id"])
	require.Equal(t, "hi there", detail["session_name"])
	require.EqualValues(t, 30, detail["metrics"].(map[string]any)["input_tokens"])
	require.NotContains(t, detail, "runs")

	runs := decode[[]map[string]any](t, s.get(t, "/sessions/s1/runs"))
	require.Len(t, runs, 2)
	require.Equal(t, first["run_id"], runs[0]["run_id"])
	require.Equal(t, "hi there", runs[0]["run_input"])
	require.Equal(t, "Hello!", runs[0]["content"])
	require.Equal(t, "Again!", runs[1]["content"])

	one := decode[map[string]any](t, s.get(t, "/sessions/s1/runs/"+second["run_id"].(string)))
	require.Equal(t, "once more", one["run_input"])
	requireDetail(t, s.get(t, "/sessions/s1/runs/nope"), http.StatusNotFound)

	// A run is found only under its own session.
	require.Equal(t, http.StatusCreated, s.callJSON(t, http.MethodPost, "/sessions", map[string]any{"session_id": "s2"}).StatusCode)
	requireDetail(t, s.get(t, "/sessions/s2/runs/"+second["run_id"].(string)), http.StatusNotFound)
	require.Empty(t, decode[[]map[string]any](t, s.get(t, "/sessions/s2/runs")))

	// Filters: by time, by user, by component and by type.
	createdAt := int64(runs[0]["created_at"].(float64))
	require.Empty(t, decode[[]map[string]any](t, s.get(t, fmt.Sprintf("/sessions/s1/runs?created_after=%d", createdAt+3600))))
	require.Len(t, decode[[]map[string]any](t, s.get(t, fmt.Sprintf("/sessions/s1/runs?created_before=%d", createdAt+3600))), 2)
	require.Equal(t, 0.0, decode[map[string]any](t, s.get(t, "/sessions?user_id=u2"))["meta"].(map[string]any)["total_count"])
	require.Equal(t, 0.0, decode[map[string]any](t, s.get(t, "/sessions?component_id=other"))["meta"].(map[string]any)["total_count"])
	require.Equal(t, 0.0, decode[map[string]any](t, s.get(t, "/sessions?type=team"))["meta"].(map[string]any)["total_count"])
	requireDetail(t, s.get(t, "/sessions/s1?type=team"), http.StatusNotFound)
}

func TestSessionPagination(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	for i := range 5 {
		resp := s.callJSON(t, http.MethodPost, "/sessions", map[string]any{"session_id": fmt.Sprintf("s%d", i), "session_name": fmt.Sprintf("name %d", i)})
		require.Equal(t, http.StatusCreated, resp.StatusCode)
	}
	type page struct {
		Data []map[string]any `json:"data"`
		Meta struct {
			Page, Limit, TotalPages, TotalCount int
		} `json:"meta"`
	}
	read := func(query string) page {
		var p page
		raw := decode[map[string]any](t, s.get(t, "/sessions?"+query))
		data, err := json.Marshal(raw["data"])
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &p.Data))
		meta := raw["meta"].(map[string]any)
		p.Meta.Page, p.Meta.Limit = int(meta["page"].(float64)), int(meta["limit"].(float64))
		p.Meta.TotalPages, p.Meta.TotalCount = int(meta["total_pages"].(float64)), int(meta["total_count"].(float64))
		return p
	}
	for _, tc := range []struct {
		query            string
		page, limit      int
		pages, wantItems int
		firstID          string
	}{
		{"limit=2&sort_by=session_id&sort_order=asc", 1, 2, 3, 2, "s0"},
		{"limit=2&page=2&sort_by=session_id&sort_order=asc", 2, 2, 3, 2, "s2"},
		{"limit=2&page=3&sort_by=session_id&sort_order=asc", 3, 2, 3, 1, "s4"},
		{"limit=2&page=4&sort_by=session_id", 4, 2, 3, 0, ""},
		{"limit=5&sort_by=session_id&sort_order=desc", 1, 5, 1, 5, "s4"},
		{"limit=3&sort_by=session_name&sort_order=asc", 1, 3, 2, 3, "s0"},
		{"page=0&limit=4&sort_by=session_id&sort_order=asc", 0, 4, 2, 4, "s0"},
		{"", 1, 20, 1, 5, ""},
	} {
		p := read(tc.query)
		require.Equal(t, 5, p.Meta.TotalCount, tc.query)
		require.Equal(t, tc.pages, p.Meta.TotalPages, tc.query)
		require.Equal(t, tc.page, p.Meta.Page, tc.query)
		require.Equal(t, tc.limit, p.Meta.Limit, tc.query)
		require.Len(t, p.Data, tc.wantItems, tc.query)
		if tc.firstID != "" {
			require.Equal(t, tc.firstID, p.Data[0]["session_id"], tc.query)
		}
	}
	named := read("session_name=" + url.QueryEscape("NAME 3"))
	require.Equal(t, 1, named.Meta.TotalCount, "the name filter matches part of the name, in any case")
	require.Equal(t, "s3", named.Data[0]["session_id"])
}

func TestSessionQueryValidation(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	for _, tc := range []struct{ path, loc string }{
		{"/sessions?limit=0", "limit"},
		{"/sessions?limit=ten", "limit"},
		{"/sessions?page=-1", "page"},
		{"/sessions?page=99999999&limit=99999999", "page"},
		{"/sessions?type=robot", "type"},
		{"/sessions?session_type=robot", "session_type"},
		{"/sessions?sort_order=sideways", "sort_order"},
		{"/sessions?sort_by=mood", "sort_by"},
		{"/sessions/x?type=robot", "type"},
		{"/sessions/x/runs?created_after=yesterday", "created_after"},
		{"/sessions/x/runs?created_before=-5", "created_before"},
	} {
		requireIssue(t, s.get(t, tc.path), "query", tc.loc)
	}
	require.Contains(t, requireDetail(t, s.get(t, "/sessions?db_id=elsewhere"), http.StatusNotFound), "elsewhere")
	require.Equal(t, http.StatusOK, s.get(t, "/sessions?db_id=agnogo-db&table=ignored").StatusCode)
}

func TestSessionCreate(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	resp := s.callJSON(t, http.MethodPost, "/sessions", map[string]any{
		"session_id": "chosen", "session_name": "Planning", "session_state": map[string]any{"step": 1},
		"metadata": map[string]any{"tag": "x"}, "agent_id": "assistant", "user_id": "u1",
	})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	created := decode[map[string]any](t, resp)
	require.Equal(t, "chosen", created["session_id"])
	require.Equal(t, "Planning", created["session_name"])
	require.Equal(t, map[string]any{"step": 1.0}, created["session_state"])
	require.Equal(t, map[string]any{"tag": "x"}, created["metadata"])
	require.Equal(t, "assistant", created["agent_id"])
	require.Equal(t, "u1", created["user_id"])
	require.NotZero(t, created["created_at"])

	requireDetail(t, s.callJSON(t, http.MethodPost, "/sessions", map[string]any{"session_id": "chosen"}), http.StatusConflict)

	// Every field is optional: the id is generated, the type defaults to agent.
	resp = s.callJSON(t, http.MethodPost, "/sessions", nil)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	generated := decode[map[string]any](t, resp)
	require.Len(t, generated["session_id"], 36)
	require.Equal(t, "agent", generated["session_type"])

	resp = s.callJSON(t, http.MethodPost, "/sessions?type=team", map[string]any{"component_id": "crew"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	team := decode[map[string]any](t, resp)
	require.Equal(t, "team", team["session_type"])
	require.Equal(t, "crew", team["team_id"])
	resp = s.callJSON(t, http.MethodPost, "/sessions", map[string]any{"session_type": "workflow", "workflow_id": "flow"})
	require.Equal(t, "flow", decode[map[string]any](t, resp)["workflow_id"])

	for _, tc := range []struct {
		body any
		loc  []string
	}{
		{"{not json", []string{"body"}},
		{"[1,2]", []string{"body"}},
		{map[string]any{"session_state": "not an object"}, []string{"body", "session_state"}},
		{map[string]any{"metadata": []int{1}}, []string{"body", "metadata"}},
		{map[string]any{"session_id": 7}, []string{"body", "session_id"}},
		{map[string]any{"session_type": "robot"}, []string{"body", "session_type"}},
	} {
		requireIssue(t, s.callJSON(t, http.MethodPost, "/sessions", tc.body), tc.loc...)
	}
	requireIssue(t, s.callJSON(t, http.MethodPost, "/sessions?type=robot", nil), "query", "type")
}

func TestSessionNotFound(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/sessions/nope", nil},
		{http.MethodPatch, "/sessions/nope", map[string]any{"session_state": map[string]any{}}},
		{http.MethodPost, "/sessions/nope/rename", map[string]any{"session_name": "x"}},
		{http.MethodDelete, "/sessions/nope", nil},
		{http.MethodGet, "/sessions/nope/runs", nil},
		{http.MethodGet, "/sessions/nope/runs/r1", nil},
		{http.MethodPost, "/agents/assistant/sessions/nope/fork", nil},
		{http.MethodPost, "/agents/nobody/sessions/nope/fork", nil},
	} {
		require.Contains(t, requireDetail(t, s.callJSON(t, tc.method, tc.path, tc.body), http.StatusNotFound), "not found", tc.path)
	}
}

func TestSessionRenameAndUpdate(t *testing.T) {
	t.Parallel()
	s := newServer(t, []scripted.Reply{scripted.Text("one"), scripted.Text("two")}, func(a *agent.Config, _ *agentos.Config) {
		a.SessionState = map[string]any{"count": 0.0}
	})
	s.runAgent(t, url.Values{"message": {"hi"}, "session_id": {"s1"}})

	resp := s.callJSON(t, http.MethodPost, "/sessions/s1/rename", map[string]any{"session_name": "Renamed"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "Renamed", decode[map[string]any](t, resp)["session_name"])
	list := decode[map[string]any](t, s.get(t, "/sessions"))
	require.Equal(t, "Renamed", list["data"].([]any)[0].(map[string]any)["session_name"])
	requireIssue(t, s.callJSON(t, http.MethodPost, "/sessions/s1/rename", map[string]any{}), "body", "session_name")
	requireIssue(t, s.callJSON(t, http.MethodPost, "/sessions/s1/rename", map[string]any{"session_name": "  "}), "body", "session_name")
	requireIssue(t, s.callJSON(t, http.MethodPost, "/sessions/s1/rename", nil), "body")

	resp = s.callJSON(t, http.MethodPatch, "/sessions/s1", map[string]any{
		"session_state": map[string]any{"count": 5.0}, "metadata": map[string]any{"k": "v"},
		"summary": map[string]any{"summary": "short"}, "session_name": "Patched",
	})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	patched := decode[map[string]any](t, resp)
	require.Equal(t, map[string]any{"count": 5.0}, patched["session_state"])
	require.Equal(t, map[string]any{"k": "v"}, patched["metadata"])
	require.Equal(t, map[string]any{"summary": "short"}, patched["session_summary"])
	require.Equal(t, "Patched", patched["session_name"])
	require.Contains(t, patched, "metrics", "fields not sent are kept")

	// "name" is accepted for the name; a field left out is kept.
	resp = s.callJSON(t, http.MethodPatch, "/sessions/s1", map[string]any{"name": "Short"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	patched = decode[map[string]any](t, resp)
	require.Equal(t, "Short", patched["session_name"])
	require.Equal(t, map[string]any{"count": 5.0}, patched["session_state"])

	// The next run starts from the patched state.
	s.runAgent(t, url.Values{"message": {"again"}, "session_id": {"s1"}})
	stored, err := s.store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"count": 5.0}, stored.SessionData["session_state"])
	require.Equal(t, "Short", stored.Name())

	requireIssue(t, s.callJSON(t, http.MethodPatch, "/sessions/s1", map[string]any{"session_state": []int{}}), "body", "session_state")
	requireIssue(t, s.callJSON(t, http.MethodPatch, "/sessions/s1", map[string]any{"summary": "text"}), "body", "summary")
	requireIssue(t, s.callJSON(t, http.MethodPatch, "/sessions/s1", nil), "body")
}

func TestSessionDelete(t *testing.T) {
	t.Parallel()
	s := newServer(t, []scripted.Reply{scripted.Text("a"), scripted.Text("b"), scripted.Text("c")}, nil)
	out := s.runAgent(t, url.Values{"message": {"hi"}, "session_id": {"s1"}})
	s.runAgent(t, url.Values{"message": {"hi"}, "session_id": {"s2"}})
	s.runAgent(t, url.Values{"message": {"hi"}, "session_id": {"s3"}})

	resp := s.callJSON(t, http.MethodDelete, "/sessions/s1?db_id=agnogo-db", nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	requireDetail(t, s.get(t, "/sessions/s1"), http.StatusNotFound)
	_, err := s.store.GetRun(t.Context(), out["run_id"].(string), "")
	require.ErrorIs(t, err, storage.ErrNotFound, "the session's runs go with it")
	requireDetail(t, s.callJSON(t, http.MethodDelete, "/sessions/s1", nil), http.StatusNotFound)

	for _, tc := range []struct {
		body any
		loc  []string
	}{
		{nil, []string{"body"}},
		{map[string]any{}, []string{"body", "session_ids"}},
		{map[string]any{"session_ids": []string{}}, []string{"body", "session_ids"}},
		{map[string]any{"session_ids": "s2"}, []string{"body", "session_ids"}},
		{map[string]any{"session_ids": []string{"s2"}, "session_types": []string{"robot"}}, []string{"body", "session_types", "0"}},
	} {
		requireIssue(t, s.callJSON(t, http.MethodDelete, "/sessions", tc.body), tc.loc...)
	}
	requireDetail(t, s.callJSON(t, http.MethodDelete, "/sessions", map[string]any{"session_ids": []string{"s2", "s3"}, "session_types": []string{"agent"}}), http.StatusBadRequest)

	resp = s.callJSON(t, http.MethodDelete, "/sessions", map[string]any{"session_ids": []string{"s2", "s3", "unknown"}, "session_types": []string{"agent", "agent", "agent"}})
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, 0.0, decode[map[string]any](t, s.get(t, "/sessions"))["meta"].(map[string]any)["total_count"])
}

func TestSessionDeleteWhileRunInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := newServer(t, []scripted.Reply{
		scripted.Text("first"),
		scripted.Respond(func(*model.Request) scripted.Reply { <-release; return scripted.Text("slow") }),
	}, nil)
	s.runAgent(t, url.Values{"message": {"hi"}, "session_id": {"s1"}})
	live := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"again"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, live.StatusCode)
	reader := bufio.NewReader(live.Body)
	for started := false; !started; {
		line, err := reader.ReadString('\n')
		require.NoError(t, err)
		started = strings.HasPrefix(line, "event: RunStarted")
	}

	// Deleting now would not stick: the run writes its session when it ends.
	require.Contains(t, requireDetail(t, s.callJSON(t, http.MethodDelete, "/sessions/s1", nil), http.StatusConflict), "in progress")
	requireDetail(t, s.callJSON(t, http.MethodDelete, "/sessions", map[string]any{"session_ids": []string{"s1"}}), http.StatusConflict)

	close(release)
	rest, err := io.ReadAll(reader)
	require.NoError(t, err)
	require.Contains(t, string(rest), "RunCompleted")
	require.Eventually(t, func() bool {
		resp := s.callJSON(t, http.MethodDelete, "/sessions/s1", nil)
		return resp.StatusCode == http.StatusNoContent
	}, 5*time.Second, 10*time.Millisecond, "the run leaves the in-flight set once its answer is written")
	requireDetail(t, s.get(t, "/sessions/s1"), http.StatusNotFound)
}

func TestSessionFork(t *testing.T) {
	t.Parallel()
	s := newServer(t, []scripted.Reply{scripted.Text("first answer"), scripted.Text("second answer"), scripted.Text("on the fork")}, nil)
	first := s.runAgent(t, url.Values{"message": {"first"}, "session_id": {"s1"}, "user_id": {"u1"}})
	second := s.runAgent(t, url.Values{"message": {"second"}, "session_id": {"s1"}, "user_id": {"u1"}})
	require.Equal(t, http.StatusOK, s.callJSON(t, http.MethodPost, "/sessions/s1/rename", map[string]any{"session_name": "Original"}).StatusCode)

	resp := s.callJSON(t, http.MethodPost, "/agents/assistant/sessions/s1/fork?user_id=u1", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	forked := decode[map[string]string](t, resp)
	require.Equal(t, "s1", forked["forked_from_session_id"])
	forkID := forked["session_id"]
	require.NotEqual(t, "s1", forkID)

	detail := decode[map[string]any](t, s.get(t, "/sessions/"+forkID))
	require.Equal(t, "Original", detail["session_name"])
	require.Equal(t, "u1", detail["user_id"])
	require.Equal(t, "assistant", detail["agent_id"])

	runs := decode[[]map[string]any](t, s.get(t, "/sessions/"+forkID+"/runs"))
	require.Len(t, runs, 2)
	for i, original := range []map[string]any{first, second} {
		require.NotEqual(t, original["run_id"], runs[i]["run_id"], "every copied run has a new id")
		require.Equal(t, forkID, runs[i]["session_id"])
		require.Equal(t, "s1", runs[i]["forked_from_session_id"])
		require.Equal(t, original["content"], runs[i]["content"])
		require.Equal(t, original["run_input"], runs[i]["run_input"])
	}
	originals := decode[[]map[string]any](t, s.get(t, "/sessions/s1/runs"))
	require.Equal(t, first["run_id"], originals[0]["run_id"], "the source is untouched")
	require.NotContains(t, originals[0], "forked_from_session_id")

	// The fork carries the history on: its next run sees both earlier turns.
	s.runAgent(t, url.Values{"message": {"third"}, "session_id": {forkID}, "user_id": {"u1"}})
	requests := s.model.Requests()
	var seen []string
	for _, m := range requests[len(requests)-1].Messages {
		seen = append(seen, m.ContentString())
	}
	require.Subset(t, seen, []string{"first", "first answer", "second", "second answer", "third"})
	require.Len(t, decode[[]map[string]any](t, s.get(t, "/sessions/s1/runs")), 2, "runs on the fork stay on the fork")

	// Only the session's own agent forks it, and only for its user.
	require.Equal(t, http.StatusCreated, s.callJSON(t, http.MethodPost, "/sessions", map[string]any{"session_id": "other", "agent_id": "someone-else"}).StatusCode)
	requireDetail(t, s.callJSON(t, http.MethodPost, "/agents/assistant/sessions/other/fork", nil), http.StatusNotFound)
	requireDetail(t, s.callJSON(t, http.MethodPost, "/agents/assistant/sessions/s1/fork?user_id=u2", nil), http.StatusNotFound)
}

func TestSessionRoutesNeedStore(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, func(_ *agent.Config, o *agentos.Config) { o.Store = nil })
	for _, path := range []string{"/sessions", "/sessions/s1", "/sessions/s1/runs", "/memories", "/memory_topics"} {
		requireDetail(t, s.get(t, path), http.StatusServiceUnavailable)
	}
}

// limitTooLarge is the 422 body of a limit above the largest page, in
// FastAPI's shape.
const limitTooLarge = `{"detail":[{"loc":["query","limit"],"msg":"Input should be less than or equal to 1000","type":"less_than_equal"}]}`

// TestSessionListingsCapLimit: no page of a session listing holds more
// than 1000 rows; a larger limit is refused, naming the bound.
func TestSessionListingsCapLimit(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	require.Equal(t, http.StatusCreated, s.callJSON(t, http.MethodPost, "/sessions", map[string]any{"session_id": "s1"}).StatusCode)
	for _, path := range []string{"/sessions", "/sessions/s1/runs"} {
		for _, limit := range []string{"1001", "2147483647"} {
			resp := s.get(t, path+"?limit="+limit)
			body := readAll(t, resp)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s limit=%s: %s", path, limit, body)
			require.JSONEq(t, limitTooLarge, body, "%s limit=%s", path, limit)
		}
		require.Equal(t, http.StatusOK, s.get(t, path+"?limit=1000").StatusCode, path)
	}
	requireIssue(t, s.get(t, "/sessions/s1/runs?limit=0"), "query", "limit")
	requireIssue(t, s.get(t, "/sessions/s1/runs?page=-1"), "query", "page")
	requireIssue(t, s.get(t, "/sessions/s1/runs?page=99999999&limit=1000"), "query", "page")
}

// putRuns stores n completed runs r0, r1, … of session sessionID, created
// one second apart from createdAt, eight writers at a time (SQLite commits
// the writes that queue together at once).
func putRuns(t *testing.T, store storage.Store, sessionID string, n int, createdAt int64) {
	t.Helper()
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	slots := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			_, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: sessionID, RunIndex: new(int64(i)), Run: &run.Output{
				RunID: fmt.Sprintf("r%d", i), SessionID: sessionID, AgentID: "assistant", Status: run.StatusCompleted,
				Content: fmt.Sprintf("answer %d", i), CreatedAt: createdAt + int64(i),
			}})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestSessionRunsPagination: GET /sessions/{id}/runs stays a bare array of
// runs, oldest first, paged by limit and page in the store's query; without
// them it answers the first 1000 runs, and X-Total-Count says how many
// there are in all.
func TestSessionRunsPagination(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	_, err := s.store.UpsertSession(t.Context(), &storage.Session{SessionID: "s1", SessionType: storage.SessionTypeAgent, AgentID: "assistant"})
	require.NoError(t, err)
	putRuns(t, s.store, "s1", 1001, 1_700_000_000)

	page := func(query string) ([]string, string) {
		t.Helper()
		resp := s.get(t, "/sessions/s1/runs"+query)
		require.Equal(t, http.StatusOK, resp.StatusCode, query)
		var ids []string
		for _, r := range decode[[]map[string]any](t, resp) {
			ids = append(ids, r["run_id"].(string))
		}
		return ids, resp.Header.Get("X-Total-Count")
	}
	all, total := page("")
	require.Len(t, all, 1000, "no limit: the first 1000 runs")
	require.Equal(t, "1001", total)
	require.Equal(t, "r0", all[0])
	require.Equal(t, "r999", all[999])
	for _, tc := range []struct {
		query string
		want  []string
		total string
	}{
		{"?page=2", []string{"r1000"}, "1001"},
		{"?limit=2", []string{"r0", "r1"}, "1001"},
		{"?limit=2&page=0", []string{"r0", "r1"}, "1001"},
		{"?limit=3&page=2", []string{"r3", "r4", "r5"}, "1001"},
		{"?limit=2&page=501", []string{"r1000"}, "1001"},
		{"?limit=2&page=502", nil, "1001"},
		{"?created_after=1700000998&limit=2", []string{"r998", "r999"}, "3"},
		{"?created_after=1700000998&limit=2&page=2", []string{"r1000"}, "3"},
		{"?created_before=1700000001", []string{"r0", "r1"}, "2"},
	} {
		ids, total := page(tc.query)
		require.Equal(t, tc.want, ids, tc.query)
		require.Equal(t, tc.total, total, tc.query)
	}
}
