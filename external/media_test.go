package external_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/run"
)

// pngBytes is the start of a PNG file, enough for content sniffing.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func TestStageWritesAttachmentsAndRemovesThem(t *testing.T) {
	cwd := t.TempDir()
	source := filepath.Join(t.TempDir(), "report.pdf")
	require.NoError(t, os.WriteFile(source, []byte("%PDF-1.4 report"), 0o600))
	in := &run.Input{
		Images: []run.Image{{Content: pngBytes, Format: "png"}, {URL: "https://example.com/cat.png"}},
		Files: []run.File{
			{Filename: "notes.txt", Content: []byte("remember the milk"), MimeType: "text/plain"},
			{Filename: "notes.txt", Content: []byte("second notes"), MimeType: "text/plain"},
			{Filepath: source},
		},
	}
	staged, err := external.Stage(cwd, "run-1", in)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(cwd, ".agnogo", "uploads", "run-1"), staged.Dir)
	require.Len(t, staged.Files, 5)

	image := staged.Files[0]
	require.Equal(t, filepath.Join(staged.Dir, "file.png"), image.Path, "a nameless image is named by its type")
	require.Equal(t, "image/png", image.MimeType)
	require.Equal(t, int64(len(pngBytes)), image.Size)
	require.Equal(t, "https://example.com/cat.png", staged.Files[1].URL)
	require.Empty(t, staged.Files[1].Path, "a URL is not downloaded")
	require.Equal(t, filepath.Join(staged.Dir, "notes.txt"), staged.Files[2].Path)
	require.Equal(t, filepath.Join(staged.Dir, "notes-2.txt"), staged.Files[3].Path, "duplicate names get a suffix")
	require.Equal(t, filepath.Join(staged.Dir, "report.pdf"), staged.Files[4].Path)
	second, err := os.ReadFile(staged.Files[3].Path)
	require.NoError(t, err)
	require.Equal(t, "second notes", string(second))
	copied, err := os.ReadFile(staged.Files[4].Path)
	require.NoError(t, err)
	require.Equal(t, "%PDF-1.4 report", string(copied))

	prompt := staged.Prompt()
	require.Contains(t, prompt, "Attached files. Read them before answering")
	require.Contains(t, prompt, "- "+staged.Files[2].Path+" (text/plain, 17 bytes)")
	require.Contains(t, prompt, "- https://example.com/cat.png (remote, not downloaded)")

	require.NoError(t, staged.Remove())
	_, err = os.Stat(filepath.Join(cwd, ".agnogo"))
	require.ErrorIs(t, err, os.ErrNotExist, "empty uploads folders are removed too")
}

func TestStageWithoutAttachments(t *testing.T) {
	staged, err := external.Stage(t.TempDir(), "run-1", &run.Input{InputContent: "hi"})
	require.NoError(t, err)
	require.Nil(t, staged)
	require.Empty(t, staged.Prompt())
	require.NoError(t, staged.Remove())
}

func TestStageSanitisesNames(t *testing.T) {
	cwd := t.TempDir()
	long := strings.Repeat("a", 200) + ".txt"
	in := &run.Input{Files: []run.File{
		{Filename: "../../etc/passwd", Content: []byte("x")},
		{Filename: "..", Content: []byte("x")},
		{Filename: "my report (final).txt", Content: []byte("x")},
		{Filename: long, Content: []byte("x")},
		{Filename: "/abs/olute.md", Content: []byte("x")},
	}}
	staged, err := external.Stage(cwd, "../run", in)
	require.NoError(t, err)
	t.Cleanup(func() { _ = staged.Remove() })
	require.Equal(t, filepath.Join(cwd, ".agnogo", "uploads", "run"), staged.Dir, "the run id is sanitised too")
	var names []string
	for _, f := range staged.Files {
		require.Equal(t, staged.Dir, filepath.Dir(f.Path), "every file stays in the run's uploads folder")
		names = append(names, filepath.Base(f.Path))
	}
	require.Equal(t, "etc_passwd.txt", names[0], "named by its sniffed type when it has no extension")
	require.Equal(t, "file.txt", names[1])
	require.Equal(t, "my_report__final_.txt", names[2])
	require.Len(t, names[3], 120)
	require.True(t, strings.HasSuffix(names[3], "a.txt"), "a long name keeps its extension: %s", names[3])
	require.Equal(t, "abs_olute.md", names[4])
}

func TestStageRefusesAudioAndVideo(t *testing.T) {
	cwd := t.TempDir()
	_, err := external.Stage(cwd, "run-1", &run.Input{Audios: []run.Audio{{Content: []byte("RIFF")}}})
	require.ErrorIs(t, err, external.ErrUnsupportedMedia)
	_, err = external.Stage(cwd, "run-1", &run.Input{Videos: []run.Video{{URL: "https://example.com/v.mp4"}}})
	require.ErrorIs(t, err, external.ErrUnsupportedMedia)
	_, err = os.Stat(filepath.Join(cwd, ".agnogo"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written")
}

func TestStageRefusesSymlinksAndRollsBack(t *testing.T) {
	elsewhere := t.TempDir()

	t.Run("symlinked uploads folder", func(t *testing.T) {
		cwd := t.TempDir()
		require.NoError(t, os.Symlink(elsewhere, filepath.Join(cwd, ".agnogo")))
		_, err := external.Stage(cwd, "run-1", &run.Input{Files: []run.File{{Filename: "a.txt", Content: []byte("x")}}})
		require.ErrorIs(t, err, external.ErrUnsupportedMedia)
		entries, err := os.ReadDir(elsewhere)
		require.NoError(t, err)
		require.Empty(t, entries, "nothing written through the symlink")
	})

	t.Run("symlinked source file", func(t *testing.T) {
		cwd := t.TempDir()
		secret := filepath.Join(elsewhere, "secret")
		require.NoError(t, os.WriteFile(secret, []byte("top secret"), 0o600))
		link := filepath.Join(t.TempDir(), "innocent.txt")
		require.NoError(t, os.Symlink(secret, link))
		in := &run.Input{Files: []run.File{{Filename: "first.txt", Content: []byte("written first")}, {Filepath: link}}}
		_, err := external.Stage(cwd, "run-1", in)
		require.ErrorIs(t, err, external.ErrUnsupportedMedia)
		require.Contains(t, err.Error(), "symlinks are refused")
		_, err = os.Stat(filepath.Join(cwd, ".agnogo"))
		require.ErrorIs(t, err, os.ErrNotExist, "the file staged before the failure is rolled back")
	})

	t.Run("directory as source", func(t *testing.T) {
		_, err := external.Stage(t.TempDir(), "run-1", &run.Input{Files: []run.File{{Filepath: elsewhere}}})
		require.ErrorIs(t, err, external.ErrUnsupportedMedia)
	})

	t.Run("no content at all", func(t *testing.T) {
		_, err := external.Stage(t.TempDir(), "run-1", &run.Input{Files: []run.File{{Filename: "empty.txt"}}})
		require.ErrorIs(t, err, external.ErrUnsupportedMedia)
	})
}

func TestStageKeepsOtherRunsUploads(t *testing.T) {
	cwd := t.TempDir()
	in := &run.Input{Files: []run.File{{Filename: "a.txt", Content: []byte("x")}}}
	first, err := external.Stage(cwd, "run-1", in)
	require.NoError(t, err)
	second, err := external.Stage(cwd, "run-2", in)
	require.NoError(t, err)
	require.NoError(t, first.Remove())
	_, err = os.Stat(second.Files[0].Path)
	require.NoError(t, err, "another run's uploads stay")
	require.NoError(t, second.Remove())
	_, err = os.Stat(filepath.Join(cwd, ".agnogo"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
