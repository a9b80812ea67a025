package durable_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tool"
)

// fixture is a queue over one SQLite database with one agent.
type fixture struct {
	dbURL  string
	schema string
	store  storage.Store
	model  *scripted.Model
	agent  *agent.Agent
	events *eventlog.Memory
	queue  *durable.Queue
}

func newFixture(t *testing.T, replies []scripted.Reply, tools []tool.Tool, configure func(*durable.Config)) *fixture {
	t.Helper()
	f := &fixture{model: scripted.New(replies), events: eventlog.NewMemory(eventlog.MemoryConfig{})}
	f.store, f.dbURL, f.schema = openBackend(t, postgresBackend(t))
	var err error
	f.agent, err = agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: f.model, Store: f.store, Tools: tools})
	require.NoError(t, err)
	f.queue = f.start(t, "exec-1", configure)
	return f
}

// openBackend opens a fresh store on SQLite or Postgres and returns it with
// the database URL and Postgres schema the queue uses beside it.
func openBackend(tb testing.TB, onPostgres bool) (store storage.Store, dbURL, schema string) {
	tb.Helper()
	if onPostgres {
		url := testdb.PostgresURL(tb)
		name := testdb.UniqueName(tb, "agnogo")
		pg, err := postgres.Open(tb.Context(), postgres.Config{URL: url, Schema: name, AutoMigrate: true})
		require.NoError(tb, err)
		tb.Cleanup(func() { pg.Close() })
		return pg, url, name + "_dbos"
	}
	path := filepath.Join(tb.TempDir(), "agnogo.db")
	lite, err := sqlite.Open(tb.Context(), sqlite.Config{Path: path})
	require.NoError(tb, err)
	tb.Cleanup(func() { lite.Close() })
	return lite, "sqlite:file:" + path, ""
}

// postgresBackend reports whether a test runs on Postgres (see onBoth).
func postgresBackend(t *testing.T) bool { return strings.Contains(t.Name(), "/postgres") }

// onBoth runs a test on SQLite and on Postgres, in parallel: each run has
// a database of its own.
func onBoth(t *testing.T, test func(t *testing.T)) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			test(t)
		})
	}
}

// start opens and launches a queue on the fixture's database.
func (f *fixture) start(t *testing.T, executor string, configure func(*durable.Config)) *durable.Queue {
	t.Helper()
	q := f.open(t, executor, configure)
	require.NoError(t, q.Launch())
	return q
}

// open opens a queue on the fixture's database without launching it; it is
// shut down when the test ends.
func (f *fixture) open(t *testing.T, executor string, configure func(*durable.Config)) *durable.Queue {
	t.Helper()
	cfg := durable.Config{DatabaseURL: f.dbURL, Schema: f.schema, Store: f.store, Runners: []run.Runner{f.agent}, Events: f.events,
		ExecutorID: executor, PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	if configure != nil {
		configure(&cfg)
	}
	q, err := durable.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Shutdown(time.Second) })
	return q
}

func (f *fixture) submit(t *testing.T, session, message, key string) (durable.Accepted, error) {
	t.Helper()
	return f.queue.Submit(t.Context(), durable.Submission{AgentID: "assistant", IdempotencyKey: key,
		Input: &run.Input{InputContent: message, RunID: newRunID(), SessionID: session}})
}

var runCounter atomic.Int64

func newRunID() string {
	return "run-" + time.Now().Format("150405.000000") + "-" + string(rune('a'+runCounter.Add(1)%26))
}

// runTimeout bounds the wait for a run to end: generous, since the machine
// may be busy.
const runTimeout = 45 * time.Second

// promptly bounds how long a cancel takes to stop a run in flight. The
// tests' runs wait in a tool that returns only when cancelled, so a run that
// stops at all was stopped by the cancel; the bound catches a cancel that
// lags (the watcher checks every 200 ms; a Redis signal is immediate) while
// leaving room for a loaded machine: the race detector, busy cores, a SQLite
// write waiting its turn.
const promptly = 5 * time.Second

// quietWindow is how long a negative check watches for something that must
// not happen (a run starting while its session is held): long enough for
// the queue to poll many times (the fixture polls every 10 ms), short
// enough to keep the tests fast.
const quietWindow = 150 * time.Millisecond

// wait polls a run until it is terminal (PAUSED does not count).
func (f *fixture) wait(t *testing.T, runID string) *run.Output {
	t.Helper()
	var out *run.Output
	require.Eventually(t, func() bool {
		rec, err := f.store.GetRun(t.Context(), runID, "")
		if err != nil || !rec.Run.Status.Terminal() || rec.Run.Status == run.StatusPaused {
			return false
		}
		out = rec.Run
		return true
	}, runTimeout, 10*time.Millisecond, "run %s not terminal", runID)
	return out
}

// staysPending checks, for quietWindow, that none of the runs leaves
// PENDING.
func (f *fixture) staysPending(t *testing.T, why string, runIDs ...string) {
	t.Helper()
	require.Never(t, func() bool {
		for _, id := range runIDs {
			rec, err := f.store.GetRun(t.Context(), id, "")
			if err != nil || rec.Run.Status != run.StatusPending {
				return true
			}
		}
		return false
	}, quietWindow, 10*time.Millisecond, why)
}

func TestSubmittedRunCompletes(t *testing.T) {
	t.Parallel()
	onBoth(t, testSubmittedRunCompletes)
}

func testSubmittedRunCompletes(t *testing.T) {
	f := newFixture(t, []scripted.Reply{scripted.Text("done durably")}, nil, nil)
	accepted, err := f.submit(t, "s1", "hello", "")
	require.NoError(t, err)
	rec, err := f.store.GetRun(t.Context(), accepted.RunID, "")
	require.NoError(t, err)
	require.Contains(t, []run.Status{run.StatusPending, run.StatusRunning, run.StatusCompleted}, rec.Run.Status, "accepted means recorded")
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "done durably", out.Content)
	require.Eventually(t, func() bool {
		info, ok := f.events.Lookup(accepted.RunID)
		return ok && info.Status == run.StatusCompleted
	}, 5*time.Second, 10*time.Millisecond, "the event log sees the run end")
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	onBoth(t, testIdempotencyKey)
}

func testIdempotencyKey(t *testing.T) {
	f := newFixture(t, []scripted.Reply{scripted.Text("once")}, nil, nil)
	first, err := f.submit(t, "s1", "pay", "order-42")
	require.NoError(t, err)
	again, err := f.submit(t, "s1", "pay", "order-42")
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, first.RunID, again.RunID)
	f.wait(t, first.RunID)
	require.Len(t, f.model.Requests(), 1, "one run, one model call")

	_, err = f.queue.Submit(t.Context(), durable.Submission{AgentID: "assistant", IdempotencyKey: "order-42", Stream: true,
		Input: &run.Input{InputContent: "pay", RunID: newRunID(), SessionID: "s1"}})
	require.ErrorIs(t, err, durable.ErrIdempotencyConflict, "another stream mode")
	other, err := f.queue.Submit(t.Context(), durable.Submission{AgentID: "assistant", IdempotencyKey: "order-42",
		Input: &run.Input{InputContent: "pay", RunID: newRunID(), SessionID: "s9", UserID: "someone-else"}})
	require.NoError(t, err, "the key is per user")
	require.NotEqual(t, first.RunID, other.RunID)

	_, err = f.submit(t, "s1", "x", string(make([]byte, durable.MaxIdempotencyKeyLength+1)))
	require.ErrorIs(t, err, durable.ErrInvalidKey)
}

// blocker is a tool that waits until released, counting its calls.
type blocker struct {
	calls   atomic.Int32
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 64), release: make(chan struct{})}
}

func (b *blocker) tool(t *testing.T, honourCancel bool) tool.Tool {
	tl, err := tool.New(tool.Config{Name: "work"}, func(ctx context.Context, _ struct{}) (string, error) {
		if b.calls.Add(1) > 1 {
			return "worked", nil // only the first call blocks
		}
		b.started <- struct{}{}
		if honourCancel {
			select {
			case <-b.release:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		} else {
			<-b.release
		}
		return "worked", nil
	})
	require.NoError(t, err)
	return tl
}

func (b *blocker) open() { b.once.Do(func() { close(b.release) }) }

func TestQueueDepthAndFIFO(t *testing.T) {
	t.Parallel()
	onBoth(t, testQueueDepthAndFIFO)
}

func testQueueDepthAndFIFO(t *testing.T) {
	b := newBlocker()
	replies := []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("1"), scripted.Text("2"), scripted.Text("3")}
	f := newFixture(t, replies, []tool.Tool{b.tool(t, true)}, func(c *durable.Config) { c.MaxQueueDepth = 3; c.MaxConcurrency = 4 })
	t.Cleanup(b.open)
	first, err := f.submit(t, "s1", "first", "")
	require.NoError(t, err)
	<-b.started
	var later []string
	for _, msg := range []string{"second", "third"} {
		a, err := f.submit(t, "s1", msg, "")
		require.NoError(t, err)
		later = append(later, a.RunID)
	}
	_, err = f.submit(t, "s2", "over", "")
	require.ErrorIs(t, err, durable.ErrQueueFull, "three runs are in the queue (one running, two waiting)")

	f.staysPending(t, "a session runs one run at a time", later...)
	b.open()
	require.Equal(t, "1", f.wait(t, first.RunID).Content)
	require.Equal(t, "2", f.wait(t, later[0]).Content, "submission order")
	require.Equal(t, "3", f.wait(t, later[1]).Content)
}

func TestCancelQueuedAndRunning(t *testing.T) {
	t.Parallel()
	b := newBlocker()
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("never")}, []tool.Tool{b.tool(t, true)}, nil)
	t.Cleanup(b.open)
	running, err := f.submit(t, "s1", "one", "")
	require.NoError(t, err)
	<-b.started
	queued, err := f.submit(t, "s1", "two", "")
	require.NoError(t, err)

	known, err := f.queue.Cancel(t.Context(), queued.RunID)
	require.NoError(t, err)
	require.True(t, known)
	require.Equal(t, run.StatusCancelled, f.wait(t, queued.RunID).Status)

	cancelled := time.Now()
	_, err = f.queue.Cancel(t.Context(), running.RunID)
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, f.wait(t, running.RunID).Status)
	require.Less(t, time.Since(cancelled), promptly)
	known, err = f.queue.Cancel(t.Context(), "nope")
	require.NoError(t, err)
	require.False(t, known)
}

// TestRestartAfterCrash: the process executing a run dies inside a tool
// call (its queue stops without the run finishing). A new process with the
// same executor id either ends the run ERROR with the requeue hint
// (max_attempts 1) or finishes it without repeating the completed steps
// (max_attempts 2).
func TestRestartAfterCrash(t *testing.T) {
	t.Parallel()
	for _, attempts := range []int{1, 2} {
		t.Run(map[int]string{1: "at most once", 2: "continues"}[attempts], func(t *testing.T) {
			t.Parallel()
			first := newBlocker()
			var charges atomic.Int32
			charge := chargeTool(t, &charges)
			replies := []scripted.Reply{scripted.ToolCall("charge", `{}`), scripted.ToolCall("work", `{}`), scripted.Text("finished")}
			f := newFixture(t, replies, []tool.Tool{charge, first.tool(t, false)}, func(c *durable.Config) { c.MaxAttempts = attempts })
			accepted, err := f.submit(t, "s1", "go", "")
			require.NoError(t, err)
			<-first.started
			// The crash: the executing process goes away mid-step.
			durable.Crash(f.queue)

			f.queue = f.start(t, "exec-1", func(c *durable.Config) { c.MaxAttempts = attempts })
			out := f.wait(t, accepted.RunID)
			first.open()
			if attempts == 1 {
				require.Equal(t, run.StatusError, out.Status)
				require.Contains(t, out.Content, "/queue/jobs/"+accepted.RunID+"/requeue")
				require.Contains(t, out.Content, "max_attempts")
				return
			}
			require.Equal(t, run.StatusCompleted, out.Status)
			require.Equal(t, "finished", out.Content)
			require.Equal(t, int32(1), charges.Load(), "the completed tool call is not repeated")
			require.Equal(t, int32(2), first.calls.Load(), "the step in flight at the crash runs again")
		})
	}
}

// TestCancelFromAnotherReplica: a run executing on one queue is cancelled
// through another queue on the same database; it stops promptly.
func TestCancelFromAnotherReplica(t *testing.T) {
	t.Parallel()
	onBoth(t, testCancelFromAnotherReplica)
}

func testCancelFromAnotherReplica(t *testing.T) {
	b := newBlocker()
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("never")}, []tool.Tool{b.tool(t, true)}, nil)
	t.Cleanup(b.open)
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	<-b.started // executing on exec-1
	other := f.start(t, "exec-2", nil)
	cancelled := time.Now()
	known, err := other.Cancel(t.Context(), accepted.RunID)
	require.NoError(t, err)
	require.True(t, known)
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCancelled, out.Status)
	require.Less(t, time.Since(cancelled), promptly)
}

// TestPausedRunParksItsSession: a run that pauses for a confirmation holds
// its session: the next submission waits behind it until the continuation
// arrives through the queue; then both complete, in order.
func TestPausedRunParksItsSession(t *testing.T) {
	t.Parallel()
	confirm := deployTool(t)
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("deploy", `{}`), scripted.Text("Deployed."), scripted.Text("Next one.")},
		[]tool.Tool{confirm}, nil)
	paused, err := f.submit(t, "s1", "deploy it", "")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rec, err := f.store.GetRun(t.Context(), paused.RunID, "")
		return err == nil && rec.Run.Status == run.StatusPaused
	}, 10*time.Second, 10*time.Millisecond)
	next, err := f.submit(t, "s1", "then this", "")
	require.NoError(t, err)
	f.staysPending(t, "the session waits for the paused run", next.RunID)

	parked, err := f.queue.Parked(t.Context(), paused.RunID, "")
	require.NoError(t, err)
	require.True(t, parked)
	stored, err := f.store.GetRun(t.Context(), paused.RunID, "")
	require.NoError(t, err)
	tools := stored.Run.Tools
	confirmed := true
	tools[0].Confirmed = &confirmed
	require.NoError(t, f.queue.Continue(t.Context(), &run.ContinueRequest{RunID: paused.RunID, Tools: tools}))
	require.Equal(t, "Deployed.", f.wait(t, paused.RunID).Content)
	require.Equal(t, "Next one.", f.wait(t, next.RunID).Content)
	require.ErrorIs(t, f.queue.Continue(t.Context(), &run.ContinueRequest{RunID: paused.RunID}), durable.ErrNotParked)
}

// deployTool is a tool that asks for a person's confirmation before it runs.
func deployTool(t *testing.T) tool.Tool {
	t.Helper()
	confirm, err := tool.New(tool.Config{Name: "deploy", RequiresConfirmation: true}, func(context.Context, struct{}) (string, error) {
		return "deployed", nil
	})
	require.NoError(t, err)
	return confirm
}

// waitParked waits until a run is paused on the queue, its workflow waiting
// for a continuation.
func (f *fixture) waitParked(t *testing.T, runID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ok, err := f.queue.Parked(t.Context(), runID, "")
		return err == nil && ok
	}, 10*time.Second, 10*time.Millisecond)
}

// TestCancelParkedRun: cancelling a paused run ends it CANCELLED and frees
// its session.
func TestCancelParkedRun(t *testing.T) {
	t.Parallel()
	confirm := deployTool(t)
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("deploy", `{}`), scripted.Text("after")}, []tool.Tool{confirm}, nil)
	paused, err := f.submit(t, "s1", "deploy it", "")
	require.NoError(t, err)
	f.waitParked(t, paused.RunID)
	next, err := f.submit(t, "s1", "then this", "")
	require.NoError(t, err)
	_, err = f.queue.Cancel(t.Context(), paused.RunID)
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, f.wait(t, paused.RunID).Status)
	require.Equal(t, "after", f.wait(t, next.RunID).Content, "the session is free again")
}

// TestTakeOverFromADeadReplica: the process executing a run dies; another
// replica on the same database notices its silence after the lock grace and
// either ends the run ERROR with the requeue hint (max_attempts 1) or
// finishes it without repeating its completed steps (max_attempts 2).
func TestTakeOverFromADeadReplica(t *testing.T) {
	t.Parallel()
	onBoth(t, testTakeOverFromADeadReplica)
}

func testTakeOverFromADeadReplica(t *testing.T) {
	for _, attempts := range []int{1, 2} {
		t.Run(map[int]string{1: "at most once", 2: "continues"}[attempts], func(t *testing.T) {
			t.Parallel()
			stuck := newBlocker()
			var charges atomic.Int32
			charge := chargeTool(t, &charges)
			settings := func(c *durable.Config) { c.MaxAttempts = attempts; c.LockGrace = durable.MinLockGrace }
			replies := []scripted.Reply{scripted.ToolCall("charge", `{}`), scripted.ToolCall("work", `{}`), scripted.Text("finished elsewhere")}
			f := newFixture(t, replies, []tool.Tool{charge, stuck.tool(t, false)}, settings)
			t.Cleanup(stuck.open)
			accepted, err := f.submit(t, "s1", "go", "")
			require.NoError(t, err)
			<-stuck.started
			// exec-1 dies: no more heartbeats, its run left unfinished. Its
			// last heartbeat may be up to a heartbeat interval (1 s) older.
			died := time.Now().Add(-time.Second)
			durable.Crash(f.queue)
			f.start(t, "exec-2", settings)
			out := f.wait(t, accepted.RunID)
			require.GreaterOrEqual(t, time.Since(died), durable.MinLockGrace, "taken over only after the grace")
			if attempts == 1 {
				require.Equal(t, run.StatusError, out.Status)
				require.Contains(t, out.Content, "requeue")
				return
			}
			require.Equal(t, run.StatusCompleted, out.Status, "%v", out.Content)
			require.Equal(t, "finished elsewhere", out.Content)
			require.Equal(t, int32(1), charges.Load(), "the completed tool call is not repeated")
		})
	}
}

// TestOrphanedPendingRunIsAdopted: a server wrote a run's PENDING row and
// died before queueing it; a replica adopts the run after the lock grace
// and runs it.
func TestOrphanedPendingRunIsAdopted(t *testing.T) {
	t.Parallel()
	onBoth(t, testOrphanedPendingRunIsAdopted)
}

func testOrphanedPendingRunIsAdopted(t *testing.T) {
	f := newFixture(t, []scripted.Reply{scripted.Text("adopted")}, nil, func(c *durable.Config) { c.LockGrace = durable.MinLockGrace })
	in := &run.Input{InputContent: "left behind", RunID: newRunID(), SessionID: "orphan"}
	require.NoError(t, runhost.RecordPending(t.Context(), f.store, f.agent, in, time.Now().Add(-time.Minute)))
	out := f.wait(t, in.RunID)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "adopted", out.Content)
}
