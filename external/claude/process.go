package claude

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/agnogo/agnogo/external"
)

// ErrCLINotFound: the claude binary is not where the agent was told, nor on
// PATH. Never retried.
var ErrCLINotFound = errors.New("claude CLI not found")

// ErrExited: the CLI exited before the turn's result.
var ErrExited = errors.New("claude CLI exited")

// DefaultCloseGrace is how long Close waits for the CLI to exit after its
// input closed, before killing its process group.
const DefaultCloseGrace = external.DefaultCloseGrace

// ProcessConfig starts a CLI process.
type ProcessConfig struct {
	// Bin is the claude binary: a path, or a name looked up on PATH.
	// Defaults to "claude".
	Bin string
	// Dir is the working directory.
	Dir string
	// Env is the process environment, as "KEY=value" strings. Nil means
	// this process's environment.
	Env []string
	// Args are the flags after the protocol's own (--output-format
	// stream-json --verbose --input-format stream-json), such as --model=…,
	// --permission-mode=…, --resume=…; pass values as --flag=value so a
	// value cannot read as a flag.
	Args []string
	// CloseGrace is how long [Process.Close] waits for the CLI to exit.
	// Defaults to [DefaultCloseGrace].
	CloseGrace time.Duration
}

// Process is a running claude CLI speaking stream-json on its standard
// input and output, with the control protocol: one process is one CLI
// session, which can take several turns. Its methods are safe for
// concurrent use; one turn is read at a time.
type Process struct {
	child *external.Child

	calls external.Calls[Line] // control responses awaited, by request number

	lines chan Line
}

// StartProcess starts the CLI. ctx bounds only the start; [Process.Close]
// ends the process.
func StartProcess(ctx context.Context, cfg ProcessConfig) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &Process{lines: make(chan Line, 64)}
	child, err := external.StartChild(external.ChildConfig{
		Bin:        cmp.Or(cfg.Bin, "claude"),
		Args:       append([]string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, cfg.Args...),
		Dir:        cfg.Dir,
		Env:        cfg.Env,
		CloseGrace: cfg.CloseGrace,
		NotFound:   ErrCLINotFound,
		Exited:     ErrExited,
		OnLine:     p.take,
		OnExit:     p.ended,
	})
	if err != nil {
		return nil, fmt.Errorf("claude: %w", err)
	}
	p.child = child
	return p, nil
}

// take routes one output line: a control response to the request awaiting
// it, anything else to the turn being read. A line the CLI garbled is
// passed on as Type "invalid"; the turn goes on.
func (p *Process) take(data []byte) {
	line, err := ParseLine(data)
	if err != nil {
		line = Line{Type: "invalid", Error: err.Error(), Raw: append(json.RawMessage(nil), data...)}
	}
	if line.Type == LineControlResponse && p.deliver(line) {
		return
	}
	p.lines <- line
}

// ended closes the turn and fails the control requests still awaited.
func (p *Process) ended(error) {
	close(p.lines)
	p.calls.Close()
}

// requestPrefix starts the ids of agnogo's control requests: req_1, req_2…
const requestPrefix = "req_"

// deliver hands a control response to the request awaiting it.
func (p *Process) deliver(line Line) bool {
	var envelope struct {
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(line.Response, &envelope) != nil {
		return false
	}
	n, ok := strings.CutPrefix(envelope.RequestID, requestPrefix)
	if !ok {
		return false
	}
	id, err := strconv.ParseInt(n, 10, 64)
	return err == nil && p.calls.Answer(id, line)
}

// write sends one JSON line to the CLI.
func (p *Process) write(value any) error {
	if err := p.child.WriteJSON(value); err != nil {
		return fmt.Errorf("claude: %w", err)
	}
	return nil
}

// ControlError is a control request the CLI answered with an error.
type ControlError struct {
	Subtype, Message, Code string
}

// Error implements error.
func (e *ControlError) Error() string {
	return fmt.Sprintf("claude: control request %s failed: %s (%s)", e.Subtype, e.Message, e.Code)
}

// Control sends a control request (its subtype and fields) and returns the
// CLI's response payload.
func (p *Process) Control(ctx context.Context, subtype string, fields map[string]any) (json.RawMessage, error) {
	request := map[string]any{"subtype": subtype}
	for k, v := range fields {
		request[k] = v
	}
	line, err := p.calls.Do(ctx, func(id int64) error {
		return p.write(map[string]any{"type": LineControlRequest, "request_id": requestPrefix + strconv.FormatInt(id, 10), "request": request})
	})
	switch {
	case errors.Is(err, external.ErrCallsClosed):
		return nil, p.child.Err()
	case err != nil:
		return nil, err
	}
	var response struct {
		Subtype   string          `json:"subtype"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
		ErrorCode string          `json:"error_code"`
	}
	if err := json.Unmarshal(line.Response, &response); err != nil {
		return nil, fmt.Errorf("claude: unreadable control response: %w", err)
	}
	if response.Subtype != "success" {
		return nil, &ControlError{Subtype: subtype, Message: response.Error, Code: response.ErrorCode}
	}
	return response.Response, nil
}

// Initialize opens the control protocol and returns the CLI's description
// of itself (commands, models, account, version).
func (p *Process) Initialize(ctx context.Context) (json.RawMessage, error) {
	return p.Control(ctx, "initialize", map[string]any{"hooks": nil})
}

// Interrupt stops the turn in flight; the turn then ends with a result of
// subtype error_during_execution, and the process takes the next turn.
func (p *Process) Interrupt(ctx context.Context) error {
	_, err := p.Control(ctx, "interrupt", nil)
	return err
}

// Respond answers a control request the CLI sent (can_use_tool, …).
func (p *Process) Respond(requestID string, response any) error {
	return p.write(map[string]any{"type": LineControlResponse,
		"response": map[string]any{"subtype": "success", "request_id": requestID, "response": response}})
}

// Send starts a turn with a user message: text, or content blocks.
func (p *Process) Send(content any) error {
	return p.write(map[string]any{"type": LineUser, "message": map[string]any{"role": "user", "content": content},
		"parent_tool_use_id": nil, "session_id": "default"})
}

// Turn yields the CLI's lines until the turn's result line, which it
// yields last. Control requests from the CLI are yielded too, for the
// caller to answer with [Process.Respond]. A garbled line is yielded with
// Type "invalid" and its parse error in Error. If the CLI exits first, the
// sequence ends with an error wrapping [ErrExited] and the end of its
// stderr; if ctx ends, with ctx's error.
func (p *Process) Turn(ctx context.Context) iter.Seq2[Line, error] {
	return external.Follow(ctx, p.lines, p.child.Err, Line.IsResult)
}

// Close ends the process: its input is closed, which ends the CLI, and
// after a grace period its whole process group is killed. It waits until
// the process is reaped.
func (p *Process) Close() error {
	p.child.Close()
	// Drain what nobody read.
	for range p.lines {
	}
	return nil
}

// Kill kills the CLI's process group at once.
func (p *Process) Kill() { p.child.Kill() }

// Exited is closed once the CLI has exited.
func (p *Process) Exited() <-chan struct{} { return p.child.Exited() }
