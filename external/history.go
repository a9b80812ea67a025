package external

import (
	"strings"
	"unicode/utf8"

	"github.com/agnogo/agnogo/run"
)

// Limits of the history a fresh CLI session is seeded with.
const (
	// HistoryBudget bounds the history lines of a seeded prompt, in
	// characters; the oldest lines are dropped first.
	HistoryBudget = 24000
	// ToolTextLimit bounds one tool call's arguments or result in the
	// history, in characters.
	ToolTextLimit = 2000
	// toolTextTail is how much of the end of a cut tool text is kept.
	toolTextTail = 400
)

// omitted replaces the middle of a cut tool text.
const omitted = " […] "

// SeedPrompt is the prompt of the first turn of a fresh CLI session on a
// session that already has runs — the CLI cannot resume the session it had
// (or never had one): the conversation so far, oldest first, then the
// message. Each earlier run gives its user message, each tool call
// ("assistant called name(args)") with its result ("tool result: …", cut
// to ToolTextLimit characters keeping the last 400) and its answer. The
// history lines are kept within HistoryBudget characters by dropping the
// oldest, which "[earlier history omitted]" then says. Without earlier runs
// the prompt is the message alone.
func SeedPrompt(history []*run.Output, message string) string {
	lines := historyLines(history)
	if len(lines) == 0 {
		return message
	}
	total, first := 0, len(lines)
	for first > 0 && total+utf8.RuneCountInString(lines[first-1])+1 <= HistoryBudget {
		first--
		total += utf8.RuneCountInString(lines[first]) + 1
	}
	var b strings.Builder
	b.WriteString("Previous conversation (for context, do not repeat it):\n")
	if first > 0 {
		b.WriteString("[earlier history omitted]\n")
	}
	for _, line := range lines[first:] {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteString("\nCurrent message:\n")
	b.WriteString(message)
	return b.String()
}

// historyLines renders the runs' own messages, one line each.
func historyLines(history []*run.Output) []string {
	var lines []string
	for _, past := range history {
		if past == nil {
			continue
		}
		for _, msg := range past.Messages {
			if msg == nil || msg.FromHistory {
				continue
			}
			lines = append(lines, messageLines(msg)...)
		}
	}
	return lines
}

// messageLines renders one message: user and assistant text, tool calls and
// tool results; system messages are left out.
func messageLines(msg *run.Message) []string {
	var lines []string
	text := strings.TrimSpace(msg.ContentString())
	switch msg.Role {
	case run.RoleUser:
		if text != "" {
			lines = append(lines, "user: "+text)
		}
	case run.RoleAssistant:
		for _, call := range msg.ToolCalls {
			lines = append(lines, "assistant called "+call.Function.Name+"("+cutToolText(call.Function.Arguments)+")")
		}
		if text != "" {
			lines = append(lines, "assistant: "+text)
		}
	case run.RoleTool:
		lines = append(lines, "tool result: "+cutToolText(text))
	}
	return lines
}

// cutToolText cuts a tool text to ToolTextLimit characters, keeping its
// start and its last 400 characters.
func cutToolText(text string) string {
	runes := []rune(text)
	if len(runes) <= ToolTextLimit {
		return text
	}
	head := ToolTextLimit - toolTextTail - len([]rune(omitted))
	return string(runes[:head]) + omitted + string(runes[len(runes)-toolTextTail:])
}
