package durable_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
)

// badRequest is a model failure that is never retried.
var badRequest = &model.Error{Provider: "Scripted", StatusCode: 400, Class: model.ClassBadRequest, Message: "the request was refused"}

// job polls the queue until the job has status.
func (f *fixture) job(t *testing.T, id string, status durable.JobStatus) durable.Job {
	t.Helper()
	var j durable.Job
	require.Eventually(t, func() bool {
		var err error
		j, err = f.queue.Job(t.Context(), id)
		return err == nil && j.Status == status
	}, 20*time.Second, 10*time.Millisecond, "job %s never became %s (last %+v)", id, status, j)
	return j
}

// TestJobsStatsAndFilters: a completed and a failed run, seen as jobs:
// listed, filtered, paged, counted and read one by one.
func TestJobsStatsAndFilters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []scripted.Reply{scripted.Text("fine"), scripted.Fail(badRequest)}, nil, nil)
	done, err := f.queue.Submit(t.Context(), durable.Submission{AgentID: "assistant", IdempotencyKey: "key-1",
		Input: &run.Input{InputContent: "one", RunID: newRunID(), SessionID: "s1", UserID: "ada"}})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, f.wait(t, done.RunID).Status)
	failed, err := f.submit(t, "s1", "two", "")
	require.NoError(t, err)
	require.Equal(t, run.StatusError, f.wait(t, failed.RunID).Status)

	completedJob := f.job(t, done.RunID, durable.JobCompleted)
	require.Equal(t, "assistant", completedJob.AgentID)
	require.Equal(t, "s1", completedJob.SessionID)
	require.Equal(t, "ada", completedJob.UserID)
	require.Equal(t, "key-1", completedJob.IdempotencyKey)
	require.Equal(t, run.StatusCompleted, completedJob.RunStatus)
	require.Equal(t, 1, completedJob.Attempts)
	require.Equal(t, "exec-1", completedJob.ExecutorID)
	require.NotZero(t, completedJob.CreatedAt)
	require.NotZero(t, completedJob.CompletedAt)
	require.Empty(t, completedJob.Error)

	failedJob := f.job(t, failed.RunID, durable.JobFailed)
	require.Equal(t, run.StatusError, failedJob.RunStatus)
	require.Contains(t, failedJob.Error, "the request was refused")

	all, total, err := f.queue.Jobs(t.Context(), durable.JobQuery{})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []string{done.RunID, failed.RunID}, jobIDs(all), "oldest first by default")

	newest, total, err := f.queue.Jobs(t.Context(), durable.JobQuery{Limit: 1, Page: 1, SortDesc: true})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []string{failed.RunID}, jobIDs(newest))
	second, _, err := f.queue.Jobs(t.Context(), durable.JobQuery{Limit: 1, Page: 2, SortDesc: true})
	require.NoError(t, err)
	require.Equal(t, []string{done.RunID}, jobIDs(second))
	past, total, err := f.queue.Jobs(t.Context(), durable.JobQuery{Limit: 1, Page: 3})
	require.NoError(t, err)
	require.Empty(t, past)
	require.Equal(t, 2, total)

	onlyFailed, total, err := f.queue.Jobs(t.Context(), durable.JobQuery{Statuses: []durable.JobStatus{durable.JobFailed, durable.JobQueued}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, []string{failed.RunID}, jobIDs(onlyFailed))
	_, _, err = f.queue.Jobs(t.Context(), durable.JobQuery{Statuses: []durable.JobStatus{"stuck"}})
	require.ErrorIs(t, err, storage.ErrInvalid)

	stats, err := f.queue.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[durable.JobStatus]int{durable.JobQueued: 0, durable.JobRunning: 0, durable.JobPaused: 0,
		durable.JobCompleted: 1, durable.JobFailed: 1, durable.JobCancelled: 0}, stats.Counts)
	require.Nil(t, stats.OldestQueuedAgeSeconds)

	_, err = f.queue.Job(t.Context(), "no-such-run")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = f.queue.Requeue(t.Context(), done.RunID, durable.RequeueOptions{Force: true})
	require.ErrorIs(t, err, durable.ErrNotRequeueable, "a completed job is not requeued")
	_, err = f.queue.Requeue(t.Context(), "no-such-run", durable.RequeueOptions{Force: true})
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func jobIDs(jobs []durable.Job) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// TestQueuedRunningAndPausedJobs: a run executing a tool is running, the
// run queued behind it in its session is queued (and ages), and a run
// waiting for a confirmation is paused although its workflow is active.
func TestQueuedRunningAndPausedJobs(t *testing.T) {
	t.Parallel()
	b := newBlocker()
	confirm := deployTool(t)
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.ToolCall("deploy", `{}`)},
		[]tool.Tool{b.tool(t, true), confirm}, nil)
	t.Cleanup(b.open)
	running, err := f.submit(t, "s1", "work", "")
	require.NoError(t, err)
	<-b.started
	queued, err := f.submit(t, "s1", "then", "")
	require.NoError(t, err)
	f.job(t, running.RunID, durable.JobRunning)
	require.Equal(t, 0, f.job(t, queued.RunID, durable.JobQueued).Attempts)
	stats, err := f.queue.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, stats.Counts[durable.JobRunning])
	require.Equal(t, 1, stats.Counts[durable.JobQueued])
	require.NotNil(t, stats.OldestQueuedAgeSeconds)
	require.GreaterOrEqual(t, *stats.OldestQueuedAgeSeconds, int64(0))

	paused, err := f.submit(t, "s2", "deploy it", "")
	require.NoError(t, err)
	j := f.job(t, paused.RunID, durable.JobPaused)
	require.Equal(t, run.StatusPaused, j.RunStatus)
	list, total, err := f.queue.Jobs(t.Context(), durable.JobQuery{Statuses: []durable.JobStatus{durable.JobPaused}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, paused.RunID, list[0].ID)
	_, err = f.queue.Requeue(t.Context(), paused.RunID, durable.RequeueOptions{Force: true})
	require.ErrorIs(t, err, durable.ErrNotRequeueable)
}

// TestRequeueFailedRunKeepsCompletedSteps: a run calls a tool, then its
// model call fails for good. Requeued, it goes on from the failed model
// call: the tool is not called again, and the run completes.
func TestRequeueFailedRunKeepsCompletedSteps(t *testing.T) {
	t.Parallel()
	var charges atomic.Int32
	charge := chargeTool(t, &charges)
	var ahead atomic.Int64 // how far the queue's clock is ahead of the wall clock
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("charge", `{}`), scripted.Fail(badRequest), scripted.Text("paid")},
		[]tool.Tool{charge}, func(c *durable.Config) {
			c.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
		})
	accepted, err := f.submit(t, "s1", "pay", "")
	require.NoError(t, err)
	require.Equal(t, run.StatusError, f.wait(t, accepted.RunID).Status)
	f.job(t, accepted.RunID, durable.JobFailed)

	_, err = f.queue.Requeue(t.Context(), accepted.RunID, durable.RequeueOptions{})
	require.ErrorIs(t, err, durable.ErrRequeueTooSoon, "within the grace after the failure")
	var tooSoon *durable.RequeueTooSoonError
	require.True(t, errors.As(err, &tooSoon))
	require.Positive(t, tooSoon.Wait)
	require.LessOrEqual(t, tooSoon.Wait, durable.RequeueGrace)

	ahead.Store(int64(durable.RequeueGrace + time.Second))
	requeued, err := f.queue.Requeue(t.Context(), accepted.RunID, durable.RequeueOptions{})
	require.NoError(t, err)
	require.Equal(t, durable.JobQueued, requeued.Status, "the job as it was queued again, whether or not a worker took it since")
	require.Equal(t, 1, requeued.Attempts, "one attempt so far")

	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCompleted, out.Status, "%v %v", out.Content, out.Metadata)
	require.Equal(t, "paid", out.Content)
	require.Equal(t, int32(1), charges.Load(), "the completed tool call is not made again")
	require.Len(t, f.model.Requests(), 3, "the failed model call, and only it, is made again")
	require.Len(t, out.Tools, 1, "the replayed tool call is part of the run")
	history, err := out.Attempts()
	require.NoError(t, err)
	require.Len(t, history, 1)
	require.Equal(t, 1, history[0].Attempt)
	require.Contains(t, *history[0].Error, "the request was refused")

	j := f.job(t, accepted.RunID, durable.JobCompleted)
	require.Equal(t, 2, j.Attempts)
	require.Equal(t, run.StatusCompleted, j.RunStatus)
	_, err = f.queue.Requeue(t.Context(), accepted.RunID, durable.RequeueOptions{Force: true})
	require.ErrorIs(t, err, durable.ErrNotRequeueable)
}

// TestRequeueAfterLostWorker: with max_attempts 1 a run whose worker died
// mid-tool ends ERROR, naming the requeue route. Requeued, it goes on from
// its last completed step: the charge made before the crash is not made
// again.
func TestRequeueAfterLostWorker(t *testing.T) {
	t.Parallel()
	first := newBlocker()
	var charges atomic.Int32
	charge := chargeTool(t, &charges)
	replies := []scripted.Reply{scripted.ToolCall("charge", `{}`), scripted.ToolCall("work", `{}`), scripted.Text("finished")}
	atMostOnce := func(c *durable.Config) { c.MaxAttempts = 1 }
	f := newFixture(t, replies, []tool.Tool{charge, first.tool(t, false)}, atMostOnce)
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	<-first.started
	// The worker dies mid-step. Its call stays blocked until the test ends,
	// as a dead process would never return.
	durable.Crash(f.queue)
	t.Cleanup(first.open)
	f.queue = f.start(t, "exec-1", atMostOnce)
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusError, out.Status)
	require.Contains(t, out.Content, "/queue/jobs/"+accepted.RunID+"/requeue")
	require.Contains(t, f.job(t, accepted.RunID, durable.JobFailed).Error, "/queue/jobs/"+accepted.RunID+"/requeue")

	_, err = f.queue.Requeue(t.Context(), accepted.RunID, durable.RequeueOptions{Force: true})
	require.NoError(t, err)
	out = f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCompleted, out.Status, "%v", out.Content)
	require.Equal(t, "finished", out.Content)
	require.Equal(t, int32(1), charges.Load(), "the charge completed before the crash is not repeated")
	require.Equal(t, int32(2), first.calls.Load(), "the step in flight at the crash runs again")
	require.Equal(t, 2, f.job(t, accepted.RunID, durable.JobCompleted).Attempts)
}

// TestRequeueCancelledRun: a run cancelled while it waited is requeued and
// completes.
func TestRequeueCancelledRun(t *testing.T) {
	t.Parallel()
	b := newBlocker()
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("first"), scripted.Text("second")},
		[]tool.Tool{b.tool(t, true)}, nil)
	t.Cleanup(b.open)
	busy, err := f.submit(t, "s1", "one", "")
	require.NoError(t, err)
	<-b.started
	waiting, err := f.submit(t, "s1", "two", "")
	require.NoError(t, err)
	_, err = f.queue.Cancel(t.Context(), waiting.RunID)
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, f.wait(t, waiting.RunID).Status)
	require.Equal(t, 0, f.job(t, waiting.RunID, durable.JobCancelled).Attempts, "it never started")
	b.open()
	require.Equal(t, "first", f.wait(t, busy.RunID).Content)

	_, err = f.queue.Requeue(t.Context(), waiting.RunID, durable.RequeueOptions{Force: true})
	require.NoError(t, err)
	out := f.wait(t, waiting.RunID)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "second", out.Content)
	require.Equal(t, 1, f.job(t, waiting.RunID, durable.JobCompleted).Attempts)
}

// TestCleanupAndRetention: finished jobs older than the retention are
// deleted, except one whose run is PAUSED; the runs themselves stay.
func TestCleanupAndRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []scripted.Reply{scripted.Text("a"), scripted.Text("b"), scripted.Text("c")}, nil, nil)
	var ids []string
	for _, msg := range []string{"a", "b", "c"} {
		accepted, err := f.submit(t, "s1", msg, "")
		require.NoError(t, err)
		f.wait(t, accepted.RunID)
		f.job(t, accepted.RunID, durable.JobCompleted)
		ids = append(ids, accepted.RunID)
	}
	n, err := f.queue.Cleanup(t.Context(), time.Hour)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is an hour old")

	// A run row marked PAUSED keeps its job.
	rec, err := f.store.GetRun(t.Context(), ids[0], "")
	require.NoError(t, err)
	rec.Run.Status = run.StatusPaused
	_, err = f.store.UpsertRun(t.Context(), rec)
	require.NoError(t, err)

	n, err = f.queue.Cleanup(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	_, total, err := f.queue.Jobs(t.Context(), durable.JobQuery{})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	_, err = f.queue.Job(t.Context(), ids[1])
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = f.store.GetRun(t.Context(), ids[1], "")
	require.NoError(t, err, "the run itself is kept")

	// The retention loop deletes the rest once the row is no longer PAUSED.
	rec.Run.Status = run.StatusCompleted
	_, err = f.store.UpsertRun(t.Context(), rec)
	require.NoError(t, err)
	stop := f.queue.StartRetention(t.Context(), durable.Retention{OlderThan: time.Nanosecond, Every: 20 * time.Millisecond})
	require.Eventually(t, func() bool {
		_, total, err := f.queue.Jobs(t.Context(), durable.JobQuery{})
		return err == nil && total == 0
	}, 10*time.Second, 20*time.Millisecond)
	stop()
}
