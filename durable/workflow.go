package durable

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"go.opentelemetry.io/otel/attribute"

	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// settleTimeout bounds writing a run's final state outside the run.
const settleTimeout = 10 * time.Second

// execute is the workflow of one run: it runs the agent with a journal, so
// each model call and tool call is a step. Re-executed after a crash, it
// either gives up (the attempts are spent) or goes on from the last
// completed step.
func (q *Queue) execute(ctx dbos.Context, j job) (string, error) {
	if !q.begin() {
		// Dequeued as this process stops: the run is left untouched for the
		// executor that takes this one's runs over.
		return "", q.handOver(ctx, j)
	}
	jr := newJournal(ctx, j.RunID, q.log)
	if status, over := q.storedOutcome(jr, j); over {
		// The run's outcome is on its row already: an execution that saved
		// it was lost before the engine recorded the workflow's end. Running
		// it again would show a client that saw it final a RUNNING run.
		q.end()
		q.finish(j.RunID, status)
		return string(status), nil
	}
	status := q.runWorkflow(ctx, jr, j)
	if status == statusInterrupted {
		q.end()
		if jr.isDisowned() {
			// Another execution runs the workflow now: it writes the run's
			// outcome; this one writes nothing more.
			q.log.Warn("durable: the run is executed elsewhere now; this execution stops without writing its outcome",
				slog.String("run_id", j.RunID))
			return "", fmt.Errorf("run %s: %w", j.RunID, errDisowned)
		}
		return "", q.handOver(ctx, j)
	}
	// The run counts as executing here until its last events are in the
	// stream and the stream is closed: a shutdown waits for that, so a
	// run that just ended is not cut off before its job records the end.
	defer q.end()
	jr.flush()
	if err := jr.unsavedErr(); err != nil {
		// The row does not have the outcome: the workflow does not record
		// one either; the sweep writes it once the database is back.
		q.finish(j.RunID, status)
		return "", fmt.Errorf("run %s ended %s but its final state could not be saved: %w", j.RunID, status, err)
	}
	if status != run.StatusPaused {
		if err := dbos.CloseStream(ctx, streamKey); err != nil {
			q.log.Warn("durable: closing the event stream failed", slog.String("run_id", j.RunID), slog.String("error", err.Error()))
		}
	}
	q.finish(j.RunID, status)
	return string(status), nil
}

// storedOutcome reports a run whose row holds a final status (PAUSED is
// not one: a paused run goes on), and that status. It calls no step of the
// engine, so a workflow that returns it records nothing but its end. A
// database that fails transiently is waited for (see [Queue.readRun]).
func (q *Queue) storedOutcome(jr *journal, j job) (run.Status, bool) {
	rec, err := q.readRun(jr, j)
	if err != nil || !rec.Run.Status.Terminal() || rec.Run.Status == run.StatusPaused {
		return "", false
	}
	return rec.Run.Status, true
}

// statusInterrupted is what runWorkflow returns for a run stopped by the
// process shutting down, or taken over by another execution: it is not
// over.
const statusInterrupted run.Status = "INTERRUPTED"

// errDisowned ends an execution whose workflow another execution owns now:
// a replica took this executor for dead, or a process recovered the
// workflow under the same executor id. The engine refused to record this
// execution's step, so the run goes on there, and this one must not write
// an outcome (an ERROR here would be followed by the other's result).
var errDisowned = errors.New("the run's workflow is executed by another execution now")

// disowned reports an engine error saying the workflow is no longer owned
// by this execution.
func disowned(err error) bool { return errors.Is(err, dbos.ErrConflictingWorkflowID) }

// handOver ends an execution that stopped because the process is shutting
// down. It returns only once the engine ended the workflow's context, so the
// engine records no outcome and the workflow stays pending, to be resumed by
// the executor that takes this one's runs over.
func (q *Queue) handOver(ctx dbos.Context, j job) error {
	<-ctx.Done()
	return fmt.Errorf("run %s: %w", j.RunID, run.ErrInterrupted)
}

// runWorkflow drives one run to its final status: it retries failed
// attempts while attempts remain, and parks while the run is paused.
func (q *Queue) runWorkflow(ctx dbos.Context, jr *journal, j job) run.Status {
	runner, ok := q.runners[j.AgentID]
	if !ok {
		return q.settleIn(jr, j, run.StatusError, fmt.Sprintf("%s is not served by this process", j.AgentID))
	}
	exec := q.nextAttempt(jr, j)
	attempt := exec.attempt
	j.Metadata = exec.metadata
	if exec.resumed {
		q.seedIndices(j.RunID, exec.lost)
	}
	if attempt > q.cfg.MaxAttempts {
		return q.settleIn(jr, j, run.StatusError, lostMessage(q.cfg.MaxAttempts, j.RunID))
	}
	// The run's own context: cancelled by a cancel of the run, interrupted
	// when the engine ends the workflow's context (the process stops).
	runCtx, cancel := context.WithCancelCause(observe.With(context.WithoutCancel(ctx), q.cfg.Observer))
	defer cancel(nil)
	jr.stopWith(cancel)
	unlink := context.AfterFunc(ctx, func() { run.Interrupt(cancel) })
	defer unlink()
	q.mu.Lock()
	q.running[j.RunID] = jr
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.running, j.RunID)
		q.mu.Unlock()
	}()
	// A requeued run's status in Redis may still be the last attempt's.
	q.redis.status(j.RunID, run.StatusRunning)

	if attempt > 1 {
		q.cfg.Events.Register(j.RunID, run.StatusRunning)
		q.announceRetry(jr, j, runner, attempt, retryReason(exec.requeued), 0)
	}
	replaying := exec.parked
	start := func(ctx context.Context, exec run.Execution) iter.Seq2[run.Event, error] {
		in := j.input()
		if replaying {
			// The replay up to the pause does not save the run as RUNNING:
			// its row stays PAUSED, so a continuation is taken meanwhile.
			in.PersistOnStart, replaying = false, false
		}
		return execute(ctx, runner, in, exec)
	}
	started := q.cfg.Now()
	// With attempts to spare, a failure is stored by the queue once it
	// decides the run is over (see segment). Decided by the setting alone,
	// so an execution replaying the run's history behaves the same.
	retries := q.cfg.MaxAttempts > 1
	end := q.segment(runCtx, jr, retries, start)
	for !end.interrupted && end.retryable() && runCtx.Err() == nil {
		plan, replayed := q.planRetry(ctx, jr, j, attempt, started, end.message())
		if !plan.Retry {
			break
		}
		if replayed {
			// This execution replays an earlier one's history; the attempt
			// in progress was numbered from the run's row already.
			attempt = max(attempt, plan.Attempt)
		} else {
			q.announceRetry(jr, j, runner, plan.Attempt, end.message(), plan.Delay)
		}
		if !q.backoff(runCtx, plan) {
			if run.Interrupted(runCtx) {
				return statusInterrupted
			}
			return q.settleIn(jr, j, run.StatusCancelled, "the run was cancelled while waiting for its next attempt")
		}
		if !replayed {
			exec = q.nextAttempt(jr, j)
			attempt, j.Metadata = exec.attempt, exec.metadata
		}
		jr.restart()
		started = q.cfg.Now()
		end = q.segment(runCtx, jr, retries, start)
	}
	if end.interrupted || run.Interrupted(runCtx) {
		return statusInterrupted
	}
	status := q.conclude(jr, j, end)
	for status == run.StatusPaused {
		// The run waits for a person: the workflow parks, holding its
		// session's place in the queue, until POST …/continue sends the
		// resolution (or the run is cancelled).
		jr.flush()
		q.finish(j.RunID, run.StatusPaused)
		q.end()
		req, outcome := q.awaitContinue(ctx, j)
		q.resume()
		switch outcome {
		case parkInterrupted:
			return statusInterrupted
		case parkDisowned:
			jr.disown()
			return statusInterrupted
		case parkCancelled:
			return q.settleIn(jr, j, run.StatusCancelled, "the paused run was cancelled")
		}
		continuer, ok := runner.(run.Continuer)
		if !ok {
			return q.settleIn(jr, j, run.StatusError, string(runner.Kind())+" "+j.AgentID+" cannot continue runs")
		}
		req.RunID, req.SessionID, req.UserID = j.RunID, j.SessionID, j.UserID
		q.register(j.RunID, run.StatusRunning)
		end = q.segment(runCtx, jr, false, func(ctx context.Context, exec run.Execution) iter.Seq2[run.Event, error] {
			return executeContinue(ctx, continuer, req, exec)
		})
		if end.interrupted || run.Interrupted(runCtx) {
			return statusInterrupted
		}
		status = q.conclude(jr, j, end)
	}
	return status
}

// announceRetry sends the RunRetry event that opens a new attempt.
func (q *Queue) announceRetry(jr *journal, j job, runner run.Runner, attempt int, reason string, delay float64) {
	q.cfg.Observer.Metrics().Retried(string(runner.Kind()))
	q.appendEvent(jr, j.RunID, &run.RunRetry{BaseEvent: q.runnerBase(j),
		Attempt: attempt, MaxAttempts: q.cfg.MaxAttempts, Error: reason, DelaySeconds: delay})
}

// runnerAttr names a job's runner in a log line: agent_id, or team_id for
// a team.
func (q *Queue) runnerAttr(j job) slog.Attr {
	kind := run.KindAgent
	if r, ok := q.runners[j.AgentID]; ok {
		kind = r.Kind()
	}
	return slog.String(run.IDKey(kind), j.AgentID)
}

// runnerBase is the identity of an event the queue writes in a run's
// stream for its runner: agent_id and agent_name, or team_id and
// team_name for a team (its event then goes by its Team* name).
func (q *Queue) runnerBase(j job) run.BaseEvent {
	base := run.BaseEvent{RunID: j.RunID, SessionID: j.SessionID, CreatedAt: q.cfg.Now().Unix()}
	if r, ok := q.runners[j.AgentID]; ok {
		base.SetRunner(r.Kind(), r.ID(), r.Name())
	} else {
		base.AgentID = j.AgentID
	}
	return base
}

// retryReason is what a RunRetry of the queue says about the last attempt.
func retryReason(requeued bool) string {
	if requeued {
		return "the run was requeued"
	}
	return "the worker running this run was lost"
}

// appendEvent numbers an event in the event log of run runID and keeps it
// for the run's durable event stream; with Redis it also goes to the run's
// followers on other replicas at once. e is the run's own event, or one of
// a member run its stream passes on (a team's member, a *run.MemberEvent:
// it keeps its own run_id and never ends the run).
func (q *Queue) appendEvent(jr *journal, runID string, e run.Event) {
	entry := q.cfg.Events.AppendTo(runID, e)
	if jr != nil {
		jr.record(entry)
	}
	final, _ := run.FinalStatus(e)
	q.redis.event(runID, entry, final)
}

// ending is how one segment of a run (its start, or a continuation) ended.
type ending struct {
	// status is the final status the runner reported; empty when it
	// reported none.
	status run.Status
	// final is the runner's final event, held back from the event log
	// until the queue decides the run is over (not retried).
	final run.Event
	// err is the error the runner's stream ended with, if any.
	err error
	// interrupted is set when the process stopping interrupted the run.
	interrupted bool
	// deferred is set when the runner left a failure for the queue to
	// store (see run.Execution.DeferFailure).
	deferred bool
}

// message describes how the segment ended.
func (e ending) message() string {
	switch {
	case e.final != nil:
		if failed, ok := e.final.(*run.RunError); ok {
			return failed.Content
		}
		return "the run ended " + string(e.status)
	case e.err != nil:
		return e.err.Error()
	}
	return "the run ended without a final state"
}

// retryable reports whether the segment failed for a reason another
// attempt may not meet.
func (e ending) retryable() bool {
	switch {
	case e.final != nil:
		failed, ok := e.final.(*run.RunError)
		return ok && !run.PermanentErrorType(failed.ErrorType)
	case e.err != nil:
		return !run.Permanent(e.err)
	}
	return true // ended without a final event
}

// segment runs one segment of a run under the run's time limit and passes
// its events to the event log, all but the final one. With retryable set
// (the run may get another attempt), the runner leaves a failure for the
// queue to store.
func (q *Queue) segment(runCtx context.Context, jr *journal, retryable bool, start func(context.Context, run.Execution) iter.Seq2[run.Event, error]) ending {
	// The queue runs one run per session at a time (its partition key).
	exec := run.Execution{DeferFailure: retryable, Queued: true, Journal: jr}
	if q.cfg.Timeout > 0 {
		exec.TimeLimit = q.cfg.Timeout
	}
	end := ending{deferred: retryable}
	for event, err := range start(runCtx, exec) {
		if err != nil {
			end.err, end.interrupted = err, errors.Is(err, run.ErrInterrupted)
			break
		}
		if status, final := run.FinalStatus(event); final {
			end.status, end.final = status, event
			continue
		}
		q.appendEvent(jr, jr.runID, event)
	}
	return end
}

// conclude writes the end of a run that is over (or paused): the runner's
// final event, or ERROR when it ended without one.
func (q *Queue) conclude(jr *journal, j job, end ending) run.Status {
	status := q.concludeRow(jr, j, end)
	if status == run.StatusError {
		// An operator sees failed background runs (a model's
		// authentication error or 429) without a client to report them.
		errorType, message := "unknown", end.message()
		if failed, ok := end.final.(*run.RunError); ok {
			errorType = cmp.Or(failed.ErrorType, errorType)
			message = cmp.Or(failed.Content, message)
		}
		q.log.Warn("run failed", slog.String("run_id", j.RunID), q.runnerAttr(j),
			slog.String("session_id", j.SessionID), slog.String("error_type", errorType), slog.String("error", message))
	}
	return status
}

// concludeRow writes a run's final state as its ending says, and returns
// its status.
func (q *Queue) concludeRow(jr *journal, j job, end ending) run.Status {
	if end.final != nil {
		if end.deferred && end.status == run.StatusError {
			// The runner left its failure for the queue to store.
			q.writeFinal(jr, j, run.StatusError, end.message())
		}
		q.appendEvent(jr, j.RunID, end.final)
		return end.status
	}
	return q.settleIn(jr, j, run.StatusError, end.message())
}

// continueTopic is the workflow message topic of continuations.
const continueTopic = "continue"

// parkInterval bounds one wait for a continuation; the wait is repeated.
const parkInterval = 24 * time.Hour

// continuation is the message a parked run receives: its continuation, or
// its cancellation.
type continuation struct {
	Request *run.ContinueRequest `json:"request,omitempty"`
	Cancel  bool                 `json:"cancel,omitempty"`
}

// parkOutcome is how a parked run's wait ended.
type parkOutcome int

const (
	parkContinued parkOutcome = iota
	parkCancelled
	parkInterrupted // the process is stopping: the run stays parked
	parkDisowned    // another execution owns the workflow now
)

// awaitContinue waits for the continuation of a paused run.
func (q *Queue) awaitContinue(ctx dbos.Context, j job) (*run.ContinueRequest, parkOutcome) {
	for {
		msg, err := dbos.Recv[continuation](ctx, continueTopic, parkInterval)
		switch {
		case err == nil && msg.Request != nil && !msg.Cancel:
			return msg.Request, parkContinued
		case ctx.Err() != nil:
			return nil, parkInterrupted
		case disowned(err):
			return nil, parkDisowned
		case errors.Is(err, dbos.ErrTimeout):
			continue
		default:
			return nil, parkCancelled
		}
	}
}

// queueAttemptKey is the run metadata key counting the times the queue
// started the run.
const queueAttemptKey = "queue_attempt"

// execution describes one execution of a run's workflow.
type execution struct {
	// attempt is the attempt number, from 1.
	attempt int
	// resumed is set when an earlier execution streamed events: numbering
	// goes on after them.
	resumed bool
	// requeued is set when an operator requeued the run; otherwise an
	// attempt after the first follows a lost worker.
	requeued bool
	// lost is set when the previous execution was cut short (a lost worker
	// or a shutdown): it may have sent events recorded nowhere.
	lost bool
	// parked is set when the run waits for a person: this execution
	// replays it up to its pause, which its row goes on showing.
	parked bool
	// metadata is the run's metadata for this execution.
	metadata map[string]any
}

// nextAttempt numbers this execution of the run and returns the metadata to
// run it with. A run whose row shows an earlier execution that never ended
// (RUNNING, or PENDING with a recorded attempt) was cut short by a lost
// worker: that attempt is added to metadata.attempts. A requeued run (see
// [Queue.Requeue]) and a paused one lost nothing.
//
// The row is read as [Queue.readRun] does, so an execution replaying the
// run's history after a crash takes the decisions the one before it took
// rather than those of a row it could not read.
func (q *Queue) nextAttempt(jr *journal, j job) execution {
	e := execution{metadata: map[string]any{}}
	for k, v := range j.Metadata {
		e.metadata[k] = v
	}
	rec, err := q.readRun(jr, j)
	if err != nil {
		e.attempt, e.metadata[queueAttemptKey] = 1, 1
		return e
	}
	for k, v := range rec.Run.Metadata {
		e.metadata[k] = v
	}
	previous := 0
	if n, ok := e.metadata[queueAttemptKey].(float64); ok {
		previous = int(n)
	} else if n, ok := e.metadata[queueAttemptKey].(int); ok {
		previous = n
	}
	switch {
	case rec.Run.Status == run.StatusPaused:
		// Re-executed while parked for a person: nothing was lost.
		e.attempt, e.resumed, e.parked = max(previous, 1), true, true
	case e.metadata[queueRetryKey] == true:
		// The attempt that follows a failed one, which is recorded already.
		delete(e.metadata, queueRetryKey)
		e.attempt, e.resumed = max(previous, 1), true
	case e.metadata[queueRequeuedKey] == true:
		delete(e.metadata, queueRequeuedKey)
		e.attempt, e.resumed, e.requeued = previous+1, true, true
	default:
		if previous == 0 && rec.Run.Status == run.StatusRunning {
			previous = 1
		}
		e.attempt, e.resumed, e.lost = previous+1, previous > 0, previous > 0
		if previous > 0 {
			lost := "the worker running this attempt was lost"
			out := &run.Output{Metadata: e.metadata}
			_ = out.AppendAttempt(run.Attempt{Attempt: previous, Error: &lost, StartedAt: runhost.StartedAt(rec.Run), EndedAt: q.cfg.Now().Unix()})
			e.metadata = out.Metadata
		}
	}
	e.metadata[queueAttemptKey] = e.attempt
	return e
}

// input rebuilds the run's input, with the fields that route it.
func (j job) input() *run.Input {
	in := j.Input
	in.RunID, in.SessionID, in.UserID = j.RunID, j.SessionID, j.UserID
	in.Metadata, in.SessionState = j.Metadata, j.SessionState
	in.PersistOnStart, in.Accepted = true, true
	return &in
}

// decodeJob reads a workflow's input back as a job.
func decodeJob(input any) (job, error) {
	var j job
	if typed, ok := input.(job); ok {
		return typed, nil
	}
	data, err := json.Marshal(input)
	if err != nil {
		return j, err
	}
	if s, ok := input.(string); ok {
		data = []byte(s)
	}
	err = json.Unmarshal(data, &j)
	return j, err
}

// fail marks a run that could not be queued as ERROR.
func (q *Queue) fail(j job, message string) { q.settle(j, run.StatusError, message) }

// settle is settleIn outside a run's workflow.
func (q *Queue) settle(j job, status run.Status, message string) run.Status {
	status = q.settleIn(nil, j, status, message)
	q.finish(j.RunID, status)
	return status
}

// settleIn writes status onto a run whose stored row is not final yet (or is
// PAUSED), with a matching final event, and returns the run's final status:
// status, or the one already stored. Inside a workflow (jr not nil) the
// event also goes to the run's durable stream.
func (q *Queue) settleIn(jr *journal, j job, status run.Status, message string) run.Status {
	if stored, over := q.writeFinal(jr, j, status, message); over {
		return stored // the run stored its own outcome
	}
	base := q.runnerBase(j)
	if status == run.StatusCancelled {
		q.appendEvent(jr, j.RunID, &run.RunCancelled{BaseEvent: base, Reason: message})
	} else {
		q.appendEvent(jr, j.RunID, &run.RunError{BaseEvent: base, Content: message})
	}
	return status
}

// writeFinal writes status, with message as content, on a run's row that is
// not final yet (or is PAUSED), and returns the run's final status: status,
// or the one already stored (over). A database that refuses the write for a
// while (a restart, a dropped connection) is waited for, the write tried
// again with a doubling delay for up to finalSaveBudget; inside a workflow
// (jr not nil), a write that never lands fails the workflow, so that it is
// never recorded finished while its row says otherwise.
func (q *Queue) writeFinal(jr *journal, j job, status run.Status, message string) (stored run.Status, over bool) {
	err := q.retryStore(jr, j.RunID, "writing the final state", func(ctx context.Context) error {
		var err error
		stored, over, err = runhost.Settle(ctx, q.cfg.Store, j.RunID, j.UserID, status, message)
		return err
	})
	if err != nil {
		q.log.Error("durable: final state not written", slog.String("run_id", j.RunID), slog.String("status", string(status)),
			slog.String("error", err.Error()))
		if jr != nil {
			jr.unsaved(err)
		}
	}
	return stored, over
}

// readRun reads the run's row, waiting for a database that fails
// transiently as [Queue.retryStore] does.
func (q *Queue) readRun(jr *journal, j job) (storage.RunRecord, error) {
	var rec storage.RunRecord
	err := q.retryStore(jr, j.RunID, "reading the run", func(ctx context.Context) error {
		var err error
		rec, err = q.cfg.Store.GetRun(ctx, j.RunID, j.UserID)
		return err
	})
	return rec, err
}

// retryStore runs write, a write (or read) of a run's row, until it
// succeeds, fails for a reason that is not transient, or has been refused
// for finalSaveBudget: a database that refuses it for a while (a restart,
// a dropped connection) is waited for, with a doubling delay. Inside a
// workflow (jr not nil) it gives up early when the process stops; the
// run's workflow is then resumed, and the write made, elsewhere.
func (q *Queue) retryStore(jr *journal, runID, what string, write func(ctx context.Context) error) error {
	deadline := time.Now().Add(finalSaveBudget)
	delay := finalSaveFirstDelay
	for {
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		err := write(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if !storage.Transient(err) || time.Now().Add(delay).After(deadline) {
			return err
		}
		q.log.Warn("durable: "+what+" failed; trying again", slog.String("run_id", runID),
			slog.Duration("in", delay), slog.String("error", err.Error()))
		if !waitFinalRetry(jr, delay) {
			return fmt.Errorf("the process stopped: %w", err)
		}
		delay = min(2*delay, finalSaveMaxDelay)
	}
}

// waitFinalRetry waits delay before writeFinal tries again; false when the
// workflow's context ended meanwhile (the process stops).
func waitFinalRetry(jr *journal, delay time.Duration) bool {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	var stopped <-chan struct{}
	if jr != nil {
		stopped = jr.wf.Done()
	}
	select {
	case <-timer.C:
		return true
	case <-stopped:
		return false
	}
}

// How long, and how often, writeFinal tries a final write the database
// refuses for a transient reason.
const (
	finalSaveBudget     = runhost.DefaultSaveRetry
	finalSaveFirstDelay = 100 * time.Millisecond
	finalSaveMaxDelay   = 5 * time.Second
)

// journal runs a run's steps as DBOS steps of its workflow. Steps are
// numbered in the order the run asks for them, which a re-execution
// repeats; the number makes each step's idempotency key. A new attempt after
// a failed one numbers its steps from the start again and takes the result
// of every step the failed attempt completed instead of running it again —
// all but the last step (or batch of steps) it ran, on which it failed: a
// runner may record a failure as a step's result (a model call does, so a
// replay fails as the original did), and that one must run again.
type journal struct {
	wf    dbos.Context
	runID string
	log   *slog.Logger

	mu      sync.Mutex
	next    int
	done    map[int]doneStep        // steps that completed, by number
	last    []int                   // the numbers of the last step or batch run
	pending []streamEntry           // events not yet in the durable stream
	stop    context.CancelCauseFunc // interrupts the run; nil until set

	// disowned is set once the engine refused to record a step because
	// another execution owns the workflow now.
	disowned atomic.Bool

	// finalErr is why the run's final state could not be written.
	finalErr error
}

// unsaved records that the run's final state could not be written.
func (j *journal) unsaved(err error) {
	j.mu.Lock()
	j.finalErr = err
	j.mu.Unlock()
}

// unsavedErr is why the run's final state could not be written, or nil.
func (j *journal) unsavedErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.finalErr
}

// doneStep is a step that succeeded: its name and result.
type doneStep struct {
	name string
	out  []byte
}

var _ run.Journal = (*journal)(nil)

// newJournal starts the journal of a run's workflow.
func newJournal(wf dbos.Context, runID string, log *slog.Logger) *journal {
	return &journal{wf: wf, runID: runID, log: log, done: map[int]doneStep{}}
}

// stopWith sets the function that interrupts the run when the workflow
// turns out to be owned by another execution.
func (j *journal) stopWith(stop context.CancelCauseFunc) {
	j.mu.Lock()
	j.stop = stop
	j.mu.Unlock()
}

// disown notes that another execution owns the workflow now and interrupts
// the run: it stops at once and writes nothing more, neither its progress
// nor a final state (see [run.ErrDisowned]).
func (j *journal) disown() {
	if !j.disowned.Swap(true) {
		j.cancelRun(run.ErrDisowned)
	}
}

// cancelRun stops the run with cause.
func (j *journal) cancelRun(cause error) {
	j.mu.Lock()
	stop := j.stop
	j.mu.Unlock()
	if stop != nil {
		stop(cause)
	}
}

// isDisowned reports whether another execution owns the workflow now.
func (j *journal) isDisowned() bool { return j.disowned.Load() }

// checkOwned disowns the run when a step's error says the workflow is no
// longer owned by this execution.
func (j *journal) checkOwned(err error) {
	if err != nil && disowned(err) {
		j.disown()
	}
}

// key numbers the next step.
func (j *journal) key() (int, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.next++
	return j.next, j.runID + ":" + strconv.Itoa(j.next)
}

// restart numbers steps from the start again, for a new attempt, which
// runs again the last step or batch the failed attempt ran.
func (j *journal) restart() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.next = 0
	for _, n := range j.last {
		delete(j.done, n)
	}
	j.last = nil
}

// ran notes the numbers of the step or batch run last.
func (j *journal) ran(numbers ...int) {
	j.mu.Lock()
	j.last = numbers
	j.mu.Unlock()
}

// succeeded returns the result of step n when an earlier attempt ran it
// (under the same name) and it succeeded.
func (j *journal) succeeded(n int, name string) ([]byte, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	step, ok := j.done[n]
	if !ok || step.name != name {
		return nil, false
	}
	return step.out, true
}

// remember keeps the result of step n, which succeeded.
func (j *journal) remember(n int, name string, out []byte) {
	j.mu.Lock()
	j.done[n] = doneStep{name: name, out: out}
	j.mu.Unlock()
}

// bound runs fn under ctx (the run's: values and cancellation) and also
// stops it when the engine cancels the step.
func bound(ctx context.Context, key string, fn run.StepFunc) dbos.Step[[]byte] {
	return func(stepCtx context.Context) ([]byte, error) {
		c, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(stepCtx, cancel)
		defer stop()
		return fn(run.WithStepKey(c, key))
	}
}

// Step implements run.Journal.
func (j *journal) Step(ctx context.Context, name string, fn run.StepFunc) ([]byte, error) {
	n, key := j.key()
	if out, ok := j.succeeded(n, name); ok {
		return out, nil
	}
	j.ran(n)
	ctx, span := observe.StartStep(ctx, "durable.step "+name, observe.KindChain, attribute.Int("agno.durable.step", n))
	out, err := dbos.RunAsStep(j.wf, bound(ctx, key, fn), dbos.WithStepName(name))
	span.End(err)
	j.checkOwned(err)
	j.flush()
	if err != nil {
		return nil, fmt.Errorf("step %s: %w", name, err)
	}
	j.remember(n, name, out)
	return out, nil
}

// Steps implements run.Journal: each fn is started as its own step, in
// order, and they run concurrently.
func (j *journal) Steps(ctx context.Context, names []string, fns []run.StepFunc) ([][]byte, []error) {
	results, errs := make([][]byte, len(fns)), make([]error, len(fns))
	outcomes := make([]<-chan dbos.StepOutcome[[]byte], len(fns))
	numbers := make([]int, len(fns))
	for i, fn := range fns {
		n, key := j.key()
		numbers[i] = n
		if out, ok := j.succeeded(n, names[i]); ok {
			results[i] = out
			continue
		}
		ch, err := dbos.Go(j.wf, bound(ctx, key, fn), dbos.WithStepName(names[i]))
		if err != nil {
			errs[i] = fmt.Errorf("step %s: %w", names[i], err)
			continue
		}
		outcomes[i] = ch
	}
	j.ran(numbers...)
	for i, ch := range outcomes {
		if ch == nil {
			continue
		}
		outcome := <-ch
		results[i], errs[i] = outcome.Result, outcome.Err
		j.checkOwned(outcome.Err)
		if outcome.Err == nil {
			j.remember(numbers[i], names[i], outcome.Result)
		}
	}
	j.flush()
	return results, errs
}

// execute runs in on runner under exec: through the runner's run host when
// it takes an execution ([run.Executor]), else as its plain stream under
// the time limit and with the journal.
func execute(ctx context.Context, runner run.Runner, in *run.Input, exec run.Execution) iter.Seq2[run.Event, error] {
	if e, ok := runner.(run.Executor); ok {
		return e.Execute(ctx, in, exec)
	}
	return under(ctx, exec, func(ctx context.Context) iter.Seq2[run.Event, error] { return runner.Stream(ctx, in) })
}

// executeContinue is execute for a continuation.
func executeContinue(ctx context.Context, continuer run.Continuer, req *run.ContinueRequest, exec run.Execution) iter.Seq2[run.Event, error] {
	if e, ok := continuer.(run.Executor); ok {
		return e.ExecuteContinue(ctx, req, exec)
	}
	return under(ctx, exec, func(ctx context.Context) iter.Seq2[run.Event, error] { return continuer.Continue(ctx, req) })
}

// under streams a runner that takes no execution with exec's time limit
// and journal on its context.
func under(ctx context.Context, exec run.Execution, stream func(context.Context) iter.Seq2[run.Event, error]) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		ctx, cancel := exec.Context(ctx)
		defer cancel()
		for event, err := range stream(ctx) {
			if !yield(event, err) {
				return
			}
		}
	}
}
