package workspace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// shellWaitDelay is how long run_shell waits for the output pipes after the
// command was killed, in case a background child still holds them.
const shellWaitDelay = 2 * time.Second

type runShellArgs struct {
	Command        string `json:"command" jsonschema:"bash command line, run with bash -c in the workspace root"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"seconds before the command is killed; defaults to the workspace limit, which is also the maximum"`
}

// ansiEscape matches ANSI CSI sequences (colours, cursor moves) that only
// waste the model's tokens.
var ansiEscape = regexp.MustCompile(`\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])`)

// runShell runs a command with bash in the root and reports its output and
// exit code. A non-zero exit is a result, not an error: the model reads it.
func (k *Toolkit) runShell(ctx context.Context, args runShellArgs) (string, error) {
	if strings.TrimSpace(args.Command) == "" {
		return "", errors.New("command is empty")
	}
	if args.TimeoutSeconds < 0 {
		return "", errors.New("timeout_seconds must not be negative")
	}
	timeout := k.shellTimeout
	if requested := time.Duration(args.TimeoutSeconds) * time.Second; requested > 0 && requested < timeout {
		timeout = requested
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(runCtx, "bash", "-c", args.Command)
	cmd.Dir = k.root
	cmd.Env = k.env
	output := &headTail{limit: k.maxShellOutputBytes}
	cmd.Stdout = output
	cmd.Stderr = output
	cmd.WaitDelay = shellWaitDelay
	killProcessGroup(cmd)

	err := cmd.Run()
	text := strings.TrimRight(ansiEscape.ReplaceAllString(output.String(), ""), "\n")
	if text == "" {
		text = "(no output)"
	}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("command cancelled: %w", context.Cause(ctx))
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("command timed out after %s and was killed; output so far:\n%s", timeout, text)
	case err == nil:
		return text + "\n[exit code: 0]", nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		return fmt.Sprintf("%s\n[exit code: %d]", text, exitErr.ExitCode()), nil
	default:
		return "", fmt.Errorf("run command: %w", err)
	}
}

// headTail keeps the start and the end of a long output and counts what it
// drops from the middle. Stdout and stderr share it, hence the lock.
type headTail struct {
	mu      sync.Mutex
	limit   int
	head    []byte
	tail    []byte
	dropped int
}

// Write implements io.Writer; it never fails.
func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	headLimit := h.limit / 2
	if room := headLimit - len(h.head); room > 0 {
		take := min(room, len(p))
		h.head = append(h.head, p[:take]...)
		p = p[take:]
	}
	h.tail = append(h.tail, p...)
	tailLimit := h.limit - headLimit
	if extra := len(h.tail) - tailLimit; extra > 0 {
		h.dropped += extra
		h.tail = append(h.tail[:0], h.tail[extra:]...)
	}
	return n, nil
}

// String returns the kept output, with a note where the middle was cut.
func (h *headTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dropped == 0 {
		return string(h.head) + string(h.tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes of output omitted ...]\n%s", h.head, h.dropped, h.tail)
}
