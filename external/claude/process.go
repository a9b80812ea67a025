package claude

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrCLINotFound: the claude binary is not where the agent was told, nor on
// PATH. Never retried.
var ErrCLINotFound = errors.New("claude CLI not found")

// ErrExited: the CLI exited before the turn's result.
var ErrExited = errors.New("claude CLI exited")

// Process timeouts.
const (
	// DefaultCloseGrace is how long Close waits for the CLI to exit after its
	// input closed, before killing its process group.
	DefaultCloseGrace = 5 * time.Second
	// stderrLimit bounds the stderr kept for error messages.
	stderrLimit = 8 << 10
)

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
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	grace  time.Duration

	writeMu sync.Mutex
	mu      sync.Mutex
	nextID  int
	pending map[string]chan Line // control responses awaited, by request id

	lines  chan Line
	exited chan struct{} // closed once the CLI exited and its output was read
	err    error         // why the output ended; read after exited closes
}

// StartProcess starts the CLI. ctx bounds only the start; [Process.Close]
// ends the process.
func StartProcess(ctx context.Context, cfg ProcessConfig) (*Process, error) {
	bin := cfg.Bin
	if bin == "" {
		bin = "claude"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCLINotFound, bin, err)
	}
	args := append([]string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, cfg.Args...)
	cmd := exec.Command(path, args...)
	cmd.Dir = cfg.Dir
	cmd.Env = cfg.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its children are reaped with it
	p := &Process{cmd: cmd, stderr: &tailBuffer{limit: stderrLimit}, grace: cmp.Or(cfg.CloseGrace, DefaultCloseGrace), pending: map[string]chan Line{},
		lines: make(chan Line, 64), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("claude: %w", err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("claude: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s: %w", ErrCLINotFound, path, err)
		}
		return nil, fmt.Errorf("claude: start %s: %w", path, err)
	}
	go p.read(stdout)
	return p, nil
}

// read passes the CLI's output lines on until it ends, then reaps it.
func (p *Process) read(stdout io.Reader) {
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 64<<10), 64<<20)
	var readErr error
	for scanner.Scan() {
		if len(strings.TrimSpace(scanner.Text())) == 0 {
			continue
		}
		line, err := ParseLine(scanner.Bytes())
		if err != nil {
			// A line the CLI garbled is reported and skipped; the turn
			// goes on.
			line = Line{Type: "invalid", Error: err.Error(), Raw: append(json.RawMessage(nil), scanner.Bytes()...)}
		}
		if line.Type == LineControlResponse && p.deliver(line) {
			continue
		}
		p.lines <- line
	}
	readErr = scanner.Err()
	waitErr := p.cmd.Wait()
	p.err = p.exitError(errors.Join(readErr, waitErr))
	close(p.lines)
	p.mu.Lock()
	for id, ch := range p.pending {
		close(ch)
		delete(p.pending, id)
	}
	p.mu.Unlock()
	close(p.exited)
}

// exitError describes how the CLI ended, with the end of its stderr.
func (p *Process) exitError(err error) error {
	detail := strings.TrimSpace(p.stderr.String())
	if detail != "" {
		detail = ": " + detail
	}
	if err == nil {
		return fmt.Errorf("%w (status 0)%s", ErrExited, detail)
	}
	return fmt.Errorf("%w: %w%s", ErrExited, err, detail)
}

// deliver hands a control response to the request awaiting it.
func (p *Process) deliver(line Line) bool {
	var envelope struct {
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(line.Response, &envelope) != nil {
		return false
	}
	p.mu.Lock()
	ch, ok := p.pending[envelope.RequestID]
	delete(p.pending, envelope.RequestID)
	p.mu.Unlock()
	if ok {
		ch <- line
	}
	return ok
}

// write sends one JSON line to the CLI.
func (p *Process) write(value any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("claude: %w", err)
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if _, err := p.stdin.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("claude: write to the CLI: %w", err)
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
	p.mu.Lock()
	p.nextID++
	id := "req_" + strconv.Itoa(p.nextID)
	ch := make(chan Line, 1)
	p.pending[id] = ch
	p.mu.Unlock()
	request := map[string]any{"subtype": subtype}
	for k, v := range fields {
		request[k] = v
	}
	if err := p.write(map[string]any{"type": LineControlRequest, "request_id": id, "request": request}); err != nil {
		p.forget(id)
		return nil, err
	}
	select {
	case <-ctx.Done():
		p.forget(id)
		return nil, ctx.Err()
	case line, ok := <-ch:
		if !ok {
			<-p.exited
			return nil, p.err
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
}

// forget drops an awaited control response.
func (p *Process) forget(id string) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
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
	return func(yield func(Line, error) bool) {
		for {
			select {
			case <-ctx.Done():
				yield(Line{}, ctx.Err())
				return
			case line, ok := <-p.lines:
				if !ok {
					<-p.exited
					yield(Line{}, p.err)
					return
				}
				if !yield(line, nil) || line.IsResult() {
					return
				}
			}
		}
	}
}

// Close ends the process: its input is closed, which ends the CLI, and
// after a grace period its whole process group is killed. It waits until
// the process is reaped.
func (p *Process) Close() error {
	p.writeMu.Lock()
	_ = p.stdin.Close()
	p.writeMu.Unlock()
	select {
	case <-p.exited:
	case <-time.After(p.grace):
		p.Kill()
		<-p.exited
	}
	// Drain what nobody read, so the reader could finish.
	for range p.lines {
	}
	return nil
}

// Kill kills the CLI's process group at once.
func (p *Process) Kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Exited is closed once the CLI has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	data  []byte
}

// Write implements io.Writer.
func (b *tailBuffer) Write(data []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = append(b.data, data...)
	if len(b.data) > b.limit {
		b.data = append([]byte(nil), b.data[len(b.data)-b.limit:]...)
	}
	return len(data), nil
}

// String returns what is kept.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.data)
}
