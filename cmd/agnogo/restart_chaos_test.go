package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/internal/testdb"
	agnorun "github.com/agnogo/agnogo/run"
)

// The shape of TestRunsSurviveADatabaseRestart.
const (
	// defaultRestartRuns and defaultOutageRuns are the background runs its
	// first and second phase submit (AGNOGO_RESTART_RUNS and
	// AGNOGO_OUTAGE_RUNS override them).
	defaultRestartRuns = 120
	defaultOutageRuns  = 60
	// outageSubmissions is how many of the outage runs are submitted
	// while the cluster is down.
	outageSubmissions = 10
	// restartSessions is how many sessions the runs are spread over.
	restartSessions = 20
	// restartConcurrency is each replica's queue.max_concurrency: the most
	// runs a disruption can catch executing on one replica.
	restartConcurrency = 8
	// defaultDatabaseOutage is how long the cluster stays down in the
	// second phase (AGNOGO_OUTAGE_SECONDS overrides it), and redisPause
	// how long Redis does not answer.
	defaultDatabaseOutage = 5 * time.Second
	redisPause            = 3 * time.Second
	// settleWithin bounds the wait for every run of a phase to end.
	settleWithin = 3 * time.Minute
	// submitWithin bounds the retries of one submission.
	submitWithin = time.Minute
	// modelLatency is how long the scripted model takes to answer.
	modelLatency = 30 * time.Millisecond
)

// TestRunsSurviveADatabaseRestart: two `agnogo serve` replicas share a
// PostgreSQL cluster and a Redis server of the test's own, so both can be
// disrupted without touching the servers other tests use. Each background
// run calls the model, runs the workspace's run_shell tool once — which
// appends the run's mark to a file, a side effect counted at the end — and
// calls the model again.
//
// Phase 1: runs are submitted to both replicas; a third of the way in,
// replica A is killed with SIGKILL; two thirds of the way in, the cluster is
// restarted (pg_ctl stop -m fast: every session ends with SQLSTATE 57P01).
// Phase 2: replica C takes A's place; runs are submitted to B and C; Redis
// stops answering for redisPause, then the cluster is down for
// databaseOutage (a crash-like stop) while submissions go on.
//
// Every submission is accepted, retried with its Idempotency-Key while the
// database is away, and no retry makes a second run. Every accepted run
// ends COMPLETED within settleWithin, none is left PENDING or RUNNING, and
// its job (its workflow's outcome, GET /queue/jobs/{id}) agrees with its
// row. No run's status changes after a client polling the runs saw it
// final. A model call or a tool call is made again only for runs executing
// at a disruption, at most one per run the disruption can have caught.
//
// Its size is bounded for CI; the environment variables above run it at
// another size, e.g. AGNOGO_RESTART_RUNS=300 AGNOGO_OUTAGE_SECONDS=20.
func TestRunsSurviveADatabaseRestart(t *testing.T) {
	t.Parallel()
	began := time.Now()
	restartRuns := envInt(t, "AGNOGO_RESTART_RUNS", defaultRestartRuns)
	outageRuns := envInt(t, "AGNOGO_OUTAGE_RUNS", defaultOutageRuns)
	databaseOutage := time.Duration(envInt(t, "AGNOGO_OUTAGE_SECONDS", int(defaultDatabaseOutage/time.Second))) * time.Second
	cluster := testdb.PrivatePostgres(t)
	redisAddr := privateRedis(t)
	binary := buildBinary(t)
	model := newScriptedModel(t)
	workspace := t.TempDir()
	config := filepath.Join(t.TempDir(), "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`name: Restart chaos
db: %s
redis: redis://%s/0
queue: {max_attempts: 2, lock_grace_seconds: 3, retry_delay_seconds: 1, max_concurrency: %d}
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - id: assistant
    model: fake
    tools: [workspace]
    workspace: {root: %q, confirm_writes: false}
`, cluster.URL(), redisAddr, restartConcurrency, model.url, workspace)), 0o600))

	c := &restartChaos{t: t, began: began, cluster: cluster, model: model, names: map[*process]string{}, restartRuns: restartRuns,
		begun: map[int]bool{}, accepted: map[int]string{}}
	start := func(name string) *process {
		p := startReplica(t, binary, config, name)
		c.add(p, name)
		return p
	}
	a, _ := start("replica-a"), start("replica-b")
	watcher := c.watch()
	c.logf("the cluster, Redis, the binary and replicas A and B are up")

	// Phase 1: a killed replica, then a restarted cluster.
	submitted := c.submitAll(0, restartRuns, submitBacklog)
	c.waitAnswered(restartRuns / 3)
	c.disrupt("SIGKILL of replica-a", restartConcurrency, func() {
		c.remove(a)
		a.kill(t)
	})
	c.waitAnswered(2 * restartRuns / 3)
	c.disrupt("restart of the cluster", 2*restartConcurrency, func() {
		cluster.Restart(t)
		c.awaitHeartbeats()
	})
	c.requireSubmitted(submitted)
	c.logf("phase 1 submitted")
	c.settle(0, restartRuns)
	c.logf("phase 1 settled")

	// Phase 2: Redis silent for a while, then the cluster down for a while,
	// the last runs submitted during the outage.
	start("replica-c")
	duringOutage := restartRuns + outageRuns - outageSubmissions
	submitted = c.submitAll(restartRuns, duringOutage, submitBacklog)
	c.waitAnswered(restartRuns + outageRuns/4)
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	require.NoError(t, rdb.Do(t.Context(), "CLIENT", "PAUSE", redisPause.Milliseconds(), "ALL").Err())
	c.logf("Redis paused for %s", redisPause)
	c.waitAnswered(restartRuns + outageRuns/2)
	var late <-chan error
	c.disrupt(fmt.Sprintf("%s outage of the cluster", databaseOutage), 2*restartConcurrency, func() {
		cluster.Stop(t)
		// Submitted at once, not paced: the runs make no progress now.
		late = c.submitAll(duringOutage, restartRuns+outageRuns, restartRuns+outageRuns)
		// The outage lasts databaseOutage: a fault held for a set time,
		// not a wait for work.
		require.NoError(t, agnorun.Sleep(t.Context(), databaseOutage))
		cluster.Start(t)
		c.awaitHeartbeats()
	})
	c.requireSubmitted(submitted)
	c.requireSubmitted(late)
	c.logf("phase 2 submitted")
	c.settle(0, restartRuns+outageRuns)
	c.logf("phase 2 settled")
	watcher.stop()

	c.requireNoFlips()
	c.requireJobsAgree()
	c.requireNoDuplicateRuns()
	c.requireRepeatsBounded(filepath.Join(workspace, "effects.log"))
	for _, p := range c.replicas {
		require.NotContains(t, p.log.String(), "panic:", "a replica panicked:\n%s", p.log)
	}
}

// restartChaos is the state of TestRunsSurviveADatabaseRestart.
type restartChaos struct {
	t           *testing.T
	began       time.Time
	restartRuns int // the runs of phase 1
	cluster     *testdb.Cluster
	model       *scriptedModel
	replicas    []*process          // every replica started, for their logs
	names       map[*process]string // each replica's executor id

	mu          sync.Mutex
	live        []*process     // the replicas clients may call
	begun       map[int]bool   // jobs whose submission has begun
	accepted    map[int]string // run id by job
	retried     []int          // jobs whose submission was retried
	disruptions []disruption
	firstFinal  map[string]string   // run id -> the first final status a client saw
	flips       []string            // runs whose final status a client saw change
	seen        map[string][]string // run id -> the statuses a client saw, when
}

// disruption is one fault injected, and the runs it may have caught
// executing.
type disruption struct {
	name string
	// open are the jobs submitted by the end of the fault that no client
	// had seen end before it began: a superset of the runs executing.
	open map[int]bool
	// bound is the most runs the disruption can catch executing.
	bound int
}

// logf logs a step of the test with the time since it began.
func (c *restartChaos) logf(format string, args ...any) {
	c.t.Helper()
	c.t.Logf("%6.1fs "+format, append([]any{time.Since(c.began).Seconds()}, args...)...)
}

// add makes a replica live.
func (c *restartChaos) add(p *process, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = append(c.live, p)
	c.replicas = append(c.replicas, p)
	c.names[p] = name
}

// remove takes a replica out of the live ones.
func (c *restartChaos) remove(p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = slices.DeleteFunc(c.live, func(q *process) bool { return q == p })
}

// replica is a live replica, chosen by n.
func (c *restartChaos) replica(n int) *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live[n%len(c.live)]
}

// restartClient is the HTTP client of the test: no call waits forever on a
// replica stuck behind its database.
var restartClient = &http.Client{Timeout: 15 * time.Second}

// submitBacklog is how far the submissions run ahead of the model's final
// answers: enough to keep both replicas busy, so submissions go on through
// a whole phase.
const submitBacklog = 3 * restartConcurrency

// submitAll submits jobs [from, to) from four clients, each retrying its
// submission with the same Idempotency-Key until it is accepted; job n is
// submitted once the model answered n-backlog runs. The channel yields each
// job's error, then closes.
func (c *restartChaos) submitAll(from, to, backlog int) <-chan error {
	errs := make(chan error, to-from)
	var wg sync.WaitGroup
	for worker := range 4 {
		wg.Go(func() {
			for job := from + worker; job < to; job += 4 {
				poll(submitWithin, 10*time.Millisecond, func() bool { return c.model.answered() >= job-backlog })
				errs <- c.submit(job)
			}
		})
	}
	go func() { wg.Wait(); close(errs) }()
	return errs
}

// requireSubmitted waits for submitAll's submissions and checks them.
func (c *restartChaos) requireSubmitted(errs <-chan error) {
	for err := range errs {
		require.NoError(c.t, err)
	}
}

// submit submits one job until a replica accepts it, polling while the
// database or the replica is away (a 5xx or no answer).
func (c *restartChaos) submit(job int) error {
	c.mu.Lock()
	c.begun[job] = true
	c.mu.Unlock()
	var (
		id, detail  string
		status, try int
	)
	decided := poll(submitWithin, 100*time.Millisecond, func() bool {
		id, status, detail = c.post(c.replica(job+try), job)
		try++
		return (status == http.StatusAccepted && id != "") || (status != 0 && status < http.StatusInternalServerError)
	})
	switch {
	case !decided:
		return fmt.Errorf("job %d not accepted within %s: HTTP %d: %s", job, submitWithin, status, detail)
	case status != http.StatusAccepted || id == "":
		return fmt.Errorf("job %d refused: HTTP %d: %s", job, status, detail)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.accepted[job] = id
	if try > 1 {
		c.retried = append(c.retried, job)
	}
	return nil
}

// post submits a job once; status 0 when no replica answered.
func (c *restartChaos) post(p *process, job int) (id string, status int, detail string) {
	form := url.Values{"message": {jobMark(job)}, "stream": {"false"}, "background": {"true"},
		"session_id": {fmt.Sprintf("restart-s%d", job%restartSessions)}}
	req, err := http.NewRequest(http.MethodPost, p.url+"/agents/assistant/runs", strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", jobMark(job))
	resp, err := restartClient.Do(req)
	if err != nil {
		return "", 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var accepted struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(body, &accepted)
	return accepted.RunID, resp.StatusCode, string(body)
}

// waitAnswered waits until the model gave n runs their final answer.
func (c *restartChaos) waitAnswered(n int) {
	c.t.Helper()
	ok := poll(90*time.Second, 20*time.Millisecond, func() bool { return c.model.answered() >= n })
	require.True(c.t, ok, "the model answered %d runs, not %d:\n%s", c.model.answered(), n, c.logs(anyLine, logTail))
}

// disrupt injects a fault and notes the runs it may have caught executing:
// those submitted by the time inject returns, which no client had seen end
// before it began.
func (c *restartChaos) disrupt(name string, bound int, inject func()) {
	c.mu.Lock()
	endedBefore := make(map[string]bool, len(c.firstFinal))
	for id := range c.firstFinal {
		endedBefore[id] = true
	}
	c.mu.Unlock()
	started := time.Now()
	inject()
	took := time.Since(started)
	open := map[int]bool{}
	c.mu.Lock()
	for job := range c.begun {
		if id, ok := c.accepted[job]; !ok || !endedBefore[id] {
			open[job] = true
		}
	}
	c.disruptions = append(c.disruptions, disruption{name: name, open: open, bound: bound})
	c.mu.Unlock()
	c.logf("%s: over after %s, %d runs open", name, took.Round(time.Millisecond), len(open))
}

// awaitHeartbeats waits until every live replica has written its heartbeat
// since the cluster came back. Until then, a database fault longer than
// the lock grace goes on having effects: a replica may take another, live
// one for dead and continue its runs, which that one stops as soon as it
// notices (docs/config.md, lock_grace_seconds).
func (c *restartChaos) awaitHeartbeats() {
	c.t.Helper()
	ctx := c.t.Context()
	conn, err := pgx.Connect(ctx, c.cluster.URL())
	require.NoError(c.t, err)
	defer conn.Close(context.WithoutCancel(ctx))
	var table string
	require.NoError(c.t, conn.QueryRow(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename)
FROM pg_tables WHERE tablename = 'agno_executors'`).Scan(&table))
	var back int64
	require.NoError(c.t, conn.QueryRow(ctx, `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`).Scan(&back))
	c.mu.Lock()
	var executors []string
	for _, p := range c.live {
		executors = append(executors, c.names[p])
	}
	c.mu.Unlock()
	var beating int
	ok := poll(30*time.Second, 50*time.Millisecond, func() bool {
		err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE executor_id = ANY($1) AND seen_at > $2`, executors, back).Scan(&beating)
		return err == nil && beating == len(executors)
	})
	require.True(c.t, ok, "%d of the replicas %v beat again after the cluster came back:\n%s", beating, executors, c.logs(anyLine, logTail))
}

// runWatcher polls the runs as a client does, until stopped.
type runWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (w runWatcher) stop() {
	w.cancel()
	<-w.done
}

// watch polls every session's runs on the live replicas, noting the first
// final status a client sees of each run and any change after it. It goes
// on through the disruptions: a failed poll is tried again.
func (c *restartChaos) watch() runWatcher {
	c.firstFinal, c.seen = map[string]string{}, map[string][]string{}
	ctx, cancel := context.WithCancel(context.Background())
	w := runWatcher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for round := 0; ctx.Err() == nil; round++ {
			c.pollRuns(ctx, c.replica(round))
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		// One last round, so every run's final status has been seen.
		c.pollRuns(context.Background(), c.replica(0))
	}()
	return w
}

// pollRuns reads every session's runs once on p.
func (c *restartChaos) pollRuns(ctx context.Context, p *process) {
	for session := range restartSessions {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			fmt.Sprintf("%s/agents/assistant/runs?session_id=restart-s%d", p.url, session), nil)
		if err != nil {
			return
		}
		resp, err := restartClient.Do(req)
		if err != nil {
			return
		}
		var runs []struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		err = json.NewDecoder(resp.Body).Decode(&runs)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			continue
		}
		at := time.Since(c.began).Seconds()
		c.mu.Lock()
		for _, r := range runs {
			if seen := c.seen[r.RunID]; len(seen) == 0 || !strings.HasSuffix(seen[len(seen)-1], " "+r.Status) {
				c.seen[r.RunID] = append(seen, fmt.Sprintf("%.1fs %s", at, r.Status))
			}
			first := c.firstFinal[r.RunID]
			switch {
			case first != "" && r.Status != first:
				c.flips = append(c.flips, r.RunID)
			case first == "" && finalStatus(r.Status):
				c.firstFinal[r.RunID] = r.Status
			}
		}
		c.mu.Unlock()
	}
}

// finalStatus reports a status a run ends with.
func finalStatus(status string) bool {
	return status == "COMPLETED" || status == "ERROR" || status == "CANCELLED"
}

// settle waits until the rows of jobs [from, to) are final and all
// COMPLETED.
func (c *restartChaos) settle(from, to int) {
	c.t.Helper()
	var rows map[string]string
	var err error
	var open []string
	ok := poll(settleWithin, 500*time.Millisecond, func() bool {
		if rows, err = c.runRows(); err != nil {
			return false
		}
		open = c.openRuns(rows, from, to)
		return len(open) == 0
	})
	require.True(c.t, ok, "%d runs still PENDING or RUNNING after %s (%v):\n%s", len(open), settleWithin, err, c.explain(open...))
	for job := from; job < to; job++ {
		id := c.accepted[job]
		require.Equal(c.t, "COMPLETED", rows[id], "job %d did not complete:\n%s", job, c.explain(id))
	}
}

// openRuns lists the runs of jobs [from, to) whose row is not final.
func (c *restartChaos) openRuns(rows map[string]string, from, to int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var open []string
	for job := from; job < to; job++ {
		if id := c.accepted[job]; !finalStatus(rows[id]) {
			open = append(open, id)
		}
	}
	return open
}

// runRows reads every run row's status from the cluster.
func (c *restartChaos) runRows() (map[string]string, error) {
	ctx, cancel := context.WithTimeout(c.t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.cluster.URL())
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT run_id, status FROM ai.agno_runs`)
	if err != nil {
		return nil, err
	}
	statuses := map[string]string{}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			return nil, err
		}
		statuses[id] = status
	}
	return statuses, rows.Err()
}

// requireNoDuplicateRuns: a retried submission named the run it made the
// first time, and the database holds one run per job.
func (c *restartChaos) requireNoDuplicateRuns() {
	rows, err := c.runRows()
	require.NoError(c.t, err)
	require.Len(c.t, rows, len(c.accepted), "one run row per accepted job")
	for _, job := range append(c.retried, 0, c.restartRuns) {
		id, status, detail := c.post(c.replica(job), job)
		require.Equal(c.t, http.StatusAccepted, status, detail)
		require.Equal(c.t, c.accepted[job], id, "Idempotency-Key %s names the run it was accepted with", jobMark(job))
	}
}

// requireJobsAgree: each run's job, which takes its status from the run's
// workflow, agrees with its row.
func (c *restartChaos) requireJobsAgree() {
	for job, id := range c.accepted {
		resp, err := restartClient.Get(c.replica(job).url + "/queue/jobs/" + id)
		require.NoError(c.t, err)
		var got struct {
			Status    string `json:"status"`
			RunStatus string `json:"run_status"`
			Error     string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		require.NoError(c.t, err)
		require.Equal(c.t, http.StatusOK, resp.StatusCode, "job %d, run %s", job, id)
		require.Equal(c.t, "completed", got.Status, "the workflow of job %d did not complete (%s):\n%s", job, got.Error, c.explain(id))
		require.Equal(c.t, "COMPLETED", got.RunStatus, "job %d: the row disagrees with the workflow:\n%s", job, c.explain(id))
	}
}

// requireNoFlips: a client saw every run end, and never saw a final status
// change.
func (c *restartChaos) requireNoFlips() {
	c.mu.Lock()
	flips := slices.Compact(slices.Sorted(slices.Values(c.flips)))
	firstFinal := maps.Clone(c.firstFinal)
	c.mu.Unlock()
	require.Empty(c.t, flips, "a client saw a run's final status change:\n%s", c.explain(flips...))
	for job, id := range c.accepted {
		require.Equal(c.t, "COMPLETED", firstFinal[id], "job %d: the first final status a client saw:\n%s", job, c.explain(id))
	}
}

// requireRepeatsBounded: every run called the model twice and ran its tool
// once, more only when a disruption caught it executing, and at most one
// step again per run each disruption could catch.
func (c *restartChaos) requireRepeatsBounded(effectsFile string) {
	data, err := os.ReadFile(effectsFile)
	require.NoError(c.t, err)
	effects := map[int]int{}
	for line := range strings.Lines(string(data)) {
		job, ok := parseJobMark(line)
		require.True(c.t, ok, "effects file line %q", line)
		effects[job]++
	}
	calls := c.model.callsByJob()
	caught := map[int]bool{}
	allowed := 0
	for _, d := range c.disruptions {
		for job := range d.open {
			caught[job] = true
		}
		allowed += d.bound
	}
	repeats := 0
	for job := range c.accepted {
		require.GreaterOrEqual(c.t, calls[job], 2, "job %d called the model", job)
		require.GreaterOrEqual(c.t, effects[job], 1, "job %d ran its tool; the model was given the results %v:\n%s",
			job, c.model.toolResults(job), c.explain(c.accepted[job]))
		extra := calls[job] - 2 + effects[job] - 1
		if extra > 0 {
			require.True(c.t, caught[job], "job %d made %d model calls and ran its tool %d times, but no disruption caught it executing:\n%s",
				job, calls[job], effects[job], c.explain(c.accepted[job]))
		}
		repeats += extra
	}
	c.logf("%d steps made again (at most %d allowed), %d submissions retried", repeats, allowed, len(c.retried))
	require.LessOrEqual(c.t, repeats, allowed, "steps made again")
}

// explain describes runs for a failure message: their job, row and job
// status, the statuses a client saw, the replicas' log lines naming them
// and the errors the replicas logged. It is written only when the message
// is: require formats a message only on failure.
func (c *restartChaos) explain(ids ...string) fmt.Stringer {
	return explanation{c: c, ids: ids}
}

// explanation is what explain returns.
type explanation struct {
	c   *restartChaos
	ids []string
}

func (e explanation) String() string {
	c, ids := e.c, e.ids
	if len(ids) == 0 {
		return ""
	}
	rows, err := c.runRows()
	var out strings.Builder
	for _, id := range ids {
		c.mu.Lock()
		job := -1
		for j, accepted := range c.accepted {
			if accepted == id {
				job = j
			}
		}
		seen := strings.Join(c.seen[id], ", ")
		c.mu.Unlock()
		fmt.Fprintf(&out, "job %d, run %s: row %q (%v); GET /queue/jobs: %s; a client saw: %s\n", job, id, rows[id], err, c.job(id), seen)
	}
	out.WriteString("The replicas' log lines naming them:\n")
	out.WriteString(c.logs(func(line string) bool {
		return slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(line, id) })
	}, 0))
	out.WriteString("The errors the replicas logged, failed HTTP requests left out:\n")
	out.WriteString(c.logs(errorLine, logTail))
	return out.String()
}

// job is a run's job as GET /queue/jobs/{id} on a live replica answers it.
func (c *restartChaos) job(id string) string {
	resp, err := restartClient.Get(c.replica(0).url + "/queue/jobs/" + id)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(body))
}

// logs is the replicas' log lines that keep accepts, the last limit of
// each replica's at most (all when limit is 0), for failure messages.
func (c *restartChaos) logs(keep func(line string) bool, limit int) string {
	var out strings.Builder
	for _, p := range c.replicas {
		fmt.Fprintf(&out, "--- %s (%s)\n", c.names[p], p.url)
		var kept []string
		for line := range strings.Lines(p.log.String()) {
			if keep(line) {
				kept = append(kept, line)
			}
		}
		if limit > 0 {
			kept = kept[max(len(kept)-limit, 0):]
		}
		out.WriteString(strings.Join(kept, ""))
	}
	return out.String()
}

// logTail is how many of each replica's last lines a failure shows.
const logTail = 100

// anyLine keeps every log line.
func anyLine(string) bool { return true }

// errorLine keeps the errors a replica logged, but for failed HTTP
// requests: the test's own polls fail while the database is away.
func errorLine(line string) bool {
	return strings.Contains(line, "level=ERROR") && !strings.Contains(line, `msg="request failed"`)
}

// jobMark names a job in its message, its Idempotency-Key and its tool's
// side effect.
func jobMark(job int) string { return "chaos-job-" + strconv.Itoa(job) }

// jobMarkPattern finds a job's mark.
var jobMarkPattern = regexp.MustCompile(`chaos-job-(\d+)`)

// parseJobMark reads the job named in text.
func parseJobMark(text string) (int, bool) {
	m := jobMarkPattern.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	job, err := strconv.Atoi(m[1])
	return job, err == nil
}

// scriptedModel is an OpenAI-compatible model that answers each call by
// what the run has done so far: a run's first call gets a run_shell call
// appending the job's mark to effects.log, the call carrying the tool's
// result gets the final answer. It counts the calls of each job. The
// replies are fakeopenai's, in OpenAI's wire format: each call enqueues its
// reply there and is forwarded, one call at a time, so it takes that reply.
type scriptedModel struct {
	url  string // base URL, ending in /v1
	fake *fakeopenai.Server

	forward sync.Mutex // one call in the fake at a time

	mu       sync.Mutex
	calls    map[int]int
	results  map[int][]string // the tool results the model was given, by job
	answers  map[int]bool     // jobs given their final answer
	mismatch string           // set when a forwarded call did not take its reply
}

// newScriptedModel starts a scripted model that stops when the test ends.
func newScriptedModel(t *testing.T) *scriptedModel {
	m := &scriptedModel{fake: fakeopenai.New(t), calls: map[int]int{}, results: map[int][]string{}, answers: map[int]bool{}}
	server := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(server.Close)
	t.Cleanup(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		require.Empty(t, m.mismatch, "the scripted model")
	})
	m.url = server.URL + "/v1"
	return m
}

// serve answers one model call after modelLatency.
func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	job, result, ok := readModelCall(body)
	if !ok {
		http.Error(w, "scripted model: no job in the last user message", http.StatusBadRequest)
		return
	}
	toolResult := result != ""
	m.mu.Lock()
	m.calls[job]++
	if toolResult {
		m.results[job] = append(m.results[job], result)
	}
	m.mu.Unlock()
	select {
	case <-time.After(modelLatency):
	case <-r.Context().Done():
		return
	}
	reply := fakeopenai.ToolCalls(fakeopenai.Call("run_shell",
		map[string]any{"command": "echo " + jobMark(job) + " >> effects.log"}))
	if toolResult {
		reply = fakeopenai.Text("recorded " + jobMark(job))
	}

	m.forward.Lock()
	m.fake.Enqueue(reply)
	// Not cancelled with the caller: the fake must take the reply.
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method,
		m.fake.URL+strings.TrimPrefix(r.URL.Path, "/v1"), bytes.NewReader(body))
	var resp *http.Response
	if err == nil {
		req.Header = r.Header.Clone()
		resp, err = http.DefaultClient.Do(req)
	}
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if pending := m.fake.Pending(); pending != 0 {
		m.mu.Lock()
		m.mismatch = fmt.Sprintf("job %d: %d replies left after forwarding (%v)", job, pending, err)
		m.mu.Unlock()
	}
	m.forward.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for key, values := range resp.Header {
		w.Header()[key] = values
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := w.Write(answer); err == nil && toolResult {
		m.mu.Lock()
		m.answers[job] = true
		m.mu.Unlock()
	}
}

// readModelCall reads the job of a Chat Completions request from its last
// user message, and the tool's result it carries, if any.
func readModelCall(body []byte) (job int, toolResult string, ok bool) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return 0, "", false
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case "user":
			job, ok = parseJobMark(string(msg.Content))
		case "tool":
			toolResult = cmp.Or(string(msg.Content), `""`)
		}
	}
	return job, toolResult, ok
}

// callsByJob returns the model calls made for each job.
func (m *scriptedModel) callsByJob() map[int]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	calls := make(map[int]int, len(m.calls))
	for job, n := range m.calls {
		calls[job] = n
	}
	return calls
}

// toolResults returns the tool results the model was given for a job.
func (m *scriptedModel) toolResults(job int) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.results[job])
}

// answered is how many jobs got their final answer.
func (m *scriptedModel) answered() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.answers)
}

// privateRedis starts a redis-server of the test's own, without
// persistence, and returns its address; it is killed when the test ends.
// Pausing it disturbs no other test. Without redis-server the test is
// skipped — or, in CI (CI=true), failed.
func privateRedis(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatalf("redis-server not found: %v; CI must run the fault-injection tests", err)
		}
		t.Skipf("SKIPPING: redis-server not found: %v; this test runs in CI", err)
	}
	host, port, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	log := &serverLog{}
	cmd := exec.Command(path, "--bind", host, "--port", port, "--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := net.JoinHostPort(host, port)
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	ok := poll(10*time.Second, 20*time.Millisecond, func() bool { return client.Ping(t.Context()).Err() == nil })
	require.True(t, ok, "redis-server does not answer at %s:\n%s", addr, log)
	return addr
}

// envInt is the integer in the environment variable name, or def when it is
// unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s must be an integer", name)
	require.Positive(t, n, "%s must be positive", name)
	return n
}
