package durable_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

var unavailable = &model.Error{Provider: "Scripted", StatusCode: 503, Class: model.ClassServer, Message: "overloaded"}

// chargeTool is a tool with a side effect, counted.
func chargeTool(t *testing.T, charges *atomic.Int32) tool.Tool {
	t.Helper()
	charge, err := tool.New(tool.Config{Name: "charge"}, func(context.Context, struct{}) (string, error) {
		charges.Add(1)
		return "charged", nil
	})
	require.NoError(t, err)
	return charge
}

// streamedNames lists the names of a run's events in its durable stream,
// once the stream holds the run's final event.
func streamedNames(t *testing.T, q *durable.Queue, runID string) []string {
	t.Helper()
	var names []string
	require.Eventually(t, func() bool {
		names = names[:0]
		for e, err := range q.Events(t.Context(), runID, -1, false) {
			require.NoError(t, err)
			names = append(names, e.Name)
		}
		if len(names) == 0 {
			return false
		}
		switch names[len(names)-1] {
		case run.EventRunCompleted, run.EventRunError, run.EventRunCancelled:
			return true
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the stream ends with a final event")
	return names
}

// TestFailedRunIsRetried: a run whose model call fails with a transient
// error starts again after the retry delay and completes. The new attempt
// goes on from the failed step: the tool call completed before is not made
// again, nor is the model call that asked for it. The failed attempt is in
// metadata.attempts and announced by a RunRetry event; its RunError never
// reaches the stream.
func TestFailedRunIsRetried(t *testing.T) {
	t.Parallel()
	onBoth(t, testFailedRunIsRetried)
}

func testFailedRunIsRetried(t *testing.T) {
	var charges atomic.Int32
	replies := []scripted.Reply{scripted.ToolCall("charge", `{}`), scripted.Fail(unavailable), scripted.Text("recovered")}
	f := newFixture(t, replies, []tool.Tool{chargeTool(t, &charges)}, func(c *durable.Config) {
		c.MaxAttempts, c.RetryDelay = 2, 20*time.Millisecond
	})
	accepted, err := f.submit(t, "s1", "charge me", "")
	require.NoError(t, err)
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCompleted, out.Status, "%v", out.Content)
	require.Equal(t, "recovered", out.Content)
	require.Equal(t, int32(1), charges.Load(), "the completed tool call is not repeated")
	require.Len(t, f.model.Requests(), 3, "the model call that asked for the tool is not repeated either")

	attempts, err := out.Attempts()
	require.NoError(t, err)
	require.NotEmpty(t, attempts)
	first := attempts[0]
	require.Equal(t, 1, first.Attempt)
	require.NotNil(t, first.Error)
	require.Contains(t, *first.Error, "overloaded")

	names := streamedNames(t, f.queue, accepted.RunID)
	require.Contains(t, names, run.EventRunRetry)
	require.NotContains(t, names, run.EventRunError, "the failed attempt's error is not the run's end")
	require.Equal(t, run.EventRunCompleted, names[len(names)-1])
	for e, err := range f.queue.Events(t.Context(), accepted.RunID, -1, false) {
		require.NoError(t, err)
		if e.Name == run.EventRunRetry {
			var retry run.RunRetry
			require.NoError(t, json.Unmarshal(e.Data, &retry))
			require.Equal(t, 2, retry.Attempt)
			require.Equal(t, 2, retry.MaxAttempts)
			require.Contains(t, retry.Error, "overloaded")
			require.LessOrEqual(t, retry.DelaySeconds, 0.02, "the first retry waits at most the base delay")
		}
	}
}

// TestPermanentFailureIsNotRetried: an authentication error fails the run
// at once, whatever attempts remain.
func TestPermanentFailureIsNotRetried(t *testing.T) {
	t.Parallel()
	denied := &model.Error{Provider: "Scripted", StatusCode: 401, Class: model.ClassAuth, Message: "invalid api key"}
	f := newFixture(t, []scripted.Reply{scripted.Fail(denied), scripted.Text("never")}, nil, func(c *durable.Config) {
		c.MaxAttempts, c.RetryDelay = 3, time.Millisecond
	})
	accepted, err := f.submit(t, "s1", "hello", "")
	require.NoError(t, err)
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusError, out.Status)
	require.Contains(t, out.Content, "invalid api key")
	require.Len(t, f.model.Requests(), 1, "not retried")
	require.NotContains(t, streamedNames(t, f.queue, accepted.RunID), run.EventRunRetry)
}

// TestRetriesStopAtMaxAttempts: a run failing every attempt ends ERROR with
// the last attempt's error after max_attempts attempts.
func TestRetriesStopAtMaxAttempts(t *testing.T) {
	t.Parallel()
	second := &model.Error{Provider: "Scripted", StatusCode: 502, Class: model.ClassServer, Message: "bad gateway"}
	f := newFixture(t, []scripted.Reply{scripted.Fail(unavailable), scripted.Fail(second), scripted.Text("never")}, nil,
		func(c *durable.Config) { c.MaxAttempts, c.RetryDelay = 2, time.Millisecond })
	accepted, err := f.submit(t, "s1", "hello", "")
	require.NoError(t, err)
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusError, out.Status)
	require.Contains(t, out.Content, "bad gateway")
	require.Len(t, f.model.Requests(), 2)
	names := streamedNames(t, f.queue, accepted.RunID)
	require.Equal(t, run.EventRunError, names[len(names)-1])
}

// TestTimeLimitEndsTheRun: a run executing past the queue's timeout ends
// ERROR, saying so.
func TestTimeLimitEndsTheRun(t *testing.T) {
	t.Parallel()
	b := newBlocker()
	t.Cleanup(b.open)
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("never")}, []tool.Tool{b.tool(t, true)},
		func(c *durable.Config) { c.Timeout, c.MaxAttempts = 200*time.Millisecond, 1 })
	accepted, err := f.submit(t, "s1", "slow", "")
	require.NoError(t, err)
	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusError, out.Status)
	require.Contains(t, out.Content, "timed out after 200ms")
}

// TestShutdownDrainsRuns: a run that ends within the stop timeout is
// finished before Shutdown returns.
func TestShutdownDrainsRuns(t *testing.T) {
	t.Parallel()
	b := newBlocker()
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("work", `{}`), scripted.Text("drained")}, []tool.Tool{b.tool(t, true)}, nil)
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	<-b.started
	time.AfterFunc(200*time.Millisecond, b.open)
	require.NoError(t, f.queue.Shutdown(10*time.Second))
	rec, err := f.store.GetRun(t.Context(), accepted.RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, rec.Run.Status)
	require.Equal(t, "drained", rec.Run.Content)
}

// TestShutdownHandsRunsBack: a run still executing at the end of the stop
// timeout is not cancelled: it is handed back, and a live replica takes it
// over at once (well within the lock grace) and finishes it from its last
// completed step.
func TestShutdownHandsRunsBack(t *testing.T) {
	t.Parallel()
	onBoth(t, testShutdownHandsRunsBack)
}

func testShutdownHandsRunsBack(t *testing.T) {
	b := newBlocker()
	var charges atomic.Int32
	settings := func(c *durable.Config) { c.MaxAttempts, c.LockGrace = 2, 30*time.Second }
	replies := []scripted.Reply{scripted.ToolCall("charge", `{}`), scripted.ToolCall("work", `{}`), scripted.Text("finished elsewhere")}
	f := newFixture(t, replies, []tool.Tool{chargeTool(t, &charges), b.tool(t, true)}, settings)
	accepted, err := f.submit(t, "s1", "go", "")
	require.NoError(t, err)
	<-b.started // executing on exec-1
	f.start(t, "exec-2", settings)
	stopped := time.Now()
	require.NoError(t, f.queue.Shutdown(100*time.Millisecond))
	rec, err := f.store.GetRun(t.Context(), accepted.RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, rec.Run.Status, "an interrupted run is not cancelled")

	out := f.wait(t, accepted.RunID)
	require.Equal(t, run.StatusCompleted, out.Status, "%v", out.Content)
	require.Equal(t, "finished elsewhere", out.Content)
	require.Less(t, time.Since(stopped), 15*time.Second, "taken over without waiting for the 30 s lock grace")
	require.Equal(t, int32(1), charges.Load(), "the completed tool call is not repeated")
}

// TestPausedRunSurvivesShutdown: a run waiting for a person stays PAUSED
// through a restart and is continued afterwards.
func TestPausedRunSurvivesShutdown(t *testing.T) {
	t.Parallel()
	confirm := deployTool(t)
	f := newFixture(t, []scripted.Reply{scripted.ToolCall("deploy", `{}`), scripted.Text("Deployed after restart.")}, []tool.Tool{confirm}, nil)
	paused, err := f.submit(t, "s1", "deploy it", "")
	require.NoError(t, err)
	f.waitParked(t, paused.RunID)
	require.NoError(t, f.queue.Shutdown(time.Second))
	rec, err := f.store.GetRun(t.Context(), paused.RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, rec.Run.Status, "a shutdown does not cancel a paused run")

	// Watch the row while the restarted queue replays the run to its pause.
	seen := map[run.Status]bool{}
	watching, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if rec, err := f.store.GetRun(t.Context(), paused.RunID, ""); err == nil {
				seen[rec.Run.Status] = true
			}
			select {
			case <-watching:
				return
			default:
			}
		}
	}()
	f.queue = f.start(t, "exec-1", nil)
	require.Eventually(t, func() bool { return durable.Executing(f.queue, paused.RunID) }, 10*time.Second, 10*time.Millisecond,
		"the restarted queue replays the run")
	require.True(t, durable.WaitIdle(f.queue, 10*time.Second), "the replay reaches the pause")
	parked, err := f.queue.Parked(t.Context(), paused.RunID, "")
	require.NoError(t, err)
	require.True(t, parked, "parked again after the restart")
	close(watching)
	<-watched
	require.Equal(t, map[run.Status]bool{run.StatusPaused: true}, seen, "the row reads PAUSED throughout the replay")
	tools := rec.Run.Tools
	confirmed := true
	tools[0].Confirmed = &confirmed
	// The replay up to the pause leaves the row PAUSED: once the run is
	// parked again, a continuation is taken at once, mid-replay or not.
	require.NoError(t, f.queue.Continue(t.Context(), &run.ContinueRequest{RunID: paused.RunID, Tools: tools}))
	out := f.wait(t, paused.RunID)
	require.Equal(t, run.StatusCompleted, out.Status, "%v", out.Content)
	require.Equal(t, "Deployed after restart.", out.Content)
}
