package media_test

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/media"
)

func TestLimitsFor(t *testing.T) {
	t.Parallel()
	limits := media.Limits{MaxBytes: 100, PerType: map[string]int64{
		"video": 1000, "video/webm": 50, "audio/*": -1, "application/pdf": 0,
	}}
	for _, tc := range []struct {
		mimeType string
		want     int64
	}{
		{"image/png", 100},
		{"video/mp4", 1000},
		{"VIDEO/WEBM", 50},
		{"audio/wav", -1},
		{"application/pdf", media.DefaultMaxBytes},
		{"", 100},
	} {
		require.Equal(t, tc.want, limits.For(tc.mimeType), tc.mimeType)
	}
	require.Equal(t, media.DefaultMaxBytes, media.Limits{}.For("image/png"))
	require.Equal(t, int64(-1), media.Limits{MaxBytes: -1}.For("image/png"))
}

func TestTooLargeError(t *testing.T) {
	t.Parallel()
	err := &media.TooLargeError{Limit: 32 << 20, MimeType: "video/mp4"}
	require.EqualError(t, err, "larger than the limit of 32 MiB for video/mp4")
	require.ErrorIs(t, err, media.ErrTooLarge)
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 32 << 20: "32 MiB", 3 << 30: "3 GiB",
	} {
		require.Equal(t, want, media.FormatBytes(n), n)
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	require.True(t, media.ValidID(media.NewID()))
	require.True(t, media.ValidID("abc_DEF-123"))
	for _, id := range []string{"", "a/b", "..", "a.json", "a b", string(make([]byte, 129))} {
		require.False(t, media.ValidID(id), id)
	}
}

// opened records what a registered opener was given.
var opened = make(chan *url.URL, 1)

func init() {
	media.Register("mediatestscheme", func(_ context.Context, u *url.URL, opts media.Options) (media.Store, error) {
		opened <- u
		return media.NewLocal(media.LocalConfig{Dir: u.Path, Options: opts})
	})
}

// TestOpen: an empty URL is <data dir>/media, a plain path a directory, a
// registered scheme its store (without public_url, which becomes the
// store's public base URL), and an unknown scheme an error that says what
// to import.
func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dataDir := t.TempDir()
	store, err := media.Open(ctx, "", media.WithDataDir(dataDir))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dataDir, "media"), store.(*media.Local).Dir())

	plain := filepath.Join(t.TempDir(), "blobs")
	store, err = media.Open(ctx, plain, media.WithLimits(media.Limits{MaxBytes: 1}))
	require.NoError(t, err)
	require.Equal(t, plain, store.(*media.Local).Dir())

	dir := t.TempDir()
	store, err = media.Open(ctx, "mediatestscheme://host"+dir+"?x=1&public_url=https://cdn.example.com/m/")
	require.NoError(t, err)
	u := <-opened
	require.Equal(t, "x=1", u.RawQuery, "public_url is media's own parameter")
	ref, err := store.Put(ctx, strings.NewReader("x"), media.Info{})
	require.NoError(t, err)
	require.Equal(t, "https://cdn.example.com/m/"+ref.ID, ref.URL)

	_, err = media.Open(ctx, "ftp://user:secret@host/media")
	require.ErrorContains(t, err, `no store for the scheme "ftp"`)
	require.ErrorContains(t, err, "media/blobstore")
	require.NotContains(t, err.Error(), "secret", "credentials stay out of errors")
}
