package loadtest

import (
	"slices"
	"sync"
	"time"
)

// Latencies collects request durations. It is safe for concurrent use; the
// zero value is ready.
type Latencies struct {
	mu        sync.Mutex
	durations []time.Duration
	sorted    bool
}

// Add records one duration.
func (l *Latencies) Add(d time.Duration) {
	l.mu.Lock()
	l.durations = append(l.durations, d)
	l.sorted = false
	l.mu.Unlock()
}

// Len returns the number of durations recorded.
func (l *Latencies) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.durations)
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of the durations recorded, by
// the nearest-rank method: the smallest duration at least a fraction q of
// them do not exceed. It returns 0 when nothing was recorded.
func (l *Latencies) Quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.durations) == 0 {
		return 0
	}
	if !l.sorted {
		slices.Sort(l.durations)
		l.sorted = true
	}
	rank := int(q*float64(len(l.durations))+0.999999999) - 1 // ceil(q·n), 1-based
	return l.durations[min(max(rank, 0), len(l.durations)-1)]
}

// Milliseconds converts a duration to fractional milliseconds, the unit the
// benchmarks report latencies in.
func Milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
