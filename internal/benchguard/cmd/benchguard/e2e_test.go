package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// probeBenchmark is a throwaway benchmark whose allocations per op are
// set by the PROBE_ALLOCS environment variable: each allocation is 64
// bytes that escape to the heap.
const probeBenchmark = `package probe

import (
	"os"
	"strconv"
	"testing"
)

var sink []byte

func BenchmarkProbe(b *testing.B) {
	allocs, err := strconv.Atoi(os.Getenv("PROBE_ALLOCS"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("size=64", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range allocs {
				sink = make([]byte, 64)
			}
		}
		b.ReportMetric(float64(allocs), "probes/op")
	})
}
`

// TestGuardFailsWhenABenchmarkAllocatesMore runs the guard the way CI
// does, on real benchmark output: a probe module is benchmarked with
// `go test -bench` to make the baseline (-update), then again with the
// same allocations (the guard passes) and with twice as many (it fails,
// naming the benchmark).
func TestGuardFailsWhenABenchmarkAllocatesMore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and benchmarks a throwaway module")
	}
	t.Parallel()
	goCommand, err := exec.LookPath("go")
	require.NoError(t, err, "the go command runs the probe benchmark")
	module := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(module, "go.mod"), []byte("module example.com/probe\n\ngo 1.24\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(module, "probe_test.go"), []byte(probeBenchmark), 0o644))

	benchmark := func(allocs int) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), goCommand, "test", "-run", "^$", "-bench", ".", "-benchmem",
			"-benchtime", "10x", "-count", "3", ".")
		cmd.Dir = module
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "PROBE_ALLOCS="+strconv.Itoa(allocs))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go test -bench on the probe:\n%s", out)
		return string(out)
	}
	baseline := filepath.Join(t.TempDir(), "bench-baseline.txt")

	got := invoke(benchmark(10), "-update", "-baseline", baseline)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Contains(t, got.stdout, "Wrote 3 result line(s)")

	got = invoke(benchmark(10), "-baseline", baseline)
	require.Equal(t, exitOK, got.code, "same allocations:\n%s%s", got.stdout, got.stderr)
	require.Regexp(t, `probe\.BenchmarkProbe/size=64\s+640\s+640\s+\+0\.0%\s+10\s+10\s+\+0\.0%\s+ok`, got.stdout)

	got = invoke(benchmark(20), "-baseline", baseline)
	require.Equal(t, exitFailure, got.code, "twice the allocations:\n%s%s", got.stdout, got.stderr)
	require.Regexp(t, `probe\.BenchmarkProbe/size=64\s+640\s+1280\s+\+100\.0%\s+10\s+20\s+\+100\.0%\s+REGRESSED`, got.stdout)
	require.Contains(t, got.stderr, "probe.BenchmarkProbe/size=64: allocs/op 10 → 20 (+100.0%, above +10.0%); B/op 640 → 1280")
}
