package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage/internal/sqlstore"
)

// waiting is how many saves wait for a group.
func (f *idTable) waiting() int {
	f.db.group.mu.Lock()
	defer f.db.group.mu.Unlock()
	return len(f.db.group.waiting)
}

// save inserts id as a grouped save under key, sending its outcome to errs.
// hold, when set, runs inside the save before its statement.
func (f *idTable) save(ctx context.Context, key string, id int, errs chan<- error, hold func()) {
	go func() {
		errs <- f.db.InGroupTx(ctx, key, func(tx sqlstore.Conn) error {
			if hold != nil {
				hold()
			}
			_, err := tx.Exec(ctx, f.insert, id)
			return err
		})
	}()
}

// holdGroups starts the saves of ids, each leading a group of its own
// (there are as many as maxGroups), and returns once each holds its group
// open; the groups go on when release is closed. Each save starts once the
// one before it holds its group: two saves started together could both
// wait before either leader takes a group, and then share one.
func (f *idTable) holdGroups(ctx context.Context, ids [maxGroups]int, errs chan<- error, release <-chan struct{}) {
	for _, id := range ids {
		holding := make(chan struct{})
		var once sync.Once
		f.save(ctx, fmt.Sprint(id), id, errs, func() {
			once.Do(func() { close(holding) })
			<-release
		})
		<-holding
	}
}

// outcomes waits for n saves and returns the errors among their outcomes;
// a save that never ends fails the test.
func outcomes(t *testing.T, errs <-chan error, n int) []error {
	t.Helper()
	var failed []error
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				failed = append(failed, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a save never ended")
		}
	}
	return failed
}

// TestGroupCommit: saves that arrive while the groups in flight are being
// written are written together, in one transaction with one COMMIT. A save
// that fails undoes its group, whose saves then run alone: every other one
// is stored, the failing one alone fails. A save whose context ended while
// it waited is not written.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newIDTable(t, 4)
	errs := make(chan error, 64)

	release := make(chan struct{})
	f.holdGroups(ctx, [maxGroups]int{0, 1}, errs, release)
	const waiting = 10
	cancelled, cancel := context.WithCancel(ctx)
	for id := 2; id < 2+waiting; id++ {
		saveCtx := ctx
		if id == 5 {
			saveCtx = cancelled
		}
		f.save(saveCtx, fmt.Sprint(id), id, errs, nil)
	}
	require.Eventually(t, func() bool { return f.waiting() == waiting }, 10*time.Second, time.Millisecond)
	cancel()
	f.counter.commits.Store(0)
	close(release)
	failed := outcomes(t, errs, 2+waiting)
	require.Len(t, failed, 1)
	require.ErrorIs(t, failed[0], context.Canceled, "the save whose context ended")
	require.Equal(t, []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11}, f.ids(t))
	require.EqualValues(t, 3, f.counter.commits.Load(), "the two leaders' groups, then one group of the nine that waited")

	// A failing save in a group: the group is undone and each save runs
	// alone, those after it in the group as well as those before.
	release = make(chan struct{})
	f.holdGroups(ctx, [maxGroups]int{100, 101}, errs, release)
	// 4 is stored already; its key puts it between the others, so saves
	// of the group come after the failing one.
	for id, key := range map[int]string{102: "102", 103: "103", 4: "1035", 104: "104"} {
		f.save(ctx, key, id, errs, nil)
	}
	require.Eventually(t, func() bool { return f.waiting() == 4 }, 10*time.Second, time.Millisecond)
	close(release)
	failed = outcomes(t, errs, 6)
	require.Len(t, failed, 1)
	require.ErrorContains(t, failed[0], "duplicate key")
	require.Equal(t, []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 100, 101, 102, 103, 104}, f.ids(t))

	// Nothing waits: a save leads its own group at once.
	f.counter.commits.Store(0)
	f.save(ctx, "alone", 200, errs, nil)
	require.Empty(t, outcomes(t, errs, 1))
	require.EqualValues(t, 1, f.counter.commits.Load())
	require.Zero(t, f.waiting())
}
