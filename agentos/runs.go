package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// runRoutes mounts the run routes of agents and teams (agentos-api.md
// §3–4).
func (o *OS) runRoutes(mux *http.ServeMux) { o.mountWith(mux, o.runEndpoints(), false) }

// runEndpoints lists the run routes with the scope each needs: the same
// handlers for an agent's runs and a team's. Running, cancelling and
// continuing work without a store; reads need one.
func (o *OS) runEndpoints() []endpoint {
	a, t, wf := agentComponent, teamComponent, workflowComponent
	return []endpoint{
		o.on(a, "POST /agents/{agent_id}/runs", "run", o.handleCreateRun),
		o.on(a, "GET /agents/{agent_id}/runs", "read", o.handleListRuns),
		o.on(a, "GET /agents/{agent_id}/runs/{run_id}", "read", o.handleGetRun),
		o.on(a, "POST /agents/{agent_id}/runs/{run_id}/cancel", "run", o.handleCancelRun),
		o.on(a, "POST /agents/{agent_id}/runs/{run_id}/continue", "run", o.handleContinueRun),
		o.on(a, "POST /agents/{agent_id}/runs/{run_id}/resume", "run", o.handleResumeRun),
		o.on(a, "GET /agents/{agent_id}/runs/{run_id}/checkpoints", "read", o.handleListCheckpoints),
		o.on(a, "GET /agents/{agent_id}/runs/{run_id}/checkpoints/{message_index}", "read", o.handleGetCheckpoint),

		o.on(t, "POST /teams/{team_id}/runs", "run", o.handleCreateRun),
		o.on(t, "GET /teams/{team_id}/runs", "read", o.handleListRuns),
		o.on(t, "GET /teams/{team_id}/runs/{run_id}", "read", o.handleGetRun),
		o.on(t, "POST /teams/{team_id}/runs/{run_id}/cancel", "run", o.handleCancelRun),
		o.on(t, "POST /teams/{team_id}/runs/{run_id}/continue", "run", o.handleContinueRun),
		o.on(t, "POST /teams/{team_id}/runs/{run_id}/resume", "run", o.handleResumeRun),
		o.on(t, "GET /teams/{team_id}/runs/{run_id}/checkpoints", "read", o.handleListCheckpoints),
		o.on(t, "GET /teams/{team_id}/runs/{run_id}/checkpoints/{message_index}", "read", o.handleGetCheckpoint),

		o.on(wf, "POST /workflows/{workflow_id}/runs", "run", o.handleCreateRun),
		o.on(wf, "GET /workflows/{workflow_id}/runs", "read", o.handleListRuns),
		o.on(wf, "GET /workflows/{workflow_id}/runs/{run_id}", "read", o.handleGetRun),
		o.on(wf, "POST /workflows/{workflow_id}/runs/{run_id}/cancel", "run", o.handleCancelRun),
		o.on(wf, "POST /workflows/{workflow_id}/runs/{run_id}/continue", "run", o.handleContinueRun),
		o.on(wf, "POST /workflows/{workflow_id}/runs/{run_id}/resume", "run", o.handleResumeRun),
	}
}

// runningRowDelay is how long a run answered with stream=false may go
// before its RUNNING row is written (run.Input.PersistDelay): most runs of
// a fast model end sooner and commit once; a longer one is listed in
// flight from its next progress save on.
const runningRowDelay = 250 * time.Millisecond

// handleCreateRun runs an agent or a team. A team's form also takes
// monitor (Agno's), accepted and not used.
func (o *OS) handleCreateRun(w http.ResponseWriter, r *http.Request, runner run.Runner) {
	// With a media store, uploads stream into it while the form is read.
	store := o.mediaStoreFor(runner)
	f, err := parseFormWith(w, r, store)
	if err != nil {
		o.writeFormError(w, r, err)
		return
	}
	in := &run.Input{
		InputContent: f.required("message"),
		SessionID:    f.str("session_id"),
		UserID:       o.userScope(r, f.str("user_id")),
		SessionState: f.jsonObject("session_state"),
		Metadata:     f.jsonObject("metadata"),
		OutputSchema: f.outputSchema("output_schema"),
		// Listed while in flight; a crash leaves a RUNNING row behind.
		PersistOnStart: true,
	}
	stream := f.boolean("stream", true)
	background := f.boolean("background", false)
	if !stream && !background {
		// Nobody sees the run until it answers: a run that ends within
		// this delay writes its row once.
		in.PersistDelay = runningRowDelay
	}
	switch kindOf(runner) {
	case run.KindTeam:
		f.boolean("monitor", true)
	case run.KindWorkflow:
		// Agno's versioned and factory-built workflows; agnogo's are
		// declared, in one version.
		f.str("version")
		f.jsonObject("factory_input")
	}
	f.jsonObject("dependencies")
	f.jsonInto("images", &in.Images, "a JSON array of images")
	f.jsonInto("audio", &in.Audios, "a JSON array of audio clips")
	f.jsonInto("videos", &in.Videos, "a JSON array of videos")
	f.jsonInto("input_files", &in.Files, "a JSON array of files")
	var filesMetadata []map[string]any
	f.jsonInto("files_metadata", &filesMetadata, "a JSON array of objects, one per uploaded file")
	f.noServerPaths(in)
	f.noClientMediaIDs(in)
	includeMedia := f.boolean(includeMediaField, false)
	if len(f.issues) > 0 {
		f.discardStored(r.Context(), store)
		writeValidation(w, f.issues...)
		return
	}
	if store != nil {
		addStoredUploads(in, f.storedUploads())
		if in, err = offloadJSONMedia(r.Context(), store, in); err != nil {
			f.discardStored(r.Context(), store)
			o.writeFormError(w, r, err)
			return
		}
	} else if err := addUploads(in, f.uploads(uploadField)); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if extra := f.extra(); len(extra) > 0 {
		if in.Metadata == nil {
			in.Metadata = map[string]any{}
		}
		for k, v := range extra {
			if _, set := in.Metadata[k]; !set {
				in.Metadata[k] = v
			}
		}
	}
	if in.SessionID == "" {
		in.SessionID, in.NewSession = newID(), true
	}
	in.RunID = newID()
	if store != nil {
		defer o.discardUnstarted(r.Context(), store, in)
	}
	if background {
		o.startBackground(w, r, runner, in, stream)
		return
	}
	o.serveRun(w, r, stream, in.RunID, &inflightRun{runner: runner, sessionID: in.SessionID, userID: in.UserID},
		func(ctx context.Context) iter.Seq2[run.Event, error] { return runner.Stream(ctx, in) },
		func(ctx context.Context) (out *run.Output, err error) {
			if c, ok := runner.(run.Collector); ok {
				out, err = c.Run(ctx, in)
			} else {
				out, err = o.collect(ctx, runner.Stream(ctx, in), in.RunID, in.UserID)
			}
			if includeMedia && out != nil {
				// The answer shows references, unless the client asked for the bytes.
				if filled, fillErr := o.withMediaContent(ctx, out); fillErr == nil {
					out = filled
				} else {
					o.log.WarnContext(ctx, "include_media_content: media not read back", "run_id", out.RunID, "error", fillErr)
				}
			}
			return out, err
		})
}

// serveRun executes a run tracked for cancellation, answering SSE when
// stream is set and the run's JSON otherwise. The run is bound to the
// request: a client that goes away cancels it.
func (o *OS) serveRun(w http.ResponseWriter, r *http.Request, stream bool, runID string, meta *inflightRun,
	events func(context.Context) iter.Seq2[run.Event, error], collect func(context.Context) (*run.Output, error)) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	meta.cancel = cancel
	done, ok := o.track(runID, meta)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "the server is shutting down")
		return
	}
	defer done()
	if !stream {
		out, err := collect(ctx)
		o.logFailedOutput(ctx, meta, out, err)
		if out == nil {
			o.writeRunError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, runSchema(out))
		return
	}
	// Every streamed event goes through the event log, which numbers it
	// (event_index) and keeps it for POST …/resume, in the stream of the
	// run the runner's own events name: a member's events passed on in a
	// team's stream are the team run's.
	var sse *sseWriter
	var last run.Event
	own := ownRun(runID)
	defer func() { o.finishLogged(string(own), last, run.StatusCancelled) }()
	for event, err := range o.logFailure(ctx, meta, events(ctx)) {
		if err != nil {
			var busy *run.SessionBusyError
			if sse == nil && errors.As(err, &busy) {
				writeBusyEvent(w, busy, runID, meta.sessionID, meta.runner)
				return
			}
			if sse == nil {
				o.writeRunError(w, r, err)
				return
			}
			_ = sse.errorFrame(err.Error())
			return
		}
		entry := o.events.AppendTo(own.of(event), event)
		last = event
		if sse == nil {
			sse = startSSE(w)
		}
		if sse.entry(entry) != nil {
			return // the client left; returning cancels the run
		}
	}
}

// finishLogged records in the event log how run runID, whose last event
// was last, ended: the status its terminal event names, else fallback (a
// stream that stopped before its terminal event reached us).
func (o *OS) finishLogged(runID string, last run.Event, fallback run.Status) {
	if last == nil {
		return
	}
	status, ok := run.FinalStatus(last)
	if !ok {
		status = fallback
	}
	o.events.Finish(runID, status)
}

// ownRun is the run a runner's stream of events belongs to: the run its
// own events name (a continuation that forks goes on as a new run), never
// the member runs whose events a team passes on ([run.MemberEvent]).
type ownRun string

// of notes e and returns the run whose stream it belongs to.
func (o *ownRun) of(e run.Event) string {
	if _, member := e.(*run.MemberEvent); !member {
		if id := e.Base().RunID; id != "" {
			*o = ownRun(id)
		}
	}
	return string(*o)
}

// runnerBase is the identity of a runner's own event (see
// [run.BaseEvent.SetRunner]).
func runnerBase(r run.Runner, runID, sessionID string) run.BaseEvent {
	base := run.BaseEvent{RunID: runID, SessionID: sessionID}
	base.SetRunner(kindOf(r), r.ID(), r.Name())
	return base
}

// writeRunError answers a run that could not start.
func (o *OS) writeRunError(w http.ResponseWriter, r *http.Request, err error) {
	var busy *run.SessionBusyError
	switch {
	case errors.As(err, &busy):
		writeJSON(w, http.StatusConflict, busyBody{errorBody: errorBody{Detail: busy.Error(), ErrorID: run.ErrorTypeSessionBusy,
			ErrorType: run.ErrorTypeSessionBusy}, RunID: busy.RunID})
	case errors.Is(err, run.ErrUnsupportedMedia):
		writeJSON(w, http.StatusBadRequest, errorBody{Detail: err.Error(), ErrorID: run.ClassUnsupportedMedia.ErrorType(), ErrorType: run.ClassUnsupportedMedia.ErrorType()})
	case errors.Is(err, run.ErrRunNotFound), errors.Is(err, storage.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, run.ErrNotContinuable):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, storage.ErrInvalidText), errors.Is(err, run.ErrContinueOutOfRange):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
	case errors.Is(err, run.ErrInvalidContinue), errors.Is(err, run.ErrUnresolved), errors.Is(err, run.ErrInvalidInput),
		errors.Is(err, storage.ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		o.writeStoreError(w, r, err)
	}
}

// busyBody is the 409 of a turn refused because its session is busy.
type busyBody struct {
	errorBody
	RunID string `json:"run_id"`
}

// writeBusyEvent answers a streaming request refused because its session
// is busy: one RunError event (TeamRunError for a team) and nothing else.
func writeBusyEvent(w http.ResponseWriter, busy *run.SessionBusyError, runID, sessionID string, runner run.Runner) {
	sse := startSSE(w)
	_ = sse.event(&run.RunError{BaseEvent: runnerBase(runner, runID, sessionID),
		Content: busy.Error(), ErrorType: run.ErrorTypeSessionBusy, ErrorID: run.ErrorTypeSessionBusy,
		AdditionalData: map[string]any{"run_id": busy.RunID}})
}

// collect runs a stream of run runID (or of the run it continues as) to its
// end and returns the stored run, for runners that cannot return their
// output directly.
func (o *OS) collect(ctx context.Context, events iter.Seq2[run.Event, error], runID, userID string) (*run.Output, error) {
	var last run.Event
	own := ownRun(runID)
	for event, err := range events {
		if err != nil {
			return nil, err
		}
		last = event
		own.of(event)
	}
	if last == nil {
		return nil, errors.New("the run produced no events")
	}
	if o.cfg.Store == nil {
		return nil, errors.New("the runner returns no output and there is no store to read it from")
	}
	rec, err := o.cfg.Store.GetRun(context.WithoutCancel(ctx), string(own), userID)
	if err != nil {
		return nil, err
	}
	return rec.Run, nil
}

// runSchema is a run as the API returns it: the run's own fields plus
// run_input, the user's message as text. The run is encoded once, and
// run_input added before the object's closing brace.
func runSchema(out *run.Output) json.RawMessage {
	data, err := json.Marshal(out)
	if err != nil {
		data, _ = json.Marshal(map[string]any{"run_id": out.RunID, "status": out.Status})
		return data
	}
	if out.Input == nil {
		return data
	}
	input, err := json.Marshal(out.Input.ContentString())
	if err != nil {
		return data
	}
	schema := make([]byte, 0, len(data)+len(input)+len(`,"run_input":`))
	schema = append(schema, data[:len(data)-1]...) // the object without its '}'
	if len(data) > 2 {
		schema = append(schema, ',')
	}
	schema = append(schema, `"run_input":`...)
	schema = append(append(schema, input...), '}')
	return schema
}

// needStore answers 503 when the server has no store.
func (o *OS) needStore(w http.ResponseWriter) bool {
	if o.cfg.Store == nil {
		writeError(w, http.StatusServiceUnavailable, "this AgentOS has no database configured")
		return false
	}
	return true
}

func (o *OS) handleListRuns(w http.ResponseWriter, r *http.Request, runner run.Runner) {
	if !o.needStore(w) {
		return
	}
	q := r.URL.Query()
	sessionID := q.Get("session_id")
	if sessionID == "" {
		writeValidation(w, validationIssue{Loc: []string{"query", "session_id"}, Msg: "Field required", Type: "missing"})
		return
	}
	query := storage.RunQuery{SessionID: sessionID, UserID: o.userScope(r, q.Get("user_id"))}
	if status := q.Get("status"); status != "" {
		parsed, err := run.ParseStatus(status)
		if err != nil {
			writeValidation(w, validationIssue{Loc: []string{"query", "status"}, Msg: err.Error(), Type: "enum"})
			return
		}
		query.Statuses = []run.Status{parsed}
	}
	records, _, err := o.cfg.Store.GetRuns(r.Context(), query)
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	runs := make([]json.RawMessage, 0, len(records))
	for _, rec := range records {
		if rec.Run.RunnerID() == runner.ID() {
			runs = append(runs, runSchema(o.withStreamed(r.Context(), rec.Run)))
		}
	}
	writeJSON(w, http.StatusOK, runs)
}

// storedRun reads a run of the path's runner, in the caller's scope; a run
// of another runner or session is not found.
func (o *OS) storedRun(w http.ResponseWriter, r *http.Request, runner run.Runner) (*run.Output, bool) {
	q := r.URL.Query()
	rec, err := o.cfg.Store.GetRun(r.Context(), r.PathValue("run_id"), o.userScope(r, q.Get("user_id")))
	if err == nil && (rec.Run.RunnerID() != runner.ID() || (q.Get("session_id") != "" && rec.SessionID != q.Get("session_id"))) {
		err = storage.ErrNotFound
	}
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			writeError(w, http.StatusNotFound, "Run not found")
		} else {
			o.writeStoreError(w, r, err)
		}
		return nil, false
	}
	return rec.Run, true
}

func (o *OS) handleGetRun(w http.ResponseWriter, r *http.Request, runner run.Runner) {
	if !o.needStore(w) {
		return
	}
	out, ok := o.storedRun(w, r, runner)
	if !ok {
		return
	}
	out = o.withStreamed(r.Context(), out)
	if includeMediaContent(r) {
		filled, err := o.withMediaContent(r.Context(), out)
		if err != nil {
			o.internalError(w, r, err)
			return
		}
		out = filled
	}
	writeJSON(w, http.StatusOK, runSchema(out))
}

func (o *OS) handleCancelRun(w http.ResponseWriter, r *http.Request, runner run.Runner) {
	runID := r.PathValue("run_id")
	o.mu.Lock()
	live, found := o.inflight[runID]
	o.mu.Unlock()
	if found && live.runner.ID() == runner.ID() && (live.userID == o.userScope(r, live.userID)) {
		o.cancelRun(runID)
		writeJSON(w, http.StatusOK, map[string]any{})
		return
	}
	if o.cfg.Store != nil {
		if _, ok := o.storedRun(w, r, runner); !ok {
			return
		}
		if o.cfg.Queue != nil {
			// Queued, or executing under the durable queue (here or on another
			// replica).
			if _, err := o.cfg.Queue.Cancel(r.Context(), runID); err != nil {
				o.writeStoreError(w, r, err)
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{}) // over already, or cancelled
		return
	}
	writeError(w, http.StatusNotFound, "Run not found")
}

// continueChecker is a runner that can tell, without running anything,
// why a continuation would be refused (the native agent can).
type continueChecker interface {
	CheckContinue(ctx context.Context, req *run.ContinueRequest) error
}

func (o *OS) handleContinueRun(w http.ResponseWriter, r *http.Request, runner run.Runner) {
	continuer, ok := runner.(run.Continuer)
	if !ok {
		writeError(w, http.StatusBadRequest, "this "+string(kindOf(runner))+"'s runs cannot be continued")
		return
	}
	f, err := parseForm(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req := &run.ContinueRequest{
		RunID:        r.PathValue("run_id"),
		SessionID:    f.str("session_id"),
		UserID:       o.userScope(r, f.str("user_id")),
		Input:        f.str("input"),
		ContinueFrom: f.str("continue_from"),
		Fork:         f.boolean("fork", false),
	}
	f.jsonInto("tools", &req.Tools, "a JSON array of tool executions")
	if kindOf(runner) == run.KindWorkflow {
		f.jsonInto("step_requirements", &req.StepRequirements, "a JSON array of step requirements, each resolved (confirmed, user_input, selected_choices or executor_requirements)")
		f.jsonObject("factory_input")
	}
	stream := f.boolean("stream", true)
	background := f.boolean("background", false)
	if len(f.issues) > 0 {
		writeValidation(w, f.issues...)
		return
	}
	if !o.gateContinue(w, r, runner, req) {
		return // waits for an admin's approval
	}
	if checker, ok := runner.(continueChecker); ok {
		// Refused now, with what to fix, rather than failing the run once
		// it goes on (on the queue, after its 202).
		if err := checker.CheckContinue(r.Context(), req); err != nil {
			o.writeRunError(w, r, err)
			return
		}
	}
	if o.cfg.Queue != nil {
		parked, err := o.cfg.Queue.Parked(r.Context(), req.RunID, req.UserID)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			o.writeStoreError(w, r, err)
			return
		}
		switch {
		case parked && !background:
			writeError(w, http.StatusConflict, "this run is paused on the durable queue: continue it with background=true")
			return
		case parked:
			o.continueDurable(w, r, runner, req, stream)
			return
		}
	}
	// A continued run may go on as a new run (a fork): cancelling either id
	// stops it.
	meta := &inflightRun{runner: runner, sessionID: req.SessionID, userID: req.UserID}
	o.serveRun(w, r, stream, req.RunID, meta,
		func(ctx context.Context) iter.Seq2[run.Event, error] {
			return o.forkedAs(continuer.Continue(ctx, req), req.RunID, meta)
		},
		func(ctx context.Context) (*run.Output, error) {
			return o.collect(ctx, o.forkedAs(continuer.Continue(ctx, req), req.RunID, meta), req.RunID, req.UserID)
		})
}
