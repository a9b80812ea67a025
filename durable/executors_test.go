package durable_test

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// TestLaunchRefusesALiveExecutorID: a run executes on exec-1 when a second
// queue is launched with the same executor id. The launch is refused,
// naming executor_id, before it recovers anything: the run completes on
// exec-1, its tool call made once.
func TestLaunchRefusesALiveExecutorID(t *testing.T) {
	t.Parallel()
	onBoth(t, testLaunchRefusesALiveExecutorID)
}

func testLaunchRefusesALiveExecutorID(t *testing.T) {
	b := newBlocker()
	t.Cleanup(b.open)
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("finished here")}, []tool.Tool{b.tool(t, true)}, nil)
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	<-b.started // executing on exec-1

	logs := &recorder{}
	second := f.open(t, "exec-1", func(c *durable.Config) { c.Logger = slog.New(logs) })
	err = second.Launch()
	require.ErrorIs(t, err, durable.ErrExecutorInUse)
	require.ErrorContains(t, err, `executor_id "exec-1"`)
	require.Equal(t, 1, logs.count(durable.WatchingMessage), "the recent heartbeat was watched: %v", logs.all())
	require.NoError(t, second.Shutdown(time.Second), "a refused queue stops without touching the live one's heartbeat")

	b.open()
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCompleted, out.Status, "%v", out.Content)
	require.Equal(t, "finished here", out.Content)
	require.Equal(t, int32(1), b.calls.Load(), "the refused queue did not run the run again")
}

// TestLaunchHeartbeatsBeforeRunning: a replica that dies the moment its
// launch returns — before its heartbeat loop had a turn — has left a
// heartbeat row already, so the other replicas see it go silent and take
// its runs over after the lock grace.
func TestLaunchHeartbeatsBeforeRunning(t *testing.T) {
	t.Parallel()
	onBoth(t, testLaunchHeartbeatsBeforeRunning)
}

func testLaunchHeartbeatsBeforeRunning(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	replica := f.open(t, "exec-2", nil)
	require.NoError(t, replica.Launch())
	durable.Crash(replica)
	age, found, err := durable.Heartbeat(t.Context(), f.queue, "exec-2")
	require.NoError(t, err)
	require.True(t, found, "the launch wrote the replica's heartbeat")
	require.Less(t, age, durable.DefaultLockGrace, "written at the launch")
}

// TestLaunchAfterTheHolderDied: the executor id's last holder is gone, so a
// queue launched with it is not refused, and resumes the holder's run —
// with the default max_attempts, from its last completed step. A holder
// that crashed a moment ago left a fresh heartbeat, which the launch
// watches until it is sure the heartbeat stopped; one that stopped
// gracefully withdrew it, and one silent for longer than the lock grace
// is dead already: neither is watched.
func TestLaunchAfterTheHolderDied(t *testing.T) {
	t.Parallel()
	onBoth(t, testLaunchAfterTheHolderDied)
}

func testLaunchAfterTheHolderDied(t *testing.T) {
	for _, c := range []struct {
		name    string
		end     func(t *testing.T, f *fixture)
		watched bool
	}{
		{name: "crashed a moment ago", end: func(_ *testing.T, f *fixture) { durable.Crash(f.queue) }, watched: true},
		{name: "stopped", end: func(t *testing.T, f *fixture) { require.NoError(t, f.queue.Shutdown(100*time.Millisecond)) }},
		{name: "silent for longer than the lock grace", end: func(t *testing.T, f *fixture) {
			durable.Crash(f.queue)
			other := f.open(t, "exec-other", nil) // a handle on the database only
			require.NoError(t, durable.SetHeartbeat(t.Context(), other, "exec-1", 2*durable.DefaultLockGrace))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBlocker()
			t.Cleanup(b.open)
			var charges atomic.Int32
			replies := []scripted.Reply{scripted.ToolCall("charge", `{}`), scripted.ToolCall("work", `{}`), scripted.Text("finished after the restart")}
			f := newFixture(t, replies, []tool.Tool{chargeTool(t, &charges), b.tool(t, true)}, nil)
			accepted, err := f.submit(t, "s1", "go", "")
			require.NoError(t, err)
			<-b.started // executing on exec-1, after the charge
			c.end(t, f)

			logs := &recorder{}
			f.queue = f.start(t, "exec-1", func(c *durable.Config) { c.Logger = slog.New(logs) })
			out := f.wait(t, accepted.RunID)
			require.Equal(t, run.StatusCompleted, out.Status, "%v", out.Content)
			require.Equal(t, "finished after the restart", out.Content)
			require.Equal(t, int32(1), charges.Load(), "the completed tool call is not repeated")
			require.Equal(t, int32(2), b.calls.Load(), "the step in flight runs again")
			if c.watched {
				require.Equal(t, 1, logs.count(durable.WatchingMessage), "%v", logs.all())
			} else {
				require.Zero(t, logs.count(durable.WatchingMessage), "%v", logs.all())
			}
		})
	}
}

// TestDefaultMaxAttempts: without MaxAttempts a run gets three attempts: a
// run failing twice for a transient reason completes on its third, its row
// never showing ERROR meanwhile; one failing three times ends ERROR.
func TestDefaultMaxAttempts(t *testing.T) {
	t.Parallel()
	require.Equal(t, 3, durable.DefaultMaxAttempts)
	fast := func(c *durable.Config) { c.RetryDelay = time.Millisecond }

	t.Run("completes on the third attempt", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, []scripted.Reply{scripted.Fail(unavailable), scripted.Fail(unavailable), scripted.Text("third time")}, nil, fast)
		accepted, err := f.submit(t, "s1", "hello", "")
		require.NoError(t, err)
		seen := f.watchStatuses(t, accepted.RunID)
		out := f.wait(t, accepted.RunID)
		require.Equal(t, run.StatusCompleted, out.Status, "%v", out.Content)
		require.Equal(t, "third time", out.Content)
		require.Len(t, f.model.Requests(), 3)
		require.NotContains(t, seen(), run.StatusError, "a run with attempts left never reads ERROR")
		attempts, err := out.Attempts()
		require.NoError(t, err)
		require.Len(t, attempts, 2, "the two failed attempts: %v", attempts)
	})
	t.Run("ends ERROR after three", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, []scripted.Reply{scripted.Fail(unavailable), scripted.Fail(unavailable), scripted.Fail(unavailable), scripted.Text("never")}, nil, fast)
		accepted, err := f.submit(t, "s1", "hello", "")
		require.NoError(t, err)
		out := f.wait(t, accepted.RunID)
		require.Equal(t, run.StatusError, out.Status)
		require.Contains(t, out.Content, "overloaded")
		require.Len(t, f.model.Requests(), 3)
	})
}

// watchStatuses polls a run's row until it is terminal (or the test ends)
// and returns a function listing the statuses it read, once the watch is
// over.
func (f *fixture) watchStatuses(t *testing.T, runID string) func() []run.Status {
	t.Helper()
	var seen []run.Status
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-t.Context().Done():
				return
			case <-tick.C:
			}
			rec, err := f.store.GetRun(t.Context(), runID, "")
			if err != nil {
				continue
			}
			if len(seen) == 0 || seen[len(seen)-1] != rec.Run.Status {
				seen = append(seen, rec.Run.Status)
			}
			if rec.Run.Status.Terminal() && rec.Run.Status != run.StatusPaused {
				return
			}
		}
	}()
	return func() []run.Status {
		select {
		case <-done:
		case <-time.After(45 * time.Second):
			t.Fatal("the run did not end")
		}
		return seen
	}
}

// TestTwinsLaunchedAtOnce: two servers launched at the same instant with the
// same executor id both find no live holder; exactly one claims the id and
// the other is refused, whichever way their checks interleave.
func TestTwinsLaunchedAtOnce(t *testing.T) {
	t.Parallel()
	onBoth(t, testTwinsLaunchedAtOnce)
}

func testTwinsLaunchedAtOnce(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	twins := []*durable.Queue{f.open(t, "twin", nil), f.open(t, "twin", nil)}
	errs := make(chan error, len(twins))
	start := make(chan struct{})
	for _, q := range twins {
		go func() {
			<-start
			errs <- q.Launch()
		}()
	}
	close(start)
	var refused, launched int
	for range twins {
		select {
		case err := <-errs:
			if err == nil {
				launched++
				continue
			}
			require.ErrorIs(t, err, durable.ErrExecutorInUse)
			require.Contains(t, err.Error(), `executor_id "twin"`)
			refused++
		case <-time.After(runTimeout):
			t.Fatal("a launch did not return")
		}
	}
	require.Equal(t, 1, launched, "exactly one twin launches")
	require.Equal(t, 1, refused, "the other is refused")
}
