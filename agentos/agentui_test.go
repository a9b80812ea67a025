package agentos_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/tool"
)

// These tests replay what the open-source Agno chat UI (github.com/agno-agi/agent-ui,
// main branch, the Agno v2 client) does against a server, request for request, and
// read the answers the way its code does. The page (agentui_page_test.go),
// its stream reader (agentui_stream_test.go) and the browser's CORS checks
// (agentui_browser_test.go) are ports of that behaviour, each helper naming
// the UI file it follows; docs/agent-ui.md says how to point the UI at
// agnogo serve.

// agentUIOrigin is where the UI's development server runs (`pnpm dev`).
const agentUIOrigin = "http://localhost:3000"

// TestAgentUIChat: the UI lists the agent, streams two turns of one session
// (the second with a tool call), then a reloaded page lists the session and
// rebuilds the same chat from the server; deleting the session removes it.
// It runs against an open server and against one with a security key, which
// the UI sends as a bearer token (and which turns its POSTs into preflighted
// requests).
func TestAgentUIChat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, securityKey string }{{"open", ""}, {"security key", "ui-secret"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			weather, err := tool.New(tool.Config{Name: "get_weather"}, func(ctx context.Context, args struct {
				City string `json:"city"`
			}) (string, error) {
				return "sunny in " + args.City, nil
			})
			require.NoError(t, err)
			const (
				firstMessage  = "hello"
				firstReply    = "Bonjour ! Ça va ? Ask me about the weather ☀."
				secondMessage = "weather in Paris?"
				// Braces, quotes and a backslash inside a JSON string must not
				// confuse the UI's brace-matching stream parser.
				secondReply = `Sunny in Paris {"temp_c": 21} \o/`
			)
			s := newServer(t, []scripted.Reply{
				{Content: firstReply, Chunks: 3},
				scripted.ToolCall("get_weather", `{"city":"Paris"}`),
				{Content: secondReply, Chunks: 3},
			}, func(c *agent.Config, o *agentos.Config) {
				c.Tools = []tool.Tool{weather}
				o.Auth.SecurityKey = tc.securityKey
			})
			ctx := t.Context()

			page := newChatUI(s.URL, tc.securityKey)
			require.NoError(t, page.initialize(ctx))
			require.Equal(t, "assistant", page.agentID)
			require.Equal(t, "agnogo-db", page.dbID, "without a db_id the UI never loads sessions")
			require.Equal(t, "scripted", page.selectedModel)
			require.NoError(t, page.loadSessions(ctx))
			require.Empty(t, page.sidebar)

			require.NoError(t, page.send(ctx, firstMessage))
			sessionID := page.sessionID
			require.NotEmpty(t, sessionID, "RunStarted carries the new session's id")
			require.NoError(t, page.send(ctx, secondMessage))
			require.Equal(t, sessionID, page.sessionID)

			want := []shownMessage{
				{Role: "user", Content: firstMessage},
				{Role: "agent", Content: firstReply},
				{Role: "user", Content: secondMessage},
				{Role: "agent", Content: secondReply, Tools: []string{"get_weather (call_2_1)"}},
			}
			require.Equal(t, want, chatView(page.messages), "the chat as streamed")
			require.Equal(t, []uiSession{{SessionID: sessionID, SessionName: firstMessage}}, withoutTimes(page.sidebar))

			// A reload keeps the URL (?agent=&db_id=&session=) and, with the
			// token from NEXT_PUBLIC_OS_SECURITY_KEY, the token; the chat and
			// the sidebar are rebuilt from the server.
			reloaded := newChatUI(s.URL, tc.securityKey)
			reloaded.agentID, reloaded.dbID, reloaded.sessionID = page.agentID, page.dbID, page.sessionID
			require.NoError(t, reloaded.initialize(ctx))
			require.NoError(t, reloaded.loadSessions(ctx))
			require.NoError(t, reloaded.loadSession(ctx, sessionID))
			require.Equal(t, want, chatView(reloaded.messages), "the chat rebuilt after a reload")
			for _, m := range reloaded.messages {
				require.NotZero(t, m.CreatedAt, "messages are keyed and ordered by created_at")
			}
			require.Equal(t, []uiSession{{SessionID: sessionID, SessionName: firstMessage}}, withoutTimes(reloaded.sidebar))
			require.NotZero(t, reloaded.sidebar[0].CreatedAt)

			require.NoError(t, reloaded.deleteSession(ctx, sessionID))
			require.Empty(t, reloaded.sidebar)
			require.Empty(t, reloaded.messages, "deleting the open session clears the chat")
			require.NoError(t, reloaded.loadSessions(ctx))
			require.Empty(t, reloaded.sidebar)
			require.Empty(t, slices.Concat(page.failures, reloaded.failures), "error toasts or answers the page drops")
		})
	}
}

// TestAgentUIHistoryWhileStreaming: while a reply is still streaming (its
// tool is running) the session is listed and its runs include the in-flight
// one, so a page that loads the session then — the UI's own history reload,
// or a second tab — shows the user's message and a pending reply; the first
// page's stream then completes as usual.
func TestAgentUIHistoryWhileStreaming(t *testing.T) {
	t.Parallel()
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
	s := newServer(t, []scripted.Reply{scripted.ToolCall("lookup", `{}`), scripted.Text("Here it is.")},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{lookup} })
	ctx := t.Context()
	page := newChatUI(s.URL, "")
	require.NoError(t, page.initialize(ctx))
	sent := make(chan error, 1)
	go func() { sent <- page.send(ctx, "find it") }()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool never started")
	}

	other := newChatUI(s.URL, "")
	require.NoError(t, other.initialize(ctx))
	require.NoError(t, other.loadSessions(ctx))
	require.Len(t, other.sidebar, 1, "the session is listed while its first run streams")
	require.Equal(t, "find it", other.sidebar[0].SessionName)
	require.NoError(t, other.loadSession(ctx, other.sidebar[0].SessionID))
	require.Len(t, other.messages, 2, "the in-flight run is in the session's runs")
	require.Equal(t, shownMessage{Role: "user", Content: "find it"}, chatView(other.messages)[0])
	require.Equal(t, "agent", other.messages[1].Role)

	releaseOnce()
	require.NoError(t, <-sent)
	require.Equal(t, []shownMessage{
		{Role: "user", Content: "find it"},
		{Role: "agent", Content: "Here it is.", Tools: []string{"lookup (call_1_1)"}},
	}, chatView(page.messages))
	require.Empty(t, slices.Concat(page.failures, other.failures), "error toasts or answers the page drops")
}

// TestAgentUIShowsRunError: a run that fails after it started reaches the UI
// as RunError, which marks the reply as failed with the error's text.
func TestAgentUIShowsRunError(t *testing.T) {
	t.Parallel()
	s := newServer(t, []scripted.Reply{scripted.Fail(errors.New("provider unavailable"))}, nil)
	page := newChatUI(s.URL, "")
	require.NoError(t, page.initialize(t.Context()))
	require.NoError(t, page.send(t.Context(), "hello"))
	require.Len(t, page.messages, 2)
	require.True(t, page.messages[1].StreamingError, "the reply is shown as failed")
	require.NotEmpty(t, page.streamingError)
	require.NotEqual(t, "Error during run", page.streamingError, "RunError carries its message in content")
	require.Empty(t, page.sidebar, "the UI drops a session whose first run failed")
}
