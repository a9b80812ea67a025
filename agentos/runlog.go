package agentos

import (
	"context"
	"iter"
	"log/slog"

	"github.com/agnogo/agnogo/run"
)

// failedRunMessage is the message of the line logged for each run that
// ends in error here.
const failedRunMessage = "run failed"

// logFailure yields events and, when the run they stream ends in error —
// a RunError event, or an error after the run started — logs it at Warn
// with its run id and error type, so an operator sees failed runs (a
// model's authentication error or 429, say) without a client to report
// them. An error before any event is a refused request, not a failed run:
// its answer and the access log say so.
func (o *OS) logFailure(ctx context.Context, meta *inflightRun, events iter.Seq2[run.Event, error]) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		var last run.Event
		var own ownRun
		for event, err := range events {
			switch {
			case err != nil && last != nil:
				o.logFailedRun(ctx, meta, string(own), run.ErrorTypeOf(err), err.Error())
			case err == nil:
				// A team member's failure (a *run.MemberEvent) is the
				// team's to handle, not a failed run of its own here.
				if failed, ok := event.(*run.RunError); ok {
					o.logFailedRun(ctx, meta, failed.RunID, failed.ErrorType, failed.Content)
				}
				last = event
				own.of(event)
			}
			if !yield(event, err) {
				return
			}
		}
	}
}

// logFailedOutput logs a run answered as a whole that ended in error, as
// [OS.logFailure] does for a stream.
func (o *OS) logFailedOutput(ctx context.Context, meta *inflightRun, out *run.Output, err error) {
	if out == nil || out.Status != run.StatusError {
		return
	}
	message := out.ContentString()
	if err != nil {
		message = err.Error()
	}
	o.logFailedRun(ctx, meta, out.RunID, run.ErrorTypeOf(err), message)
}

// runnerAttr names a runner in a log line: agent_id, or team_id for a
// team.
func runnerAttr(r run.Runner) slog.Attr { return slog.String(run.IDKey(kindOf(r)), r.ID()) }

// logFailedRun logs one failed run.
func (o *OS) logFailedRun(ctx context.Context, meta *inflightRun, runID, errorType, message string) {
	if o.cfg.Observer.LogsRuns() {
		return // the observer logs every run's end, failures included
	}
	if errorType == "" {
		errorType = "unknown"
	}
	o.log.LogAttrs(ctx, slog.LevelWarn, failedRunMessage,
		slog.String("run_id", runID),
		runnerAttr(meta.runner),
		slog.String("session_id", meta.sessionID),
		slog.String("error_type", errorType),
		slog.String("error", message))
}
