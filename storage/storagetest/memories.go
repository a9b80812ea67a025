package storagetest

import (
	"cmp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

func memoryTests() []conformanceTest {
	return []conformanceTest{
		{"UpsertGetRoundTrip", testMemoryRoundTrip},
		{"TimestampsSetWhenZero", testMemoryTimestamps},
		{"UpsertReplaces", testMemoryUpsertReplaces},
		{"GetMissing", testMemoryGetMissing},
		{"ListFilters", testMemoryListFilters},
		{"ListSort", testMemoryListSort},
		{"ListPagination", testMemoryListPagination},
		{"ListInvalid", testMemoryListInvalid},
		{"Delete", testMemoryDelete},
	}
}

// putMemory stores m and fails the test on error.
func putMemory(t *testing.T, store storage.Store, m *storage.Memory) *storage.Memory {
	t.Helper()
	stored, err := store.UpsertMemory(t.Context(), m)
	require.NoError(t, err, "upsert memory %s", m.MemoryID)
	return stored
}

// newMemory stores a memory of userID ("" for none) and returns the stored row.
func newMemory(t *testing.T, store storage.Store, memoryID, userID string) *storage.Memory {
	t.Helper()
	return putMemory(t, store, &storage.Memory{MemoryID: memoryID, Memory: "fact " + memoryID, UserID: userID})
}

// requireMemoryEqual asserts that every column of got matches want, timestamps included.
func requireMemoryEqual(t *testing.T, want, got *storage.Memory) {
	t.Helper()
	require.NotNil(t, got)
	require.Equal(t, want.MemoryID, got.MemoryID)
	require.Equal(t, want.Memory, got.Memory)
	require.Equal(t, want.Input, got.Input)
	require.Equal(t, want.AgentID, got.AgentID)
	require.Equal(t, want.TeamID, got.TeamID)
	require.Equal(t, want.UserID, got.UserID)
	require.Equal(t, nilIfEmpty(want.Topics), nilIfEmpty(got.Topics))
	require.Equal(t, want.Feedback, got.Feedback)
	require.Equal(t, want.CreatedAt, got.CreatedAt)
	require.Equal(t, want.UpdatedAt, got.UpdatedAt)
}

func testMemoryRoundTrip(t *testing.T, store storage.Store) {
	want := &storage.Memory{
		MemoryID:  "m-1",
		Memory:    "Prefers \"green\" tea — 抹茶, never coffee",
		Input:     "I only drink green tea",
		AgentID:   "agent-1",
		TeamID:    "team-1",
		UserID:    alice,
		Topics:    []string{"food", "preferences"},
		Feedback:  "accurate",
		CreatedAt: 1_700_000_000,
		UpdatedAt: 1_700_000_500,
	}
	stored := putMemory(t, store, want)
	requireMemoryEqual(t, want, stored)

	for _, userID := range []string{"", alice} {
		got, err := store.GetMemory(t.Context(), "m-1", userID)
		require.NoError(t, err, "GetMemory as %q", userID)
		requireMemoryEqual(t, want, got)
	}
}

func testMemoryTimestamps(t *testing.T, store storage.Store) {
	stored := newMemory(t, store, "m-1", "")
	require.Positive(t, stored.CreatedAt, "a zero created_at is set by the store")
	require.Positive(t, stored.UpdatedAt, "a zero updated_at is set by the store")
	got, err := store.GetMemory(t.Context(), "m-1", "")
	require.NoError(t, err)
	require.Equal(t, stored.CreatedAt, got.CreatedAt)
	require.Equal(t, stored.UpdatedAt, got.UpdatedAt)
}

func testMemoryUpsertReplaces(t *testing.T, store storage.Store) {
	putMemory(t, store, &storage.Memory{MemoryID: "m-1", Memory: "Lives in Paris", UserID: alice,
		Topics: []string{"home"}, AgentID: "agent-1", CreatedAt: 100, UpdatedAt: 100})
	replacement := &storage.Memory{MemoryID: "m-1", Memory: "Moved to Berlin", UserID: alice,
		Topics: []string{"home", "travel"}, Feedback: "updated", CreatedAt: 100, UpdatedAt: 200}
	requireMemoryEqual(t, replacement, putMemory(t, store, replacement))

	got, err := store.GetMemory(t.Context(), "m-1", alice)
	require.NoError(t, err)
	requireMemoryEqual(t, replacement, got)

	all, total, err := store.ListMemories(t.Context(), storage.MemoryQuery{})
	require.NoError(t, err)
	require.Equal(t, 1, total, "an upsert of an existing id adds no row")
	require.Len(t, all, 1)
}

func testMemoryGetMissing(t *testing.T, store storage.Store) {
	_, err := store.GetMemory(t.Context(), "missing", "")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// memoryFixture stores m-1..m-5: created_at ascends with the id, updated_at
// descends, so every sort column gives a different order.
func memoryFixture(t *testing.T, store storage.Store) {
	t.Helper()
	for _, m := range []*storage.Memory{
		{MemoryID: "m-1", Memory: "Likes green TEA", UserID: alice, AgentID: "agent-1",
			Topics: []string{"food", "travel"}, CreatedAt: 100, UpdatedAt: 500},
		{MemoryID: "m-2", Memory: "Works at ACME", UserID: alice, TeamID: "team-1",
			Topics: []string{"work"}, CreatedAt: 200, UpdatedAt: 400},
		{MemoryID: "m-3", Memory: "Lives in Paris", UserID: bob, AgentID: "agent-1",
			Topics: []string{"travel"}, CreatedAt: 300, UpdatedAt: 300},
		{MemoryID: "m-4", Memory: "Prefers tea over coffee", UserID: bob, AgentID: "agent-2",
			CreatedAt: 400, UpdatedAt: 200},
		{MemoryID: "m-5", Memory: "Allergic to nuts", TeamID: "team-1",
			Topics: []string{"food"}, CreatedAt: 500, UpdatedAt: 100},
	} {
		putMemory(t, store, m)
	}
}

func testMemoryListFilters(t *testing.T, store storage.Store) {
	memoryFixture(t, store)
	cases := []struct {
		name  string
		query storage.MemoryQuery
		want  []string
	}{
		{"NoFilter", storage.MemoryQuery{}, []string{"m-1", "m-2", "m-3", "m-4", "m-5"}},
		{"User", storage.MemoryQuery{UserID: alice}, []string{"m-1", "m-2"}},
		{"Agent", storage.MemoryQuery{AgentID: "agent-1"}, []string{"m-1", "m-3"}},
		{"Team", storage.MemoryQuery{TeamID: "team-1"}, []string{"m-2", "m-5"}},
		{"OneTopic", storage.MemoryQuery{Topics: []string{"travel"}}, []string{"m-1", "m-3"}},
		{"AnyOfTopics", storage.MemoryQuery{Topics: []string{"work", "food"}}, []string{"m-1", "m-2", "m-5"}},
		{"UnknownTopic", storage.MemoryQuery{Topics: []string{"sports"}}, nil},
		{"SearchCaseInsensitive", storage.MemoryQuery{Search: "tea"}, []string{"m-1", "m-4"}},
		{"SearchUpperCase", storage.MemoryQuery{Search: "PARIS"}, []string{"m-3"}},
		{"SearchNoMatch", storage.MemoryQuery{Search: "tokyo"}, nil},
		{"Combined", storage.MemoryQuery{UserID: bob, Search: "TEA"}, []string{"m-4"}},
		{"CombinedTopicAgent", storage.MemoryQuery{AgentID: "agent-1", Topics: []string{"food"}}, []string{"m-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.query.SortBy, tc.query.SortOrder = "created_at", storage.SortAsc
			got, total, err := store.ListMemories(t.Context(), tc.query)
			require.NoError(t, err)
			require.Equal(t, tc.want, nilIfEmpty(memoryIDs(got)))
			require.Equal(t, len(tc.want), total)

			tc.query.Page = storage.Page{Limit: 1, Page: 1}
			page, total, err := store.ListMemories(t.Context(), tc.query)
			require.NoError(t, err)
			require.Equal(t, len(tc.want), total, "total with Limit 1")
			require.Len(t, page, min(1, len(tc.want)))
		})
	}
}

func testMemoryListSort(t *testing.T, store storage.Store) {
	memoryFixture(t, store)
	cases := []struct {
		sortBy string
		order  storage.SortOrder
		want   []string
	}{
		{"", "", []string{"m-1", "m-2", "m-3", "m-4", "m-5"}}, // updated_at desc by default
		{"updated_at", storage.SortAsc, []string{"m-5", "m-4", "m-3", "m-2", "m-1"}},
		{"updated_at", storage.SortDesc, []string{"m-1", "m-2", "m-3", "m-4", "m-5"}},
		{"created_at", storage.SortAsc, []string{"m-1", "m-2", "m-3", "m-4", "m-5"}},
		{"created_at", "", []string{"m-5", "m-4", "m-3", "m-2", "m-1"}},
		{"memory_id", storage.SortDesc, []string{"m-5", "m-4", "m-3", "m-2", "m-1"}},
		{"memory_id", storage.SortAsc, []string{"m-1", "m-2", "m-3", "m-4", "m-5"}},
	}
	for _, tc := range cases {
		t.Run(cmp.Or(tc.sortBy, "default")+"_"+cmp.Or(string(tc.order), "default"), func(t *testing.T) {
			got, total, err := store.ListMemories(t.Context(), storage.MemoryQuery{SortBy: tc.sortBy, SortOrder: tc.order})
			require.NoError(t, err)
			require.Equal(t, 5, total)
			require.Equal(t, tc.want, memoryIDs(got))
		})
	}
}

func testMemoryListPagination(t *testing.T, store storage.Store) {
	memoryFixture(t, store)
	pages := []struct {
		page int
		want []string
	}{
		{1, []string{"m-1", "m-2"}},
		{2, []string{"m-3", "m-4"}},
		{3, []string{"m-5"}},
		{4, nil},
	}
	for _, p := range pages {
		got, total, err := store.ListMemories(t.Context(), storage.MemoryQuery{
			SortBy: "created_at", SortOrder: storage.SortAsc, Page: storage.Page{Limit: 2, Page: p.page},
		})
		require.NoError(t, err)
		require.Equal(t, 5, total, "page %d: total is independent of the page", p.page)
		require.Equal(t, p.want, nilIfEmpty(memoryIDs(got)), "page %d", p.page)
	}

	got, total, err := store.ListMemories(t.Context(), storage.MemoryQuery{UserID: alice, Page: storage.Page{Page: 2}})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, got, 2, "a zero limit lists everything")
}

func testMemoryListInvalid(t *testing.T, store storage.Store) {
	newMemory(t, store, "m-1", "")
	for _, q := range []storage.MemoryQuery{
		{SortBy: "bogus"},
		{SortBy: "memory_id; DROP TABLE agno_memories"},
		{Page: storage.Page{Limit: 10, Page: -1}},
	} {
		_, _, err := store.ListMemories(t.Context(), q)
		require.ErrorIs(t, err, storage.ErrInvalid, "query %+v", q)
	}
	_, err := store.GetMemory(t.Context(), "m-1", "")
	require.NoError(t, err, "the table survives a hostile sort column")
}

func testMemoryDelete(t *testing.T, store storage.Store) {
	memoryFixture(t, store)
	deleted, err := store.DeleteMemories(t.Context(), []string{"m-1", "m-3", "missing"}, "")
	require.NoError(t, err)
	require.Equal(t, 2, deleted, "missing ids are not counted")
	for _, memoryID := range []string{"m-1", "m-3"} {
		_, err := store.GetMemory(t.Context(), memoryID, "")
		require.ErrorIs(t, err, storage.ErrNotFound, "memory %s", memoryID)
	}
	got, total, err := store.ListMemories(t.Context(), storage.MemoryQuery{SortBy: "memory_id", SortOrder: storage.SortAsc})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Equal(t, []string{"m-2", "m-4", "m-5"}, memoryIDs(got))

	deleted, err = store.DeleteMemories(t.Context(), nil, "")
	require.NoError(t, err)
	require.Zero(t, deleted)
	deleted, err = store.DeleteMemories(t.Context(), []string{"m-1"}, "")
	require.NoError(t, err)
	require.Zero(t, deleted, "a second delete finds nothing")
}
