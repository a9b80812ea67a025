package storagetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// testSessionVersion checks that every write of a session or of one of its
// runs moves the session's version by one, that reads and the liveness
// touch of a run do not, and that the version is scoped like the session.
func testSessionVersion(t *testing.T, store storage.Store) {
	versioner, ok := store.(storage.SessionVersioner)
	if !ok {
		t.Skip("the store does not report session versions")
	}
	ctx := t.Context()
	version := func() int64 {
		t.Helper()
		v, _, err := versioner.SessionVersion(ctx, "s1", alice, "")
		require.NoError(t, err)
		got, err := store.GetSession(ctx, "s1", storage.GetSessionOptions{UserID: alice})
		require.NoError(t, err)
		require.Equal(t, v, got.Version(), "SessionVersion and GetSession disagree")
		return v.UpdateCount
	}
	created := newSession(t, store, "s1", alice)
	require.Equal(t, int64(0), created.UpdateCount, "a new session's count")
	require.Equal(t, int64(0), version())

	steps := []struct {
		name  string
		write func()
	}{
		{"UpsertSession", func() { newSession(t, store, "s1", alice) }},
		{"UpsertRun", func() { newRun(t, store, "s1", "r1", alice) }},
		{"UpsertRun again", func() { newRun(t, store, "s1", "r1", alice) }},
		{"SaveRun", func() {
			stored, _, err := store.SaveRun(ctx, created, testRun("s1", "r2", alice))
			require.NoError(t, err)
			require.Equal(t, int64(4), stored.UpdateCount, "SaveRun returns the session's new count")
		}},
		{"RecordPendingRun", func() {
			rec := testRun("s1", "r3", alice)
			rec.Run.Status = run.StatusPending
			require.NoError(t, store.RecordPendingRun(ctx, created, rec))
		}},
		{"RenameSession", func() {
			_, err := store.RenameSession(ctx, "s1", alice, "renamed")
			require.NoError(t, err)
		}},
		{"DeleteRun", func() { require.NoError(t, store.DeleteRun(ctx, "r1", alice)) }},
	}
	for i, step := range steps {
		step.write()
		require.Equal(t, int64(i+1), version(), "after %s", step.name)
	}
	before := version()

	// Reads, a refused write and the liveness touch change nothing.
	_, _, err := store.GetRuns(ctx, storage.RunQuery{SessionID: "s1"})
	require.NoError(t, err)
	_, err = store.UpsertRun(ctx, testRun("s1", "r2", bob))
	require.Error(t, err, "bob writes into alice's session")
	require.Error(t, store.DeleteRun(ctx, "r2", bob), "bob deletes alice's run")
	if toucher, ok := store.(storage.RunToucher); ok {
		rec := testRun("s1", "r4", alice)
		rec.Run.Status = run.StatusRunning
		putRun(t, store, rec)
		before++
		touched, err := toucher.TouchRun(ctx, "r4")
		require.NoError(t, err)
		require.True(t, touched)
	}
	require.Equal(t, before, version(), "reads, refused writes and a touch count nothing")

	_, _, err = versioner.SessionVersion(ctx, "s1", bob, "r2")
	require.ErrorIs(t, err, storage.ErrNotFound, "bob reads the version of alice's session")
	_, _, err = versioner.SessionVersion(ctx, "missing", "", "")
	require.ErrorIs(t, err, storage.ErrNotFound)
	unscoped, stored, err := versioner.SessionVersion(ctx, "s1", "", "r2")
	require.NoError(t, err)
	require.Equal(t, before, unscoped.UpdateCount)
	require.True(t, stored, "r2 is a run of s1")
	for _, runID := range []string{"r1", "nope", ""} { // r1 was deleted
		_, stored, err = versioner.SessionVersion(ctx, "s1", alice, runID)
		require.NoError(t, err)
		require.False(t, stored, "run %q", runID)
	}
	newSession(t, store, "s2", alice)
	_, stored, err = versioner.SessionVersion(ctx, "s2", alice, "r2")
	require.NoError(t, err)
	require.False(t, stored, "r2 is a run of s1, not s2")
}

// versionAcrossReplicas checks that the version a replica reads of a
// session counts the other replica's writes, each one as soon as it is
// committed, whichever connection of its own the read runs on: the run
// host trusts its copy of a session only while that version holds.
func versionAcrossReplicas(t *testing.T, stores []storage.Store) {
	here, there := stores[0], stores[1]
	versioner, ok := here.(storage.SessionVersioner)
	if !ok {
		t.Skip("the store does not report session versions")
	}
	ctx := t.Context()
	created := newSession(t, here, "s1", alice)
	for i := range 3 {
		mine := fmt.Sprintf("here-%d", i)
		saved, _, err := here.SaveRun(ctx, created, testRun("s1", mine, alice))
		require.NoError(t, err)
		v, stored, err := versioner.SessionVersion(ctx, "s1", alice, mine)
		require.NoError(t, err)
		require.Equal(t, saved.Version(), v, "turn %d: the version after this replica's own save", i)
		require.True(t, stored, "turn %d: this replica's run is stored", i)

		theirs := fmt.Sprintf("there-%d", i)
		saved, _, err = there.SaveRun(ctx, created, testRun("s1", theirs, alice))
		require.NoError(t, err)
		v, stored, err = versioner.SessionVersion(ctx, "s1", alice, theirs)
		require.NoError(t, err)
		require.Equal(t, saved.Version(), v, "turn %d: the version after the other replica's save", i)
		require.True(t, stored, "turn %d: the other replica's run is stored", i)

		_, err = there.RenameSession(ctx, "s1", alice, theirs)
		require.NoError(t, err)
		renamed, err := there.GetSession(ctx, "s1", storage.GetSessionOptions{UserID: alice})
		require.NoError(t, err)
		v, _, err = versioner.SessionVersion(ctx, "s1", alice, "")
		require.NoError(t, err)
		require.Equal(t, renamed.Version(), v, "turn %d: the version after the other replica's rename", i)
	}
}
