package agent_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// lastToolJSON decodes the last message of the model request at index
// request: the result of a tool call, as JSON.
func lastToolJSON(t *testing.T, b *bundle, request int) map[string]any {
	t.Helper()
	messages := b.model.Requests()[request].Messages
	last := messages[len(messages)-1]
	require.Equal(t, run.RoleTool, last.Role)
	var result map[string]any
	require.NoError(t, json.Unmarshal([]byte(last.ContentString()), &result), last.ContentString())
	return result
}

func TestAgenticMemoryToolManagesTheUsersMemories(t *testing.T) {
	b := setup(t, []scripted.Reply{
		scripted.ToolCall(agent.AgenticMemoryToolName, `{"memory":"The user lives in Paris","topics":["location"]}`),
		scripted.Text("I'll remember you live in Paris."),
		// The same fact again is not stored twice.
		scripted.ToolCall(agent.AgenticMemoryToolName, `{"action":"add","memory":"the user lives in paris"}`),
		scripted.Text("I knew."),
		scripted.Text("You live in Paris."),
	}, func(c *agent.Config) {
		c.EnableAgenticMemory = true
		c.AddMemoriesToContext = true
	})
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "Remember I live in Paris", SessionID: "s1", UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	var offered []string
	for _, def := range b.model.Requests()[0].Tools {
		offered = append(offered, def.Name)
	}
	require.Contains(t, offered, agent.AgenticMemoryToolName)
	added := lastToolJSON(t, b, 1)
	require.Equal(t, "added", added["status"])
	memories, total, err := b.store.ListMemories(t.Context(), storage.MemoryQuery{UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, "The user lives in Paris", memories[0].Memory)
	require.Equal(t, []string{"location"}, memories[0].Topics)
	require.Equal(t, "assistant", memories[0].AgentID)
	require.Equal(t, added["memory_id"], memories[0].MemoryID)

	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "Remember I live in Paris", SessionID: "s1", UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, "already remembered", lastToolJSON(t, b, 3)["status"])
	_, total, err = b.store.ListMemories(t.Context(), storage.MemoryQuery{UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, 1, total)

	// The next run of the user sees it in the system message; another user's
	// memories are untouched.
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "Where do I live?", SessionID: "s2", UserID: "ada"})
	require.NoError(t, err)
	require.Contains(t, b.model.Requests()[4].Messages[0].ContentString(), "The user lives in Paris")
	_, total, err = b.store.ListMemories(t.Context(), storage.MemoryQuery{UserID: "bob"})
	require.NoError(t, err)
	require.Zero(t, total)
}

func TestAgenticMemoryToolUpdatesDeletesListsAndClears(t *testing.T) {
	calls := []string{
		`{"action":"update","memory_id":"m1","memory":"The user lives in Lyon","topics":["location"]}`,
		`{"action":"delete","memory_id":"m2"}`,
		`{"action":"delete","memory_id":"b1"}`, // another user's: not found
		`{"action":"list"}`,
		`{"action":"clear"}`,
		`{"action":"update","memory_id":"m1"}`, // no text
		`{"action":"shout"}`,
	}
	var replies []scripted.Reply
	for _, call := range calls {
		replies = append(replies, scripted.ToolCall(agent.AgenticMemoryToolName, call))
	}
	b := setup(t, append(replies, scripted.Text("Done.")), func(c *agent.Config) { c.EnableAgenticMemory = true })
	ctx := t.Context()
	seed := func(id, user, text string) {
		_, err := b.store.UpsertMemory(ctx, &storage.Memory{MemoryID: id, UserID: user, Memory: text})
		require.NoError(t, err)
	}
	seed("m1", "ada", "The user lives in Paris")
	seed("m2", "ada", "The user likes tea")
	seed("m3", "ada", "The user has a cat")
	seed("b1", "bob", "The user likes coffee")

	out, err := b.agent.Run(ctx, &run.Input{InputContent: "tidy my memories", SessionID: "s1", UserID: "ada"})
	require.NoError(t, err)
	require.Len(t, out.Tools, len(calls))

	result := func(i int) (string, bool) { return *out.Tools[i].Result, *out.Tools[i].ToolCallError }
	text, failed := result(0)
	require.False(t, failed, text)
	require.JSONEq(t, `{"status":"updated","memory_id":"m1","memory":"The user lives in Lyon","topics":["location"]}`, text)
	text, failed = result(1)
	require.False(t, failed, text)
	require.JSONEq(t, `{"status":"deleted","memory_id":"m2"}`, text)
	text, failed = result(2)
	require.True(t, failed)
	require.Contains(t, text, `no memory "b1" of this user`)
	text, failed = result(3)
	require.False(t, failed, text)
	require.Contains(t, text, `"memory_id":"m1","memory":"The user lives in Lyon"`)
	require.Contains(t, text, `"memory_id":"m3"`)
	require.NotContains(t, text, "m2")
	require.NotContains(t, text, "coffee")
	text, failed = result(4)
	require.False(t, failed, text)
	require.JSONEq(t, `{"status":"cleared","deleted":2}`, text)
	text, failed = result(5)
	require.True(t, failed)
	require.Contains(t, text, "update needs the memory_id")
	text, failed = result(6)
	require.True(t, failed)
	require.Contains(t, text, "action")

	_, total, err := b.store.ListMemories(ctx, storage.MemoryQuery{UserID: "ada"})
	require.NoError(t, err)
	require.Zero(t, total)
	_, total, err = b.store.ListMemories(ctx, storage.MemoryQuery{UserID: "bob"})
	require.NoError(t, err)
	require.Equal(t, 1, total, "bob's memory survives ada's clear")
}

func TestAgenticMemoryToolNeedsAUser(t *testing.T) {
	b := setup(t, []scripted.Reply{
		scripted.ToolCall(agent.AgenticMemoryToolName, `{"memory":"The user lives in Paris"}`),
		scripted.Text("I cannot remember that."),
	}, func(c *agent.Config) { c.EnableAgenticMemory = true })
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "Remember I live in Paris", SessionID: "s1"})
	require.NoError(t, err)
	require.True(t, *out.Tools[0].ToolCallError)
	require.Contains(t, *out.Tools[0].Result, "no user id")
	_, total, err := b.store.ListMemories(t.Context(), storage.MemoryQuery{})
	require.NoError(t, err)
	require.Zero(t, total)
}

func TestAgenticMemoryNeedsAStore(t *testing.T) {
	_, err := agent.New(agent.Config{Model: scripted.New(nil), EnableAgenticMemory: true})
	require.ErrorContains(t, err, "EnableAgenticMemory needs a Store")

	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agent.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	_, err = agent.New(agent.Config{Model: scripted.New(nil), EnableAgenticMemory: true, Store: store})
	require.NoError(t, err)
}
