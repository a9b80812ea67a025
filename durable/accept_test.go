package durable_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/internal/gatedmodel"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
)

// swappedModel answers with whichever model it holds now.
type swappedModel struct {
	m atomic.Pointer[gatedmodel.Model]
}

func (s *swappedModel) Info() model.Info { return s.m.Load().Info() }

func (s *swappedModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	return s.m.Load().Invoke(ctx, req)
}

func (s *swappedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return s.m.Load().Stream(ctx, req)
}

// The Postgres store shares its transactions with the queue.
var _ durable.TxStore = (*postgres.Store)(nil)

// engineSQL runs statements on the database of a Postgres fixture.
func engineSQL(t *testing.T, f *fixture, statements ...string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), f.dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	for _, statement := range statements {
		_, err := conn.Exec(t.Context(), statement)
		require.NoError(t, err, statement)
	}
}

// workflows counts the engine's workflows with the given ids, or its waiting
// ones (ENQUEUED or PENDING) when ids is empty.
func workflows(t *testing.T, f *fixture, ids ...string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), f.dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	query := fmt.Sprintf(`SELECT count(*) FROM %q.workflow_status WHERE workflow_uuid = ANY($1)`, f.schema)
	args := []any{ids}
	if len(ids) == 0 {
		query = fmt.Sprintf(`SELECT count(*) FROM %q.workflow_status WHERE status IN ('ENQUEUED', 'PENDING')`, f.schema)
		args = nil
	}
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), query, args...).Scan(&n))
	return n
}

// TestAcceptanceIsAtomic makes the enqueue fail, at the insert and at the
// commit: on Postgres the submission then leaves no run row, no new
// session and no workflow behind.
func TestAcceptanceIsAtomic(t *testing.T) {
	t.Parallel()
	t.Run("postgres", testAcceptanceIsAtomic)
}

func testAcceptanceIsAtomic(t *testing.T) {
	f := newFixture(t, []scripted.Reply{scripted.Text("accepted after all")}, nil, nil)
	engineSQL(t, f,
		fmt.Sprintf(`CREATE FUNCTION %q.fail_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'injected enqueue failure for %%', NEW.workflow_uuid; END $$`, f.schema),
		fmt.Sprintf(`CREATE TRIGGER fail_enqueue BEFORE INSERT ON %[1]q.workflow_status
FOR EACH ROW WHEN (NEW.workflow_uuid = 'doomed-at-insert') EXECUTE FUNCTION %[1]q.fail_enqueue()`, f.schema),
		fmt.Sprintf(`CREATE CONSTRAINT TRIGGER fail_commit AFTER INSERT ON %[1]q.workflow_status DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (NEW.workflow_uuid = 'doomed-at-commit') EXECUTE FUNCTION %[1]q.fail_enqueue()`, f.schema))

	for _, tc := range []struct {
		runID string
		// registered: the commit failed after the run was made known to
		// the event log, which then records it ERROR.
		registered bool
	}{
		{runID: "doomed-at-insert"},
		{runID: "doomed-at-commit", registered: true},
	} {
		session := "session-of-" + tc.runID
		_, err := f.queue.Submit(t.Context(), durable.Submission{AgentID: "assistant",
			Input: &run.Input{InputContent: "hi", RunID: tc.runID, SessionID: session}})
		require.ErrorContains(t, err, "injected enqueue failure for "+tc.runID)

		_, err = f.store.GetRun(t.Context(), tc.runID, "")
		require.ErrorIs(t, err, storage.ErrNotFound, "no PENDING row without its workflow")
		_, err = f.store.GetSession(t.Context(), session, storage.GetSessionOptions{})
		require.ErrorIs(t, err, storage.ErrNotFound, "the new session is not created either")
		require.Zero(t, workflows(t, f, tc.runID))
		info, known := f.events.Lookup(tc.runID)
		require.Equal(t, tc.registered, known)
		if known {
			require.Equal(t, run.StatusError, info.Status)
		}
	}

	accepted, err := f.submit(t, "s1", "hello", "")
	require.NoError(t, err)
	require.Equal(t, "accepted after all", f.wait(t, accepted.RunID).Content)
}

// TestQueueDepthIsExactUnderABurst sends many more concurrent submissions
// than MaxQueueDepth while no run can end. On Postgres exactly
// MaxQueueDepth are accepted: the limit is never overshot (nor refused
// below). On SQLite, where the depth is checked outside the write,
// concurrent submissions may overshoot it by their number; that path is
// not tested for exactness.
func TestQueueDepthIsExactUnderABurst(t *testing.T) {
	t.Parallel()
	t.Run("postgres", testQueueDepthIsExactUnderABurst)
}

func testQueueDepthIsExactUnderABurst(t *testing.T) {
	const maxDepth, burst = 10, 48
	gate := gatedmodel.New()
	t.Cleanup(gate.Open)
	// Each burst's runs wait on a closed gate of their own, so no run ends
	// (and frees a place in the queue) while a burst is being accepted.
	current := &swappedModel{}
	current.m.Store(gate)
	f := &fixture{events: eventlog.NewMemory(eventlog.MemoryConfig{})}
	f.store, f.dbURL, f.schema = openBackend(t, true)
	var err error
	f.agent, err = agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: current, Store: f.store})
	require.NoError(t, err)
	f.queue = f.start(t, "exec-1", func(c *durable.Config) { c.MaxQueueDepth = maxDepth; c.MaxConcurrency = 2 })

	submitBurst := func(prefix string) (accepted []string, full int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		var refusals []error
		for i := range burst {
			wg.Go(func() {
				a, err := f.submit(t, fmt.Sprintf("%s-%d", prefix, i), "hi", "")
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					refusals = append(refusals, err)
					return
				}
				accepted = append(accepted, a.RunID)
			})
		}
		wg.Wait()
		for _, err := range refusals {
			require.ErrorIs(t, err, durable.ErrQueueFull)
			require.ErrorContains(t, err, "runs are waiting (max_queue_depth)")
		}
		return accepted, len(refusals)
	}

	accepted, full := submitBurst("first")
	require.Len(t, accepted, maxDepth, "exactly max_queue_depth accepted")
	require.Equal(t, burst-maxDepth, full)
	require.Equal(t, maxDepth, workflows(t, f))
	_, stored, err := f.store.GetRuns(t.Context(), storage.RunQuery{})
	require.NoError(t, err)
	require.Equal(t, maxDepth, stored, "a refused submission writes no row")

	gate.Open()
	for _, id := range accepted {
		require.Equal(t, run.StatusCompleted, f.wait(t, id).Status)
	}
	require.Eventually(t, func() bool { return workflows(t, f) == 0 }, 30*time.Second, 20*time.Millisecond)

	second := gatedmodel.New()
	t.Cleanup(second.Open)
	current.m.Store(second)
	again, full := submitBurst("second")
	require.Len(t, again, maxDepth, "the emptied queue takes max_queue_depth runs again")
	require.Equal(t, burst-maxDepth, full)
}

// TestQueueDepthHoldsWhileRunsEnd submits from many clients at once while
// runs end, so the depth bound is recounted with acceptances in flight: a
// sampler never sees more than MaxQueueDepth runs waiting.
func TestQueueDepthHoldsWhileRunsEnd(t *testing.T) {
	t.Parallel()
	t.Run("postgres", testQueueDepthHoldsWhileRunsEnd)
}

func testQueueDepthHoldsWhileRunsEnd(t *testing.T) {
	const maxDepth, clients, perClient = 4, 12, 8
	f := &fixture{events: eventlog.NewMemory(eventlog.MemoryConfig{})}
	f.store, f.dbURL, f.schema = openBackend(t, true)
	var err error
	f.agent, err = agent.New(agent.Config{ID: "assistant", Name: "Assistant", Store: f.store,
		Model: scripted.New([]scripted.Reply{scripted.Text("done")}, scripted.Loop(), scripted.NoRecord())})
	require.NoError(t, err)
	f.queue = f.start(t, "exec-1", func(c *durable.Config) { c.MaxQueueDepth, c.MaxConcurrency = maxDepth, 2 })
	conn, err := pgx.Connect(t.Context(), f.dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	count := fmt.Sprintf(`SELECT count(*) FROM %q.workflow_status WHERE status IN ('ENQUEUED', 'PENDING')`, f.schema)

	stop := make(chan struct{})
	sampled := make(chan int)
	go func() {
		most := 0
		defer func() { sampled <- most }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int
			if err := conn.QueryRow(context.Background(), count).Scan(&n); err != nil {
				return
			}
			most = max(most, n)
		}
	}()

	var accepted, full atomic.Int32
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				_, err := f.submit(t, fmt.Sprintf("c%d-%d", c, i), "hi", "")
				switch {
				case err == nil:
					accepted.Add(1)
				case errors.Is(err, durable.ErrQueueFull):
					full.Add(1)
				default:
					t.Errorf("submit: %v", err)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	require.LessOrEqual(t, <-sampled, maxDepth, "never more than max_queue_depth runs waiting")
	require.GreaterOrEqual(t, int(accepted.Load()), maxDepth)
	require.Equal(t, int32(clients*perClient), accepted.Load()+full.Load())

	// Runs that ended make room again.
	require.Eventually(t, func() bool {
		var n int
		return conn.QueryRow(t.Context(), count).Scan(&n) == nil && n == 0
	}, 30*time.Second, 20*time.Millisecond, "the accepted runs finish")
	for i := range maxDepth {
		_, err := f.submit(t, fmt.Sprintf("after-%d", i), "hi", "")
		require.NoError(t, err, "room again after the queue drained")
	}
}
