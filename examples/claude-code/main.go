// Command claude-code runs Claude Code — the claude CLI — as an agnogo
// agent: one turn of the CLI in a working directory, its answer and the
// tools it called reported like any run's. It needs the claude CLI
// (npm install -g @anthropic-ai/claude-code), found as $AGNOGO_CLAUDE_BIN,
// else claude on PATH, and the CLI's own credentials (ANTHROPIC_API_KEY, or
// a `claude login`); ANTHROPIC_BASE_URL points it at another server.
//
//	go run ./examples/claude-code -dir ./some/project -prompt "What does this project do?"
//	go run ./examples/claude-code -permission-mode acceptEdits -prompt "Add a README"
//
// Served by AgentOS, the same agent is one entry of agnogo.yaml
// (`type: claude`, see docs/external.md), or external.New's agent in
// agentos.Config.Runners: sessions then resume the CLI's conversation on
// any replica, and permission prompts can pause runs for a person
// (claude.Options.ConfirmTools).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/run"
)

func main() {
	if err := ask(); err != nil {
		fmt.Fprintln(os.Stderr, "claude-code:", err)
		os.Exit(1)
	}
}

func ask() error {
	dir := flag.String("dir", ".", "the CLI's working directory")
	prompt := flag.String("prompt", "List the files in this directory and say in one sentence what they are for.", "what to ask Claude Code")
	modelName := flag.String("model", claude.DefaultModel, "the model the CLI uses")
	permissionMode := flag.String("permission-mode", "default", "the CLI's --permission-mode: default, acceptEdits, bypassPermissions, plan")
	flag.Parse()
	// Ctrl-C interrupts the CLI's turn.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	bin := cmp.Or(os.Getenv("AGNOGO_CLAUDE_BIN"), "claude")
	if _, err := exec.LookPath(bin); err != nil {
		return fmt.Errorf("the claude CLI is not installed (%w): npm install -g @anthropic-ai/claude-code, or set AGNOGO_CLAUDE_BIN to its binary", err)
	}
	driver, err := claude.NewDriver(claude.Options{Bin: bin, Cwd: *dir, Model: *modelName, PermissionMode: *permissionMode})
	if err != nil {
		return err
	}
	coder, err := external.New(external.Config{ID: "claude-code", Name: "Claude Code", Driver: driver, Cwd: *dir})
	if err != nil {
		return err
	}
	out, err := coder.Run(ctx, &run.Input{InputContent: *prompt})
	if out == nil {
		return err
	}
	for _, call := range out.Tools {
		fmt.Printf("tool %s %v\n", call.ToolName, call.ToolArgs)
	}
	fmt.Println(out.ContentString())
	if out.Status != run.StatusCompleted {
		return errors.Join(fmt.Errorf("the run ended %s", out.Status), err)
	}
	return nil
}
