package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/team"
)

// Team is one entry of the teams list: a leader model that works with
// members — agents or other teams of the same file — as package team runs
// it. [Parse] fills in every default.
type Team struct {
	// ID identifies the team (team_id on runs and sessions). Required, and
	// unique among the ids of agents and teams.
	ID string
	// Name is the display name. Defaults to ID.
	Name string
	// Description says what the team is for (GET /teams, and to a leader
	// whose member it is). Defaults to "".
	Description string
	// Role is the team's role, as a leader whose member it is sees it.
	// Defaults to "".
	Role string
	// Model is the leader's model key as written ("" when left out): a key
	// of the models mapping or provider:id; left out, $AGNOGO_MODEL, else
	// [DefaultModel] (see ResolvedModel).
	Model string
	// ResolvedModel is the model the leader runs on.
	ResolvedModel *Model
	// Instructions tell the leader what to do; its system message adds the
	// members and how to reach them. Defaults to "".
	Instructions string
	// Members are the ids of the team's members, in order: agents (agnogo,
	// claude or codex) or other teams of the file. Required, at least one.
	Members []string
	// Mode is how the leader works with the members. Defaults to
	// [team.ModeCoordinate].
	Mode team.Mode

	// RespondDirectly makes a member's answer the team's answer, as it is.
	// Defaults to false; true in mode route.
	RespondDirectly bool
	// DelegateToAllMembers gives the leader delegate_task_to_members,
	// which sends one task to every member at once. Defaults to false;
	// true in mode broadcast.
	DelegateToAllMembers bool
	// DetermineInputForMembers lets the leader write each member's task;
	// false sends the members the team's input as it came. Defaults to
	// true.
	DetermineInputForMembers bool
	// MaxIterations bounds the iterations of mode tasks. Defaults to
	// [team.DefaultMaxIterations].
	MaxIterations int
	// StreamMemberEvents passes the members' events on in the team's
	// stream. Defaults to true.
	StreamMemberEvents bool
	// StoreMemberResponses keeps the member runs on the team's run
	// (member_responses) besides their own rows. Defaults to false.
	StoreMemberResponses bool
	// MaxParallelMembers bounds how many members a broadcast runs at once.
	// Defaults to [team.DefaultMaxParallelMembers].
	MaxParallelMembers int

	// AddHistoryToContext sends earlier runs of the session to the leader.
	// Defaults to false.
	AddHistoryToContext bool
	// NumHistoryRuns is how many earlier runs make the history. Defaults
	// to 3.
	NumHistoryRuns int
	// Tools are the built-in toolkits the leader may use besides the
	// delegation tools, by name. Defaults to none.
	Tools []string
	// ToolkitSettings are the settings of the listed toolkits written with
	// them (web_search: {provider: tavily}), by toolkit name, as JSON.
	// Defaults to nil.
	ToolkitSettings map[string]json.RawMessage
	// ToolOptions are the entries of the leader's tools written as
	// mappings, as for an agnogo agent. Defaults to none.
	ToolOptions []*ToolOptions
	// Workspace configures the workspace toolkit; set whenever Tools lists
	// workspace.
	Workspace *Workspace
	// ToolCallLimit caps the leader's tool calls in a run, delegations
	// included. Defaults to 0: no cap.
	ToolCallLimit int
	// SessionState is the initial state of a new team session. Defaults
	// to none.
	SessionState map[string]any
	// MaxModelMediaBytes bounds the stored media read back into a leader's
	// model request (negative: no bound). Defaults to 0:
	// [agent.DefaultMaxModelMediaBytes].
	MaxModelMediaBytes int64
	// OutputSchema asks the leader for a structured answer. Defaults to
	// nil: a text answer.
	OutputSchema *agent.OutputSchema
	// StoreEvents keeps the team run's events (with its members' when
	// they are streamed) on the stored run. Defaults to false.
	StoreEvents bool
	// Retries is how many more attempts the leader gets after a retryable
	// model failure. Defaults to 0.
	Retries int
	// DelayBetweenRetries is the wait before a retry (written in seconds).
	// Defaults to 1s.
	DelayBetweenRetries time.Duration
	// ExponentialBackoff doubles the delay with each attempt. Defaults to
	// false.
	ExponentialBackoff bool

	// Line is where the team's entry starts.
	Line int
	// modelLine is where the model key is, for reference errors.
	modelLine int
	// memberLines are the lines of Members' items.
	memberLines []int
}

// The keys of a team, in the documentation's order.
var teamKeys = []string{"id", "name", "description", "role", "model", "instructions", "members", "mode",
	"respond_directly", "delegate_to_all_members", "determine_input_for_members", "max_iterations",
	"stream_member_events", "store_member_responses", "max_parallel_members", "add_history_to_context",
	"num_history_runs", "tools", "workspace", "tool_call_limit", "session_state", "max_model_media_bytes",
	"output_schema", "store_events", "retries", "delay_between_retries", "exponential_backoff"}

// teamModeNames lists the modes for messages and oneOf.
func teamModeNames() []string {
	modes := team.Modes()
	names := make([]string, len(modes))
	for i, mode := range modes {
		names[i] = string(mode)
	}
	return names
}

// decodeTeams reads the teams list.
func (d *decoder) decodeTeams(node *yaml.Node) []*Team {
	return decodeList(d, node, "teams", "a team needs at least an id and members", d.decodeTeam)
}

// decodeTeam reads one team. Its id is read first, so that every other
// problem can name the team.
func (d *decoder) decodeTeam(node *yaml.Node, index int) *Team {
	t := &Team{
		Mode:                     team.ModeCoordinate,
		DetermineInputForMembers: true,
		StreamMemberEvents:       true,
		MaxIterations:            team.DefaultMaxIterations,
		MaxParallelMembers:       team.DefaultMaxParallelMembers,
		NumHistoryRuns:           defaultNumHistoryRuns,
		DelayBetweenRetries:      defaultDelayBetweenRetries,
		Line:                     deref(node).Line,
	}
	what := fmt.Sprintf("teams[%d]", index)
	fields := d.fields(node, what)
	t.ID, what = d.entryID(node, fields, what, "team")
	var membersNode, outputSchema, workspaceNode, respondNode, allNode, iterationsNode, parallelNode *yaml.Node
	for _, f := range fields {
		keyWhat := label(f.name(), what)
		switch f.name() {
		case "id":
		case "name":
			t.Name = d.str(f.value, keyWhat)
		case "description":
			t.Description = d.str(f.value, keyWhat)
		case "role":
			t.Role = d.str(f.value, keyWhat)
		case "model":
			t.Model = d.str(f.value, keyWhat)
			t.modelLine = f.value.Line
		case "instructions":
			t.Instructions = d.str(f.value, keyWhat)
		case "members":
			membersNode = f.value
			t.Members, t.memberLines = d.teamMembers(f.value, keyWhat, what)
		case "mode":
			if mode := d.oneOf(f.value, keyWhat, true, teamModeNames()...); mode != "" {
				t.Mode = team.Mode(mode)
			}
		case "respond_directly":
			respondNode = f.value
			t.RespondDirectly = d.boolean(f.value, keyWhat)
		case "delegate_to_all_members":
			allNode = f.value
			t.DelegateToAllMembers = d.boolean(f.value, keyWhat)
		case "determine_input_for_members":
			t.DetermineInputForMembers = d.boolean(f.value, keyWhat)
		case "max_iterations":
			iterationsNode = f.value
			t.MaxIterations = d.integer(f.value, keyWhat, 1)
		case "stream_member_events":
			t.StreamMemberEvents = d.boolean(f.value, keyWhat)
		case "store_member_responses":
			t.StoreMemberResponses = d.boolean(f.value, keyWhat)
		case "max_parallel_members":
			parallelNode = f.value
			t.MaxParallelMembers = d.integer(f.value, keyWhat, 1)
		case "add_history_to_context":
			t.AddHistoryToContext = d.boolean(f.value, keyWhat)
		case "num_history_runs":
			t.NumHistoryRuns = d.integer(f.value, keyWhat, 1)
		case "tools":
			t.Tools, t.ToolkitSettings, t.ToolOptions = d.nativeTools(f.value, keyWhat, what)
		case "workspace":
			workspaceNode = f.value
			t.Workspace = d.decodeWorkspace(f.value, what)
		case "tool_call_limit":
			t.ToolCallLimit = d.integer(f.value, keyWhat, 0)
		case "session_state":
			t.SessionState = d.jsonObject(f.value, keyWhat, "a mapping, such as {cart: [], currency: EUR}")
		case "max_model_media_bytes":
			t.MaxModelMediaBytes = d.byteSize(f.value, keyWhat)
			if t.MaxModelMediaBytes == 0 {
				t.MaxModelMediaBytes = -1 // 0 is no bound here, as for an agent
			}
		case "output_schema":
			outputSchema = f.value
		case "store_events":
			t.StoreEvents = d.boolean(f.value, keyWhat)
		case "retries":
			t.Retries = d.integer(f.value, keyWhat, 0)
		case "delay_between_retries":
			// 0 would mean the default to team.Config, not "no delay".
			seconds := d.number(f.value, keyWhat, 0.001, 24*60*60)
			t.DelayBetweenRetries = time.Duration(seconds * float64(time.Second))
		case "exponential_backoff":
			t.ExponentialBackoff = d.boolean(f.value, keyWhat)
		default:
			d.unknownTeamKey(f, what)
		}
	}
	if t.Name == "" {
		t.Name = t.ID
	}
	if membersNode == nil && deref(node).Kind == yaml.MappingNode {
		d.errorf(node, "%s has no members; add members: followed by a list of agent or team ids, such as [writer, checker]", what)
	}
	if outputSchema != nil {
		t.OutputSchema = d.decodeOutputSchema(outputSchema, label("output_schema", what))
	}
	d.checkTeamMode(t, what, respondNode, allNode)
	if iterationsNode != nil && t.Mode != team.ModeTasks {
		d.errorf(iterationsNode, "max_iterations %s bounds the iterations of mode tasks only; this team's mode is %s: remove it", where(what), t.Mode)
	}
	if parallelNode != nil && !t.DelegateToAllMembers {
		d.errorf(parallelNode, "max_parallel_members %s bounds a broadcast (mode: broadcast, or delegate_to_all_members: true); remove it", where(what))
	}
	if slices.Contains(t.Tools, ToolWorkspace) && t.Workspace == nil {
		t.Workspace = &Workspace{Root: ".", ConfirmWrites: true}
	}
	if workspaceNode != nil && !slices.Contains(t.Tools, ToolWorkspace) {
		d.errorf(workspaceNode, "workspace %s is set but tools does not list workspace; add tools: [workspace]", where(what))
	}
	d.checkTeamTools(t, what)
	return t
}

// unknownTeamKey reports a key a team does not have, saying so when it is
// an agent's key.
func (d *decoder) unknownTeamKey(f field, what string) {
	if why, unsupported := nativeUnsupportedKeys[f.name()]; unsupported {
		d.errorf(f.key, "key %q %s is not supported for agnogo teams: %s", f.name(), where(what), why)
		return
	}
	if f.name() == "type" || slices.Contains(agentKeys, f.name()) || len(typesOfKey(f.name())) > 0 {
		d.errorf(f.key, "key %q %s is a key of agents, not of teams; a team's keys are: %s", f.name(), where(what), strings.Join(teamKeys, ", "))
		return
	}
	d.unknownKey(f, what, teamKeys)
}

// teamMembers reads a team's members: a list of ids, each with its line.
func (d *decoder) teamMembers(node *yaml.Node, what, teamWhat string) ([]string, []int) {
	node = deref(node)
	if isNull(node) || (node.Kind == yaml.SequenceNode && len(node.Content) == 0) {
		d.errorf(node, "%s: a team needs at least one member; list agent or team ids, such as [writer, checker]", what)
		return nil, nil
	}
	if node.Kind != yaml.SequenceNode {
		d.errorf(node, "%s: want a list of agent or team ids, such as [writer, checker], got %s", what, kindName(node))
		return nil, nil
	}
	members := make([]string, 0, len(node.Content))
	lines := make([]int, 0, len(node.Content))
	first := map[string]int{}
	for _, item := range node.Content {
		id := d.str(item, what)
		if id == "" {
			d.errorf(item, "%s: an item is empty", what)
			continue
		}
		if line, dup := first[id]; dup {
			d.errorf(item, "member %q is listed twice %s (first at line %d)", id, where(teamWhat), line)
			continue
		}
		first[id] = deref(item).Line
		members = append(members, id)
		lines = append(lines, deref(item).Line)
	}
	return members, lines
}

// checkTeamMode applies what the mode implies — route answers with one
// member's answer (respond_directly), broadcast sends every task to all
// members (delegate_to_all_members) — and reports settings that contradict
// it or each other.
func (d *decoder) checkTeamMode(t *Team, what string, respondNode, allNode *yaml.Node) {
	switch t.Mode {
	case team.ModeRoute:
		if respondNode != nil && !t.RespondDirectly {
			d.errorf(respondNode, "respond_directly: false %s contradicts mode: route, which answers with the chosen member's answer as it is; remove it", where(what))
		}
		t.RespondDirectly = true
	case team.ModeBroadcast:
		if allNode != nil && !t.DelegateToAllMembers {
			d.errorf(allNode, "delegate_to_all_members: false %s contradicts mode: broadcast, which sends each task to every member; remove it", where(what))
		}
		t.DelegateToAllMembers = true
	}
	if t.RespondDirectly && t.DelegateToAllMembers {
		d.errorf(cmp.Or(allNode, respondNode), "respond_directly and delegate_to_all_members exclude each other %s (mode route implies the first, broadcast the second): "+
			"one member's answer cannot be the answer to a task sent to all", where(what))
	}
}

// checkTeamTools checks the leader's tool entries as an agnogo agent's, and
// that none takes a delegation tool's name.
func (d *decoder) checkTeamTools(t *Team, what string) {
	var others []*ToolOptions
	for _, options := range t.ToolOptions {
		if options.Name == team.DelegateToolName || options.Name == team.BroadcastToolName {
			d.errorAt(options.Line, "tool %q %s: the name is taken by the team's delegation tool; name it otherwise", options.Name, where(what))
			continue
		}
		others = append(others, options)
	}
	d.checkToolOptions(&Agent{Tools: t.Tools, ToolOptions: others}, what)
}

// resolveTeams checks the teams against each other and the agents: ids
// unique among agents and teams, members that exist, no team containing
// itself (directly or through other teams). It points each team at its
// model. agentLines are the agents' ids with their lines.
func (d *decoder) resolveTeams(file *File, agentLines map[string]int, shorthands map[string]*Model) {
	teamLines := map[string]int{}
	for _, t := range file.Teams {
		if t.ID != "" {
			if line, dup := agentLines[t.ID]; dup {
				d.errorAt(t.Line, "duplicate id %q: team %q has the id of the agent at line %d; agent and team ids must be unique", t.ID, t.ID, line)
			} else if line, dup := teamLines[t.ID]; dup {
				d.errorAt(t.Line, "duplicate team id %q (first defined at line %d); agent and team ids must be unique", t.ID, line)
			} else {
				teamLines[t.ID] = t.Line
			}
		}
		t.ResolvedModel = d.resolveTeamModel(file, t, shorthands)
	}
	known := func() string {
		agents := make([]string, 0, len(file.Agents))
		for _, a := range file.Agents {
			agents = append(agents, a.ID)
		}
		teams := make([]string, 0, len(file.Teams))
		for _, t := range file.Teams {
			teams = append(teams, t.ID)
		}
		return fmt.Sprintf("agents: %s; teams: %s", orNoneText(agents), orNoneText(teams))
	}
	for _, t := range file.Teams {
		for i, member := range t.Members {
			_, isAgent := agentLines[member]
			_, isTeam := teamLines[member]
			switch {
			case member == t.ID:
				d.errorAt(t.memberLines[i], "team %q lists itself as a member; a team cannot be its own member", t.ID)
			case !isAgent && !isTeam:
				d.errorAt(t.memberLines[i], "unknown member %q in team %q: no agent or team of this file has that id (%s)", member, t.ID, known())
			}
		}
	}
	d.checkTeamCycles(file.Teams)
}

// orNoneText joins ids for a message, "none" when there are none.
func orNoneText(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// resolveTeamModel finds the model a team's leader names, as
// [decoder.resolveModel] does an agent's.
func (d *decoder) resolveTeamModel(file *File, t *Team, shorthands map[string]*Model) *Model {
	return d.resolveNamed(file, fmt.Sprintf("team %q", t.ID), t.Model, t.modelLine, t.Line, shorthands)
}

// checkTeamCycles reports each cycle of teams that are members of each
// other (a → b → a) once, at the member entry that closes it.
func (d *decoder) checkTeamCycles(teams []*Team) {
	byID := map[string]*Team{}
	for _, t := range teams {
		if _, dup := byID[t.ID]; !dup && t.ID != "" {
			byID[t.ID] = t
		}
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(t *Team)
	visit = func(t *Team) {
		state[t.ID] = visiting
		path = append(path, t.ID)
		for i, member := range t.Members {
			next, isTeam := byID[member]
			if !isTeam || member == t.ID {
				continue // an agent, or itself (reported as such)
			}
			switch state[member] {
			case unvisited:
				visit(next)
			case visiting:
				start := slices.Index(path, member)
				cycle := append(slices.Clone(path[start:]), member)
				quoted := make([]string, len(cycle))
				for j, id := range cycle {
					quoted[j] = strconv.Quote(id)
				}
				d.errorAt(t.memberLines[i], "member %q of team %q makes a cycle of teams, %s: a team cannot contain itself, directly or through other teams",
					member, t.ID, strings.Join(quoted, " → "))
			}
		}
		path = path[:len(path)-1]
		state[t.ID] = done
	}
	for _, t := range teams {
		if byID[t.ID] == t && state[t.ID] == unvisited {
			visit(t)
		}
	}
}

// teamOrder returns the teams in the order they can be built: each team
// after the teams among its members, in file order otherwise.
func teamOrder(teams []*Team) []*Team {
	byID := map[string]*Team{}
	for _, t := range teams {
		byID[t.ID] = t
	}
	ordered := make([]*Team, 0, len(teams))
	seen := map[*Team]bool{}
	var visit func(t *Team)
	visit = func(t *Team) {
		if seen[t] {
			return
		}
		seen[t] = true // before the members: a cycle (reported by Parse) ends here
		for _, member := range t.Members {
			if next, ok := byID[member]; ok {
				visit(next)
			}
		}
		ordered = append(ordered, t)
	}
	for _, t := range teams {
		visit(t)
	}
	return ordered
}
