package benchguard

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strings"
)

// Config sets how much a benchmark may allocate beyond its baseline.
type Config struct {
	// Threshold is the relative rise of B/op or allocs/op that fails a
	// benchmark (0.10 is 10%); a fall by as much is reported as an
	// improvement. Defaults to 0.10.
	Threshold float64
	// AllocsSlack is how many allocations per op a rise must also exceed to
	// fail, so that a benchmark of a handful of allocations does not fail on
	// one more (1 → 2 is +100%). Defaults to 2.
	AllocsSlack float64
	// BytesSlack is how many bytes per op a rise must also exceed to fail.
	// Defaults to 256.
	BytesSlack float64
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.Threshold = cmp.Or(c.Threshold, 0.10)
	c.AllocsSlack = cmp.Or(c.AllocsSlack, 2)
	c.BytesSlack = cmp.Or(c.BytesSlack, 256)
	return c
}

func (c Config) validate() error {
	if c.Threshold < 0 || c.AllocsSlack < 0 || c.BytesSlack < 0 || math.IsNaN(c.Threshold+c.AllocsSlack+c.BytesSlack) {
		return fmt.Errorf("threshold %v, allocs slack %v and bytes slack %v must not be negative", c.Threshold, c.AllocsSlack, c.BytesSlack)
	}
	return nil
}

// slack returns the absolute rise a metric must exceed to count.
func (c Config) slack(unit string) float64 {
	if unit == UnitAllocs {
		return c.AllocsSlack
	}
	return c.BytesSlack
}

// Status is the verdict on one benchmark.
type Status int

// Verdicts, from the harmless to the failing.
const (
	// StatusSteady: B/op and allocs/op within the threshold of the baseline.
	StatusSteady Status = iota
	// StatusImproved: B/op or allocs/op fell beyond the threshold (and
	// neither rose beyond it); the baseline can be refreshed.
	StatusImproved
	// StatusNew: a benchmark the baseline does not hold; not a failure.
	StatusNew
	// StatusRegressed: B/op or allocs/op rose beyond the threshold and the
	// slack.
	StatusRegressed
	// StatusMissing: a benchmark of the baseline that the current run does
	// not hold, or holds without B/op or allocs/op.
	StatusMissing
)

// String returns the word reports use for s.
func (s Status) String() string {
	switch s {
	case StatusSteady:
		return "ok"
	case StatusImproved:
		return "improved"
	case StatusNew:
		return "new"
	case StatusRegressed:
		return "REGRESSED"
	case StatusMissing:
		return "MISSING"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Failed reports whether s fails the guard.
func (s Status) Failed() bool { return s == StatusRegressed || s == StatusMissing }

// Change is one metric of a benchmark, in the baseline and now.
type Change struct {
	// Unit is UnitBytes or UnitAllocs.
	Unit string
	// Old is the baseline's median, New the current run's.
	Old, New float64
	// HasOld and HasNew say whether each run reported the metric.
	HasOld, HasNew bool
}

// Delta is New - Old.
func (c Change) Delta() float64 { return c.New - c.Old }

// Ratio is the relative change, (New - Old) / Old: 0.12 is a rise of 12%.
// A rise from zero is +Inf.
func (c Change) Ratio() float64 {
	if c.Old == 0 {
		if c.New == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return (c.New - c.Old) / c.Old
}

// Comparison is one benchmark's B/op and allocs/op, in the baseline and now.
type Comparison struct {
	// Pkg and Name identify the benchmark, as in [Benchmark].
	Pkg, Name string
	// Status is the verdict.
	Status Status
	// Bytes and Allocs are the two metrics compared.
	Bytes, Allocs Change
	// Reason says, for a failure, what failed.
	Reason string
}

// Label is how reports name the benchmark; see [Benchmark.Label].
func (c Comparison) Label() string { return Benchmark{Pkg: c.Pkg, Name: c.Name}.Label() }

// Report is the comparison of a run against a baseline.
type Report struct {
	// Config is the configuration compared with, defaults applied.
	Config Config
	// Comparisons holds the baseline's benchmarks in its order, then the
	// benchmarks new in the current run.
	Comparisons []Comparison
}

// Failures returns the comparisons that fail the guard.
func (r Report) Failures() []Comparison { return r.with(Status.Failed) }

// Improvements returns the benchmarks that fell beyond the threshold.
func (r Report) Improvements() []Comparison {
	return r.with(func(s Status) bool { return s == StatusImproved })
}

func (r Report) with(keep func(Status) bool) []Comparison {
	var out []Comparison
	for _, c := range r.Comparisons {
		if keep(c.Status) {
			out = append(out, c)
		}
	}
	return out
}

// Err returns a [*RegressionError] naming every failure, or nil.
func (r Report) Err() error {
	if failures := r.Failures(); len(failures) > 0 {
		return &RegressionError{Failures: failures}
	}
	return nil
}

// RegressionError is a run that failed the guard: a benchmark allocates
// more than its baseline allows, or is missing.
type RegressionError struct {
	// Failures are the failing comparisons, in report order.
	Failures []Comparison
}

// Error names each failure and why it failed.
func (e *RegressionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d benchmark(s) failed the allocation guard:", len(e.Failures))
	for _, f := range e.Failures {
		fmt.Fprintf(&b, "\n  %s: %s", f.Label(), f.Reason)
	}
	return b.String()
}

// Compare sets the current run against the baseline; see the package
// documentation for the rules.
func Compare(baseline, current []Benchmark, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	report := Report{Config: cfg}
	now := make(map[string]Benchmark, len(current))
	for _, b := range current {
		now[b.key()] = b
	}
	inBaseline := make(map[string]bool, len(baseline))
	for _, old := range baseline {
		inBaseline[old.key()] = true
		cur, ok := now[old.key()]
		if !ok {
			report.Comparisons = append(report.Comparisons, Comparison{Pkg: old.Pkg, Name: old.Name, Status: StatusMissing,
				Bytes: change(UnitBytes, old, Benchmark{}), Allocs: change(UnitAllocs, old, Benchmark{}),
				Reason: "in the baseline but not in the current run (renamed, removed, failed or not selected?)"})
			continue
		}
		report.Comparisons = append(report.Comparisons, cfg.judge(old, cur))
	}
	for _, cur := range current {
		if !inBaseline[cur.key()] {
			report.Comparisons = append(report.Comparisons, Comparison{Pkg: cur.Pkg, Name: cur.Name, Status: StatusNew,
				Bytes: change(UnitBytes, Benchmark{}, cur), Allocs: change(UnitAllocs, Benchmark{}, cur)})
		}
	}
	return report, nil
}

func change(unit string, old, cur Benchmark) Change {
	c := Change{Unit: unit}
	c.Old, c.HasOld = old.Metrics[unit]
	c.New, c.HasNew = cur.Metrics[unit]
	return c
}

// judge compares one benchmark present in both runs.
func (c Config) judge(old, cur Benchmark) Comparison {
	cmpn := Comparison{Pkg: old.Pkg, Name: old.Name, Status: StatusSteady,
		Bytes: change(UnitBytes, old, cur), Allocs: change(UnitAllocs, old, cur)}
	var missing, rises []string
	improved := false
	for _, ch := range []Change{cmpn.Allocs, cmpn.Bytes} {
		switch {
		case !ch.HasOld:
			missing = append(missing, "the baseline has no "+ch.Unit+" (regenerate it with -benchmem)")
		case !ch.HasNew:
			missing = append(missing, "the current run has no "+ch.Unit+" (run with -benchmem)")
		case ch.Ratio() > c.Threshold && ch.Delta() > c.slack(ch.Unit):
			rises = append(rises, fmt.Sprintf("%s %s → %s (%s, above %s)", ch.Unit, formatValue(ch.Old), formatValue(ch.New),
				formatRatio(ch.Ratio()), formatRatio(c.Threshold)))
		case -ch.Ratio() > c.Threshold && -ch.Delta() > c.slack(ch.Unit):
			improved = true
		}
	}
	switch {
	case len(missing) > 0:
		cmpn.Status, cmpn.Reason = StatusMissing, strings.Join(missing, "; ")
	case len(rises) > 0:
		cmpn.Status, cmpn.Reason = StatusRegressed, strings.Join(rises, "; ")
	case improved:
		cmpn.Status = StatusImproved
	}
	return cmpn
}

// Check parses a baseline and a current run and compares them. The error
// is a [*RegressionError] when the run fails the guard, another error when
// either input cannot be read or the baseline holds no benchmark; the
// report is returned with a *RegressionError, for printing.
func Check(baseline, current io.Reader, cfg Config) (Report, error) {
	old, err := Parse(baseline)
	if err != nil {
		return Report{}, fmt.Errorf("baseline: %w", err)
	}
	if len(old) == 0 {
		return Report{}, fmt.Errorf("baseline: %w", ErrNoBenchmarks)
	}
	cur, err := Parse(current)
	if err != nil {
		return Report{}, fmt.Errorf("current run: %w", err)
	}
	report, err := Compare(old, cur, cfg)
	if err != nil {
		return Report{}, err
	}
	return report, report.Err()
}
