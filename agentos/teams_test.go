package agentos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/internal/barriermodel"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/team"
	"github.com/agnogo/agnogo/tool"
)

// member is an agent of a test team, with its own model, keeping its runs
// in store beside the team's.
func member(t *testing.T, store storage.Store, id string, m model.Model) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{ID: id, Name: strings.ToUpper(id[:1]) + id[1:], Model: m, Store: store})
	require.NoError(t, err)
	return a
}

// newTeam builds the team "crew" led by a scripted model.
func newTeam(t *testing.T, store storage.Store, mode team.Mode, leader []scripted.Reply, members ...run.Runner) (*team.Team, *scripted.Model) {
	t.Helper()
	m := scripted.New(leader)
	crew, err := team.New(team.Config{ID: "crew", Name: "Crew", Description: "Writes and edits.", Role: "publishing",
		Model: m, Members: members, Mode: mode, Store: store})
	require.NoError(t, err)
	return crew, m
}

// serveRunners serves runners over HTTP with store.
func serveRunners(t *testing.T, store storage.Store, runners ...run.Runner) *server {
	t.Helper()
	os, err := agentos.New(agentos.Config{Store: store, Runners: runners})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	return &server{Server: ts, store: store, os: os}
}

// delegate is the leader's call of delegate_task_to_member.
func delegate(memberID, task string) scripted.Reply {
	args, _ := json.Marshal(map[string]string{"member_id": memberID, "task": task})
	return scripted.ToolCall(team.DelegateToolName, string(args))
}

// broadcast is the leader's call of delegate_task_to_members.
func broadcast(task string) scripted.Reply {
	args, _ := json.Marshal(map[string]string{"task": task})
	return scripted.ToolCall(team.BroadcastToolName, string(args))
}

// toolResults are the results of a stored run's tool calls, in order.
func toolResults(t *testing.T, out map[string]any) []string {
	t.Helper()
	var results []string
	for _, raw := range out["tools"].([]any) {
		tool := raw.(map[string]any)
		result, _ := tool["result"].(string)
		results = append(results, result)
	}
	return results
}

// storedRuns reads a session's runs by id.
func storedRuns(t *testing.T, store storage.Store, sessionID string) map[string]*run.Output {
	t.Helper()
	recs, _, err := store.GetRuns(t.Context(), storage.RunQuery{SessionID: sessionID})
	require.NoError(t, err)
	runs := map[string]*run.Output{}
	for _, rec := range recs {
		require.Equal(t, sessionID, rec.SessionID)
		runs[rec.Run.RunID] = rec.Run
	}
	return runs
}

// TestTeamCoordinateOverHTTP: a coordinate team delegates to two agents;
// its SSE stream runs TeamRunStarted … TeamRunCompleted with each
// member's RunStarted … RunCompleted inside, every frame numbered; the
// leader reads both members' answers; member runs are rows of their own in
// the team's session, under the team's run; the team's run and session
// are read back through /teams and /sessions?type=team.
func TestTeamCoordinateOverHTTP(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		writer := member(t, store, "writer", scripted.New([]scripted.Reply{scripted.Text("the writer's draft")}))
		editor := member(t, store, "editor", scripted.New([]scripted.Reply{scripted.Text("the editor's cut")}))
		crew, leader := newTeam(t, store, team.ModeCoordinate, []scripted.Reply{
			delegate("writer", "Write a draft."), delegate("editor", "Edit it."), scripted.Text("Both answered."),
		}, writer, editor)
		s := serveRunners(t, store, crew)

		resp := s.postForm(t, "/teams/crew/runs", url.Values{"message": {"publish a story"}, "session_id": {"s1"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		frames := readFrames(t, resp.Body)
		names := frameNames(frames)
		require.Equal(t, "TeamRunStarted", names[0], names)
		require.Equal(t, "TeamRunCompleted", names[len(names)-1], names)
		require.Equal(t, "Both answered.", frames[len(frames)-1].data["content"])
		teamRun := frames[0].data["run_id"].(string)
		require.Equal(t, "crew", frames[0].data["team_id"])
		require.NotContains(t, frames[0].data, "agent_id")

		memberRuns := map[string]string{} // agent id → run id
		var memberEnds []string
		for i, f := range frames {
			require.Equal(t, float64(i), f.data["event_index"], "frame %d (%s) carries its event_index", i, f.event)
			agentID, _ := f.data["agent_id"].(string)
			if agentID == "" {
				require.True(t, strings.HasPrefix(f.event, "Team"), "the team's own event %s goes by its Team* name", f.event)
				require.Equal(t, teamRun, f.data["run_id"])
				continue
			}
			require.False(t, strings.HasPrefix(f.event, "Team"), "a member's event %s keeps its name", f.event)
			require.Equal(t, teamRun, f.data["parent_run_id"], "%s of %s names the team's run", f.event, agentID)
			require.NotEqual(t, teamRun, f.data["run_id"])
			switch f.event {
			case "RunStarted":
				memberRuns[agentID] = f.data["run_id"].(string)
			case "RunCompleted":
				require.Equal(t, memberRuns[agentID], f.data["run_id"])
				memberEnds = append(memberEnds, agentID)
			}
		}
		require.Equal(t, []string{"writer", "editor"}, memberEnds, "each member's run, in the order delegated, inside the team's stream")

		// The leader got each member's answer as its delegation's result.
		out := decode[map[string]any](t, s.get(t, "/teams/crew/runs/"+teamRun+"?session_id=s1"))
		require.Equal(t, "COMPLETED", out["status"])
		require.Equal(t, "crew", out["team_id"])
		require.NotContains(t, out, "agent_id")
		require.Equal(t, "Both answered.", out["content"])
		require.Equal(t, []string{"the writer's draft", "the editor's cut"}, toolResults(t, out))
		requests := leader.Requests()
		require.Len(t, requests, 3)
		last := requests[2].Messages
		require.Equal(t, "the editor's cut", last[len(last)-1].ContentString())
		require.Equal(t, "the writer's draft", last[len(last)-3].ContentString())

		// Member runs are rows of their own, in the team's session, under
		// the team's run.
		runs := storedRuns(t, store, "s1")
		require.Len(t, runs, 3)
		require.Equal(t, "crew", runs[teamRun].TeamID)
		for agentID, runID := range memberRuns {
			row := runs[runID]
			require.NotNil(t, row, agentID)
			require.Equal(t, agentID, row.AgentID)
			require.Equal(t, teamRun, row.ParentRunID)
			require.Equal(t, run.StatusCompleted, row.Status)
		}

		// The team's listing holds its own run only; an agent's routes do
		// not reach a team.
		listed := decode[[]map[string]any](t, s.get(t, "/teams/crew/runs?session_id=s1"))
		require.Len(t, listed, 1)
		require.Equal(t, teamRun, listed[0]["run_id"])
		require.Equal(t, http.StatusNotFound, s.get(t, "/agents/crew/runs/"+teamRun+"?session_id=s1").StatusCode)
		require.Equal(t, http.StatusNotFound, s.get(t, "/teams/crew/runs/"+memberRuns["writer"]+"?session_id=s1").StatusCode,
			"a member's run is not the team's")
		checkpoints := decode[map[string]any](t, s.get(t, "/teams/crew/runs/"+teamRun+"/checkpoints?session_id=s1"))
		require.NotEmpty(t, checkpoints["checkpoints"])

		sessions := decode[map[string]any](t, s.get(t, "/sessions?type=team"))["data"].([]any)
		require.Len(t, sessions, 1)
		session := sessions[0].(map[string]any)
		require.Equal(t, "s1", session["session_id"])
		require.Equal(t, "team", session["session_type"])
		require.Equal(t, "crew", session["team_id"])
		require.Empty(t, decode[map[string]any](t, s.get(t, "/sessions?type=agent"))["data"])

		// A stream resumed after a member's final event goes on to the
		// team's.
		var memberDone int
		for i, f := range frames {
			if f.event == "RunCompleted" {
				memberDone = i
				break
			}
		}
		resumed := readFrames(t, s.postForm(t, "/teams/crew/runs/"+teamRun+"/resume",
			url.Values{"last_event_index": {strconv.Itoa(memberDone)}, "session_id": {"s1"}}).Body)
		require.Equal(t, "replay", resumed[0].event)
		require.Equal(t, frameNames(frames[memberDone+1:]), frameNames(resumed[1:]))

		// The session forks under the team, not under an agent.
		require.Equal(t, http.StatusNotFound, s.postForm(t, "/agents/crew/sessions/s1/fork", nil).StatusCode)
		forked := decode[map[string]any](t, s.postForm(t, "/teams/crew/sessions/s1/fork", nil))
		require.Equal(t, "s1", forked["forked_from_session_id"])
		require.Len(t, storedRuns(t, store, forked["session_id"].(string)), 3, "the team's run and its members' runs")
	})
}

// pollTeamRun waits for a run of the team crew to end and returns it.
func pollTeamRun(t *testing.T, s *server, runID, sessionID string) map[string]any {
	t.Helper()
	var out map[string]any
	poll(t, runTimeout, 20*time.Millisecond, func() bool {
		out = decode[map[string]any](t, s.get(t, "/teams/crew/runs/"+runID+"?session_id="+sessionID))
		status, _ := run.ParseStatus(out["status"].(string))
		return status.Terminal()
	}, "run %s still not over", runID)
	return out
}

// TestTeamRouteModeAnswersWithTheMembersAnswer: a route team's answer is
// the chosen member's, unchanged.
func TestTeamRouteModeAnswersWithTheMembersAnswer(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		writer := member(t, store, "writer", scripted.New([]scripted.Reply{scripted.Text("Routed: the writer's own words.")}))
		editor := member(t, store, "editor", scripted.New(nil))
		crew, leader := newTeam(t, store, team.ModeRoute, []scripted.Reply{delegate("writer", "Answer the user.")}, writer, editor)
		s := serveRunners(t, store, crew)

		resp := s.postForm(t, "/teams/crew/runs", url.Values{"message": {"hello"}, "stream": {"false"}, "session_id": {"s1"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		out := decode[map[string]any](t, resp)
		require.Equal(t, "COMPLETED", out["status"])
		require.Equal(t, "Routed: the writer's own words.", out["content"])
		require.Equal(t, "crew", out["team_id"])
		require.Equal(t, "hello", out["run_input"])
		require.Len(t, leader.Requests(), 1, "the leader does not rewrite the member's answer")
	})
}

// TestTeamBroadcastRunsMembersConcurrently: a broadcast team sends the
// task to every member at once; its members' models each wait until all
// have started, so the run completes only when they run concurrently.
func TestTeamBroadcastRunsMembersConcurrently(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		b := barriermodel.New(3)
		members := []run.Runner{
			member(t, store, "writer", b.Model("writer: a draft")),
			member(t, store, "editor", b.Model("editor: a cut")),
			member(t, store, "checker", b.Model("checker: facts hold")),
		}
		crew, leader := newTeam(t, store, team.ModeBroadcast, []scripted.Reply{broadcast("Review the story."), scripted.Text("All reviewed.")}, members...)
		s := serveRunners(t, store, crew)

		out := decode[map[string]any](t, s.postForm(t, "/teams/crew/runs", url.Values{"message": {"review"}, "stream": {"false"}, "session_id": {"s1"}}))
		require.Equal(t, "COMPLETED", out["status"], out["content"])
		require.Equal(t, "All reviewed.", out["content"])
		results := toolResults(t, out)
		require.Len(t, results, 1)
		for _, answer := range []string{"writer: a draft", "editor: a cut", "checker: facts hold"} {
			require.Contains(t, results[0], answer)
		}
		require.Len(t, leader.Requests(), 2)
		require.Len(t, storedRuns(t, store, "s1"), 4, "the team's run and one run per member")
	})
}

// TestTeamCancelStopsItsMembers: cancelling a team's run while its
// members are in flight ends the team's run and every member run
// CANCELLED.
func TestTeamCancelStopsItsMembers(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		stuck := barriermodel.New(3) // two members: they wait until cancelled
		writer := member(t, store, "writer", stuck.Model("never"))
		editor := member(t, store, "editor", stuck.Model("never"))
		crew, _ := newTeam(t, store, team.ModeBroadcast, []scripted.Reply{broadcast("Work on it."), scripted.Text("never")}, writer, editor)
		s := serveRunners(t, store, crew)

		resp := s.postForm(t, "/teams/crew/runs", url.Values{"message": {"go"}, "session_id": {"s1"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		frames := liveFrames(t, resp.Body)
		first := framesUntil(t, frames, "TeamRunStarted", 10*time.Second)
		teamRun := first[len(first)-1].data["run_id"].(string)
		for range 2 {
			select {
			case <-stuck.Arrivals():
			case <-time.After(10 * time.Second):
				t.Fatal("the members did not start")
			}
		}

		require.Equal(t, http.StatusOK, s.postForm(t, "/teams/crew/runs/"+teamRun+"/cancel", url.Values{"session_id": {"s1"}}).StatusCode)
		rest := framesUntil(t, frames, "", 10*time.Second)
		require.Equal(t, "TeamRunCancelled", rest[len(rest)-1].event, frameNames(rest))

		seen := map[string]run.Status{}
		poll(t, 10*time.Second, 10*time.Millisecond, func() bool {
			clear(seen)
			for id, r := range storedRuns(t, store, "s1") {
				seen[id] = r.Status
			}
			if len(seen) != 3 {
				return false
			}
			for _, status := range seen {
				if status != run.StatusCancelled {
					return false
				}
			}
			return true
		}, "the team's run and its members' runs were not all CANCELLED: %v", seen)
		out := decode[map[string]any](t, s.get(t, "/teams/crew/runs/"+teamRun+"?session_id=s1"))
		require.Equal(t, "CANCELLED", out["status"])
	})
}

// TestTeamBackgroundRun: a team's background run is accepted with 202 and
// completes; GET returns it. In this process, and on the durable queue,
// whose followed stream ends at the team's final event, not at a
// member's.
func TestTeamBackgroundRun(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		writer := member(t, store, "writer", scripted.New([]scripted.Reply{scripted.Text("a background draft"), scripted.Text("a followed draft")}))
		crew, _ := newTeam(t, store, team.ModeCoordinate, []scripted.Reply{
			delegate("writer", "Draft it."), scripted.Text("Drafted in the background."),
			delegate("writer", "Again."), scripted.Text("Followed to the end."),
		}, writer)
		s := serveRunners(t, store, crew)

		resp := s.postForm(t, "/teams/crew/runs", url.Values{"message": {"draft"}, "stream": {"false"}, "background": {"true"}, "session_id": {"s1"}})
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		accepted := decode[map[string]any](t, resp)
		require.Equal(t, "PENDING", accepted["status"])
		out := pollTeamRun(t, s, accepted["run_id"].(string), "s1")
		require.Equal(t, "COMPLETED", out["status"])
		require.Equal(t, "Drafted in the background.", out["content"])
		require.Equal(t, "crew", out["team_id"])
		require.Equal(t, []string{"a background draft"}, toolResults(t, out))

		// Followed (stream=true): past the member's end, to the team's.
		resp = s.postForm(t, "/teams/crew/runs", url.Values{"message": {"again"}, "background": {"true"}, "session_id": {"s1"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		frames := readFrames(t, resp.Body)
		names := frameNames(frames)
		require.Equal(t, "TeamRunStarted", names[0], names)
		require.Contains(t, names, "RunCompleted")
		require.Equal(t, "TeamRunCompleted", names[len(names)-1], names)
		require.Equal(t, "Followed to the end.", frames[len(frames)-1].data["content"])
	})
}

// TestTeamDurableBackgroundRun: the same on the durable queue, streamed.
func TestTeamDurableBackgroundRun(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "os.db")
		store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
		require.NoError(t, err)
		t.Cleanup(func() { store.Close() })
		testTeamDurableBackgroundRun(t, store, "sqlite:file:"+path, "")
	})
	t.Run("postgres", func(t *testing.T) {
		dbURL, schema := testdb.PostgresURL(t), testdb.UniqueName(t, "teams")
		store, err := postgres.Open(t.Context(), postgres.Config{URL: dbURL, Schema: schema, AutoMigrate: true})
		require.NoError(t, err)
		t.Cleanup(func() { store.Close() })
		testTeamDurableBackgroundRun(t, store, dbURL, schema+"_dbos")
	})
}

func testTeamDurableBackgroundRun(t *testing.T, store storage.Store, dbURL, schema string) {
	writer := member(t, store, "writer", scripted.New([]scripted.Reply{scripted.Text("a queued draft"), scripted.Text("a second draft")}))
	crew, _ := newTeam(t, store, team.ModeCoordinate, []scripted.Reply{
		delegate("writer", "Draft it."), scripted.Text("Drafted on the queue."),
		delegate("writer", "Again."), scripted.Text("Drafted again."),
	}, writer)
	events := agentos.NewEventLog()
	q, err := durable.New(t.Context(), durable.Config{DatabaseURL: dbURL, Schema: schema, Store: store, Runners: []run.Runner{crew},
		Events: events, ExecutorID: "test", PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	require.NoError(t, q.Launch())
	t.Cleanup(func() { _ = q.Shutdown(time.Second) })
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{crew}, Queue: q, Events: events})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	s := &server{Server: ts, store: store, os: os}

	// Accepted with 202, then polled.
	resp := s.postForm(t, "/teams/crew/runs", url.Values{"message": {"draft"}, "stream": {"false"}, "background": {"true"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	runID := decode[map[string]any](t, resp)["run_id"].(string)
	out := pollTeamRun(t, s, runID, "s1")
	require.Equal(t, "COMPLETED", out["status"])
	require.Equal(t, "Drafted on the queue.", out["content"])
	require.Equal(t, "crew", out["team_id"])

	// Followed: the stream passes the member's end and stops at the team's.
	resp = s.postForm(t, "/teams/crew/runs", url.Values{"message": {"again"}, "background": {"true"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := framesUntil(t, liveFrames(t, resp.Body), "", 30*time.Second)
	names := frameNames(frames)
	require.Equal(t, "TeamRunStarted", names[0], names)
	require.Contains(t, names, "RunCompleted", "the member's end is in the stream")
	require.Equal(t, "TeamRunCompleted", names[len(names)-1], names)
	require.Equal(t, "Drafted again.", frames[len(frames)-1].data["content"])
	for i, f := range frames {
		require.Equal(t, float64(i), f.data["event_index"], f.event)
	}
	jobs := decode[map[string]any](t, s.get(t, "/queue/jobs"))
	require.Equal(t, "crew", jobs["data"].([]any)[0].(map[string]any)["agent_id"], "a job names its team")
}

// TestTeamListingAndLookup: GET /teams lists the teams, GET /teams/{id}
// renders one with its members (a member team recursively), /agents lists
// only agents, and each kind's routes 404 for the other's ids.
func TestTeamListingAndLookup(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	writer := member(t, store, "writer", scripted.New(nil))
	editor := member(t, store, "editor", scripted.New(nil))
	desk, err := team.New(team.Config{ID: "desk", Name: "Desk", Role: "edits", Model: scripted.New(nil), Members: []run.Runner{editor},
		Mode: team.ModeRoute, Store: store})
	require.NoError(t, err)
	crew, _ := newTeam(t, store, team.ModeCoordinate, nil, writer, desk)
	s := serveRunners(t, store, writer, crew)

	teams := decode[[]map[string]any](t, s.get(t, "/teams"))
	require.Len(t, teams, 1)
	require.Equal(t, "crew", teams[0]["id"])
	agents := decode[[]map[string]any](t, s.get(t, "/agents"))
	require.Len(t, agents, 1, "/agents lists agents only")
	require.Equal(t, "writer", agents[0]["id"])

	got := decode[map[string]any](t, s.get(t, "/teams/crew"))
	require.Equal(t, teams[0], got)
	require.Equal(t, "Crew", got["name"])
	require.Equal(t, "Writes and edits.", got["description"])
	require.Equal(t, "publishing", got["role"])
	require.Equal(t, "coordinate", got["mode"])
	require.Equal(t, "agnogo-db", got["db_id"])
	require.Equal(t, map[string]any{"name": "scripted", "model": "scripted", "provider": "Scripted"}, got["model"])
	require.Equal(t, team.DelegateToolName, got["tools"].(map[string]any)["tools"].([]any)[0].(map[string]any)["name"])
	members := got["members"].([]any)
	require.Len(t, members, 2)
	first := members[0].(map[string]any)
	require.Equal(t, "writer", first["id"])
	require.NotContains(t, first, "members", "an agent member renders as an agent")
	second := members[1].(map[string]any)
	require.Equal(t, "desk", second["id"])
	require.Equal(t, "route", second["mode"])
	require.Equal(t, "edits", second["role"])
	require.Equal(t, "editor", second["members"].([]any)[0].(map[string]any)["id"], "a member team renders its members")

	info := decode[map[string]any](t, s.get(t, "/info"))
	require.Equal(t, float64(1), info["agent_count"])
	require.Equal(t, float64(1), info["team_count"])
	config := decode[map[string]any](t, s.get(t, "/config"))
	require.Len(t, config["agents"], 1)
	require.Equal(t, "crew", config["teams"].([]any)[0].(map[string]any)["id"])

	for _, path := range []string{"/teams/nobody", "/teams/writer", "/agents/crew", "/teams/nobody/runs?session_id=s1",
		"/agents/crew/runs?session_id=s1", "/teams/writer/runs?session_id=s1"} {
		resp := s.get(t, path)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		detail := decode[map[string]any](t, resp)["detail"]
		if strings.HasPrefix(path, "/teams") {
			require.Equal(t, "Team not found", detail, path)
		} else {
			require.Equal(t, "Agent not found", detail, path)
		}
	}
	for _, path := range []string{"/teams/nobody/runs", "/agents/crew/runs", "/teams/writer/runs/r1/cancel", "/agents/crew/runs/r1/resume"} {
		require.Equal(t, http.StatusNotFound, s.postForm(t, path, url.Values{"message": {"hi"}}).StatusCode, path)
	}
}

// TestTeamScopes: team routes take the teams:* scopes, as agent routes
// take agents:*, and the one scope does not grant the other.
func TestTeamScopes(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	writer := member(t, store, "writer", scripted.New([]scripted.Reply{scripted.Text("scoped draft")}))
	crew, _ := newTeam(t, store, team.ModeRoute, []scripted.Reply{delegate("writer", "Draft.")}, writer)
	srv, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{writer, crew}, Auth: agentos.AuthConfig{JWT: rsaJWT(t)}})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	form := url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}}

	listed := func(token string) []string {
		resp := authCall(t, ts.URL, http.MethodGet, "/teams", token, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var ids []string
		for _, team := range decode[[]map[string]any](t, resp) {
			ids = append(ids, team["id"].(string))
		}
		return ids
	}
	require.Equal(t, []string{"crew"}, listed(rs256(t, "alice", "teams:read")))
	require.Equal(t, []string{"crew"}, listed(rs256(t, "alice", "teams:crew:read")))
	require.Empty(t, listed(rs256(t, "alice", "agents:read")), "agents:read does not show teams")

	agentsOnly := rs256(t, "alice", "agents:run", "agents:read")
	resp := authCall(t, ts.URL, http.MethodPost, "/teams/crew/runs", agentsOnly, form)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detail(t, resp), "teams:crew:run")
	require.Equal(t, http.StatusForbidden, authCall(t, ts.URL, http.MethodGet, "/teams/crew", agentsOnly, nil).StatusCode)

	resp = authCall(t, ts.URL, http.MethodPost, "/teams/crew/runs", rs256(t, "alice", "teams:crew:run"), form)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "scoped draft", decode[map[string]any](t, resp)["content"])
}

// newTeamReplica serves the team crew (members writer and editor, whose
// models and editor's gate tool are shared by the replicas) with its own
// durable queue on the SQLite database at path.
func newTeamReplica(t *testing.T, path, executor string, leader, writer, editor model.Model, gate tool.Tool) *server {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	w := member(t, store, "writer", writer)
	e, err := agent.New(agent.Config{ID: "editor", Name: "Editor", Model: editor, Store: store, Tools: []tool.Tool{gate}})
	require.NoError(t, err)
	crew, err := team.New(team.Config{ID: "crew", Name: "Crew", Model: leader, Members: []run.Runner{w, e}, Store: store})
	require.NoError(t, err)
	events := agentos.NewEventLog()
	q, err := durable.New(t.Context(), durable.Config{DatabaseURL: "sqlite:file:" + path, Store: store, Runners: []run.Runner{crew},
		Events: events, ExecutorID: executor, PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, q.Launch())
	t.Cleanup(func() { _ = q.Shutdown(time.Second) })
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{crew}, Queue: q, Events: events})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	return &server{Server: ts, store: store, os: os}
}

// TestTeamResumeOnAnotherReplica: a team run executing on replica A is
// resumed on replica B from the durable stream: B catches up past the
// first member's final event, follows the second member live, and stops
// at the team's own final event, with the indices A assigned.
func TestTeamResumeOnAnotherReplica(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	gate, err := tool.New(tool.Config{Name: "gate"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-release
		return "open", nil
	})
	require.NoError(t, err)
	leader := scripted.New([]scripted.Reply{delegate("writer", "Draft."), delegate("editor", "Edit."), scripted.Text("Published.")})
	writer := scripted.New([]scripted.Reply{scripted.Text("a draft")})
	editor := scripted.New([]scripted.Reply{scripted.ToolCall("gate", `{}`), scripted.Text("an edit")})
	path := filepath.Join(t.TempDir(), "shared.db")
	a := newTeamReplica(t, path, "replica-a", leader, writer, editor, gate)
	resp := a.postForm(t, "/teams/crew/runs", url.Values{"message": {"go"}, "stream": {"false"}, "background": {"true"}, "session_id": {"x"}})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	runID := decode[map[string]any](t, resp)["run_id"].(string)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the editor did not start on A")
	}
	b := newTeamReplica(t, path, "replica-b", leader, writer, editor, gate)

	live := liveFrames(t, b.postForm(t, "/teams/crew/runs/"+runID+"/resume", url.Values{"last_event_index": {"-1"}, "session_id": {"x"}}).Body)
	frames := framesUntil(t, live, "subscribed", 30*time.Second)
	caughtUp := frameNames(frames)
	require.Equal(t, "catch_up", caughtUp[0], caughtUp)
	require.Contains(t, caughtUp, "RunCompleted", "the writer's run ended before B followed")
	close(release)
	frames = append(frames, framesUntil(t, live, "", 30*time.Second)...)
	names := frameNames(frames)
	require.Equal(t, "TeamRunCompleted", names[len(names)-1], names)
	require.Equal(t, "Published.", frames[len(frames)-1].data["content"])

	onA := readFrames(t, a.postForm(t, "/teams/crew/runs/"+runID+"/resume", url.Values{"last_event_index": {"-1"}, "session_id": {"x"}}).Body)
	require.Equal(t, indices(t, onA), indices(t, frames), "the same events with the same indices on both replicas")
	var memberEnds int
	for _, f := range onA {
		if f.event == "RunCompleted" {
			require.Equal(t, runID, f.data["parent_run_id"])
			memberEnds++
		}
	}
	require.Equal(t, 2, memberEnds)
}

// TestTeamContinue: a finished team run is continued with a new message
// through /teams/{id}/runs/{run_id}/continue, its members delegated to
// again inside the continued run's stream.
func TestTeamContinue(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	writer := member(t, store, "writer", scripted.New([]scripted.Reply{scripted.Text("first draft"), scripted.Text("second draft")}))
	crew, _ := newTeam(t, store, team.ModeRoute, []scripted.Reply{delegate("writer", "Draft."), delegate("writer", "Redraft.")}, writer)
	s := serveRunners(t, store, crew)

	first := decode[map[string]any](t, s.postForm(t, "/teams/crew/runs", url.Values{"message": {"draft"}, "stream": {"false"}, "session_id": {"s1"}}))
	require.Equal(t, "first draft", first["content"])
	runID := first["run_id"].(string)
	require.Equal(t, http.StatusNotFound, s.postForm(t, "/agents/crew/runs/"+runID+"/continue", url.Values{"session_id": {"s1"}, "input": {"again"}}).StatusCode)

	resp := s.postForm(t, "/teams/crew/runs/"+runID+"/continue", url.Values{"session_id": {"s1"}, "input": {"again"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := readFrames(t, resp.Body)
	names := frameNames(frames)
	require.True(t, strings.HasPrefix(names[0], "Team"), names)
	require.Contains(t, names, "RunCompleted", "the member's run inside the continued run's stream")
	require.Equal(t, "TeamRunCompleted", names[len(names)-1], names)
	require.Equal(t, "second draft", frames[len(frames)-1].data["content"])
	continued := frames[len(frames)-1].data["run_id"].(string)
	for i, f := range frames {
		require.Equal(t, float64(i), f.data["event_index"], f.event)
	}
	out := decode[map[string]any](t, s.get(t, "/teams/crew/runs/"+continued+"?session_id=s1"))
	require.Equal(t, "COMPLETED", out["status"])
	require.Equal(t, "crew", out["team_id"])
}

// TestTeamMemberConfirmationOverHTTP: a member whose tool needs a
// confirmation pauses the team — TeamRunPaused carries the member's
// requirement with member_agent_id — and POST /teams/…/continue with the
// confirmation runs the member's tool, completes the member run and then the
// team's. A resolution naming no waiting call is refused with 400 first.
func TestTeamMemberConfirmationOverHTTP(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		removed := 0
		remove, err := tool.New(tool.Config{Name: "delete_file", RequiresConfirmation: true}, func(_ context.Context, args struct {
			Path string `json:"path"`
		}) (string, error) {
			removed++
			return "deleted " + args.Path, nil
		})
		require.NoError(t, err)
		janitor, err := agent.New(agent.Config{ID: "janitor", Name: "Janitor", Store: store, Tools: []tool.Tool{remove},
			Model: scripted.New([]scripted.Reply{scripted.ToolCall("delete_file", `{"path":"/tmp/old"}`), scripted.Text("cleaned up")})})
		require.NoError(t, err)
		crew, _ := newTeam(t, store, team.ModeCoordinate, []scripted.Reply{delegate("janitor", "Clean /tmp/old."), scripted.Text("The janitor cleaned up.")}, janitor)
		s := serveRunners(t, store, crew)

		frames := readFrames(t, s.postForm(t, "/teams/crew/runs", url.Values{"message": {"clean up"}, "session_id": {"s1"}}).Body)
		names := frameNames(frames)
		require.Equal(t, "TeamRunPaused", names[len(names)-1], names)
		require.Contains(t, names, "RunPaused", "the member's pause is in the team's stream")
		paused := frames[len(frames)-1].data
		teamRun := paused["run_id"].(string)
		reqs := paused["requirements"].([]any)
		require.Len(t, reqs, 1)
		req := reqs[0].(map[string]any)
		require.Equal(t, "janitor", req["member_agent_id"])
		memberRun := req["member_run_id"].(string)
		call := req["tool_execution"].(map[string]any)
		require.Equal(t, "delete_file", call["tool_name"])
		stored := decode[map[string]any](t, s.get(t, "/teams/crew/runs/"+teamRun+"?session_id=s1"))
		require.Equal(t, "PAUSED", stored["status"])
		require.Zero(t, removed)

		bad, _ := json.Marshal([]map[string]any{{"tool_call_id": "no-such-call", "confirmed": true}})
		resp := s.postForm(t, "/teams/crew/runs/"+teamRun+"/continue", url.Values{"session_id": {"s1"}, "tools": {string(bad)}})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Contains(t, decode[map[string]any](t, resp)["detail"], "no tool call no-such-call")

		confirm, _ := json.Marshal([]map[string]any{{"tool_call_id": call["tool_call_id"], "confirmed": true}})
		frames = readFrames(t, s.postForm(t, "/teams/crew/runs/"+teamRun+"/continue", url.Values{"session_id": {"s1"}, "tools": {string(confirm)}}).Body)
		names = frameNames(frames)
		require.Equal(t, "TeamRunContinued", names[0], names)
		require.Equal(t, "TeamRunCompleted", names[len(names)-1], names)
		require.Equal(t, "The janitor cleaned up.", frames[len(frames)-1].data["content"])
		require.Equal(t, 1, removed)

		runs := storedRuns(t, store, "s1")
		require.Equal(t, run.StatusCompleted, runs[teamRun].Status)
		require.Equal(t, run.StatusCompleted, runs[memberRun].Status)
		require.Equal(t, "cleaned up", runs[memberRun].Content)
		require.Equal(t, teamRun, runs[memberRun].ParentRunID)
		require.Equal(t, "cleaned up", *runs[teamRun].Tools[0].Result)
	})
}

// TestTeamTasksModeOverHTTP: a tasks-mode team's SSE stream carries the
// TeamTask* events with the team's id, each numbered, around the member's
// run, and the stored run keeps the task tools' calls.
func TestTeamTasksModeOverHTTP(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	writer := member(t, store, "writer", scripted.New([]scripted.Reply{scripted.Text("the draft")}))
	taskArgs, _ := json.Marshal(map[string]any{"title": "Draft", "assignee": "writer"})
	leader := scripted.New([]scripted.Reply{
		scripted.ToolCall(team.CreateTaskToolName, string(taskArgs)),
		scripted.Respond(func(req *model.Request) scripted.Reply {
			// The id is in the result of create_task: "Task created: [id] …".
			result := fmt.Sprint(req.Messages[len(req.Messages)-1].Content)
			id := result[strings.Index(result, "[")+1 : strings.Index(result, "]")]
			args, _ := json.Marshal(map[string]string{"task_id": id})
			return scripted.ToolCall(team.ExecuteTaskToolName, string(args))
		}),
		scripted.ToolCall(team.MarkAllCompleteToolName, `{"summary":"drafted"}`),
		scripted.Text("Drafted."),
	})
	crew, err := team.New(team.Config{ID: "crew", Mode: team.ModeTasks, Model: leader, Members: []run.Runner{writer}, Store: store})
	require.NoError(t, err)
	s := serveRunners(t, store, crew)

	frames := readFrames(t, s.postForm(t, "/teams/crew/runs", url.Values{"message": {"draft it"}, "session_id": {"s1"}}).Body)
	names := frameNames(frames)
	require.Equal(t, "TeamRunCompleted", names[len(names)-1], names)
	require.Equal(t, "Drafted.", frames[len(frames)-1].data["content"])
	var sawTask []string
	for i, f := range frames {
		require.Equal(t, float64(i), f.data["event_index"], f.event)
		if strings.HasPrefix(f.event, "TeamTask") {
			require.Equal(t, "crew", f.data["team_id"], f.event)
			sawTask = append(sawTask, f.event)
		}
		if f.event == "TeamTaskStateUpdated" {
			tasks := f.data["tasks"].([]any)
			require.Len(t, tasks, 1)
			require.Equal(t, "completed", tasks[0].(map[string]any)["status"])
			require.Equal(t, "the draft", tasks[0].(map[string]any)["result"])
			require.Equal(t, true, f.data["goal_complete"])
		}
	}
	require.Equal(t, []string{"TeamTaskIterationStarted", "TeamTaskCreated", "TeamTaskUpdated", "TeamTaskUpdated",
		"TeamTaskStateUpdated", "TeamTaskIterationCompleted"}, sawTask)
	require.Contains(t, names, "RunCompleted", "the member's run inside")
}
