package main

import (
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// Two `agnogo serve` replicas, A and B, on one fresh Postgres database, with
// Redis and without. Both replicas claim runs from the durable queue, so a
// test that needs a run executing on A starts B only once A has claimed it.

// TestReplicaStreamResume: a client follows a background run on replica A,
// which executes it, drops the connection after a few frames and resumes on
// replica B, which never saw the run. B sends exactly the events after the
// last index the client saw, numbered on without gap or repeat, up to
// RunCompleted; a replay from the start on B equals A's frames followed by
// B's, by index and name.
func TestReplicaStreamResume(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	forEachCoordination(t, binary, clusterOptions{}, func(t *testing.T, c *replicaCluster) {
		c.fake.Enqueue(
			fakeopenai.ToolCalls(fakeopenai.Call("list_files", map[string]any{})).WithDelay(300*time.Millisecond),
			// Long enough for the resume on B to start while the run is live.
			fakeopenai.Text("The workspace holds notes.txt and nothing else.").WithDelay(2*time.Second),
		)
		a := c.start(t, "a")
		live := a.stream(t, "/agents/assistant/runs",
			url.Values{"message": {"what is in the workspace?"}, "stream": {"true"}, "background": {"true"}, "session_id": {"s1"}})
		first, ok := live.next(t)
		require.True(t, ok)
		require.Equal(t, "RunStarted", first.name, "A executes the run")
		runID, _ := first.data["run_id"].(string)
		require.NotEmpty(t, runID)
		c.track(runID)
		b := c.start(t, "b")

		seen := []sseFrame{first}
		for seen[len(seen)-1].name != "ToolCallCompleted" {
			frame, ok := live.next(t)
			require.True(t, ok, "A's stream ended before the tool call completed: %v", frameNames(seen))
			seen = append(seen, frame)
		}
		live.close()
		for i, frame := range seen {
			require.Equal(t, int64(i), frame.index(), "A's frames: %v", frameNames(seen))
		}
		last := seen[len(seen)-1].index()

		resumed := b.stream(t, "/agents/assistant/runs/"+runID+"/resume", resumeForm("s1", last)).rest(t)
		require.NotEmpty(t, resumed)
		for _, frame := range resumed {
			require.NotEqual(t, "error", frame.name, "%v", frame.data)
		}
		require.Contains(t, []string{"catch_up", "subscribed"}, resumed[0].name, "B resumes the run while it is live: %v", frameNames(resumed))
		rest := runEvents(resumed)
		require.NotEmpty(t, rest, "B sent no event: %v", frameNames(resumed))
		for i, frame := range rest {
			require.Equal(t, last+1+int64(i), frame.index(), "B's events continue A's without gap or repeat: %v", frameNames(resumed))
			require.Equal(t, runID, frame.data["run_id"])
		}
		final := rest[len(rest)-1]
		require.Equal(t, "RunCompleted", final.name, "%v", frameNames(resumed))
		require.Equal(t, "The workspace holds notes.txt and nothing else.", final.data["content"])

		replay := b.stream(t, "/agents/assistant/runs/"+runID+"/resume", resumeForm("s1", -1)).rest(t)
		require.NotEmpty(t, replay)
		require.Equal(t, "replay", replay[0].name)
		require.Equal(t, "COMPLETED", replay[0].data["status"])
		require.Equal(t, frameNames(append(seen, rest...)), frameNames(runEvents(replay)), "a full replay on B is A's frames and then B's")

		if c.redis != nil {
			keys, err := c.redisKeys(t.Context(), runID)
			require.NoError(t, err)
			require.NotEmpty(t, keys, "the run's events went through Redis")
		}
	})
}

// busyAcceptor starts replica A with its one slot (max_concurrency 1) taken
// by a stalled run, then replica B, and returns A: the runs A accepts next
// execute on B.
func busyAcceptor(t *testing.T, c *replicaCluster) *process {
	t.Helper()
	c.fake.Enqueue(fakeopenai.Text("this answer keeps replica A busy").StallAfter(1))
	a := c.start(t, "a")
	c.track(a.submitBackground(t, "busy", "block"))
	require.Eventually(t, func() bool { return len(c.fake.Requests()) == 1 }, streamTimeout, 10*time.Millisecond, "A executes the first run:\n%s", a.log)
	c.start(t, "b")
	return a
}

// requireWholeRun checks frames hold a whole run, numbered from 0 without a
// gap, from RunStarted to a RunCompleted with content; it returns the run's
// events.
func requireWholeRun(t *testing.T, frames []sseFrame, content string) []sseFrame {
	t.Helper()
	events := runEvents(frames)
	require.NotEmpty(t, events, "%v", frameNames(frames))
	for i, frame := range events {
		require.Equal(t, int64(i), frame.index(), "%v", frameNames(frames))
	}
	require.Equal(t, "RunStarted", events[0].name, "%v", frameNames(frames))
	require.Equal(t, "RunCompleted", events[len(events)-1].name, "%v", frameNames(frames))
	require.Equal(t, content, events[len(events)-1].data["content"])
	return events
}

// TestReplicaResumeOnTheAcceptingReplica: replica A accepts a background run
// that replica B executes (A's one slot is taken). Resuming on A, which
// registered the run but produces none of its events, follows the run on
// B: every event, up to RunCompleted.
func TestReplicaResumeOnTheAcceptingReplica(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	forEachCoordination(t, binary, clusterOptions{maxConcurrency: 1}, func(t *testing.T, c *replicaCluster) {
		a := busyAcceptor(t, c)

		c.fake.Enqueue(fakeopenai.Text("answered on replica B").WithDelay(time.Second))
		runID := a.submitBackground(t, "s1", "hello")
		c.track(runID)
		require.Eventually(t, func() bool { return len(c.fake.Requests()) == 2 }, streamTimeout, 10*time.Millisecond, "B executes the second run")

		requireWholeRun(t, a.stream(t, "/agents/assistant/runs/"+runID+"/resume", resumeForm("s1", -1)).rest(t), "answered on replica B")
	})
}

// TestReplicaStreamedSubmissionExecutedElsewhere: replica A accepts a
// background run with stream=true that replica B executes (A's one slot is
// taken). A's answer streams the run as B executes it, up to RunCompleted.
func TestReplicaStreamedSubmissionExecutedElsewhere(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	forEachCoordination(t, binary, clusterOptions{maxConcurrency: 1}, func(t *testing.T, c *replicaCluster) {
		a := busyAcceptor(t, c)

		c.fake.Enqueue(fakeopenai.Text("streamed from replica B").WithDelay(500 * time.Millisecond))
		frames := a.stream(t, "/agents/assistant/runs", url.Values{"message": {"hello"}, "stream": {"true"}, "background": {"true"},
			"session_id": {"s1"}}).rest(t)
		events := requireWholeRun(t, frames, "streamed from replica B")
		c.track(events[0].data["run_id"].(string))
		require.Len(t, c.fake.Requests(), 2, "B executed the streamed run")
	})
}

// TestReplicaGracefulStopHandsRunsBack: replica A gets SIGTERM while a run
// executes there, its model call stalled. A waits stop_timeout_seconds (1),
// then exits without cancelling the run and hands it back: replica B takes
// it over at once — long before the 30 s lock grace — and completes it.
func TestReplicaGracefulStopHandsRunsBack(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	c := newReplicaCluster(t, binary, clusterOptions{lockGrace: 30, stopTimeout: 1})
	c.fake.Enqueue(fakeopenai.Text("cut short on replica A").StallAfter(1), fakeopenai.Text("finished on replica B"))
	a := c.start(t, "a")
	runID := a.submitBackground(t, "s1", "work")
	a.pollRun(t, runID, "s1", func(out map[string]any) bool { return len(c.fake.Requests()) == 1 && out["status"] == "RUNNING" })
	b := c.start(t, "b")

	stopped := time.Now()
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-a.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("A did not stop:\n%s", a.log)
	}
	require.Contains(t, a.log.String(), "handed back", "A says it hands the run back:\n%s", a.log)
	var out map[string]any
	b.pollRun(t, runID, "s1", func(run map[string]any) bool {
		out = run
		return run["status"] != "PENDING" && run["status"] != "RUNNING"
	})
	require.Equal(t, "COMPLETED", out["status"], "%v\nB's log:\n%s", out, b.log)
	require.Equal(t, "finished on replica B", out["content"])
	require.Less(t, time.Since(stopped), 15*time.Second, "taken over without waiting for the 30 s lock grace")
	require.Len(t, c.fake.Requests(), 2)
}

// TestReplicaCancel: a run executes on replica A, its model call stalled;
// POST …/cancel on replica B. The run reads CANCELLED within a second of
// the cancel's answer, A abandons the model call, and A's execution ends
// CANCELLED: it does not complete the run afterwards.
func TestReplicaCancel(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	forEachCoordination(t, binary, clusterOptions{}, func(t *testing.T, c *replicaCluster) {
		c.fake.Enqueue(fakeopenai.Text("this answer never ends").StallAfter(1))
		a := c.start(t, "a")
		runID := a.submitBackground(t, "s1", "work")
		c.track(runID)
		a.pollRun(t, runID, "s1", func(out map[string]any) bool { // A executes the run
			return len(c.fake.Requests()) == 1 && out["status"] == "RUNNING"
		})
		b := c.start(t, "b")

		resp, err := http.PostForm(b.url+"/agents/assistant/runs/"+runID+"/cancel", url.Values{"session_id": {"s1"}})
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		latency := b.pollRun(t, runID, "s1", func(out map[string]any) bool { return out["status"] == "CANCELLED" })
		t.Logf("cancel on B to CANCELLED: %s", latency.Round(time.Millisecond))
		require.Less(t, latency, time.Second, "CANCELLED within 1 s of the cancel's answer")

		require.Eventually(t, func() bool { return c.fake.Disconnects() == 1 }, 5*time.Second, 10*time.Millisecond, "A abandons the model call")
		replay := a.stream(t, "/agents/assistant/runs/"+runID+"/resume", resumeForm("s1", -1)).rest(t)
		require.NotEmpty(t, replay)
		require.Equal(t, "replay", replay[0].name, "A's execution is over: %v", frameNames(replay))
		require.Equal(t, "CANCELLED", replay[0].data["status"])
		events := runEvents(replay)
		require.NotEmpty(t, events)
		for _, frame := range events {
			require.NotEqual(t, "RunCompleted", frame.name, "%v", frameNames(replay))
		}
		require.Equal(t, "RunCancelled", events[len(events)-1].name, "%v", frameNames(replay))
		for _, p := range []*process{a, b} {
			require.Equal(t, "CANCELLED", p.readRun(t, runID, "s1")["status"])
		}
		require.Len(t, c.fake.Requests(), 1, "the run is not executed again")
	})
}

// TestReplicaKillToResume: a run executes on replica A, its model call
// stalled, when A is killed with SIGKILL. Replica B takes the run over
// within 15 s (queue.lock_grace_seconds is 5) and completes it, announced
// by a RunRetry event.
func TestReplicaKillToResume(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	forEachCoordination(t, binary, clusterOptions{}, func(t *testing.T, c *replicaCluster) {
		got := killToResume(t, c)
		t.Logf("kill to resume on B: %s (run row at attempt 2), to B's model call: %s, to COMPLETED: %s",
			got.resume.Round(time.Millisecond), got.modelCall.Round(time.Millisecond), got.complete.Round(time.Millisecond))
		require.LessOrEqual(t, got.resume, 15*time.Second)
	})
}

// killToResumeTimes are the times from the SIGKILL of the replica executing
// a run until the other replica shows it resumed and completed it.
type killToResumeTimes struct {
	// resume is until the run reads queue_attempt 2 on the surviving
	// replica: its row is written when the new attempt starts, before any
	// step, so it is the earliest sign a client can see with or without
	// Redis (B's RunRetry reaches /resume through the database only after
	// the first step without Redis).
	resume time.Duration
	// modelCall is until the model receives the new attempt's call.
	modelCall time.Duration
	// complete is until the run reads COMPLETED.
	complete time.Duration
}

// killToResume starts a run on replica A, kills A once the run's model call
// is in flight and measures how long replica B takes to resume and complete
// it. It checks the outcome: COMPLETED with B's answer, the lost attempt in
// metadata.attempts, a RunRetry (attempt 2) in the run's events.
func killToResume(tb testing.TB, c *replicaCluster) killToResumeTimes {
	tb.Helper()
	c.fake.Enqueue(fakeopenai.Text("lost with replica A").StallAfter(1), fakeopenai.Text("finished on replica B"))
	a := c.start(tb, "a")
	runID := a.submitBackground(tb, "s1", "work")
	c.track(runID)
	a.pollRun(tb, runID, "s1", func(out map[string]any) bool { // A executes the run
		return len(c.fake.Requests()) == 1 && out["status"] == "RUNNING"
	})
	// A client follows the run live on A: it sees the events A sends
	// before the kill, some of which A never wrote anywhere durable.
	live := a.stream(tb, "/agents/assistant/runs/"+runID+"/resume", resumeForm("s1", -1))
	seenOnA := int64(-1)
	for seenOnA < 0 {
		frame, ok := live.next(tb)
		require.True(tb, ok, "A's live stream ended before its first content")
		if frame.name == "RunContent" {
			seenOnA = frame.index()
		}
	}
	live.close()
	b := c.start(tb, "b")

	a.kill(tb)
	killed := time.Now()
	var got killToResumeTimes
	var out map[string]any
	got.complete = b.pollRun(tb, runID, "s1", func(run map[string]any) bool {
		out = run
		since := time.Since(killed)
		if metadata, _ := run["metadata"].(map[string]any); got.resume == 0 && metadata["queue_attempt"] == float64(2) {
			got.resume = since
		}
		if got.modelCall == 0 && len(c.fake.Requests()) == 2 {
			got.modelCall = since
		}
		switch run["status"] {
		case "PENDING", "RUNNING":
			return false
		}
		return true
	})
	require.Equal(tb, "COMPLETED", out["status"], "%v\nB's log:\n%s", out, b.log)
	require.Equal(tb, "finished on replica B", out["content"])
	require.NotZero(tb, got.resume, "the run's row never showed attempt 2: %v", out)
	metadata, _ := out["metadata"].(map[string]any)
	attempts, _ := metadata["attempts"].([]any)
	require.NotEmpty(tb, attempts, "metadata.attempts records the lost attempt: %v", metadata)
	lost, _ := attempts[0].(map[string]any)
	require.Equal(tb, float64(1), lost["attempt"], "%v", attempts)
	require.NotEmpty(tb, lost["error"], "%v", attempts)
	require.Len(tb, c.fake.Requests(), 2, "the model call in flight at the kill is made again, once")

	replay := runEvents(b.stream(tb, "/agents/assistant/runs/"+runID+"/resume", resumeForm("s1", -1)).rest(tb))
	require.NotEmpty(tb, replay)
	var retry *sseFrame
	for i, frame := range replay {
		if i > 0 {
			require.Greater(tb, frame.index(), replay[i-1].index(), "indices increase: %v", frameNames(replay))
		}
		if frame.name == "RunRetry" && retry == nil {
			retry = &replay[i]
		}
	}
	require.NotNil(tb, retry, "the new attempt is announced: %v", frameNames(replay))
	require.Equal(tb, float64(2), retry.data["attempt"])
	require.Equal(tb, "RunCompleted", replay[len(replay)-1].name, "%v", frameNames(replay))

	// The client that followed A resumes on B from the last index it saw:
	// it gets the whole new attempt, from its RunRetry — no index of B's
	// is one A already used.
	resumed := runEvents(b.stream(tb, "/agents/assistant/runs/"+runID+"/resume", resumeForm("s1", seenOnA)).rest(tb))
	require.NotEmpty(tb, resumed)
	require.Equal(tb, "RunRetry", resumed[0].name, "resumed after A's last live event: %v", frameNames(resumed))
	require.Greater(tb, retry.index(), seenOnA, "B numbers its events after every event A sent")
	return got
}
