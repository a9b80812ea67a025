package benchguard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Units of the metrics the guard compares, as `go test -benchmem` prints
// them.
const (
	UnitBytes  = "B/op"
	UnitAllocs = "allocs/op"
)

// Benchmark is one benchmark of a run: the median of each of its metrics
// over the result lines it printed (one per -count).
type Benchmark struct {
	// Pkg is the import path of the package the benchmark ran in, from the
	// last "pkg:" line above it; empty when the output names no package.
	Pkg string
	// Name is the full name, sub-benchmarks included
	// (BenchmarkServerRuns/store=sqlite/session=new/clients=1), without the
	// -N suffix that names GOMAXPROCS.
	Name string
	// Runs is the number of result lines merged into Metrics.
	Runs int
	// Metrics maps each unit the benchmark reported (ns/op, B/op,
	// allocs/op, runs/s …) to the median of its values.
	Metrics map[string]float64
}

// Label is how reports name the benchmark: the last element of its package
// and its name, such as agent.BenchmarkRunSingleTurn.
func (b Benchmark) Label() string {
	if b.Pkg == "" {
		return b.Name
	}
	return path.Base(b.Pkg) + "." + b.Name
}

// key identifies a benchmark across two runs. Benchmark names hold no
// spaces (the testing package turns them into underscores).
func (b Benchmark) key() string { return b.Pkg + " " + b.Name }

// procsSuffix is the -N that the testing package appends to a benchmark's
// name when GOMAXPROCS is not 1. A sub-benchmark whose own name ends in -N
// loses that too when GOMAXPROCS is 1; both runs are keyed the same way, so
// a comparison is still like for like.
var procsSuffix = regexp.MustCompile(`-[0-9]+$`)

// headerPrefixes start the lines of a run's output that describe where it
// ran; a baseline keeps them.
var headerPrefixes = []string{"goos:", "goarch:", "pkg:", "cpu:"}

// scanned is the part of a run's output the guard reads: the header and
// result lines in order, result lines whole again.
type scanned struct {
	lines   []string // header and result lines, as a baseline holds them
	results []result
}

// result is one result line.
type result struct {
	pkg     string
	name    string // without the GOMAXPROCS suffix
	metrics map[string]float64
}

// scan reads a run's output.
func scan(r io.Reader) (scanned, error) {
	var out scanned
	var pkg, pending string // pending: a name whose figures were pushed to a later line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if slices.ContainsFunc(headerPrefixes, func(p string) bool { return strings.HasPrefix(line, p) }) {
			if rest, ok := strings.CutPrefix(line, "pkg:"); ok {
				pkg = strings.TrimSpace(rest)
			}
			out.lines = append(out.lines, line)
			pending = ""
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if strings.HasPrefix(fields[0], "Benchmark") {
			if metrics, ok := parseFigures(fields[1:]); ok {
				out.add(pkg, fields[0], metrics, line)
				pending = ""
				continue
			}
			// The name alone, or followed by what the benchmark logged
			// before its figures: they come on a later line.
			pending = fields[0]
			continue
		}
		if pending == "" {
			continue
		}
		if metrics, ok := parseFigures(fields); ok {
			out.add(pkg, pending, metrics, pending+"\t"+strings.TrimSpace(line))
			pending = ""
		}
	}
	if err := sc.Err(); err != nil {
		return scanned{}, fmt.Errorf("read benchmark output: %w", err)
	}
	return out, nil
}

func (s *scanned) add(pkg, name string, metrics map[string]float64, line string) {
	s.lines = append(s.lines, line)
	s.results = append(s.results, result{pkg: pkg, name: procsSuffix.ReplaceAllString(name, ""), metrics: metrics})
}

// parseFigures reads the figures of a result line after the name: the
// iteration count, then value and unit pairs. ok is false for anything
// else, such as log output.
func parseFigures(fields []string) (metrics map[string]float64, ok bool) {
	if len(fields) < 3 || len(fields)%2 != 1 {
		return nil, false
	}
	if n, err := strconv.ParseUint(fields[0], 10, 64); err != nil || n == 0 {
		return nil, false
	}
	metrics = make(map[string]float64, len(fields)/2)
	for i := 1; i < len(fields); i += 2 {
		value, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return nil, false
		}
		unit := fields[i+1]
		if _, err := strconv.ParseFloat(unit, 64); err == nil {
			return nil, false // a number where a unit belongs
		}
		metrics[unit] = value
	}
	return metrics, true
}

// Parse reads the output of `go test -bench` and returns its benchmarks in
// the order they first appear, each metric the median over the benchmark's
// result lines. Lines that are neither header nor result lines (PASS, ok,
// log output) are skipped.
func Parse(r io.Reader) ([]Benchmark, error) {
	s, err := scan(r)
	if err != nil {
		return nil, err
	}
	return summarize(s.results), nil
}

// summarize groups results by benchmark and takes the median of each metric.
func summarize(results []result) []Benchmark {
	var order []string
	values := make(map[string]map[string][]float64)
	benchmarks := make(map[string]*Benchmark)
	for _, res := range results {
		b := Benchmark{Pkg: res.pkg, Name: res.name}
		key := b.key()
		if benchmarks[key] == nil {
			benchmarks[key] = &b
			values[key] = make(map[string][]float64)
			order = append(order, key)
		}
		benchmarks[key].Runs++
		for unit, value := range res.metrics {
			values[key][unit] = append(values[key][unit], value)
		}
	}
	out := make([]Benchmark, 0, len(order))
	for _, key := range order {
		b := benchmarks[key]
		b.Metrics = make(map[string]float64, len(values[key]))
		for unit, vs := range values[key] {
			b.Metrics[unit] = median(vs)
		}
		out = append(out, *b)
	}
	return out
}

// median returns the middle of values, or the mean of the two middle ones
// when there is an even number; values is sorted in place.
func median(values []float64) float64 {
	slices.Sort(values)
	mid := len(values) / 2
	if len(values)%2 == 1 {
		return values[mid]
	}
	return (values[mid-1] + values[mid]) / 2
}

// ErrNoBenchmarks means a run's output held no benchmark result with both
// B/op and allocs/op: no benchmark matched, or -benchmem was missing.
var ErrNoBenchmarks = errors.New("no benchmark results with B/op and allocs/op (did a benchmark match, with -benchmem?)")

// WriteBaseline copies from a run's output (r) to w what a baseline keeps:
// the goos/goarch/pkg/cpu header lines and the Benchmark result lines, a
// result split by log output joined onto one line again. It returns the
// number of result lines written, and [ErrNoBenchmarks] (writing nothing)
// when none has both B/op and allocs/op, so a broken run cannot become the
// baseline.
func WriteBaseline(w io.Writer, r io.Reader) (int, error) {
	s, err := scan(r)
	if err != nil {
		return 0, err
	}
	if !slices.ContainsFunc(s.results, func(res result) bool {
		_, hasBytes := res.metrics[UnitBytes]
		_, hasAllocs := res.metrics[UnitAllocs]
		return hasBytes && hasAllocs
	}) {
		return 0, ErrNoBenchmarks
	}
	bw := bufio.NewWriter(w)
	for _, line := range s.lines {
		bw.WriteString(line)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("write baseline: %w", err)
	}
	return len(s.results), nil
}
