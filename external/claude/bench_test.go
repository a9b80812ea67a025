package claude_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/internal/testcli"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// BenchmarkTrivialTurn compares the wall time of one trivial turn of the
// real claude CLI (against the fake Messages API) invoked directly — `claude
// -p` — with the same turn run through agnogo: a stored session and run,
// the CLI over stream-json with the control protocol, and the transcript
// mirrored into SQLite. Run both in one invocation, e.g.
//
//	go test ./external/claude -run '^$' -bench TrivialTurn -benchtime 20x -count 3
func BenchmarkTrivialTurn(b *testing.B) {
	bin := testcli.ClaudeBin(b)
	api := fakeanthropic.New(b)
	api.Directed()
	cwd := b.TempDir()
	prompt := "say hi [[text:hi]]"

	b.Run("direct", func(b *testing.B) {
		env := testcli.ClaudeEnv(api.URL, b.TempDir())
		for b.Loop() {
			cmd := exec.Command(bin, "-p", prompt, "--output-format", "stream-json", "--verbose", "--model="+claude.DefaultModel)
			cmd.Dir, cmd.Env = cwd, env
			out, err := cmd.Output()
			require.NoError(b, err, "%s", out)
		}
	})

	b.Run("agnogo", func(b *testing.B) {
		store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
		require.NoError(b, err)
		defer store.Close()
		driver, err := claude.NewDriver(claude.Options{Bin: bin, Cwd: cwd, Env: testcli.ClaudeVars(api.URL, b.TempDir()), Transcripts: store})
		require.NoError(b, err)
		a, err := external.New(external.Config{ID: "bench", Driver: driver, Store: store, Cwd: cwd})
		require.NoError(b, err)
		for b.Loop() {
			// A new session per turn, as the direct run starts one.
			out, err := a.Run(b.Context(), &run.Input{InputContent: prompt, PersistOnStart: true})
			require.NoError(b, err)
			require.Equal(b, "hi", out.Content)
		}
	})
}
