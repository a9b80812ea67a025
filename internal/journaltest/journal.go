// Package journaltest is an in-memory [run.Journal] for tests: it records
// step results by their number, as a durable engine does, so a run
// executed again with the same journal gets the recorded results back
// without running those steps.
package journaltest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/agnogo/agnogo/run"
)

// Journal is the in-memory journal. Create it with [New].
type Journal struct {
	runID string

	mu      sync.Mutex
	next    int
	records map[int][]byte
	ran     []string // names of the steps actually run
	// recorded is closed, and replaced, each time a step is recorded.
	recorded chan struct{}
}

var _ run.Journal = (*Journal)(nil)

// New returns an empty journal for the run runID; its steps' idempotency
// keys are "<runID>:<step number>", as on the durable queue.
func New(runID string) *Journal {
	return &Journal{runID: runID, records: map[int][]byte{}, recorded: make(chan struct{})}
}

// Restart begins a re-execution: numbering starts over, records stay.
func (j *Journal) Restart() { j.mu.Lock(); j.next = 0; j.mu.Unlock() }

// Ran returns the names of the steps that ran (not replayed), in the
// order they finished.
func (j *Journal) Ran() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.ran)
}

func (j *Journal) take() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.next++
	return j.next
}

func (j *Journal) run(ctx context.Context, n int, name string, fn run.StepFunc) ([]byte, error) {
	j.mu.Lock()
	recorded, ok := j.records[n]
	j.mu.Unlock()
	if ok {
		return recorded, nil
	}
	out, err := fn(run.WithStepKey(ctx, fmt.Sprintf("%s:%d", j.runID, n)))
	if err != nil {
		return nil, err
	}
	j.mu.Lock()
	j.records[n] = out
	j.ran = append(j.ran, name)
	close(j.recorded)
	j.recorded = make(chan struct{})
	j.mu.Unlock()
	return out, nil
}

// WaitRan waits until steps of each of names have run (were recorded), or
// ctx ends.
func (j *Journal) WaitRan(ctx context.Context, names ...string) error {
	for {
		j.mu.Lock()
		missing := slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(j.ran, n) })
		recorded := j.recorded
		j.mu.Unlock()
		if !missing {
			return nil
		}
		select {
		case <-recorded:
		case <-ctx.Done():
			return fmt.Errorf("waiting for steps %v: %w", names, ctx.Err())
		}
	}
}

// Step implements [run.Journal].
func (j *Journal) Step(ctx context.Context, name string, fn run.StepFunc) ([]byte, error) {
	return j.run(ctx, j.take(), name, fn)
}

// Steps implements [run.Journal]: the steps run at once, numbered in
// order.
func (j *Journal) Steps(ctx context.Context, names []string, fns []run.StepFunc) ([][]byte, []error) {
	numbers := make([]int, len(fns))
	for i := range fns {
		numbers[i] = j.take()
	}
	results, errs := make([][]byte, len(fns)), make([]error, len(fns))
	var wg sync.WaitGroup
	for i := range fns {
		wg.Go(func() { results[i], errs[i] = j.run(ctx, numbers[i], names[i], fns[i]) })
	}
	wg.Wait()
	return results, errs
}
