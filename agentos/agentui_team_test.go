package agentos_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/team"
	"github.com/agnogo/agnogo/tool"
)

// TestAgentUITeamChat: the UI in Team mode. The page loads in Agent mode
// (the agent selected, the team listed by GET /teams but not kept); switching
// to Team selects the team. One turn streams: the leader delegates to a
// member, which calls a tool and answers, then the leader answers. The UI
// shows the team's answer with a chip for the leader's delegation and one
// for the member's tool call (it merges every tool event of the stream,
// Team* or the member's, into the one reply). The sidebar lists the team's
// session. A reloaded page rebuilds the chat from the session's runs, which
// hold the member's run too (as Agno's do): the UI, which never looks at
// parent_run_id, shows it as an exchange of its own after the team's.
// Deleting the session removes it.
func TestAgentUITeamChat(t *testing.T) {
	t.Parallel()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	weather, err := tool.New(tool.Config{Name: "get_weather"}, func(ctx context.Context, args struct {
		City string `json:"city"`
	}) (string, error) {
		return "sunny in " + args.City, nil
	})
	require.NoError(t, err)
	const (
		message    = "weather in Paris?"
		task       = "Find the weather in Paris."
		memberText = "It is sunny in Paris."
		// Non-ASCII text, and braces and quotes inside a JSON string.
		teamText = `The team says: sunny in Paris ☀ {"temp_c": 21}`
	)
	// Real providers give every tool call an id of its own; the scripted
	// models would number both first calls call_1_1, and the UI keys its
	// chips by tool_call_id.
	withID := func(reply scripted.Reply, id string) scripted.Reply {
		reply.ToolCalls[0].ID = id
		return reply
	}
	researcher, err := agent.New(agent.Config{ID: "researcher", Name: "Researcher", Store: store, Tools: []tool.Tool{weather},
		Model: scripted.New([]scripted.Reply{
			withID(scripted.ToolCall("get_weather", `{"city":"Paris"}`), "call_weather"),
			{Content: memberText, Chunks: 2},
		})})
	require.NoError(t, err)

	// When RunStarted names a new session, the UI re-reads the session's
	// runs. A browser does so within milliseconds, long before a real
	// leader model has answered; the leader's first reply waits for that
	// re-read to be served, so the test sees it at that point every time.
	reread := make(chan struct{})
	rereadOnce := sync.OnceFunc(func() { close(reread) })
	delegation, err := json.Marshal(map[string]string{"member_id": "researcher", "task": task})
	require.NoError(t, err)
	crew, err := team.New(team.Config{ID: "crew", Name: "Crew", Store: store, Members: []run.Runner{researcher},
		Model: scripted.New([]scripted.Reply{
			scripted.Respond(func(*model.Request) scripted.Reply {
				select {
				case <-reread:
				case <-time.After(10 * time.Second):
					t.Error("the page never re-read the new session's runs")
				}
				return withID(scripted.ToolCall(team.DelegateToolName, string(delegation)), "call_delegate")
			}),
			{Content: teamText, Chunks: 3},
		})})
	require.NoError(t, err)
	assistant, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Store: store, Model: scripted.New(nil)})
	require.NoError(t, err)
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{assistant, crew}})
	require.NoError(t, err)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		os.ServeHTTP(w, r)
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/sessions/") && strings.HasSuffix(r.URL.Path, "/runs") {
			rereadOnce()
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(rereadOnce)
	ctx := t.Context()

	page := newChatUI(ts.URL, "")
	require.NoError(t, page.initialize(ctx))
	require.Equal(t, "agent", page.mode)
	require.Equal(t, "assistant", page.agentID)
	require.Empty(t, page.teams, "in Agent mode the page keeps only the agents")
	require.NoError(t, page.selectMode(ctx, "team"))
	require.Equal(t, []string{"crew"}, page.teams, "GET /teams lists the team")
	require.Equal(t, "crew", page.teamID)
	require.Empty(t, page.agentID)
	require.Equal(t, "agnogo-db", page.dbID, "without a db_id the UI never loads sessions")
	require.Equal(t, "scripted", page.selectedModel, "the leader's model")
	require.NoError(t, page.loadSessions(ctx))
	require.Empty(t, page.sidebar)

	require.NoError(t, page.send(ctx, message))
	sessionID := page.sessionID
	require.NotEmpty(t, sessionID, "TeamRunStarted carries the new session's id")
	require.Equal(t, []shownMessage{
		{Role: "user", Content: message},
		{Role: "agent", Content: teamText, Tools: []string{"delegate_task_to_member (call_delegate)", "get_weather (call_weather)"}},
	}, chatView(page.messages), "the chat as streamed")
	require.Equal(t, []uiSession{{SessionID: sessionID, SessionName: message}}, withoutTimes(page.sidebar))
	require.NoError(t, page.loadSessions(ctx))
	require.Equal(t, []uiSession{{SessionID: sessionID, SessionName: message}}, withoutTimes(page.sidebar),
		"GET /sessions?type=team lists the team's session, named by the team's input")

	// A reload keeps the URL (?team=&db_id=&session=), which puts the page
	// back in Team mode.
	reloaded := newChatUI(ts.URL, "")
	reloaded.teamID, reloaded.dbID, reloaded.sessionID = page.teamID, page.dbID, page.sessionID
	require.NoError(t, reloaded.initialize(ctx))
	require.Equal(t, "team", reloaded.mode)
	require.Equal(t, "crew", reloaded.teamID)
	require.NoError(t, reloaded.loadSessions(ctx))
	require.Equal(t, withoutTimes(page.sidebar), withoutTimes(reloaded.sidebar))
	require.NoError(t, reloaded.loadSession(ctx, sessionID))
	require.Equal(t, []shownMessage{
		{Role: "user", Content: message},
		{Role: "agent", Content: teamText, Tools: []string{"delegate_task_to_member (call_delegate)"}},
		// The member's run, a run of the session as in Agno (agent-ui
		// issue 122): its task reads as a user message.
		{Role: "user", Content: task},
		{Role: "agent", Content: memberText, Tools: []string{"get_weather (call_weather)"}},
	}, chatView(reloaded.messages), "the chat rebuilt after a reload")
	for _, m := range reloaded.messages {
		require.NotZero(t, m.CreatedAt, "messages are keyed and ordered by created_at")
	}

	require.NoError(t, reloaded.deleteSession(ctx, sessionID))
	require.Empty(t, reloaded.sidebar)
	require.Empty(t, reloaded.messages, "deleting the open session clears the chat")
	require.NoError(t, reloaded.loadSessions(ctx))
	require.Empty(t, reloaded.sidebar)
	require.Empty(t, slices.Concat(page.failures, reloaded.failures), "error toasts or answers the page drops")
}

// TestAgentUITeamHistoryWhileMemberRuns: while a member's tool runs, the
// team's session lists the team's run in flight but not the member's, as
// in Agno, where member runs reach the session with the team's run. A page
// that loads the session then (the UI's own re-read, whenever it lands, or
// a second tab) shows the user's message and a pending reply, not the
// member's task as a second user message; the first page's stream then
// completes with the team's answer in place.
func TestAgentUITeamHistoryWhileMemberRuns(t *testing.T) {
	t.Parallel()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	started, release := make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	lookup, err := tool.New(tool.Config{Name: "lookup"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		select {
		case <-release:
			return "found", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	require.NoError(t, err)
	withID := func(reply scripted.Reply, id string) scripted.Reply {
		reply.ToolCalls[0].ID = id
		return reply
	}
	researcher, err := agent.New(agent.Config{ID: "researcher", Store: store, Tools: []tool.Tool{lookup},
		Model: scripted.New([]scripted.Reply{withID(scripted.ToolCall("lookup", `{}`), "call_lookup"), scripted.Text("Found it.")})})
	require.NoError(t, err)
	delegation, err := json.Marshal(map[string]string{"member_id": "researcher", "task": "Look it up."})
	require.NoError(t, err)
	crew, err := team.New(team.Config{ID: "crew", Store: store, Members: []run.Runner{researcher},
		Model: scripted.New([]scripted.Reply{
			withID(scripted.ToolCall(team.DelegateToolName, string(delegation)), "call_delegate"),
			scripted.Text("Here it is."),
		})})
	require.NoError(t, err)
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{crew}})
	require.NoError(t, err)
	// The page's own re-read of the new session (on RunStarted) is served
	// while the member runs: the test waits for it before the member may
	// finish, as a browser's lands long before a real member would.
	reread := make(chan struct{})
	rereadOnce := sync.OnceFunc(func() { close(reread) })
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		os.ServeHTTP(w, r)
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/sessions/") && strings.HasSuffix(r.URL.Path, "/runs") {
			rereadOnce()
		}
	}))
	t.Cleanup(ts.Close)
	ctx := t.Context()

	page := newChatUI(ts.URL, "")
	page.mode = "team" // the server has no agent: Team mode picked in the selector
	require.NoError(t, page.initialize(ctx))
	sent := make(chan error, 1)
	go func() { sent <- page.send(ctx, "find it") }()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the member's tool never started")
	}
	select {
	case <-reread:
	case <-time.After(10 * time.Second):
		t.Fatal("the page never re-read the new session's runs")
	}

	other := newChatUI(ts.URL, "")
	other.mode = "team"
	require.NoError(t, other.initialize(ctx))
	require.NoError(t, other.loadSessions(ctx))
	require.Len(t, other.sidebar, 1, "the session is listed while its first run streams")
	require.Equal(t, "find it", other.sidebar[0].SessionName)
	require.NoError(t, other.loadSession(ctx, other.sidebar[0].SessionID))
	require.Len(t, other.messages, 2, "the team's run in flight, without its member's: %+v", chatView(other.messages))
	require.Equal(t, shownMessage{Role: "user", Content: "find it"}, chatView(other.messages)[0])
	require.Equal(t, "agent", other.messages[1].Role)

	releaseOnce()
	require.NoError(t, <-sent)
	require.Equal(t, []shownMessage{
		{Role: "user", Content: "find it"},
		{Role: "agent", Content: "Here it is.", Tools: []string{"delegate_task_to_member (call_delegate)", "lookup (call_lookup)"}},
	}, chatView(page.messages))
	require.NoError(t, other.loadSession(ctx, page.sessionID))
	require.Len(t, other.messages, 4, "once the team's run has ended, its member's run is listed")
	require.Empty(t, slices.Concat(page.failures, other.failures), "error toasts or answers the page drops")
}
