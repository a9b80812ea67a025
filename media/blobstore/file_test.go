package blobstore_test

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/media/blobstore"
)

// dirEntries lists the files under dir, as slash-separated relative paths.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		names = append(names, filepath.ToSlash(rel))
		return err
	}))
	return names
}

// TestFileLayout: a file:// blob is <prefix><id>, beside <prefix><id>.attrs
// holding its content type, file name and MD5 as gocloud.dev's fileblob
// wrote them; a refused Put leaves no file, not even a temporary one.
func TestFileLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := media.Open(t.Context(), "file://"+filepath.ToSlash(dir)+"?prefix=media/",
		media.WithLimits(media.Limits{MaxBytes: 16}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })

	content := []byte("\xff\xd8\xff a jpeg")
	ref, err := store.Put(t.Context(), bytes.NewReader(content), media.Info{MimeType: "image/jpeg", Filename: "photo é.jpg"})
	require.NoError(t, err)
	_, err = store.Put(t.Context(), bytes.NewReader(make([]byte, 17)), media.Info{MimeType: "image/jpeg"})
	require.ErrorIs(t, err, media.ErrTooLarge)
	require.ElementsMatch(t, []string{"media/" + ref.ID, "media/" + ref.ID + ".attrs"}, dirEntries(t, dir))

	data, err := os.ReadFile(filepath.Join(dir, "media", ref.ID))
	require.NoError(t, err)
	require.Equal(t, content, data)
	attrs, err := os.ReadFile(filepath.Join(dir, "media", ref.ID+".attrs"))
	require.NoError(t, err)
	sum := md5.Sum(content)
	require.JSONEq(t, `{
		"user.cache_control": "", "user.content_disposition": "", "user.content_encoding": "", "user.content_language": "",
		"user.content_type": "image/jpeg",
		"user.metadata": {"filename": "photo é.jpg"},
		"md5": "`+base64.StdEncoding.EncodeToString(sum[:])+`"
	}`, string(attrs))

	stat, err := store.Stat(t.Context(), ref.ID)
	require.NoError(t, err)
	require.Equal(t, ref, stat)
	require.NoError(t, store.Delete(t.Context(), ref.ID))
	require.Empty(t, dirEntries(t, dir), "Delete removes the attributes too")
}

// TestFileReadsBlobsOfEarlierVersions: a directory gocloud.dev's fileblob
// wrote reads back with its types and names; a file put there without
// attributes is application/octet-stream, as fileblob said.
func TestFileReadsBlobsOfEarlierVersions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	content := []byte("\x89PNG an old upload")
	sum := md5.Sum(content)
	attrs, err := json.Marshal(map[string]any{
		"user.cache_control": "", "user.content_disposition": "", "user.content_encoding": "", "user.content_language": "",
		"user.content_type": "image/png", "user.metadata": map[string]string{"filename": "photo été.png"}, "md5": sum[:],
	})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old-upload"), content, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old-upload.attrs"), append(attrs, '\n'), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "by-hand"), []byte("?"), 0o644))

	store, err := media.Open(t.Context(), "file://"+filepath.ToSlash(dir))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	stat, err := store.Stat(t.Context(), "old-upload")
	require.NoError(t, err)
	require.Equal(t, media.Ref{ID: "old-upload", Size: int64(len(content)), MimeType: "image/png", Filename: "photo été.png"}, stat)
	r, err := store.Open(t.Context(), "old-upload")
	require.NoError(t, err)
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, content, data)

	stat, err = store.Stat(t.Context(), "by-hand")
	require.NoError(t, err)
	require.Equal(t, media.Ref{ID: "by-hand", Size: 1, MimeType: "application/octet-stream"}, stat)
}

// TestFileURLParameters: the directory must exist unless create_dir says
// to make it; metadata=skip writes no attributes; an unknown parameter is
// refused by name.
func TestFileURLParameters(t *testing.T) {
	t.Parallel()
	missing := filepath.ToSlash(filepath.Join(t.TempDir(), "a", "b"))
	_, err := media.Open(t.Context(), "file://"+missing)
	require.ErrorIs(t, err, fs.ErrNotExist)
	store, err := media.Open(t.Context(), "file://"+missing+"?create_dir=true&dir_file_mode=0750&no_tmp_dir=true")
	require.NoError(t, err)
	require.NoError(t, store.Close())
	info, err := os.Stat(missing)
	require.NoError(t, err)
	require.True(t, info.IsDir())

	for query, want := range map[string]string{
		"no_such_parameter=1":                  `unknown query parameter "no_such_parameter"`,
		"base_url=https://x&secret_key_path=k": `unknown query parameters "base_url", "secret_key_path"`,
		"dir_file_mode=rwx":                    `invalid value for "dir_file_mode"`,
		"metadata=xattr":                       `invalid value for "metadata"`,
	} {
		_, err := media.Open(t.Context(), "file://"+missing+"?"+query)
		require.ErrorContains(t, err, want, query)
	}
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = media.Open(t.Context(), "file://"+filepath.ToSlash(file))
	require.ErrorContains(t, err, "is not a directory")

	dir := t.TempDir()
	skip, err := blobstore.Open(t.Context(), "file://"+filepath.ToSlash(dir)+"?metadata=skip", media.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, skip.Close()) })
	ref, err := skip.Put(t.Context(), bytes.NewReader([]byte("x")), media.Info{MimeType: "text/plain", Filename: "a.txt"})
	require.NoError(t, err)
	require.Equal(t, []string{ref.ID}, dirEntries(t, dir))
	stat, err := skip.Stat(t.Context(), ref.ID)
	require.NoError(t, err)
	require.Equal(t, "application/octet-stream", stat.MimeType, "no attributes were kept")
}
