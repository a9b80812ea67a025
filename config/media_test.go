package config

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/media/blobstore"
)

func TestParseMediaKeys(t *testing.T) {
	t.Parallel()
	file := mustParse(t, "name: x\n", nil)
	require.Empty(t, file.MediaStorage, "the default: a directory in the data directory")
	require.Equal(t, DefaultMaxUploadBytes, file.MaxUploadBytes)
	require.Equal(t, int64(32<<20), file.MaxUploadBytes)
	require.Nil(t, file.MaxUploadBytesPerType)
	defaults, err := Default(env(nil))
	require.NoError(t, err)
	require.Equal(t, DefaultMaxUploadBytes, defaults.MaxUploadBytes, "no config file: the same defaults")

	for yaml, want := range map[string]int64{
		"max_upload_bytes: 1048576\n": 1 << 20,
		"max_upload_bytes: 0\n":       0,
		"max_upload_bytes: 32MiB\n":   32 << 20,
		"max_upload_bytes: 200MB\n":   200_000_000,
		"max_upload_bytes: 1.5 GiB\n": 3 << 29,
		"max_upload_bytes: 512kib\n":  512 << 10,
		"max_upload_bytes: 10 B\n":    10,
		"max_upload_bytes: ${MAX}\n":  64 << 20,
	} {
		require.Equal(t, want, mustParse(t, yaml, map[string]string{"MAX": "64MiB"}).MaxUploadBytes, yaml)
	}

	file = mustParse(t, "max_upload_bytes_per_type:\n  Video: 200MiB\n  image/*: 5MB\n  application/pdf: 0\n", nil)
	require.Equal(t, map[string]int64{"video": 200 << 20, "image/*": 5_000_000, "application/pdf": 0}, file.MaxUploadBytesPerType,
		"types are matched in lower case")

	for _, storage := range []string{"./data/media", "/var/lib/agnogo/media", "s3://b?region=us-east-1", "gs://b", "azblob://c", "file:///srv/media", "${MEDIA}"} {
		require.Equal(t, strings.ReplaceAll(storage, "${MEDIA}", "gs://from-env"), mustParse(t, "media_storage: "+storage+"\n", map[string]string{"MEDIA": "gs://from-env"}).MediaStorage)
	}
}

func TestParseMediaKeysErrors(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]string{
		"media_storage: ftp://host/media\n":                 `agnogo.yaml:1: media_storage: URL scheme "ftp" is not azblob, file, gs, s3; or give a directory path`,
		"media_storage: [a]\n":                              `agnogo.yaml:1: media_storage: want a string, got a list`,
		"max_upload_bytes: -1\n":                            `agnogo.yaml:1: max_upload_bytes: want a size of at least 0 bytes, got -1`,
		"max_upload_bytes: lots\n":                          `agnogo.yaml:1: max_upload_bytes: want a size in bytes, such as 33554432, 32MiB or 200MB; got "lots"`,
		"max_upload_bytes: 32 MB per file\n":                `agnogo.yaml:1: max_upload_bytes: want a size in bytes`,
		"max_upload_bytes: 99999999999TiB\n":                `agnogo.yaml:1: max_upload_bytes: "99999999999TiB" is too large`,
		"max_upload_bytes_per_type: [video]\n":              `agnogo.yaml:1: max_upload_bytes_per_type: want a mapping of keys, got a list`,
		"max_upload_bytes_per_type: {\"video/\": 1}\n":      `agnogo.yaml:1: max_upload_bytes_per_type: "video/" is not a MIME type (such as video/mp4) or a top-level type (such as video)`,
		"max_upload_bytes_per_type: {video: big}\n":         `agnogo.yaml:1: video in max_upload_bytes_per_type: want a size in bytes`,
		"max_upload_byte: 5\n":                              `agnogo.yaml:1: unknown key "max_upload_byte" at top level; did you mean "max_upload_bytes"?`,
		"media_store: ./media\n":                            `agnogo.yaml:1: unknown key "media_store" at top level; did you mean "media_storage"?`,
		"max_upload_bytes_per_type: {video: 1, video: 2}\n": `agnogo.yaml:1: duplicate key "video" in max_upload_bytes_per_type`,
	} {
		_, err := parse([]byte(yaml), "agnogo.yaml", env(nil))
		require.ErrorContains(t, err, want, yaml)
	}
}

// TestBuildMediaStore: Build opens the media store — by default a
// directory beside the SQLite database, created by the first upload — with
// the file's limits, gives it to the native agents and to the server, and
// Close closes it.
func TestBuildMediaStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := mustParse(t, `db: sqlite://`+filepath.Join(dir, "agnogo.db")+`
max_upload_bytes: 1KiB
max_upload_bytes_per_type: {video: 4KiB, audio/wav: 0}
agents:
  - {id: a, model: openai:gpt-5-mini}
  - {id: coder, type: claude}
`, nil)
	built, err := file.Build(t.Context(), BuildOptions{Getenv: env(map[string]string{"OPENAI_API_KEY": "sk"})})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, built.Close()) })

	local, ok := built.Media.(*media.Local)
	require.True(t, ok, "%T", built.Media)
	require.Equal(t, filepath.Join(dir, "media"), local.Dir())
	require.Equal(t, local.Dir(), built.MediaLocation)
	require.NoDirExists(t, local.Dir(), "nothing is written before the first upload")
	require.Empty(t, built.Warnings)
	require.True(t, built.Agents["a"].ReadsStoredMedia(), "native agents read media back from the store")
	require.Same(t, built.Media, built.Server(ServerOptions{Getenv: env(nil)}).Media, "the server streams uploads into the same store")

	put := func(size int, mimeType string) error {
		_, err := built.Media.Put(t.Context(), bytes.NewReader(make([]byte, size)), media.Info{MimeType: mimeType})
		return err
	}
	require.NoError(t, put(1<<10, "image/png"))
	require.ErrorIs(t, put(1<<10+1, "image/png"), media.ErrTooLarge)
	require.NoError(t, put(4<<10, "video/mp4"))
	require.ErrorIs(t, put(4<<10+1, "video/mp4"), media.ErrTooLarge)
	require.NoError(t, put(64<<10, "audio/wav"), "0: no bound for the type")
}

func TestBuildMediaStorageURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := mustParse(t, "db: sqlite://"+filepath.Join(dir, "agnogo.db")+"\nmedia_storage: file://"+filepath.Join(dir, "blobs")+"?no_tmp_dir=true&create_dir=true\n", nil)
	built, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	require.NoError(t, err)
	require.IsType(t, &blobstore.Store{}, built.Media)
	require.Equal(t, "file://"+filepath.Join(dir, "blobs"), built.MediaLocation, "no query parameters in logs")
	require.NoError(t, built.Close())
	require.Nil(t, built.Media)

	file = mustParse(t, "db: sqlite://"+filepath.Join(dir, "agnogo.db")+"\n\nmedia_storage: s3://bucket?region=us-east-1&no_such_parameter=1\n", nil)
	_, err = file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	var configErr *Error
	require.ErrorAs(t, err, &configErr, "a store the URL cannot open is the file's fault")
	require.Equal(t, 3, configErr.Line)
	require.ErrorContains(t, err, "media_storage: media storage s3://bucket")
	require.ErrorContains(t, err, "no_such_parameter")

	file = mustParse(t, "db: sqlite://"+filepath.Join(dir, "agnogo.db")+"\nmedia_storage: ./x?public_url=cdn\n", nil)
	built, err = file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	require.NoError(t, err, "a path is a path, ? and all")
	require.NoError(t, built.Close())
}

// TestMediaDefaultWithPostgres: the default store is a directory on this
// machine; with PostgreSQL, whose database other servers may share, Build
// warns.
func TestMediaDefaultWithPostgres(t *testing.T) {
	t.Parallel()
	file := mustParse(t, "name: x\n", nil)
	store, where, warning, err := file.openMedia(t.Context(), "postgres://agnogo@db.internal:5432/agnogo")
	require.NoError(t, err)
	defer store.Close()
	abs, err := filepath.Abs("media")
	require.NoError(t, err)
	require.Equal(t, abs, where, "the working directory")
	require.Contains(t, warning, "media_storage is not set: uploads are kept in "+abs)
	require.Contains(t, warning, "s3://")

	file = mustParse(t, "media_storage: /mnt/shared/media\n", nil)
	store, _, warning, err = file.openMedia(t.Context(), "postgres://agnogo@db.internal:5432/agnogo")
	require.NoError(t, err)
	defer store.Close()
	require.Empty(t, warning, "a directory the operator chose: perhaps a shared mount")
}
