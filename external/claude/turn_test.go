package claude_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/run"
)

func TestTurnFromRecordedOutput(t *testing.T) {
	started := time.Unix(1000, 0)
	turn := claude.NewTurn(started)
	var names []string
	var events []run.Event
	for i, line := range lines(t, "claude-p-stream-json-tool.jsonl") {
		for _, e := range turn.Apply(line, started.Add(time.Duration(i+1)*100*time.Millisecond)) {
			names = append(names, e.EventName())
			events = append(events, e)
		}
	}
	require.Equal(t, []string{run.EventToolCallStarted, run.EventToolCallCompleted, run.EventRunContent}, names)
	require.Equal(t, "30e0c92d-b88a-478f-bb76-fe18c9d67617", turn.SessionID)
	require.Equal(t, "claude-opus-5-5", turn.Model)

	require.Len(t, turn.Tools, 1)
	tool := turn.Tools[0]
	require.Equal(t, "Bash", tool.ToolName)
	require.Equal(t, "echo hi from bash", tool.ToolArgs["command"])
	require.Equal(t, "hi from bash", *tool.Result)
	require.False(t, *tool.ToolCallError)
	require.Equal(t, "hi from bash", events[1].(*run.ToolCallCompleted).Content)

	roles := []string{}
	for _, m := range turn.Messages {
		roles = append(roles, m.Role)
	}
	require.Equal(t, []string{run.RoleAssistant, run.RoleTool, run.RoleAssistant}, roles)
	require.Equal(t, "fake-final: hi from bash", turn.Content())

	metrics := turn.Metrics(started.Add(2 * time.Second))
	require.Equal(t, int64(5464), metrics.InputTokens)
	require.Equal(t, int64(53), metrics.OutputTokens)
	require.Equal(t, int64(5517), metrics.TotalTokens)
	require.InDelta(t, 0.022916, *metrics.Cost, 1e-9)
	require.InDelta(t, 2.0, metrics.Duration, 1e-9)
	require.InDelta(t, 0.4, metrics.TimeToFirstToken, 1e-9, "the first text came with the fourth line")
	detail := metrics.Details[run.ModelTypeModel]
	require.Len(t, detail, 1)
	require.Equal(t, "claude-opus-5-5", detail[0].ID)
	require.Equal(t, claude.ProviderName, detail[0].Provider)
}

func TestTurnFailedToolAndSubagent(t *testing.T) {
	turn := claude.NewTurn(time.Now())
	parse := func(s string) claude.Line {
		line, err := claude.ParseLine([]byte(s))
		require.NoError(t, err)
		return line
	}
	events := turn.Apply(parse(`{"type":"assistant","parent_tool_use_id":"toolu_task","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_sub","name":"Read","input":{"file_path":"x"}}]}}`), time.Now())
	require.Equal(t, "toolu_task", events[0].(*run.ToolCallStarted).ParentToolCallID, "a subagent's call names its Task call")
	events = turn.Apply(parse(`{"type":"user","parent_tool_use_id":"toolu_task","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_sub","content":[{"type":"text","text":"no such file"}],"is_error":true}]}}`), time.Now())
	failed, ok := events[0].(*run.ToolCallError)
	require.True(t, ok, "a failed tool result is a ToolCallError")
	require.Equal(t, "no such file", failed.Error)
	require.True(t, *turn.Tools[0].ToolCallError)
	require.Equal(t, "toolu_task", failed.ParentToolCallID)

	require.Empty(t, turn.Apply(parse(`{"type":"assistant","parent_tool_use_id":"toolu_task","message":{"role":"assistant","content":[{"type":"text","text":"subagent notes"}]}}`), time.Now()),
		"a subagent's text is not the run's content")
	turn.Apply(claude.Line{Type: "invalid", Error: "bad line"}, time.Now())
	require.Equal(t, "unreadable_cli_output", turn.Warnings[0].Type)
	require.Nil(t, turn.Metrics(time.Now()).Cost, "no result, no cost")
}

// TestTurnStreamsDeltas: with --include-partial-messages each text delta
// is a RunContent, and the whole text block that follows is not sent again.
func TestTurnStreamsDeltas(t *testing.T) {
	turn := claude.NewTurn(time.Now())
	var content []string
	for _, line := range lines(t, "claude-partial-messages-replay.jsonl") {
		for _, e := range turn.Apply(line, time.Now()) {
			if c, ok := e.(*run.RunContent); ok {
				content = append(content, c.Content.(string))
			}
		}
	}
	require.Equal(t, []string{"fake-answer: ", "partial ", "hello ", "world ", "foo ", "bar"}, content)
	require.Equal(t, run.RoleUser, turn.Messages[0].Role, "the echoed prompt is the run's user message")
	require.Equal(t, "fake-answer: partial hello world foo bar", turn.Messages[len(turn.Messages)-1].Content)
}

// TestTurnAPIErrorIsNotContent: the assistant line the CLI writes in place
// of an answer the API refused is the failure, not content.
func TestTurnAPIErrorIsNotContent(t *testing.T) {
	turn := claude.NewTurn(time.Now())
	for _, line := range lines(t, "claude-api-error-529.jsonl") {
		for _, e := range turn.Apply(line, time.Now()) {
			_, content := e.(*run.RunContent)
			require.False(t, content, "no RunContent for the API error text")
		}
	}
	require.Equal(t, "server_error", turn.APIError)
	for _, m := range turn.Messages {
		require.NotEqual(t, run.RoleAssistant, m.Role, "the stand-in is not an answer")
	}
	require.True(t, turn.Result.IsError)
}
