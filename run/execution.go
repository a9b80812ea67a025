package run

import (
	"context"
	"iter"
	"time"
)

// Execution is how the caller of a run wants it executed: the policy a run
// host applies around the runner's own work. The zero value runs the run
// as a Go caller or an inline HTTP request does: no time limit, no journal,
// failures settled by the runner.
type Execution struct {
	// DeferFailure tells the runner that its caller decides whether a
	// failed run is over — it may start it again, as the durable queue does
	// while attempts remain. The run still ends its stream with its
	// RunError, but is saved with status RUNNING rather than ERROR, so no
	// reader takes a run about to be retried for a failed one; the caller
	// stores the final status.
	DeferFailure bool
	// Queued is set when a queue that runs one run per session at a time
	// elected this run: the session's other PENDING runs wait behind it and
	// do not make the session busy, and a turn found busy (one running
	// outside the queue) is waited for rather than refused.
	Queued bool
	// TimeLimit ends the run ERROR (error_type run_timeout) once it has run
	// this long; zero is no limit (see [WithTimeLimit]).
	TimeLimit time.Duration
	// Journal makes the run's model and tool calls durable steps; nil runs
	// them directly.
	Journal Journal
}

// Context applies the execution's time limit ([WithTimeLimit]) and journal
// ([WithJournal]) to ctx, as a runner that takes no Execution sees them.
// Call cancel when the run is over.
func (e Execution) Context(ctx context.Context) (_ context.Context, cancel context.CancelFunc) {
	cancel = func() {}
	if e.TimeLimit > 0 {
		ctx, cancel = WithTimeLimit(ctx, e.TimeLimit)
	}
	if e.Journal != nil {
		ctx = WithJournal(ctx, e.Journal)
	}
	return ctx, cancel
}

// Executor is a [Runner] that takes an explicit [Execution]: the durable
// queue executes its runs this way. Stream and Continue are Execute and
// ExecuteContinue with the zero Execution.
type Executor interface {
	Runner
	// Execute runs in under exec and yields its events like
	// [Runner.Stream].
	Execute(ctx context.Context, in *Input, exec Execution) iter.Seq2[Event, error]
	// ExecuteContinue continues a run under exec and yields its events
	// like [Continuer.Continue].
	ExecuteContinue(ctx context.Context, req *ContinueRequest, exec Execution) iter.Seq2[Event, error]
}
