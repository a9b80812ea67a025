package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
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
	// A test binary records no version or revision of its own.
	want := "agnogo devel (" + runtime.Version() + ")\n"
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

// releaseSizeBudget bounds the release binary (-s -w): 72 MB, the target
// docs/benchmarks.md records it against (scripts/binsize.sh says what each
// module adds; CEL for the workflows costs 9 of them, the toolkits and
// CodeMode 3.5, tracing and Prometheus 1.6). A dependency that links
// text/template's methods (see TestBinaryLinksNoTemplates) or pulls in grpc
// — as OpenTelemetry's own OTLP exporters do — would cross it.
const releaseSizeBudget = 72_000_000

// TestBinary builds the real binary once, as the README and
// scripts/release.sh do, and checks what a shell sees: a static binary
// within its size budget, the version set at link time with the revision
// it was built from, and the exit codes.
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
	// The revision is stamped from git, asked for explicitly: a GOFLAGS of
	// -buildvcs=false would leave it out.
	_, gitErr := exec.LookPath("git")
	build := exec.CommandContext(t.Context(), goTool, "build", "-trimpath", fmt.Sprintf("-buildvcs=%t", gitErr == nil),
		"-ldflags=-s -w -X github.com/agnogo/agnogo/internal/buildinfo.version=v9.8.7-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	output, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", output)
	requireStatic(t, bin)
	info, err := os.Stat(bin)
	require.NoError(t, err)
	require.LessOrEqual(t, info.Size(), int64(releaseSizeBudget), "the release binary is %.1f MB", float64(info.Size())/1e6)

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

	got := runBinary("version", "--json")
	require.Equal(t, 0, got.code, got.stderr)
	var version struct {
		Version   string `json:"version"`
		Revision  string `json:"revision"`
		GoVersion string `json:"go_version"`
	}
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &version), got.stdout)
	require.Equal(t, "v9.8.7-test", version.Version)
	require.Equal(t, runtime.Version(), version.GoVersion)
	if head, err := exec.CommandContext(t.Context(), "git", "rev-parse", "HEAD").Output(); gitErr == nil && err == nil {
		require.Equal(t, strings.TrimSpace(string(head)), version.Revision, "the revision the binary was built from")
	}
	got = runBinary("version")
	require.Equal(t, 0, got.code, got.stderr)
	require.True(t, strings.HasPrefix(got.stdout, "agnogo v9.8.7-test ("), got.stdout)
	require.Contains(t, got.stdout, runtime.Version())

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

// requireStatic fails unless the ELF file at path is statically linked: no
// program interpreter and no shared library it needs.
func requireStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "the binary asks for a dynamic loader")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs, "the binary needs shared libraries")
}
