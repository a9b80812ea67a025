package external_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/run"
)

func turn(user, answer string, tools ...[2]string) *run.Output {
	msgs := []*run.Message{{Role: run.RoleSystem, Content: "be terse"}, {Role: run.RoleUser, Content: user}}
	for i, t := range tools {
		id := string(rune('a' + i))
		msgs = append(msgs,
			&run.Message{Role: run.RoleAssistant, ToolCalls: []run.ToolCall{{ID: id, Function: run.ToolCallFunction{Name: t[0], Arguments: `{"cmd":"ls"}`}}}},
			&run.Message{Role: run.RoleTool, ToolCallID: id, Content: t[1]})
	}
	msgs = append(msgs, &run.Message{Role: run.RoleAssistant, Content: answer})
	return &run.Output{Messages: msgs}
}

func TestSeedPromptCarriesTheConversation(t *testing.T) {
	history := []*run.Output{
		turn("list the files", "There are two files.", [2]string{"Bash", "a.txt\nb.txt"}),
		turn("and now?", "Still two."),
	}
	got := external.SeedPrompt(history, "delete b.txt")
	require.Equal(t, `Previous conversation (for context, do not repeat it):
user: list the files
assistant called Bash({"cmd":"ls"})
tool result: a.txt
b.txt
assistant: There are two files.
user: and now?
assistant: Still two.

Current message:
delete b.txt`, got)
	require.NotContains(t, got, "be terse", "system messages are left out")
}

func TestSeedPromptWithoutHistoryIsTheMessage(t *testing.T) {
	require.Equal(t, "hello", external.SeedPrompt(nil, "hello"))
	require.Equal(t, "hello", external.SeedPrompt([]*run.Output{{}}, "hello"))
}

func TestSeedPromptCutsToolResultsKeepingTheirEnd(t *testing.T) {
	long := strings.Repeat("é", 3000) + "THE END"
	got := external.SeedPrompt([]*run.Output{turn("go", "done", [2]string{"Bash", long})}, "next")
	var result string
	for line := range strings.SplitSeq(got, "\n") {
		if strings.HasPrefix(line, "tool result: ") {
			result = strings.TrimPrefix(line, "tool result: ")
		}
	}
	require.Equal(t, external.ToolTextLimit, utf8.RuneCountInString(result), "cut to the limit, in characters")
	require.True(t, strings.HasSuffix(result, "THE END"), "the end of the result is kept")
	require.Contains(t, result, "[…]")
	require.True(t, utf8.ValidString(got))
}

func TestSeedPromptDropsTheOldestHistoryFirst(t *testing.T) {
	var history []*run.Output
	for i := range 100 {
		history = append(history, turn(fmt.Sprintf("q%03d %s", i, strings.Repeat("x", 300)), "answer "+strings.Repeat("y", 300)))
	}
	got := external.SeedPrompt(history, "now")
	require.True(t, strings.Contains(got, "[earlier history omitted]"))
	require.True(t, strings.Contains(got, "user: q099 "), "the newest turns are kept")
	require.False(t, strings.Contains(got, "user: q000 "), "the oldest turn is dropped")
	header := "Previous conversation (for context, do not repeat it):\n[earlier history omitted]\n"
	body := strings.TrimPrefix(got[:strings.Index(got, "\nCurrent message:")], header)
	require.LessOrEqual(t, utf8.RuneCountInString(body), external.HistoryBudget)
	require.Greater(t, utf8.RuneCountInString(body), external.HistoryBudget-700, "the budget is used, not wasted")
	require.True(t, strings.HasPrefix(body, "user: q") || strings.HasPrefix(body, "assistant: "), "whole lines only")
}
