package codex_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external/codex"
	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/internal/testcli"
)

// fakeEnv names the mode of the fake app-server this test binary plays
// when re-executed.
const fakeEnv = "AGNOGO_FAKE_CODEX"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); strings.HasPrefix(mode, "driver-") {
		os.Exit(fakeDriverServer(mode))
	} else if mode != "" {
		os.Exit(fakeAppServer(mode))
	}
	os.Exit(m.Run())
}

// fakeAppServer answers the app-server protocol the way the recorded
// transcript shows, much abridged.
func fakeAppServer(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	emit := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...); out.Flush() }
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var msg struct {
			ID     *int64          `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			continue
		}
		switch {
		case msg.Method == "initialize":
			emit(`{"id":%d,"result":{"userAgent":"fake/0.171.0","platformOs":"linux"}}`, *msg.ID)
		case msg.Method == "thread/start":
			emit(`{"method":"configWarning","params":{"summary":"noise"}}`)
			emit(`{"id":%d,"result":{"thread":{"id":"thread-1"},"model":"gpt-5.5"}}`, *msg.ID)
		case msg.Method == "turn/start" && mode == "crash":
			fmt.Fprintln(os.Stderr, "panic: the fake app-server fell over")
			return 101
		case msg.Method == "turn/start":
			emit(`{"id":%d,"result":{"turn":{"id":"turn-1","status":"inProgress"}}}`, *msg.ID)
			emit(`{"method":"turn/started","params":{"threadId":"thread-1","turn":{"id":"turn-1"}}}`)
			emit(`{"method":"item/commandExecution/requestApproval","id":0,"params":{"threadId":"thread-1","turnId":"turn-1","command":"/bin/bash -lc 'echo hi'"}}`)
		case msg.Method == "" && msg.ID != nil && *msg.ID == 0:
			var answer struct {
				Decision string `json:"decision"`
			}
			_ = json.Unmarshal(msg.Result, &answer)
			emit(`{"method":"item/completed","params":{"item":{"type":"commandExecution","aggregatedOutput":"hi\n","decision":%q}}}`, answer.Decision)
			emit(`{"method":"turn/completed","params":{"threadId":"thread-1","turn":{"id":"turn-1","status":"completed"}}}`)
		case msg.Method == "thread/resume":
			emit(`{"id":%d,"error":{"code":-32600,"message":"no rollout found for thread id nope"}}`, *msg.ID)
		}
	}
	return 0
}

func start(t *testing.T, mode string) *codex.Server {
	t.Helper()
	s, err := codex.StartServer(t.Context(), codex.ServerConfig{Bin: os.Args[0], Env: append(os.Environ(), fakeEnv+"="+mode),
		CloseGrace: 300 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func turnCompleted(m codex.Message) bool { return m.Method == "turn/completed" }

func TestServerTurnWithApproval(t *testing.T) {
	s := start(t, "ok")
	info, err := s.Initialize(t.Context(), "agnogo", "test")
	require.NoError(t, err)
	require.Contains(t, string(info), "fake/0.171.0")
	thread, err := s.Call(t.Context(), "thread/start", map[string]any{"cwd": ".", "approvalPolicy": "on-request"})
	require.NoError(t, err)
	require.Contains(t, string(thread), `"id":"thread-1"`)
	_, err = s.Call(t.Context(), "turn/start", map[string]any{"threadId": "thread-1", "input": []any{map[string]any{"type": "text", "text": "hi"}}})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var methods []string
	for m, err := range s.Messages(ctx, turnCompleted) {
		require.NoError(t, err)
		methods = append(methods, m.Method)
		if m.IsRequest() {
			require.Equal(t, "item/commandExecution/requestApproval", m.Method)
			require.NoError(t, s.Respond(m.ID, map[string]string{"decision": "accept"}))
		}
		if m.Method == "item/completed" {
			require.Contains(t, string(m.Params), `"decision":"accept"`, "the approval reached the server")
		}
	}
	require.Equal(t, []string{"configWarning", "turn/started", "item/commandExecution/requestApproval", "item/completed", "turn/completed"}, methods)
}

func TestServerErrorAnswer(t *testing.T) {
	s := start(t, "ok")
	_, err := s.Initialize(t.Context(), "agnogo", "test")
	require.NoError(t, err)
	_, err = s.Call(t.Context(), "thread/resume", map[string]any{"threadId": "nope"})
	var rpcErr *codex.RPCError
	require.ErrorAs(t, err, &rpcErr)
	require.Equal(t, "thread/resume", rpcErr.Method)
	require.Contains(t, rpcErr.Message, "no rollout found")
}

func TestServerEarlyExit(t *testing.T) {
	s := start(t, "crash")
	_, err := s.Initialize(t.Context(), "agnogo", "test")
	require.NoError(t, err)
	_, err = s.Call(t.Context(), "turn/start", map[string]any{"threadId": "thread-1"})
	require.ErrorIs(t, err, codex.ErrExited)
	require.Contains(t, err.Error(), "exit status 101")
	require.Contains(t, err.Error(), "fell over", "the app-server's stderr explains the exit")
}

func TestServerCLINotFound(t *testing.T) {
	_, err := codex.StartServer(t.Context(), codex.ServerConfig{Bin: "/nonexistent/codex"})
	require.ErrorIs(t, err, codex.ErrCLINotFound)
}

// TestServerDrivesTheRealCLI runs one turn of the real `codex app-server`
// (AGNOGO_CODEX_BIN) against the fake Responses API.
func TestServerDrivesTheRealCLI(t *testing.T) {
	bin := testcli.CodexBin(t)
	api := fakeopenai.New(t)
	api.Enqueue(fakeopenai.Text("hello from the fake model"))
	work := t.TempDir()
	s, err := codex.StartServer(t.Context(), codex.ServerConfig{Bin: bin, Dir: work, Env: testcli.CodexEnv(t, api.URL)})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, err = s.Initialize(ctx, "agnogo-test", "0.0.1")
	require.NoError(t, err)
	started, err := s.Call(ctx, "thread/start", map[string]any{"cwd": work, "approvalPolicy": "never", "sandbox": "read-only"})
	require.NoError(t, err)
	var thread struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	require.NoError(t, json.Unmarshal(started, &thread))
	require.NotEmpty(t, thread.Thread.ID)
	_, err = s.Call(ctx, "turn/start", map[string]any{"threadId": thread.Thread.ID,
		"input": []any{map[string]any{"type": "text", "text": "say hello", "text_elements": []any{}}}})
	require.NoError(t, err)
	var answer, status string
	for m, err := range s.Messages(ctx, turnCompleted) {
		require.NoError(t, err)
		switch m.Method {
		case "item/completed":
			var p struct {
				Item struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"item"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			if p.Item.Type == "agentMessage" {
				answer = p.Item.Text
			}
		case "turn/completed":
			var p struct {
				Turn struct {
					Status string `json:"status"`
				} `json:"turn"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			status = p.Turn.Status
		}
	}
	require.Equal(t, "completed", status)
	require.Equal(t, "hello from the fake model", answer)
}
