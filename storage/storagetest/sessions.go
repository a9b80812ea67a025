package storagetest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

func sessionTests() []conformanceTest {
	return []conformanceTest{
		{"UpsertGetRoundTrip", testSessionRoundTrip},
		{"VersionCountsEveryChange", testSessionVersion},
		{"TimestampsSetWhenZero", testSessionTimestamps},
		{"UpsertReplaces", testSessionUpsertReplaces},
		{"EmptyIDInvalid", testSessionEmptyID},
		{"GetMissing", testSessionGetMissing},
		{"GetWithoutRunsCarriesNoRuns", testSessionGetWithoutRuns},
		{"ListFilters", testSessionListFilters},
		{"ListSort", testSessionListSort},
		{"ListPagination", testSessionListPagination},
		{"ListInvalid", testSessionListInvalid},
		{"ListCarriesNoRuns", testSessionListCarriesNoRuns},
		{"Rename", testSessionRename},
		{"RenameMissing", testSessionRenameMissing},
		{"DeleteCascades", testSessionDeleteCascades},
		{"DeleteMissing", testSessionDeleteMissing},
	}
}

// fullSession returns a session with every column set to something non-trivial.
func fullSession(sessionID string) *storage.Session {
	return &storage.Session{
		SessionID:   sessionID,
		SessionType: storage.SessionTypeTeam,
		AgentID:     "agent-7",
		TeamID:      "team-3",
		WorkflowID:  "workflow-2",
		UserID:      alice,
		SessionData: map[string]any{
			storage.SessionNameKey:  "Trip to Paris",
			"session_metrics":       map[string]any{"input_tokens": 120, "output_tokens": 45.5},
			"claude_sdk_session_id": "cli-123",
			"uploads_root":          "/tmp/uploads/é ü 漢字",
		},
		AgentData:    map[string]any{"name": "Planner", "model": map[string]any{"id": "gpt-5-mini"}},
		TeamData:     map[string]any{"members": []any{"planner", "critic"}},
		WorkflowData: map[string]any{"steps": []any{map[string]any{"name": "draft"}, nil, true}},
		Metadata:     map[string]any{"source": "api", "priority": 2, "flag": false},
		Summary:      map[string]any{"summary": "planned a trip", "topics": []any{"travel"}},
		CreatedAt:    1_700_000_000,
	}
}

// requireSessionEqual asserts that every stored column of got matches want;
// timestamps and runs are checked by the tests that care about them.
func requireSessionEqual(t *testing.T, want, got *storage.Session) {
	t.Helper()
	require.NotNil(t, got)
	require.Equal(t, want.SessionID, got.SessionID)
	require.Equal(t, want.SessionType, got.SessionType)
	require.Equal(t, want.AgentID, got.AgentID)
	require.Equal(t, want.TeamID, got.TeamID)
	require.Equal(t, want.WorkflowID, got.WorkflowID)
	require.Equal(t, want.UserID, got.UserID)
	requireSameMap(t, want.SessionData, got.SessionData, "session_data")
	requireSameMap(t, want.AgentData, got.AgentData, "agent_data")
	requireSameMap(t, want.TeamData, got.TeamData, "team_data")
	requireSameMap(t, want.WorkflowData, got.WorkflowData, "workflow_data")
	requireSameMap(t, want.Metadata, got.Metadata, "metadata")
	requireSameMap(t, want.Summary, got.Summary, "summary")
}

func testSessionRoundTrip(t *testing.T, store storage.Store) {
	want := fullSession("s-1")
	stored := putSession(t, store, want)
	requireSessionEqual(t, want, stored)
	require.Equal(t, want.CreatedAt, stored.CreatedAt, "an explicit created_at is kept")
	require.GreaterOrEqual(t, stored.UpdatedAt, stored.CreatedAt)
	require.Empty(t, stored.Runs, "UpsertSession returns the row without runs")

	got, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{})
	require.NoError(t, err)
	requireSessionEqual(t, want, got)
	require.Equal(t, stored.CreatedAt, got.CreatedAt)
	require.Equal(t, stored.UpdatedAt, got.UpdatedAt)
	require.Equal(t, "Trip to Paris", got.Name())
	require.Equal(t, "team-3", got.ComponentID())

	scoped, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{UserID: alice})
	require.NoError(t, err, "the owner reads her own session")
	requireSessionEqual(t, want, scoped)
}

func testSessionTimestamps(t *testing.T, store storage.Store) {
	stored := newSession(t, store, "s-1", "")
	require.Positive(t, stored.CreatedAt, "a zero created_at is set by the store")
	require.GreaterOrEqual(t, stored.UpdatedAt, stored.CreatedAt)

	got, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Equal(t, stored.CreatedAt, got.CreatedAt)
	require.Equal(t, stored.UpdatedAt, got.UpdatedAt)
}

func testSessionUpsertReplaces(t *testing.T, store storage.Store) {
	first := putSession(t, store, fullSession("s-1"))

	replacement := &storage.Session{
		SessionID:   "s-1",
		SessionType: storage.SessionTypeAgent,
		AgentID:     "agent-8",
		UserID:      alice,
		SessionData: map[string]any{storage.SessionNameKey: "Renamed trip"},
		Metadata:    map[string]any{"source": "cli"},
	}
	second := putSession(t, store, replacement)
	requireSessionEqual(t, replacement, second)
	require.Equal(t, first.CreatedAt, second.CreatedAt,
		"replacing with a zero created_at keeps the first insert's created_at")
	require.GreaterOrEqual(t, second.UpdatedAt, first.UpdatedAt, "updated_at never goes back")

	got, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{})
	require.NoError(t, err)
	requireSessionEqual(t, replacement, got)

	all, total, err := store.ListSessions(t.Context(), storage.SessionQuery{})
	require.NoError(t, err)
	require.Equal(t, 1, total, "an upsert of an existing id adds no row")
	require.Len(t, all, 1)
}

func testSessionEmptyID(t *testing.T, store storage.Store) {
	_, err := store.UpsertSession(t.Context(), &storage.Session{SessionType: storage.SessionTypeAgent, AgentID: "agent-1"})
	require.ErrorIs(t, err, storage.ErrInvalid)
}

func testSessionGetMissing(t *testing.T, store storage.Store) {
	_, err := store.GetSession(t.Context(), "missing", storage.GetSessionOptions{})
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = store.GetSession(t.Context(), "missing", storage.GetSessionOptions{IncludeRuns: true})
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = store.GetSession(t.Context(), "missing", storage.GetSessionOptions{ContextRuns: 3})
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testSessionGetWithoutRuns(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	newRun(t, store, "s-1", "r-1", "")
	got, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Empty(t, got.Runs, "runs are loaded only when asked for")
}

// sessionFixture stores sessions that exercise every ListSessions filter.
func sessionFixture(t *testing.T, store storage.Store) {
	t.Helper()
	sessions := []*storage.Session{
		{SessionID: "agent-comp1-alice", SessionType: storage.SessionTypeAgent, AgentID: "comp-1", UserID: alice,
			SessionData: map[string]any{storage.SessionNameKey: "Trip to Paris"}, CreatedAt: 100},
		{SessionID: "team-comp1-bob", SessionType: storage.SessionTypeTeam, TeamID: "comp-1", UserID: bob,
			SessionData: map[string]any{storage.SessionNameKey: "paris notes"}, CreatedAt: 200},
		{SessionID: "workflow-comp1-alice", SessionType: storage.SessionTypeWorkflow, WorkflowID: "comp-1", UserID: alice,
			SessionData: map[string]any{storage.SessionNameKey: "Berlin"}, CreatedAt: 300},
		{SessionID: "agent-comp2-alice", SessionType: storage.SessionTypeAgent, AgentID: "comp-2", UserID: alice,
			SessionData: map[string]any{storage.SessionNameKey: "Compare PARISIAN cafés"}, CreatedAt: 400},
		// A team session that also names comp-1 as an agent: it belongs to team-9.
		{SessionID: "team-team9-nobody", SessionType: storage.SessionTypeTeam, AgentID: "comp-1", TeamID: "team-9",
			CreatedAt: 500},
	}
	for _, s := range sessions {
		putSession(t, store, s)
	}
}

func testSessionListFilters(t *testing.T, store storage.Store) {
	sessionFixture(t, store)
	cases := []struct {
		name  string
		query storage.SessionQuery
		want  []string
	}{
		{"NoFilter", storage.SessionQuery{},
			[]string{"agent-comp1-alice", "team-comp1-bob", "workflow-comp1-alice", "agent-comp2-alice", "team-team9-nobody"}},
		{"Type", storage.SessionQuery{Type: storage.SessionTypeTeam},
			[]string{"team-comp1-bob", "team-team9-nobody"}},
		{"AgentComponent", storage.SessionQuery{Type: storage.SessionTypeAgent, ComponentID: "comp-1"},
			[]string{"agent-comp1-alice"}},
		{"TeamComponent", storage.SessionQuery{Type: storage.SessionTypeTeam, ComponentID: "comp-1"},
			[]string{"team-comp1-bob"}},
		{"WorkflowComponent", storage.SessionQuery{Type: storage.SessionTypeWorkflow, ComponentID: "comp-1"},
			[]string{"workflow-comp1-alice"}},
		{"ComponentOfAnyType", storage.SessionQuery{ComponentID: "comp-2"},
			[]string{"agent-comp2-alice"}},
		{"User", storage.SessionQuery{UserID: alice},
			[]string{"agent-comp1-alice", "workflow-comp1-alice", "agent-comp2-alice"}},
		{"NameCaseInsensitiveSubstring", storage.SessionQuery{Name: "PARIS"},
			[]string{"agent-comp1-alice", "team-comp1-bob", "agent-comp2-alice"}},
		{"NameNoMatch", storage.SessionQuery{Name: "tokyo"}, nil},
		{"Combined", storage.SessionQuery{UserID: alice, Type: storage.SessionTypeAgent, Name: "paris"},
			[]string{"agent-comp1-alice", "agent-comp2-alice"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.query.SortBy, tc.query.SortOrder = "created_at", storage.SortAsc
			got, total, err := store.ListSessions(t.Context(), tc.query)
			require.NoError(t, err)
			require.Equal(t, tc.want, nilIfEmpty(sessionIDs(got)))
			require.Equal(t, len(tc.want), total)

			// The total counts every match, not just the page.
			tc.query.Page = storage.Page{Limit: 1, Page: 1}
			page, total, err := store.ListSessions(t.Context(), tc.query)
			require.NoError(t, err)
			require.Equal(t, len(tc.want), total, "total with Limit 1")
			require.Len(t, page, min(1, len(tc.want)))
		})
	}
}

func testSessionListSort(t *testing.T, store storage.Store) {
	// Creation order, name order and id order all differ.
	for _, s := range []*storage.Session{
		{SessionID: "s-a", SessionType: storage.SessionTypeAgent, AgentID: "agent-1",
			SessionData: map[string]any{storage.SessionNameKey: "banana"}, CreatedAt: 300},
		{SessionID: "s-b", SessionType: storage.SessionTypeAgent, AgentID: "agent-1",
			SessionData: map[string]any{storage.SessionNameKey: "cherry"}, CreatedAt: 100},
		{SessionID: "s-c", SessionType: storage.SessionTypeAgent, AgentID: "agent-1",
			SessionData: map[string]any{storage.SessionNameKey: "apple"}, CreatedAt: 200},
	} {
		putSession(t, store, s)
	}
	cases := []struct {
		sortBy string
		order  storage.SortOrder
		want   []string
	}{
		{"", "", []string{"s-a", "s-c", "s-b"}}, // created_at desc by default
		{"created_at", "", []string{"s-a", "s-c", "s-b"}},
		{"created_at", storage.SortAsc, []string{"s-b", "s-c", "s-a"}},
		{"created_at", storage.SortDesc, []string{"s-a", "s-c", "s-b"}},
		{"session_id", storage.SortAsc, []string{"s-a", "s-b", "s-c"}},
		{"session_id", storage.SortDesc, []string{"s-c", "s-b", "s-a"}},
		{"session_name", storage.SortAsc, []string{"s-c", "s-a", "s-b"}},
		{"session_name", storage.SortDesc, []string{"s-b", "s-a", "s-c"}},
	}
	for _, tc := range cases {
		t.Run(cmp.Or(tc.sortBy, "default")+"_"+cmp.Or(string(tc.order), "default"), func(t *testing.T) {
			got, total, err := store.ListSessions(t.Context(), storage.SessionQuery{SortBy: tc.sortBy, SortOrder: tc.order})
			require.NoError(t, err)
			require.Equal(t, 3, total)
			require.Equal(t, tc.want, sessionIDs(got))
		})
	}

	// updated_at is the store's clock, so only the direction can be checked.
	for _, order := range []storage.SortOrder{storage.SortAsc, storage.SortDesc} {
		got, total, err := store.ListSessions(t.Context(), storage.SessionQuery{SortBy: "updated_at", SortOrder: order})
		require.NoError(t, err)
		require.Equal(t, 3, total)
		require.Len(t, got, 3)
		require.True(t, slices.IsSortedFunc(got, func(a, b *storage.Session) int {
			if order == storage.SortDesc {
				a, b = b, a
			}
			return int(a.UpdatedAt - b.UpdatedAt)
		}), "sorted by updated_at %s", order)
	}
}

func testSessionListPagination(t *testing.T, store storage.Store) {
	// Inserted out of order; created_at fixes the listing order s-1..s-5.
	for _, n := range []int64{3, 1, 5, 2, 4} {
		putSession(t, store, &storage.Session{
			SessionID:   fmt.Sprintf("s-%d", n),
			SessionType: storage.SessionTypeAgent,
			AgentID:     "agent-1",
			CreatedAt:   n * 100,
		})
	}
	pages := []struct {
		page int
		want []string
	}{
		{1, []string{"s-1", "s-2"}},
		{2, []string{"s-3", "s-4"}},
		{3, []string{"s-5"}},
		{4, nil},
	}
	for _, p := range pages {
		got, total, err := store.ListSessions(t.Context(), storage.SessionQuery{
			SortBy: "created_at", SortOrder: storage.SortAsc, Page: storage.Page{Limit: 2, Page: p.page},
		})
		require.NoError(t, err)
		require.Equal(t, 5, total, "page %d: total is independent of the page", p.page)
		require.Equal(t, p.want, nilIfEmpty(sessionIDs(got)), "page %d", p.page)
	}

	// A zero limit lists everything, whatever the page says.
	for _, page := range []int{0, 1, 3} {
		got, total, err := store.ListSessions(t.Context(), storage.SessionQuery{
			SortBy: "created_at", SortOrder: storage.SortAsc, Page: storage.Page{Page: page},
		})
		require.NoError(t, err)
		require.Equal(t, 5, total)
		require.Equal(t, []string{"s-1", "s-2", "s-3", "s-4", "s-5"}, sessionIDs(got), "limit 0, page %d", page)
	}
}

func testSessionListInvalid(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	for _, q := range []storage.SessionQuery{
		{SortBy: "bogus"},
		{SortBy: "created_at; DROP TABLE agno_sessions"},
		{SortBy: "runs"},
		{Page: storage.Page{Limit: 10, Page: -1}},
		{Page: storage.Page{Limit: -1}},
	} {
		_, _, err := store.ListSessions(t.Context(), q)
		require.ErrorIs(t, err, storage.ErrInvalid, "query %+v", q)
	}
	_, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{})
	require.NoError(t, err, "the table survives a hostile sort column")
}

func testSessionListCarriesNoRuns(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", "")
	newRun(t, store, "s-1", "r-1", "")
	newRun(t, store, "s-1", "r-2", "")
	got, total, err := store.ListSessions(t.Context(), storage.SessionQuery{})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Len(t, got, 1)
	require.Empty(t, got[0].Runs, "list results carry no runs")
}

func testSessionRename(t *testing.T, store storage.Store) {
	original := putSession(t, store, fullSession("s-1"))

	renamed, err := store.RenameSession(t.Context(), "s-1", "", "Trip to Rome")
	require.NoError(t, err)
	require.Equal(t, "Trip to Rome", renamed.Name())
	want := fullSession("s-1")
	want.SessionData[storage.SessionNameKey] = "Trip to Rome"
	requireSessionEqual(t, want, renamed)
	require.Equal(t, original.CreatedAt, renamed.CreatedAt)
	require.GreaterOrEqual(t, renamed.UpdatedAt, original.UpdatedAt)

	got, err := store.GetSession(t.Context(), "s-1", storage.GetSessionOptions{})
	require.NoError(t, err)
	requireSessionEqual(t, want, got)

	// The owner may rename too, and a session without session_data gains a name.
	putSession(t, store, &storage.Session{SessionID: "s-2", SessionType: storage.SessionTypeAgent, AgentID: "agent-1", UserID: alice})
	renamed, err = store.RenameSession(t.Context(), "s-2", alice, "Fresh name")
	require.NoError(t, err)
	require.Equal(t, "Fresh name", renamed.Name())
	got, err = store.GetSession(t.Context(), "s-2", storage.GetSessionOptions{UserID: alice})
	require.NoError(t, err)
	require.Equal(t, "Fresh name", got.Name())
	require.Equal(t, alice, got.UserID)
}

func testSessionRenameMissing(t *testing.T, store storage.Store) {
	_, err := store.RenameSession(t.Context(), "missing", "", "name")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testSessionDeleteCascades(t *testing.T, store storage.Store) {
	ctx := t.Context()
	newSession(t, store, "doomed", "")
	newSession(t, store, "kept", "")
	newRun(t, store, "doomed", "r-doomed-1", "")
	newRun(t, store, "doomed", "r-doomed-2", "")
	newRun(t, store, "kept", "r-kept", "")
	doomedMain := storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-doomed"}
	doomedSub := doomedMain
	doomedSub.Subpath = "subagents/agent-a"
	keptMain := storage.TranscriptKey{Framework: "claude-agent-sdk", ProjectKey: "agent-1", SessionID: "cli-kept"}
	appendEntries(t, store, doomedMain, "doomed", "", 2)
	appendEntries(t, store, doomedSub, "doomed", "", 1)
	appendEntries(t, store, keptMain, "kept", "", 3)

	require.NoError(t, store.DeleteSession(ctx, "doomed", ""))

	_, err := store.GetSession(ctx, "doomed", storage.GetSessionOptions{})
	require.ErrorIs(t, err, storage.ErrNotFound)
	for _, runID := range []string{"r-doomed-1", "r-doomed-2"} {
		_, err := store.GetRun(ctx, runID, "")
		require.ErrorIs(t, err, storage.ErrNotFound, "run %s outlived its session", runID)
	}
	runs, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: "doomed"})
	if err != nil {
		require.ErrorIs(t, err, storage.ErrNotFound)
	} else {
		require.Empty(t, runs)
		require.Zero(t, total)
	}
	for _, key := range []storage.TranscriptKey{doomedMain, doomedSub} {
		entries, err := store.ReadTranscript(ctx, key, "", 0)
		require.NoError(t, err)
		require.Empty(t, entries, "transcript %+v outlived its session", key)
	}
	cliSessions, err := store.ListTranscriptSessions(ctx, "claude-agent-sdk", "agent-1", "")
	require.NoError(t, err)
	require.Equal(t, []string{"cli-kept"}, cliSessions)

	// The other session is untouched.
	_, err = store.GetSession(ctx, "kept", storage.GetSessionOptions{})
	require.NoError(t, err)
	_, err = store.GetRun(ctx, "r-kept", "")
	require.NoError(t, err)
	entries, err := store.ReadTranscript(ctx, keptMain, "", 0)
	require.NoError(t, err)
	require.Len(t, entries, 3)

	require.ErrorIs(t, store.DeleteSession(ctx, "doomed", ""), storage.ErrNotFound, "a second delete finds nothing")
}

func testSessionDeleteMissing(t *testing.T, store storage.Store) {
	require.ErrorIs(t, store.DeleteSession(t.Context(), "missing", ""), storage.ErrNotFound)
}
