package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/config"
	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/internal/residency"
	agnorun "github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// serverLog collects a server's log, written from its goroutines, and finds
// the address the server listens on in it.
type serverLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// listeningAddr finds the bound address in the listening line of a log,
// text (msg="AgentOS listening" addr=HOST:PORT) or JSON.
var listeningText = regexp.MustCompile(`msg="` + listeningMessage + `" addr=(\S+)`)

func listeningAddr(log string) string {
	for line := range strings.SplitSeq(log, "\n") {
		if m := listeningText.FindStringSubmatch(line); m != nil {
			return m[1]
		}
		var entry struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == listeningMessage {
			return entry.Addr
		}
	}
	return ""
}

// waitAddr waits until the log says where the server listens.
func waitAddr(t testing.TB, log fmt.Stringer, exited <-chan struct{}) string {
	t.Helper()
	var addr string
	ok := poll(30*time.Second, 10*time.Millisecond, func() bool {
		if addr = listeningAddr(log.String()); addr != "" {
			return true
		}
		select {
		case <-exited:
			t.Fatalf("serve exited before listening:\n%s", log)
		default:
		}
		return false
	})
	require.True(t, ok, "serve did not log its address:\n%s", log)
	return addr
}

// servingOS is `agnogo serve` running in-process.
type servingOS struct {
	url    string
	log    *serverLog
	stop   context.CancelFunc
	code   chan int
	exited chan struct{}
}

// startServe runs `agnogo serve args… --addr 127.0.0.1:0` in-process and
// waits until it listens.
func startServe(t *testing.T, args ...string) *servingOS {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	s := &servingOS{log: &serverLog{}, stop: stop, code: make(chan int, 1), exited: make(chan struct{})}
	go func() {
		defer close(s.exited)
		s.code <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), io.Discard, s.log)
	}()
	t.Cleanup(func() {
		stop()
		<-s.exited
	})
	s.url = "http://" + waitAddr(t, s.log, s.exited)
	return s
}

// shutdown sends the signal (cancels the context main.go derives from
// SIGINT/SIGTERM) and returns the exit code.
func (s *servingOS) shutdown(t *testing.T) int {
	t.Helper()
	s.stop()
	select {
	case code := <-s.code:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop:\n%s", s.log)
		return -1
	}
}

func (s *servingOS) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// sseEvents reads the event names of an SSE body.
func sseEvents(t *testing.T, body io.Reader) ([]string, []map[string]any) {
	t.Helper()
	var names []string
	var data []map[string]any
	scanner := bufio.NewScanner(body)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, name)
		}
		if payload, ok := strings.CutPrefix(line, "data: "); ok {
			var frame map[string]any
			require.NoError(t, json.Unmarshal([]byte(payload), &frame))
			data = append(data, frame)
		}
	}
	require.NoError(t, scanner.Err())
	return names, data
}

func TestServeInProcess(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	s := startServe(t, "--config", b.config, "--log-format", "json")

	resp, body := s.get(t, "/health")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `"status":"ok"`)

	resp, body = s.get(t, "/info")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `"name":"Test OS"`)

	resp, body = s.get(t, "/openapi.json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `"openapi": "3.1.0"`)
	resp, _ = s.get(t, "/docs")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A run answered as JSON.
	b.fake.Enqueue(fakeopenai.Text("hi"))
	resp, err := http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"false"}})
	require.NoError(t, err)
	var output map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&output))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "hi", output["content"])
	require.Equal(t, "COMPLETED", output["status"])

	// A run answered as Server-Sent Events, in the same session.
	b.fake.Enqueue(fakeopenai.Text("hello again"))
	resp, err = http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"and now?"}, "stream": {"true"}, "session_id": {output["session_id"].(string)}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	names, frames := sseEvents(t, resp.Body)
	resp.Body.Close()
	require.Equal(t, agnorun.EventRunStarted, names[0])
	require.Equal(t, agnorun.EventRunCompleted, names[len(names)-1])
	require.Contains(t, names, agnorun.EventRunContent)
	require.Equal(t, "hello again", frames[len(frames)-1]["content"])
	require.Len(t, chatMessages(b.fake.Requests()[1]), 3, "the second run sees the first: the server stores runs")

	require.Equal(t, exitOK, s.shutdown(t), s.log.String())
	log := s.log.String()
	require.Contains(t, log, `"msg":"stopped"`)
	require.NotContains(t, log, "no OPENAI_API_KEY", "the config gives the model a key")
}

// TestServeShutdownCancelsRuns stops the server while a run streams: the
// run is cancelled, its stream ends with RunCancelled, it is stored as
// CANCELLED, and serve exits 0.
func TestServeShutdownCancelsRuns(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	s := startServe(t, "--config", b.config)
	b.fake.Enqueue(fakeopenai.Text("never finished").StallAfter(1))

	resp, err := http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"hi"}})
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// Wait until the model call is under way.
	require.True(t, poll(10*time.Second, 5*time.Millisecond, func() bool { return len(b.fake.Requests()) > 0 }),
		"the model was never called")

	code := make(chan int, 1)
	go func() { code <- s.shutdown(t) }()
	names, frames := sseEvents(t, resp.Body)
	require.Equal(t, agnorun.EventRunStarted, names[0])
	require.Equal(t, agnorun.EventRunCancelled, names[len(names)-1], "%v", names)
	runID := frames[0]["run_id"].(string)
	require.Equal(t, exitOK, <-code, s.log.String())
	require.Contains(t, s.log.String(), "runs_in_flight=1 timeout_s=15", "the shutdown says what it waits for")

	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(b.dir, "agnogo.db")})
	require.NoError(t, err)
	defer store.Close()
	rec, err := store.GetRun(t.Context(), runID, "")
	require.NoError(t, err)
	require.Equal(t, agnorun.StatusCancelled, rec.Run.Status, "the cancelled run was saved before the database closed")

	// The server is gone.
	_, err = http.Get(s.url + "/health")
	require.Error(t, err)
}

func TestServeOutdatedDatabase(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)
	createAgno2Database(t, path, []legacySession{{id: "s1", sessionType: "agent", runIDs: []string{"r1"}}})

	got := agnogo(t, "serve", "--db", dbURL, "--addr", "127.0.0.1:0")
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "database schema needs migrating")
	require.Contains(t, got.stderr, "agnogo migrate --db "+dbURL)
	require.NotContains(t, got.stderr, listeningMessage)
}

func TestServeUsageErrors(t *testing.T) {
	t.Parallel()
	dbURL, _ := tempDB(t)
	tests := []struct {
		name     string
		args     []string
		mentions string
	}{
		{"bad addr", []string{"--addr", "7777"}, `--addr "7777": want HOST:PORT`},
		{"bad db", []string{"--db", "mysql://x"}, "--db: "},
		{"bad log format", []string{"--db", dbURL, "--log-format", "xml"}, `--log-format "xml": want text or json`},
		{"unknown flag", []string{"--port", "1"}, "unknown flag: --port"},
		{"missing config", []string{"--db", dbURL, "--config", "does-not-exist.yaml"}, "does-not-exist.yaml"},
		{"argument", []string{"extra"}, "unknown command"},
	}
	for _, tt := range tests {
		got := agnogo(t, append([]string{"serve"}, tt.args...)...)
		require.Equal(t, exitUsage, got.code, "%s: %s", tt.name, got.stderr)
		require.Contains(t, got.stderr, tt.mentions, tt.name)
	}

	dir := t.TempDir()
	config := filepath.Join(dir, "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte("cors_allowed_origins: [http://localhost:3000/]\n"), 0o600))
	got := agnogo(t, "serve", "--db", dbURL, "--config", config)
	require.Equal(t, exitUsage, got.code, got.stderr)
	require.Contains(t, got.stderr, "agnogo.yaml:1: cors_allowed_origins:")
}

func TestServeAddressInUse(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	s := startServe(t, "--config", b.config)
	got := agnogo(t, "serve", "--config", b.config, "--addr", strings.TrimPrefix(s.url, "http://"))
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "listen on "+strings.TrimPrefix(s.url, "http://"))
}

// TestServeBinary builds agnogo and runs `agnogo serve` as a process, with
// no config file and no model credentials: it starts, says which variable
// to set, serves /health, and exits 0 on SIGTERM.
func TestServeBinary(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("SIGTERM")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	dir := t.TempDir()
	binary := filepath.Join(dir, "agnogo")
	build := exec.Command(goTool, "build", "-o", binary, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	work := t.TempDir() // no agnogo.yaml there
	dbPath := filepath.Join(work, "x.db")
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--db", "sqlite://"+dbPath)
	cmd.Dir = work
	cmd.Env = withoutEnv(os.Environ(), "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "AGNOGO_MODEL", "OS_SECURITY_KEY")
	log := &serverLog{}
	cmd.Stderr = log
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	addr := waitAddr(t, log, exited)
	resp, err := http.Get("http://" + addr + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.FileExists(t, dbPath, "serve creates the database")
	require.Contains(t, log.String(), "no OPENAI_API_KEY: runs of agent assistant will fail until it is set")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("agnogo serve did not exit after SIGTERM:\n%s", log)
	}
	require.NoError(t, waitErr, "exit status 0 after SIGTERM:\n%s", log)
	require.Contains(t, log.String(), "msg=stopped")
}

// withoutEnv returns env without the named variables.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// TestServeAuthAndCORS checks that the config's auth and CORS keys reach the
// server.
func TestServeAuthAndCORS(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	data, err := os.ReadFile(b.config)
	require.NoError(t, err)
	data = append(data, []byte("auth: {security_key: s3cret}\ncors_allowed_origins: [https://chat.example.com]\n")...)
	require.NoError(t, os.WriteFile(b.config, data, 0o600))
	s := startServe(t, "--config", b.config)
	require.Contains(t, s.log.String(), "auth=security_key")

	resp, _ := s.get(t, "/health")
	require.Equal(t, http.StatusOK, resp.StatusCode, "open route")
	resp, body := s.get(t, "/agents")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, "detail")

	req, err := http.NewRequest(http.MethodGet, s.url+"/agents", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer s3cret")
	req.Header.Set("Origin", "https://chat.example.com")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "https://chat.example.com", resp.Header.Get("Access-Control-Allow-Origin"))

	req, err = http.NewRequest(http.MethodOptions, s.url+"/agents/assistant/runs", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://localhost:3000")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "the configured list replaces the defaults")

	require.Equal(t, exitOK, s.shutdown(t))
}

func TestServeBadJWTConfig(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	data, err := os.ReadFile(b.config)
	require.NoError(t, err)
	data = append(data, []byte("auth:\n  jwt: {verification_keys: [too-short], algorithm: HS256}\n")...)
	require.NoError(t, os.WriteFile(b.config, data, 0o600))
	got := agnogo(t, "serve", "--config", b.config, "--addr", "127.0.0.1:0")
	require.Equal(t, exitUsage, got.code, got.stderr)
	require.Contains(t, got.stderr, "agnogo: "+b.config+": ")
	require.Contains(t, got.stderr, "verification key")
}

// logLines decodes a JSON log, one entry per line.
func logLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &entry), line)
		lines = append(lines, entry)
	}
	return lines
}

// messages are the msg of each line.
func messages(lines []map[string]any) []string {
	var msgs []string
	for _, line := range lines {
		msgs = append(msgs, line["msg"].(string))
	}
	return msgs
}

// lineWith returns the first line whose msg is msg.
func lineWith(t *testing.T, lines []map[string]any, msg string) map[string]any {
	t.Helper()
	for _, line := range lines {
		if line["msg"] == msg {
			return line
		}
	}
	t.Fatalf("no log line %q in %v", msg, messages(lines))
	return nil
}

// requireSeconds checks that every duration of the log is in seconds: an
// attribute whose key ends in _s, a number, and no key that slog would
// have written as nanoseconds.
func requireSeconds(t *testing.T, lines []map[string]any) {
	t.Helper()
	for _, line := range lines {
		for key, value := range line {
			if strings.HasSuffix(key, "_s") {
				seconds, ok := value.(float64)
				require.True(t, ok && seconds < 1e5, "%s=%v is not in seconds: %v", key, value, line)
			}
			require.False(t, strings.Contains(key, "timeout") && !strings.HasSuffix(key, "_s"), "duration %s=%v not in seconds", key, value)
		}
	}
}

// TestServeLogsWhatAnOperatorNeeds reads the log of a server's life in
// JSON: one line at start with what it serves, one line per failed run
// with its run id and error type, and a shutdown that says what it waits
// for and how long, durations in seconds.
func TestServeLogsWhatAnOperatorNeeds(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	s := startServe(t, "--config", b.config, "--log-format", "json")

	// The start is one line, the last, naming where and what it serves;
	// the queue's engine says nothing at Info.
	start := logLines(t, s.log.String())
	require.Equal(t, []string{listeningMessage}, messages(start))
	banner := start[0]
	require.Equal(t, s.url, banner["url"])
	require.Equal(t, s.url+"/docs", banner["docs"])
	require.Equal(t, "assistant", banner["agents"])
	require.Equal(t, "sqlite://"+filepath.Join(b.dir, "agnogo.db"), banner["db"])
	require.Equal(t, "none", banner["auth"])
	require.NotEmpty(t, banner["version"])

	// A run the model refuses (a wrong API key), answered as JSON, and one
	// rate-limited, streamed: each is logged with its run id and error type.
	b.fake.Enqueue(fakeopenai.Error(http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided"))
	resp, err := http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"false"}})
	require.NoError(t, err)
	var refused map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&refused))
	resp.Body.Close()
	require.Equal(t, "ERROR", refused["status"])

	b.fake.Enqueue(fakeopenai.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "Rate limit reached"))
	resp, err = http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"true"}})
	require.NoError(t, err)
	names, frames := sseEvents(t, resp.Body)
	resp.Body.Close()
	require.Equal(t, agnorun.EventRunError, names[len(names)-1])

	var failed []map[string]any
	for _, line := range logLines(t, s.log.String()) {
		if line["msg"] == "run failed" {
			failed = append(failed, line)
		}
	}
	require.Len(t, failed, 2)
	require.Equal(t, "WARN", failed[0]["level"])
	require.Equal(t, refused["run_id"], failed[0]["run_id"])
	require.Equal(t, "authentication_error", failed[0]["error_type"])
	require.Equal(t, "assistant", failed[0]["agent_id"])
	require.Contains(t, failed[0]["error"], "Incorrect API key provided")
	require.Equal(t, frames[0]["run_id"], failed[1]["run_id"])
	require.Equal(t, "rate_limit", failed[1]["error_type"])

	// The shutdown says what it waits for, and for how long.
	require.Equal(t, exitOK, s.shutdown(t), s.log.String())
	lines := logLines(t, s.log.String())
	stopping := lineWith(t, lines, "shutting down: refusing new connections and runs, cancelling the runs in flight and waiting for them to be saved")
	require.Equal(t, float64(0), stopping["runs_in_flight"])
	require.Equal(t, float64(15), stopping["timeout_s"])
	background := lineWith(t, lines, "waiting for the background runs executing here to finish; those still running then are handed back to the queue")
	require.Equal(t, float64(30), background["timeout_s"], "queue.stop_timeout_seconds")
	require.Equal(t, "stopped", lines[len(lines)-1]["msg"])
	requireSeconds(t, lines)
}

// TestServeShutdownWaitsForBackgroundRuns stops a server while a background
// run executes on its durable queue: the log says the server waits for it,
// for queue.stop_timeout_seconds, then hands it back, and how long that
// took, in seconds.
func TestServeShutdownWaitsForBackgroundRuns(t *testing.T) {
	t.Parallel()
	b := setupRun(t, assistantAgent)
	f, err := os.OpenFile(b.config, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("queue: {stop_timeout_seconds: 1}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	s := startServe(t, "--config", b.config)
	b.fake.Enqueue(fakeopenai.Text("never finished").StallAfter(1))

	resp, err := http.PostForm(s.url+"/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"false"}, "background": {"true"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.True(t, poll(10*time.Second, 5*time.Millisecond, func() bool { return len(b.fake.Requests()) > 0 }),
		"the background run never called the model")

	require.Equal(t, exitOK, s.shutdown(t), s.log.String())
	log := s.log.String()
	require.Contains(t, log, `msg="waiting for the background runs executing here to finish; those still running then are handed back to the queue" timeout_s=1`)
	require.Contains(t, log, `msg="durable: runs still executing at the end of the stop timeout are handed back" runs=1 stop_timeout_s=1`)
	stopped := regexp.MustCompile(`msg=stopped background_wait_s=(\S+)`).FindStringSubmatch(log)
	require.NotNil(t, stopped, log)
	require.NotContains(t, stopped[1], "ms", "in seconds")
}

// TestServeWarnsWhenJWTScopesAreOff: a JWT config without authorization:
// true (Agno's default) only validates tokens; the start says so, before
// the line that says the server listens.
func TestServeWarnsWhenJWTScopesAreOff(t *testing.T) {
	t.Parallel()
	const warning = "JWT scopes are not enforced"
	for _, authorization := range []bool{false, true} {
		b := setupRun(t, assistantAgent)
		f, err := os.OpenFile(b.config, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = fmt.Fprintf(f, "auth:\n  jwt: {verification_keys: [0123456789abcdef0123456789abcdef], algorithm: HS256, authorization: %t}\n", authorization)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		s := startServe(t, "--config", b.config)
		log := s.log.String()
		require.Contains(t, log, "auth=jwt")
		if authorization {
			require.NotContains(t, log, warning)
		} else {
			require.Regexp(t, `level=WARN msg="`+warning+`: any valid token may call every route but the admin-only ones; set auth.jwt.authorization: true[^\n]*\n[^\n]*msg="`+listeningMessage+`"`, log)
		}
		require.Equal(t, exitOK, s.shutdown(t))
	}
}

// TestServeOptionsFromConfig: the config's server key with nothing set
// gives agentos's defaults — `agnogo serve` and a Go program that calls
// agentos.ListenAndServe bound clients alike — and a zero turns a bound
// off.
func TestServeOptionsFromConfig(t *testing.T) {
	t.Parallel()
	file, err := config.Default(func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, agentos.ServeOptions{
		BodyTimeout:             agentos.DefaultBodyTimeout,
		UploadMinBytesPerSecond: agentos.DefaultUploadMinBytesPerSecond,
		MaxConnections:          agentos.DefaultMaxConnections,
		IdleTimeout:             agentos.DefaultIdleTimeout,
	}, serveOptions(file.Server))
	require.Equal(t, agentos.ServeOptions{BodyTimeout: -time.Second, UploadMinBytesPerSecond: -1, MaxConnections: -1, IdleTimeout: 5 * time.Second},
		serveOptions(config.Server{IdleTimeoutSeconds: 5}))
}

// TestServeReleasesStartupMemory: `agnogo serve` gives back the pages of
// its executable that start-up paged in (server.release_startup_memory,
// on by default) before it serves, and keeps them when the setting is off.
// Not parallel: other tests running in this process would page code in.
func TestServeReleasesStartupMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the release is Linux only")
	}
	b := setupRun(t, assistantAgent)
	kept := filepath.Join(b.dir, "kept.yaml")
	yaml, err := os.ReadFile(b.config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kept, append(yaml, "\nserver:\n  release_startup_memory: false\n"...), 0o600))

	serveAndMeasure := func(config string) (before, after int64) {
		before = residency.FileResident()
		s := startServe(t, "--config", config)
		after = residency.FileResident()
		resp, _ := s.get(t, "/health")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, exitOK, s.shutdown(t), s.log.String())
		return before, after
	}
	before, after := serveAndMeasure(kept)
	t.Logf("release_startup_memory: false: file-backed resident %d MiB before serve, %d MiB serving", before>>20, after>>20)
	require.Greater(t, after, before*9/10, "with the release off, the executable's pages stay resident")

	before, after = serveAndMeasure(b.config)
	t.Logf("release_startup_memory: true (default): file-backed resident %d MiB before serve, %d MiB serving", before>>20, after>>20)
	require.Less(t, after, before/2, "serve releases the executable's pages by default")
}
