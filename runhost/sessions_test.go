package runhost

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// cacheRun is a fresh run of session s as the host holds it.
func cacheRun(runID string, status run.Status) *Run {
	return &Run{out: &run.Output{RunID: runID, SessionID: "s", Status: status,
		Messages: []*run.Message{{Role: run.RoleUser, Content: runID}}}, fresh: true}
}

func stored(count int64) *storage.Session {
	return &storage.Session{SessionID: "s", CreatedAt: 1, UpdatedAt: 10 + count, UpdateCount: count,
		SessionData: map[string]any{storage.SessionStateKey: map[string]any{"n": 1}}}
}

func historyIDs(e *cachedSession) []string {
	var ids []string
	for _, h := range e.history {
		ids = append(ids, h.out.RunID)
	}
	return ids
}

// TestSessionCacheFollowsItsOwnWrites: a save that moves the version by
// one is applied (a completed run joins the history by run_index); a gap
// means another writer, and the session is forgotten.
func TestSessionCacheFollowsItsOwnWrites(t *testing.T) {
	c := &sessionCache{max: 4}
	created := &storage.Session{SessionID: "s"}
	c.saved(cacheRun("r0", run.StatusCompleted), created, stored(0), 0)
	e := c.get("s")
	require.NotNil(t, e, "the save that created the session starts its entry")
	require.Equal(t, []string{"r0"}, historyIDs(e))
	require.Equal(t, float64(1), e.session.SessionData[storage.SessionStateKey].(map[string]any)["n"], "the state reads as from JSON")

	// r2 was inserted after r1 but finishes first.
	r1, r2 := cacheRun("r1", run.StatusRunning), cacheRun("r2", run.StatusRunning)
	c.saved(r1, stored(0), stored(1), 1)
	r1.saved = true
	c.saved(r2, stored(1), stored(2), 2)
	r2.saved = true
	r2.out.Status = run.StatusCompleted
	c.saved(r2, stored(2), stored(3), 2)
	r1.out.Status = run.StatusCompleted
	c.saved(r1, stored(3), stored(4), 1)
	require.Equal(t, []string{"r0", "r1", "r2"}, historyIDs(c.get("s")), "in run_index order")
	require.Equal(t, int64(4), c.get("s").version.UpdateCount)

	// A failed run and a member's run stay out of the history.
	c.saved(cacheRun("r3", run.StatusError), stored(4), stored(5), 3)
	member := cacheRun("r4", run.StatusCompleted)
	member.out.ParentRunID = "r9"
	c.saved(member, stored(5), stored(6), 4)
	require.Equal(t, []string{"r0", "r1", "r2"}, historyIDs(c.get("s")))

	// A run stored before this host saw it: its place is unknown.
	old := cacheRun("r5", run.StatusCompleted)
	old.fresh = false
	c.saved(old, stored(6), stored(7), 0)
	require.False(t, c.get("s").historyKnown)
	require.NotNil(t, c.get("s").session, "the session itself is still known")

	// Someone else wrote in between: forget the session.
	c.saved(cacheRun("r6", run.StatusCompleted), stored(7), stored(9), 6)
	require.Nil(t, c.get("s"))
}

// TestSessionCacheIsBounded: the least recently used session goes first.
func TestSessionCacheIsBounded(t *testing.T) {
	c := &sessionCache{max: 2}
	for _, id := range []string{"a", "b"} {
		c.put(&cachedSession{id: id})
	}
	require.NotNil(t, c.get("a")) // b is now the least recently used
	c.put(&cachedSession{id: "c"})
	require.Nil(t, c.get("b"))
	require.NotNil(t, c.get("a"))
	require.NotNil(t, c.get("c"))
	require.False(t, (&sessionCache{}).enabled(), "size 0 keeps nothing")
}
