// Package blobstore keeps media blobs in any gocloud.dev/blob bucket: Amazon
// S3 and S3-compatible services (s3://), Google Cloud Storage (gs://), Azure
// Blob Storage (azblob://) and a local directory (file://).
//
// Importing the package registers those schemes with [media.Open]. The
// Google Cloud and Azure drivers are large (together they add about 36 MB
// to a binary and 25 MiB to an idle process), so they are built in only
// with the build tags agnogo_gcs and agnogo_azure; without them, gs:// and
// azblob:// are refused with a message naming the tag:
//
//	go build -tags agnogo_gcs,agnogo_azure ./cmd/agnogo
//
//
//	import _ "github.com/agnogo/agnogo/media/blobstore"
//
//	store, err := media.Open(ctx, "s3://my-bucket?region=eu-west-1&prefix=media/")
//
// The URL is gocloud.dev's (credentials come from each cloud's usual
// environment: AWS_ACCESS_KEY_ID…, GOOGLE_APPLICATION_CREDENTIALS,
// AZURE_STORAGE_ACCOUNT…), plus media's own public_url parameter. [New]
// wraps a bucket the program opened itself.
package blobstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://
	_ "gocloud.dev/blob/s3blob"   // s3://
	"gocloud.dev/gcerrors"

	"github.com/agnogo/agnogo/media"
)

// schemes are the URL schemes this package registers with [media.Open]
// in every build; gcs.go and azure.go add theirs.
var schemes = []string{"s3", "file"}

func init() {
	for _, scheme := range schemes {
		media.Register(scheme, openURL)
	}
}

// notBuiltIn is the opener of a scheme whose driver this binary was built
// without: it says which build tag brings it.
func notBuiltIn(scheme, tag string) media.Opener {
	return func(context.Context, *url.URL, media.Options) (media.Store, error) {
		return nil, fmt.Errorf("media: %s:// needs agnogo built with the %s build tag (go build -tags %s ./cmd/agnogo): its driver is left out of the default build for its size", scheme, tag, tag)
	}
}

// DefaultPartSize is the part size of an upload when [Config] sets none:
// 5 MiB, the smallest part S3 accepts.
const DefaultPartSize = 5 << 20

// filenameKey is the blob metadata key holding the upload's file name.
const filenameKey = "filename"

// Config configures a [Store].
type Config struct {
	// Options are the limits, public URL and id generator every store
	// shares.
	media.Options
	// PartSize is the size of the parts a blob is uploaded in. An upload
	// holds one part in memory at a time, so this bounds the memory a Put
	// costs. Defaults to [DefaultPartSize].
	PartSize int
	// CloseBucket makes [Store.Close] close the bucket too. Defaults to
	// false: the caller who opened the bucket closes it.
	CloseBucket bool
}

// Store keeps blobs in a gocloud.dev/blob bucket, each under its id (after
// the bucket's prefix, if it was opened with one), its MIME type as the
// object's content type and its file name in the object's metadata.
type Store struct {
	bucket   *blob.Bucket
	opts     media.Options
	partSize int
	closes   bool
}

var _ media.Store = (*Store)(nil)

// New returns a store over bucket.
func New(bucket *blob.Bucket, cfg Config) (*Store, error) {
	if bucket == nil {
		return nil, errors.New("media: blob store: bucket is nil")
	}
	opts, err := cfg.Options.Prepare()
	if err != nil {
		return nil, err
	}
	if cfg.PartSize < 0 {
		return nil, fmt.Errorf("media: blob store: PartSize %d must not be negative", cfg.PartSize)
	}
	return &Store{bucket: bucket, opts: opts, partSize: cmp.Or(cfg.PartSize, DefaultPartSize), closes: cfg.CloseBucket}, nil
}

// Open opens the bucket rawURL names (any URL gocloud.dev/blob opens, e.g.
// "s3://bucket?region=us-east-1&prefix=media/") as a store; closing the
// store closes the bucket.
func Open(ctx context.Context, rawURL string, opts media.Options) (*Store, error) {
	bucket, err := blob.OpenBucket(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("media: open bucket: %w", err)
	}
	store, err := New(bucket, Config{Options: opts, CloseBucket: true})
	if err != nil {
		_ = bucket.Close()
		return nil, err
	}
	return store, nil
}

// openURL is the [media.Opener] of the registered schemes.
func openURL(ctx context.Context, u *url.URL, opts media.Options) (media.Store, error) {
	return Open(ctx, u.String(), opts)
}

// Put implements [media.Store]. The blob is uploaded in parts of
// [Config.PartSize] as it is read; a failed or refused Put aborts the upload,
// so no object is created.
func (s *Store) Put(ctx context.Context, r io.Reader, info media.Info) (media.Ref, error) {
	id, err := s.opts.NextID()
	if err != nil {
		return media.Ref{}, err
	}
	// Cancelling the writer's context is how a gocloud upload is aborted.
	writeCtx, abort := context.WithCancel(ctx)
	defer abort()
	opts := &blob.WriterOptions{
		ContentType:                 cmp.Or(info.MimeType, "application/octet-stream"),
		DisableContentTypeDetection: true,
		BufferSize:                  s.partSize,
		MaxConcurrency:              1,
	}
	if info.Filename != "" {
		opts.Metadata = map[string]string{filenameKey: info.Filename}
	}
	w, err := s.bucket.NewWriter(writeCtx, id, opts)
	if err != nil {
		return media.Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	n, err := media.CopyLimited(ctx, w, r, s.opts.Limits.For(info.MimeType), info.MimeType)
	if err != nil {
		abort()
		_ = w.Close()
		return media.Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	if err := w.Close(); err != nil {
		return media.Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	return media.Ref{ID: id, URL: s.opts.URL(id), Size: n, MimeType: info.MimeType, Filename: info.Filename}, nil
}

// Open implements [media.Store].
func (s *Store) Open(ctx context.Context, id string) (io.ReadCloser, error) {
	if err := media.CheckID(id); err != nil {
		return nil, err
	}
	r, err := s.bucket.NewReader(ctx, id, nil)
	if err != nil {
		return nil, blobError("open", id, err)
	}
	return r, nil
}

// Stat implements [media.Store].
func (s *Store) Stat(ctx context.Context, id string) (media.Ref, error) {
	if err := media.CheckID(id); err != nil {
		return media.Ref{}, err
	}
	attrs, err := s.bucket.Attributes(ctx, id)
	if err != nil {
		return media.Ref{}, blobError("stat", id, err)
	}
	return media.Ref{ID: id, URL: s.opts.URL(id), Size: attrs.Size, MimeType: attrs.ContentType, Filename: attrs.Metadata[filenameKey]}, nil
}

// Delete implements [media.Store].
func (s *Store) Delete(ctx context.Context, id string) error {
	if !media.ValidID(id) {
		return nil // no blob can have it
	}
	if err := s.bucket.Delete(ctx, id); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return blobError("delete", id, err)
	}
	return nil
}

// Close implements [media.Store]: it closes the bucket when the store opened
// it ([Open]) or was told to ([Config.CloseBucket]).
func (s *Store) Close() error {
	if !s.closes {
		return nil
	}
	if err := s.bucket.Close(); err != nil {
		return fmt.Errorf("media: close bucket: %w", err)
	}
	return nil
}

// blobError wraps a bucket error, mapping a missing object to
// [media.ErrNotFound].
func blobError(op, id string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("media: %s blob %s: %w", op, id, media.ErrNotFound)
	}
	return fmt.Errorf("media: %s blob %s: %w", op, id, err)
}
