package blobstore_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
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

// fakeS3 is an in-process S3 server that counts what it is sent.
type fakeS3 struct {
	URL     string
	backend *s3mem.Backend
	buckets atomic.Int64

	// received counts the bytes of PUT bodies (objects and parts) the
	// server has read.
	received atomic.Int64
	// puts, parts, completes and aborts count the PutObject, UploadPart,
	// CompleteMultipartUpload and AbortMultipartUpload requests.
	puts, parts, completes, aborts atomic.Int64
}

// newFakeS3 starts an S3 server for the test.
func newFakeS3(t *testing.T) *fakeS3 {
	t.Helper()
	f := &fakeS3{backend: s3mem.New()}
	s3 := gofakes3.New(f.backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query := r.URL.Query()
		switch {
		case r.Method == http.MethodPut && query.Has("partNumber"):
			f.parts.Add(1)
		case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") == "":
			f.puts.Add(1)
		case r.Method == http.MethodPost && query.Has("uploadId"):
			f.completes.Add(1)
		case r.Method == http.MethodDelete && query.Has("uploadId"):
			f.aborts.Add(1)
		}
		if r.Method == http.MethodPut {
			r.Body = &countingBody{ReadCloser: r.Body, count: &f.received}
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	f.URL = server.URL
	return f
}

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	count *atomic.Int64
}

// Read reads from the body and counts what it read.
func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.count.Add(int64(n))
	return n, err
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
