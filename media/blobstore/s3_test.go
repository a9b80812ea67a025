package blobstore_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/media/blobstore"
)

// bucketName is the bucket of an s3:// URL.
func bucketName(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	return u.Host
}

// objectKeys lists the objects of a bucket of the fake.
func (f *fakeS3) objectKeys(t *testing.T, bucket string) []string {
	t.Helper()
	list, err := f.backend.ListBucket(bucket, nil, gofakes3.ListBucketPage{})
	require.NoError(t, err)
	var keys []string
	for _, object := range list.Contents {
		keys = append(keys, object.Key)
	}
	return keys
}

// pendingUploads lists the multipart uploads of a bucket of the fake that
// were neither completed nor aborted.
func (f *fakeS3) pendingUploads(t *testing.T, bucket string) []string {
	t.Helper()
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(f.URL),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  aws.AnonymousCredentials{},
	})
	out, err := client.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	var keys []string
	for _, upload := range out.Uploads {
		keys = append(keys, aws.ToString(upload.Key))
	}
	return keys
}

// pattern is an endless reader of a deterministic byte pattern.
type pattern struct{ offset int64 }

// Read fills b with the next bytes of the pattern.
func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte((p.offset + int64(i)) * 7 % 251)
	}
	p.offset += int64(len(b))
	return len(b), nil
}

// heldSource is a blob source that measures, before each read, how many of
// the bytes it gave the store the S3 server has not received yet: what the
// store is holding.
type heldSource struct {
	r        io.Reader
	read     int64
	received *atomic.Int64
	peak     int64
}

// Read records the bytes held, then reads.
func (h *heldSource) Read(p []byte) (int, error) {
	h.peak = max(h.peak, h.read-h.received.Load())
	n, err := h.r.Read(p)
	h.read += int64(n)
	return n, err
}

// TestS3MultipartHoldsOnePart: a blob of several parts is sent as a
// multipart upload while it is read, and the store never holds more than
// one part of it: before each read from the source, the bytes read but not
// yet received by the server fit in one part.
func TestS3MultipartHoldsOnePart(t *testing.T) {
	t.Parallel()
	const size = 3*blobstore.DefaultPartSize + 12345
	fake := newFakeS3(t)
	raw := fake.bucketURL(t, url.Values{"prefix": {"media/"}})
	store, err := blobstore.Open(t.Context(), raw, media.Options{Limits: media.Limits{MaxBytes: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })

	source := &heldSource{r: io.LimitReader(&pattern{}, size), received: &fake.received}
	ref, err := store.Put(t.Context(), source, media.Info{MimeType: "video/mp4", Filename: "clip.mp4"})
	require.NoError(t, err)
	require.Equal(t, int64(size), ref.Size)
	t.Logf("held at most %d bytes of a %d-byte blob (part size %d)", source.peak, size, blobstore.DefaultPartSize)
	require.LessOrEqual(t, source.peak, int64(blobstore.DefaultPartSize), "the store holds one part at a time")
	require.Equal(t, int64(4), fake.parts.Load(), "three full parts and the rest")
	require.Equal(t, int64(1), fake.completes.Load())
	require.Zero(t, fake.puts.Load(), "no single PutObject")

	want := sha256.New()
	_, err = io.Copy(want, io.LimitReader(&pattern{}, size))
	require.NoError(t, err)
	r, err := store.Open(t.Context(), ref.ID)
	require.NoError(t, err)
	defer r.Close()
	got := sha256.New()
	_, err = io.Copy(got, r)
	require.NoError(t, err)
	require.Equal(t, want.Sum(nil), got.Sum(nil), "the parts assemble into the blob")
	stat, err := store.Stat(t.Context(), ref.ID)
	require.NoError(t, err)
	require.Equal(t, ref, stat)
	require.Equal(t, []string{"media/" + ref.ID}, fake.objectKeys(t, bucketName(t, raw)))
}

// TestS3SinglePartIsOnePut: a blob that fits in one part is one PutObject,
// with no multipart upload.
func TestS3SinglePartIsOnePut(t *testing.T) {
	t.Parallel()
	fake := newFakeS3(t)
	store, err := blobstore.Open(t.Context(), fake.bucketURL(t, nil), media.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	ref, err := store.Put(t.Context(), io.LimitReader(&pattern{}, blobstore.DefaultPartSize), media.Info{MimeType: "image/png"})
	require.NoError(t, err)
	require.Equal(t, int64(blobstore.DefaultPartSize), ref.Size)
	require.Equal(t, int64(1), fake.puts.Load())
	require.Zero(t, fake.parts.Load())
}

// brokenAfter yields n bytes of the pattern, then fails.
type brokenAfter struct {
	r   io.Reader
	err error
}

// Read reads the pattern, then fails with the error.
func (b *brokenAfter) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, b.err
	}
	return n, err
}

// TestS3FailedMultipartLeavesNothing: a Put refused for its size, or whose
// source breaks, after parts were sent, abandons its multipart upload: no
// object, and no upload left pending (whose parts S3 would keep, and bill).
func TestS3FailedMultipartLeavesNothing(t *testing.T) {
	t.Parallel()
	reset := errors.New("connection reset")
	for _, tc := range []struct {
		name   string
		source io.Reader
		want   error
	}{
		{"over the limit", io.LimitReader(&pattern{}, 3*blobstore.DefaultPartSize), media.ErrTooLarge},
		{"broken source", &brokenAfter{r: io.LimitReader(&pattern{}, 2*blobstore.DefaultPartSize+1), err: reset}, reset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeS3(t)
			raw := fake.bucketURL(t, url.Values{"prefix": {"media/"}})
			store, err := blobstore.Open(t.Context(), raw, media.Options{
				Limits: media.Limits{MaxBytes: 2*blobstore.DefaultPartSize + 100},
				NewID:  func() string { return "refused" },
			})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, store.Close()) })

			_, err = store.Put(t.Context(), tc.source, media.Info{MimeType: "video/mp4", Filename: "big.mp4"})
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, int64(2), fake.parts.Load(), "parts were sent before the failure")
			require.Equal(t, int64(1), fake.aborts.Load(), "the upload is abandoned")
			require.Zero(t, fake.completes.Load())
			require.Empty(t, fake.objectKeys(t, bucketName(t, raw)))
			require.Empty(t, fake.pendingUploads(t, bucketName(t, raw)))
			_, err = store.Stat(t.Context(), "refused")
			require.ErrorIs(t, err, media.ErrNotFound)
		})
	}
}

// TestS3Metadata: the MIME type is the object's Content-Type and the file
// name its "filename" metadata, URL-escaped; both read back.
func TestS3Metadata(t *testing.T) {
	t.Parallel()
	fake := newFakeS3(t)
	raw := fake.bucketURL(t, url.Values{"prefix": {"media/"}})
	store, err := blobstore.Open(t.Context(), raw, media.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })

	ref, err := store.Put(t.Context(), strings.NewReader("%PDF-1.7"), media.Info{MimeType: "application/pdf", Filename: "Relevé n°3 (final).pdf"})
	require.NoError(t, err)
	object, err := fake.backend.HeadObject(bucketName(t, raw), "media/"+ref.ID)
	require.NoError(t, err)
	require.Equal(t, "application/pdf", object.Metadata["Content-Type"])
	require.Equal(t, url.PathEscape("Relevé n°3 (final).pdf"), object.Metadata["X-Amz-Meta-Filename"])
	stat, err := store.Stat(t.Context(), ref.ID)
	require.NoError(t, err)
	require.Equal(t, ref, stat)

	unnamed, err := store.Put(t.Context(), strings.NewReader("x"), media.Info{})
	require.NoError(t, err)
	stat, err = store.Stat(t.Context(), unnamed.ID)
	require.NoError(t, err)
	require.Equal(t, "application/octet-stream", stat.MimeType, "a blob without a type is stored as bytes")
	require.Empty(t, stat.Filename)

	_, err = store.Put(t.Context(), strings.NewReader("x"), media.Info{MimeType: "not a type"})
	require.ErrorContains(t, err, `content type "not a type"`)
}

// TestS3ReadsBlobsOfEarlierVersions: an object as gocloud.dev's s3blob
// wrote it — the file name URL-escaped in the "filename" metadata — reads
// back with its name, type and bytes.
func TestS3ReadsBlobsOfEarlierVersions(t *testing.T) {
	t.Parallel()
	fake := newFakeS3(t)
	raw := fake.bucketURL(t, url.Values{"prefix": {"media/"}})
	content := []byte("\x89PNG an old upload")
	_, err := fake.backend.PutObject(bucketName(t, raw), "media/0123456789abcdef0123456789abcdef", map[string]string{
		"Content-Type":        "image/png",
		"X-Amz-Meta-Filename": "photo%20%C3%A9t%C3%A9.png",
	}, bytes.NewReader(content), int64(len(content)), nil)
	require.NoError(t, err)

	store, err := blobstore.Open(t.Context(), raw, media.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	stat, err := store.Stat(t.Context(), "0123456789abcdef0123456789abcdef")
	require.NoError(t, err)
	require.Equal(t, media.Ref{ID: "0123456789abcdef0123456789abcdef", Size: int64(len(content)), MimeType: "image/png", Filename: "photo été.png"}, stat)
	r, err := store.Open(t.Context(), stat.ID)
	require.NoError(t, err)
	defer r.Close()
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, content, data)
}

// TestS3URLParameters: a parameter the store does not know, or a value it
// cannot read, is refused by name; gocloud.dev's parameters open.
func TestS3URLParameters(t *testing.T) {
	t.Parallel()
	fake := newFakeS3(t)
	for _, tc := range []struct {
		extra url.Values
		want  string
	}{
		{url.Values{"no_such_parameter": {"1"}}, `unknown query parameter "no_such_parameter"`},
		{url.Values{"b": {"1"}, "a": {"1"}}, `unknown query parameters "a", "b"`},
		{url.Values{"key": {"one-object"}}, `unknown query parameter "key"`},
		{url.Values{"use_path_style": {"maybe"}}, `invalid value for "use_path_style"`},
		{url.Values{"ssetype": {"rot13"}}, `invalid value for "ssetype"`},
		{url.Values{"role": {"admin"}}, `invalid value for "role"`},
		{url.Values{"request_checksum_calculation": {"always"}}, `invalid value for "request_checksum_calculation"`},
	} {
		_, err := media.Open(t.Context(), fake.bucketURL(t, tc.extra))
		require.ErrorContains(t, err, tc.want, tc.extra)
		require.ErrorContains(t, err, "media storage s3://", "the error names the store")
	}
	_, err := media.Open(t.Context(), "s3://?region=us-east-1")
	require.ErrorContains(t, err, "names no bucket")

	store, err := media.Open(t.Context(), fake.bucketURL(t, url.Values{
		"s3ForcePathStyle": {"true"}, "hostname_immutable": {"true"}, "ssetype": {"AES256"},
		"request_checksum_calculation": {"when_required"}, "response_checksum_validation": {"when_required"},
		"rate_limiter_capacity": {"500"}, "awssdk": {"v2"},
	}))
	require.NoError(t, err, "gocloud.dev's parameters are taken")
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	ref, err := store.Put(t.Context(), strings.NewReader("x"), media.Info{MimeType: "text/plain"})
	require.NoError(t, err)
	require.NoError(t, store.Delete(t.Context(), ref.ID))
}
