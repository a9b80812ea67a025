package agentos_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

// createMemory stores a memory over the API and returns it.
func (s *server) createMemory(t *testing.T, user, text string, topics ...string) map[string]any {
	t.Helper()
	resp := s.callJSON(t, http.MethodPost, "/memories", map[string]any{"memory": text, "user_id": user, "topics": topics})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return decode[map[string]any](t, resp)
}

func TestMemoryCRUD(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	created := s.createMemory(t, "u1", "Likes green tea", "drinks", "preferences")
	id := created["memory_id"].(string)
	require.Len(t, id, 36, "ids are UUIDs")
	require.Equal(t, "Likes green tea", created["memory"])
	require.Equal(t, []any{"drinks", "preferences"}, created["topics"])
	require.Equal(t, "u1", created["user_id"])
	require.Nil(t, created["agent_id"])
	require.Contains(t, created, "team_id")
	require.NotZero(t, created["updated_at"])
	require.NotZero(t, created["created_at"])

	got := decode[map[string]any](t, s.get(t, "/memories/"+id))
	require.Equal(t, created, got)
	requireDetail(t, s.get(t, "/memories/"+id+"?user_id=u2"), http.StatusNotFound)

	resp := s.callJSON(t, http.MethodPatch, "/memories/"+id, map[string]any{"memory": "Likes black tea"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	updated := decode[map[string]any](t, resp)
	require.Equal(t, "Likes black tea", updated["memory"])
	require.Equal(t, []any{"drinks", "preferences"}, updated["topics"], "topics not sent are kept")
	resp = s.callJSON(t, http.MethodPatch, "/memories/"+id, map[string]any{"topics": []string{"tea"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	updated = decode[map[string]any](t, resp)
	require.Equal(t, []any{"tea"}, updated["topics"])
	require.Equal(t, "Likes black tea", updated["memory"])
	requireDetail(t, s.callJSON(t, http.MethodPatch, "/memories/nope", map[string]any{"memory": "x"}), http.StatusNotFound)

	s.createMemory(t, "u1", "Lives in Lisbon", "location")
	s.createMemory(t, "u2", "Plays chess")
	page := decode[map[string]any](t, s.get(t, "/memories?user_id=u1"))
	require.Len(t, page["data"], 2)
	require.Equal(t, 2.0, page["meta"].(map[string]any)["total_count"])
	page = decode[map[string]any](t, s.get(t, "/memories?topics=tea,location&sort_by=created_at&sort_order=asc"))
	require.Len(t, page["data"], 2)
	// Both were created within the same second, so only the set is fixed.
	texts := []any{page["data"].([]any)[0].(map[string]any)["memory"], page["data"].([]any)[1].(map[string]any)["memory"]}
	require.ElementsMatch(t, []any{"Likes black tea", "Lives in Lisbon"}, texts)
	page = decode[map[string]any](t, s.get(t, "/memories?search_content=CHESS"))
	require.Len(t, page["data"], 1)
	require.Equal(t, "u2", page["data"].([]any)[0].(map[string]any)["user_id"])
	page = decode[map[string]any](t, s.get(t, "/memories?limit=2&page=2"))
	require.Len(t, page["data"], 1)
	require.Equal(t, map[string]any{"page": 2.0, "limit": 2.0, "total_pages": 2.0, "total_count": 3.0, "search_time_ms": page["meta"].(map[string]any)["search_time_ms"]}, page["meta"])

	require.Equal(t, http.StatusNoContent, s.callJSON(t, http.MethodDelete, "/memories/"+id, nil).StatusCode)
	requireDetail(t, s.get(t, "/memories/"+id), http.StatusNotFound)
	requireDetail(t, s.callJSON(t, http.MethodDelete, "/memories/"+id, nil), http.StatusNotFound)
}

func TestMemoryValidation(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	for _, tc := range []struct {
		body any
		loc  []string
	}{
		{nil, []string{"body"}},
		{"{oops", []string{"body"}},
		{map[string]any{"user_id": "u1"}, []string{"body", "memory"}},
		{map[string]any{"memory": "", "user_id": "u1"}, []string{"body", "memory"}},
		{map[string]any{"memory": strings.Repeat("x", 5001), "user_id": "u1"}, []string{"body", "memory"}},
		{map[string]any{"memory": 42, "user_id": "u1"}, []string{"body", "memory"}},
		{map[string]any{"memory": "ok", "user_id": "u1", "topics": "one"}, []string{"body", "topics"}},
	} {
		requireIssue(t, s.callJSON(t, http.MethodPost, "/memories", tc.body), tc.loc...)
	}
	// 5000 characters is the limit, counted in characters, not bytes.
	long := s.createMemory(t, "u1", strings.Repeat("é", 5000))
	require.Equal(t, strings.Repeat("é", 5000), long["memory"])
	require.Equal(t, []any{}, long["topics"])
	require.Contains(t, requireDetail(t, s.callJSON(t, http.MethodPost, "/memories", map[string]any{"memory": "no owner"}), http.StatusBadRequest), "User ID")

	id := long["memory_id"].(string)
	requireIssue(t, s.callJSON(t, http.MethodPatch, "/memories/"+id, map[string]any{"memory": ""}), "body", "memory")
	requireIssue(t, s.callJSON(t, http.MethodPatch, "/memories/"+id, nil), "body")

	for _, tc := range []struct{ path, loc string }{
		{"/memories?limit=0", "limit"},
		{"/memories?page=x", "page"},
		{"/memories?sort_by=mood", "sort_by"},
		{"/memories?sort_order=up", "sort_order"},
		{"/user_memory_stats?limit=-1", "limit"},
	} {
		requireIssue(t, s.get(t, tc.path), "query", tc.loc)
	}
}

func TestMemoryBulkDelete(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	var ids []string
	for _, text := range []string{"a", "b", "c", "d"} {
		ids = append(ids, s.createMemory(t, "u1", text)["memory_id"].(string))
	}
	// Agno's {"memory_ids": [...]} form; unknown ids are skipped.
	resp := s.callJSON(t, http.MethodDelete, "/memories", map[string]any{"memory_ids": []string{ids[0], ids[1], "unknown"}})
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	// A bare list works too.
	resp = s.callJSON(t, http.MethodDelete, "/memories", []string{ids[2]})
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	left, _, err := s.store.ListMemories(t.Context(), storage.MemoryQuery{})
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, ids[3], left[0].MemoryID)

	for _, tc := range []struct {
		body any
		loc  []string
	}{
		{nil, []string{"body"}},
		{map[string]any{}, []string{"body", "memory_ids"}},
		{map[string]any{"memory_ids": []string{}}, []string{"body", "memory_ids"}},
		{[]string{}, []string{"body"}},
		{"[1, 2]", []string{"body"}},
	} {
		requireIssue(t, s.callJSON(t, http.MethodDelete, "/memories", tc.body), tc.loc...)
	}
}

func TestMemoryTopicsAndStats(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	require.Equal(t, []any{}, decode[[]any](t, s.get(t, "/memory_topics")))
	s.createMemory(t, "alice", "one", "work", "food")
	s.createMemory(t, "alice", "two", "food")
	s.createMemory(t, "bob", "three", "sport", "food")
	latest := s.createMemory(t, "carol", "four")

	require.Equal(t, []any{"food", "sport", "work"}, decode[[]any](t, s.get(t, "/memory_topics")))
	require.Equal(t, []any{"food", "work"}, decode[[]any](t, s.get(t, "/memory_topics?user_id=alice")))

	page := decode[map[string]any](t, s.get(t, "/user_memory_stats"))
	meta := page["meta"].(map[string]any)
	require.Equal(t, 3.0, meta["total_count"])
	require.Equal(t, 1.0, meta["total_pages"])
	counts := map[string]float64{}
	for _, item := range page["data"].([]any) {
		stats := item.(map[string]any)
		counts[stats["user_id"].(string)] = stats["total_memories"].(float64)
		require.NotZero(t, stats["last_memory_updated_at"])
	}
	require.Equal(t, map[string]float64{"alice": 2, "bob": 1, "carol": 1}, counts)

	page = decode[map[string]any](t, s.get(t, "/user_memory_stats?limit=2&page=2"))
	require.Len(t, page["data"], 1)
	require.Equal(t, 2.0, page["meta"].(map[string]any)["total_pages"])
	page = decode[map[string]any](t, s.get(t, "/user_memory_stats?limit=2&page=9"))
	require.Empty(t, page["data"])
	page = decode[map[string]any](t, s.get(t, "/user_memory_stats?user_id=carol"))
	require.Equal(t, []any{map[string]any{"user_id": "carol", "total_memories": 1.0, "last_memory_updated_at": latest["updated_at"]}}, page["data"])
}

// TestMemoryListingsCapLimit: no page of memories or of per-user counts
// holds more than 1000 rows; a larger limit is refused, naming the bound.
func TestMemoryListingsCapLimit(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil, nil)
	s.createMemory(t, "alice", "one")
	for _, path := range []string{"/memories", "/user_memory_stats"} {
		for _, limit := range []string{"1001", "2147483647"} {
			resp := s.get(t, path+"?limit="+limit)
			body := readAll(t, resp)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s limit=%s: %s", path, limit, body)
			require.JSONEq(t, limitTooLarge, body, "%s limit=%s", path, limit)
		}
		page := decode[map[string]any](t, s.get(t, path+"?limit=1000"))
		require.Len(t, page["data"], 1, path)
		require.Equal(t, 1000.0, page["meta"].(map[string]any)["limit"], path)
	}
}
