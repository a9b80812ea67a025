package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
)

// finalWriteFails is a store whose writes of a final ERROR row fail while
// failures remain, with err; other writes go through.
type finalWriteFails struct {
	storage.Store
	failures atomic.Int32
	tries    atomic.Int32
	err      error
}

func (s *finalWriteFails) UpsertRun(ctx context.Context, rec storage.RunRecord) (storage.RunRecord, error) {
	if rec.Run != nil && rec.Run.Status == run.StatusError {
		s.tries.Add(1)
		if s.failures.Add(-1) >= 0 {
			return storage.RunRecord{}, fmt.Errorf("upsert run: %w", s.err)
		}
	}
	return s.Store.UpsertRun(ctx, rec)
}

// adminShutdown is the error of a Postgres restarting under a write.
var adminShutdown = &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}

// denied fails a run at once and for good.
var denied = &model.Error{Provider: "Scripted", StatusCode: 401, Class: model.ClassAuth, Message: "invalid api key"}

// TestFinalWriteRidesOutARestart: the queue's write of a run's final state,
// refused by a restarting database, is tried again: the run ends with its
// row written and its job failed, as it should, not stuck RUNNING.
func TestFinalWriteRidesOutARestart(t *testing.T) {
	t.Parallel()
	onBoth(t, testFinalWriteRidesOutARestart)
}

func testFinalWriteRidesOutARestart(t *testing.T) {
	var flaky *finalWriteFails
	f := newFixture(t, []scripted.Reply{scripted.Fail(denied)}, nil, func(c *durable.Config) {
		flaky = &finalWriteFails{Store: c.Store, err: adminShutdown}
		flaky.failures.Store(2)
		c.Store = flaky
	})
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusError, out.Status)
	require.Contains(t, out.Content, "invalid api key")
	require.GreaterOrEqual(t, flaky.tries.Load(), int32(3), "refused twice, written on the third try")
	require.Eventually(t, func() bool {
		job, err := f.queue.Job(t.Context(), accepted.RunID)
		return err == nil && job.Status == durable.JobFailed
	}, runTimeout, 10*time.Millisecond)
}

// TestSweepRepairsARowThatDisagrees: a run's row left RUNNING while its
// workflow finished (a final write lost) is repaired by the sweep from
// what the run streamed: COMPLETED, with its answer.
func TestSweepRepairsARowThatDisagrees(t *testing.T) {
	t.Parallel()
	onBoth(t, testSweepRepairsARowThatDisagrees)
}

func testSweepRepairsARowThatDisagrees(t *testing.T) {
	fast := func(c *durable.Config) { c.LockGrace = durable.MinLockGrace }
	f := newFixture(t, []scripted.Reply{scripted.Text("the answer")}, nil, fast)
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, f.wait(t, accepted.RunID).Status)
	require.Eventually(t, func() bool {
		job, err := f.queue.Job(t.Context(), accepted.RunID)
		return err == nil && job.Status == durable.JobCompleted
	}, runTimeout, 10*time.Millisecond, "the workflow finished")

	// The final save is lost: the row says RUNNING, without the answer.
	rec, err := f.store.GetRun(t.Context(), accepted.RunID, "")
	require.NoError(t, err)
	rec.Run.Status, rec.Run.Content = run.StatusRunning, ""
	_, err = f.store.UpsertRun(t.Context(), rec)
	require.NoError(t, err)

	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCompleted, out.Status, "repaired from the workflow's outcome")
	require.Equal(t, "the answer", out.Content, "with the answer the run streamed")
}

// TestUnwritableOutcomeFailsTheWorkflow: a final state the database will
// not take is not recorded as a finished workflow; once the database takes
// writes again the sweep writes the run's outcome, as its followers saw it.
func TestUnwritableOutcomeFailsTheWorkflow(t *testing.T) {
	t.Parallel()
	onBoth(t, testUnwritableOutcomeFailsTheWorkflow)
}

func testUnwritableOutcomeFailsTheWorkflow(t *testing.T) {
	var broken *finalWriteFails
	f := newFixture(t, []scripted.Reply{scripted.Fail(denied)}, nil, func(c *durable.Config) {
		c.LockGrace = durable.MinLockGrace
		broken = &finalWriteFails{Store: c.Store, err: errors.New("disk I/O error")} // not transient: not retried
		broken.failures.Store(1)
		c.Store = broken
	})
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		job, err := f.queue.Job(t.Context(), accepted.RunID)
		return err == nil && job.Status == durable.JobFailed && strings.Contains(job.Error, "could not be saved")
	}, runTimeout, 10*time.Millisecond, "the workflow failed, saying why")

	out := f.wait(t, accepted.RunID) // the sweep's write goes through
	require.Equal(t, run.StatusError, out.Status)
	require.Contains(t, out.Content, "invalid api key", "the outcome the run streamed")
}

// TestFinalRowIsNeverRewritten: a replica saves a run's final row and dies
// before the engine records the workflow's end; the replica that takes the
// run over finds the outcome on the row and ends the workflow with it. A
// client that saw the run final never sees it RUNNING again, and its tool
// is not run again.
func TestFinalRowIsNeverRewritten(t *testing.T) {
	t.Parallel()
	onBoth(t, testFinalRowIsNeverRewritten)
}

func testFinalRowIsNeverRewritten(t *testing.T) {
	stuck := newBlocker()
	t.Cleanup(stuck.open)
	settings := func(c *durable.Config) { c.MaxAttempts = 2; c.LockGrace = durable.MinLockGrace }
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("again")}, []tool.Tool{stuck.tool(t, false)}, settings)
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	<-stuck.started
	// The run's final row is saved, and its replica dies before the engine
	// records that the workflow ended.
	rec, err := f.store.GetRun(t.Context(), accepted.RunID, "")
	require.NoError(t, err)
	rec.Run.Status, rec.Run.Content = run.StatusCompleted, "saved before the crash"
	_, err = f.store.UpsertRun(t.Context(), rec)
	require.NoError(t, err)
	durable.Crash(f.queue)

	b := f.start(t, "exec-2", settings)
	require.Eventually(t, func() bool {
		job, err := b.Job(t.Context(), accepted.RunID)
		require.NoError(t, err)
		out, err := f.store.GetRun(t.Context(), accepted.RunID, "")
		require.NoError(t, err)
		require.Equal(t, run.StatusCompleted, out.Run.Status, "a final row is never rewritten")
		return job.Status == durable.JobCompleted
	}, runTimeout, 10*time.Millisecond, "the workflow ended on the replica that took it over")
	out, err := f.store.GetRun(t.Context(), accepted.RunID, "")
	require.NoError(t, err)
	require.Equal(t, "saved before the crash", out.Run.Content)
	require.Equal(t, int32(1), stuck.calls.Load(), "the tool did not run again")
}

// TestSweepEndsARunItsServerLeftRunning: a run a server executed outside
// the queue (an inline request) whose server died is left RUNNING with no
// workflow; once its row shows no sign of life for AbandonAfter, the sweep
// ends it ERROR, saying why. A run whose row is still touched (its server
// alive) is left alone.
func TestSweepEndsARunItsServerLeftRunning(t *testing.T) {
	t.Parallel()
	onBoth(t, testSweepEndsARunItsServerLeftRunning)
}

func testSweepEndsARunItsServerLeftRunning(t *testing.T) {
	f := newFixture(t, nil, nil, func(c *durable.Config) {
		c.LockGrace = durable.MinLockGrace
		c.AbandonAfter = time.Second
	})
	session := &storage.Session{SessionID: "s-inline", SessionType: storage.SessionTypeAgent, AgentID: "assistant"}
	for _, id := range []string{"r-dead", "r-alive"} {
		_, _, err := f.store.SaveRun(t.Context(), session, storage.RunRecord{SessionID: "s-inline",
			Run: &run.Output{RunID: id, AgentID: "assistant", SessionID: "s-inline", Status: run.StatusRunning}})
		require.NoError(t, err)
	}
	// r-alive's server keeps touching its row, as a live run does.
	toucher := f.store.(storage.RunToucher)
	ctx, stop := context.WithCancel(t.Context())
	touching := make(chan struct{})
	go func() {
		defer close(touching)
		for ctx.Err() == nil {
			_, _ = toucher.TouchRun(ctx, "r-alive")
			_ = run.Sleep(ctx, 100*time.Millisecond)
		}
	}()
	defer func() { stop(); <-touching }()

	require.Eventually(t, func() bool {
		rec, err := f.store.GetRun(t.Context(), "r-dead", "")
		require.NoError(t, err)
		return rec.Run.Status == run.StatusError
	}, 30*time.Second, 50*time.Millisecond, "the sweep ends the abandoned run")
	rec, err := f.store.GetRun(t.Context(), "r-dead", "")
	require.NoError(t, err)
	require.Contains(t, rec.Run.ContentString(), "stopped before it ended")

	alive, err := f.store.GetRun(t.Context(), "r-alive", "")
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, alive.Run.Status, "a run whose row is touched is alive")
}

// TestFailedRunIsLogged: a background run that fails is logged with its
// run id and error type, for an operator with no client to report it.
func TestFailedRunIsLogged(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	f := newFixture(t, []scripted.Reply{scripted.Fail(denied)}, nil, func(c *durable.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	require.Equal(t, run.StatusError, f.wait(t, accepted.RunID).Status)
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			var entry map[string]any
			if json.Unmarshal([]byte(line), &entry) == nil && entry["msg"] == "run failed" && entry["run_id"] == accepted.RunID {
				require.Equal(t, "authentication_error", entry["error_type"], "the error type of a refused API key")
				require.Equal(t, "s1", entry["session_id"])
				return true
			}
		}
		return false
	}, runTimeout, 10*time.Millisecond, "the failed run is logged:\n%s", &logs)
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// readAfterRetryFails is a store whose reads of a run's row fail with a
// restart's error twice once the row says the run waits for its next
// attempt: the moment that attempt reads the row to number itself.
type readAfterRetryFails struct {
	storage.Store
	failures atomic.Int32
	failed   atomic.Int32
}

func (s *readAfterRetryFails) UpsertRun(ctx context.Context, rec storage.RunRecord) (storage.RunRecord, error) {
	stored, err := s.Store.UpsertRun(ctx, rec)
	if err == nil && rec.Run != nil && rec.Run.Metadata["queue_retry"] == true {
		s.failures.Store(2)
	}
	return stored, err
}

func (s *readAfterRetryFails) GetRun(ctx context.Context, runID, userID string) (storage.RunRecord, error) {
	if s.failures.Add(-1) >= 0 {
		s.failed.Add(1)
		return storage.RunRecord{}, fmt.Errorf("get run: %w", adminShutdown)
	}
	return s.Store.GetRun(ctx, runID, userID)
}

// TestNextAttemptReadsItsRowThroughARestart: the attempt that follows a
// failed one reads the run's row to number itself; a database restarting
// at that moment is waited for, so the run ends as attempt 2 with the
// failed attempt still in metadata.attempts, not renumbered 1 with its
// history lost.
func TestNextAttemptReadsItsRowThroughARestart(t *testing.T) {
	t.Parallel()
	var store *readAfterRetryFails
	f := newFixture(t, []scripted.Reply{scripted.Fail(unavailable), scripted.Text("recovered")}, nil, func(c *durable.Config) {
		c.MaxAttempts, c.RetryDelay = 2, 20*time.Millisecond
		store = &readAfterRetryFails{Store: c.Store}
		c.Store = store
	})
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCompleted, out.Status, "%v", out.Content)
	require.Equal(t, int32(2), store.failed.Load(), "the row could not be read twice")
	require.EqualValues(t, 2, out.Metadata["queue_attempt"], "the run ended in its second attempt")
	attempts, err := out.Attempts()
	require.NoError(t, err)
	require.NotEmpty(t, attempts)
	require.Equal(t, 1, attempts[0].Attempt)
	require.NotNil(t, attempts[0].Error)
	require.Contains(t, *attempts[0].Error, "overloaded")
}
