package media_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/media/mediatest"
)

func TestLocalConformance(t *testing.T) {
	t.Parallel()
	mediatest.Run(t, func(t *testing.T, opts media.Options) media.Store {
		store, err := media.NewLocal(media.LocalConfig{Dir: filepath.Join(t.TempDir(), "media"), Options: opts})
		require.NoError(t, err)
		return store
	})
}

// TestLocalLayout: a blob is <id> beside <id>.json, and neither a refused nor
// a failed Put leaves a temporary file behind.
func TestLocalLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := media.NewLocal(media.LocalConfig{Dir: dir, Options: media.Options{Limits: media.Limits{MaxBytes: 4}}})
	require.NoError(t, err)
	ref, err := store.Put(t.Context(), bytes.NewReader([]byte("abcd")), media.Info{MimeType: "text/plain", Filename: "a.txt"})
	require.NoError(t, err)
	_, err = store.Put(t.Context(), bytes.NewReader([]byte("abcde")), media.Info{MimeType: "text/plain"})
	require.ErrorIs(t, err, media.ErrTooLarge)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{ref.ID, ref.ID + ".json"}, names)
	info, err := os.Stat(filepath.Join(dir, ref.ID))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "blobs are private to the server")
}

func TestNewLocalNeedsDir(t *testing.T) {
	t.Parallel()
	_, err := media.NewLocal(media.LocalConfig{})
	require.ErrorContains(t, err, "Dir is required")
	_, err = media.NewLocal(media.LocalConfig{Dir: t.TempDir(), Options: media.Options{PublicBaseURL: "cdn.example.com"}})
	require.ErrorContains(t, err, "want an absolute http(s) URL")
	_, err = media.NewLocal(media.LocalConfig{Dir: t.TempDir(), Options: media.Options{Limits: media.Limits{PerType: map[string]int64{"video/": 1}}}})
	require.ErrorContains(t, err, `"video/" is not a MIME type`)
	_, err = media.NewLocal(media.LocalConfig{Dir: t.TempDir(), Options: media.Options{Limits: media.Limits{PerType: map[string]int64{"Video": 1}}}})
	require.ErrorContains(t, err, `write the type "Video" in lower case`)
	require.NoError(t, media.Limits{PerType: map[string]int64{"video": 1, "image/*": 2, "application/pdf": 3}}.Validate())
	bad, err := media.NewLocal(media.LocalConfig{Dir: t.TempDir(), Options: media.Options{NewID: func() string { return "../escape" }}})
	require.NoError(t, err)
	_, err = bad.Put(t.Context(), bytes.NewReader(nil), media.Info{})
	require.ErrorContains(t, err, `generated blob id "../escape" is not valid`)
}

// TestLocalCreatesDirOnFirstPut: opening a store leaves nothing on disk
// until a blob arrives, so a server that never receives one (or `agnogo
// run`) does not litter its working directory.
func TestLocalCreatesDirOnFirstPut(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "media")
	store, err := media.NewLocal(media.LocalConfig{Dir: dir})
	require.NoError(t, err)
	require.NoDirExists(t, dir)
	_, err = store.Stat(t.Context(), "missing")
	require.ErrorIs(t, err, media.ErrNotFound)

	ref, err := store.Put(t.Context(), bytes.NewReader([]byte("x")), media.Info{MimeType: "text/plain"})
	require.NoError(t, err)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	require.FileExists(t, filepath.Join(dir, ref.ID))

	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = media.NewLocal(media.LocalConfig{Dir: file})
	require.ErrorContains(t, err, "not a directory")
}
