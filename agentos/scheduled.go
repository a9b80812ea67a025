package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/scheduler"
	"github.com/agnogo/agnogo/storage"
)

// SchedulerConfig turns on firing the schedules of /schedules. The routes
// exist whenever the store keeps schedules; without Enabled nothing fires
// and POST /schedules/{id}/trigger answers 503.
type SchedulerConfig struct {
	// Enabled starts the scheduler with the server. Default false.
	Enabled bool
	// PollInterval bounds the wait between looks for due schedules (the
	// scheduler also wakes at the next known fire). Default 15s.
	PollInterval time.Duration
	// RunPollInterval is how often an attempt reads its run's state.
	// Default 1s.
	RunPollInterval time.Duration
	// LeaseTTL is how long an attempt stays with a replica that stopped
	// renewing it before another replica takes it over. Default three
	// poll intervals, at least 15s.
	LeaseTTL time.Duration
	// MaxConcurrent caps the attempts this replica executes at once.
	// Default 10.
	MaxConcurrent int
	// Worker names this replica in leases. Default: random.
	Worker string
}

// startScheduler builds and starts the scheduler when it is enabled and
// the store keeps schedules.
func (o *OS) startScheduler() error {
	cfg := o.cfg.Scheduler
	store, ok := o.cfg.Store.(storage.ScheduleStore)
	if !cfg.Enabled || !ok {
		return nil
	}
	s, err := scheduler.New(scheduler.Config{
		Store: store, Executor: scheduleExecutor{o: o}, PollInterval: cfg.PollInterval, RunPollInterval: cfg.RunPollInterval,
		LeaseTTL: cfg.LeaseTTL, MaxConcurrent: cfg.MaxConcurrent, Worker: cfg.Worker, Logger: o.log, Now: o.cfg.Now,
	})
	if err != nil {
		return err
	}
	o.scheduler = s
	s.Start(context.Background())
	return nil
}

// scheduleExecutor carries out attempts by calling this server's own
// routes in-process, as the schedule's owner: no HTTP hop, no token, and
// no right the owner lacks. A run endpoint's run is started in the
// background with the attempt's idempotency key, so an attempt taken over
// after a crash follows the run its first executor started.
type scheduleExecutor struct{ o *OS }

// ownerPrincipal is who a schedule's calls act as: its owner, holding only
// the run and read scopes of the component a run endpoint names; an
// unowned schedule, or one calling any other endpoint (which only an admin
// may schedule), acts as an admin.
func ownerPrincipal(s *storage.Schedule) Principal {
	kind, id, isRun := scheduler.RunTarget(s.Method, s.Endpoint)
	if s.UserID == "" || !isRun {
		return Principal{Subject: s.UserID, Admin: true}
	}
	resource := kind + "s"
	return Principal{Subject: s.UserID, Scopes: []string{scopeName(resource, id, "run"), scopeName(resource, id, "read")}}
}

// Start implements [scheduler.Executor].
func (e scheduleExecutor) Start(ctx context.Context, s *storage.Schedule, attempt *storage.ScheduleRun) (scheduler.Started, error) {
	ctx = asPrincipal(ctx, ownerPrincipal(s))
	if _, _, isRun := scheduler.RunTarget(s.Method, s.Endpoint); !isRun {
		return e.call(ctx, s)
	}
	form, err := runForm(s, attempt)
	if err != nil {
		return scheduler.Started{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return scheduler.Started{}, fmt.Errorf("schedule %s: %w", s.ID, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", "schedule-run-"+attempt.ID)
	resp := e.o.serveInProcess(req)
	if resp.code >= 400 {
		return scheduler.Started{StatusCode: resp.code, Done: true, Status: storage.ScheduleRunFailed, Error: resp.body.String()}, nil
	}
	var accepted struct {
		RunID     string `json:"run_id"`
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(resp.body.Bytes(), &accepted); err != nil || accepted.RunID == "" {
		return scheduler.Started{StatusCode: resp.code, Done: true, Status: storage.ScheduleRunFailed,
			Error: "the run endpoint answered without a run_id: " + resp.body.String()}, nil
	}
	return scheduler.Started{StatusCode: resp.code, RunID: accepted.RunID, SessionID: accepted.SessionID}, nil
}

// runForm is a run endpoint's form from a schedule's payload: booleans as
// true/false, objects and lists as JSON, anything else as text; the
// run always goes to the background without streaming, as the owner, and
// its metadata names the schedule and attempt.
func runForm(s *storage.Schedule, attempt *storage.ScheduleRun) (url.Values, error) {
	form := url.Values{}
	for key, value := range s.Payload {
		switch key {
		case "stream", "background", "version", "agno_component_version", "user_id", "metadata":
			continue
		}
		switch v := value.(type) {
		case nil:
		case bool:
			form.Set(key, fmt.Sprint(v))
		case string:
			form.Set(key, v)
		case map[string]any, []any:
			data, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("schedule %s: payload field %s: %w", s.ID, key, err)
			}
			form.Set(key, string(data))
		default:
			form.Set(key, fmt.Sprint(v))
		}
	}
	metadata := map[string]any{}
	if m, ok := s.Payload["metadata"].(map[string]any); ok {
		for k, v := range m {
			if k != "agno_component_version" {
				metadata[k] = v
			}
		}
	}
	metadata[runhost.ScheduleIDKey], metadata[runhost.ScheduleRunIDKey] = s.ID, attempt.ID
	data, err := json.Marshal(metadata)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: metadata: %w", s.ID, err)
	}
	form.Set("metadata", string(data))
	form.Set("stream", "false")
	form.Set("background", "true")
	if s.UserID != "" {
		form.Set("user_id", s.UserID)
	}
	return form, nil
}

// call carries out a schedule of any other endpoint: its JSON payload
// sent with its method, 2xx a success.
func (e scheduleExecutor) call(ctx context.Context, s *storage.Schedule) (scheduler.Started, error) {
	var body bytes.Buffer
	if s.Payload != nil && s.Method != http.MethodGet && s.Method != http.MethodDelete {
		if err := json.NewEncoder(&body).Encode(s.Payload); err != nil {
			return scheduler.Started{}, fmt.Errorf("schedule %s: payload: %w", s.ID, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, s.Method, s.Endpoint, &body)
	if err != nil {
		return scheduler.Started{}, fmt.Errorf("schedule %s: %w", s.ID, err)
	}
	if body.Len() > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	resp := e.o.serveInProcess(req)
	started := scheduler.Started{StatusCode: resp.code, Done: true}
	if resp.code < 200 || resp.code >= 300 {
		started.Status, started.Error = storage.ScheduleRunFailed, resp.body.String()
		return started, nil
	}
	started.Status = storage.ScheduleRunSuccess
	var content any = resp.body.String()
	if json.Valid(resp.body.Bytes()) {
		content = json.RawMessage(bytes.Clone(resp.body.Bytes()))
	}
	started.Output = map[string]any{"content": content, "content_type": resp.header.Get("Content-Type")}
	return started, nil
}

// RunState implements [scheduler.Executor].
func (e scheduleExecutor) RunState(ctx context.Context, _ *storage.Schedule, runID string) (scheduler.RunState, error) {
	rec, err := e.o.cfg.Store.GetRun(ctx, runID, "")
	if err != nil {
		return scheduler.RunState{}, err
	}
	out := rec.Run
	state := scheduler.RunState{Status: out.Status, Content: out.Content, ContentType: out.ContentType}
	if len(out.Requirements) > 0 {
		if state.Requirements, err = json.Marshal(out.Requirements); err != nil {
			return scheduler.RunState{}, fmt.Errorf("run %s: requirements: %w", runID, err)
		}
	}
	if out.Status == run.StatusError || out.Status == run.StatusCancelled {
		state.Error = out.ContentString()
	}
	return state, nil
}

// Cancel implements [scheduler.Executor].
func (e scheduleExecutor) Cancel(ctx context.Context, s *storage.Schedule, runID, sessionID string) error {
	kind, id, ok := scheduler.RunTarget(s.Method, s.Endpoint)
	if !ok || runID == "" {
		return nil
	}
	path := fmt.Sprintf("/%ss/%s/runs/%s/cancel", kind, url.PathEscape(id), url.PathEscape(runID))
	req, err := http.NewRequestWithContext(asPrincipal(ctx, ownerPrincipal(s)), http.MethodPost, path, nil)
	if err != nil {
		return err
	}
	if resp := e.o.serveInProcess(req); resp.code >= 400 && resp.code != http.StatusNotFound {
		return fmt.Errorf("cancel run %s: %d %s", runID, resp.code, resp.body.String())
	}
	return nil
}

// inProcessResponse records the answer to a request the server makes to
// its own handler.
type inProcessResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *inProcessResponse) Header() http.Header { return r.header }
func (r *inProcessResponse) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *inProcessResponse) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}

// serveInProcess serves req with the server's own handler.
func (o *OS) serveInProcess(req *http.Request) *inProcessResponse {
	req.RemoteAddr = "in-process"
	resp := &inProcessResponse{header: http.Header{}}
	o.handler.ServeHTTP(resp, req)
	if resp.code == 0 {
		resp.code = http.StatusOK
	}
	return resp
}
