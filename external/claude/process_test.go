package claude_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/internal/testcli"
)

// fakeEnv names the mode of the fake CLI this test binary plays when
// re-executed.
const fakeEnv = "AGNOGO_FAKE_CLAUDE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		if strings.HasPrefix(mode, "driver-") {
			os.Exit(fakeDriverCLI(mode)) // fake_driver_cli_test.go
		}
		os.Exit(fakeCLI(mode))
	}
	os.Exit(m.Run())
}

// fakeCLI plays the claude CLI over stream-json: it answers control
// requests and, for each user message, writes what its mode says.
func fakeCLI(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	emit := func(line string) { fmt.Fprintln(out, line); out.Flush() }
	recorded, _ := os.ReadFile(filepath.Join("testdata", "claude-p-stream-json-tool.jsonl"))
	tool := strings.Split(strings.TrimSpace(string(recorded)), "\n")
	if mode == "stubborn" {
		// Ignores the end of its input and has a child of its own.
		child := exec.Command("sleep", "300")
		_ = child.Start()
		_ = os.WriteFile(os.Getenv("AGNOGO_FAKE_CHILD_PID"), []byte(strconv.Itoa(child.Process.Pid)), 0o600)
		signalIgnore()
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var msg map[string]any
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			continue
		}
		switch msg["type"] {
		case "control_request":
			request, _ := msg["request"].(map[string]any)
			id, _ := msg["request_id"].(string)
			switch request["subtype"] {
			case "initialize":
				emit(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"commands":[],"claude_code_version":"2.1.332"}}}`, id))
			case "interrupt":
				emit(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"still_queued":[]}}}`, id))
				emit(`{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_streaming","session_id":"s1"}`)
			default:
				emit(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"error","request_id":%q,"error":"Unsupported control request subtype: %v","error_code":"unsupported_request"}}`, id, request["subtype"]))
			}
		case "user":
			switch mode {
			case "replay":
				for _, line := range tool {
					emit(line)
				}
			case "hang", "stubborn":
				emit(tool[0])
			case "garbage":
				emit("this is not json")
				emit(tool[len(tool)-1])
			case "crash":
				emit(tool[0])
				fmt.Fprintln(os.Stderr, "boom: out of cheese")
				return 3
			}
		}
	}
	if mode == "stubborn" {
		time.Sleep(time.Hour) // not a wait: this fake CLI hangs until it is killed
	}
	return 0
}

// signalIgnore makes the process ignore SIGTERM and SIGINT.
func signalIgnore() {
	syscallIgnore(syscall.SIGTERM)
	syscallIgnore(syscall.SIGINT)
}

// start runs this test binary as a fake CLI in mode.
func start(t *testing.T, mode string, extraEnv ...string) *claude.Process {
	t.Helper()
	p, err := claude.StartProcess(t.Context(), claude.ProcessConfig{Bin: os.Args[0], Dir: ".", CloseGrace: 300 * time.Millisecond,
		Env: append(append(os.Environ(), fakeEnv+"="+mode), extraEnv...)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// collect reads one turn.
func collect(t *testing.T, p *claude.Process) ([]claude.Line, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got []claude.Line
	for line, err := range p.Turn(ctx) {
		if err != nil {
			return got, err
		}
		got = append(got, line)
	}
	return got, nil
}

func TestProcessTurns(t *testing.T) {
	p := start(t, "replay")
	info, err := p.Initialize(t.Context())
	require.NoError(t, err)
	require.Contains(t, string(info), `"claude_code_version":"2.1.332"`)

	for turn := range 2 {
		require.NoError(t, p.Send("run it"))
		got, err := collect(t, p)
		require.NoError(t, err, "turn %d", turn)
		require.Len(t, got, 5)
		require.True(t, got[4].IsResult())
		require.Equal(t, "fake-final: hi from bash", got[4].ResultText())
	}

	_, err = p.Control(t.Context(), "no_such_thing", nil)
	var controlErr *claude.ControlError
	require.ErrorAs(t, err, &controlErr)
	require.Equal(t, "unsupported_request", controlErr.Code)
}

func TestProcessInterrupt(t *testing.T) {
	p := start(t, "hang")
	require.NoError(t, p.Send("take your time"))
	done, underway := make(chan []claude.Line), make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var got []claude.Line
		for line, err := range p.Turn(ctx) {
			if err != nil {
				break
			}
			if got = append(got, line); len(got) == 1 {
				close(underway)
			}
		}
		done <- got
	}()
	select {
	case <-underway: // the turn's first line arrived: the CLI is working on it
	case <-time.After(10 * time.Second):
		t.Fatal("the turn never started")
	}
	started := time.Now()
	require.NoError(t, p.Interrupt(t.Context()))
	got := <-done
	require.Less(t, time.Since(started), time.Second)
	end := got[len(got)-1]
	require.Equal(t, "error_during_execution", end.Subtype)
	require.Equal(t, "aborted_streaming", end.TerminalReason)
}

func TestProcessGarbledLineIsReportedNotFatal(t *testing.T) {
	p := start(t, "garbage")
	require.NoError(t, p.Send("go"))
	got, err := collect(t, p)
	require.NoError(t, err)
	require.Equal(t, "invalid", got[0].Type)
	require.Contains(t, got[0].Error, "unreadable output line")
	require.True(t, got[len(got)-1].IsResult())
}

func TestProcessEarlyExit(t *testing.T) {
	p := start(t, "crash")
	require.NoError(t, p.Send("go"))
	got, err := collect(t, p)
	require.ErrorIs(t, err, claude.ErrExited)
	require.Contains(t, err.Error(), "exit status 3")
	require.Contains(t, err.Error(), "boom: out of cheese", "the CLI's stderr explains the exit")
	require.Len(t, got, 1)
}

func TestProcessCloseReapsAStubbornCLI(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	p := start(t, "stubborn", "AGNOGO_FAKE_CHILD_PID="+pidFile)
	require.NoError(t, p.Send("go"))
	line, err := firstLine(t, p)
	require.NoError(t, err)
	require.Equal(t, "init", line.Subtype)
	var child int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(string(data))
		return err == nil && child > 0
	}, 5*time.Second, 20*time.Millisecond)

	require.NoError(t, p.Close())
	select {
	case <-p.Exited():
	default:
		t.Fatal("Close returned before the CLI was reaped")
	}
	require.Eventually(t, func() bool { return syscall.Kill(child, 0) != nil }, 5*time.Second, 20*time.Millisecond,
		"the CLI's own children die with its process group")
}

// firstLine reads the first line of a turn.
func firstLine(t *testing.T, p *claude.Process) (claude.Line, error) {
	t.Helper()
	for line, err := range p.Turn(t.Context()) {
		return line, err
	}
	return claude.Line{}, nil
}

func TestProcessCLINotFound(t *testing.T) {
	_, err := claude.StartProcess(t.Context(), claude.ProcessConfig{Bin: filepath.Join(t.TempDir(), "no-claude-here")})
	require.ErrorIs(t, err, claude.ErrCLINotFound)
}

// TestProcessDrivesTheRealCLI runs one turn of the real Claude Code CLI
// (AGNOGO_CLAUDE_BIN) against the fake Messages API: initialize, a Bash
// call, its output in the result, then a clean close.
func TestProcessDrivesTheRealCLI(t *testing.T) {
	bin := testcli.ClaudeBin(t)
	api := fakeanthropic.New(t)
	api.Directed()
	p, err := claude.StartProcess(t.Context(), claude.ProcessConfig{Bin: bin, Dir: t.TempDir(),
		Args: []string{"--permission-mode=bypassPermissions"}, Env: testcli.ClaudeEnv(api.URL, t.TempDir())})
	require.NoError(t, err)
	defer p.Close()
	info, err := p.Initialize(t.Context())
	require.NoError(t, err)
	require.Contains(t, string(info), "2.1.332")
	require.NoError(t, p.Send("run it [[bash:echo hello-from-bash]]"))
	got, err := collect(t, p)
	require.NoError(t, err)
	var sawTool bool
	for _, line := range got {
		if line.Message != nil && len(line.Message.Content) > 0 && line.Message.Content[0].Type == "tool_result" {
			sawTool = line.Message.Content[0].ResultText() == "hello-from-bash"
		}
	}
	require.True(t, sawTool, "the Bash call ran")
	end := got[len(got)-1]
	require.Equal(t, "fake-final: hello-from-bash", end.ResultText())
	require.NotZero(t, end.Usage.InputTokens)
	require.NoError(t, p.Close())
}
