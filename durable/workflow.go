package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// settleTimeout bounds writing a run's final state outside the run.
const settleTimeout = 10 * time.Second

// execute is the workflow of one run: it runs the agent with a journal, so
// each model call and tool call is a step. Re-executed after a crash, it
// either gives up (the attempts are spent) or goes on from the last
// completed step.
func (q *Queue) execute(ctx dbos.Context, j job) (string, error) {
	jr := &journal{wf: ctx, runID: j.RunID, log: q.log}
	status := q.runWorkflow(ctx, jr, j)
	jr.flush()
	if status != run.StatusPaused {
		if err := dbos.CloseStream(ctx, streamKey); err != nil {
			q.log.Warn("durable: closing the event stream failed", slog.String("run_id", j.RunID), slog.String("error", err.Error()))
		}
	}
	q.finish(j.RunID, status)
	return string(status), nil
}

// runWorkflow drives one run to its final status, parking while it is
// paused.
func (q *Queue) runWorkflow(ctx dbos.Context, jr *journal, j job) run.Status {
	runner, ok := q.runners[j.AgentID]
	if !ok {
		return q.settleIn(jr, j, run.StatusError, fmt.Sprintf("agent %s is not served by this process", j.AgentID))
	}
	exec := q.nextAttempt(j)
	attempt := exec.attempt
	j.Metadata = exec.metadata
	if exec.resumed {
		q.seedIndices(j.RunID)
	}
	if attempt > q.cfg.MaxAttempts {
		return q.settleIn(jr, j, run.StatusError, lostMessage(q.cfg.MaxAttempts, j.RunID))
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	q.mu.Lock()
	q.running[j.RunID] = cancel
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
		q.appendEvent(jr, &run.RunRetry{BaseEvent: run.BaseEvent{RunID: j.RunID, SessionID: j.SessionID, AgentID: j.AgentID,
			AgentName: runner.Name(), CreatedAt: q.cfg.Now().Unix()},
			Attempt: attempt, MaxAttempts: q.cfg.MaxAttempts, Error: retryReason(exec.requeued)})
	}
	journaled := run.WithJournal(runCtx, jr)
	status := q.follow(jr, j, runner.Stream(journaled, j.input()))
	for status == run.StatusPaused {
		// The run waits for a person: the workflow parks, holding its
		// session's place in the queue, until POST …/continue sends the
		// resolution (or the run is cancelled).
		jr.flush()
		q.finish(j.RunID, run.StatusPaused)
		req, ok := q.awaitContinue(ctx, j)
		if !ok {
			return q.settleIn(jr, j, run.StatusCancelled, "the paused run was cancelled")
		}
		continuer, ok := runner.(run.Continuer)
		if !ok {
			return q.settleIn(jr, j, run.StatusError, "agent "+j.AgentID+" cannot continue runs")
		}
		req.RunID, req.SessionID, req.UserID = j.RunID, j.SessionID, j.UserID
		q.register(j.RunID, run.StatusRunning)
		status = q.follow(jr, j, continuer.Continue(journaled, req))
	}
	return status
}

// retryReason is what a RunRetry of the queue says about the last attempt.
func retryReason(requeued bool) string {
	if requeued {
		return "the run was requeued"
	}
	return "the worker running this run was lost"
}

// appendEvent numbers an event in the event log and keeps it for the run's
// durable event stream; with Redis it also goes to the run's followers on
// other replicas at once.
func (q *Queue) appendEvent(jr *journal, e run.Event) {
	entry := q.cfg.Events.Append(e)
	if jr != nil {
		jr.record(entry)
	}
	final, _ := run.FinalStatus(e)
	q.redis.event(e.Base().RunID, entry, final)
}

// follow passes a run's events to the event log and returns the status the
// run ended with, writing ERROR when it could not start or ended without a
// final event.
func (q *Queue) follow(jr *journal, j job, events iter.Seq2[run.Event, error]) run.Status {
	var last run.Event
	for event, err := range events {
		if err != nil {
			return q.settleIn(jr, j, run.StatusError, err.Error())
		}
		q.appendEvent(jr, event)
		last = event
	}
	if status, final := run.FinalStatus(last); final {
		return status
	}
	return q.settleIn(jr, j, run.StatusError, "the run ended without a final state")
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

// awaitContinue waits for the continuation of a paused run; false when the
// run was cancelled meanwhile.
func (q *Queue) awaitContinue(ctx dbos.Context, j job) (*run.ContinueRequest, bool) {
	for {
		msg, err := dbos.Recv[continuation](ctx, continueTopic, parkInterval)
		switch {
		case err == nil && msg.Request != nil && !msg.Cancel:
			return msg.Request, true
		case errors.Is(err, dbos.ErrTimeout) && ctx.Err() == nil:
			continue
		default:
			return nil, false
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
	// metadata is the run's metadata for this execution.
	metadata map[string]any
}

// nextAttempt numbers this execution of the run and returns the metadata to
// run it with. A run whose row shows an earlier execution that never ended
// (RUNNING, or PENDING with a recorded attempt) was cut short by a lost
// worker: that attempt is added to metadata.attempts. A requeued run (see
// [Queue.Requeue]) and a paused one lost nothing.
func (q *Queue) nextAttempt(j job) execution {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	e := execution{metadata: map[string]any{}}
	for k, v := range j.Metadata {
		e.metadata[k] = v
	}
	rec, err := q.cfg.Store.GetRun(ctx, j.RunID, j.UserID)
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
		e.attempt, e.resumed = max(previous, 1), true
	case e.metadata[queueRequeuedKey] == true:
		delete(e.metadata, queueRequeuedKey)
		e.attempt, e.resumed, e.requeued = previous+1, true, true
	default:
		if previous == 0 && rec.Run.Status == run.StatusRunning {
			previous = 1
		}
		e.attempt, e.resumed = previous+1, previous > 0
		if previous > 0 {
			lost := "the worker running this attempt was lost"
			out := &run.Output{Metadata: e.metadata}
			_ = out.AppendAttempt(run.Attempt{Attempt: previous, Error: &lost, StartedAt: rec.Run.CreatedAt, EndedAt: q.cfg.Now().Unix()})
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
	in.PersistOnStart = true
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
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	rec, err := q.cfg.Store.GetRun(ctx, j.RunID, j.UserID)
	if err == nil && rec.Run.Status.Terminal() && rec.Run.Status != run.StatusPaused {
		return rec.Run.Status // the run stored its own outcome; a paused one can still be cancelled
	}
	if err == nil {
		rec.Run.Status = status
		rec.Run.Content, rec.Run.ContentType = message, "str"
		_, err = q.cfg.Store.UpsertRun(ctx, rec)
	}
	if err != nil {
		q.log.Error("durable: final state not written", slog.String("run_id", j.RunID), slog.String("error", err.Error()))
	}
	base := run.BaseEvent{RunID: j.RunID, SessionID: j.SessionID, AgentID: j.AgentID, CreatedAt: q.cfg.Now().Unix()}
	if r, ok := q.runners[j.AgentID]; ok {
		base.AgentName = r.Name()
	}
	if status == run.StatusCancelled {
		q.appendEvent(jr, &run.RunCancelled{BaseEvent: base, Reason: message})
	} else {
		q.appendEvent(jr, &run.RunError{BaseEvent: base, Content: message})
	}
	return status
}

// RecordPending writes an accepted run's PENDING row, creating its session
// when it is new.
func RecordPending(ctx context.Context, store storage.Store, runner run.Runner, in *run.Input, now time.Time) error {
	rec := storage.RunRecord{SessionID: in.SessionID, UserID: in.UserID, Run: &run.Output{
		RunID: in.RunID, AgentID: runner.ID(), AgentName: runner.Name(), SessionID: in.SessionID, UserID: in.UserID,
		Input: in, Status: run.StatusPending, Metadata: in.Metadata, CreatedAt: now.Unix(),
	}}
	_, err := store.GetSession(ctx, in.SessionID, storage.GetSessionOptions{UserID: in.UserID})
	switch {
	case err == nil:
		_, err = store.UpsertRun(ctx, rec)
	case errors.Is(err, storage.ErrNotFound):
		session := &storage.Session{SessionID: in.SessionID, SessionType: storage.SessionTypeAgent, AgentID: runner.ID(), UserID: in.UserID}
		_, _, err = store.SaveRun(ctx, session, rec)
	}
	if err != nil {
		return fmt.Errorf("record run %s: %w", in.RunID, err)
	}
	return nil
}

// journal runs a run's steps as DBOS steps of its workflow. Steps are
// numbered in the order the run asks for them, which a re-execution
// repeats; the number makes each step's idempotency key.
type journal struct {
	wf    dbos.Context
	runID string
	log   *slog.Logger

	mu      sync.Mutex
	next    int
	pending []streamEntry // events not yet in the durable stream
}

var _ run.Journal = (*journal)(nil)

// key numbers the next step.
func (j *journal) key() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.next++
	return j.runID + ":" + strconv.Itoa(j.next)
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
	out, err := dbos.RunAsStep(j.wf, bound(ctx, j.key(), fn), dbos.WithStepName(name))
	j.flush()
	if err != nil {
		return nil, fmt.Errorf("step %s: %w", name, err)
	}
	return out, nil
}

// Steps implements run.Journal: each fn is started as its own step, in
// order, and they run concurrently.
func (j *journal) Steps(ctx context.Context, names []string, fns []run.StepFunc) ([][]byte, []error) {
	results, errs := make([][]byte, len(fns)), make([]error, len(fns))
	outcomes := make([]<-chan dbos.StepOutcome[[]byte], len(fns))
	for i, fn := range fns {
		ch, err := dbos.Go(j.wf, bound(ctx, j.key(), fn), dbos.WithStepName(names[i]))
		if err != nil {
			errs[i] = fmt.Errorf("step %s: %w", names[i], err)
			continue
		}
		outcomes[i] = ch
	}
	for i, ch := range outcomes {
		if ch == nil {
			continue
		}
		outcome := <-ch
		results[i], errs[i] = outcome.Result, outcome.Err
	}
	j.flush()
	return results, errs
}
