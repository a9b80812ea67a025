package loadtest_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/loadtest"
)

func TestQuantileIsTheNearestRank(t *testing.T) {
	t.Parallel()
	var latencies loadtest.Latencies
	require.Zero(t, latencies.Quantile(0.5), "nothing recorded")
	for _, ms := range []int{7, 1, 10, 3, 5, 2, 9, 4, 8, 6} { // 1..10 ms, shuffled
		latencies.Add(time.Duration(ms) * time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0, 1 * time.Millisecond},
		{0.1, 1 * time.Millisecond},
		{0.5, 5 * time.Millisecond},
		{0.51, 6 * time.Millisecond},
		{0.99, 10 * time.Millisecond},
		{1, 10 * time.Millisecond},
	} {
		require.Equal(t, tc.want, latencies.Quantile(tc.q), "q=%v", tc.q)
	}
	require.Equal(t, 10, latencies.Len())
}

func TestDriveSendsEveryRequestFromEachClient(t *testing.T) {
	t.Parallel()
	const clients, total = 4, 103
	var mu sync.Mutex
	turns := make([][]int, clients)
	result, err := loadtest.Drive(t.Context(), clients, total, func(_ context.Context, client, turn int) error {
		mu.Lock()
		defer mu.Unlock()
		turns[client] = append(turns[client], turn)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, total, result.Requests)
	require.Equal(t, total, result.Latencies.Len())
	require.Positive(t, result.PerSecond())
	sent := 0
	for client, got := range turns {
		for turn, value := range got {
			require.Equal(t, turn, value, "client %d numbers its turns 0, 1, 2, …", client)
		}
		sent += len(got)
	}
	require.Equal(t, total, sent)
}

func TestDriveStopsAtTheFirstError(t *testing.T) {
	t.Parallel()
	failure := errors.New("the server answered 500")
	var calls atomic.Int64
	result, err := loadtest.Drive(t.Context(), 3, 1000, func(ctx context.Context, _, _ int) error {
		if calls.Add(1) == 10 {
			return failure
		}
		return ctx.Err()
	})
	require.ErrorIs(t, err, failure)
	require.Less(t, result.Requests, 1000)
}

func TestReadMemoryOfThisProcess(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	memory, err := loadtest.ReadMemory(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, memory.RSS)
	require.GreaterOrEqual(t, memory.Peak, memory.RSS, "the high-water mark is never below the current size")
	_, err = loadtest.ReadMemory(-1)
	require.Error(t, err)
}
