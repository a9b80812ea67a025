package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	agnorun "github.com/agnogo/agnogo/run"
)

// teamAgents are two agents on the fake model and a coordinate team of
// both (YAML for setupRun, which ends the file with them). root is the
// writer's workspace.
func teamAgents(root string) string {
	return fmt.Sprintf(`  - id: writer
    model: fake
    instructions: Write.
    tools: [workspace]
    workspace: {root: %q}
  - {id: checker, model: fake, instructions: Check.}
teams:
  - id: research
    model: fake
    mode: coordinate
    members: [writer, checker]
    instructions: Delegate, then summarise.
    stream_member_events: true
`, root)
}

// delegate is the leader's call of delegate_task_to_member.
func delegate(member, task string) fakeopenai.Reply {
	return fakeopenai.ToolCalls(fakeopenai.Call("delegate_task_to_member", map[string]any{"member_id": member, "task": task}))
}

// statusIDs reads the session and run ids of a status line.
var statusIDs = regexp.MustCompile(`^COMPLETED  session ([0-9a-f-]{36})  run ([0-9a-f-]{36})`)

func TestRunTeam(t *testing.T) {
	t.Parallel()
	b := setupRun(t, teamAgents(t.TempDir()))
	b.fake.Enqueue(
		delegate("writer", "Draft a haiku."),
		fakeopenai.Text("An old pond."),
		fakeopenai.Text("The writer wrote: An old pond."),
	)
	got := b.agnogo(t, "research", "A haiku, please.")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, "The writer wrote: An old pond.\n", got.stdout, "the team's answer, not the member's")
	ids := statusIDs.FindStringSubmatch(got.stderr)
	require.NotNil(t, ids, got.stderr)
	sessionID, teamRunID := ids[1], ids[2]
	require.Contains(t, chatMessages(b.fake.Requests()[1]), [2]string{"user", "Draft a haiku."}, "the member runs on the leader's task")

	// The member's run is stored in the team's session, under the team's run.
	shown := agnogo(t, "sessions", "show", sessionID, "--config", b.config, "--json")
	require.Equal(t, exitOK, shown.code, shown.stderr)
	var session struct {
		SessionType string `json:"session_type"`
		TeamID      string `json:"team_id"`
		Runs        []struct {
			RunID       string `json:"run_id"`
			AgentID     string `json:"agent_id"`
			ParentRunID string `json:"parent_run_id"`
			Status      string `json:"status"`
			Content     any    `json:"content"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(shown.stdout), &session), shown.stdout)
	require.Equal(t, "team", session.SessionType)
	require.Equal(t, "research", session.TeamID)
	var memberFound bool
	for _, r := range session.Runs {
		if r.RunID == teamRunID {
			require.Empty(t, r.ParentRunID)
			continue
		}
		memberFound = true
		require.Equal(t, "writer", r.AgentID)
		require.Equal(t, teamRunID, r.ParentRunID, "the member run's parent is the team's run")
		require.Equal(t, "COMPLETED", r.Status)
		require.Equal(t, "An old pond.", r.Content)
	}
	require.True(t, memberFound, "the member run is stored: %s", shown.stdout)

	// --json prints the team's run.
	b.fake.Enqueue(delegate("checker", "Check it."), fakeopenai.Text("Correct."), fakeopenai.Text("Checked: correct."))
	got = b.agnogo(t, "research", "Is it right?", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	output := decodeOutput(t, got.stdout)
	require.Equal(t, "research", output["team_id"])
	require.Nil(t, output["agent_id"])
	require.Equal(t, "Checked: correct.", output["content"])
}

func TestRunTeamStream(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello from a\n"), 0o600))
	b := setupRun(t, teamAgents(root))
	b.fake.Enqueue(
		delegate("writer", "Read a.txt"),
		fakeopenai.ToolCalls(fakeopenai.Call("read_file", map[string]any{"path": "a.txt"})),
		fakeopenai.Text("It says hello."),
		fakeopenai.Text("Done: it says hello."),
	)
	got := b.agnogo(t, "research", "What is in a.txt?", "--stream")
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, `→ tool delegate_task_to_member {"member_id":"writer","task":"Read a.txt"}
  [writer] → tool read_file {"path":"a.txt"}
  [writer] ← read_file: 1	hello from a
← delegate_task_to_member: It says hello.
Done: it says hello.
`, strings.ReplaceAll(got.stdout, "     ", ""), "the member's tool calls indented, its answer only as the delegation's result")
	require.Contains(t, got.stderr, "COMPLETED  session ")

	// With --json, one line per event: the members' keep their identity and
	// the team's own run ends the stream.
	b.fake.Enqueue(delegate("checker", "Check it."), fakeopenai.Text("Fine."), fakeopenai.Text("All fine."))
	got = b.agnogo(t, "research", "Check", "--stream", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	var names []string
	var teamRunID string
	memberEnds := 0
	scanner := bufio.NewScanner(strings.NewReader(got.stdout))
	for scanner.Scan() {
		var event struct {
			Event       string `json:"event"`
			AgentID     string `json:"agent_id"`
			TeamID      string `json:"team_id"`
			RunID       string `json:"run_id"`
			ParentRunID string `json:"parent_run_id"`
		}
		require.NoError(t, json.Unmarshal(scanner.Bytes(), &event), scanner.Text())
		names = append(names, event.Event)
		switch event.Event {
		case agnorun.TeamEventName(agnorun.EventRunStarted):
			require.Equal(t, "research", event.TeamID)
			teamRunID = event.RunID
		case agnorun.EventRunCompleted:
			memberEnds++
			require.Equal(t, "checker", event.AgentID)
			require.Equal(t, teamRunID, event.ParentRunID)
		}
	}
	require.Equal(t, agnorun.TeamEventName(agnorun.EventRunStarted), names[0])
	require.Equal(t, agnorun.TeamEventName(agnorun.EventRunCompleted), names[len(names)-1])
	require.Equal(t, 1, memberEnds, "the member's own end is in the stream, and does not end it")
}

func TestRunTeamUnknown(t *testing.T) {
	t.Parallel()
	b := setupRun(t, teamAgents(t.TempDir()))
	got := b.agnogo(t, "nobody", "hi")
	require.Equal(t, exitUsage, got.code)
	require.Equal(t, "agnogo: unknown agent or team \"nobody\"; known agents: writer, checker; teams: research\nRun 'agnogo run --help' for usage.\n", got.stderr)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("agents:\n  - id: a\n    model: openai:gpt-5\nteams:\n  - id: t\n    members: [a, b]\n"), 0o600))
	got = agnogo(t, "run", "--config", bad, "t", "hi")
	require.Equal(t, exitUsage, got.code)
	require.Contains(t, got.stderr, "agnogo: "+bad+`:6: unknown member "b" in team "t"`)
	require.Empty(t, b.fake.Requests())

	help := agnogo(t, "run", "--help")
	require.Equal(t, exitOK, help.code)
	require.Contains(t, help.stdout, "run AGENT|TEAM MESSAGE")
	require.Contains(t, help.stdout, "the id of a team")
}
