package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/team"
)

func TestParseTeams(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
models:
  fake: {provider: openai, id: gpt-test, prices: {input: 1, output: 2}}
agents:
  - {id: writer, model: fake}
  - {id: checker, model: fake}
teams:
  - id: research
    model: fake
    mode: coordinate
    members: [writer, checker]
    instructions: Delegate, then summarise.
    stream_member_events: true
  - id: desk
    name: Front desk
    description: Answers the public.
    role: Triage
    members: [research, writer]
    mode: route
    determine_input_for_members: false
    stream_member_events: false
    store_member_responses: true
    add_history_to_context: true
    num_history_runs: 5
    tools: [user_control_flow_tools, {name: lookup, external_execution: true}]
    output_schema: {type: object, properties: {answer: {type: string}}}
    store_events: true
    retries: 2
    delay_between_retries: 0.5
    exponential_backoff: true
  - id: all
    model: openai:gpt-5-mini
    members: [writer, checker]
    mode: broadcast
    max_parallel_members: 4
  - id: planner
    members: [writer]
    mode: tasks
    max_iterations: 3
`, nil)
	require.Len(t, file.Teams, 4)
	research, desk, all, planner := file.Teams[0], file.Teams[1], file.Teams[2], file.Teams[3]

	require.Equal(t, &Team{
		ID: "research", Name: "research", Model: "fake", ResolvedModel: file.Models["fake"],
		Instructions: "Delegate, then summarise.", Members: []string{"writer", "checker"}, Mode: team.ModeCoordinate,
		DetermineInputForMembers: true, StreamMemberEvents: true,
		MaxIterations: team.DefaultMaxIterations, MaxParallelMembers: team.DefaultMaxParallelMembers,
		NumHistoryRuns: 3, DelayBetweenRetries: time.Second,
		Line: 8, modelLine: 9, memberLines: []int{11, 11},
	}, research, "the keys as written, every other at its default")

	require.Equal(t, "Front desk", desk.Name)
	require.Equal(t, "Answers the public.", desk.Description)
	require.Equal(t, "Triage", desk.Role)
	require.Equal(t, team.ModeRoute, desk.Mode)
	require.True(t, desk.RespondDirectly, "mode route answers with the member's answer")
	require.False(t, desk.DelegateToAllMembers)
	require.False(t, desk.DetermineInputForMembers)
	require.False(t, desk.StreamMemberEvents)
	require.True(t, desk.StoreMemberResponses)
	require.True(t, desk.AddHistoryToContext)
	require.Equal(t, 5, desk.NumHistoryRuns)
	require.Equal(t, []string{ToolUserControlFlow}, desk.Tools)
	require.Len(t, desk.ToolOptions, 1)
	require.True(t, desk.ToolOptions[0].Declared())
	require.NotNil(t, desk.OutputSchema)
	require.True(t, desk.StoreEvents)
	require.Equal(t, 2, desk.Retries)
	require.Equal(t, 500*time.Millisecond, desk.DelayBetweenRetries)
	require.True(t, desk.ExponentialBackoff)
	require.Equal(t, "gpt-5-mini", desk.ResolvedModel.ID, "no model key: the default model")

	require.True(t, all.DelegateToAllMembers, "mode broadcast sends every task to all")
	require.Equal(t, 4, all.MaxParallelMembers)
	require.Equal(t, team.ModeTasks, planner.Mode)
	require.Equal(t, 3, planner.MaxIterations)
}

func TestParseTeamErrors(t *testing.T) {
	t.Parallel()
	const agents = "agents:\n  - id: writer\n  - id: checker\n" // lines 1-3
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"unknown member", agents + "teams:\n  - id: t\n    members:\n      - writer\n      - nobody\n",
			`agnogo.yaml:8: unknown member "nobody" in team "t": no agent or team of this file has that id (agents: writer, checker; teams: t)`},
		{"itself as a member", agents + "teams:\n  - id: t\n    members: [writer,\n      t]\n",
			`agnogo.yaml:7: team "t" lists itself as a member; a team cannot be its own member`},
		{"a cycle of two teams", agents + "teams:\n  - id: a\n    members: [writer, b]\n  - id: b\n    members:\n      - a\n",
			`agnogo.yaml:9: member "a" of team "b" makes a cycle of teams, "a" → "b" → "a": a team cannot contain itself, directly or through other teams`},
		{"a cycle of three teams", agents + "teams:\n  - {id: a, members: [b]}\n  - {id: b, members: [c]}\n  - {id: c, members: [checker, a]}\n",
			`agnogo.yaml:7: member "a" of team "c" makes a cycle of teams, "a" → "b" → "c" → "a"`},
		{"a team with an agent's id", agents + "teams:\n  - id: writer\n    members: [checker]\n",
			`agnogo.yaml:5: duplicate id "writer": team "writer" has the id of the agent at line 2; agent and team ids must be unique`},
		{"two teams with one id", agents + "teams:\n  - {id: t, members: [writer]}\n  - {id: t, members: [checker]}\n",
			`agnogo.yaml:6: duplicate team id "t" (first defined at line 5); agent and team ids must be unique`},
		{"unknown key", agents + "teams:\n  - id: t\n    members: [writer]\n    mdoe: route\n",
			`agnogo.yaml:7: unknown key "mdoe" in team "t"; did you mean "mode"?`},
		{"an agent's key", agents + "teams:\n  - id: t\n    members: [writer]\n    offload_tool_results: true\n",
			`agnogo.yaml:7: key "offload_tool_results" in team "t" is a key of agents, not of teams; a team's keys are: id, name,`},
		{"an unsupported Agno key", agents + "teams:\n  - id: t\n    members: [writer]\n    reasoning: true\n",
			`agnogo.yaml:7: key "reasoning" in team "t" is not supported for agnogo teams: `},
		{"no id", agents + "teams:\n  - members: [writer]\n",
			`agnogo.yaml:5: teams[0] has no id; add id: followed by a unique name`},
		{"no members", agents + "teams:\n  - id: t\n    model: openai:gpt-5\n",
			`agnogo.yaml:5: team "t" has no members; add members: followed by a list of agent or team ids, such as [writer, checker]`},
		{"empty members", agents + "teams:\n  - id: t\n    members: []\n",
			`agnogo.yaml:6: members in team "t": a team needs at least one member`},
		{"members not a list", agents + "teams:\n  - id: t\n    members: writer\n",
			`agnogo.yaml:6: members in team "t": want a list of agent or team ids, such as [writer, checker], got "writer"`},
		{"a member twice", agents + "teams:\n  - id: t\n    members: [writer,\n      writer]\n",
			`agnogo.yaml:7: member "writer" is listed twice in team "t" (first at line 6)`},
		{"unknown mode", agents + "teams:\n  - id: t\n    members: [writer]\n    mode: vote\n",
			`agnogo.yaml:7: mode in team "t": "vote" is not one of coordinate, route, broadcast, tasks`},
		{"route answering indirectly", agents + "teams:\n  - id: t\n    members: [writer]\n    mode: route\n    respond_directly: false\n",
			`agnogo.yaml:8: respond_directly: false in team "t" contradicts mode: route`},
		{"broadcast to some", agents + "teams:\n  - id: t\n    members: [writer]\n    mode: broadcast\n    delegate_to_all_members: false\n",
			`agnogo.yaml:8: delegate_to_all_members: false in team "t" contradicts mode: broadcast`},
		{"respond directly to a broadcast", agents + "teams:\n  - id: t\n    members: [writer]\n    mode: broadcast\n    respond_directly: true\n",
			`agnogo.yaml:8: respond_directly and delegate_to_all_members exclude each other in team "t"`},
		{"max_iterations outside tasks", agents + "teams:\n  - id: t\n    members: [writer]\n    max_iterations: 3\n",
			`agnogo.yaml:7: max_iterations in team "t" bounds the iterations of mode tasks only; this team's mode is coordinate`},
		{"max_parallel_members outside broadcast", agents + "teams:\n  - id: t\n    members: [writer]\n    max_parallel_members: 3\n",
			`agnogo.yaml:7: max_parallel_members in team "t" bounds a broadcast`},
		{"a tool named as the delegation tool", agents + "teams:\n  - id: t\n    members: [writer]\n    tools: [{name: delegate_task_to_member, external_execution: true}]\n",
			`agnogo.yaml:7: tool "delegate_task_to_member" in team "t": the name is taken by the team's delegation tool`},
		{"workspace without the toolkit", agents + "teams:\n  - id: t\n    members: [writer]\n    workspace: {root: .}\n",
			`agnogo.yaml:7: workspace in team "t" is set but tools does not list workspace`},
		{"unknown model", agents + "teams:\n  - id: t\n    members: [writer]\n    model: fast\n",
			`agnogo.yaml:7: unknown model "fast" in team "t": not a key of models (none) nor provider:id`},
		{"teams not a list", "teams: {id: t}\n",
			`agnogo.yaml:1: teams: want a list of teams (each starting with - id: …), got a mapping`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tt.yaml), "agnogo.yaml", env(nil))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			var configErr *Error
			require.True(t, errors.As(err, &configErr), "an error naming its line")
		})
	}
}

// teamYAML is a file of two agents and a coordinate team of both on a fake
// model; nested adds a team whose members are the team and an agent,
// listed before the team it contains.
const teamYAML = `
db: ${DB}
models:
  fake: {provider: openai, id: gpt-test, base_url: "${FAKE_URL}", api_key: sk-fake}
agents:
  - {id: writer, model: fake, instructions: Write.}
  - {id: checker, model: fake, instructions: Check.}
teams:
  - id: desk
    model: fake
    mode: route
    members: [research, checker]
  - id: research
    model: fake
    mode: coordinate
    members: [writer, checker]
    instructions: Delegate, then summarise.
    stream_member_events: true
`

func TestBuildRunsTeams(t *testing.T) {
	t.Parallel()
	b := build(t, teamYAML)
	require.Equal(t, []string{"writer", "checker"}, b.os.AgentIDs)
	require.Equal(t, []string{"desk", "research"}, b.os.TeamIDs, "file order")
	require.Len(t, b.os.Teams, 2)

	runner, err := b.os.Runner("research")
	require.NoError(t, err)
	research, ok := runner.(*team.Team)
	require.True(t, ok)
	require.Same(t, b.os.Teams["research"], research)
	require.Equal(t, run.KindTeam, research.Kind())
	require.Equal(t, team.ModeCoordinate, research.Mode())
	require.Equal(t, []run.Runner{b.os.Agents["writer"], b.os.Agents["checker"]}, research.Members())
	desk := b.os.Teams["desk"]
	require.Equal(t, []run.Runner{research, b.os.Agents["checker"]}, desk.Members(), "the nested team was built first and is the member")
	require.True(t, desk.Settings().RespondDirectly)
	require.Same(t, b.os.Store, research.Settings().Store, "the agents' store")

	var ids []string
	for _, r := range b.os.Runners() {
		ids = append(ids, r.ID())
	}
	require.Equal(t, []string{"writer", "checker", "desk", "research"}, ids, "agents, then teams")
	var served []string
	for _, r := range b.os.Server(ServerOptions{Getenv: env(nil)}).Runners {
		served = append(served, r.ID())
	}
	require.Equal(t, ids, served, "the server serves the teams after the agents")

	_, err = b.os.Runner("nobody")
	require.ErrorIs(t, err, ErrUnknownAgent)
	require.EqualError(t, err, `unknown agent or team "nobody"; known agents: writer, checker; teams: desk, research`)

	// The leader delegates to writer, then answers from its result.
	b.fake.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call(team.DelegateToolName, map[string]any{"member_id": "writer", "task": "Draft a haiku."})),
		fakeopenai.Text("An old pond."),
		fakeopenai.Text("The writer says: An old pond."),
	)
	out, err := research.Run(t.Context(), &run.Input{InputContent: "A haiku, please."})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "The writer says: An old pond.", out.Content)
	require.Equal(t, "research", out.TeamID)
	requests := b.fake.Requests()
	require.Len(t, requests, 3)
	require.Contains(t, messageTexts(requests[0])[0], "Delegate, then summarise.")
	require.Equal(t, []string{"system: Write.", "user: Draft a haiku."}, messageTexts(requests[1]), "the member runs on the leader's task")

	records, _, err := b.os.Store.GetRuns(t.Context(), storage.RunQuery{SessionID: out.SessionID})
	require.NoError(t, err)
	var member *run.Output
	for _, rec := range records {
		if rec.Run.RunID != out.RunID {
			member = rec.Run
		}
	}
	require.NotNil(t, member, "the member run is stored in the team's session")
	require.Equal(t, "writer", member.AgentID)
	require.Equal(t, out.RunID, member.ParentRunID)
	require.Equal(t, "An old pond.", member.Content)
}

func TestBuildTasksTeam(t *testing.T) {
	t.Parallel()
	yaml := "db: ${DB}\nagents:\n  - {id: writer, model: ollama:x}\nteams:\n  - id: planner\n    model: ollama:x\n    mode: tasks\n    max_iterations: 4\n    members: [writer]\n"
	built, err := buildFile(t, yaml, map[string]string{})
	require.NoError(t, err)
	planner := built.Teams["planner"]
	require.Equal(t, team.ModeTasks, planner.Mode())
	require.Equal(t, 4, planner.Settings().MaxIterations)
}

func TestTeamOrder(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
agents: [{id: w}]
teams:
  - {id: top, members: [mid, low]}
  - {id: mid, members: [low, w]}
  - {id: low, members: [w]}
  - {id: side, members: [w]}
`, nil)
	var ids []string
	for _, tm := range teamOrder(file.Teams) {
		ids = append(ids, tm.ID)
	}
	require.Equal(t, []string{"low", "mid", "top", "side"}, ids, "each team after its member teams, file order otherwise")
}

// TestTeamMissingCredentials lists a team beside the agents of a model
// without credentials.
func TestTeamMissingCredentials(t *testing.T) {
	t.Parallel()
	built, _, _ := serverOS(t, "db: ${DB}\nagents: [{id: w, model: openai:gpt-5-mini}]\nteams: [{id: t, model: openai:gpt-5-mini, members: [w]}]\n", nil)
	require.Len(t, built.MissingCredentials, 1)
	require.Equal(t, []string{"w", "t"}, built.MissingCredentials[0].Agents)
}

// TestTeamKeysAreDocumented fails when a key of a team has no row in the
// teams section of docs/config.md.
func TestTeamKeysAreDocumented(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/config.md")
	require.NoError(t, err)
	doc := string(data)
	_, section, found := strings.Cut(doc, "\n## `teams`\n")
	require.True(t, found, "docs/config.md has a ## `teams` section")
	section, _, _ = strings.Cut(section, "\n## ")
	for _, key := range teamKeys {
		require.Contains(t, section, fmt.Sprintf("| `%s` |", key), "docs/config.md's teams section has no row for %q", key)
	}
}
