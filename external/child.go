package external

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultCloseGrace is how long [Child.Close] waits for a CLI to exit after
// its input closed, before killing its process group.
const DefaultCloseGrace = 5 * time.Second

// stderrLimit bounds the stderr a Child keeps for error messages.
const stderrLimit = 8 << 10

// ChildConfig starts a CLI that speaks JSON lines on its standard input and
// output.
type ChildConfig struct {
	// Bin is the binary: a path, or a name looked up on PATH.
	Bin string
	// Args are its arguments.
	Args []string
	// Dir is the working directory.
	Dir string
	// Env is the environment ("KEY=value"); nil means this process's.
	Env []string
	// CloseGrace defaults to [DefaultCloseGrace].
	CloseGrace time.Duration
	// NotFound is wrapped when the binary cannot be found or run, Exited
	// when it exits; both name the CLI in its drivers' own terms.
	NotFound, Exited error
	// OnLine receives each non-blank output line, in order, on the reading
	// goroutine; the slice is only valid during the call.
	OnLine func(line []byte)
	// OnExit runs once the output ended and the CLI was reaped, with why
	// (an error wrapping Exited and the end of its stderr), before
	// [Child.Exited] closes.
	OnExit func(err error)
}

// Child is a running CLI in a process group of its own, so whatever it
// starts is killed with it. Writes are serialised.
type Child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	grace  time.Duration

	writeMu sync.Mutex
	exited  chan struct{}
	err     error // read after exited closes
}

// StartChild starts the CLI and reads its output until it ends.
func StartChild(cfg ChildConfig) (*Child, error) {
	path, err := exec.LookPath(cfg.Bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", cfg.NotFound, cfg.Bin, err)
	}
	cmd := exec.Command(path, cfg.Args...)
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c := &Child{cmd: cmd, stderr: &tailBuffer{limit: stderrLimit}, grace: cmp.Or(cfg.CloseGrace, DefaultCloseGrace), exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %w", cfg.NotFound, path, err)
		}
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	go c.read(stdout, cfg)
	return c, nil
}

// read passes the output lines on, then reaps the CLI.
func (c *Child) read(stdout io.Reader, cfg ChildConfig) {
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 64<<10), 64<<20)
	for scanner.Scan() {
		if line := bytes.TrimSpace(scanner.Bytes()); len(line) > 0 {
			cfg.OnLine(line)
		}
	}
	waitErr := errors.Join(scanner.Err(), c.cmd.Wait())
	detail := strings.TrimSpace(c.stderr.String())
	if detail != "" {
		detail = ": " + detail
	}
	if waitErr == nil {
		c.err = fmt.Errorf("%w (status 0)%s", cfg.Exited, detail)
	} else {
		c.err = fmt.Errorf("%w: %w%s", cfg.Exited, waitErr, detail)
	}
	if cfg.OnExit != nil {
		cfg.OnExit(c.err)
	}
	close(c.exited)
}

// WriteJSON sends one JSON line to the CLI.
func (c *Child) WriteJSON(value any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.stdin.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("write to the CLI: %w", err)
	}
	return nil
}

// Close closes the CLI's input, waits up to the grace period for it to
// exit, then kills its process group; it returns once the CLI is reaped.
func (c *Child) Close() {
	c.writeMu.Lock()
	_ = c.stdin.Close()
	c.writeMu.Unlock()
	select {
	case <-c.exited:
	case <-time.After(c.grace):
		c.Kill()
		<-c.exited
	}
}

// Kill kills the CLI's process group at once.
func (c *Child) Kill() {
	if c.cmd.Process != nil {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Exited is closed once the CLI has exited and its output was read.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Err says why the CLI's output ended; valid once Exited is closed.
func (c *Child) Err() error {
	<-c.exited
	return c.err
}

// Clip shortens an output line for an error message.
func Clip(data []byte) string {
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

// WorkDir returns the absolute form of a harness's working directory, this
// process's when dir is empty.
func WorkDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("working directory: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("working directory %q: %w", dir, err)
	}
	return abs, nil
}
