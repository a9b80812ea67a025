package team_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/internal/barriermodel"
	"github.com/agnogo/agnogo/internal/journaltest"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/team"
	"github.com/agnogo/agnogo/tool"
)

func openStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "team.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// member is a native agent that answers with a fixed text.
func member(t *testing.T, id, answer string, store storage.Store) *agent.Agent {
	t.Helper()
	usage := &run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}
	a, err := agent.New(agent.Config{ID: id, Name: strings.ToUpper(id[:1]) + id[1:], Store: store,
		Model: scripted.New([]scripted.Reply{{Content: answer, Usage: usage}}, scripted.Loop())})
	require.NoError(t, err)
	return a
}

// toolResults joins the tool results the leader was sent last.
func toolResults(req *model.Request) string {
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == run.RoleTool {
			results = append(results, fmt.Sprint(msg.Content))
		}
	}
	return strings.Join(results, " | ")
}

// summarise is a leader reply that answers with every tool result it got.
var summarise = scripted.Respond(func(req *model.Request) scripted.Reply {
	return scripted.Reply{Content: "Summary: " + toolResults(req), Usage: &run.Metrics{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}}
})

func delegate(memberID, task string) scripted.Reply {
	reply := scripted.ToolCall(team.DelegateToolName, fmt.Sprintf(`{"member_id":%q,"task":%q}`, memberID, task))
	reply.Usage = &run.Metrics{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}
	return reply
}

func collect(t *testing.T, events func(func(run.Event, error) bool)) []run.Event {
	t.Helper()
	var out []run.Event
	for e, err := range events {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

func TestCoordinateDelegatesToMembersAsChildRuns(t *testing.T) {
	store := openStore(t)
	writer, checker := member(t, "writer", "a draft", store), member(t, "checker", "checked: fine", store)
	leader := scripted.New([]scripted.Reply{
		delegate("writer", "Write a draft"),
		delegate("checker", "Check the draft"),
		summarise,
	})
	tm, err := team.New(team.Config{ID: "research", Name: "Research", Model: leader, Members: []run.Runner{writer, checker},
		Store: store, StoreEvents: true, Instructions: "Delegate, then summarise."})
	require.NoError(t, err)
	require.Equal(t, run.KindTeam, tm.Kind())

	events := collect(t, tm.Stream(t.Context(), &run.Input{InputContent: "write about Go", UserID: "alice", PersistOnStart: true}))
	require.NotEmpty(t, events)
	first, last := events[0], events[len(events)-1]
	require.Equal(t, run.EventTeamRunStarted, run.NameOf(first))
	require.Equal(t, run.EventTeamRunCompleted, run.NameOf(last))
	done := last.(*run.RunCompleted)
	require.Equal(t, "Summary: a draft | checked: fine", done.Content)
	teamRunID := done.RunID

	// Member events come inside the team's stream, as the members' own.
	var memberNames []string
	memberRuns := map[string]string{}
	for _, e := range events[1 : len(events)-1] {
		m, ok := e.(*run.MemberEvent)
		if !ok {
			require.Equal(t, "research", e.Base().TeamID, "a team event: %s", run.NameOf(e))
			require.Empty(t, e.Base().AgentID)
			continue
		}
		base := m.Base()
		require.Equal(t, teamRunID, base.ParentRunID)
		require.Empty(t, base.TeamID)
		memberNames = append(memberNames, base.AgentID+":"+run.NameOf(m))
		memberRuns[base.AgentID] = base.RunID
		_, final := run.FinalStatus(e)
		require.False(t, final, "a member's end is not the team's")
	}
	require.Contains(t, memberNames, "writer:RunStarted")
	require.Contains(t, memberNames, "writer:RunCompleted")
	require.Contains(t, memberNames, "checker:RunCompleted")
	require.Less(t, indexOf(memberNames, "writer:RunCompleted"), indexOf(memberNames, "checker:RunStarted"), "coordinate delegates one at a time")

	// The leader's tools are the team's; the leader saw each member's answer.
	teamRun, err := store.GetRun(t.Context(), teamRunID, "alice")
	require.NoError(t, err)
	require.Equal(t, "research", teamRun.Run.TeamID)
	require.Equal(t, "Research", teamRun.Run.TeamName)
	require.Empty(t, teamRun.Run.AgentID)
	require.Equal(t, run.StatusCompleted, teamRun.Run.Status)
	require.Len(t, teamRun.Run.Tools, 2)
	require.Equal(t, "a draft", *teamRun.Run.Tools[0].Result)
	require.Equal(t, memberRunsFrom(events)["writer"], teamRun.Run.Tools[0].ChildRunID, "the delegation names its member run")
	// Team metrics add the members': 2×15 member tokens, 3×2 leader tokens.
	require.Equal(t, int64(36), teamRun.Run.Metrics.TotalTokens)
	// Stored events keep the members' events too, with their names.
	var stored []string
	for _, e := range teamRun.Run.Events {
		stored = append(stored, run.NameOf(e))
	}
	require.Equal(t, run.EventTeamRunStarted, stored[0])
	require.Contains(t, stored, run.EventRunCompleted)
	require.Equal(t, run.EventTeamRunCompleted, stored[len(stored)-1])

	session, err := store.GetSession(t.Context(), teamRun.SessionID, storage.GetSessionOptions{UserID: "alice"})
	require.NoError(t, err)
	require.Equal(t, storage.SessionTypeTeam, session.SessionType)
	require.Equal(t, "research", session.TeamID)
	// The session's metrics count each token once.
	data, err := json.Marshal(session.SessionData[storage.SessionMetricsKey])
	require.NoError(t, err)
	var metrics run.SessionMetrics
	require.NoError(t, json.Unmarshal(data, &metrics))
	require.Equal(t, int64(36), metrics.TotalTokens)

	for id, runID := range memberRuns {
		rec, err := store.GetRun(t.Context(), runID, "alice")
		require.NoError(t, err, id)
		require.Equal(t, teamRunID, rec.Run.ParentRunID, id)
		require.Equal(t, teamRun.SessionID, rec.SessionID, id)
		require.Equal(t, id, rec.Run.AgentID)
		require.Equal(t, run.StatusCompleted, rec.Run.Status)
	}
	history, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: teamRun.SessionID, UserID: "alice"})
	require.NoError(t, err)
	require.Len(t, history, 3, "the team run and its two member runs")
}

func memberRunsFrom(events []run.Event) map[string]string {
	runs := map[string]string{}
	for _, e := range events {
		if m, ok := e.(*run.MemberEvent); ok {
			runs[m.Base().AgentID] = m.Base().RunID
		}
	}
	return runs
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func TestRouteAnswersWithTheMembersAnswerUnchanged(t *testing.T) {
	answer := "  Exactly this, spaces and all.\n"
	leader := scripted.New([]scripted.Reply{delegate("expert", "answer it")})
	tm, err := team.New(team.Config{ID: "router", Model: leader, Mode: team.ModeRoute,
		Members: []run.Runner{member(t, "novice", "no", nil), member(t, "expert", answer, nil)}})
	require.NoError(t, err)
	out, err := tm.Run(t.Context(), &run.Input{InputContent: "question"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, answer, out.Content)
	require.Len(t, leader.Requests(), 1, "the leader does not write its own answer")
}

func TestRouteLetsTheLeaderReactToAFailedMember(t *testing.T) {
	broken, err := agent.New(agent.Config{ID: "broken", Model: scripted.New([]scripted.Reply{scripted.Fail(errors.New("model down"))})})
	require.NoError(t, err)
	leader := scripted.New([]scripted.Reply{delegate("broken", "answer it"), delegate("expert", "answer it")})
	tm, err := team.New(team.Config{ID: "router", Model: leader, Mode: team.ModeRoute,
		Members: []run.Runner{broken, member(t, "expert", "the answer", nil)}})
	require.NoError(t, err)
	out, err := tm.Run(t.Context(), &run.Input{InputContent: "question"})
	require.NoError(t, err)
	require.Equal(t, "the answer", out.Content)
	require.True(t, *out.Tools[0].ToolCallError)
	require.Contains(t, *out.Tools[0].Result, "model down")
}

func TestMemberFailureIsAToolErrorTheLeaderSees(t *testing.T) {
	broken, err := agent.New(agent.Config{ID: "broken", Model: scripted.New([]scripted.Reply{scripted.Fail(errors.New("quota exhausted"))})})
	require.NoError(t, err)
	leader := scripted.New([]scripted.Reply{delegate("broken", "do it"), summarise})
	tm, err := team.New(team.Config{ID: "t", Model: leader, Members: []run.Runner{broken}})
	require.NoError(t, err)
	events := collect(t, tm.Stream(t.Context(), &run.Input{InputContent: "go"}))
	last := events[len(events)-1]
	require.Equal(t, run.EventTeamRunCompleted, run.NameOf(last), "a member's failure does not fail the team")
	require.Contains(t, last.(*run.RunCompleted).Content, "quota exhausted")
	var names []string
	for _, e := range events {
		names = append(names, run.NameOf(e))
	}
	require.Contains(t, names, run.EventTeamToolCallError)
	require.Contains(t, names, run.EventRunError, "the member's own RunError is passed on")
}

func TestUnknownMemberIsAToolError(t *testing.T) {
	leader := scripted.New([]scripted.Reply{delegate("ghost", "boo"), summarise})
	tm, err := team.New(team.Config{ID: "t", Model: leader, Members: []run.Runner{member(t, "writer", "x", nil)}})
	require.NoError(t, err)
	out, err := tm.Run(t.Context(), &run.Input{InputContent: "go"})
	require.NoError(t, err)
	require.Contains(t, out.Content, `no member has member_id "ghost": choose one of writer`)
}

func TestBroadcastRunsMembersConcurrently(t *testing.T) {
	const n = 10
	barrier := barriermodel.New(n)
	var members []run.Runner
	for i := range n {
		a, err := agent.New(agent.Config{ID: fmt.Sprintf("m%d", i), Model: barrier.Model(fmt.Sprintf("answer %d", i))})
		require.NoError(t, err)
		members = append(members, a)
	}
	leader := scripted.New([]scripted.Reply{scripted.ToolCall(team.BroadcastToolName, `{"task":"everyone answer"}`), summarise})
	tm, err := team.New(team.Config{ID: "all", Model: leader, Mode: team.ModeBroadcast, Members: members})
	require.NoError(t, err)
	out, err := tm.Run(t.Context(), &run.Input{InputContent: "go"})
	require.NoError(t, err)
	for i := range n {
		require.Contains(t, out.Content, fmt.Sprintf("Member m%d (m%d):\nanswer %d", i, i, i))
	}
}

func TestCancellingTheTeamCancelsMembersInFlight(t *testing.T) {
	store := openStore(t)
	barrier := barriermodel.New(3) // two members: it never opens
	var members []run.Runner
	for _, id := range []string{"a", "b"} {
		m, err := agent.New(agent.Config{ID: id, Store: store, Model: barrier.Model("never")})
		require.NoError(t, err)
		members = append(members, m)
	}
	leader := scripted.New([]scripted.Reply{scripted.ToolCall(team.BroadcastToolName, `{"task":"wait"}`)})
	tm, err := team.New(team.Config{ID: "t", Model: leader, Mode: team.ModeBroadcast, Members: members, Store: store})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-barrier.Arrivals(); <-barrier.Arrivals(); cancel() }()
	var last run.Event
	memberRuns := map[string]bool{}
	for e, err := range tm.Stream(ctx, &run.Input{InputContent: "go", PersistOnStart: true}) {
		require.NoError(t, err)
		if m, ok := e.(*run.MemberEvent); ok {
			memberRuns[m.Base().RunID] = true
		}
		last = e
	}
	require.Equal(t, run.EventTeamRunCancelled, run.NameOf(last))
	require.Len(t, memberRuns, 2)
	for runID := range memberRuns {
		rec, err := store.GetRun(t.Context(), runID, "")
		require.NoError(t, err)
		require.Equal(t, run.StatusCancelled, rec.Run.Status, "member run %s", runID)
	}
	rec, err := store.GetRun(t.Context(), last.Base().RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, rec.Run.Status)
}

func TestNestedTeamIsAMember(t *testing.T) {
	inner, err := team.New(team.Config{ID: "inner", Model: scripted.New([]scripted.Reply{delegate("writer", "write"), summarise}),
		Members: []run.Runner{member(t, "writer", "inner draft", nil)}})
	require.NoError(t, err)
	outer, err := team.New(team.Config{ID: "outer", Model: scripted.New([]scripted.Reply{delegate("inner", "ask the inner team"), summarise}),
		Members: []run.Runner{inner}})
	require.NoError(t, err)
	events := collect(t, outer.Stream(t.Context(), &run.Input{InputContent: "go"}))
	last := events[len(events)-1].(*run.RunCompleted)
	require.Equal(t, "Summary: Summary: inner draft", last.Content)
	var innerTeam, writer bool
	for _, e := range events {
		base := e.Base()
		switch {
		case base.TeamID == "inner" && run.NameOf(e) == run.EventTeamRunCompleted:
			innerTeam = true
			require.Equal(t, last.RunID, base.ParentRunID)
		case base.AgentID == "writer" && run.NameOf(e) == run.EventRunCompleted:
			writer = true
			require.NotEqual(t, last.RunID, base.ParentRunID, "the writer is the inner team's child")
		}
	}
	require.True(t, innerTeam)
	require.True(t, writer)
}

func TestMembersGetTheTeamsInputWhenTheLeaderDoesNotDetermineIt(t *testing.T) {
	writerModel := scripted.New([]scripted.Reply{scripted.Text("ok")})
	writer, err := agent.New(agent.Config{ID: "writer", Model: writerModel})
	require.NoError(t, err)
	no := false
	tm, err := team.New(team.Config{ID: "t", Model: scripted.New([]scripted.Reply{delegate("writer", "a rewritten task"), summarise}),
		Members: []run.Runner{writer}, DetermineInputForMembers: &no})
	require.NoError(t, err)
	_, err = tm.Run(t.Context(), &run.Input{InputContent: "the user's own words"})
	require.NoError(t, err)
	reqs := writerModel.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "the user's own words", fmt.Sprint(reqs[0].Messages[len(reqs[0].Messages)-1].Content))
}

func TestStreamMemberEventsOff(t *testing.T) {
	off := false
	tm, err := team.New(team.Config{ID: "t", Model: scripted.New([]scripted.Reply{delegate("writer", "w"), summarise}),
		Members: []run.Runner{member(t, "writer", "draft", nil)}, StreamMemberEvents: &off})
	require.NoError(t, err)
	events := collect(t, tm.Stream(t.Context(), &run.Input{InputContent: "go"}))
	for _, e := range events {
		_, isMember := e.(*run.MemberEvent)
		require.False(t, isMember, "no member event: %s", run.NameOf(e))
	}
	last := events[len(events)-1]
	require.Equal(t, run.EventTeamRunCompleted, run.NameOf(last))
	require.Equal(t, "Summary: draft", last.(*run.RunCompleted).Content, "the member still ran")
}

func TestStoreMemberResponses(t *testing.T) {
	store := openStore(t)
	tm, err := team.New(team.Config{ID: "t", Model: scripted.New([]scripted.Reply{delegate("writer", "w"), summarise}),
		Members: []run.Runner{member(t, "writer", "draft", store)}, Store: store, StoreMemberResponses: true})
	require.NoError(t, err)
	out, err := tm.Run(t.Context(), &run.Input{InputContent: "go", PersistOnStart: true})
	require.NoError(t, err)
	require.Len(t, out.MemberResponses, 1)
	require.Equal(t, "draft", out.MemberResponses[0].Content)
	require.Equal(t, out.RunID, out.MemberResponses[0].ParentRunID)
	rec, err := store.GetRun(t.Context(), out.RunID, "")
	require.NoError(t, err)
	require.Len(t, rec.Run.MemberResponses, 1)
}

func TestConfigErrors(t *testing.T) {
	writer := member(t, "writer", "x", nil)
	fake := scripted.New(nil)
	for name, tc := range map[string]struct {
		cfg  team.Config
		want string
	}{
		"no model":     {team.Config{Members: []run.Runner{writer}}, "Model (the leader's model) is required"},
		"no members":   {team.Config{Model: fake}, "at least one member"},
		"bad mode":     {team.Config{Model: fake, Members: []run.Runner{writer}, Mode: "vote"}, `mode "vote" is not one of`},
		"tasks routed": {team.Config{Model: fake, Members: []run.Runner{writer}, Mode: team.ModeTasks, RespondDirectly: true}, "mode tasks takes neither"},
		"twice":        {team.Config{Model: fake, Members: []run.Runner{writer, writer}}, `member id "writer" is used twice`},
		"self":         {team.Config{ID: "writer", Model: fake, Members: []run.Runner{writer}}, "is the team's own id"},
		"route to all": {team.Config{Model: fake, Members: []run.Runner{writer}, RespondDirectly: true, DelegateToAllMembers: true}, "exclude each other"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := team.New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestJournaledTeamRunDoesNotRepeatACompletedDelegation: a team run stops
// (its context is cancelled, as a crash would stop it) while its second
// delegation is in flight. Executed again with the same journal, the
// completed delegation is replayed — its member is not run again — and the
// one in flight runs again as the same member run.
func TestJournaledTeamRunDoesNotRepeatACompletedDelegation(t *testing.T) {
	store := openStore(t)
	usage := &run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}
	writerModel := scripted.New([]scripted.Reply{{Content: "a draft", Usage: usage}}, scripted.Loop())
	writer, err := agent.New(agent.Config{ID: "writer", Model: writerModel, Store: store})
	require.NoError(t, err)
	crash, stop := context.WithCancel(t.Context())
	checks := 0
	checkerModel := scripted.New([]scripted.Reply{scripted.Respond(func(*model.Request) scripted.Reply {
		checks++
		if checks == 1 {
			stop()
			return scripted.Reply{Err: context.Canceled}
		}
		return scripted.Reply{Content: "checked", Usage: usage}
	})}, scripted.Loop())
	checker, err := agent.New(agent.Config{ID: "checker", Model: checkerModel, Store: store})
	require.NoError(t, err)
	leader := scripted.New([]scripted.Reply{delegate("writer", "write"), delegate("checker", "check"), summarise}, scripted.Loop())
	tm, err := team.New(team.Config{ID: "t", Model: leader, Members: []run.Runner{writer, checker}, Store: store})
	require.NoError(t, err)

	journal := journaltest.New("team-run")
	in := &run.Input{InputContent: "go", RunID: "team-run", SessionID: "s", PersistOnStart: true}
	var checkerRun string
	for e := range tm.Execute(crash, in, run.Execution{Journal: journal}) {
		if m, ok := e.(*run.MemberEvent); ok && m.Base().AgentID == "checker" {
			checkerRun = m.Base().RunID
		}
	}
	require.Equal(t, []string{"model", "tool:" + team.DelegateToolName, "model"}, journal.Ran(), "the stopped delegation recorded nothing")

	journal.Restart()
	var out *run.RunCompleted
	for e, err := range tm.Execute(t.Context(), in, run.Execution{Journal: journal}) {
		require.NoError(t, err)
		if done, ok := e.(*run.RunCompleted); ok && e.Base().TeamID == "t" {
			out = done
		}
	}
	require.NotNil(t, out)
	require.Equal(t, "Summary: a draft | checked", out.Content)
	require.Len(t, writerModel.Requests(), 1, "the completed delegation is not repeated")
	// The replayed delegation's member still counts: 3 leader calls of 2
	// tokens, 2 members of 15.
	require.Equal(t, int64(36), out.Metrics.TotalTokens)
	rec, err := store.GetRun(t.Context(), checkerRun, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, rec.Run.Status, "the delegation in flight ran again as the same member run")
	require.Equal(t, "checked", rec.Run.Content)
}

// TestMemberPauseForConfirmationPausesTheTeam: a member whose tool needs a
// confirmation pauses, which pauses the team with the member's
// requirement; continuing the team with the confirmation continues the
// member, whose answer the leader then reads.
func TestMemberPauseForConfirmationPausesTheTeam(t *testing.T) {
	store := openStore(t)
	deleted := 0
	remove, err := tool.New(tool.Config{Name: "delete_file", RequiresConfirmation: true}, func(_ context.Context, args struct {
		Path string `json:"path"`
	}) (string, error) {
		deleted++
		return "deleted " + args.Path, nil
	})
	require.NoError(t, err)
	janitor, err := agent.New(agent.Config{ID: "janitor", Name: "Janitor", Store: store, Tools: []tool.Tool{remove},
		Model: scripted.New([]scripted.Reply{scripted.ToolCall("delete_file", `{"path":"/tmp/x"}`), scripted.Text("cleaned up")})})
	require.NoError(t, err)
	leader := scripted.New([]scripted.Reply{delegate("janitor", "clean /tmp/x"), summarise})
	tm, err := team.New(team.Config{ID: "ops", Model: leader, Members: []run.Runner{janitor}, Store: store})
	require.NoError(t, err)

	var paused *run.RunPaused
	for e, err := range tm.Stream(t.Context(), &run.Input{InputContent: "clean up", UserID: "alice", PersistOnStart: true}) {
		require.NoError(t, err)
		if p, ok := e.(*run.RunPaused); ok {
			paused = p
		}
	}
	require.NotNil(t, paused, "the team pauses")
	require.Equal(t, run.EventTeamRunPaused, run.NameOf(paused))
	require.Len(t, paused.Requirements, 1)
	req := paused.Requirements[0]
	require.Equal(t, "janitor", req.MemberAgentID)
	require.Equal(t, "Janitor", req.MemberAgentName)
	require.NotEmpty(t, req.MemberRunID)
	require.Equal(t, "delete_file", req.ToolExecution.ToolName)
	require.Zero(t, deleted)

	stored, err := store.GetRun(t.Context(), paused.RunID, "alice")
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, stored.Run.Status)
	member, err := store.GetRun(t.Context(), req.MemberRunID, "alice")
	require.NoError(t, err)
	require.Equal(t, run.StatusPaused, member.Run.Status)
	require.Equal(t, paused.RunID, member.Run.ParentRunID)

	// A resolution naming no waiting call is refused before anything runs.
	bad := &run.ContinueRequest{RunID: paused.RunID, UserID: "alice", Tools: []*run.ToolExecution{{ToolCallID: "nope", Confirmed: new(true)}}}
	require.ErrorIs(t, tm.CheckContinue(t.Context(), bad), run.ErrInvalidContinue)
	// Continuing without the confirmation says what is missing.
	require.ErrorIs(t, tm.CheckContinue(t.Context(), &run.ContinueRequest{RunID: paused.RunID, UserID: "alice"}), run.ErrUnresolved)

	confirm := &run.ContinueRequest{RunID: paused.RunID, UserID: "alice",
		Tools: []*run.ToolExecution{{ToolCallID: req.ToolExecution.ToolCallID, Confirmed: new(true)}}}
	var names []string
	var done *run.RunCompleted
	for e, err := range tm.Continue(t.Context(), confirm) {
		require.NoError(t, err)
		names = append(names, run.NameOf(e))
		if c, ok := e.(*run.RunCompleted); ok {
			done = c
		}
	}
	require.Equal(t, run.EventTeamRunContinued, names[0])
	require.Contains(t, names, run.EventRunContinued, "the member's continuation is passed on")
	require.NotNil(t, done)
	require.Equal(t, "Summary: cleaned up", done.Content)
	require.Equal(t, 1, deleted)
	member, err = store.GetRun(t.Context(), req.MemberRunID, "alice")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, member.Run.Status)
	final, err := store.GetRun(t.Context(), paused.RunID, "alice")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, final.Run.Status)
	require.Equal(t, req.MemberRunID, final.Run.Tools[0].ChildRunID)
}

func TestToolCallLimitCountsDelegations(t *testing.T) {
	writerModel := scripted.New([]scripted.Reply{scripted.Text("draft")}, scripted.Loop())
	writer, err := agent.New(agent.Config{ID: "writer", Model: writerModel})
	require.NoError(t, err)
	tm, err := team.New(team.Config{ID: "t", ToolCallLimit: 1, Members: []run.Runner{writer},
		Model: scripted.New([]scripted.Reply{delegate("writer", "one"), delegate("writer", "two"), summarise})})
	require.NoError(t, err)
	out, err := tm.Run(t.Context(), &run.Input{InputContent: "go"})
	require.NoError(t, err)
	require.Len(t, writerModel.Requests(), 1, "the second delegation is past the limit")
	require.Contains(t, *out.Tools[1].Result, "tool call limit reached")
}
