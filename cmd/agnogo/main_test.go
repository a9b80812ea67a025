package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// result is what a user sees of one agnogo invocation.
type result struct {
	stdout, stderr string
	code           int
}

// agnogo runs the command line in-process, as the binary would.
func agnogo(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// tempDB returns a database URL for a new SQLite file and the file's path.
func tempDB(t *testing.T) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agnogo.db")
	return "sqlite://" + path, path
}

func TestVersion(t *testing.T) {
	t.Parallel()
	want := "agnogo dev (" + runtime.Version() + ")\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		got := agnogo(t, args...)
		require.Equal(t, exitOK, got.code, got.stderr)
		require.Equal(t, want, got.stdout)
		require.Empty(t, got.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		mentions string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"migrate", "--bogus"}, "unknown flag: --bogus"},
		{"stray argument", []string{"migrate", "extra"}, `unknown command "extra"`},
		{"flag without value", []string{"migrate", "--db"}, "flag needs an argument"},
		{"garbage target", []string{"migrate", "--target", "latest"}, `--target: version "latest": want MAJOR.MINOR.PATCH`},
		{"unknown scheme", []string{"migrate", "--db", "mysql://u@h/db"}, `scheme "mysql" is not supported; use sqlite://PATH`},
		{"bare path", []string{"migrate", "--db", "agnogo.db"}, "has no scheme"},
		{"force alone", []string{"migrate", "--force"}, "--force only applies to --cleanup-legacy-runs"},
		{"schema on sqlite", []string{"migrate", "--db", "sqlite://x.db", "--schema", "other"}, "--schema applies to postgres:// databases only"},
		{"serve bad addr", []string{"serve", "--addr", "7777"}, "want HOST:PORT"},
		{"serve unknown scheme", []string{"serve", "--db", "redis://localhost"}, `scheme "redis"`},
		{"version argument", []string{"version", "now"}, `unknown command "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := agnogo(t, tt.args...)
			require.Equal(t, exitUsage, got.code, "stderr: %s", got.stderr)
			require.Empty(t, got.stdout)
			require.True(t, strings.HasPrefix(got.stderr, "agnogo: "), got.stderr)
			require.Contains(t, got.stderr, tt.mentions)
			require.Contains(t, got.stderr, "--help' for usage")
		})
	}
}

func TestUsageErrorsCreateNothing(t *testing.T) {
	t.Parallel()
	dbURL, path := tempDB(t)
	got := agnogo(t, "migrate", "--db", dbURL, "--target", "3.x")
	require.Equal(t, exitUsage, got.code)
	require.NoFileExists(t, path, "a rejected command line must not create the database")
}

// TestBinary builds the real binary once and checks what a shell sees: the
// version set at link time and the exit codes.
func TestBinary(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the go tool is not on PATH: %v", err)
		}
		t.Skipf("the go tool is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "agnogo")
	build := exec.CommandContext(t.Context(), goTool, "build", "-ldflags=-X main.version=v9.8.7-test", "-o", bin, ".")
	output, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", output)

	runBinary := func(args ...string) result {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = t.TempDir()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if exitErr, ok := err.(*exec.ExitError); ok {
			code = exitErr.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	}

	got := runBinary("version")
	require.Equal(t, 0, got.code, got.stderr)
	require.Equal(t, "agnogo v9.8.7-test ("+runtime.Version()+")\n", got.stdout)

	got = runBinary("migrate", "--bogus")
	require.Equal(t, 2, got.code)
	require.Contains(t, got.stderr, "agnogo: unknown flag: --bogus")

	dbURL, _ := tempDB(t)
	got = runBinary("migrate", "--db", dbURL)
	require.Equal(t, 0, got.code, got.stderr)
	require.Contains(t, got.stdout, "agno_runs          created        -> 3.0.0")

	// serve as a process is TestServeBinary's; here only its usage errors.
	got = runBinary("serve", "--db", dbURL, "--addr", "no-port")
	require.Equal(t, 2, got.code)
	require.Contains(t, got.stderr, `--addr "no-port": want HOST:PORT`)

	// With no --db the default sqlite://./agnogo.db lands in the working
	// directory.
	got = runBinary("migrate", "--json")
	require.Equal(t, 0, got.code, got.stderr)
	require.Contains(t, got.stdout, `"database": "sqlite://./agnogo.db"`)
}
