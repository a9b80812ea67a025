package claude_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external/claude"
	"github.com/agnogo/agnogo/storage"
)

// TestProjectDirMatchesTheCLI: the names claude 2.1.332 gave the project
// directories of these working directories.
func TestProjectDirMatchesTheCLI(t *testing.T) {
	long := "/tmp/TestProbeProjectDir972026753/004/" + strings.Repeat("long-dir-name/", 19) + "long-dir-name"
	for cwd, name := range map[string]string{
		"/home/agnogo/cli/proj":                        "-home-agnogo-cli-proj", // testdata: memory_paths of the init lines
		"/tmp/TestProbeProjectDir31215312/002/d😀é.x_y": "-tmp-TestProbeProjectDir31215312-002-d----x-y",
		long: strings.ReplaceAll(long, "/", "-")[:200] + "-ro9rwz",
	} {
		require.Equal(t, filepath.Join("/cfg", "projects", name), claude.ProjectDir("/cfg", cwd), cwd)
	}

	// The CLI runs in the physical directory.
	real := filepath.Join(t.TempDir(), "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(real, link))
	require.Equal(t, claude.ProjectDir("/cfg", real), claude.ProjectDir("/cfg", link))
}

// mirrorRig is a Mirror on a SQLite store and a config dir.
type mirrorRig struct {
	store  storage.Store
	mirror *claude.Mirror
}

func newMirror(t *testing.T) *mirrorRig {
	t.Helper()
	store := openStore(t)
	return &mirrorRig{store: store, mirror: &claude.Mirror{Store: store, ProjectKey: "coder", ConfigDir: t.TempDir(), Cwd: "/work/project", AgnoSessionID: "s1"}}
}

// on returns the same mirror with another config dir (another replica).
func (r *mirrorRig) on(configDir string) *claude.Mirror {
	m := *r.mirror
	m.ConfigDir = configDir
	return &m
}

// file is the path of a transcript file of the mirror's session sid;
// sub names a subagent.
func file(m *claude.Mirror, sid, sub string) string {
	dir := claude.ProjectDir(m.ConfigDir, m.Cwd)
	if sub != "" {
		return filepath.Join(dir, sid, "subagents", sub+".jsonl")
	}
	return filepath.Join(dir, sid+".jsonl")
}

// write writes lines to path.
func write(t *testing.T, path string, lines ...string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
}

// appendLines appends lines to path.
func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	require.NoError(t, err)
}

// stored returns the stored entries of a transcript, as text.
func (r *mirrorRig) stored(t *testing.T, sid, subpath string) []string {
	t.Helper()
	entries, err := r.store.ReadTranscript(context.Background(), storage.TranscriptKey{Framework: claude.Framework, ProjectKey: "coder", SessionID: sid, Subpath: subpath}, "", 0)
	require.NoError(t, err)
	var lines []string
	for _, e := range entries {
		lines = append(lines, string(e.Entry))
	}
	return lines
}

func entry(sid, uuid, kind string) string {
	return `{"type":"` + kind + `","uuid":"` + uuid + `","sessionId":"` + sid + `","message":{"role":"` + kind + `","content":"text of ` + uuid + `"}}`
}

func TestMirrorSaveAppendsOnlyNewLines(t *testing.T) {
	r := newMirror(t)
	path := file(r.mirror, "sid", "")
	write(t, path, entry("sid", "u1", "user"), entry("sid", "a1", "assistant"))
	require.NoError(t, r.mirror.Save(t.Context(), "sid"))
	require.Equal(t, []string{entry("sid", "u1", "user"), entry("sid", "a1", "assistant")}, r.stored(t, "sid", ""))

	require.NoError(t, r.mirror.Save(t.Context(), "sid"), "nothing new")
	require.Len(t, r.stored(t, "sid", ""), 2)

	appendLines(t, path, entry("sid", "u2", "user"), "", entry("sid", "a2", "assistant"))
	require.NoError(t, r.mirror.Save(t.Context(), "sid"))
	require.Equal(t, []string{entry("sid", "u1", "user"), entry("sid", "a1", "assistant"), entry("sid", "u2", "user"), entry("sid", "a2", "assistant")},
		r.stored(t, "sid", ""), "blank lines are no entries")

	behind := r.on(t.TempDir())
	write(t, file(behind, "sid", ""), entry("sid", "u1", "user"))
	require.NoError(t, behind.Save(t.Context(), "sid"), "a replica's file behind the database adds nothing")
	require.Len(t, r.stored(t, "sid", ""), 4)

	require.NoError(t, r.mirror.Save(t.Context(), "never-ran"), "no file, nothing to save")
	require.Empty(t, r.stored(t, "never-ran", ""))
}

func TestMirrorSavesAndRestoresSubagents(t *testing.T) {
	r := newMirror(t)
	main := []string{entry("sid", "u1", "user"), entry("sid", "a1", "assistant")}
	sub := []string{`{"type":"user","uuid":"x1","sessionId":"sid","isSidechain":true,"agentId":"x"}`, `{"type":"assistant","uuid":"x2","sessionId":"sid","isSidechain":true,"agentId":"x"}`}
	write(t, file(r.mirror, "sid", ""), main...)
	write(t, file(r.mirror, "sid", "agent-x"), sub...)
	write(t, filepath.Join(filepath.Dir(file(r.mirror, "sid", "agent-x")), "agent-x.meta.json"), `{"agentType":"Explore"}`)
	require.NoError(t, r.mirror.Save(t.Context(), "sid"))
	require.Equal(t, main, r.stored(t, "sid", ""))
	require.Equal(t, sub, r.stored(t, "sid", "subagents/agent-x"))
	subpaths, err := r.store.ListTranscriptSubpaths(t.Context(), claude.Framework, "coder", "sid", "")
	require.NoError(t, err)
	require.Equal(t, []string{"subagents/agent-x"}, subpaths, "only .jsonl files are transcripts")

	replica := r.on(t.TempDir())
	found, err := replica.Restore(t.Context(), "sid")
	require.NoError(t, err)
	require.True(t, found)
	for _, f := range []struct {
		path  string
		lines []string
	}{{file(replica, "sid", ""), main}, {file(replica, "sid", "agent-x"), sub}} {
		data, err := os.ReadFile(f.path)
		require.NoError(t, err)
		require.Equal(t, strings.Join(f.lines, "\n")+"\n", string(data), "restored byte for byte")
	}

	found, err = replica.Restore(t.Context(), "unknown")
	require.NoError(t, err)
	require.False(t, found)
	require.NoFileExists(t, file(replica, "unknown", ""))
}

func TestMirrorRestoreLeavesALongerFileAlone(t *testing.T) {
	r := newMirror(t)
	stored := []string{entry("sid", "u1", "user"), entry("sid", "a1", "assistant")}
	write(t, file(r.mirror, "sid", ""), stored...)
	require.NoError(t, r.mirror.Save(t.Context(), "sid"))

	ahead := r.on(t.TempDir())
	local := append(stored[:2:2], entry("sid", "u2", "user"))
	write(t, file(ahead, "sid", ""), local...)
	found, err := ahead.Restore(t.Context(), "sid")
	require.NoError(t, err)
	require.True(t, found)
	data, err := os.ReadFile(file(ahead, "sid", ""))
	require.NoError(t, err)
	require.Equal(t, strings.Join(local, "\n")+"\n", string(data), "the local file is ahead of the database")

	behind := r.on(t.TempDir())
	write(t, file(behind, "sid", ""), stored[0])
	_, err = behind.Restore(t.Context(), "sid")
	require.NoError(t, err)
	data, err = os.ReadFile(file(behind, "sid", ""))
	require.NoError(t, err)
	require.Equal(t, strings.Join(stored, "\n")+"\n", string(data), "a file behind the database is rewritten")
}

// TestMirrorKeepsUnreadableLines: a line that is not JSON (a line the CLI
// was killed in the middle of) is stored wrapped and restored as it was.
func TestMirrorKeepsUnreadableLines(t *testing.T) {
	r := newMirror(t)
	lines := []string{entry("sid", "u1", "user"), `{"type":"assistant","uuid":"a1","message":{"content":"cut sh`, `not json at all: <&> "quoted" \ back`,
		"{\"type\":\"assistant\",\"message\":{\"content\":\"cut in a character \xe2\x82", entry("sid", "u2", "user")}
	write(t, file(r.mirror, "sid", ""), lines...)
	require.NoError(t, r.mirror.Save(t.Context(), "sid"))
	stored := r.stored(t, "sid", "")
	require.Len(t, stored, 5)
	require.JSONEq(t, `{"agnogo_unreadable_line":"{\"type\":\"assistant\",\"uuid\":\"a1\",\"message\":{\"content\":\"cut sh"}`, stored[1])
	require.Contains(t, stored[3], "agnogo_unreadable_bytes", "a line that is not even UTF-8 is stored as its bytes")

	replica := r.on(t.TempDir())
	_, err := replica.Restore(t.Context(), "sid")
	require.NoError(t, err)
	data, err := os.ReadFile(file(replica, "sid", ""))
	require.NoError(t, err)
	require.Equal(t, strings.Join(lines, "\n")+"\n", string(data))

	require.NoError(t, replica.Save(t.Context(), "sid"), "the restored file holds what is stored")
	require.Len(t, r.stored(t, "sid", ""), 5)
}

func TestMirrorBranch(t *testing.T) {
	r := newMirror(t)
	lines := []string{
		`{"type":"queue-operation","operation":"enqueue","sessionId":"orig"}`,
		entry("orig", "u1", "user"), entry("orig", "a1", "assistant"), entry("orig", "u2", "user"), entry("orig", "a2", "assistant"),
		`{"type":"cost-state","sessionId":"orig","totalCostUSD":0.5}`,
	}
	write(t, file(r.mirror, "orig", ""), lines...)
	require.NoError(t, r.mirror.Save(t.Context(), "orig"))

	require.NoError(t, r.mirror.Branch(t.Context(), "orig", "a1", false, "upto"))
	want := []string{
		`{"operation":"enqueue","sessionId":"upto","type":"queue-operation"}`,
		`{"message":{"content":"text of u1","role":"user"},"sessionId":"upto","type":"user","uuid":"u1"}`,
		`{"message":{"content":"text of a1","role":"assistant"},"sessionId":"upto","type":"assistant","uuid":"a1"}`,
	}
	stored := r.stored(t, "upto", "")
	require.Len(t, stored, 3)
	for i := range want {
		require.JSONEq(t, want[i], stored[i])
	}
	written := fileLines(t, file(r.mirror, "upto", ""))
	require.Len(t, written, 3)
	for i := range want {
		require.JSONEq(t, want[i], written[i], "written where the CLI resumes it")
	}

	require.NoError(t, r.mirror.Branch(t.Context(), "orig", "u2", true, "before"))
	stored = r.stored(t, "before", "")
	require.Len(t, stored, 3, "up to a1: u2 is left out")
	require.JSONEq(t, want[2], strings.ReplaceAll(stored[2], `"before"`, `"upto"`))

	require.ErrorContains(t, r.mirror.Branch(t.Context(), "orig", "no-such-uuid", false, "nowhere"), "no entry no-such-uuid")
	require.Equal(t, lines, r.stored(t, "orig", ""), "the original is untouched")
}

func TestLastCostState(t *testing.T) {
	dir := t.TempDir()
	state, err := claude.LastCostState(filepath.Join(dir, "missing.jsonl"))
	require.NoError(t, err)
	require.Zero(t, state)

	path := filepath.Join(dir, "s.jsonl")
	write(t, path, entry("s", "u1", "user"))
	state, err = claude.LastCostState(path)
	require.NoError(t, err)
	require.Zero(t, state, "no cost-state line")

	write(t, path,
		`{"type":"cost-state","sessionId":"s","totalCostUSD":0.1,"modelUsage":{"m":{"inputTokens":1,"outputTokens":1,"costUSD":0.1}}}`,
		entry("s", "u1", "user"),
		`{"type":"cost-state","sessionId":"s","totalCostUSD":0.3,"totalAPIDuration":124,"modelUsage":{"m":{"inputTokens":30,"outputTokens":3,"cacheReadInputTokens":7,"cacheCreationInputTokens":2,"costUSD":0.3}}}`,
		`{"type":"user","uuid":"u2","message":{"role":"user","content":"what is a \"cost-state\" line?"}}`,
		`{"type":"cost-state", truncated`)
	state, err = claude.LastCostState(path)
	require.NoError(t, err)
	require.Equal(t, claude.CostState{TotalCostUSD: 0.3, ModelUsage: map[string]claude.ModelUsage{
		"m": {InputTokens: 30, OutputTokens: 3, CacheReadInputTokens: 7, CacheCreationInputTokens: 2, CostUSD: 0.3}}}, state)
}

// TestMirrorWaitsForALineBeingWritten: a line the CLI is still writing (no
// newline yet) is not stored half; the next save stores it whole.
func TestMirrorWaitsForALineBeingWritten(t *testing.T) {
	r := newMirror(t)
	path := file(r.mirror, "sid", "")
	first, second := entry("sid", "u1", "user"), entry("sid", "a1", "assistant")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(first+"\n"+second[:20]), 0o600))
	require.NoError(t, r.mirror.Save(t.Context(), "sid"))
	require.Equal(t, []string{first}, r.stored(t, "sid", ""))

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(second[20:] + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, r.mirror.Save(t.Context(), "sid"))
	require.Equal(t, []string{first, second}, r.stored(t, "sid", ""), "stored whole once complete")
}
