package fakeanthropic

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Directed mode answers every request from directives in the conversation's
// latest user text instead of the queue, which only a client that sends
// exactly the requests a test expects can use. A CLI such as Claude Code
// also sends requests of its own (titles, checks), and replays the whole
// conversation on every turn; a directed reply depends only on the request,
// so those do not disturb the script. Enqueued replies still go first.
//
// Directives, [[name:value]], in the latest user text (a <system-reminder>
// block does not count):
//
//	[[bash:echo hi]]          first reply: tool_use Bash {"command": "echo hi"}
//	[[write:path|content]]    first reply: tool_use Write {"file_path", "content"}
//	[[tool:Name|{json}]]      first reply: tool_use Name with that input
//	[[say:words]]             with a tool directive: text before the tool_use
//	[[sleep:2.5]]             wait that many seconds before the answer's blocks
//	[[text:words]]            the final answer (default "fake-answer: <prompt>")
//	[[error:529]]             fail with that HTTP status
//	[[json:{...}]]            the StructuredOutput tool's input, when the
//	                          request declares that tool (claude --json-schema)
//
// A prompt without directives saying "approved your call to Name
// (tool_use_id id)" makes that earlier call again, as a model told of the
// user's approval does.
//
// Once the last message carries tool results, the answer is
// "fake-final: <results>", so a test sees the tool really ran.

// directive matches one [[name:value]].
var directive = regexp.MustCompile(`(?s)\[\[(\w+):(.*?)\]\]`)

// Directed switches the server to directed mode.
func (s *Server) Directed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.directed = true
}

// WithDelay returns a copy of r that waits d after message_start before
// streaming its blocks (a non-streaming request waits d before the answer).
// A client that goes away meanwhile counts as a disconnect.
func (r Reply) WithDelay(d time.Duration) Reply {
	r.delay = d
	return r
}

// directedReply is the reply the directives of body's conversation ask for.
func directedReply(body map[string]any) Reply {
	messages, _ := body["messages"].([]any)
	promptAt, prompt := latestPrompt(messages)
	found := map[string]string{}
	// The last of a directive wins: a prompt seeded with the conversation
	// so far quotes earlier prompts' directives before its own.
	for _, m := range directive.FindAllStringSubmatch(prompt, -1) {
		found[m[1]] = m[2]
	}
	if code, ok := found["error"]; ok {
		status, err := strconv.Atoi(code)
		if err != nil || status < 400 {
			status = http.StatusInternalServerError
		}
		return HTTPError(status, errorTypeForStatus(status), fmt.Sprintf("fake error %d", status))
	}
	var delay time.Duration
	if seconds, err := strconv.ParseFloat(found["sleep"], 64); err == nil && seconds > 0 {
		delay = time.Duration(seconds * float64(time.Second))
	}
	results := lastToolResults(messages)
	used := toolsUsedSince(messages, promptAt)

	var call *Block
	switch {
	case found["bash"] != "":
		input, _ := json.Marshal(map[string]string{"command": found["bash"], "description": "fake model runs a command"})
		call = &Block{Type: BlockToolUse, Name: "Bash", Input: string(input)}
	case found["write"] != "":
		path, content, _ := strings.Cut(found["write"], "|")
		input, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
		call = &Block{Type: BlockToolUse, Name: "Write", Input: string(input)}
	case found["tool"] != "":
		name, input, _ := strings.Cut(found["tool"], "|")
		call = &Block{Type: BlockToolUse, Name: name, Input: strings.TrimSpace(input)}
	default:
		call = approvedCall(messages, prompt)
	}
	if call != nil && len(results) == 0 && !used[call.Name] {
		var blocks []Block
		if say, ok := found["say"]; ok {
			blocks = append(blocks, TextBlock(say))
		}
		return Message(append(blocks, *call)...)
	}
	if declaresTool(body, "StructuredOutput") && !used["StructuredOutput"] {
		return ToolUse("StructuredOutput", cmp.Or(strings.TrimSpace(found["json"]), "{}"))
	}
	text := found["text"]
	switch {
	case len(results) > 0:
		text = "fake-final: " + strings.Join(results, " | ")
	case text == "":
		text = "fake-answer: " + truncate(strings.TrimSpace(directive.ReplaceAllString(prompt, "")), 200)
	}
	return Text(text).WithDelay(delay)
}

// latestPrompt returns the index and text of the latest user text block that
// is not a <system-reminder>.
func latestPrompt(messages []any) (int, string) {
	for i := len(messages) - 1; i >= 0; i-- {
		m, _ := messages[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		blocks := contentBlocks(m["content"])
		for j := len(blocks) - 1; j >= 0; j-- {
			if blocks[j]["type"] != "text" {
				continue
			}
			text, _ := blocks[j]["text"].(string)
			if strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>") {
				continue
			}
			return i, text
		}
	}
	return -1, ""
}

// contentBlocks reads a message's content as blocks; a string is one text
// block.
func contentBlocks(content any) []map[string]any {
	if text, ok := content.(string); ok {
		return []map[string]any{{"type": "text", "text": text}}
	}
	list, _ := content.([]any)
	blocks := make([]map[string]any, 0, len(list))
	for _, item := range list {
		if block, ok := item.(map[string]any); ok {
			blocks = append(blocks, block)
		}
	}
	return blocks
}

// lastToolResults returns the texts of the tool_result blocks of the last
// message, when it is a user message.
func lastToolResults(messages []any) []string {
	if len(messages) == 0 {
		return nil
	}
	last, _ := messages[len(messages)-1].(map[string]any)
	if last["role"] != "user" {
		return nil
	}
	if _, isText := last["content"].(string); isText {
		return nil
	}
	var results []string
	for _, block := range contentBlocks(last["content"]) {
		if block["type"] != "tool_result" {
			continue
		}
		var text string
		switch c := block["content"].(type) {
		case string:
			text = c
		default:
			for _, part := range contentBlocks(c) {
				if s, ok := part["text"].(string); ok {
					text += s
				}
			}
		}
		results = append(results, strings.TrimSpace(reminder.ReplaceAllString(text, "")))
	}
	return results
}

// approval matches a prompt telling the model the user approved a call
// it made before ("approved your call to Write (tool_use_id toolu_…)").
var approval = regexp.MustCompile(`approved your call to (\w+) \(tool_use_id ([^)\s]+)\)`)

// approvedCall is the call a prompt says the user approved, made again
// with the same input — what a cooperative model does; nil for any other
// prompt.
func approvedCall(messages []any, prompt string) *Block {
	m := approval.FindStringSubmatch(prompt)
	if m == nil {
		return nil
	}
	for _, msg := range messages {
		message, _ := msg.(map[string]any)
		if message["role"] != "assistant" {
			continue
		}
		for _, block := range contentBlocks(message["content"]) {
			if block["type"] == "tool_use" && block["id"] == m[2] && block["name"] == m[1] {
				input, _ := json.Marshal(block["input"])
				return &Block{Type: BlockToolUse, Name: m[1], Input: string(input)}
			}
		}
	}
	return nil
}

// reminder matches a <system-reminder> block the CLI adds to a tool
// result; the fake's answer leaves it out.
var reminder = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)

// toolsUsedSince returns the tools the assistant called after message at.
func toolsUsedSince(messages []any, at int) map[string]bool {
	used := map[string]bool{}
	for i := at + 1; i < len(messages); i++ {
		m, _ := messages[i].(map[string]any)
		if m["role"] != "assistant" {
			continue
		}
		for _, block := range contentBlocks(m["content"]) {
			if block["type"] == "tool_use" {
				name, _ := block["name"].(string)
				used[name] = true
			}
		}
	}
	return used
}

// declaresTool reports whether the request offers a tool named name.
func declaresTool(body map[string]any, name string) bool {
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		if tool, ok := t.(map[string]any); ok && tool["name"] == name {
			return true
		}
	}
	return false
}

// errorTypeForStatus is the error type the API uses for an HTTP status.
func errorTypeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// truncate cuts s to n runes.
func truncate(s string, n int) string {
	if runes := []rune(s); len(runes) > n {
		return string(runes[:n])
	}
	return s
}
