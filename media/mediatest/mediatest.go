// Package mediatest is the conformance suite of [media.Store]: every
// implementation runs it, so a run reads its media back the same way
// whichever store keeps them.
//
//	func TestConformance(t *testing.T) {
//		mediatest.Run(t, func(t *testing.T, opts media.Options) media.Store {
//			store, err := media.NewLocal(media.LocalConfig{Dir: t.TempDir(), Options: opts})
//			require.NoError(t, err)
//			return store
//		})
//	}
package mediatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/media"
)

// NewStore returns an empty store configured with opts. The suite closes it.
type NewStore func(t *testing.T, opts media.Options) media.Store

// Run checks the store newStore makes against the contract of
// [media.Store].
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	open := func(t *testing.T, opts media.Options) media.Store {
		t.Helper()
		store := newStore(t, opts)
		t.Cleanup(func() { require.NoError(t, store.Close()) })
		return store
	}
	t.Run("RoundTrip", func(t *testing.T) { t.Parallel(); roundTrip(t, open(t, media.Options{})) })
	t.Run("PublicURL", func(t *testing.T) { t.Parallel(); publicURL(t, open) })
	t.Run("Streamed", func(t *testing.T) {
		t.Parallel()
		streamed(t, open(t, media.Options{Limits: media.Limits{MaxBytes: -1}}))
	})
	t.Run("Empty", func(t *testing.T) { t.Parallel(); empty(t, open(t, media.Options{})) })
	t.Run("Limits", func(t *testing.T) { t.Parallel(); limits(t, open) })
	t.Run("FailedPutLeavesNothing", func(t *testing.T) { t.Parallel(); failedPut(t, open) })
	t.Run("NotFound", func(t *testing.T) { t.Parallel(); notFound(t, open(t, media.Options{})) })
	t.Run("Delete", func(t *testing.T) { t.Parallel(); deleteBlob(t, open(t, media.Options{})) })
	t.Run("Concurrent", func(t *testing.T) { t.Parallel(); concurrent(t, open(t, media.Options{})) })
}

// read returns a blob's bytes.
func read(t *testing.T, store media.Store, id string) []byte {
	t.Helper()
	r, err := store.Open(t.Context(), id)
	require.NoError(t, err)
	defer r.Close()
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	return data
}

func roundTrip(t *testing.T, store media.Store) {
	ctx := t.Context()
	content := []byte("\xff\xd8\xff\xe0 a small jpeg")
	ref, err := store.Put(ctx, bytes.NewReader(content), media.Info{MimeType: "image/jpeg", Filename: "photo é.jpg"})
	require.NoError(t, err)
	require.True(t, media.ValidID(ref.ID), ref.ID)
	require.Equal(t, media.Ref{ID: ref.ID, Size: int64(len(content)), MimeType: "image/jpeg", Filename: "photo é.jpg"}, ref)
	require.Equal(t, content, read(t, store, ref.ID))
	stat, err := store.Stat(ctx, ref.ID)
	require.NoError(t, err)
	require.Equal(t, ref, stat, "Stat returns what Put did")

	other, err := store.Put(ctx, bytes.NewReader(content), media.Info{MimeType: "image/jpeg"})
	require.NoError(t, err)
	require.NotEqual(t, ref.ID, other.ID, "every Put makes a new blob")
}

func publicURL(t *testing.T, open NewStore) {
	ids := []string{"blob-1"}
	store := open(t, media.Options{PublicBaseURL: "https://cdn.example.com/media", NewID: func() string { return ids[0] }})
	ref, err := store.Put(t.Context(), bytes.NewReader([]byte("png")), media.Info{MimeType: "image/png"})
	require.NoError(t, err)
	require.Equal(t, "https://cdn.example.com/media/blob-1", ref.URL)
	stat, err := store.Stat(t.Context(), "blob-1")
	require.NoError(t, err)
	require.Equal(t, ref.URL, stat.URL)
}

// pattern is an endless reader of a deterministic byte pattern, so a large
// blob is produced without holding it.
type pattern struct{ offset int64 }

// Read fills b with the next bytes of the pattern.
func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte((p.offset + int64(i)) * 7 % 251)
	}
	p.offset += int64(len(b))
	return len(b), nil
}

func streamed(t *testing.T, store media.Store) {
	const size = 12<<20 + 12345 // several upload parts and a ragged end
	want := sha256.New()
	_, err := io.Copy(want, io.LimitReader(&pattern{}, size))
	require.NoError(t, err)

	ref, err := store.Put(t.Context(), io.LimitReader(&pattern{}, size), media.Info{MimeType: "video/mp4", Filename: "clip.mp4"})
	require.NoError(t, err)
	require.Equal(t, int64(size), ref.Size)
	r, err := store.Open(t.Context(), ref.ID)
	require.NoError(t, err)
	defer r.Close()
	got := sha256.New()
	n, err := io.Copy(got, r)
	require.NoError(t, err)
	require.Equal(t, int64(size), n)
	require.Equal(t, want.Sum(nil), got.Sum(nil), "the blob reads back byte for byte")
}

func empty(t *testing.T, store media.Store) {
	ref, err := store.Put(t.Context(), bytes.NewReader(nil), media.Info{MimeType: "text/plain"})
	require.NoError(t, err)
	require.Zero(t, ref.Size)
	require.Empty(t, read(t, store, ref.ID))
}

// fixedIDs hands out the given ids in order.
func fixedIDs(ids ...string) func() string {
	var mu sync.Mutex
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		id := ids[0]
		ids = ids[1:]
		return id
	}
}

func limits(t *testing.T, open NewStore) {
	ctx := t.Context()
	store := open(t, media.Options{
		Limits: media.Limits{MaxBytes: 10, PerType: map[string]int64{"video": 20, "video/webm": 5, "audio/*": -1}},
		NewID:  fixedIDs("at-limit", "over-limit", "video-ok", "webm-over", "audio-any"),
	})
	_, err := store.Put(ctx, bytes.NewReader(make([]byte, 10)), media.Info{MimeType: "image/png"})
	require.NoError(t, err, "a blob of exactly the limit is accepted")

	_, err = store.Put(ctx, bytes.NewReader(make([]byte, 11)), media.Info{MimeType: "image/png"})
	var tooLarge *media.TooLargeError
	require.ErrorAs(t, err, &tooLarge)
	require.ErrorIs(t, err, media.ErrTooLarge)
	require.Equal(t, int64(10), tooLarge.Limit)
	require.Equal(t, "image/png", tooLarge.MimeType)
	_, err = store.Stat(ctx, "over-limit")
	require.ErrorIs(t, err, media.ErrNotFound, "a refused blob is not kept")

	_, err = store.Put(ctx, bytes.NewReader(make([]byte, 20)), media.Info{MimeType: "video/mp4"})
	require.NoError(t, err, "a top-level type's limit overrides MaxBytes")
	_, err = store.Put(ctx, bytes.NewReader(make([]byte, 6)), media.Info{MimeType: "video/webm"})
	require.ErrorAs(t, err, &tooLarge)
	require.Equal(t, int64(5), tooLarge.Limit, "a full type's limit wins over its top-level type's")
	_, err = store.Put(ctx, bytes.NewReader(make([]byte, 100)), media.Info{MimeType: "audio/wav"})
	require.NoError(t, err, "a negative limit removes the bound")
}

// failingReader yields some bytes, then fails.
type failingReader struct {
	sent bool
	err  error
}

// Read yields the partial content once, then the error.
func (f *failingReader) Read(p []byte) (int, error) {
	if !f.sent {
		f.sent = true
		return copy(p, "partial content"), nil
	}
	return 0, f.err
}

func failedPut(t *testing.T, open NewStore) {
	store := open(t, media.Options{NewID: fixedIDs("broken-read", "cancelled")})
	boom := errors.New("connection reset")
	_, err := store.Put(t.Context(), &failingReader{err: boom}, media.Info{MimeType: "image/png"})
	require.ErrorIs(t, err, boom)
	_, err = store.Stat(t.Context(), "broken-read")
	require.ErrorIs(t, err, media.ErrNotFound, "a failed read leaves no blob")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = store.Put(ctx, bytes.NewReader([]byte("never stored")), media.Info{MimeType: "image/png"})
	require.Error(t, err)
	_, err = store.Stat(t.Context(), "cancelled")
	require.ErrorIs(t, err, media.ErrNotFound, "a cancelled Put leaves no blob")
}

func notFound(t *testing.T, store media.Store) {
	ctx := t.Context()
	for _, id := range []string{"no-such-blob", "../../etc/passwd", "a/b", "x.json", ""} {
		_, err := store.Open(ctx, id)
		require.ErrorIs(t, err, media.ErrNotFound, "Open %q", id)
		_, err = store.Stat(ctx, id)
		require.ErrorIs(t, err, media.ErrNotFound, "Stat %q", id)
		require.NoError(t, store.Delete(ctx, id), "Delete %q", id)
	}
}

func deleteBlob(t *testing.T, store media.Store) {
	ctx := t.Context()
	ref, err := store.Put(ctx, bytes.NewReader([]byte("gone soon")), media.Info{MimeType: "text/plain", Filename: "a.txt"})
	require.NoError(t, err)
	require.NoError(t, store.Delete(ctx, ref.ID))
	_, err = store.Stat(ctx, ref.ID)
	require.ErrorIs(t, err, media.ErrNotFound)
	_, err = store.Open(ctx, ref.ID)
	require.ErrorIs(t, err, media.ErrNotFound)
	require.NoError(t, store.Delete(ctx, ref.ID), "deleting twice is not an error")
}

func concurrent(t *testing.T, store media.Store) {
	const puts = 8
	refs := make([]media.Ref, puts)
	var wg sync.WaitGroup
	errs := make([]error, puts)
	for i := range puts {
		wg.Go(func() {
			refs[i], errs[i] = store.Put(t.Context(), bytes.NewReader([]byte(fmt.Sprintf("blob %d", i))), media.Info{MimeType: "text/plain"})
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range puts {
		require.NoError(t, errs[i])
		require.False(t, seen[refs[i].ID], "ids are unique")
		seen[refs[i].ID] = true
		require.Equal(t, fmt.Sprintf("blob %d", i), string(read(t, store, refs[i].ID)))
	}
}
