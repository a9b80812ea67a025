package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// output returns go test output of one benchmark run three times with the
// given allocs/op.
func output(allocs int) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/agnogo/agnogo/agent\ncpu: AMD EPYC\n")
	for range 3 {
		fmt.Fprintf(&b, "BenchmarkRunSingleTurn-2\t200\t8123 ns/op\t5560 B/op\t%d allocs/op\n", allocs)
	}
	b.WriteString("PASS\nok  \tgithub.com/agnogo/agnogo/agent\t1.2s\n")
	return b.String()
}

// invocation is one run of the command.
type invocation struct {
	code           int
	stdout, stderr string
}

func invoke(stdin string, args ...string) invocation {
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	return invocation{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestRunPassesASteadyRun(t *testing.T) {
	t.Parallel()
	baseline := writeFile(t, "baseline.txt", output(41))
	got := invoke(output(42), "-baseline", baseline)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Regexp(t, `agent\.BenchmarkRunSingleTurn\s+5560\s+5560\s+\+0\.0%\s+41\s+42\s+\+2\.4%\s+ok`, got.stdout)
	require.Empty(t, got.stderr)
}

func TestRunFailsARiseOfAllocations(t *testing.T) {
	t.Parallel()
	baseline := writeFile(t, "baseline.txt", output(41))
	current := writeFile(t, "current.txt", output(50))
	got := invoke("", "-baseline", baseline, "-current", current)
	require.Equal(t, exitFailure, got.code)
	require.Regexp(t, `agent\.BenchmarkRunSingleTurn\s+.*REGRESSED`, got.stdout)
	require.Contains(t, got.stderr, "agent.BenchmarkRunSingleTurn: allocs/op 41 → 50 (+22.0%, above +10.0%)")

	got = invoke("", "-baseline", baseline, "-current", current, "-threshold", "0.25")
	require.Equal(t, exitOK, got.code, "a looser threshold lets +22%% pass: %s", got.stderr)
}

func TestRunFailsAMissingBenchmark(t *testing.T) {
	t.Parallel()
	baseline := writeFile(t, "baseline.txt", output(41)+"BenchmarkRunToolCall-2\t200\t19085 ns/op\t11934 B/op\t142 allocs/op\n")
	got := invoke(output(41), "-baseline", baseline)
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "agent.BenchmarkRunToolCall: in the baseline but not in the current run")
}

func TestRunSuggestsRefreshingAfterAnImprovement(t *testing.T) {
	t.Parallel()
	baseline := writeFile(t, "baseline.txt", output(41))
	got := invoke(output(30), "-baseline", baseline)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Contains(t, got.stdout, "improved")
	require.Contains(t, got.stdout, "Allocations fell: refresh "+baseline)
}

func TestRunUpdateWritesTheBaseline(t *testing.T) {
	t.Parallel()
	baseline := filepath.Join(t.TempDir(), "baseline.txt")
	got := invoke(output(50), "-update", "-baseline", baseline)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Contains(t, got.stdout, "Wrote 3 result line(s) to "+baseline)
	written, err := os.ReadFile(baseline)
	require.NoError(t, err)
	require.Equal(t, strings.TrimSuffix(output(50), "PASS\nok  \tgithub.com/agnogo/agnogo/agent\t1.2s\n"), string(written))

	// The new baseline is what later runs are held to, and the update
	// shows how the run compares with the one it replaces.
	require.Equal(t, exitOK, invoke(output(50), "-baseline", baseline).code)
	require.Equal(t, exitFailure, invoke(output(60), "-baseline", baseline).code)
	got = invoke(output(60), "-update", "-baseline", baseline)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Contains(t, got.stdout, "Against the baseline being replaced:")
	require.Contains(t, got.stdout, "REGRESSED")
	require.Equal(t, exitOK, invoke(output(60), "-baseline", baseline).code)
}

func TestRunUpdateRefusesARunWithoutResults(t *testing.T) {
	t.Parallel()
	baseline := writeFile(t, "baseline.txt", output(41))
	got := invoke("FAIL\tgithub.com/agnogo/agnogo/agent [build failed]\n", "-update", "-baseline", baseline)
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "left as it was")
	kept, err := os.ReadFile(baseline)
	require.NoError(t, err)
	require.Equal(t, output(41), string(kept))
}

func TestRunFailsWithoutABaseline(t *testing.T) {
	t.Parallel()
	got := invoke(output(41), "-baseline", filepath.Join(t.TempDir(), "absent.txt"))
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "create it with -update")

	got = invoke(output(41), "-baseline", writeFile(t, "empty.txt", ""))
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "no benchmark results")
}

func TestRunRejectsABadCommandLine(t *testing.T) {
	t.Parallel()
	require.Equal(t, exitUsage, invoke("").code)
	require.Equal(t, exitUsage, invoke("", "-baseline", "b.txt", "extra").code)
	require.Equal(t, exitUsage, invoke("", "-no-such-flag").code)
	require.Equal(t, exitUsage, invoke("", "-baseline", "b.txt", "-threshold", "-1").code)
}
