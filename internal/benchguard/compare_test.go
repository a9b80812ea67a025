package benchguard_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/benchguard"
)

// bench returns a benchmark of package example.com/p with the given B/op
// and allocs/op.
func bench(name string, bytesPerOp, allocsPerOp float64) benchguard.Benchmark {
	return benchguard.Benchmark{Pkg: "example.com/p", Name: name, Runs: 1,
		Metrics: map[string]float64{"ns/op": 1000, benchguard.UnitBytes: bytesPerOp, benchguard.UnitAllocs: allocsPerOp}}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		old, now benchguard.Benchmark
		cfg      benchguard.Config
		want     benchguard.Status
	}{
		{"same", bench("A", 5000, 100), bench("A", 5000, 100), benchguard.Config{}, benchguard.StatusSteady},
		{"allocs up 20% fails", bench("A", 5000, 100), bench("A", 5000, 120), benchguard.Config{}, benchguard.StatusRegressed},
		{"allocs up 11% fails", bench("A", 5000, 100), bench("A", 5000, 111), benchguard.Config{}, benchguard.StatusRegressed},
		{"allocs up exactly 10% passes", bench("A", 5000, 100), bench("A", 5000, 110), benchguard.Config{}, benchguard.StatusSteady},
		{"allocs up 5% passes", bench("A", 5000, 100), bench("A", 5000, 105), benchguard.Config{}, benchguard.StatusSteady},
		{"allocs 1 to 2 is within the slack", bench("A", 5000, 1), bench("A", 5000, 2), benchguard.Config{}, benchguard.StatusSteady},
		{"allocs 10 to 12 is within the slack", bench("A", 5000, 10), bench("A", 5000, 12), benchguard.Config{}, benchguard.StatusSteady},
		{"allocs 10 to 13 fails", bench("A", 5000, 10), bench("A", 5000, 13), benchguard.Config{}, benchguard.StatusRegressed},
		{"allocs from 0 fails past the slack", bench("A", 5000, 0), bench("A", 5000, 3), benchguard.Config{}, benchguard.StatusRegressed},
		{"B/op up 20% fails", bench("A", 5000, 100), bench("A", 6000, 100), benchguard.Config{}, benchguard.StatusRegressed},
		{"B/op up 8% passes", bench("A", 5000, 100), bench("A", 5400, 100), benchguard.Config{}, benchguard.StatusSteady},
		{"B/op 100 to 300 is within the slack", bench("A", 100, 3), bench("A", 300, 3), benchguard.Config{}, benchguard.StatusSteady},
		{"B/op 100 to 400 fails", bench("A", 100, 3), bench("A", 400, 3), benchguard.Config{}, benchguard.StatusRegressed},
		{"allocs down 20% is an improvement", bench("A", 5000, 100), bench("A", 5000, 80), benchguard.Config{}, benchguard.StatusImproved},
		{"B/op down 50% is an improvement", bench("A", 5000, 100), bench("A", 2500, 100), benchguard.Config{}, benchguard.StatusImproved},
		{"a drop within the slack is steady", bench("A", 5000, 2), bench("A", 5000, 1), benchguard.Config{}, benchguard.StatusSteady},
		{"a rise beats an improvement", bench("A", 5000, 100), bench("A", 9000, 50), benchguard.Config{}, benchguard.StatusRegressed},
		{"a looser threshold lets 20% pass", bench("A", 5000, 100), bench("A", 5000, 120), benchguard.Config{Threshold: 0.25}, benchguard.StatusSteady},
		{"a larger slack lets 3 allocations pass", bench("A", 5000, 10), bench("A", 5000, 13), benchguard.Config{AllocsSlack: 5}, benchguard.StatusSteady},
		{"a smaller slack fails on 1 allocation", bench("A", 5000, 5), bench("A", 5000, 6), benchguard.Config{AllocsSlack: 0.5}, benchguard.StatusRegressed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			report, err := benchguard.Compare([]benchguard.Benchmark{tc.old}, []benchguard.Benchmark{tc.now}, tc.cfg)
			require.NoError(t, err)
			require.Len(t, report.Comparisons, 1)
			got := report.Comparisons[0]
			require.Equal(t, tc.want, got.Status, got.Reason)
			if tc.want.Failed() {
				require.Error(t, report.Err())
				require.Equal(t, []benchguard.Comparison{got}, report.Failures())
			} else {
				require.NoError(t, report.Err())
			}
		})
	}
}

func TestCompareNamesTheRiseThatFailed(t *testing.T) {
	t.Parallel()
	report, err := benchguard.Compare(
		[]benchguard.Benchmark{bench("BenchmarkRun", 5560, 41), bench("BenchmarkOther", 100, 1)},
		[]benchguard.Benchmark{bench("BenchmarkRun", 5560, 50), bench("BenchmarkOther", 100, 1)}, benchguard.Config{})
	require.NoError(t, err)
	var regression *benchguard.RegressionError
	require.ErrorAs(t, report.Err(), &regression)
	require.Len(t, regression.Failures, 1)
	require.Equal(t, "BenchmarkRun", regression.Failures[0].Name)
	require.Equal(t, "allocs/op 41 → 50 (+22.0%, above +10.0%)", regression.Failures[0].Reason)
	require.Contains(t, regression.Error(), "p.BenchmarkRun: allocs/op 41 → 50")
	require.NotContains(t, regression.Error(), "BenchmarkOther")
	change := regression.Failures[0].Allocs
	require.Equal(t, float64(9), change.Delta())
	require.InDelta(t, 9.0/41, change.Ratio(), 1e-12)
}

func TestCompareFailsOnABenchmarkTheRunLacks(t *testing.T) {
	t.Parallel()
	report, err := benchguard.Compare(
		[]benchguard.Benchmark{bench("A", 100, 1), bench("Gone", 100, 1)},
		[]benchguard.Benchmark{bench("A", 100, 1)}, benchguard.Config{})
	require.NoError(t, err)
	var regression *benchguard.RegressionError
	require.ErrorAs(t, report.Err(), &regression)
	require.Len(t, regression.Failures, 1)
	require.Equal(t, "Gone", regression.Failures[0].Name)
	require.Equal(t, benchguard.StatusMissing, regression.Failures[0].Status)
}

func TestCompareFailsOnARunWithoutAllocations(t *testing.T) {
	t.Parallel()
	noMem := benchguard.Benchmark{Pkg: "example.com/p", Name: "A", Runs: 1, Metrics: map[string]float64{"ns/op": 10}}
	for name, pair := range map[string][2]benchguard.Benchmark{
		"current without -benchmem":  {bench("A", 100, 1), noMem},
		"baseline without -benchmem": {noMem, bench("A", 100, 1)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			report, err := benchguard.Compare(pair[:1], pair[1:], benchguard.Config{})
			require.NoError(t, err)
			require.Equal(t, benchguard.StatusMissing, report.Comparisons[0].Status)
			require.Contains(t, report.Comparisons[0].Reason, "-benchmem")
			require.Error(t, report.Err())
		})
	}
}

func TestCompareReportsANewBenchmarkWithoutFailing(t *testing.T) {
	t.Parallel()
	report, err := benchguard.Compare(
		[]benchguard.Benchmark{bench("A", 100, 1)},
		[]benchguard.Benchmark{bench("Fresh", 100, 1), bench("A", 100, 1)}, benchguard.Config{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	require.Len(t, report.Comparisons, 2)
	require.Equal(t, "A", report.Comparisons[0].Name)
	require.Equal(t, "Fresh", report.Comparisons[1].Name)
	require.Equal(t, benchguard.StatusNew, report.Comparisons[1].Status)
}

func TestCompareAppliesDefaultsAndRejectsNegativeLimits(t *testing.T) {
	t.Parallel()
	report, err := benchguard.Compare(nil, nil, benchguard.Config{})
	require.NoError(t, err)
	require.Equal(t, benchguard.Config{Threshold: 0.10, AllocsSlack: 2, BytesSlack: 256}, report.Config)
	_, err = benchguard.Compare(nil, nil, benchguard.Config{Threshold: -0.1})
	require.Error(t, err)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	line := func(bytesPerOp, allocs int) string {
		return fmt.Sprintf("BenchmarkRunSingleTurn-2\t1000\t8123 ns/op\t%d B/op\t%d allocs/op\n", bytesPerOp, allocs)
	}
	baseline := "pkg: github.com/agnogo/agnogo/agent\n" + line(5560, 41) + line(5560, 41) + line(5560, 41)

	report, err := benchguard.Check(strings.NewReader(baseline),
		strings.NewReader("pkg: github.com/agnogo/agnogo/agent\n"+line(5600, 43)+line(5560, 60)+line(5500, 42)), benchguard.Config{})
	require.NoError(t, err, "one noisy run of three is outvoted by the median")
	require.Equal(t, float64(43), report.Comparisons[0].Allocs.New)

	report, err = benchguard.Check(strings.NewReader(baseline),
		strings.NewReader("pkg: github.com/agnogo/agnogo/agent\n"+line(5560, 47)+line(5560, 48)+line(5560, 46)), benchguard.Config{})
	var regression *benchguard.RegressionError
	require.ErrorAs(t, err, &regression)
	require.Equal(t, benchguard.StatusRegressed, report.Comparisons[0].Status)

	_, err = benchguard.Check(strings.NewReader("goos: linux\n"), strings.NewReader(baseline), benchguard.Config{})
	require.ErrorIs(t, err, benchguard.ErrNoBenchmarks)
}

func TestWriteTable(t *testing.T) {
	t.Parallel()
	report, err := benchguard.Compare(
		[]benchguard.Benchmark{bench("BenchmarkUp", 5000, 100), bench("BenchmarkDown", 5000, 100), bench("BenchmarkGone", 10, 1)},
		[]benchguard.Benchmark{bench("BenchmarkUp", 5000, 130), bench("BenchmarkDown", 5000, 50), bench("BenchmarkNew", 7.5, 1)},
		benchguard.Config{})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, report.WriteTable(&out))
	lines := strings.Split(out.String(), "\n")
	require.Regexp(t, `^benchmark\s+B/op base\s+B/op now\s+Δ\s+allocs/op base\s+allocs/op now\s+Δ\s+verdict$`, lines[0])
	require.Regexp(t, `^p\.BenchmarkUp\s+5000\s+5000\s+\+0\.0%\s+100\s+130\s+\+30\.0%\s+REGRESSED$`, lines[1])
	require.Regexp(t, `^p\.BenchmarkDown\s+5000\s+5000\s+\+0\.0%\s+100\s+50\s+-50\.0%\s+improved$`, lines[2])
	require.Regexp(t, `^p\.BenchmarkGone\s+10\s+-\s+1\s+-\s+MISSING$`, lines[3])
	require.Regexp(t, `^p\.BenchmarkNew\s+-\s+7\.5\s+-\s+1\s+new$`, lines[4])
	require.Contains(t, out.String(), "REGRESSED p.BenchmarkUp: allocs/op 100 → 130")
	require.Contains(t, out.String(), "MISSING p.BenchmarkGone: in the baseline but not in the current run")
	require.Contains(t, out.String(), "4 benchmark(s): 2 failed, 1 improved, 1 new")
}
