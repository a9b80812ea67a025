//go:build agnogo_gcs || agnogo_azure

package blobstore_test

import (
	"bytes"
	"crypto/md5"
	"io"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // writes file:// as earlier versions did
	_ "gocloud.dev/blob/s3blob"   // writes s3:// as earlier versions did

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/media/blobstore"
	"github.com/agnogo/agnogo/media/mediatest"
)

// TestNewConformance: a store over a gocloud.dev bucket the program opened
// ([blobstore.New]) passes the suite.
func TestNewConformance(t *testing.T) {
	t.Parallel()
	mediatest.Run(t, func(t *testing.T, opts media.Options) media.Store {
		bucket, err := blob.OpenBucket(t.Context(), "file://"+filepath.ToSlash(t.TempDir())+"?no_tmp_dir=true")
		require.NoError(t, err)
		store, err := blobstore.New(bucket, blobstore.Config{Options: opts, CloseBucket: true})
		require.NoError(t, err)
		return store
	})
}

// TestGocloudCompatibility: what gocloud.dev's s3blob and fileblob wrote,
// which served s3:// and file:// in earlier versions, reads back through
// the stores that replace them, and what they write reads back through
// gocloud.dev — bytes, content type, file name and object name, under a
// prefix that needs escaping.
func TestGocloudCompatibility(t *testing.T) {
	t.Parallel()
	fake := newFakeS3(t)
	const prefix = "old__0x41__/media/"
	for name, rawURL := range map[string]string{
		"s3":   fake.bucketURL(t, url.Values{"prefix": {prefix}}),
		"file": "file://" + filepath.ToSlash(t.TempDir()) + "?create_dir=true&prefix=" + url.QueryEscape(prefix),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			bucket, err := blob.OpenBucket(ctx, rawURL)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, bucket.Close()) })
			store, err := blobstore.Open(ctx, rawURL, media.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, store.Close()) })

			old := []byte("\x89PNG written by gocloud.dev")
			require.NoError(t, bucket.WriteAll(ctx, "oldblob", old, &blob.WriterOptions{
				ContentType: "image/png", Metadata: map[string]string{"filename": "vieille photo été.png"},
			}))
			stat, err := store.Stat(ctx, "oldblob")
			require.NoError(t, err)
			require.Equal(t, media.Ref{ID: "oldblob", Size: int64(len(old)), MimeType: "image/png", Filename: "vieille photo été.png"}, stat)
			r, err := store.Open(ctx, "oldblob")
			require.NoError(t, err)
			data, err := io.ReadAll(r)
			require.NoError(t, err)
			require.NoError(t, r.Close())
			require.Equal(t, old, data)

			content := []byte("%PDF written by the store")
			ref, err := store.Put(ctx, bytes.NewReader(content), media.Info{MimeType: "application/pdf", Filename: "relevé (1).pdf"})
			require.NoError(t, err)
			attrs, err := bucket.Attributes(ctx, ref.ID)
			require.NoError(t, err)
			require.Equal(t, "application/pdf", attrs.ContentType)
			require.Equal(t, map[string]string{"filename": "relevé (1).pdf"}, attrs.Metadata)
			if name == "file" {
				sum := md5.Sum(content)
				require.Equal(t, sum[:], attrs.MD5)
			}
			data, err = bucket.ReadAll(ctx, ref.ID)
			require.NoError(t, err)
			require.Equal(t, content, data)

			require.NoError(t, store.Delete(ctx, "oldblob"))
			exists, err := bucket.Exists(ctx, "oldblob")
			require.NoError(t, err)
			require.False(t, exists)
		})
	}
}
