package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// identityRuns is how many background runs the same-config test submits
// before it kills a server.
const identityRuns = 24

// TestSameConfigServersOnOneHost: two `agnogo serve`, A and B, on one host,
// one Postgres database and one Redis, started with the same config —
// which names no executor id and leaves max_attempts to its default — on
// two listen addresses. Their default executor ids differ. A is killed with
// SIGKILL while it executes background runs: every accepted run ends
// COMPLETED on B within lock_grace_seconds + 10 s. A restarted on its
// address while B executes more runs takes nothing from B: it recovers no
// run, neither log shows an execution that lost its run to another, every
// run completes, and no status a client read as terminal changes.
func TestSameConfigServersOnOneHost(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	const lockGrace = 5
	c := newReplicaCluster(t, binary, clusterOptions{redis: true, lockGrace: lockGrace, maxConcurrency: 4, defaultAttempts: true})
	for range identityRuns + 16 { // the calls in flight at the kill are made again
		c.fake.Enqueue(fakeopenai.Text("done").WithDelay(500 * time.Millisecond))
	}
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := startProcessAt(t, binary, c.config, addrA)
	b := startProcessAt(t, binary, c.config, addrB)

	sessions := map[string]string{} // run id -> session id
	for i := range identityRuns {
		p := a
		if i%2 == 1 {
			p = b
		}
		session := fmt.Sprintf("s%d", i)
		runID := p.submitBackground(t, session, fmt.Sprintf("job %d", i))
		sessions[runID] = session
		c.track(runID)
	}
	// A client polls every run on B from now on, recording each status it
	// reads.
	watch := watchRuns(t, b)
	for runID, session := range sessions {
		watch.add(runID, session)
	}

	// Kill A once it executes runs (its jobs name its address in their
	// executor id).
	var onA []string
	require.Eventually(t, func() bool {
		onA = nil
		for _, job := range runningJobs(t, b) {
			if strings.Contains(job.ExecutorID, addrA) {
				onA = append(onA, job.ID)
			} else {
				require.Contains(t, job.ExecutorID, addrB, "a job runs on A or on B")
			}
		}
		return len(onA) > 0
	}, streamTimeout, 20*time.Millisecond, "A executes runs")
	a.kill(t)
	killed := time.Now()

	requireCompleted(t, b, sessions, killed.Add((lockGrace+10)*time.Second))
	t.Logf("every run COMPLETED %s after the kill; %d were executing on A", time.Since(killed).Round(time.Millisecond), len(onA))

	// B executes a second batch: the replies left over answer at once, four
	// more take 3 s, so B is still executing them when A is back.
	more := map[string]string{}
	slow := 4
	for range slow {
		c.fake.Enqueue(fakeopenai.Text("done slowly").WithDelay(3 * time.Second))
	}
	for i := range c.fake.Pending() {
		session := fmt.Sprintf("late%d", i)
		runID := b.submitBackground(t, session, fmt.Sprintf("late job %d", i))
		more[runID] = session
		c.track(runID)
		watch.add(runID, session)
	}
	require.Eventually(t, func() bool { return c.fake.Pending() == 0 }, streamTimeout, 10*time.Millisecond, "B calls the model for every run")

	// A restarts on its address, with its executor id: B claimed it and
	// took its runs over, so there is nothing left to recover, and B's runs
	// in flight stay B's.
	restarted := startProcessAt(t, binary, c.config, addrA)
	running := runningJobs(t, b)
	requireCompleted(t, b, more, time.Now().Add(streamTimeout))
	watch.untilEveryRunReadAgain(t, 3)
	t.Logf("A restarted while B executed %d runs", len(running))
	for _, p := range []*process{restarted, b} {
		log := p.log.String()
		for _, lost := range []string{"ConflictingID", "no longer owned", "executed elsewhere", "took this run over"} {
			require.NotContains(t, log, lost, "no execution lost its run to another:\n%s", log)
		}
	}
	require.NotContains(t, restarted.log.String(), "Recovered pending workflows", "the restarted A takes no run")
	for runID, statuses := range watch.stop() {
		require.Equal(t, []string{"COMPLETED"}, terminalTail(statuses), "run %s read %v", runID, statuses)
	}
	require.Equal(t, "COMPLETED", restarted.readRun(t, onA[0], sessions[onA[0]])["status"])
}

// requireCompleted polls the runs (run id -> session id) on p until each
// reads COMPLETED, failing on any other terminal status or at the
// deadline.
func requireCompleted(t *testing.T, p *process, runs map[string]string, deadline time.Time) {
	t.Helper()
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for runID, session := range runs {
		for {
			out := p.readRun(t, runID, session)
			if out["status"] == "COMPLETED" {
				break
			}
			require.NotContains(t, []any{"ERROR", "CANCELLED"}, out["status"], "run %s: %v\nlog:\n%s", runID, out, p.log)
			require.True(t, time.Now().Before(deadline), "run %s is still %v\nlog:\n%s", runID, out["status"], p.log)
			<-ticker.C
		}
	}
}

// TestServerRefusesALiveExecutorID: a second `agnogo serve` given the
// executor_id of a live one exits with status 1 and a message naming
// executor_id, and the first goes on serving.
func TestServerRefusesALiveExecutorID(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	b := setupRun(t, assistantAgent)
	config, err := os.ReadFile(b.config)
	require.NoError(t, err)
	config = append(config, []byte("queue: {executor_id: node-1}\n")...)
	require.NoError(t, os.WriteFile(b.config, config, 0o600))

	first := startBinary(t, binary, b.config)
	ctx, cancel := context.WithTimeout(t.Context(), streamTimeout)
	defer cancel()
	second := serveCommand(binary, b.config, "127.0.0.1:0")
	var stderr bytes.Buffer
	second.Stderr = &stderr
	err = second.Start()
	require.NoError(t, err)
	err = waitCommand(ctx, second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the second server exits: %s", stderr.String())
	require.Equal(t, exitFailure, exit.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), `executor_id "node-1"`)
	require.Contains(t, stderr.String(), "in use by a live server")
	require.NotContains(t, stderr.String(), listeningMessage, "it never served")

	resp, err := http.Get(first.url + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the first server goes on")
	require.NotContains(t, first.log.String(), "took this run over")
}

// waitCommand waits for a started command to exit, killing it when ctx
// ends first.
func waitCommand(ctx context.Context, cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("still running after the timeout: %w", ctx.Err())
	}
}

// queueJob is a job of GET /queue/jobs, as far as these tests read it.
type queueJob struct {
	ID         string `json:"id"`
	ExecutorID string `json:"executor_id"`
}

// runningJobs lists the jobs the queue shows running.
func runningJobs(tb testing.TB, p *process) []queueJob {
	tb.Helper()
	resp, err := http.Get(p.url + "/queue/jobs?status=running&limit=1000")
	require.NoError(tb, err)
	defer resp.Body.Close()
	var page struct {
		Data []queueJob `json:"data"`
	}
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&page))
	require.Equal(tb, http.StatusOK, resp.StatusCode)
	return page.Data
}

// runWatch polls runs on a server in a goroutine, as a client would,
// recording the statuses each read.
type runWatch struct {
	mu       sync.Mutex
	sessions map[string]string   // the runs polled: run id -> session id
	statuses map[string][]string // per run, every status read, in order
	rounds   int                 // polls of every run so far
	quit     chan struct{}
	done     chan struct{}
}

// watchRuns starts polling runs on p; add names them.
func watchRuns(t *testing.T, p *process) *runWatch {
	t.Helper()
	w := &runWatch{sessions: map[string]string{}, statuses: map[string][]string{}, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for {
			w.mu.Lock()
			sessions := maps.Clone(w.sessions)
			w.mu.Unlock()
			for runID, session := range sessions {
				status, ok := runStatus(p, runID, session)
				if !ok {
					continue
				}
				w.mu.Lock()
				w.statuses[runID] = append(w.statuses[runID], status)
				w.mu.Unlock()
			}
			w.mu.Lock()
			w.rounds++
			w.mu.Unlock()
			select {
			case <-w.quit:
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// add polls a run too.
func (w *runWatch) add(runID, sessionID string) {
	w.mu.Lock()
	w.sessions[runID] = sessionID
	w.mu.Unlock()
}

// untilEveryRunReadAgain waits until every run was read n more times.
func (w *runWatch) untilEveryRunReadAgain(tb testing.TB, n int) {
	tb.Helper()
	w.mu.Lock()
	target := w.rounds + n
	w.mu.Unlock()
	require.Eventually(tb, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.rounds >= target
	}, streamTimeout, 10*time.Millisecond)
}

// stop ends the polling and returns what it read.
func (w *runWatch) stop() map[string][]string {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.statuses
}

// runStatus reads a run's status; false when the server did not answer it.
func runStatus(p *process, runID, sessionID string) (string, bool) {
	resp, err := http.Get(p.url + "/agents/assistant/runs/" + runID + "?session_id=" + sessionID)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return "", false
	}
	return out.Status, true
}

// terminalTail is what a client read from the first terminal status on,
// each status once in order of first reading.
func terminalTail(statuses []string) []string {
	var tail []string
	for _, s := range statuses {
		terminal := s == "COMPLETED" || s == "ERROR" || s == "CANCELLED"
		if len(tail) == 0 && !terminal {
			continue
		}
		if len(tail) == 0 || tail[len(tail)-1] != s {
			tail = append(tail, s)
		}
	}
	return tail
}
