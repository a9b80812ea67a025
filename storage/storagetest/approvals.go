package storagetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

func approvalTests() []conformanceTest {
	return []conformanceTest{
		{"CreateGetRoundTrip", testApprovalRoundTrip},
		{"UserScoping", testApprovalScoping},
		{"ListFiltersAndPages", testApprovalList},
		{"ResolveOnce", testApprovalResolve},
		{"ResolveRaceOneWinner", testApprovalResolveRace},
		{"Expire", testApprovalExpire},
		{"RunStatus", testApprovalRunStatus},
	}
}

// approvalStore returns store as a [storage.ApprovalStore]; every SQL store
// is one.
func approvalStore(t *testing.T, store storage.Store) storage.ApprovalStore {
	t.Helper()
	approvals, ok := store.(storage.ApprovalStore)
	require.True(t, ok, "%T does not implement storage.ApprovalStore", store)
	return approvals
}

// testApproval is a pending approval of a confirmation that runID's agent
// paused for, owned by userID.
func testApproval(runID, userID string) *storage.Approval {
	return &storage.Approval{
		RunID: runID, SessionID: "session-" + runID, Status: storage.ApprovalPending, SourceType: "agent", SourceName: "Helper",
		ApprovalType: "required", PauseType: "confirmation", ToolName: "delete_file", ToolArgs: map[string]any{"path": "/tmp/x"},
		AgentID: "agent-1", UserID: userID, Requirements: json.RawMessage(`[{"tool_execution":{"tool_name":"delete_file"}}]`),
		Context: map[string]any{"tool_names": []any{"delete_file"}, "source_name": "Helper"}, RunStatus: "PAUSED",
	}
}

func createApproval(t *testing.T, store storage.ApprovalStore, a *storage.Approval) *storage.Approval {
	t.Helper()
	stored, err := store.CreateApproval(t.Context(), a)
	require.NoError(t, err, "create approval of run %s", a.RunID)
	return stored
}

func approvalIDs(approvals []*storage.Approval) []string {
	ids := make([]string, 0, len(approvals))
	for _, a := range approvals {
		ids = append(ids, a.ID)
	}
	return ids
}

func testApprovalRoundTrip(t *testing.T, s storage.Store) {
	store := approvalStore(t, s)
	ctx := t.Context()
	in := testApproval("run-1", alice)
	in.ExpiresAt, in.TeamID, in.WorkflowID, in.ScheduleID, in.ScheduleRunID = new(fireAt), "team-1", "flow-1", "sched-1", "srun-1"
	stored := createApproval(t, store, in)
	require.NotEmpty(t, stored.ID)
	require.NotZero(t, stored.CreatedAt)
	require.Equal(t, stored.CreatedAt, stored.UpdatedAt)

	got, err := store.GetApproval(ctx, stored.ID, "")
	require.NoError(t, err)
	require.Equal(t, stored, got)
	require.JSONEq(t, string(in.Requirements), string(got.Requirements))
	requireSameMap(t, in.ToolArgs, got.ToolArgs, "tool_args")
	requireSameMap(t, in.Context, got.Context, "context")
	want := *in
	want.ID, want.CreatedAt, want.UpdatedAt = got.ID, got.CreatedAt, got.UpdatedAt
	want.ToolArgs, want.Context, want.Requirements = nil, nil, nil
	got.ToolArgs, got.Context, got.Requirements = nil, nil, nil
	require.Equal(t, &want, got, "every column reads back as written")

	bare, err := store.CreateApproval(ctx, &storage.Approval{RunID: "run-2"})
	require.NoError(t, err)
	require.Equal(t, storage.ApprovalPending, bare.Status, "an approval starts pending")
	require.Nil(t, bare.ExpiresAt)
	require.Nil(t, bare.Requirements)
	require.Nil(t, bare.ToolArgs)

	_, err = store.CreateApproval(ctx, &storage.Approval{Status: storage.ApprovalPending})
	require.ErrorIs(t, err, storage.ErrInvalid, "an approval belongs to a run")
	_, err = store.CreateApproval(ctx, &storage.Approval{RunID: "run-3", Status: "maybe"})
	require.ErrorIs(t, err, storage.ErrInvalid, "an unknown status")
	_, err = store.GetApproval(ctx, "missing", "")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testApprovalScoping(t *testing.T, s storage.Store) {
	store := approvalStore(t, s)
	ctx := t.Context()
	mine := createApproval(t, store, testApproval("run-1", alice))
	createApproval(t, store, testApproval("run-2", alice))
	createApproval(t, store, testApproval("run-3", ""))

	_, err := store.GetApproval(ctx, mine.ID, bob)
	require.ErrorIs(t, err, storage.ErrNotFound, "bob reads alice's approval")
	_, err = store.ResolveApproval(ctx, mine.ID, bob, storage.ApprovalResolution{Status: storage.ApprovalApproved})
	require.ErrorIs(t, err, storage.ErrNotFound, "bob resolves alice's approval")
	require.ErrorIs(t, store.DeleteApproval(ctx, mine.ID, bob), storage.ErrNotFound, "bob deletes alice's approval")
	got, err := store.GetApproval(ctx, mine.ID, alice)
	require.NoError(t, err)
	require.Equal(t, mine, got, "alice's approval is untouched")

	count, err := store.CountPendingApprovals(ctx, bob)
	require.NoError(t, err)
	require.Zero(t, count)
	count, err = store.CountPendingApprovals(ctx, alice)
	require.NoError(t, err)
	require.Equal(t, 2, count)
	count, err = store.CountPendingApprovals(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 3, count)

	require.NoError(t, store.DeleteApproval(ctx, mine.ID, alice))
	_, err = store.GetApproval(ctx, mine.ID, "")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorIs(t, store.DeleteApproval(ctx, mine.ID, ""), storage.ErrNotFound, "deleting twice")
}

func testApprovalList(t *testing.T, s storage.Store) {
	store := approvalStore(t, s)
	ctx := t.Context()
	var ids []string
	for i := range 6 {
		a := testApproval(fmt.Sprintf("run-%d", i%3), alice)
		a.CreatedAt = created + int64(i)
		switch i {
		case 1:
			a.SourceType, a.AgentID, a.TeamID = "team", "", "team-1"
		case 2:
			a.Status = storage.ApprovalApproved
		case 3:
			a.ApprovalType, a.PauseType = "audit", "user_input"
		case 4:
			a.UserID, a.ScheduleID, a.WorkflowID = bob, "sched-1", "flow-1"
		}
		ids = append(ids, createApproval(t, store, a).ID)
	}
	list := func(q storage.ApprovalQuery) ([]string, int) {
		t.Helper()
		got, total, err := store.ListApprovals(ctx, q)
		require.NoError(t, err)
		return approvalIDs(got), total
	}
	got, total := list(storage.ApprovalQuery{})
	require.Equal(t, 6, total)
	require.Equal(t, []string{ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}, got, "newest first")
	for _, tt := range []struct {
		q    storage.ApprovalQuery
		want []string
	}{
		{storage.ApprovalQuery{Status: storage.ApprovalPending}, []string{ids[5], ids[4], ids[3], ids[1], ids[0]}},
		{storage.ApprovalQuery{SourceType: "team"}, []string{ids[1]}},
		{storage.ApprovalQuery{ApprovalType: "audit"}, []string{ids[3]}},
		{storage.ApprovalQuery{PauseType: "user_input"}, []string{ids[3]}},
		{storage.ApprovalQuery{AgentID: "agent-1", Status: storage.ApprovalPending}, []string{ids[5], ids[4], ids[3], ids[0]}},
		{storage.ApprovalQuery{TeamID: "team-1"}, []string{ids[1]}},
		{storage.ApprovalQuery{WorkflowID: "flow-1"}, []string{ids[4]}},
		{storage.ApprovalQuery{UserID: bob}, []string{ids[4]}},
		{storage.ApprovalQuery{ScheduleID: "sched-1"}, []string{ids[4]}},
		{storage.ApprovalQuery{RunID: "run-0"}, []string{ids[3], ids[0]}},
	} {
		got, total := list(tt.q)
		require.Equal(t, tt.want, got, "%+v", tt.q)
		require.Equal(t, len(tt.want), total, "%+v", tt.q)
	}
	got, total = list(storage.ApprovalQuery{UserID: alice, Page: storage.Page{Limit: 2, Page: 2}})
	require.Equal(t, 5, total)
	require.Equal(t, []string{ids[2], ids[1]}, got)
	_, _, err := store.ListApprovals(ctx, storage.ApprovalQuery{Page: storage.Page{Limit: -5}})
	require.ErrorIs(t, err, storage.ErrInvalid)
}

func testApprovalResolve(t *testing.T, s storage.Store) {
	store := approvalStore(t, s)
	ctx := t.Context()
	a := createApproval(t, store, testApproval("run-1", alice))

	resolved, err := store.ResolveApproval(ctx, a.ID, alice, storage.ApprovalResolution{Status: storage.ApprovalApproved, ResolvedBy: "admin",
		ResolutionData: map[string]any{"values": map[string]any{"path": "/tmp/y"}}, At: fireAt})
	require.NoError(t, err)
	require.Equal(t, storage.ApprovalApproved, resolved.Status)
	require.Equal(t, "admin", resolved.ResolvedBy)
	require.Equal(t, new(fireAt), resolved.ResolvedAt)
	require.Equal(t, fireAt, resolved.UpdatedAt)
	requireSameMap(t, map[string]any{"values": map[string]any{"path": "/tmp/y"}}, resolved.ResolutionData, "resolution_data")
	got, err := store.GetApproval(ctx, a.ID, "")
	require.NoError(t, err)
	require.Equal(t, resolved, got)

	again, err := store.ResolveApproval(ctx, a.ID, "", storage.ApprovalResolution{Status: storage.ApprovalRejected, ResolvedBy: "late", At: fireAt + 1})
	require.ErrorIs(t, err, storage.ErrConflict, "an approval is resolved once")
	require.ErrorContains(t, err, "approved", "the conflict says what the approval is")
	require.Equal(t, resolved, again, "the conflict comes with the stored row")
	got, err = store.GetApproval(ctx, a.ID, "")
	require.NoError(t, err)
	require.Equal(t, resolved, got, "a refused resolution writes nothing")

	_, err = store.ResolveApproval(ctx, "missing", "", storage.ApprovalResolution{Status: storage.ApprovalApproved})
	require.ErrorIs(t, err, storage.ErrNotFound)
	other := createApproval(t, store, testApproval("run-2", alice))
	_, err = store.ResolveApproval(ctx, other.ID, "", storage.ApprovalResolution{Status: storage.ApprovalExpired})
	require.ErrorIs(t, err, storage.ErrInvalid, "a resolution approves or rejects")
}

func testApprovalResolveRace(t *testing.T, s storage.Store) {
	store := approvalStore(t, s)
	a := createApproval(t, store, testApproval("run-1", alice))
	winners := make([]string, concurrentWriters)
	runConcurrently(t, concurrentWriters, func(i int) error {
		status := storage.ApprovalApproved
		if i%2 == 1 {
			status = storage.ApprovalRejected
		}
		by := fmt.Sprintf("admin-%d", i)
		_, err := store.ResolveApproval(t.Context(), a.ID, "", storage.ApprovalResolution{Status: status, ResolvedBy: by, At: fireAt})
		if err == nil {
			winners[i] = by
			return nil
		}
		if errors.Is(err, storage.ErrConflict) {
			return nil
		}
		return err
	})
	var won []string
	for _, w := range winners {
		if w != "" {
			won = append(won, w)
		}
	}
	require.Len(t, won, 1, "exactly one resolver wins")
	got, err := store.GetApproval(t.Context(), a.ID, "")
	require.NoError(t, err)
	require.Equal(t, won[0], got.ResolvedBy, "the stored resolution is the winner's")
}

func testApprovalExpire(t *testing.T, s storage.Store) {
	store := approvalStore(t, s)
	ctx := t.Context()
	lapsed := testApproval("run-1", alice)
	lapsed.ExpiresAt = new(fireAt - 1)
	onTheDot := testApproval("run-2", alice)
	onTheDot.ExpiresAt = new(fireAt)
	later := testApproval("run-3", alice)
	later.ExpiresAt = new(fireAt + 1)
	never := testApproval("run-4", alice)
	resolved := testApproval("run-5", alice)
	resolved.ExpiresAt, resolved.Status = new(fireAt-100), storage.ApprovalApproved
	for _, a := range []*storage.Approval{lapsed, onTheDot, later, never, resolved} {
		createApproval(t, store, a)
	}

	expired, err := store.ExpireApprovals(ctx, fireAt)
	require.NoError(t, err)
	require.EqualValues(t, 2, expired)
	byRun := map[string]*storage.Approval{}
	all, _, err := store.ListApprovals(ctx, storage.ApprovalQuery{})
	require.NoError(t, err)
	for _, a := range all {
		byRun[a.RunID] = a
	}
	require.Equal(t, storage.ApprovalExpired, byRun["run-1"].Status)
	require.Equal(t, fireAt, byRun["run-1"].UpdatedAt)
	require.Equal(t, storage.ApprovalExpired, byRun["run-2"].Status, "expires_at equal to now has expired")
	require.Equal(t, storage.ApprovalPending, byRun["run-3"].Status)
	require.Equal(t, storage.ApprovalPending, byRun["run-4"].Status, "no expires_at, no expiry")
	require.Equal(t, storage.ApprovalApproved, byRun["run-5"].Status, "a resolved approval stays resolved")

	expired, err = store.ExpireApprovals(ctx, fireAt)
	require.NoError(t, err)
	require.Zero(t, expired, "an expired approval expires once")
	_, err = store.ResolveApproval(ctx, byRun["run-1"].ID, "", storage.ApprovalResolution{Status: storage.ApprovalApproved})
	require.ErrorIs(t, err, storage.ErrConflict, "an expired approval cannot be resolved")
}

func testApprovalRunStatus(t *testing.T, s storage.Store) {
	store := approvalStore(t, s)
	ctx := t.Context()
	first := createApproval(t, store, testApproval("run-1", alice))
	second := createApproval(t, store, testApproval("run-1", alice))
	other := createApproval(t, store, testApproval("run-2", alice))

	require.NoError(t, store.SetApprovalRunStatus(ctx, "run-1", "COMPLETED", fireAt))
	for _, id := range []string{first.ID, second.ID} {
		got, err := store.GetApproval(ctx, id, "")
		require.NoError(t, err)
		require.Equal(t, "COMPLETED", got.RunStatus)
		require.Equal(t, fireAt, got.UpdatedAt)
		require.Equal(t, storage.ApprovalPending, got.Status, "the approval's own status is not the run's")
	}
	got, err := store.GetApproval(ctx, other.ID, "")
	require.NoError(t, err)
	require.Equal(t, "PAUSED", got.RunStatus, "another run's approvals are untouched")
	require.NoError(t, store.SetApprovalRunStatus(ctx, "no-approvals", "COMPLETED", fireAt), "a run without approvals")
}
