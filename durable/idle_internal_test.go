package durable

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWaitIdle: a drain waits for the runs doing work here and returns as
// soon as the last one stops, or gives up at its timeout.
func TestWaitIdle(t *testing.T) {
	t.Parallel()
	q := &Queue{running: map[string]*journal{}}
	require.True(t, q.waitIdle(0), "nothing runs")

	require.True(t, q.begin())
	q.resume() // a parked run's continuation
	require.False(t, q.waitIdle(10*time.Millisecond), "two runs work: the wait times out")

	idle := make(chan bool)
	go func() { idle <- q.waitIdle(time.Minute) }()
	q.end()
	select {
	case <-idle:
		t.Fatal("the wait ended while a run still works")
	default:
	}
	q.end()
	require.True(t, <-idle, "the wait ends when the last run stops")
	require.True(t, q.waitIdle(0))

	q.mu.Lock()
	q.draining = true
	q.mu.Unlock()
	require.False(t, q.begin(), "no run starts while draining")
	require.True(t, q.waitIdle(0))
}
