package run

import "context"

// A Journal makes a run's steps durable. A run executed under one (a
// background run on the durable queue) calls the model and each tool as a
// step: a step that completed before a crash is not run again when the run
// is re-executed; the journal returns the result it recorded instead. Only
// the step in flight at the crash runs twice, which is what [StepKey] is
// for.
//
// Step results are bytes (JSON); an error crosses a step boundary as its
// message only, so callers classify errors inside the step.
type Journal interface {
	// Step runs fn as the step named name, or returns its recorded result.
	Step(ctx context.Context, name string, fn StepFunc) ([]byte, error)
	// Steps runs fns concurrently, each as its own step (named by names, in
	// order), and returns their results and errors in order. Step numbering
	// follows the order of fns, so a re-executed batch finds its records.
	Steps(ctx context.Context, names []string, fns []StepFunc) ([][]byte, []error)
}

// StepFunc is the work of one step. Its ctx carries the step's idempotency
// key ([StepKey]).
type StepFunc func(ctx context.Context) ([]byte, error)

type journalKey struct{}

type stepKeyKey struct{}

// WithJournal returns ctx carrying j: runs started with it journal their
// steps.
func WithJournal(ctx context.Context, j Journal) context.Context {
	return context.WithValue(ctx, journalKey{}, j)
}

// JournalFrom returns the journal ctx carries, if any.
func JournalFrom(ctx context.Context) (Journal, bool) {
	j, ok := ctx.Value(journalKey{}).(Journal)
	return j, ok && j != nil
}

// WithStepKey returns ctx carrying the idempotency key of the step it runs.
func WithStepKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, stepKeyKey{}, key)
}

// StepKey is the idempotency key of the step ctx belongs to: the same every
// time the step is attempted, different for every other step. A tool with
// side effects (a payment, an email) passes it to the service it calls so a
// step re-run after a crash does not act twice. On the durable queue it is
// "<run_id>:<step number>"; elsewhere "<run_id>:<tool_call_id>". Empty
// outside a run.
func StepKey(ctx context.Context) string {
	key, _ := ctx.Value(stepKeyKey{}).(string)
	return key
}
