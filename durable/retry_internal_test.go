package durable

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestJitteredDelay: attempt n waits up to min(base·2^(n−1), 10·base),
// scaled by the random draw (full jitter).
func TestJitteredDelay(t *testing.T) {
	base := 30 * time.Second
	for _, c := range []struct {
		n       int
		u       float64
		want    time.Duration
		comment string
	}{
		{1, 0.5, 15 * time.Second, "half of base·2^0"},
		{2, 0.5, 30 * time.Second, "half of base·2^1"},
		{3, 1, 120 * time.Second, "base·2^2"},
		{4, 1, 240 * time.Second, "base·2^3"},
		{5, 1, 300 * time.Second, "capped at 10·base"},
		{60, 1, 300 * time.Second, "capped, no overflow"},
		{2, 0, 0, "the draw may be zero"},
	} {
		require.Equal(t, c.want, jitteredDelay(base, c.n, c.u), "attempt %d: %s", c.n, c.comment)
	}
	require.Zero(t, jitteredDelay(0, 3, 0.9), "no base, no wait")
}
