package team_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/internal/barriermodel"
	"github.com/agnogo/agnogo/internal/journaltest"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/team"
)

// createdIDs are the task ids the leader was told of, in order.
func createdIDs(req *model.Request) []string {
	var ids []string
	created := regexp.MustCompile(`^Task created: \[([0-9a-f]+)\]`)
	for _, msg := range req.Messages {
		if msg.Role != run.RoleTool {
			continue
		}
		if m := created.FindStringSubmatch(fmt.Sprint(msg.Content)); m != nil {
			ids = append(ids, m[1])
		}
	}
	return ids
}

func call(name string, args any) scripted.Reply {
	data, _ := json.Marshal(args)
	return scripted.ToolCall(name, string(data))
}

// withIDs is a leader reply built from the ids of the tasks created so far.
func withIDs(reply func(ids []string) scripted.Reply) scripted.Reply {
	return scripted.Respond(func(req *model.Request) scripted.Reply { return reply(createdIDs(req)) })
}

func TestTasksModeCreatesExecutesAndCompletes(t *testing.T) {
	store := openStore(t)
	writer, checker := member(t, "writer", "the draft", store), member(t, "checker", "all facts hold", store)
	leader := scripted.New([]scripted.Reply{
		scripted.ToolCalls(
			call(team.CreateTaskToolName, map[string]any{"title": "Draft", "description": "Write a draft.", "assignee": "writer"}),
			call(team.CreateTaskToolName, map[string]any{"title": "Check", "assignee": "checker"}),
		),
		withIDs(func(ids []string) scripted.Reply {
			return call(team.ExecuteTaskToolName, map[string]any{"task_id": ids[0]})
		}),
		withIDs(func(ids []string) scripted.Reply {
			return call(team.ExecuteTaskToolName, map[string]any{"task_id": ids[1]})
		}),
		call(team.MarkAllCompleteToolName, map[string]any{"summary": "drafted and checked"}),
		scripted.Text("The draft is written and checked."),
	})
	tm, err := team.New(team.Config{ID: "planner", Mode: team.ModeTasks, Model: leader, Members: []run.Runner{writer, checker}, Store: store})
	require.NoError(t, err)

	events := collect(t, tm.Stream(t.Context(), &run.Input{InputContent: "write and check", PersistOnStart: true}))
	last := events[len(events)-1]
	require.Equal(t, run.EventTeamRunCompleted, run.NameOf(last))
	require.Equal(t, "The draft is written and checked.", last.(*run.RunCompleted).Content)

	var names []string
	var created []*run.TeamTaskCreated
	var updates []string
	var state *run.TeamTaskStateUpdated
	for _, e := range events {
		if _, member := e.(*run.MemberEvent); !member {
			names = append(names, run.NameOf(e))
		}
		switch e := e.(type) {
		case *run.TeamTaskCreated:
			created = append(created, e)
		case *run.TeamTaskUpdated:
			updates = append(updates, e.Title+":"+e.Status)
		case *run.TeamTaskStateUpdated:
			state = e
		}
	}
	require.Equal(t, run.EventTeamTaskIterationStarted, names[1], names)
	require.Equal(t, []string{run.EventTeamTaskStateUpdated, run.EventTeamTaskIterationCompleted, run.EventTeamRunCompleted}, names[len(names)-3:])
	require.Len(t, created, 2)
	if created[0].Title != "Draft" { // the calls of one turn run at once
		created[0], created[1] = created[1], created[0]
	}
	require.Equal(t, "writer", created[0].Assignee)
	require.Equal(t, "pending", created[0].Status)
	require.Equal(t, []string{"Draft:in_progress", "Draft:completed", "Check:in_progress", "Check:completed"}, updates)
	require.NotNil(t, state)
	require.True(t, state.GoalComplete)
	require.Equal(t, "drafted and checked", state.CompletionSummary)
	require.Len(t, state.Tasks, 2)
	require.Equal(t, created[0].TaskID, state.Tasks[0].ID)
	require.Equal(t, "completed", state.Tasks[0].Status)
	require.Equal(t, "the draft", *state.Tasks[0].Result)
	require.Equal(t, "all facts hold", *state.Tasks[1].Result)

	// The members ran as child runs of the team's run.
	runs := memberRunsFrom(events)
	for _, id := range []string{"writer", "checker"} {
		rec, err := store.GetRun(t.Context(), runs[id], "")
		require.NoError(t, err)
		require.Equal(t, last.Base().RunID, rec.Run.ParentRunID)
	}
	// The events encode with their Team names and fields.
	data, err := run.EncodeEvent(created[0])
	require.NoError(t, err)
	require.Contains(t, string(data), `"event":"TeamTaskCreated"`)
	require.Contains(t, string(data), `"team_id":"planner"`)
	require.Contains(t, string(data), `"task_id":"`+created[0].TaskID+`"`)
}

func TestTasksModeIteratesWithTheTaskStateUntilMaxIterations(t *testing.T) {
	leader := scripted.New([]scripted.Reply{
		call(team.CreateTaskToolName, map[string]any{"title": "Draft", "assignee": "writer"}),
		scripted.Text("I will get to it."),
		scripted.Text("Still thinking."),
	})
	tm, err := team.New(team.Config{ID: "planner", Mode: team.ModeTasks, Model: leader, MaxIterations: 2,
		Members: []run.Runner{member(t, "writer", "x", nil)}})
	require.NoError(t, err)
	var iterations []int
	for e, err := range tm.Stream(t.Context(), &run.Input{InputContent: "go"}) {
		require.NoError(t, err)
		if started, ok := e.(*run.TeamTaskIterationStarted); ok {
			iterations = append(iterations, started.Iteration)
			require.Equal(t, 2, started.MaxIterations)
		}
	}
	require.Equal(t, []int{1, 2}, iterations)
	reqs := leader.Requests()
	require.Len(t, reqs, 3)
	nudge := fmt.Sprint(reqs[2].Messages[len(reqs[2].Messages)-1].Content)
	require.Contains(t, nudge, "<current_task_state>")
	require.Contains(t, nudge, "Draft — pending (assignee: writer)")
}

func TestTasksModeRefusesABlockedTask(t *testing.T) {
	leader := scripted.New([]scripted.Reply{
		call(team.CreateTaskToolName, map[string]any{"title": "Draft", "assignee": "writer"}),
		withIDs(func(ids []string) scripted.Reply {
			return call(team.CreateTaskToolName, map[string]any{"title": "Check", "assignee": "writer", "depends_on": ids})
		}),
		withIDs(func(ids []string) scripted.Reply {
			return call(team.ExecuteTaskToolName, map[string]any{"task_id": ids[1]})
		}),
		call(team.MarkAllCompleteToolName, map[string]any{"summary": "gave up"}),
		summarise,
	})
	writerModel := scripted.New([]scripted.Reply{scripted.Text("x")}, scripted.Loop())
	writer, err := agent.New(agent.Config{ID: "writer", Model: writerModel})
	require.NoError(t, err)
	tm, err := team.New(team.Config{ID: "planner", Mode: team.ModeTasks, Model: leader, Members: []run.Runner{writer}})
	require.NoError(t, err)
	out, err := tm.Run(t.Context(), &run.Input{InputContent: "go"})
	require.NoError(t, err)
	require.True(t, *out.Tools[2].ToolCallError)
	require.Contains(t, *out.Tools[2].Result, "is blocked: its dependencies")
	require.Empty(t, writerModel.Requests(), "a blocked task is not run")
}

// TestTasksModeRunsParallelTasksAtOnce: execute_tasks_parallel runs each
// task by its assignee at the same time (the members wait for each other).
func TestTasksModeRunsParallelTasksAtOnce(t *testing.T) {
	barrier := barriermodel.New(2)
	var members []run.Runner
	for _, id := range []string{"a", "b"} {
		m, err := agent.New(agent.Config{ID: id, Model: barrier.Model("done by " + id)})
		require.NoError(t, err)
		members = append(members, m)
	}
	leader := scripted.New([]scripted.Reply{
		scripted.ToolCalls(call(team.CreateTaskToolName, map[string]any{"title": "A", "assignee": "a"}),
			call(team.CreateTaskToolName, map[string]any{"title": "B", "assignee": "b"})),
		withIDs(func(ids []string) scripted.Reply {
			return call(team.ExecuteTasksParallelToolName, map[string]any{"task_ids": ids})
		}),
		scripted.Text("both done"),
	})
	tm, err := team.New(team.Config{ID: "planner", Mode: team.ModeTasks, Model: leader, Members: members})
	require.NoError(t, err)
	var state *run.TeamTaskStateUpdated
	for e, err := range tm.Stream(t.Context(), &run.Input{InputContent: "go"}) {
		require.NoError(t, err)
		if s, ok := e.(*run.TeamTaskStateUpdated); ok {
			state = s
		}
	}
	require.NotNil(t, state)
	require.Len(t, state.Tasks, 2)
	for i, id := range []string{"a", "b"} {
		require.Equal(t, "completed", state.Tasks[i].Status)
		require.Equal(t, "done by "+id, *state.Tasks[i].Result)
	}
}

// TestTasksModeTaskListSurvivesAReplay: the task list is read off the
// run's calls, so a run executed again from its journal after a crash in
// the middle of its second task has the first task completed — without
// running its member again — and completes the second.
func TestTasksModeTaskListSurvivesAReplay(t *testing.T) {
	writerModel := scripted.New([]scripted.Reply{scripted.Text("the draft")}, scripted.Loop())
	writer, err := agent.New(agent.Config{ID: "writer", Model: writerModel})
	require.NoError(t, err)
	crash, stop := context.WithCancel(t.Context())
	checks := 0
	checker, err := agent.New(agent.Config{ID: "checker", Model: scripted.New([]scripted.Reply{scripted.Respond(func(*model.Request) scripted.Reply {
		checks++
		if checks == 1 {
			stop()
			return scripted.Reply{Err: context.Canceled}
		}
		return scripted.Text("checked")
	})}, scripted.Loop())})
	require.NoError(t, err)
	leader := scripted.New([]scripted.Reply{
		scripted.ToolCalls(call(team.CreateTaskToolName, map[string]any{"title": "Draft", "assignee": "writer"}),
			call(team.CreateTaskToolName, map[string]any{"title": "Check", "assignee": "checker"})),
		withIDs(func(ids []string) scripted.Reply {
			return call(team.ExecuteTaskToolName, map[string]any{"task_id": ids[0]})
		}),
		withIDs(func(ids []string) scripted.Reply {
			return call(team.ExecuteTaskToolName, map[string]any{"task_id": ids[1]})
		}),
		scripted.Text("finished"),
	}, scripted.Loop())
	tm, err := team.New(team.Config{ID: "planner", Mode: team.ModeTasks, Model: leader, Members: []run.Runner{writer, checker}})
	require.NoError(t, err)
	journal := journaltest.New("tasks-run")
	in := &run.Input{InputContent: "go", RunID: "tasks-run"}
	for range tm.Execute(crash, in, run.Execution{Journal: journal}) {
	}
	journal.Restart()
	var state *run.TeamTaskStateUpdated
	for e, err := range tm.Execute(t.Context(), in, run.Execution{Journal: journal}) {
		require.NoError(t, err)
		if s, ok := e.(*run.TeamTaskStateUpdated); ok {
			state = s
		}
	}
	require.NotNil(t, state)
	require.Len(t, writerModel.Requests(), 1, "the completed task's member is not run again")
	var statuses []string
	for _, task := range state.Tasks {
		statuses = append(statuses, task.Title+":"+task.Status+":"+*task.Result)
	}
	require.Equal(t, []string{"Draft:completed:the draft", "Check:completed:checked"}, statuses)
	require.True(t, strings.HasPrefix(state.TaskSummary, "Tasks (2):"))
}
