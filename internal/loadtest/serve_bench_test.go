package loadtest_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/internal/loadtest"
)

// binary is the agnogo binary the benchmarks start, built once per test
// binary into a directory TestMain removes.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// agnogoBinary builds cmd/agnogo from this module, once.
func agnogoBinary(b *testing.B) string {
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "agnogo-load-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "agnogo")
		out, err := exec.Command("go", "build", "-o", binary.path, "github.com/agnogo/agnogo/cmd/agnogo").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build ./cmd/agnogo: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		b.Fatal(binary.err)
	}
	return binary.path
}

// serveReply is what the fake model answers every run.
const serveReply = "Hello! How can I help you today?"

// serveConfig is the config file the server runs: the default assistant
// (history on, the last 3 runs) with its model pointed at the fake.
const serveConfig = `models:
  fake: {provider: openai, id: gpt-5-mini, base_url: %q, api_key: not-a-real-key}
agents:
  - id: assistant
    name: Assistant
    model: fake
    add_history_to_context: true
`

// listening matches the address in the server's "AgentOS listening" line.
var listening = regexp.MustCompile(`msg="AgentOS listening".* addr=(\S+)`)

// startServe starts `agnogo serve` on a free port with a new SQLite
// database and the config above, and returns its process, its base URL and
// a function that stops it with SIGTERM, which runs at the latest when the
// benchmark ends. env is added to the process's environment.
func startServe(b *testing.B, modelURL string, env ...string) (*os.Process, string, func()) {
	dir := b.TempDir()
	configPath := filepath.Join(dir, "agnogo.yaml")
	if err := os.WriteFile(configPath, fmt.Appendf(nil, serveConfig, modelURL), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(agnogoBinary(b), "serve", "--config", configPath, "--addr", "127.0.0.1:0",
		"--db", "sqlite://"+filepath.Join(dir, "agnogo.db"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			if m := listening.FindStringSubmatch(scanner.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr) // keep the pipe drained
		exited <- cmd.Wait()
	}()
	stop := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				b.Errorf("agnogo serve exited with %v after SIGTERM", err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			b.Error("agnogo serve did not stop within 20s of SIGTERM")
		}
	})
	b.Cleanup(stop)
	select {
	case a := <-addr:
		return cmd.Process, "http://" + a, stop
	case err := <-exited:
		b.Fatalf("agnogo serve exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		b.Fatal("agnogo serve did not log its address within 30s")
	}
	return nil, "", stop
}

// idleRSSTarget is the resident memory an idle `agnogo serve` should stay
// within.
const idleRSSTarget = 40 << 20

// idleMemory is the resident memory of the `agnogo serve` process idle: one
// second after it answers /health.
func idleMemory(b *testing.B, process *os.Process, baseURL string) loadtest.Memory {
	health, err := http.Get(baseURL + "/health")
	if err != nil {
		b.Fatal(err)
	}
	health.Body.Close()
	// Not a wait for anything: the idle measurement is of a server that has
	// been idle for a while, not one that just started.
	time.Sleep(time.Second)
	idle, err := loadtest.ReadMemory(process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	return idle
}

// BenchmarkServeBinary measures the built `agnogo serve` process: its
// resident memory idle (idle-rss-MiB, VmRSS one second after it answers
// /health; target idleRSSTarget, logged) and at its peak under load
// (peak-rss-MiB, VmHWM after the load), and the runs/s, p50-ms and p99-ms
// that 32 concurrent clients see sending stream=false runs, each in a new
// session. The Go runtime returns freed memory with MADV_DONTNEED
// (GODEBUG=madvdontneed=1, its default on Linux), which takes it out of the
// resident size at once; idle-rss-madvfree-MiB is the idle size of a second
// server run with madvdontneed=0 (MADV_FREE, whose pages leave the resident
// size only when the kernel reclaims them). The model is the OpenAI Chat
// Completions fake of internal/fakeopenai on a loopback port, in this
// process, so every run also makes one HTTP call to it. One op is one run.
func BenchmarkServeBinary(b *testing.B) {
	const clients = 32
	fake := fakeopenai.New(b)
	replies := make([]fakeopenai.Reply, b.N)
	for i := range replies {
		replies[i] = fakeopenai.Text(serveReply)
	}
	fake.Enqueue(replies...)
	process, baseURL, _ := startServe(b, fake.URL)
	idle := idleMemory(b, process, baseURL)
	madvFreeProcess, madvFreeURL, stopMadvFree := startServe(b, fake.URL, "GODEBUG=madvdontneed=0")
	idleMadvFree := idleMemory(b, madvFreeProcess, madvFreeURL)
	stopMadvFree()
	if idle.RSS > idleRSSTarget {
		b.Logf("idle RSS %.1f MiB is above the target of %.0f MiB", loadtest.MiB(idle.RSS), loadtest.MiB(idleRSSTarget))
	}

	client := loadtest.NewClient(baseURL, clients)
	defer client.Close()
	b.ReportAllocs()
	b.ResetTimer()
	result, err := loadtest.Drive(b.Context(), clients, b.N, func(ctx context.Context, _, _ int) error {
		out, err := client.Run(ctx, loadtest.RunRequest{AgentID: "assistant", Message: "Hi there"})
		if err != nil {
			return err
		}
		if out.Content != serveReply {
			return fmt.Errorf("run %s answered %v, want %q", out.RunID, out.Content, serveReply)
		}
		return nil
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	loaded, err := loadtest.ReadMemory(process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	if pending := fake.Pending(); pending != 0 {
		b.Fatalf("%d model replies were not asked for, want every run to call the model once", pending)
	}
	b.ReportMetric(result.PerSecond(), "runs/s")
	b.ReportMetric(loadtest.Milliseconds(result.Latencies.Quantile(0.50)), "p50-ms")
	b.ReportMetric(loadtest.Milliseconds(result.Latencies.Quantile(0.99)), "p99-ms")
	b.ReportMetric(loadtest.MiB(idle.RSS), "idle-rss-MiB")
	b.ReportMetric(loadtest.MiB(idleMadvFree.RSS), "idle-rss-madvfree-MiB")
	b.ReportMetric(loadtest.MiB(loaded.Peak), "peak-rss-MiB")
}
