// Command benchguard fails when benchmarks allocate more than their
// baseline allows. It reads the output of `go test -bench -benchmem` (from
// standard input or -current), compares B/op and allocs/op with the
// baseline file, prints a table, and exits 1 when a benchmark rose beyond
// the threshold or is missing:
//
//	go test -run '^$' -bench . -benchmem -count 3 ./agent/ > current.txt
//	go run ./internal/benchguard/cmd/benchguard -baseline .ci/bench-baseline.txt < current.txt
//
// With -update it writes the run's header and result lines as the new
// baseline instead (printing the comparison with the old one first, when
// there is one). See package benchguard for the rules.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agnogo/agnogo/internal/benchguard"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line args and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("benchguard", flag.ContinueOnError)
	flags.SetOutput(stderr)
	baselinePath := flags.String("baseline", "", "the baseline `file`: saved output of go test -bench -benchmem (required)")
	currentPath := flags.String("current", "", "the current run's output `file` (default: standard input)")
	var cfg benchguard.Config
	flags.Float64Var(&cfg.Threshold, "threshold", 0.10, "the relative rise of B/op or allocs/op that fails (0 means the default)")
	flags.Float64Var(&cfg.AllocsSlack, "allocs-slack", 2, "allocations per op a rise must also exceed to fail (0 means the default)")
	flags.Float64Var(&cfg.BytesSlack, "bytes-slack", 256, "bytes per op a rise must also exceed to fail (0 means the default)")
	update := flags.Bool("update", false, "write the current run as the new baseline instead of failing on it")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *baselinePath == "" || flags.NArg() > 0 {
		fmt.Fprintln(stderr, "benchguard: -baseline FILE is required, and no arguments besides flags")
		flags.Usage()
		return exitUsage
	}
	if cfg.Threshold < 0 || cfg.AllocsSlack < 0 || cfg.BytesSlack < 0 {
		fmt.Fprintln(stderr, "benchguard: -threshold, -allocs-slack and -bytes-slack must not be negative")
		return exitUsage
	}

	current := stdin
	if *currentPath != "" {
		f, err := os.Open(*currentPath)
		if err != nil {
			fmt.Fprintf(stderr, "benchguard: %v\n", err)
			return exitFailure
		}
		defer f.Close()
		current = f
	}
	if *update {
		return updateBaseline(*baselinePath, current, cfg, stdout, stderr)
	}

	baseline, err := os.Open(*baselinePath)
	if err != nil {
		fmt.Fprintf(stderr, "benchguard: %v (create it with -update)\n", err)
		return exitFailure
	}
	defer baseline.Close()
	report, err := benchguard.Check(baseline, current, cfg)
	var regression *benchguard.RegressionError
	if err != nil && !errors.As(err, &regression) {
		fmt.Fprintf(stderr, "benchguard: %v\n", err)
		return exitFailure
	}
	if err := report.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "benchguard: %v\n", err)
		return exitFailure
	}
	if regression != nil {
		fmt.Fprintf(stderr, "benchguard: %v\nIf the rise is intended, refresh %s (BENCHGUARD_UPDATE=1 .ci/benchguard.sh) and say why in the commit.\n",
			regression, *baselinePath)
		return exitFailure
	}
	if len(report.Improvements()) > 0 {
		fmt.Fprintf(stdout, "Allocations fell: refresh %s to keep the gain (BENCHGUARD_UPDATE=1 .ci/benchguard.sh).\n", *baselinePath)
	}
	return exitOK
}

// updateBaseline writes the current run as the baseline at path, after
// printing how it compares with the baseline it replaces, if any.
func updateBaseline(path string, current io.Reader, cfg benchguard.Config, stdout, stderr io.Writer) int {
	raw, err := io.ReadAll(current)
	if err != nil {
		fmt.Fprintf(stderr, "benchguard: read current run: %v\n", err)
		return exitFailure
	}
	var out bytes.Buffer
	n, err := benchguard.WriteBaseline(&out, bytes.NewReader(raw))
	if err != nil {
		fmt.Fprintf(stderr, "benchguard: %v; %s left as it was\n", err, path)
		return exitFailure
	}
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		// For the record only: the run becomes the baseline whatever it shows.
		report, err := benchguard.Check(bytes.NewReader(old), bytes.NewReader(raw), cfg)
		var regression *benchguard.RegressionError
		if err != nil && !errors.As(err, &regression) {
			fmt.Fprintf(stdout, "The baseline being replaced does not compare: %v\n", err)
			break
		}
		fmt.Fprintln(stdout, "Against the baseline being replaced:")
		if err := report.WriteTable(stdout); err != nil {
			fmt.Fprintf(stderr, "benchguard: %v\n", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stderr, "benchguard: %v\n", err)
		return exitFailure
	}
	if err := writeFileAtomic(path, out.Bytes()); err != nil {
		fmt.Fprintf(stderr, "benchguard: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "Wrote %d result line(s) to %s.\n", n, path)
	return exitOK
}

// writeFileAtomic replaces path with data, so an interrupted update never
// leaves half a baseline.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".benchguard-*")
	if err != nil {
		return fmt.Errorf("write baseline: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing left to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write baseline %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write baseline %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write baseline %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write baseline %s: %w", path, err)
	}
	return nil
}
