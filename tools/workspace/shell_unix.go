//go:build unix

package workspace

import (
	"os/exec"
	"syscall"
)

// killProcessGroup runs the command in its own process group and, on
// timeout or cancellation, kills the whole group, so children the command
// started do not outlive it.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
