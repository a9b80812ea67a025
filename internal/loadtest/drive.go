package loadtest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Result sums up a [Drive].
type Result struct {
	// Requests is the number of requests that succeeded.
	Requests int
	// Elapsed is the wall time from the first request to the last answer.
	Elapsed time.Duration
	// Latencies holds every successful request's duration.
	Latencies *Latencies
}

// PerSecond returns the successful requests per second of wall time.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Drive sends total requests from clients concurrent clients. Each client
// calls request with its number (0 ≤ client < clients) and the turn it is on
// (0, 1, 2, … for that client), and sends the next as soon as request
// returns. The first error stops every client and is returned.
func Drive(ctx context.Context, clients, total int, request func(ctx context.Context, client, turn int) error) (Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	result := Result{Latencies: &Latencies{}}
	var issued, done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for client := range clients {
		wg.Go(func() {
			for turn := 0; issued.Add(1) <= int64(total); turn++ {
				began := time.Now()
				if err := request(ctx, client, turn); err != nil {
					cancel(err)
					return
				}
				result.Latencies.Add(time.Since(began))
				done.Add(1)
			}
		})
	}
	wg.Wait()
	result.Elapsed = time.Since(start)
	result.Requests = int(done.Load())
	// The first failure, or the caller's cancellation, is the cause.
	return result, context.Cause(ctx)
}
