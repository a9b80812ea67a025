package codex

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrCLINotFound: the codex binary is not where the agent was told, nor on
// PATH. Never retried.
var ErrCLINotFound = errors.New("codex CLI not found")

// ErrExited: the app-server exited while a call or a turn waited on it.
var ErrExited = errors.New("codex app-server exited")

// DefaultCloseGrace is how long [Server.Close] waits for the app-server to
// exit after its input closed, before killing its process group.
const DefaultCloseGrace = 5 * time.Second

// stderrLimit bounds the stderr kept for error messages.
const stderrLimit = 8 << 10

// ServerConfig starts `codex app-server`.
type ServerConfig struct {
	// Bin is the codex binary: a path, or a name looked up on PATH.
	// Defaults to "codex".
	Bin string
	// Dir is the working directory.
	Dir string
	// Env is the process environment ("KEY=value"); nil means this
	// process's. CODEX_HOME in it selects the configuration and sessions.
	Env []string
	// Args are extra arguments after `app-server`, such as -c key=value.
	Args []string
	// CloseGrace defaults to [DefaultCloseGrace].
	CloseGrace time.Duration
}

// Message is one message the app-server sends: a notification (Method and
// Params), or a request of its own (ID too), such as an approval, which the
// client answers with [Server.Respond].
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// IsRequest reports whether the message is a request awaiting an answer.
func (m Message) IsRequest() bool { return len(m.ID) > 0 }

// RPCError is an error answer of the app-server.
type RPCError struct {
	Method  string
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("codex: %s failed: %s (code %d)", e.Method, e.Message, e.Code)
}

// Server is a running `codex app-server` spoken to over JSON-RPC on its
// standard input and output (one JSON object per line, no "jsonrpc"
// field). Its methods are safe for concurrent use.
type Server struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	grace  time.Duration

	writeMu sync.Mutex
	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply

	messages chan Message
	exited   chan struct{}
	err      error // read after exited closes
}

// reply is the answer to one call.
type reply struct {
	result json.RawMessage
	err    *RPCError
}

// StartServer starts `codex app-server`. ctx bounds only the start.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	bin := cmp.Or(cfg.Bin, "codex")
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCLINotFound, bin, err)
	}
	cmd := exec.Command(path, append([]string{"app-server"}, cfg.Args...)...)
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &Server{cmd: cmd, stderr: &tailBuffer{limit: stderrLimit}, grace: cmp.Or(cfg.CloseGrace, DefaultCloseGrace),
		pending: map[int64]chan reply{}, messages: make(chan Message, 256), exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %w", ErrCLINotFound, path, err)
		}
		return nil, fmt.Errorf("codex: start %s: %w", path, err)
	}
	go s.read(stdout)
	return s, nil
}

// read routes the app-server's lines: answers to the calls awaiting them,
// everything else to Messages.
func (s *Server) read(stdout io.Reader) {
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 64<<10), 64<<20)
	for scanner.Scan() {
		data := bytes.TrimSpace(scanner.Bytes())
		if len(data) == 0 {
			continue
		}
		var envelope struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *RPCError       `json:"error"`
		}
		if err := json.Unmarshal(data, &envelope); err != nil {
			s.messages <- Message{Method: "invalid", Params: mustJSON(map[string]string{"error": err.Error(), "line": clip(data)})}
			continue
		}
		if envelope.Method == "" && len(envelope.ID) > 0 {
			var id int64
			if json.Unmarshal(envelope.ID, &id) == nil {
				s.answer(id, reply{result: envelope.Result, err: envelope.Error})
			}
			continue
		}
		s.messages <- Message{ID: envelope.ID, Method: envelope.Method, Params: envelope.Params}
	}
	waitErr := s.cmd.Wait()
	detail := strings.TrimSpace(s.stderr.String())
	if detail != "" {
		detail = ": " + detail
	}
	if waitErr == nil {
		s.err = fmt.Errorf("%w (status 0)%s", ErrExited, detail)
	} else {
		s.err = fmt.Errorf("%w: %w%s", ErrExited, waitErr, detail)
	}
	close(s.messages)
	s.mu.Lock()
	for id, ch := range s.pending {
		close(ch)
		delete(s.pending, id)
	}
	s.mu.Unlock()
	close(s.exited)
}

// answer hands a call its reply.
func (s *Server) answer(id int64, r reply) {
	s.mu.Lock()
	ch, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if ok {
		ch <- r
	}
}

// write sends one JSON line.
func (s *Server) write(value any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("codex: %w", err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.stdin.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("codex: write to the app-server: %w", err)
	}
	return nil
}

// Call sends a request and waits for its result; an error answer is a
// [*RPCError].
func (s *Server) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	ch := make(chan reply, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	request := map[string]any{"id": id, "method": method}
	if params != nil {
		request["params"] = params
	}
	if err := s.write(request); err != nil {
		s.forget(id)
		return nil, err
	}
	select {
	case <-ctx.Done():
		s.forget(id)
		return nil, ctx.Err()
	case r, ok := <-ch:
		if !ok {
			<-s.exited
			return nil, s.err
		}
		if r.err != nil {
			r.err.Method = method
			return nil, r.err
		}
		return r.result, nil
	}
}

// forget drops an awaited reply.
func (s *Server) forget(id int64) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

// Notify sends a notification.
func (s *Server) Notify(method string, params any) error {
	notification := map[string]any{"method": method}
	if params != nil {
		notification["params"] = params
	}
	return s.write(notification)
}

// Respond answers a request of the app-server (an approval, …).
func (s *Server) Respond(id json.RawMessage, result any) error {
	return s.write(map[string]any{"id": id, "result": result})
}

// Initialize performs the handshake: initialize, then initialized.
func (s *Server) Initialize(ctx context.Context, clientName, version string) (json.RawMessage, error) {
	result, err := s.Call(ctx, "initialize", map[string]any{
		"clientInfo":   map[string]any{"name": clientName, "title": nil, "version": version},
		"capabilities": map[string]any{"experimentalApi": false, "requestAttestation": false},
	})
	if err != nil {
		return nil, err
	}
	return result, s.Notify("initialized", nil)
}

// Messages yields the app-server's notifications and requests until one for
// which stop returns true (yielded too), ctx ends, or the app-server exits
// (then an error wrapping [ErrExited] with the end of its stderr).
func (s *Server) Messages(ctx context.Context, stop func(Message) bool) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for {
			select {
			case <-ctx.Done():
				yield(Message{}, ctx.Err())
				return
			case m, ok := <-s.messages:
				if !ok {
					<-s.exited
					yield(Message{}, s.err)
					return
				}
				if !yield(m, nil) || (stop != nil && stop(m)) {
					return
				}
			}
		}
	}
}

// Close closes the app-server's input, waits up to the grace period for it
// to exit, then kills its process group; it returns once it is reaped.
func (s *Server) Close() error {
	s.writeMu.Lock()
	_ = s.stdin.Close()
	s.writeMu.Unlock()
	select {
	case <-s.exited:
	case <-time.After(s.grace):
		if s.cmd.Process != nil {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		<-s.exited
	}
	for range s.messages {
	}
	return nil
}

// Exited is closed once the app-server has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// mustJSON encodes a value that always encodes.
func mustJSON(v any) json.RawMessage {
	data, _ := json.Marshal(v)
	return data
}

// clip shortens a line for a message.
func clip(data []byte) string {
	if len(data) > 200 {
		return string(data[:200]) + "…"
	}
	return string(data)
}

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
