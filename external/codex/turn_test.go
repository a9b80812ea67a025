package codex_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external/codex"
	"github.com/agnogo/agnogo/run"
)

// recordedTurns reads the app-server's notifications from the recorded
// transcript, split into turns at each turn/completed.
func recordedTurns(t *testing.T) [][]codex.Message {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "codex-app-server-transcript.txt"))
	require.NoError(t, err)
	defer f.Close()
	var turns [][]codex.Message
	var current []codex.Message
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "<< ") {
			continue
		}
		_, payload, _ := strings.Cut(strings.TrimPrefix(line, "<< "), " ")
		var m codex.Message
		require.NoError(t, json.Unmarshal([]byte(payload), &m))
		if m.Method == "" {
			continue // an answer to a call
		}
		current = append(current, m)
		if m.Method == "turn/completed" {
			turns = append(turns, current)
			current = nil
		}
	}
	require.NoError(t, scanner.Err())
	return turns
}

func TestTurnFromRecordedTranscript(t *testing.T) {
	turns := recordedTurns(t)
	require.Len(t, turns, 3)

	started := time.Unix(1000, 0)
	turn := codex.NewTurn(started)
	var names []string
	var content strings.Builder
	for i, m := range turns[0] {
		for _, e := range turn.Apply(m, started.Add(time.Duration(i)*10*time.Millisecond)) {
			names = append(names, e.EventName())
			if c, ok := e.(*run.RunContent); ok {
				content.WriteString(c.Content.(string))
			}
		}
	}
	require.Equal(t, codex.TurnCompleted, turn.Status)
	require.Equal(t, run.EventToolCallStarted, names[0])
	require.Equal(t, run.EventToolCallCompleted, names[1])
	require.Len(t, turn.Tools, 1)
	shell := turn.Tools[0]
	require.Equal(t, "shell", shell.ToolName)
	require.Contains(t, shell.ToolArgs["command"], "touch /home/agnogo/cli/projx5b/appserver.txt")
	require.Equal(t, "made\n[exit code 0]", *shell.Result)
	require.False(t, *shell.ToolCallError)
	require.True(t, strings.HasPrefix(turn.Content, "fake-final: "), turn.Content)
	require.True(t, strings.HasSuffix(turn.Content, "Output:\nmade"), turn.Content)
	require.Equal(t, turn.Content, content.String(), "the streamed deltas add up to the answer, once")

	metrics := turn.Metrics(started.Add(time.Second), "gpt-5.5")
	// Thread totals went from 0 (first report's total less its last request)
	// to 15,861 in / 39 out during this turn.
	require.Equal(t, int64(15861), metrics.InputTokens)
	require.Equal(t, int64(39), metrics.OutputTokens)
	require.Nil(t, metrics.Cost, "Codex reports no cost")
	require.Equal(t, "gpt-5.5", metrics.Details[run.ModelTypeModel][0].ID)

	interrupted := codex.NewTurn(started)
	for _, m := range turns[1] {
		interrupted.Apply(m, started)
	}
	require.Equal(t, codex.TurnInterrupted, interrupted.Status)
}

func TestTurnFailedCommandAndFailedTurn(t *testing.T) {
	turn := codex.NewTurn(time.Now())
	msg := func(method, params string) codex.Message {
		return codex.Message{Method: method, Params: json.RawMessage(params)}
	}
	events := turn.Apply(msg("item/completed", `{"item":{"type":"commandExecution","id":"c1","command":"false","cwd":"/w","status":"failed","aggregatedOutput":"","exitCode":1}}`), time.Now())
	require.Len(t, events, 2, "a call seen only completed still starts")
	failed, ok := events[1].(*run.ToolCallError)
	require.True(t, ok)
	require.Equal(t, "[exit code 1]", failed.Error)
	require.True(t, *turn.Tools[0].ToolCallError)

	events = turn.Apply(msg("item/started", `{"item":{"type":"mcpToolCall","id":"m1","server":"docs","tool":"search","arguments":{"q":"go"}}}`), time.Now())
	require.Equal(t, "mcp__docs__search", events[0].(*run.ToolCallStarted).Tool.ToolName)
	events = turn.Apply(msg("item/completed", `{"item":{"type":"mcpToolCall","id":"m1","server":"docs","tool":"search","status":"completed","result":{"content":[{"type":"text","text":"found it"}]}}}`), time.Now())
	require.Equal(t, "found it", events[0].(*run.ToolCallCompleted).Content)

	turn.Apply(msg("item/agentMessage/delta", `{"itemId":"a1","delta":"First."}`), time.Now())
	turn.Apply(msg("item/agentMessage/delta", `{"itemId":"a2","delta":"Second."}`), time.Now())
	require.Equal(t, "First.\n\nSecond.", turn.Content, "consecutive agent messages are separated by a blank line")

	turn.Apply(msg("turn/completed", `{"turn":{"status":"failed","error":{"message":"stream disconnected"},"durationMs":5}}`), time.Now())
	require.Equal(t, codex.TurnFailed, turn.Status)
	require.Equal(t, "stream disconnected", turn.Error)
}
