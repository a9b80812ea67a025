package codex

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/agnogo/agnogo/external"
)

// ErrCLINotFound: the codex binary is not where the agent was told, nor on
// PATH. Never retried.
var ErrCLINotFound = errors.New("codex CLI not found")

// ErrExited: the app-server exited while a call or a turn waited on it.
var ErrExited = errors.New("codex app-server exited")

// DefaultCloseGrace is how long [Server.Close] waits for the app-server to
// exit after its input closed, before killing its process group.
const DefaultCloseGrace = external.DefaultCloseGrace

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
	child *external.Child

	calls    external.Calls[reply]
	messages chan Message
}

// reply is the answer to one call.
type reply struct {
	result json.RawMessage
	err    *RPCError
}

// StartServer starts `codex app-server`. ctx bounds only the start.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &Server{messages: make(chan Message, 256)}
	child, err := external.StartChild(external.ChildConfig{
		Bin:        cmp.Or(cfg.Bin, "codex"),
		Args:       append([]string{"app-server"}, cfg.Args...),
		Dir:        cfg.Dir,
		Env:        cfg.Env,
		CloseGrace: cfg.CloseGrace,
		NotFound:   ErrCLINotFound,
		Exited:     ErrExited,
		OnLine:     s.take,
		OnExit:     s.ended,
	})
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	s.child = child
	return s, nil
}

// take routes one line of the app-server: an answer to the call awaiting
// it, anything else to Messages.
func (s *Server) take(data []byte) {
	var envelope struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(data, &envelope); err != nil {
		s.messages <- Message{Method: "invalid", Params: mustJSON(map[string]string{"error": err.Error(), "line": external.Clip(data)})}
		return
	}
	if envelope.Method == "" && len(envelope.ID) > 0 {
		var id int64
		if json.Unmarshal(envelope.ID, &id) == nil {
			s.calls.Answer(id, reply{result: envelope.Result, err: envelope.Error})
		}
		return
	}
	s.messages <- Message{ID: envelope.ID, Method: envelope.Method, Params: envelope.Params}
}

// ended closes Messages and fails the calls still awaited.
func (s *Server) ended(error) {
	close(s.messages)
	s.calls.Close()
}

// write sends one JSON line.
func (s *Server) write(value any) error {
	if err := s.child.WriteJSON(value); err != nil {
		return fmt.Errorf("codex: %w", err)
	}
	return nil
}

// Call sends a request and waits for its result; an error answer is a
// [*RPCError].
func (s *Server) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	r, err := s.calls.Do(ctx, func(id int64) error {
		request := map[string]any{"id": id, "method": method}
		if params != nil {
			request["params"] = params
		}
		return s.write(request)
	})
	switch {
	case errors.Is(err, external.ErrCallsClosed):
		return nil, s.child.Err()
	case err != nil:
		return nil, err
	case r.err != nil:
		r.err.Method = method
		return nil, r.err
	}
	return r.result, nil
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

// RespondError answers a request of the app-server with a JSON-RPC error,
// for a request the client cannot serve.
func (s *Server) RespondError(id json.RawMessage, code int, message string) error {
	return s.write(map[string]any{"id": id, "error": map[string]any{"code": code, "message": message}})
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
	return external.Follow(ctx, s.messages, s.child.Err, stop)
}

// Close closes the app-server's input, waits up to the grace period for it
// to exit, then kills its process group; it returns once it is reaped.
func (s *Server) Close() error {
	s.child.Close()
	for range s.messages {
	}
	return nil
}

// Kill kills the app-server's process group at once; [Server.Close] still
// reaps it.
func (s *Server) Kill() { s.child.Kill() }

// Exited is closed once the app-server has exited.
func (s *Server) Exited() <-chan struct{} { return s.child.Exited() }

// mustJSON encodes a value that always encodes.
func mustJSON(v any) json.RawMessage {
	data, _ := json.Marshal(v)
	return data
}
