package team

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/tool"
)

// The tasks mode: the leader keeps a task list with tools, assigns tasks to
// members and executes them, in iterations, until it marks the goal
// complete, every task has ended well, or MaxIterations is reached.
//
// The task list is never stored on its own: it is what the run's calls of
// the task tools made of it, read again from the run's tool calls and their
// results whenever it is needed ([tasksOf]). A run executed again from its
// journal replays those calls, so its task list is the one it had; a task's
// id is derived from the tool call that created it.

// The task tools' names.
const (
	CreateTaskToolName           = "create_task"
	UpdateTaskStatusToolName     = "update_task_status"
	ListTasksToolName            = "list_tasks"
	AddTaskNoteToolName          = "add_task_note"
	MarkAllCompleteToolName      = "mark_all_complete"
	ExecuteTaskToolName          = "execute_task"
	ExecuteTasksParallelToolName = "execute_tasks_parallel"
)

// Task statuses.
const (
	taskPending    = "pending"
	taskInProgress = "in_progress"
	taskCompleted  = "completed"
	taskFailed     = "failed"
	taskBlocked    = "blocked"
)

// Result prefixes the task list is read back from: a created task, and an
// executed task whose member failed.
const (
	createdPrefix      = "Task created: ["
	memberFailedPrefix = "the member failed the task: "
)

// task is one task of the list.
type task struct {
	ID           string
	Title        string
	Description  string
	Assignee     string
	Status       string
	Dependencies []string
	Result       *string
	Notes        []string
}

// taskList is a run's task list.
type taskList struct {
	tasks             []*task
	goalComplete      bool
	completionSummary string
}

func (l *taskList) get(id string) *task {
	for _, t := range l.tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// status is a task's status, blocked while a dependency has not completed.
func (l *taskList) status(t *task) string {
	if t.Status == taskPending {
		for _, dep := range t.Dependencies {
			if d := l.get(dep); d == nil || d.Status != taskCompleted {
				return taskBlocked
			}
		}
	}
	return t.Status
}

// settled reports whether every task ended and none failed.
func (l *taskList) settled() bool {
	if len(l.tasks) == 0 {
		return false
	}
	for _, t := range l.tasks {
		if t.Status != taskCompleted {
			return false
		}
	}
	return true
}

// summary renders the list for the leader and the events.
func (l *taskList) summary() string {
	if len(l.tasks) == 0 {
		return "No tasks yet."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Tasks (%d):", len(l.tasks))
	for _, t := range l.tasks {
		fmt.Fprintf(&b, "\n- [%s] %s — %s", t.ID, t.Title, l.status(t))
		if t.Assignee != "" {
			fmt.Fprintf(&b, " (assignee: %s)", t.Assignee)
		}
		if len(t.Dependencies) > 0 {
			fmt.Fprintf(&b, " (depends on: %s)", strings.Join(t.Dependencies, ", "))
		}
		if t.Description != "" {
			fmt.Fprintf(&b, "\n  %s", t.Description)
		}
		for _, note := range t.Notes {
			fmt.Fprintf(&b, "\n  note: %s", note)
		}
		if t.Result != nil {
			fmt.Fprintf(&b, "\n  result: %s", *t.Result)
		}
	}
	if l.goalComplete {
		fmt.Fprintf(&b, "\nGoal complete: %s", l.completionSummary)
	}
	return b.String()
}

// data lists the tasks for TeamTaskStateUpdated.
func (l *taskList) data() []run.TaskData {
	out := make([]run.TaskData, 0, len(l.tasks))
	for _, t := range l.tasks {
		out = append(out, run.TaskData{ID: t.ID, Title: t.Title, Description: t.Description, Status: l.status(t),
			Assignee: t.Assignee, Dependencies: slices.Clone(t.Dependencies), Result: t.Result})
	}
	return out
}

// taskID is the id of the task a create_task call made.
func taskID(callID string) string {
	sum := sha256.Sum256([]byte(callID))
	return hex.EncodeToString(sum[:4])
}

// tasksOf reads a run's task list off its calls of the task tools, in
// order.
func tasksOf(calls []*run.ToolExecution) *taskList {
	l := &taskList{}
	for _, c := range calls {
		if c == nil || c.Result == nil {
			continue
		}
		failed := c.ToolCallError != nil && *c.ToolCallError
		str := func(key string) string { s, _ := c.ToolArgs[key].(string); return s }
		switch c.ToolName {
		case CreateTaskToolName:
			if failed || !strings.HasPrefix(*c.Result, createdPrefix) {
				continue
			}
			var deps []string
			if raw, ok := c.ToolArgs["depends_on"].([]any); ok {
				for _, d := range raw {
					if s, ok := d.(string); ok {
						deps = append(deps, s)
					}
				}
			}
			l.tasks = append(l.tasks, &task{ID: taskID(c.ToolCallID), Title: str("title"), Description: str("description"),
				Assignee: str("assignee"), Status: taskPending, Dependencies: deps})
		case UpdateTaskStatusToolName:
			if t := l.get(str("task_id")); t != nil && !failed {
				t.Status = str("status")
				if result, ok := c.ToolArgs["result"].(string); ok {
					t.Result = &result
				}
			}
		case AddTaskNoteToolName:
			if t := l.get(str("task_id")); t != nil && !failed {
				t.Notes = append(t.Notes, str("note"))
			}
		case MarkAllCompleteToolName:
			if !failed {
				l.goalComplete, l.completionSummary = true, str("summary")
			}
		case ExecuteTaskToolName:
			switch reason, byMember := strings.CutPrefix(*c.Result, memberFailedPrefix); {
			case !failed:
				l.executed(str("task_id"), str("member_id"), taskCompleted, *c.Result)
			case byMember:
				l.executed(str("task_id"), str("member_id"), taskFailed, reason)
			}
		case ExecuteTasksParallelToolName:
			if failed {
				continue
			}
			var outcomes []parallelOutcome
			if json.Unmarshal([]byte(*c.Result), &outcomes) != nil {
				continue
			}
			for _, o := range outcomes {
				if o.Status == taskCompleted || o.Status == taskFailed {
					l.executed(o.TaskID, o.MemberID, o.Status, o.Result)
				}
			}
		}
	}
	return l
}

// executed records a task a member ran: completed with its answer, or
// failed with the member's failure.
func (l *taskList) executed(id, member, status, result string) {
	t := l.get(id)
	if t == nil {
		return
	}
	t.Status, t.Result = status, &result
	if member != "" {
		t.Assignee = member
	}
}

// parallelOutcome is one task's outcome in execute_tasks_parallel's result.
type parallelOutcome struct {
	TaskID   string `json:"task_id"`
	MemberID string `json:"member_id,omitempty"`
	Status   string `json:"status"`
	Result   string `json:"result"`
}

// currentTasks is the task list of the run ctx's call belongs to, as of
// the calls made before this model turn.
func currentTasks(ctx context.Context) (*runhost.Run, *taskList, error) {
	r, ok := runhost.FromContext(ctx)
	if !ok {
		return nil, nil, errors.New("the task tools run only inside a team's run")
	}
	return r, tasksOf(r.Output().Tools), nil
}

// taskTools are the leader's tools in the tasks mode.
func (t *Team) taskTools() ([]tool.Tool, error) {
	type createArgs struct {
		Title       string   `json:"title" jsonschema:"A short, actionable title."`
		Description string   `json:"description,omitempty" jsonschema:"What needs doing, and the answer expected."`
		Assignee    string   `json:"assignee,omitempty" jsonschema:"The member_id of the member to assign it to."`
		DependsOn   []string `json:"depends_on,omitempty" jsonschema:"Ids of tasks that must complete before this one can start."`
	}
	create, err := tool.New(tool.Config{Name: CreateTaskToolName,
		Description: "Create a task of the team's task list. Create the tasks of one step together, then execute them in a later turn."},
		func(ctx context.Context, args createArgs) (string, error) {
			r, list, err := currentTasks(ctx)
			if err != nil {
				return "", err
			}
			if args.Assignee != "" && t.members[args.Assignee] == nil {
				return "", fmt.Errorf("no member has member_id %q: choose one of %s", args.Assignee, strings.Join(t.memberIDs(), ", "))
			}
			for _, existing := range list.tasks {
				if strings.EqualFold(strings.TrimSpace(existing.Title), strings.TrimSpace(args.Title)) {
					return fmt.Sprintf("Task already exists: [%s] %s (status: %s); use it instead of a duplicate.", existing.ID, existing.Title, list.status(existing)), nil
				}
			}
			id := taskID(tool.CallID(ctx))
			r.Emit(&run.TeamTaskCreated{TaskID: id, Title: args.Title, Description: args.Description, Assignee: args.Assignee,
				Status: taskPending, Dependencies: args.DependsOn})
			return fmt.Sprintf("%s%s] %s (status: %s)", createdPrefix, id, args.Title, taskPending), nil
		})
	if err != nil {
		return nil, err
	}
	type updateArgs struct {
		TaskID string  `json:"task_id"`
		Status string  `json:"status" jsonschema:"One of pending, in_progress, completed, failed."`
		Result *string `json:"result,omitempty" jsonschema:"The task's outcome, when completing or failing it."`
	}
	update, err := tool.New(tool.Config{Name: UpdateTaskStatusToolName,
		Description: "Set a task's status: mark the tasks you handle yourself completed, with their result."},
		func(ctx context.Context, args updateArgs) (string, error) {
			r, list, err := currentTasks(ctx)
			if err != nil {
				return "", err
			}
			existing := list.get(args.TaskID)
			if existing == nil {
				return "", fmt.Errorf("no task has id %q", args.TaskID)
			}
			switch args.Status {
			case taskPending, taskInProgress, taskCompleted, taskFailed:
			default:
				return "", fmt.Errorf("status %q is not one of pending, in_progress, completed, failed (blocked follows from dependencies)", args.Status)
			}
			r.Emit(&run.TeamTaskUpdated{TaskID: existing.ID, Title: existing.Title, Status: args.Status,
				PreviousStatus: list.status(existing), Result: args.Result, Assignee: existing.Assignee})
			return fmt.Sprintf("Task [%s] %s is %s.", existing.ID, existing.Title, args.Status), nil
		})
	if err != nil {
		return nil, err
	}
	list, err := tool.New(tool.Config{Name: ListTasksToolName, Description: "List the tasks with their status, assignee, dependencies and results."},
		func(ctx context.Context, _ struct{}) (string, error) {
			_, list, err := currentTasks(ctx)
			if err != nil {
				return "", err
			}
			return list.summary(), nil
		})
	if err != nil {
		return nil, err
	}
	type noteArgs struct {
		TaskID string `json:"task_id"`
		Note   string `json:"note"`
	}
	note, err := tool.New(tool.Config{Name: AddTaskNoteToolName, Description: "Add a note to a task."},
		func(ctx context.Context, args noteArgs) (string, error) {
			_, list, err := currentTasks(ctx)
			if err != nil {
				return "", err
			}
			if list.get(args.TaskID) == nil {
				return "", fmt.Errorf("no task has id %q", args.TaskID)
			}
			return fmt.Sprintf("Note added to task [%s].", args.TaskID), nil
		})
	if err != nil {
		return nil, err
	}
	type completeArgs struct {
		Summary string `json:"summary" jsonschema:"The work done and the final outcome."`
	}
	complete, err := tool.New(tool.Config{Name: MarkAllCompleteToolName, Description: "Mark the goal achieved, once every task is done."},
		func(_ context.Context, args completeArgs) (string, error) {
			return "Goal marked complete: " + args.Summary, nil
		})
	if err != nil {
		return nil, err
	}
	return []tool.Tool{create, update, list, note, complete, &executeTaskTool{t: t}, &executeTasksTool{t: t}}, nil
}

// executeTaskTool is execute_task(task_id, member_id): a delegation of a
// task to a member, as a child run.
type executeTaskTool struct{ t *Team }

// Spec implements [tool.Tool].
func (e *executeTaskTool) Spec() tool.Spec {
	params := objectSchema(map[string]any{
		"task_id":   map[string]any{"type": "string", "description": "The task to execute."},
		"member_id": map[string]any{"type": "string", "enum": e.t.memberIDs(), "description": "The member to execute it; defaults to the task's assignee."},
	}, "task_id")
	return tool.Spec{Name: ExecuteTaskToolName, Parameters: params,
		Description: "Have a member execute a task and get its answer back; the task is then completed, or failed when the member fails."}
}

// Call implements [tool.Tool].
func (e *executeTaskTool) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		TaskID   string `json:"task_id"`
		MemberID string `json:"member_id"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	r, list, err := currentTasks(ctx)
	if err != nil {
		return "", err
	}
	member, job, err := e.t.taskJob(list, args.TaskID, args.MemberID)
	if err != nil {
		return "", err
	}
	return e.t.executeTask(ctx, r, list, job, member, memberRunID(ctx, r.Output().RunID, member.ID()), true)
}

// Resume implements [tool.Resumer]: the member run the task waits on goes
// on once its requirements are resolved.
func (e *executeTaskTool) Resume(ctx context.Context, call *run.ToolExecution, requirements []*run.Requirement) (string, error) {
	memberID, _ := call.ToolArgs["member_id"].(string)
	if memberID == "" {
		if r, ok := runhost.FromContext(ctx); ok {
			taskID, _ := call.ToolArgs["task_id"].(string)
			if task := tasksOf(r.Output().Tools).get(taskID); task != nil {
				memberID = task.Assignee
			}
		}
	}
	result, err := e.t.resumeMember(ctx, memberID, call, requirements)
	if err != nil && !errors.As(err, new(*tool.ChildPause)) {
		err = errors.New(memberFailedPrefix + err.Error())
	}
	return result, err
}

// taskJob checks that a task can run now, and by which member.
func (t *Team) taskJob(list *taskList, taskID, memberID string) (run.Runner, *task, error) {
	job := list.get(taskID)
	if job == nil {
		return nil, nil, fmt.Errorf("no task has id %q; list_tasks shows them (a task created in this turn can be executed in the next)", taskID)
	}
	switch status := list.status(job); status {
	case taskCompleted:
		return nil, nil, fmt.Errorf("task [%s] is completed already", job.ID)
	case taskBlocked:
		return nil, nil, fmt.Errorf("task [%s] is blocked: its dependencies %s have not all completed", job.ID, strings.Join(job.Dependencies, ", "))
	}
	if memberID == "" {
		memberID = job.Assignee
	}
	member, ok := t.members[memberID]
	if !ok {
		return nil, nil, fmt.Errorf("task [%s] needs a member: give member_id, one of %s", job.ID, strings.Join(t.memberIDs(), ", "))
	}
	return member, job, nil
}

// executeTask runs a task as a delegation to member. A member that fails
// fails the task: the error says so with [memberFailedPrefix].
func (t *Team) executeTask(ctx context.Context, r *runhost.Run, list *taskList, job *task, member run.Runner, runID string, pausable bool) (string, error) {
	r.Emit(&run.TeamTaskUpdated{TaskID: job.ID, Title: job.Title, Status: taskInProgress, PreviousStatus: list.status(job), Assignee: member.ID()})
	prompt := job.Title
	if job.Description != "" {
		prompt += "\n\n" + job.Description
	}
	answer, err := t.runMember(ctx, r, member, prompt, runID, pausable)
	var pause *tool.ChildPause
	switch {
	case errors.As(err, &pause):
		return "", err
	case err != nil:
		if ctx.Err() != nil {
			return "", err
		}
		reason := err.Error()
		r.Emit(&run.TeamTaskUpdated{TaskID: job.ID, Title: job.Title, Status: taskFailed, PreviousStatus: taskInProgress, Result: &reason, Assignee: member.ID()})
		return "", errors.New(memberFailedPrefix + reason)
	}
	r.Emit(&run.TeamTaskUpdated{TaskID: job.ID, Title: job.Title, Status: taskCompleted, PreviousStatus: taskInProgress, Result: &answer, Assignee: member.ID()})
	return answer, nil
}

// executeTasksTool is execute_tasks_parallel(task_ids): tasks executed at
// once, each by its assignee.
type executeTasksTool struct{ t *Team }

// Spec implements [tool.Tool].
func (e *executeTasksTool) Spec() tool.Spec {
	params := objectSchema(map[string]any{
		"task_ids": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Tasks with an assignee and no unmet dependency."},
	}, "task_ids")
	return tool.Spec{Name: ExecuteTasksParallelToolName, Parameters: params,
		Description: "Execute independent tasks at once, each by its assignee; the result lists each task's outcome."}
}

// Call implements [tool.Tool].
func (e *executeTasksTool) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		TaskIDs []string `json:"task_ids"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	r, list, err := currentTasks(ctx)
	if err != nil {
		return "", err
	}
	outcomes := make([]parallelOutcome, len(args.TaskIDs))
	slots := make(chan struct{}, e.t.cfg.MaxParallelMembers)
	var wg sync.WaitGroup
	for i, id := range args.TaskIDs {
		outcomes[i] = parallelOutcome{TaskID: id}
		member, job, err := e.t.taskJob(list, id, "")
		if err != nil {
			outcomes[i].Status, outcomes[i].Result = "refused", err.Error()
			continue
		}
		outcomes[i].MemberID = member.ID()
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			// Each task's member run is keyed by the task, as several may go
			// to one member.
			answer, err := e.t.executeTask(ctx, r, list, job, member, memberRunID(ctx, r.Output().RunID, member.ID()+"/"+job.ID), false)
			if err != nil {
				outcomes[i].Status, outcomes[i].Result = taskFailed, strings.TrimPrefix(err.Error(), memberFailedPrefix)
				return
			}
			outcomes[i].Status, outcomes[i].Result = taskCompleted, answer
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	data, err := json.Marshal(outcomes)
	return string(data), err
}

// taskLoop runs the tasks mode's iterations: after each, the task list's
// state goes out (TeamTaskStateUpdated), and the leader gets another
// iteration, with the list, unless the goal is marked complete, every task
// completed, or MaxIterations is reached.
type taskLoop struct{ t *Team }

// Start implements [agent.Iterations].
func (l *taskLoop) Start(_ context.Context, r *runhost.Run, n int) {
	r.Emit(&run.TeamTaskIterationStarted{Iteration: n, MaxIterations: l.t.cfg.MaxIterations})
}

// Next implements [agent.Iterations].
func (l *taskLoop) Next(_ context.Context, r *runhost.Run, n int) (string, bool) {
	list := tasksOf(r.Output().Tools)
	summary := list.summary()
	r.Emit(&run.TeamTaskStateUpdated{TaskSummary: summary, GoalComplete: list.goalComplete, Tasks: list.data(),
		CompletionSummary: list.completionSummary})
	r.Emit(&run.TeamTaskIterationCompleted{Iteration: n, MaxIterations: l.t.cfg.MaxIterations, TaskSummary: summary})
	if list.goalComplete || list.settled() || n >= l.t.cfg.MaxIterations {
		return "", false
	}
	return "<current_task_state>\n" + summary + "\n</current_task_state>\n\n" +
		"Go on with the tasks: create, execute or update them as needed. When every task is done, call " +
		MarkAllCompleteToolName + " with a summary.", true
}
