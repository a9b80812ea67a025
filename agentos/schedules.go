package agentos

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/agnogo/agnogo/scheduler"
	"github.com/agnogo/agnogo/storage"
)

// The /schedules routes (scheduler.md §a.2): cron schedules owned by their
// creator, each firing one endpoint of this server. They exist whenever
// the store keeps schedules; only a server whose scheduler is enabled
// fires them ([SchedulerConfig]).

// scheduleTag is the OpenAPI tag and the 503 detail's feature name.
const scheduleTag = "Schedules"

// scheduleRoutes mounts the /schedules routes.
func (o *OS) scheduleRoutes(mux *http.ServeMux) {
	ep := func(pattern, action string, h http.HandlerFunc) endpoint {
		return endpoint{pattern: pattern, resource: "schedules", action: action, handle: h}
	}
	mountFeature[storage.ScheduleStore](o, mux, scheduleTag, "schedules", []endpoint{
		ep("GET /schedules", "read", o.handleListSchedules),
		ep("POST /schedules", "write", o.handleCreateSchedule),
		ep("GET /schedules/{schedule_id}", "read", o.handleGetSchedule),
		ep("PATCH /schedules/{schedule_id}", "write", o.handleUpdateSchedule),
		ep("DELETE /schedules/{schedule_id}", "delete", o.handleDeleteSchedule),
		ep("POST /schedules/{schedule_id}/enable", "write", o.handleEnableSchedule),
		ep("POST /schedules/{schedule_id}/disable", "write", o.handleDisableSchedule),
		ep("POST /schedules/{schedule_id}/trigger", "write", o.handleTriggerSchedule),
		ep("GET /schedules/{schedule_id}/runs", "read", o.handleListScheduleRuns),
		ep("GET /schedules/{schedule_id}/runs/{run_id}", "read", o.handleGetScheduleRun),
	})
}

// scheduleStore is the store's schedules; mountFeature mounted the routes
// only when it has them.
func (o *OS) scheduleStore() storage.ScheduleStore {
	s, _ := o.cfg.Store.(storage.ScheduleStore)
	return s
}

// scheduleScope is the owner a caller's schedule requests are scoped to:
// every owner for an admin, else the caller's own subject.
func (o *OS) scheduleScope(r *http.Request) string {
	p := principalFrom(r.Context())
	if p.Admin {
		return ""
	}
	return cmp.Or(p.Subject, noIdentity)
}

// scheduleSchema is Agno's ScheduleResponse.
type scheduleSchema struct {
	ID                string         `json:"id"`
	UserID            *string        `json:"user_id"`
	Name              string         `json:"name"`
	Description       *string        `json:"description"`
	Method            string         `json:"method"`
	Endpoint          string         `json:"endpoint"`
	Payload           map[string]any `json:"payload"`
	CronExpr          string         `json:"cron_expr"`
	Timezone          string         `json:"timezone"`
	TimeoutSeconds    int64          `json:"timeout_seconds"`
	MaxRetries        int64          `json:"max_retries"`
	RetryDelaySeconds int64          `json:"retry_delay_seconds"`
	Enabled           bool           `json:"enabled"`
	NextRunAt         *int64         `json:"next_run_at"`
	ManagedBy         *string        `json:"managed_by"`
	TargetType        *string        `json:"target_type"`
	TargetID          *string        `json:"target_id"`
	DisabledReason    *string        `json:"disabled_reason"`
	CreatedAt         int64          `json:"created_at"`
	UpdatedAt         *int64         `json:"updated_at"`
}

func scheduleView(s *storage.Schedule) scheduleSchema {
	v := scheduleSchema{
		ID: s.ID, UserID: nullIfEmpty(s.UserID), Name: s.Name, Description: nullIfEmpty(s.Description),
		Method: s.Method, Endpoint: s.Endpoint, Payload: s.Payload, CronExpr: s.CronExpr, Timezone: s.Timezone,
		TimeoutSeconds: s.TimeoutSeconds, MaxRetries: s.MaxRetries, RetryDelaySeconds: s.RetryDelaySeconds,
		Enabled: s.Enabled, NextRunAt: s.NextRunAt, ManagedBy: nullIfEmpty(s.ManagedBy), TargetType: nullIfEmpty(s.TargetType),
		TargetID: nullIfEmpty(s.TargetID), DisabledReason: nullIfEmpty(s.DisabledReason), CreatedAt: s.CreatedAt,
	}
	if s.UpdatedAt != 0 {
		v.UpdatedAt = &s.UpdatedAt
	}
	return v
}

// scheduleStateSchema is Agno's ScheduleStateResponse.
type scheduleStateSchema struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Enabled   bool   `json:"enabled"`
	NextRunAt *int64 `json:"next_run_at"`
	UpdatedAt *int64 `json:"updated_at"`
}

// scheduleRunSchema is Agno's ScheduleRunResponse.
type scheduleRunSchema struct {
	ID           string          `json:"id"`
	ScheduleID   string          `json:"schedule_id"`
	UserID       *string         `json:"user_id"`
	Attempt      int64           `json:"attempt"`
	TriggeredAt  *int64          `json:"triggered_at"`
	CompletedAt  *int64          `json:"completed_at"`
	Status       string          `json:"status"`
	StatusCode   *int64          `json:"status_code"`
	RunID        *string         `json:"run_id"`
	SessionID    *string         `json:"session_id"`
	Error        *string         `json:"error"`
	Input        map[string]any  `json:"input"`
	Output       map[string]any  `json:"output"`
	Requirements json.RawMessage `json:"requirements"`
	CreatedAt    int64           `json:"created_at"`
}

func scheduleRunView(r *storage.ScheduleRun) scheduleRunSchema {
	v := scheduleRunSchema{
		ID: r.ID, ScheduleID: r.ScheduleID, UserID: nullIfEmpty(r.UserID), Attempt: r.Attempt, TriggeredAt: r.TriggeredAt,
		CompletedAt: r.CompletedAt, Status: r.Status, StatusCode: r.StatusCode, RunID: nullIfEmpty(r.RunID),
		SessionID: nullIfEmpty(r.SessionID), Error: nullIfEmpty(r.Error), Input: r.Input, Output: r.Output,
		Requirements: r.Requirements, CreatedAt: r.CreatedAt,
	}
	if len(v.Requirements) == 0 {
		v.Requirements = json.RawMessage("null")
	}
	return v
}

// Validation of ScheduleCreate and ScheduleUpdate (scheduler.md §a.2).
var (
	scheduleNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$`)
	scheduleMethods     = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	// scheduleMutable are the keys PATCH takes (Agno's mutable columns
	// that a client may set).
	scheduleMutable = []string{"name", "description", "method", "endpoint", "payload", "cron_expr", "timezone",
		"timeout_seconds", "max_retries", "retry_delay_seconds", "enabled"}
)

// scheduleFields are a create's or an update's fields as read.
type scheduleFields struct {
	name, description, method, endpoint, cron, timezone *string
	payload                                             map[string]any
	timeout, retries, retryDelay                        *int64
	enabled                                             *bool
}

// readScheduleFields reads and checks the fields of body present in it.
func readScheduleFields(b *jsonBody) scheduleFields {
	var f scheduleFields
	str := func(name string, maxLen int) *string {
		if !b.has(name) {
			return nil
		}
		before := len(b.issues)
		s := b.str(name)
		if len(b.issues) > before {
			return nil
		}
		if len(s) > maxLen {
			b.invalid(name, fmt.Sprintf("String should have at most %d characters", maxLen), "string_too_long")
			return nil
		}
		return &s
	}
	if f.name = str("name", 255); f.name != nil && !scheduleNamePattern.MatchString(*f.name) {
		b.invalid("name", "String should match pattern '^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$'", "string_pattern_mismatch")
	}
	f.description = str("description", 1024)
	if f.method = str("method", 16); f.method != nil {
		upper := strings.ToUpper(strings.TrimSpace(*f.method))
		f.method = &upper
		if !slices.Contains(scheduleMethods, upper) {
			b.issue(enumIssue([]string{"body", "method"}, scheduleMethods))
		}
	}
	if f.endpoint = str("endpoint", 512); f.endpoint != nil {
		if p := endpointProblem(*f.endpoint); p != "" {
			b.invalid("endpoint", "Value error, "+p, "value_error")
		}
	}
	f.cron = str("cron_expr", 128)
	f.timezone = str("timezone", 64)
	if f.timezone != nil {
		if _, err := scheduler.LoadTimezone(*f.timezone); err != nil {
			b.invalid("timezone", "Value error, "+err.Error(), "value_error")
		}
	}
	if f.cron != nil {
		tz := "UTC"
		if f.timezone != nil {
			tz = *f.timezone
		}
		if _, _, err := scheduler.ParseCron(*f.cron, tz); err != nil && strings.HasPrefix(err.Error(), "Invalid cron") {
			b.invalid("cron_expr", "Value error, "+err.Error(), "value_error")
		}
	}
	if b.has("payload") {
		f.payload = b.object("payload")
	}
	f.timeout = intField(b, "timeout_seconds", 1, 86400)
	f.retries = intField(b, "max_retries", 0, 10)
	f.retryDelay = intField(b, "retry_delay_seconds", 1, 3600)
	if v, ok := b.raw("enabled"); ok {
		var enabled bool
		if json.Unmarshal(v, &enabled) != nil {
			b.invalid("enabled", "Input should be a valid boolean", "bool_type")
		} else {
			f.enabled = &enabled
		}
	}
	return f
}

// endpointProblem says what is wrong with a schedule's endpoint, or "".
func endpointProblem(endpoint string) string {
	switch {
	case !strings.HasPrefix(endpoint, "/"):
		return "endpoint must start with '/'"
	case strings.Contains(endpoint, "://"):
		return "endpoint must be a path on this server, not a URL"
	case strings.IndexFunc(endpoint, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "endpoint must not contain whitespace or control characters"
	}
	return ""
}

// intField reads an integer field within [lo, hi]; nil when absent.
func intField(b *jsonBody, name string, lo, hi int64) *int64 {
	v, ok := b.raw(name)
	if !ok {
		return nil
	}
	var n int64
	if json.Unmarshal(v, &n) != nil {
		b.invalid(name, "Input should be a valid integer", "int_type")
		return nil
	}
	switch {
	case n < lo:
		b.invalid(name, fmt.Sprintf("Input should be greater than or equal to %d", lo), "greater_than_equal")
		return nil
	case n > hi:
		b.invalid(name, fmt.Sprintf("Input should be less than or equal to %d", hi), "less_than_equal")
		return nil
	}
	return &n
}

// endpointForbidden is the 403 detail when the caller may not schedule
// method on endpoint, or "": a run endpoint needs the run scope of its
// component, anything else the admin scope. Checked with authentication
// on, and for a service-account token whatever the mode.
func (o *OS) endpointForbidden(r *http.Request, method, endpoint string) string {
	p := principalFrom(r.Context())
	if p.Admin || (!o.auth.enabled() && p.ServiceAccountID == "") {
		return ""
	}
	kind, id, ok := scheduler.RunTarget(method, endpoint)
	if !ok {
		return "Only admins can schedule an endpoint that is not a run endpoint"
	}
	resource := kind + "s"
	if !o.allowed(p, resource, id, "run") {
		return forbiddenDetail(resource, id, "run")
	}
	return ""
}

// unknownTarget is the 422 detail of a run endpoint naming a component this
// server does not serve, or "".
func (o *OS) unknownTarget(method, endpoint string) string {
	kind, id, ok := scheduler.RunTarget(method, endpoint)
	if !ok {
		return ""
	}
	if runner, served := o.runners[id]; served && string(kindOf(runner)) == kind {
		return ""
	}
	return fmt.Sprintf("endpoint %s names %s '%s', which this server does not serve", endpoint, kind, id)
}

func (o *OS) handleCreateSchedule(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSONObject(w, r, true)
	if !ok {
		return
	}
	for _, required := range []string{"name", "cron_expr", "endpoint"} {
		if !body.has(required) {
			body.issue(missingField(required))
		}
	}
	f := readScheduleFields(body)
	if body.failed(w) {
		return
	}
	s := &storage.Schedule{
		Name: *f.name, CronExpr: *f.cron, Endpoint: *f.endpoint, Method: "POST", Timezone: "UTC",
		TimeoutSeconds: 3600, RetryDelaySeconds: 60, Enabled: true, Payload: f.payload,
	}
	if f.description != nil {
		s.Description = *f.description
	}
	if f.method != nil {
		s.Method = *f.method
	}
	if f.timezone != nil {
		s.Timezone = *f.timezone
	}
	s.TimeoutSeconds = derefOr(f.timeout, s.TimeoutSeconds)
	s.MaxRetries = derefOr(f.retries, 0)
	s.RetryDelaySeconds = derefOr(f.retryDelay, s.RetryDelaySeconds)
	if f.enabled != nil {
		s.Enabled = *f.enabled
	}
	p := principalFrom(r.Context())
	s.UserID = p.Subject
	if s.UserID == reservedSchedulerSubject {
		writeError(w, http.StatusForbidden, "The scheduler executor may not own a schedule")
		return
	}
	if detail := o.endpointForbidden(r, s.Method, s.Endpoint); detail != "" {
		writeError(w, http.StatusForbidden, detail)
		return
	}
	if detail := o.unknownTarget(s.Method, s.Endpoint); detail != "" {
		writeValidation(w, invalidField("endpoint", detail))
		return
	}
	if s.Enabled {
		next, err := scheduler.NextRun(s.CronExpr, s.Timezone, o.cfg.Now())
		if err != nil {
			writeValidation(w, invalidField("cron_expr", err.Error()))
			return
		}
		s.NextRunAt = &next
	}
	stored, err := o.scheduleStore().CreateSchedule(r.Context(), s)
	if errors.Is(err, storage.ErrConflict) {
		writeError(w, http.StatusConflict, fmt.Sprintf("Schedule with name '%s' already exists", s.Name))
		return
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	o.wakeScheduler()
	writeJSON(w, http.StatusCreated, scheduleView(stored))
}

func derefOr(v *int64, def int64) int64 {
	if v == nil {
		return def
	}
	return *v
}

// schedule reads the path's schedule in the caller's scope, answering 404
// when there is none.
func (o *OS) schedule(w http.ResponseWriter, r *http.Request) (*storage.Schedule, bool) {
	s, err := o.scheduleStore().GetSchedule(r.Context(), r.PathValue("schedule_id"), o.scheduleScope(r))
	if errors.Is(err, storage.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Schedule not found")
		return nil, false
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return nil, false
	}
	return s, true
}

func (o *OS) handleGetSchedule(w http.ResponseWriter, r *http.Request) {
	if s, ok := o.schedule(w, r); ok {
		writeJSON(w, http.StatusOK, scheduleView(s))
	}
}

func (o *OS) handleListSchedules(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	q := newQueryReader(r)
	page := q.paginationFrom(100)
	var enabled *bool
	switch raw := q.str("enabled"); strings.ToLower(raw) {
	case "":
	case "true", "1", "yes", "on":
		enabled = new(true)
	case "false", "0", "no", "off":
		enabled = new(false)
	default:
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", "enabled"}, Msg: "Input should be a valid boolean, unable to interpret input", Type: "bool_parsing"})
	}
	if q.failed(w) {
		return
	}
	list, total, err := o.scheduleStore().ListSchedules(r.Context(), storage.ScheduleQuery{UserID: o.scheduleScope(r), Enabled: enabled, Page: page.store()})
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	items := make([]scheduleSchema, 0, len(list))
	for _, s := range list {
		items = append(items, scheduleView(s))
	}
	writeJSON(w, http.StatusOK, paginate(items, page, total, started))
}

func (o *OS) handleUpdateSchedule(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSONObject(w, r, false)
	if !ok {
		return
	}
	for key, v := range body.fields {
		if !slices.Contains(scheduleMutable, key) {
			body.invalid(key, fmt.Sprintf("Field '%s' cannot be updated; updatable fields: %s", key, strings.Join(scheduleMutable, ", ")), "extra_forbidden")
			continue
		}
		if strings.TrimSpace(string(v)) == "null" && key != "description" && key != "payload" {
			body.invalid(key, fmt.Sprintf("Field '%s' cannot be null", key), "value_error")
		}
	}
	f := readScheduleFields(body)
	if body.failed(w) {
		return
	}
	current, ok := o.schedule(w, r)
	if !ok {
		return
	}
	if len(body.fields) == 0 {
		writeJSON(w, http.StatusOK, scheduleView(current))
		return
	}
	u := storage.ScheduleUpdate{
		Name: f.name, Method: f.method, Endpoint: f.endpoint, CronExpr: f.cron, Timezone: f.timezone,
		TimeoutSeconds: f.timeout, MaxRetries: f.retries, RetryDelaySeconds: f.retryDelay, Enabled: f.enabled,
	}
	if _, sent := body.fields["description"]; sent {
		desc := ""
		if f.description != nil {
			desc = *f.description
		}
		u.Description = &desc
	}
	if _, sent := body.fields["payload"]; sent {
		u.Payload, u.SetPayload = f.payload, true
	}
	after := *current
	after.Method, after.Endpoint = cmp.Or(derefStr(f.method), after.Method), cmp.Or(derefStr(f.endpoint), after.Endpoint)
	after.CronExpr, after.Timezone = cmp.Or(derefStr(f.cron), after.CronExpr), cmp.Or(derefStr(f.timezone), after.Timezone)
	if f.method != nil || f.endpoint != nil {
		if detail := o.endpointForbidden(r, after.Method, after.Endpoint); detail != "" {
			writeError(w, http.StatusForbidden, detail)
			return
		}
		if detail := o.unknownTarget(after.Method, after.Endpoint); detail != "" {
			writeValidation(w, invalidField("endpoint", detail))
			return
		}
	}
	enabling := f.enabled != nil && *f.enabled && !current.Enabled
	if enabling {
		if !o.canEnable(w, r, &after) {
			return
		}
		u.DisabledReason = new("")
	}
	enabled := current.Enabled
	if f.enabled != nil {
		enabled = *f.enabled
	}
	if _, _, err := scheduler.ParseCron(after.CronExpr, after.Timezone); err != nil {
		writeValidation(w, invalidField("cron_expr", err.Error()))
		return
	}
	if enabled && (enabling || f.cron != nil || f.timezone != nil) {
		next, err := scheduler.NextRun(after.CronExpr, after.Timezone, o.cfg.Now())
		if err != nil {
			writeValidation(w, invalidField("cron_expr", err.Error()))
			return
		}
		u.NextRunAt, u.SetNextRunAt = &next, true
	}
	stored, err := o.scheduleStore().UpdateSchedule(r.Context(), current.ID, o.scheduleScope(r), u)
	if errors.Is(err, storage.ErrConflict) {
		writeError(w, http.StatusConflict, fmt.Sprintf("Schedule with name '%s' already exists", derefStr(f.name)))
		return
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	o.wakeScheduler()
	writeJSON(w, http.StatusOK, scheduleView(stored))
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// canEnable checks that a schedule may be enabled: the caller may schedule
// its endpoint (403) and the endpoint still runs its provenance target
// (409 endpoint_drift).
func (o *OS) canEnable(w http.ResponseWriter, r *http.Request, s *storage.Schedule) bool {
	if detail := o.endpointForbidden(r, s.Method, s.Endpoint); detail != "" {
		writeError(w, http.StatusForbidden, detail)
		return false
	}
	if drift := scheduler.Drift(s); drift != "" {
		writeError(w, http.StatusConflict, fmt.Sprintf("Schedule '%s' cannot run: %s; point its endpoint back at %s '%s' first", s.Name, drift, s.TargetType, s.TargetID))
		return false
	}
	return true
}

func (o *OS) handleDeleteSchedule(w http.ResponseWriter, r *http.Request) {
	err := o.scheduleStore().DeleteSchedule(r.Context(), r.PathValue("schedule_id"), o.scheduleScope(r))
	if errors.Is(err, storage.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Schedule not found")
		return
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (o *OS) handleEnableSchedule(w http.ResponseWriter, r *http.Request) {
	s, ok := o.schedule(w, r)
	if !ok || !o.canEnable(w, r, s) {
		return
	}
	next, err := scheduler.NextRun(s.CronExpr, s.Timezone, o.cfg.Now())
	if err != nil {
		writeValidation(w, invalidField("cron_expr", err.Error()))
		return
	}
	o.setEnabled(w, r, s, storage.ScheduleUpdate{Enabled: new(true), NextRunAt: &next, SetNextRunAt: true, DisabledReason: new("")})
}

func (o *OS) handleDisableSchedule(w http.ResponseWriter, r *http.Request) {
	if s, ok := o.schedule(w, r); ok {
		o.setEnabled(w, r, s, storage.ScheduleUpdate{Enabled: new(false)})
	}
}

// setEnabled applies an enable or disable and answers the schedule's state.
func (o *OS) setEnabled(w http.ResponseWriter, r *http.Request, s *storage.Schedule, u storage.ScheduleUpdate) {
	stored, err := o.scheduleStore().UpdateSchedule(r.Context(), s.ID, o.scheduleScope(r), u)
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	o.wakeScheduler()
	state := scheduleStateSchema{ID: stored.ID, Name: stored.Name, Enabled: stored.Enabled, NextRunAt: stored.NextRunAt}
	if stored.UpdatedAt != 0 {
		state.UpdatedAt = &stored.UpdatedAt
	}
	writeJSON(w, http.StatusOK, state)
}

// handleTriggerSchedule starts an attempt now and answers its running row
// at once; with wait=true it answers the attempt's final row, as Agno's
// blocking trigger does.
func (o *OS) handleTriggerSchedule(w http.ResponseWriter, r *http.Request) {
	q := newQueryReader(r)
	wait := false
	switch strings.ToLower(q.str("wait")) {
	case "", "false", "0", "no", "off":
	case "true", "1", "yes", "on":
		wait = true
	default:
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", "wait"}, Msg: "Input should be a valid boolean, unable to interpret input", Type: "bool_parsing"})
	}
	if q.failed(w) {
		return
	}
	s, ok := o.schedule(w, r)
	if !ok {
		return
	}
	if !s.Enabled {
		writeError(w, http.StatusConflict, "Schedule is disabled")
		return
	}
	if detail := o.endpointForbidden(r, s.Method, s.Endpoint); detail != "" {
		writeError(w, http.StatusForbidden, detail)
		return
	}
	if drift := scheduler.Drift(s); drift != "" {
		writeError(w, http.StatusConflict, fmt.Sprintf("Schedule '%s' cannot run: %s", s.Name, drift))
		return
	}
	if o.scheduler == nil {
		writeError(w, http.StatusServiceUnavailable, scheduler.ErrNotRunning.Error())
		return
	}
	attempt, done, err := o.scheduler.Trigger(r.Context(), s)
	switch {
	case errors.Is(err, scheduler.ErrNotRunning):
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	case err != nil:
		o.writeStoreError(w, r, err)
		return
	}
	if wait {
		select {
		case final := <-done:
			attempt = final
		case <-r.Context().Done():
			return
		}
	}
	writeJSON(w, http.StatusOK, scheduleRunView(attempt))
}

func (o *OS) handleListScheduleRuns(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	q := newQueryReader(r)
	page := q.paginationFrom(100)
	if q.failed(w) {
		return
	}
	s, ok := o.schedule(w, r)
	if !ok {
		return
	}
	runs, total, err := o.scheduleStore().ListScheduleRuns(r.Context(), s.ID, o.scheduleScope(r), page.store())
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	items := make([]scheduleRunSchema, 0, len(runs))
	for _, sr := range runs {
		items = append(items, scheduleRunView(sr))
	}
	writeJSON(w, http.StatusOK, paginate(items, page, total, started))
}

func (o *OS) handleGetScheduleRun(w http.ResponseWriter, r *http.Request) {
	sr, err := o.scheduleStore().GetScheduleRun(r.Context(), r.PathValue("schedule_id"), r.PathValue("run_id"), o.scheduleScope(r))
	if errors.Is(err, storage.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Schedule run not found")
		return
	}
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, scheduleRunView(sr))
}

// wakeScheduler makes the scheduler look at the schedules now.
func (o *OS) wakeScheduler() {
	if o.scheduler != nil {
		o.scheduler.Wake()
	}
}
