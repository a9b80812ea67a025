package claude_test

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/run"
)

// Environment of the scripted claude CLI the driver tests re-execute this
// binary as (fakeEnv set to a mode starting with "driver-").
const (
	// fakeLogEnv names the file the fake appends to: first a line
	// {"pid", "argv", "env"} per process, then every line it receives.
	fakeLogEnv = "AGNOGO_FAKE_CLAUDE_LOG"
	// fakeLinesEnv holds the lines (one per line) a "driver-lines" turn
	// plays after its init and prompt echo; their session_id is the
	// fake's.
	fakeLinesEnv = "AGNOGO_FAKE_CLAUDE_LINES"
	// fakeMissingEnv is how a CLI asked to resume a session it does not
	// have fails: "" as claude 2.1.332 does (an error result, a message on
	// stderr, status 1), "quiet" (the message and status only), or
	// "initialize-error" (a CLI that answers its initialize request with
	// the message as an error, and stays up).
	fakeMissingEnv = "AGNOGO_FAKE_CLAUDE_MISSING"
	// fakeSpeakEnv makes a "driver-crash" CLI answer before it crashes.
	fakeSpeakEnv = "AGNOGO_FAKE_CLAUDE_SPEAK"
	// fakeJSONEnv is the structured answer a turn with --json-schema
	// gives; {"name":"bob"} by default.
	fakeJSONEnv = "AGNOGO_FAKE_CLAUDE_JSON"
)

// freshSession is the id of the CLI session the fake starts when it is not
// asked to resume one.
const freshSession = "5f1e2d3c-4b5a-4978-8c6d-0e1f2a3b4c5d"

// turnCost is what one turn of the fake costs; its result reports the
// session's running totals, as the real CLI does.
const turnCost = 0.25

// pausedToolUse is the Bash call of a "driver-permission" turn.
const pausedToolUse = "toolu_fake_01"

// fakeDriverCLI plays claude 2.1.332 over stream-json with the control
// protocol, as the driver runs it (recorded behaviour: testdata/ and
// probes of the real CLI). It keeps its transcript where the CLI does
// (<CLAUDE_CONFIG_DIR>/projects/<cwd>/<session>.jsonl) and ends it with a
// cost-state line of the session's running totals; asked to --resume a
// session without a transcript it writes an error result, says "No
// conversation found with session ID: <id>" on stderr and exits 1. Modes:
//
//	driver-ok           a text answer; with --json-schema a Bash call, then the
//	                    StructuredOutput call and a result with structured_output;
//	                    with --include-partial-messages the text streams in deltas
//	driver-unstructured a text answer and no structured_output, whatever the flags
//	driver-lines        the lines of AGNOGO_FAKE_CLAUDE_LINES (a recorded failure;
//	                    a line that is not JSON is written as it is)
//	driver-hang         the turn never ends by itself; an interrupt ends it (a
//	                    prompt with [[bash]] makes a Bash call first)
//	driver-stubborn     the turn never ends; interrupts, EOF and SIGTERM are ignored
//	driver-permission   a hook_callback request, then a Bash call the CLI asks
//	                    permission for (can_use_tool); the answer decides the rest
//	driver-crash        as driver-ok, but a resumed session's turn dies (status 3)
//	                    after its init line (and an answer, with AGNOGO_FAKE_CLAUDE_SPEAK)
func fakeDriverCLI(mode string) int {
	log, err := os.OpenFile(os.Getenv(fakeLogEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer log.Close()
	f := &fakeCLIState{mode: mode, log: log, out: bufio.NewWriter(os.Stdout), model: "claude-opus-5-5", session: freshSession}
	f.start()
	f.in = bufio.NewScanner(os.Stdin)
	f.in.Buffer(make([]byte, 1<<20), 16<<20)
	if resume, ok := f.flag("resume"); ok {
		f.session = resume
		if _, err := os.Stat(f.transcript()); err != nil {
			missing := "No conversation found with session ID: " + resume
			// The real CLI reads no request: the driver's initialize is
			// read here only so that its write cannot race the exit.
			initialize, _ := f.receive()
			switch os.Getenv(fakeMissingEnv) {
			case "initialize-error":
				f.emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error",
					"request_id": initialize["request_id"], "error": missing}})
				for _, ok := f.receive(); ok; _, ok = f.receive() {
				}
				return 0
			case "":
				f.emit(map[string]any{"type": "result", "subtype": "error_during_execution", "duration_ms": 0, "duration_api_ms": 0,
					"is_error": true, "num_turns": 0, "stop_reason": nil, "session_id": resume, "total_cost_usd": 0,
					"usage": usage(0, 0), "modelUsage": map[string]any{}, "permission_denials": []any{}, "uuid": run.NewUUID(),
					"errors": []string{missing}})
			}
			fmt.Fprintln(os.Stderr, missing)
			return 1
		}
		f.totals = lastCostState(f.transcript())
		f.resumed = true
	}
	if mode == "driver-stubborn" {
		signalIgnore()
	}
	for {
		msg, ok := f.receive()
		if !ok {
			break
		}
		switch msg["type"] {
		case "control_request":
			f.control(msg)
		case "user":
			if f.mode == "driver-crash" && f.resumed {
				return f.crash(msg)
			}
			f.turn(msg)
		}
	}
	if mode == "driver-stubborn" {
		time.Sleep(time.Hour) // not a wait: this fake CLI hangs until it is killed
	}
	return 0
}

// fakeCLIState is one fake CLI process.
type fakeCLIState struct {
	mode    string
	log     *os.File
	out     *bufio.Writer
	in      *bufio.Scanner
	model   string
	session string
	cwd     string
	// parent is the uuid of the transcript's last message.
	parent string
	// totals are the session's running totals.
	totals claude.CostState
	// inFlight is set while a hanging turn waits for its interrupt.
	inFlight bool
	// resumed is set when the CLI resumed a session.
	resumed bool
}

// crash starts a turn, answers when fakeSpeakEnv says so, and dies.
func (f *fakeCLIState) crash(msg map[string]any) int {
	f.emit(map[string]any{"type": "system", "subtype": "init", "cwd": f.cwd, "session_id": f.session, "model": f.model,
		"claude_code_version": "2.1.332", "uuid": run.NewUUID()})
	f.emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": promptText(msg)}, "session_id": f.session,
		"parent_tool_use_id": nil, "uuid": run.NewUUID(), "isReplay": true})
	if os.Getenv(fakeSpeakEnv) != "" {
		f.message("assistant", []any{map[string]any{"type": "text", "text": "Let me see"}}, nil)
	}
	fmt.Fprintln(os.Stderr, "panic: out of cheese")
	return 3
}

// start records the process: its pid, arguments and environment.
func (f *fakeCLIState) start() {
	cwd, _ := os.Getwd()
	if resolved, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = resolved // the CLI works in the physical directory
	}
	f.cwd = cwd
	if model, ok := f.flag("model"); ok {
		f.model = model
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		key, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(key, "CLAUDE_") || strings.HasPrefix(key, "AGNOGO_TEST_") {
			env[key] = value
		}
	}
	record, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "argv": os.Args, "env": env})
	fmt.Fprintf(f.log, "%s\n", record)
}

// flag returns the value of --name=value, or whether --name is given.
func (f *fakeCLIState) flag(name string) (string, bool) {
	for _, arg := range os.Args[1:] {
		if arg == "--"+name {
			return "", true
		}
		if value, ok := strings.CutPrefix(arg, "--"+name+"="); ok {
			return value, true
		}
	}
	return "", false
}

// receive reads and logs the next input line that is a JSON object.
func (f *fakeCLIState) receive() (map[string]any, bool) {
	for f.in.Scan() {
		fmt.Fprintf(f.log, "%s\n", f.in.Bytes())
		var msg map[string]any
		if json.Unmarshal(f.in.Bytes(), &msg) == nil {
			return msg, true
		}
	}
	return nil, false
}

// emit writes one output line.
func (f *fakeCLIState) emit(line map[string]any) {
	data, _ := json.Marshal(line)
	f.out.Write(append(data, '\n'))
	f.out.Flush()
}

// respond answers a control request of the driver.
func (f *fakeCLIState) respond(id any, response map[string]any) {
	f.emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": id, "response": response}})
}

// control answers the driver's control requests.
func (f *fakeCLIState) control(msg map[string]any) {
	request, _ := msg["request"].(map[string]any)
	id := msg["request_id"]
	switch request["subtype"] {
	case "initialize":
		f.respond(id, map[string]any{"commands": []any{}, "claude_code_version": "2.1.332", "models": []any{}})
	case "interrupt":
		if f.mode == "driver-stubborn" {
			return // never answers
		}
		f.respond(id, map[string]any{"still_queued": []any{}})
		if f.inFlight {
			f.inFlight = false
			f.message("user", []any{map[string]any{"type": "text", "text": "[Request interrupted by user]"}}, nil)
			f.result("", map[string]any{"subtype": "error_during_execution", "is_error": true, "terminal_reason": "aborted_streaming",
				"stop_reason": nil, "errors": []string{"[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"}})
		}
	default:
		f.emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error", "request_id": id,
			"error": fmt.Sprintf("Unsupported control request subtype: %v", request["subtype"]), "error_code": "unsupported_request"}})
	}
}

// turn plays one turn for a user message.
func (f *fakeCLIState) turn(msg map[string]any) {
	prompt := promptText(msg)
	permissionMode, _ := f.flag("permission-mode")
	f.emit(map[string]any{"type": "system", "subtype": "init", "cwd": f.cwd, "session_id": f.session,
		"tools": []string{"Task", "Bash", "Edit", "Read", "Write"}, "mcp_servers": []any{}, "model": f.model,
		"permissionMode": cmp.Or(permissionMode, "default"), "apiKeySource": "ANTHROPIC_API_KEY",
		"claude_code_version": "2.1.332", "output_style": "default", "uuid": run.NewUUID()})
	uuid := run.NewUUID()
	f.record(map[string]any{"parentUuid": nullable(f.parent), "isSidechain": false, "type": "user",
		"message": map[string]any{"role": "user", "content": prompt}, "uuid": uuid, "promptSource": "sdk"})
	if _, ok := f.flag("replay-user-messages"); ok {
		f.emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}, "session_id": f.session,
			"parent_tool_use_id": nil, "uuid": uuid, "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "isReplay": true})
	}
	_, schema := f.flag("json-schema")
	switch f.mode {
	case "driver-lines":
		for line := range strings.Lines(os.Getenv(fakeLinesEnv)) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				f.out.WriteString(strings.TrimSuffix(line, "\n") + "\n") // garbled, as it is
				f.out.Flush()
				continue
			}
			if _, ok := m["session_id"]; ok {
				m["session_id"] = f.session
			}
			f.emit(m)
		}
	case "driver-hang", "driver-stubborn":
		if strings.Contains(prompt, "[[bash]]") {
			f.message("assistant", []any{map[string]any{"type": "tool_use", "id": "toolu_fake_hang", "name": "Bash",
				"input": map[string]any{"command": "echo before-the-hang"}}}, map[string]any{"id": "msg_fake_hang"})
			f.message("user", []any{map[string]any{"tool_use_id": "toolu_fake_hang", "type": "tool_result", "content": "before-the-hang", "is_error": false}}, nil)
		}
		f.message("assistant", []any{map[string]any{"type": "text", "text": "thinking…"}}, nil)
		f.inFlight = true
	case "driver-permission":
		f.permission()
	case "driver-ok":
		if schema {
			f.structured()
			return
		}
		fallthrough
	default:
		f.answer("fake-answer: " + prompt)
		f.result("fake-answer: "+prompt, nil)
	}
}

// answer writes the assistant's text: whole, or (with
// --include-partial-messages) in deltas first.
func (f *fakeCLIState) answer(text string) {
	id := "msg_fake_" + strconv.Itoa(os.Getpid())
	if _, ok := f.flag("include-partial-messages"); ok {
		stream := func(event map[string]any) {
			f.emit(map[string]any{"type": "stream_event", "event": event, "session_id": f.session, "parent_tool_use_id": nil,
				"uuid": run.NewUUID(), "api_message_id": id})
		}
		stream(map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": f.model,
			"content": []any{}, "usage": usage(100, 1)}})
		stream(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for word := range strings.SplitAfterSeq(text, " ") {
			stream(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": word}})
		}
		f.message("assistant", []any{map[string]any{"type": "text", "text": text}}, map[string]any{"id": id})
		stream(map[string]any{"type": "content_block_stop", "index": 0})
		stream(map[string]any{"type": "message_stop"})
		return
	}
	f.message("assistant", []any{map[string]any{"type": "text", "text": text}}, map[string]any{"id": id})
}

// structured answers a --json-schema turn as the CLI does: narration, a
// tool call, then the answer as the StructuredOutput tool's input.
func (f *fakeCLIState) structured() {
	answer := json.RawMessage(cmp.Or(os.Getenv(fakeJSONEnv), `{"name":"bob"}`))
	f.message("assistant", []any{map[string]any{"type": "text", "text": "Let me look that up."}}, nil)
	f.message("assistant", []any{map[string]any{"type": "tool_use", "id": "toolu_fake_bash", "name": "Bash",
		"input": map[string]any{"command": "echo bob", "description": "fake model runs a command"}}}, map[string]any{"id": "msg_fake_1"})
	f.message("user", []any{map[string]any{"tool_use_id": "toolu_fake_bash", "type": "tool_result", "content": "bob", "is_error": false}}, nil)
	f.message("assistant", []any{map[string]any{"type": "tool_use", "id": "toolu_fake_so", "name": "StructuredOutput", "input": answer}},
		map[string]any{"id": "msg_fake_2"})
	f.message("user", []any{map[string]any{"tool_use_id": "toolu_fake_so", "type": "tool_result", "content": "Structured output provided successfully"}}, nil)
	f.result(string(answer), map[string]any{"structured_output": answer, "stop_reason": "tool_use"})
}

// permission plays a turn whose Bash call the CLI asks the driver about.
func (f *fakeCLIState) permission() {
	input := map[string]any{"command": "touch made-by-bash", "description": "fake model runs a command"}
	f.message("assistant", []any{map[string]any{"type": "tool_use", "id": pausedToolUse, "name": "Bash", "input": input}}, map[string]any{"id": "msg_fake_1"})
	// A request that is not a permission prompt, as a hook would send.
	f.emit(map[string]any{"type": "control_request", "request_id": "hook-req-1", "request": map[string]any{"subtype": "hook_callback",
		"callback_id": "hook_0", "input": map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash"}, "tool_use_id": pausedToolUse}})
	f.await("hook-req-1")
	f.emit(map[string]any{"type": "control_request", "request_id": "perm-req-1", "request": map[string]any{"subtype": "can_use_tool",
		"tool_name": "Bash", "display_name": "Bash", "input": input, "description": "fake model runs a command",
		"permission_suggestions": []any{map[string]any{"type": "addRules", "rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "touch made-by-bash *"}},
			"behavior": "allow", "destination": "localSettings"}},
		"blocked_path": filepath.Join(f.cwd, "made-by-bash"), "tool_use_id": pausedToolUse}})
	answer := f.await("perm-req-1")
	switch {
	case answer["behavior"] == "allow":
		output := "(Bash completed with no output)"
		if updated, _ := answer["updatedInput"].(map[string]any); updated["command"] != input["command"] {
			output = fmt.Sprintf("ran %v", updated["command"])
		}
		f.message("user", []any{map[string]any{"tool_use_id": pausedToolUse, "type": "tool_result", "content": output, "is_error": false}}, nil)
		f.answer("fake-final: " + output)
		f.result("fake-final: "+output, nil)
	case answer["interrupt"] == true:
		f.message("user", []any{map[string]any{"type": "tool_result", "tool_use_id": pausedToolUse, "is_error": true,
			"content": "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."}}, nil)
		f.message("user", []any{map[string]any{"type": "text", "text": "[Request interrupted by user for tool use]"}}, nil)
		f.result("", map[string]any{"subtype": "error_during_execution", "is_error": true, "terminal_reason": "aborted_tools", "stop_reason": "tool_use",
			"permission_denials": []any{map[string]any{"tool_name": "Bash", "tool_use_id": pausedToolUse, "tool_input": input}},
			"errors":             []string{"[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"}})
	default:
		message, _ := answer["message"].(string)
		f.message("user", []any{map[string]any{"type": "tool_result", "content": message, "is_error": true, "tool_use_id": pausedToolUse}}, nil)
		f.answer("fake-final: " + message)
		f.result("fake-final: "+message, map[string]any{
			"permission_denials": []any{map[string]any{"tool_name": "Bash", "tool_use_id": pausedToolUse, "tool_input": input}}})
	}
}

// await reads the input until the driver's answer to a control request
// and returns its payload; the CLI echoes the answer, as the real one does
// with --replay-user-messages.
func (f *fakeCLIState) await(requestID string) map[string]any {
	for {
		msg, ok := f.receive()
		if !ok {
			return nil
		}
		response, _ := msg["response"].(map[string]any)
		if msg["type"] != "control_response" || response["request_id"] != requestID {
			continue
		}
		if _, ok := f.flag("replay-user-messages"); ok {
			f.emit(msg)
		}
		payload, _ := response["response"].(map[string]any)
		return payload
	}
}

// message writes an assistant or user line of the turn and its transcript
// entry.
func (f *fakeCLIState) message(role string, content []any, fields map[string]any) {
	uuid := run.NewUUID()
	message := map[string]any{"role": role, "content": content}
	if role == "assistant" {
		message["type"], message["model"], message["usage"] = "message", f.model, usage(100, 1)
		message["id"] = "msg_fake_" + uuid[:8]
	}
	maps.Copy(message, fields)
	// Written to the transcript before it is sent, as the CLI does.
	f.record(map[string]any{"parentUuid": nullable(f.parent), "isSidechain": false, "type": role, "message": message, "uuid": uuid})
	f.emit(map[string]any{"type": role, "message": message, "parent_tool_use_id": nil, "session_id": f.session, "uuid": uuid})
}

// result ends the turn: the transcript's cost-state line, then the result
// line with the session's running totals.
func (f *fakeCLIState) result(text string, fields map[string]any) {
	f.totals.TotalCostUSD += turnCost
	if f.totals.ModelUsage == nil {
		f.totals.ModelUsage = map[string]claude.ModelUsage{}
	}
	mu := f.totals.ModelUsage[f.model]
	mu.InputTokens, mu.OutputTokens, mu.CostUSD, mu.ContextWindow = mu.InputTokens+100, mu.OutputTokens+10, mu.CostUSD+turnCost, 200000
	f.totals.ModelUsage[f.model] = mu
	f.record(map[string]any{"type": "cost-state", "totalCostUSD": f.totals.TotalCostUSD, "modelUsage": f.totals.ModelUsage,
		"totalAPIDuration": 8, "totalDuration": 12})
	line := map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": 12, "duration_api_ms": 8,
		"num_turns": 1, "result": text, "stop_reason": "end_turn", "session_id": f.session, "total_cost_usd": f.totals.TotalCostUSD,
		"usage": usage(100, 10), "modelUsage": f.totals.ModelUsage, "permission_denials": []any{}, "terminal_reason": "completed",
		"api_error_status": nil, "uuid": run.NewUUID()}
	if fields["is_error"] == true {
		delete(line, "result")
	}
	maps.Copy(line, fields)
	f.emit(line)
}

// transcript is the session's transcript file, where the CLI keeps it.
func (f *fakeCLIState) transcript() string {
	return filepath.Join(os.Getenv("CLAUDE_CONFIG_DIR"), "projects", fakeProjectName(f.cwd), f.session+".jsonl")
}

// record appends an entry to the transcript.
func (f *fakeCLIState) record(entry map[string]any) {
	entry["sessionId"] = f.session
	if entry["type"] != "cost-state" {
		entry["timestamp"], entry["cwd"], entry["version"], entry["entrypoint"] = time.Now().UTC().Format(time.RFC3339Nano), f.cwd, "2.1.332", "sdk-cli"
		f.parent, _ = entry["uuid"].(string)
	}
	_ = os.MkdirAll(filepath.Dir(f.transcript()), 0o700)
	file, err := os.OpenFile(f.transcript(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer file.Close()
	data, _ := json.Marshal(entry)
	file.Write(append(data, '\n'))
}

// fakeProjectName encodes a cwd as the CLI does (UTF-16 code units that
// are not ASCII letters or digits become "-"; short paths only).
func fakeProjectName(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	name := make([]byte, len(units))
	for i, u := range units {
		if u < 128 && (u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9') {
			name[i] = byte(u)
		} else {
			name[i] = '-'
		}
	}
	return string(name)
}

// lastCostState reads the running totals of a transcript's last
// cost-state line.
func lastCostState(path string) claude.CostState {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return claude.CostState{}
	}
	var state claude.CostState
	for line := range strings.Lines(string(data)) {
		var entry struct {
			Type string `json:"type"`
			claude.CostState
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Type == "cost-state" {
			state = entry.CostState
		}
	}
	return state
}

// promptText is the text of a user message the driver sent.
func promptText(msg map[string]any) string {
	message, _ := msg["message"].(map[string]any)
	switch content := message["content"].(type) {
	case string:
		return content
	case []any:
		var text strings.Builder
		for _, block := range content {
			b, _ := block.(map[string]any)
			s, _ := b["text"].(string)
			text.WriteString(s)
		}
		return text.String()
	}
	return ""
}

// usage is a usage object.
func usage(input, output int) map[string]any {
	return map[string]any{"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": output}
}

// nullable is s, or null when empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
