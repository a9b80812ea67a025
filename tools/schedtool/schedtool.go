// Package schedtool is the scheduler toolkit: an agent creates, lists,
// enables, disables, triggers and deletes the cron schedules of its user,
// and reads their runs. Each schedule it creates carries its provenance:
// managed_by "scheduler_tools", the component it runs (target_type,
// target_id) and the run that created it, so a later change of its endpoint
// away from that target disables it (endpoint_drift) instead of running
// something else.
//
// The toolkit acts for the run's user, inside the run's store. It
// schedules only the runs of the agent (or team) calling it, and of the
// components its settings allow (allow_targets), never another endpoint:
// whom a schedule runs as is its owner, and the toolkit cannot see the
// owner's scopes.
package schedtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/scheduler"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// ManagedBy is the managed_by of the schedules the toolkit creates.
const ManagedBy = "scheduler_tools"

// The tools' names, as Agno's SchedulerTools names them.
const (
	CreateName  = "create_schedule"
	ListName    = "list_schedules"
	GetName     = "get_schedule"
	DeleteName  = "delete_schedule"
	EnableName  = "enable_schedule"
	DisableName = "disable_schedule"
	TriggerName = "trigger_schedule"
	RunsName    = "get_schedule_runs"
)

// Names lists the toolkit's tools, in order.
func Names() []string {
	return []string{CreateName, ListName, GetName, DeleteName, EnableName, DisableName, TriggerName, RunsName}
}

// Settings are the scheduler toolkit's settings.
type Settings struct {
	// AllowTargets are the components besides the calling one the agent
	// may schedule, as kind:id (agent:reporter, team:crew, workflow:etl).
	AllowTargets []string `json:"allow_targets,omitempty"`
	// Timezone is the default time zone of the schedules created. Default
	// UTC.
	Timezone string `json:"timezone,omitempty"`
}

// Definition declares the toolkit for config files, as scheduler.
func Definition() toolkit.Definition {
	return toolkit.Define("scheduler", "Cron schedules of the user's agent runs: create, list, enable, disable, trigger, delete, and their runs.",
		Names(), func(_ context.Context, s Settings) (*toolkit.Toolkit, error) {
			for _, target := range s.AllowTargets {
				if _, _, ok := parseTarget(target); !ok {
					return nil, fmt.Errorf("scheduler: allow_targets: %q is not kind:id (agent:reporter, team:crew, workflow:etl)", target)
				}
			}
			if s.Timezone != "" {
				if _, err := scheduler.LoadTimezone(s.Timezone); err != nil {
					return nil, fmt.Errorf("scheduler: timezone: %w", err)
				}
			}
			return &toolkit.Toolkit{Name: "scheduler", Tools: Tools(s)}, nil
		})
}

func parseTarget(target string) (kind, id string, ok bool) {
	for _, k := range []string{"agent", "team", "workflow"} {
		if len(target) > len(k)+1 && target[:len(k)+1] == k+":" {
			return k, target[len(k)+1:], true
		}
	}
	return "", "", false
}

// caller is the run calling a tool: its store, its user and itself.
type caller struct {
	store                  storage.ScheduleStore
	user, runID, sessionID string
	kind, id               string
}

// callerOf reads the calling run from ctx.
func callerOf(ctx context.Context) (*caller, error) {
	r, ok := runhost.FromContext(ctx)
	if !ok {
		return nil, errors.New("the scheduler tools work inside an agent's run")
	}
	store, ok := r.Store().(storage.ScheduleStore)
	if !ok {
		return nil, errors.New("schedules need a database: this agent runs without one")
	}
	r.Lock()
	out := r.Output()
	c := &caller{store: store, user: out.UserID, runID: out.RunID, sessionID: out.SessionID}
	switch {
	case out.WorkflowID != "":
		c.kind, c.id = "workflow", out.WorkflowID
	case out.TeamID != "" && out.AgentID == "":
		c.kind, c.id = "team", out.TeamID
	default:
		c.kind, c.id = "agent", out.AgentID
	}
	r.Unlock()
	return c, nil
}

type createArgs struct {
	Name        string `json:"name" jsonschema:"a unique name for the schedule: letters, digits, spaces, dots, dashes and underscores"`
	Cron        string `json:"cron" jsonschema:"a five-field cron expression (minute hour day-of-month month day-of-week), such as 0 9 * * 1-5"`
	Description string `json:"description,omitempty" jsonschema:"what the schedule is for"`
	Endpoint    string `json:"endpoint,omitempty" jsonschema:"the run endpoint to call, such as /agents/reporter/runs; this agent's own when left out"`
	Method      string `json:"method,omitempty" jsonschema:"POST (the default; run endpoints take only POST)"`
	Payload     string `json:"payload,omitempty" jsonschema:"a JSON object of the run's form fields; it must hold message, the message the run is started with"`
	Timezone    string `json:"timezone,omitempty" jsonschema:"the cron's IANA time zone, such as Europe/Paris; UTC by default"`
}

type idArgs struct {
	ScheduleID string `json:"schedule_id" jsonschema:"the schedule's id"`
}

type listArgs struct {
	EnabledOnly bool `json:"enabled_only,omitempty" jsonschema:"list only enabled schedules"`
}

type runsArgs struct {
	ScheduleID string `json:"schedule_id" jsonschema:"the schedule's id"`
	Limit      int    `json:"limit,omitempty" jsonschema:"how many runs, newest first; 10 by default"`
}

// Tools returns the toolkit's tools.
func Tools(s Settings) []tool.Tool {
	t := &tools{settings: s, now: time.Now}
	return []tool.Tool{
		tool.MustNew(tool.Config{Name: CreateName, Description: "Create a cron schedule that starts a run, or update the one with this name."}, t.create),
		tool.MustNew(tool.Config{Name: ListName, Description: "List the user's schedules."}, t.list),
		tool.MustNew(tool.Config{Name: GetName, Description: "Read one schedule."}, t.get),
		tool.MustNew(tool.Config{Name: DeleteName, Description: "Delete a schedule and its runs."}, t.delete),
		tool.MustNew(tool.Config{Name: EnableName, Description: "Enable a schedule."}, t.enable),
		tool.MustNew(tool.Config{Name: DisableName, Description: "Disable a schedule: it stops firing."}, t.disable),
		tool.MustNew(tool.Config{Name: TriggerName, Description: "Start a schedule's run now, outside its cron; a running scheduler picks it up."}, t.trigger),
		tool.MustNew(tool.Config{Name: RunsName, Description: "Read a schedule's latest runs, newest first."}, t.runs),
	}
}

type tools struct {
	settings Settings
	now      func() time.Time
}

// view is a schedule as the tools answer it.
func view(s *storage.Schedule) map[string]any {
	return map[string]any{
		"id": s.ID, "name": s.Name, "description": s.Description, "cron_expr": s.CronExpr, "timezone": s.Timezone,
		"endpoint": s.Endpoint, "method": s.Method, "payload": s.Payload, "enabled": s.Enabled, "next_run_at": s.NextRunAt,
		"managed_by": s.ManagedBy, "target_type": s.TargetType, "target_id": s.TargetID, "disabled_reason": s.DisabledReason,
	}
}

func (t *tools) create(ctx context.Context, a createArgs) (map[string]any, error) {
	c, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	endpoint := a.Endpoint
	if endpoint == "" {
		endpoint = fmt.Sprintf("/%ss/%s/runs", c.kind, c.id)
	}
	method := "POST"
	if a.Method != "" && a.Method != "POST" && a.Method != "post" {
		return nil, fmt.Errorf("method %q: the scheduler tools schedule runs, which take POST", a.Method)
	}
	kind, id, ok := scheduler.RunTarget(method, endpoint)
	if !ok {
		return nil, fmt.Errorf("endpoint %q: the scheduler tools schedule runs only: /agents/{id}/runs, /teams/{id}/runs or /workflows/{id}/runs", endpoint)
	}
	if (kind != c.kind || id != c.id) && !slices.Contains(t.settings.AllowTargets, kind+":"+id) {
		return nil, fmt.Errorf("endpoint %q: this agent may schedule its own runs (/%ss/%s/runs) and the targets its toolkit allows, not %s %s", endpoint, c.kind, c.id, kind, id)
	}
	payload := map[string]any{}
	if a.Payload != "" {
		if err := json.Unmarshal([]byte(a.Payload), &payload); err != nil || payload == nil {
			return nil, fmt.Errorf("payload: a JSON object, such as {\"message\": \"summarise today's news\"}")
		}
	}
	if msg, _ := payload["message"].(string); msg == "" {
		return nil, errors.New(`payload: a run needs payload.message, the message it starts with, such as {"message": "summarise today's news"}`)
	}
	tz := a.Timezone
	if tz == "" {
		tz = t.settings.Timezone
	}
	if tz == "" {
		tz = "UTC"
	}
	next, err := scheduler.NextRun(a.Cron, tz, t.now())
	if err != nil {
		return nil, err
	}
	existing, err := t.byName(ctx, c, a.Name)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		u := storage.ScheduleUpdate{CronExpr: &a.Cron, Timezone: &tz, Endpoint: &endpoint, Method: &method, Payload: payload, SetPayload: true,
			Enabled: new(true), NextRunAt: &next, SetNextRunAt: true, DisabledReason: new(""), UpdatedByRunID: c.runID, UpdatedBySessionID: c.sessionID}
		if a.Description != "" {
			u.Description = &a.Description
		}
		if existing.ManagedBy == ManagedBy && (existing.TargetType != kind || existing.TargetID != id) {
			return nil, fmt.Errorf("schedule %q runs %s %s; create another schedule to run %s %s", a.Name, existing.TargetType, existing.TargetID, kind, id)
		}
		updated, err := c.store.UpdateSchedule(ctx, existing.ID, c.user, u)
		if err != nil {
			return nil, err
		}
		return map[string]any{"updated": true, "schedule": view(updated)}, nil
	}
	created, err := c.store.CreateSchedule(ctx, &storage.Schedule{
		Name: a.Name, Description: a.Description, Method: method, Endpoint: endpoint, Payload: payload, CronExpr: a.Cron,
		Timezone: tz, TimeoutSeconds: 3600, RetryDelaySeconds: 60, Enabled: true, NextRunAt: &next, UserID: c.user,
		ManagedBy: ManagedBy, TargetType: kind, TargetID: id, CreatedByRunID: c.runID, CreatedBySessionID: c.sessionID,
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"created": true, "schedule": view(created)}, nil
}

// byName finds the caller's schedule with a name, or nil.
func (t *tools) byName(ctx context.Context, c *caller, name string) (*storage.Schedule, error) {
	for page := 1; ; page++ {
		list, total, err := c.store.ListSchedules(ctx, storage.ScheduleQuery{UserID: c.user, Page: storage.Page{Limit: 100, Page: page}})
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			if s.Name == name && s.UserID == c.user {
				return s, nil
			}
		}
		if page*100 >= total || len(list) == 0 {
			return nil, nil
		}
	}
}

func (t *tools) list(ctx context.Context, a listArgs) ([]map[string]any, error) {
	c, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	q := storage.ScheduleQuery{UserID: c.user, Page: storage.Page{Limit: 100, Page: 1}}
	if a.EnabledOnly {
		q.Enabled = new(true)
	}
	list, _, err := c.store.ListSchedules(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(list))
	for _, s := range list {
		out = append(out, view(s))
	}
	return out, nil
}

// mine reads one of the caller's schedules.
func mine(ctx context.Context, id string) (*caller, *storage.Schedule, error) {
	c, err := callerOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	s, err := c.store.GetSchedule(ctx, id, c.user)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, fmt.Errorf("no schedule %q: list_schedules shows the ids", id)
	}
	return c, s, err
}

func (t *tools) get(ctx context.Context, a idArgs) (map[string]any, error) {
	_, s, err := mine(ctx, a.ScheduleID)
	if err != nil {
		return nil, err
	}
	return view(s), nil
}

func (t *tools) delete(ctx context.Context, a idArgs) (map[string]any, error) {
	c, s, err := mine(ctx, a.ScheduleID)
	if err != nil {
		return nil, err
	}
	if err := c.store.DeleteSchedule(ctx, s.ID, c.user); err != nil {
		return nil, err
	}
	return map[string]any{"deleted": true, "id": s.ID}, nil
}

func (t *tools) enable(ctx context.Context, a idArgs) (map[string]any, error) {
	c, s, err := mine(ctx, a.ScheduleID)
	if err != nil {
		return nil, err
	}
	if drift := scheduler.Drift(s); drift != "" {
		return nil, fmt.Errorf("schedule %q cannot run: %s", s.Name, drift)
	}
	next, err := scheduler.NextRun(s.CronExpr, s.Timezone, t.now())
	if err != nil {
		return nil, err
	}
	updated, err := c.store.UpdateSchedule(ctx, s.ID, c.user, storage.ScheduleUpdate{Enabled: new(true), NextRunAt: &next, SetNextRunAt: true,
		DisabledReason: new(""), UpdatedByRunID: c.runID, UpdatedBySessionID: c.sessionID})
	if err != nil {
		return nil, err
	}
	return view(updated), nil
}

func (t *tools) disable(ctx context.Context, a idArgs) (map[string]any, error) {
	c, s, err := mine(ctx, a.ScheduleID)
	if err != nil {
		return nil, err
	}
	updated, err := c.store.UpdateSchedule(ctx, s.ID, c.user, storage.ScheduleUpdate{Enabled: new(false), UpdatedByRunID: c.runID, UpdatedBySessionID: c.sessionID})
	if err != nil {
		return nil, err
	}
	return view(updated), nil
}

func (t *tools) trigger(ctx context.Context, a idArgs) (map[string]any, error) {
	c, s, err := mine(ctx, a.ScheduleID)
	if err != nil {
		return nil, err
	}
	if !s.Enabled {
		return nil, fmt.Errorf("schedule %q is disabled: enable it first", s.Name)
	}
	now := t.now().Unix()
	attempt, err := c.store.CreateScheduleRun(ctx, &storage.ScheduleRun{ScheduleID: s.ID, Attempt: 1, TriggeredAt: &now,
		Status: storage.ScheduleRunRunning, Input: s.Payload}, c.user)
	if err != nil {
		return nil, err
	}
	return map[string]any{"triggered": true, "schedule_run_id": attempt.ID, "status": attempt.Status}, nil
}

func (t *tools) runs(ctx context.Context, a runsArgs) ([]map[string]any, error) {
	c, s, err := mine(ctx, a.ScheduleID)
	if err != nil {
		return nil, err
	}
	limit := a.Limit
	if limit <= 0 || limit > 100 {
		limit = 10
	}
	list, _, err := c.store.ListScheduleRuns(ctx, s.ID, c.user, storage.Page{Limit: limit, Page: 1})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(list))
	for _, r := range list {
		out = append(out, map[string]any{"id": r.ID, "attempt": r.Attempt, "status": r.Status, "triggered_at": r.TriggeredAt,
			"completed_at": r.CompletedAt, "run_id": r.RunID, "error": r.Error, "output": r.Output})
	}
	return out, nil
}
