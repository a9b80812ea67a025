package storagetest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

func toolResultTests() []conformanceTest {
	return []conformanceTest{
		{"PutGetRoundTrip", testToolResultRoundTrip},
		{"PutReplaces", testToolResultReplaces},
		{"Isolation", testToolResultIsolation},
		{"Expired", testToolResultExpired},
		{"Invalid", testToolResultInvalid},
	}
}

func bigResult(id, userID string) *storage.ToolResult {
	content := strings.Repeat("line of a large tool result\n", 2000)
	return &storage.ToolResult{
		ResultID: id, Namespace: "s-1", Path: "r-1/" + id, SessionID: "s-1", RunID: "r-1", ToolCallID: "call-" + id,
		ToolName: "read_file", ArgsHash: "abc", ContentType: "text/plain", SizeBytes: int64(len(content)),
		LineCount: 2000, Preview: content[:100], UserID: userID, CreatedAt: 1700000000, Content: content,
	}
}

func testToolResultRoundTrip(t *testing.T, store storage.Store) {
	want := bigResult("res-1", alice)
	require.NoError(t, store.PutToolResult(t.Context(), want))
	got, err := store.GetToolResult(t.Context(), "res-1", "")
	require.NoError(t, err)
	require.Equal(t, want, got, "every field and the whole content read back")
	_, err = store.GetToolResult(t.Context(), "missing", "")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testToolResultReplaces(t *testing.T, store storage.Store) {
	first := bigResult("res-1", "")
	require.NoError(t, store.PutToolResult(t.Context(), first))
	second := bigResult("res-1", "")
	second.Content, second.SizeBytes = "shorter", 7
	require.NoError(t, store.PutToolResult(t.Context(), second))
	got, err := store.GetToolResult(t.Context(), "res-1", "")
	require.NoError(t, err)
	require.Equal(t, "shorter", got.Content)
}

func testToolResultIsolation(t *testing.T, store storage.Store) {
	require.NoError(t, store.PutToolResult(t.Context(), bigResult("res-1", alice)))
	_, err := store.GetToolResult(t.Context(), "res-1", bob)
	require.ErrorIs(t, err, storage.ErrNotFound, "bob cannot read alice's result")
	got, err := store.GetToolResult(t.Context(), "res-1", alice)
	require.NoError(t, err)
	require.Equal(t, alice, got.UserID)
}

func testToolResultExpired(t *testing.T, store storage.Store) {
	expired := bigResult("res-old", "")
	expired.ExpiresAt = 1 // long past
	require.NoError(t, store.PutToolResult(t.Context(), expired))
	_, err := store.GetToolResult(t.Context(), "res-old", "")
	require.ErrorIs(t, err, storage.ErrNotFound, "an expired result is gone")
}

func testToolResultInvalid(t *testing.T, store storage.Store) {
	require.ErrorIs(t, store.PutToolResult(t.Context(), &storage.ToolResult{ResultID: "x"}), storage.ErrInvalid)
}
