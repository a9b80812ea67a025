package blobstore_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/media/blobstore"
	"github.com/agnogo/agnogo/media/mediatest"
)

// fakeS3 is an in-process S3 server.
type fakeS3 struct {
	URL     string
	backend *s3mem.Backend
	buckets atomic.Int64
}

// newFakeS3 starts an S3 server for the test.
func newFakeS3(t *testing.T) *fakeS3 {
	t.Helper()
	backend := s3mem.New()
	server := httptest.NewServer(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(server.Close)
	return &fakeS3{URL: server.URL, backend: backend}
}

// bucketURL creates a bucket and returns its s3:// URL, with extra query
// parameters.
func (f *fakeS3) bucketURL(t *testing.T, extra url.Values) string {
	t.Helper()
	name := fmt.Sprintf("media-%d", f.buckets.Add(1))
	require.NoError(t, f.backend.CreateBucket(name))
	q := url.Values{
		"endpoint":       {f.URL},
		"region":         {"us-east-1"},
		"use_path_style": {"true"},
		"disable_https":  {"true"},
		"anonymous":      {"true"},
	}
	for k, v := range extra {
		q[k] = v
	}
	return "s3://" + name + "?" + q.Encode()
}

func TestS3Conformance(t *testing.T) {
	t.Parallel()
	s3 := newFakeS3(t)
	mediatest.Run(t, func(t *testing.T, opts media.Options) media.Store {
		store, err := blobstore.Open(t.Context(), s3.bucketURL(t, url.Values{"prefix": {"media/"}}), opts)
		require.NoError(t, err)
		return store
	})
}

func TestFileConformance(t *testing.T) {
	t.Parallel()
	mediatest.Run(t, func(t *testing.T, opts media.Options) media.Store {
		store, err := blobstore.Open(t.Context(), "file://"+t.TempDir()+"?no_tmp_dir=true", opts)
		require.NoError(t, err)
		return store
	})
}

// TestOpenThroughMedia: importing blobstore makes media.Open take s3:// and
// file:// URLs; public_url sets the blobs' URL, and the object lands under
// the bucket's prefix.
func TestOpenThroughMedia(t *testing.T) {
	t.Parallel()
	s3 := newFakeS3(t)
	raw := s3.bucketURL(t, url.Values{"prefix": {"uploads/"}, "public_url": {"https://cdn.example.com/uploads/"}})
	store, err := media.Open(t.Context(), raw, media.WithLimits(media.Limits{MaxBytes: 8}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	ref, err := store.Put(t.Context(), bytes.NewReader([]byte("12345678")), media.Info{MimeType: "image/png", Filename: "a.png"})
	require.NoError(t, err)
	require.Equal(t, "https://cdn.example.com/uploads/"+ref.ID, ref.URL)
	_, err = store.Put(t.Context(), bytes.NewReader([]byte("123456789")), media.Info{MimeType: "image/png"})
	require.ErrorIs(t, err, media.ErrTooLarge, "WithLimits reaches the blob store")

	u, err := url.Parse(raw)
	require.NoError(t, err)
	obj, err := s3.backend.GetObject(u.Host, "uploads/"+ref.ID, nil)
	require.NoError(t, err)
	defer obj.Contents.Close()
	data, err := io.ReadAll(obj.Contents)
	require.NoError(t, err)
	require.Equal(t, "12345678", string(data))
	require.Equal(t, "image/png", obj.Metadata["Content-Type"])

	fileStore, err := media.Open(t.Context(), "file://"+t.TempDir())
	require.NoError(t, err)
	require.IsType(t, &blobstore.Store{}, fileStore)
	require.NoError(t, fileStore.Close())
}
