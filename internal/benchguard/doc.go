// Package benchguard keeps the allocations of agnogo's hot paths from
// creeping up unnoticed: it compares the B/op and allocs/op of a
// `go test -bench -benchmem` run against a baseline saved from an earlier
// run, and fails when either rises by more than a threshold.
//
// It compares allocations, not time. On a shared two-core machine ns/op
// swings by tens of percent from one run to the next, while the number of
// allocations a run makes is a property of the code: the same code
// allocates the same way on a busy machine and an idle one, so a guard on
// it can fail the build without crying wolf.
//
// A baseline is simply saved benchmark output — the goos/goarch/pkg/cpu
// header lines and the Benchmark result lines, which [WriteBaseline]
// extracts from a run's full output. [Parse] reads either: it keys each
// benchmark by its package (the last "pkg:" line above it) and its full name
// with sub-benchmarks, without the -N GOMAXPROCS suffix, and takes the
// median of each metric over the lines of a benchmark run several times
// (-count). Extra metrics (runs/s, p99-ms …) may sit between the standard
// ones in any order; a result line split by log output written while the
// benchmark ran (the name on one line, the figures on a later one) is joined
// again.
//
// [Compare] sets the two runs side by side. A benchmark regresses when its
// B/op or allocs/op rise by more than [Config.Threshold] (10%) and also by
// more than a small absolute slack ([Config.AllocsSlack], 2 allocations;
// [Config.BytesSlack], 256 bytes): a benchmark that allocates once per op
// and starts allocating twice has risen by 100%, but one allocation is not
// the drift this guard is after, and the slack keeps such tiny figures from
// failing the build on rounding. A benchmark of the baseline that the
// current run lacks fails too — a guard that silently stops guarding is
// useless — while a benchmark the baseline lacks is only reported, and so is
// an improvement beyond the threshold, so the baseline can be refreshed.
//
// [Check] does all of it for two readers, and cmd/benchguard is the command
// CI runs (.ci/benchguard.sh).
package benchguard
