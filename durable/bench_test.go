package durable_test

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// benchQueue is a launched queue over a fresh database with one agent whose
// scripted model answers at once.
func benchQueue(b *testing.B, backend string) (*durable.Queue, storage.Store) {
	return benchQueueLaunched(b, backend, true)
}

// benchQueueLaunched is benchQueue, launched (executing the runs it
// accepts) or not (accepting only, as a replica that only serves the API
// would while others execute).
func benchQueueLaunched(b *testing.B, backend string, launch bool) (*durable.Queue, storage.Store) {
	b.Helper()
	store, dbURL, schema := openBackend(b, backend == "postgres")
	a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Store: store,
		Model: scripted.New([]scripted.Reply{scripted.Text("ok")}, scripted.Loop(), scripted.NoRecord())})
	require.NoError(b, err)
	q, err := durable.New(b.Context(), durable.Config{DatabaseURL: dbURL, Schema: schema, Store: store, Runners: []run.Runner{a},
		Events: eventlog.NewMemory(eventlog.MemoryConfig{}), ExecutorID: "bench", MaxQueueDepth: 1 << 20,
		PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(b, err)
	if launch {
		require.NoError(b, q.Launch())
	}
	b.Cleanup(func() { _ = q.Shutdown(5 * time.Second) })
	return q, store
}

var benchRun atomic.Int64

func benchSubmit(b *testing.B, q *durable.Queue, session string) string {
	id := fmt.Sprintf("bench-%d", benchRun.Add(1))
	accepted, err := q.Submit(b.Context(), durable.Submission{AgentID: "assistant",
		Input: &run.Input{InputContent: "go", RunID: id, SessionID: session}})
	if err != nil {
		b.Fatal(err)
	}
	return accepted.RunID
}

// BenchmarkAccept measures accepting background runs: the PENDING row and
// the enqueue, from 32 concurrent clients, each run in its own session. One
// op is one accepted run; runs/s is the acceptance rate. With executing=true
// the same process executes the runs it accepts, on the same cores; with
// executing=false it only accepts them.
func BenchmarkAccept(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, executing := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/executing=%t", backend, executing), func(b *testing.B) {
				benchAccept(b, backend, executing)
			})
		}
	}
}

// benchAccept is one BenchmarkAccept case.
func benchAccept(b *testing.B, backend string, executing bool) {
	q, store := benchQueueLaunched(b, backend, executing)
	b.SetParallelism(16) // 2 cores × 16 = 32 clients
	b.ReportAllocs()
	b.ResetTimer()
	started := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchSubmit(b, q, fmt.Sprintf("s-%d", benchRun.Load()))
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(started).Seconds(), "runs/s")
	b.StopTimer()
	_, stored, err := store.GetRuns(b.Context(), storage.RunQuery{Page: storage.Page{Limit: 1, Page: 1}})
	require.NoError(b, err)
	require.Equal(b, b.N, stored, "every accepted run has its row")
}

// BenchmarkEndToEnd measures background runs from acceptance to COMPLETED:
// b.N runs over 32 sessions, timed until the last one is stored complete.
func BenchmarkEndToEnd(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			q, store := benchQueue(b, backend)
			b.ResetTimer()
			started := time.Now()
			ids := make([]string, b.N)
			var wg sync.WaitGroup
			for i := range b.N {
				wg.Go(func() { ids[i] = benchSubmit(b, q, fmt.Sprintf("s-%d", i%32)) })
			}
			wg.Wait()
			poll := time.NewTicker(2 * time.Millisecond)
			defer poll.Stop()
			timeout := time.NewTimer(time.Minute + time.Duration(b.N)*100*time.Millisecond)
			defer timeout.Stop()
			for _, id := range ids {
				for {
					rec, err := store.GetRun(b.Context(), id, "")
					if err == nil && rec.Run.Status == run.StatusCompleted {
						break
					}
					if err == nil && rec.Run.Status.Terminal() {
						b.Fatalf("run %s ended %s", id, rec.Run.Status)
					}
					select {
					case <-poll.C:
					case <-timeout.C:
						b.Fatalf("run %s did not complete", id)
					}
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(started).Seconds(), "runs/s")
		})
	}
}
