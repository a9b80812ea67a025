//go:build !unix

package workspace

import "os/exec"

// killProcessGroup leaves the default: only the command itself is killed on
// timeout or cancellation.
func killProcessGroup(cmd *exec.Cmd) {}
