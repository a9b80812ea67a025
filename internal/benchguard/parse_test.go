package benchguard_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/benchguard"
)

// agentOutput is `go test -bench -benchmem -count 3` output of two
// packages as the go command prints it, with a benchmark's request log
// splitting one result line (the name first, the figures later).
const agentOutput = `goos: linux
goarch: amd64
pkg: github.com/agnogo/agnogo/agent
cpu: AMD EPYC
BenchmarkRunSingleTurn-2    	     200	     11645 ns/op	    6411 B/op	      49 allocs/op
BenchmarkRunSingleTurn-2    	     200	      8931 ns/op	    6382 B/op	      50 allocs/op
BenchmarkRunSingleTurn-2    	     200	      8162 ns/op	    6390 B/op	      48 allocs/op
PASS
ok  	github.com/agnogo/agnogo/agent	32.765s
goos: linux
goarch: amd64
pkg: github.com/agnogo/agnogo/agentos
cpu: AMD EPYC
BenchmarkServerRuns/store=sqlite/session=new/clients=1-2         	     100	   3524828 ns/op	         3.111 p50-ms	        10.43 p99-ms	       283.7 runs/s	   75511 B/op	    1211 allocs/op
BenchmarkServerRuns/store=sqlite/session=new/clients=32-2         	2026/12/03 04:03:14 INFO request method=POST path=/agents/assistant/runs status=200
2026/12/03 04:03:14 INFO request method=POST path=/agents/assistant/runs status=200 duration_s=0.004365531
     100	   1126155 ns/op	   81945 B/op	        27.16 p50-ms	    1206 allocs/op	       888.0 runs/s
PASS
ok  	github.com/agnogo/agnogo/agentos	4.276s
`

func TestParse(t *testing.T) {
	t.Parallel()
	got, err := benchguard.Parse(strings.NewReader(agentOutput))
	require.NoError(t, err)
	require.Equal(t, []benchguard.Benchmark{
		{Pkg: "github.com/agnogo/agnogo/agent", Name: "BenchmarkRunSingleTurn", Runs: 3,
			Metrics: map[string]float64{"ns/op": 8931, "B/op": 6390, "allocs/op": 49}},
		{Pkg: "github.com/agnogo/agnogo/agentos", Name: "BenchmarkServerRuns/store=sqlite/session=new/clients=1", Runs: 1,
			Metrics: map[string]float64{"ns/op": 3524828, "p50-ms": 3.111, "p99-ms": 10.43, "runs/s": 283.7, "B/op": 75511, "allocs/op": 1211}},
		{Pkg: "github.com/agnogo/agnogo/agentos", Name: "BenchmarkServerRuns/store=sqlite/session=new/clients=32", Runs: 1,
			Metrics: map[string]float64{"ns/op": 1126155, "p50-ms": 27.16, "runs/s": 888, "B/op": 81945, "allocs/op": 1206}},
	}, got)
	require.Equal(t, "agent.BenchmarkRunSingleTurn", got[0].Label())
}

func TestParseMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo(t *testing.T) {
	t.Parallel()
	got, err := benchguard.Parse(strings.NewReader(`BenchmarkA-4	10	100 B/op	1 allocs/op
BenchmarkA-4	10	400 B/op	2 allocs/op
BenchmarkA-4	10	200 B/op	9 allocs/op
BenchmarkA-4	10	300 B/op	3 allocs/op
`))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "BenchmarkA", got[0].Name)
	require.Empty(t, got[0].Pkg)
	require.Equal(t, 4, got[0].Runs)
	require.Equal(t, map[string]float64{"B/op": 250, "allocs/op": 2.5}, got[0].Metrics)
}

func TestParseKeysByNameWithoutTheProcsSuffix(t *testing.T) {
	t.Parallel()
	// The baseline came from a 2-core machine, the run from GOMAXPROCS=1
	// (no suffix) and from an 8-core one: the same benchmarks all the same.
	baseline := "pkg: example.com/p\nBenchmarkA/n=10-2\t10\t100 B/op\t10 allocs/op\nBenchmarkB-2\t10\t100 B/op\t10 allocs/op\n"
	current := "pkg: example.com/p\nBenchmarkA/n=10\t10\t100 B/op\t10 allocs/op\nBenchmarkB-8\t10\t100 B/op\t10 allocs/op\n"
	report, err := benchguard.Check(strings.NewReader(baseline), strings.NewReader(current), benchguard.Config{})
	require.NoError(t, err)
	require.Len(t, report.Comparisons, 2)
	require.Equal(t, "BenchmarkA/n=10", report.Comparisons[0].Name)
	for _, c := range report.Comparisons {
		require.Equal(t, benchguard.StatusSteady, c.Status, c.Name)
	}
}

func TestParseKeepsSameNamedBenchmarksOfTwoPackagesApart(t *testing.T) {
	t.Parallel()
	got, err := benchguard.Parse(strings.NewReader(`pkg: example.com/sqlite
BenchmarkSave-2	10	100 B/op	1 allocs/op
pkg: example.com/postgres
BenchmarkSave-2	10	900 B/op	9 allocs/op
`))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "sqlite.BenchmarkSave", got[0].Label())
	require.Equal(t, float64(1), got[0].Metrics["allocs/op"])
	require.Equal(t, "postgres.BenchmarkSave", got[1].Label())
	require.Equal(t, float64(9), got[1].Metrics["allocs/op"])
}

func TestParseSkipsWhatIsNotAResult(t *testing.T) {
	t.Parallel()
	got, err := benchguard.Parse(strings.NewReader(`=== RUN   TestX
BenchmarkParent
BenchmarkLogged-2   	some words 12 of log
--- FAIL: BenchmarkBroken-2
    bench_test.go:12: broken
Benchmark 3 odd
FAIL
`))
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestWriteBaselineKeepsHeadersAndResultsOnly(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	n, err := benchguard.WriteBaseline(&out, strings.NewReader(agentOutput))
	require.NoError(t, err)
	require.Equal(t, 5, n)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 13) // 2 × 4 header lines, 5 results
	for _, line := range lines {
		require.Regexp(t, `^(goos|goarch|pkg|cpu): |^Benchmark\S+\s+[0-9]+\s`, line)
	}
	// The split result is one line again, and the baseline reads back as
	// the run it was saved from.
	require.Contains(t, out.String(), "BenchmarkServerRuns/store=sqlite/session=new/clients=32-2\t100\t   1126155 ns/op")
	fromRun, err := benchguard.Parse(strings.NewReader(agentOutput))
	require.NoError(t, err)
	fromBaseline, err := benchguard.Parse(&out)
	require.NoError(t, err)
	require.Equal(t, fromRun, fromBaseline)
}

func TestWriteBaselineRefusesARunWithoutAllocations(t *testing.T) {
	t.Parallel()
	for name, output := range map[string]string{
		"no benchmark":   "goos: linux\npkg: example.com/p\nPASS\nok\texample.com/p\t0.1s\n",
		"no -benchmem":   "pkg: example.com/p\nBenchmarkA-2\t100\t123 ns/op\n",
		"log lines only": "BenchmarkA-2\t2026/12/03 04:03:14 INFO request\n--- FAIL: BenchmarkA-2\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			_, err := benchguard.WriteBaseline(&out, strings.NewReader(output))
			require.ErrorIs(t, err, benchguard.ErrNoBenchmarks)
			require.Zero(t, out.Len())
		})
	}
}
