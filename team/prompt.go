package team

import (
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/run"
)

// systemMessage is the leader's system message: the team's instructions,
// its members and how to reach them in the team's mode.
func (t *Team) systemMessage() string {
	var b strings.Builder
	if t.cfg.Instructions != "" {
		b.WriteString(strings.TrimSpace(t.cfg.Instructions))
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "You lead the team %q. Its members:\n", t.cfg.Name)
	for _, m := range t.cfg.Members {
		fmt.Fprintf(&b, "- member_id: %s\n  name: %s\n", m.ID(), m.Name())
		if role := describe(m); role != "" {
			fmt.Fprintf(&b, "  role: %s\n", role)
		}
	}
	b.WriteString("\n")
	switch {
	case t.cfg.Mode == ModeTasks:
		b.WriteString("Work through a task list: break the request into tasks with create_task (assign each to a member, " +
			"with depends_on for tasks that need others first), then have members execute them with execute_task, or " +
			"execute_tasks_parallel for independent tasks, and update tasks you handle yourself with update_task_status. " +
			"list_tasks shows the list. When every task is done, call mark_all_complete with a summary, then answer " +
			"from the tasks' results.")
	case t.cfg.DelegateToAllMembers:
		b.WriteString("Send a task to every member at once with delegate_task_to_members(task), " +
			"then answer from all their results.")
	case t.cfg.RespondDirectly:
		b.WriteString("Pick the one member best placed to answer and delegate the request to it with " +
			"delegate_task_to_member(member_id, task): its answer goes to the user as it is.")
	default:
		b.WriteString("Delegate tasks to the members with delegate_task_to_member(member_id, task), " +
			"one or several, then answer from their results. A failed delegation comes back as an error: " +
			"try another member or answer with what you have.")
	}
	if !t.determineInput() {
		b.WriteString(" Each member receives the user's request as it came, whatever task you write.")
	}
	return b.String()
}

// describe is what the leader is told of a member beyond its name: its
// role, else its description.
func describe(m run.Runner) string {
	if r, ok := m.(interface{ Role() string }); ok && r.Role() != "" {
		return r.Role()
	}
	if d, ok := m.(interface{ Description() string }); ok {
		return d.Description()
	}
	return ""
}

// determineInput reports whether the leader writes the members' tasks.
func (t *Team) determineInput() bool {
	return t.cfg.DetermineInputForMembers == nil || *t.cfg.DetermineInputForMembers
}

// streamMembers reports whether the members' events go into the team's
// stream.
func (t *Team) streamMembers() bool {
	return t.cfg.StreamMemberEvents == nil || *t.cfg.StreamMemberEvents
}
