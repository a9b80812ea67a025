package claude_test

import (
	"os/signal"
	"syscall"
)

// syscallIgnore ignores one signal in the fake CLI.
func syscallIgnore(sig syscall.Signal) { signal.Ignore(sig) }
