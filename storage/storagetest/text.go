package storagetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

func textTests() []conformanceTest {
	return []conformanceTest{
		{"RefusedInIdsAndNames", testTextRefused},
		{"KeptAsReplacementInContent", testTextInContent},
	}
}

// testTextRefused: text a database cannot store, in an id, a name or a
// query value, is refused with storage.ErrInvalidText on every store,
// whatever its database would do with it, and nothing is written.
func testTextRefused(t *testing.T, store storage.Store) {
	ctx := t.Context()
	for what, bad := range map[string]string{"a NUL": "s\x00-1", "invalid UTF-8": "s\xff-1"} {
		_, err := store.UpsertSession(ctx, &storage.Session{SessionID: bad, SessionType: storage.SessionTypeAgent, AgentID: "agent-1"})
		require.ErrorIs(t, err, storage.ErrInvalidText, "a session id with %s", what)
		require.ErrorIs(t, err, storage.ErrInvalid, "ErrInvalidText is an ErrInvalid")

		_, err = store.GetSession(ctx, bad, storage.GetSessionOptions{})
		require.ErrorIs(t, err, storage.ErrInvalidText, "reading a session id with %s", what)

		newSession(t, store, "s-1", alice)
		_, err = store.UpsertRun(ctx, testRun("s-1", bad, alice))
		require.ErrorIs(t, err, storage.ErrInvalidText, "a run id with %s", what)
		_, err = store.GetRun(ctx, "r-1", bad)
		require.ErrorIs(t, err, storage.ErrInvalidText, "a user id with %s", what)
		_, _, err = store.SaveRun(ctx, &storage.Session{SessionID: "s-1", SessionType: storage.SessionTypeAgent, AgentID: "agent-1", UserID: alice},
			testRun("s-1", bad, alice))
		require.ErrorIs(t, err, storage.ErrInvalidText, "a run id with %s, saved with its session", what)
		_, _, err = store.SaveRun(ctx, &storage.Session{SessionID: bad, SessionType: storage.SessionTypeAgent, AgentID: "agent-1"},
			testRun(bad, "r-1", ""))
		require.ErrorIs(t, err, storage.ErrInvalidText, "a session id with %s, saved with a run", what)
		if versioner, ok := store.(storage.SessionVersioner); ok {
			_, _, err = versioner.SessionVersion(ctx, bad, "", "r-1")
			require.ErrorIs(t, err, storage.ErrInvalidText, "the version of a session id with %s", what)
			_, _, err = versioner.SessionVersion(ctx, "s-1", alice, bad)
			require.ErrorIs(t, err, storage.ErrInvalidText, "the version probing a run id with %s", what)
		}
	}
	sessions, total, err := store.ListSessions(ctx, storage.SessionQuery{})
	require.NoError(t, err)
	require.Equal(t, 1, total, "only the good session was written: %v", sessions)
}

// testTextInContent: a NUL in content a model or a tool produced (a tool
// that read a binary file) does not lose the run: it is stored, and read
// back, as U+FFFD, on every store.
func testTextInContent(t *testing.T, store storage.Store) {
	newSession(t, store, "s-1", alice)
	rec := testRun("s-1", "r-1", alice)
	rec.Run.Content = "before\x00after, \\u0000 as text"
	putRun(t, store, rec)
	got, err := store.GetRun(t.Context(), "r-1", alice)
	require.NoError(t, err)
	require.Equal(t, "before\uFFFDafter, \\u0000 as text", got.Run.Content, "the NUL kept as U+FFFD, the escaped text as it was")
	require.Equal(t, run.StatusCompleted, got.Run.Status)
}
