package claude_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
// -p`, and the CLI over stream-json with the control protocol as agnogo
// drives it — with the same turn run through agnogo: a stored session and
// run, and the transcript mirrored into SQLite. Run all in one invocation,
// e.g.
//
//	go test ./external/claude -run '^$' -bench TrivialTurn -benchtime 20x -count 3
func BenchmarkTrivialTurn(b *testing.B) {
	bin := testcli.ClaudeBin(b)
	api := fakeanthropic.New(b)
	api.Directed()
	cwd := b.TempDir()
	prompt := "say hi [[text:hi]]"

	direct := func(b *testing.B, env []string) {
		cmd := exec.Command(bin, "-p", prompt, "--output-format", "stream-json", "--verbose", "--model="+claude.DefaultModel)
		cmd.Dir, cmd.Env = cwd, env
		out, err := cmd.Output()
		require.NoError(b, err, "%s", out)
	}
	newAgent := func(b *testing.B) *external.Agent {
		store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
		require.NoError(b, err)
		b.Cleanup(func() { store.Close() })
		driver, err := claude.NewDriver(claude.Options{Bin: bin, Cwd: cwd, Env: testcli.ClaudeVars(api.URL, b.TempDir()), Transcripts: store})
		require.NoError(b, err)
		a, err := external.New(external.Config{ID: "bench", Driver: driver, Store: store, Cwd: cwd})
		require.NoError(b, err)
		return a
	}
	throughAgnogo := func(b *testing.B, a *external.Agent) {
		// A new session per turn, as the direct run starts one.
		out, err := a.Run(b.Context(), &run.Input{InputContent: prompt, PersistOnStart: true})
		require.NoError(b, err)
		require.Equal(b, "hi", out.Content)
	}

	b.Run("direct", func(b *testing.B) {
		env := testcli.ClaudeEnv(api.URL, b.TempDir())
		for b.Loop() {
			direct(b, env)
		}
	})

	// The CLI as agnogo drives it (stream-json with the control protocol),
	// without agnogo: no session, no run rows, no transcript mirror.
	b.Run("protocol", func(b *testing.B) {
		env := testcli.ClaudeEnv(api.URL, b.TempDir())
		for b.Loop() {
			p, err := claude.StartProcess(b.Context(), claude.ProcessConfig{Bin: bin, Dir: cwd, Env: env,
				Args: []string{"--replay-user-messages", "--model=" + claude.DefaultModel}})
			require.NoError(b, err)
			_, err = p.Initialize(b.Context())
			require.NoError(b, err)
			require.NoError(b, p.Send(prompt))
			var last claude.Line
			for line, err := range p.Turn(b.Context()) {
				require.NoError(b, err)
				last = line
			}
			require.Equal(b, "hi", last.ResultText())
			require.NoError(b, p.Close())
		}
	})

	b.Run("agnogo", func(b *testing.B) {
		a := newAgent(b)
		for b.Loop() {
			throughAgnogo(b, a)
		}
	})

	// paired runs a direct turn and a turn through agnogo in each
	// iteration, alternating which goes first, so both see the same machine
	// load; it reports their mean wall times and agnogo's overhead.
	b.Run("paired", func(b *testing.B) {
		env := testcli.ClaudeEnv(api.URL, b.TempDir())
		a := newAgent(b)
		var directTime, agnogoTime time.Duration
		i := 0
		for b.Loop() {
			timed := func(f func()) time.Duration { start := time.Now(); f(); return time.Since(start) }
			if i%2 == 0 {
				directTime += timed(func() { direct(b, env) })
				agnogoTime += timed(func() { throughAgnogo(b, a) })
			} else {
				agnogoTime += timed(func() { throughAgnogo(b, a) })
				directTime += timed(func() { direct(b, env) })
			}
			i++
		}
		b.ReportMetric(float64(directTime.Milliseconds())/float64(i), "direct-ms/turn")
		b.ReportMetric(float64(agnogoTime.Milliseconds())/float64(i), "agnogo-ms/turn")
		b.ReportMetric((float64(agnogoTime)/float64(directTime)-1)*100, "overhead-%")
	})
}

// BenchmarkMirrorSaveAfterToolBatch is the cost of mirroring one tool
// batch (two new lines) of a long session: a 4,000-line (~8 MB)
// transcript already stored, then each iteration appends two lines to the
// file and saves, as the driver does after every batch of tool results.
func BenchmarkMirrorSaveAfterToolBatch(b *testing.B) {
	store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	require.NoError(b, err)
	defer store.Close()
	mirror := &claude.Mirror{Store: store, ProjectKey: "bench", ConfigDir: b.TempDir(), Cwd: "/work/project", AgnoSessionID: "s1"}
	path := filepath.Join(claude.ProjectDir(mirror.ConfigDir, mirror.Cwd), "sid.jsonl")
	require.NoError(b, os.MkdirAll(filepath.Dir(path), 0o700))
	line := func(i int) string {
		return `{"type":"assistant","uuid":"` + strconv.Itoa(i) + `","sessionId":"sid","message":{"content":"` + strings.Repeat("x", 2000) + `"}}` + "\n"
	}
	var initial strings.Builder
	for i := range 4000 {
		initial.WriteString(line(i))
	}
	require.NoError(b, os.WriteFile(path, []byte(initial.String()), 0o600))
	require.NoError(b, mirror.Save(b.Context(), "sid"))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(b, err)
	defer f.Close()
	n := 4000
	for b.Loop() {
		_, err := f.WriteString(line(n) + line(n+1))
		require.NoError(b, err)
		n += 2
		require.NoError(b, mirror.Save(b.Context(), "sid"))
	}
}
