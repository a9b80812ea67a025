package workspace_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/tools/workspace"
)

func requireBash(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
}

func TestRunShell(t *testing.T) {
	t.Parallel()
	requireBash(t)
	b := setup(t, workspace.Config{ConfirmWrites: new(false), MaxShellOutputBytes: 100, Env: []string{"GREETING=hi", "PATH=/usr/bin:/bin"}})
	b.file(t, "marker.txt", "x")

	tests := []struct {
		name    string
		command string
		want    string
		wantErr string
	}{
		{"output and exit code", "echo hello", "hello\n[exit code: 0]", ""},
		{"runs in the root", "ls marker.txt", "marker.txt\n[exit code: 0]", ""},
		{"stderr is combined", "echo out; echo err >&2", "out\nerr\n[exit code: 0]", ""},
		{"non-zero exit is a result", "echo failing; exit 3", "failing\n[exit code: 3]", ""},
		{"no output", "true", "(no output)\n[exit code: 0]", ""},
		{"configured environment", "echo $GREETING", "hi\n[exit code: 0]", ""},
		{"ansi colours are stripped", `printf '\033[31mred\033[0m\n'`, "red\n[exit code: 0]", ""},
		{"empty command", "  ", "", "command is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := b.call(t, workspace.RunShellName, map[string]any{"command": tt.command})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	t.Run("long output is cut in the middle", func(t *testing.T) {
		t.Parallel()
		got, err := b.call(t, workspace.RunShellName, map[string]any{"command": "echo BEGIN; seq 1 1000; echo END"})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(got, "BEGIN\n1\n2\n"), got)
		require.True(t, strings.HasSuffix(got, "999\n1000\nEND\n[exit code: 0]"), got)
		require.Contains(t, got, "bytes of output omitted ...]")
		require.Less(t, len(got), 200)
	})
}

func TestRunShellTimeout(t *testing.T) {
	t.Parallel()
	requireBash(t)
	b := setup(t, workspace.Config{ConfirmWrites: new(false), ShellTimeout: 200 * time.Millisecond})
	start := time.Now()
	// The background child holds the output pipe: killing the group ends it too.
	_, err := b.call(t, workspace.RunShellName, map[string]any{"command": "echo started; sleep 30 & sleep 30"})
	require.ErrorContains(t, err, "command timed out after 200ms and was killed; output so far:\nstarted")
	require.Less(t, time.Since(start), 10*time.Second, "the command must be killed, not waited for")
}

func TestRunShellHonoursCancellation(t *testing.T) {
	t.Parallel()
	requireBash(t)
	b := setup(t, workspace.Config{ConfirmWrites: new(false)})
	tl, ok := b.tools.Lookup(workspace.RunShellName)
	require.True(t, ok)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	args, err := json.Marshal(map[string]any{"command": "sleep 30"})
	require.NoError(t, err)
	_, err = tl.Call(ctx, args)
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunShellTimeoutArgumentCannotExceedTheLimit(t *testing.T) {
	t.Parallel()
	requireBash(t)
	b := setup(t, workspace.Config{ConfirmWrites: new(false), ShellTimeout: 200 * time.Millisecond})
	_, err := b.call(t, workspace.RunShellName, map[string]any{"command": "sleep 30", "timeout_seconds": 3600})
	require.ErrorContains(t, err, "timed out after 200ms")
}
