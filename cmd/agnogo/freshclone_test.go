package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFreshClone does what the README's quick start tells a newcomer, on a
// fresh clone of this repository: its two commands are there, the server
// builds and starts with no config (SQLite ./agnogo.db created in the
// clone), answers /health, and stops cleanly on SIGTERM.
func TestFreshClone(t *testing.T) {
	t.Parallel()
	gitTool, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not on PATH")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	top, err := exec.CommandContext(t.Context(), gitTool, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not in a git checkout: nothing to clone")
	}
	clone := filepath.Join(t.TempDir(), "agnogo")
	out, err := exec.CommandContext(t.Context(), gitTool, "clone", "--quiet", "--local", strings.TrimSpace(string(top)), clone).CombinedOutput()
	require.NoError(t, err, "git clone: %s", out)

	readme, err := os.ReadFile(filepath.Join(clone, "README.md"))
	require.NoError(t, err)
	for _, command := range []string{"go run ./cmd/agnogo serve", "go test -timeout 30m ./..."} {
		require.Contains(t, string(readme), command, "the README tells a newcomer to run %q", command)
	}

	// `go run ./cmd/agnogo serve` is `go build` then the binary: built here
	// once, so the server's own start is what is waited for.
	bin := filepath.Join(t.TempDir(), "agnogo")
	build := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, "./cmd/agnogo")
	build.Dir = clone
	out, err = build.CombinedOutput()
	require.NoError(t, err, "go build in the clone: %s", out)

	serve := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
	serve.Dir = clone
	serve.Env = withoutEnv(os.Environ(), "AGNOGO_EXECUTOR_ID", "OS_SECURITY_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGNOGO_MODEL")
	log := &serverLog{}
	serve.Stderr = log
	require.NoError(t, serve.Start())
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = serve.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = serve.Process.Kill()
		<-exited
	})
	url := "http://" + waitAddr(t, log, exited)

	resp, err := http.Get(url + "/health")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var health struct{ Status string }
	require.NoError(t, json.NewDecoder(bytes.NewReader(body)).Decode(&health))
	require.Equal(t, "ok", health.Status)
	require.FileExists(t, filepath.Join(clone, "agnogo.db"), "the default database is created in the working directory")

	require.NoError(t, serve.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
		require.NoError(t, waitErr, "a SIGTERM stops the server with status 0:\n%s", log)
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not stop within 60 s of SIGTERM:\n%s", log)
	}
}
