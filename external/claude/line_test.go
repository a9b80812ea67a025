package claude_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external/claude"
)

// lines parses a recorded CLI output.
func lines(t *testing.T, name string) []claude.Line {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	var out []claude.Line
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		if len(scanner.Bytes()) == 0 {
			continue
		}
		line, err := claude.ParseLine(scanner.Bytes())
		require.NoError(t, err)
		out = append(out, line)
	}
	require.NoError(t, scanner.Err())
	return out
}

func TestParseToolTurn(t *testing.T) {
	got := lines(t, "claude-p-stream-json-tool.jsonl")
	require.Len(t, got, 5)
	init := got[0]
	require.Equal(t, claude.LineSystem, init.Type)
	require.Equal(t, "init", init.Subtype)
	require.Equal(t, "30e0c92d-b88a-478f-bb76-fe18c9d67617", init.SessionID)
	require.Equal(t, "claude-opus-5-5", init.Model)
	require.Equal(t, "2.1.332", init.Version)
	require.Contains(t, init.Tools, "Bash")

	call := got[1].Message.Content[0]
	require.Equal(t, "tool_use", call.Type)
	require.Equal(t, "Bash", call.Name)
	var input map[string]string
	require.NoError(t, json.Unmarshal(call.Input, &input))
	require.Equal(t, "echo hi from bash", input["command"])

	result := got[2].Message.Content[0]
	require.Equal(t, "tool_result", result.Type)
	require.Equal(t, call.ID, result.ToolUseID)
	require.Equal(t, "hi from bash", result.ResultText())
	require.False(t, result.IsError)

	require.Equal(t, "fake-final: hi from bash", got[3].Message.Content[0].Text)

	end := got[4]
	require.True(t, end.IsResult())
	require.Equal(t, "success", end.Subtype)
	require.False(t, end.IsError)
	require.Equal(t, "fake-final: hi from bash", end.ResultText())
	require.Equal(t, int64(5464), end.Usage.InputTokens)
	require.Equal(t, int64(53), end.Usage.OutputTokens)
	require.InDelta(t, 0.022916, end.TotalCostUSD, 1e-9)
	require.InDelta(t, 0.022916, end.ModelUsage["claude-opus-5-5"].CostUSD, 1e-9)
	require.Equal(t, "end_turn", end.StopReason)
}

func TestParseAPIErrorResult(t *testing.T) {
	got := lines(t, "claude-api-error-529.jsonl")
	retry := got[1]
	require.Equal(t, "api_retry", retry.Subtype)
	require.Equal(t, 1, retry.Attempt)
	require.Equal(t, 529, *retry.ErrorStatus)
	end := got[len(got)-1]
	require.True(t, end.IsResult())
	require.Equal(t, "success", end.Subtype, "API errors come as success with is_error")
	require.True(t, end.IsError)
	require.Equal(t, 529, *end.APIErrorStatus)
	require.Equal(t, "api_error", end.TerminalReason)
	require.Contains(t, end.ResultText(), "API Error: 529")
}

func TestParseMaxTurnsAndStructuredOutput(t *testing.T) {
	maxTurns := lines(t, "claude-max-turns-error.json")[0]
	require.Equal(t, "error_max_turns", maxTurns.Subtype)
	require.True(t, maxTurns.IsError)
	require.Equal(t, "max_turns", maxTurns.TerminalReason)
	require.Equal(t, []string{"Reached maximum number of turns (1)"}, maxTurns.Errors)

	structured := lines(t, "claude-p-json-schema-result.json")[0]
	require.JSONEq(t, `{"name":"bob"}`, string(structured.StructuredOutput))
	require.Equal(t, `{"name":"bob"}`, structured.ResultText())
}

func TestParseEveryRecordedLine(t *testing.T) {
	for _, name := range []string{"claude-partial-messages-replay.jsonl", "claude-stream-json-input-2turns.jsonl", "claude-transcript-example.jsonl"} {
		got := lines(t, name)
		require.NotEmpty(t, got, name)
		for _, line := range got {
			require.NotEmpty(t, line.Type, name)
			require.NotEmpty(t, line.Raw, name)
		}
	}
	stream := lines(t, "claude-partial-messages-replay.jsonl")
	var events int
	for _, line := range stream {
		if line.Type == claude.LineStreamEvent {
			events++
			require.NotEmpty(t, line.Event)
		}
	}
	require.NotZero(t, events, "partial messages come as stream_event lines")
}

func TestParseMalformedLines(t *testing.T) {
	for _, bad := range []string{"", "   ", "not json", `{"no":"type"}`, `["a"]`, `{"type":"assistant","message":{"content":7}}`} {
		_, err := claude.ParseLine([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
	line, err := claude.ParseLine([]byte(`{"type":"brand_new","subtype":"x","extra":1}`))
	require.NoError(t, err, "unknown types parse")
	require.Equal(t, "brand_new", line.Type)
	user, err := claude.ParseLine([]byte(`{"type":"user","message":{"role":"user","content":"plain text"}}`))
	require.NoError(t, err)
	require.Equal(t, "plain text", user.Message.Content[0].Text, "string content is one text block")
}
