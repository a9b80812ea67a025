//go:build agnogo_gcs || agnogo_azure

package blobstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/agnogo/agnogo/media"
)

// This file is built only with the agnogo_gcs or agnogo_azure build tag:
// gocloud.dev's core links gRPC and, through it, html/template, which a
// default build must not (see the package documentation).

// Config configures a [Store] made by [New].
type Config struct {
	// Options are the limits, public URL and id generator every store
	// shares.
	media.Options
	// PartSize is the size of the parts a blob is uploaded in, which bounds
	// the memory a Put costs. Defaults to [DefaultPartSize].
	PartSize int
	// CloseBucket makes [Store.Close] close the bucket too. Defaults to
	// false: the caller who opened the bucket closes it.
	CloseBucket bool
}

// New returns a store over a gocloud.dev/blob bucket the program opened
// itself, each blob under its id (after the bucket's prefix, if it was
// opened with one). It exists in builds with the agnogo_gcs or
// agnogo_azure tag only.
func New(bucket *blob.Bucket, cfg Config) (*Store, error) {
	if bucket == nil {
		return nil, errors.New("media: blob store: bucket is nil")
	}
	if cfg.PartSize < 0 {
		return nil, fmt.Errorf("media: blob store: PartSize %d must not be negative", cfg.PartSize)
	}
	return newStore(&cloudBucket{bucket: bucket, partSize: cmp.Or(cfg.PartSize, DefaultPartSize), closes: cfg.CloseBucket}, "", cfg.Options)
}

// openBucketURL opens a gs:// or azblob:// URL with gocloud.dev, whose
// query parameters it takes (prefix among them); closing the store closes
// the bucket.
func openBucketURL(ctx context.Context, u *url.URL, opts media.Options) (*Store, error) {
	bucket, err := blob.OpenBucket(ctx, u.String())
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

// cloudBucket keeps objects in a gocloud.dev/blob bucket.
type cloudBucket struct {
	bucket   *blob.Bucket
	partSize int
	closes   bool
}

// newWriter implements [bucket]. Cancelling the writer's context is how a
// gocloud.dev upload is abandoned.
func (b *cloudBucket) newWriter(ctx context.Context, key string, attrs objectAttrs, _ int64) (objectWriter, error) {
	writeCtx, cancel := context.WithCancel(ctx)
	opts := &blob.WriterOptions{
		ContentType:                 attrs.contentType,
		DisableContentTypeDetection: true,
		BufferSize:                  b.partSize,
		MaxConcurrency:              1,
	}
	if attrs.filename != "" {
		opts.Metadata = map[string]string{filenameKey: attrs.filename}
	}
	w, err := b.bucket.NewWriter(writeCtx, key, opts)
	if err != nil {
		cancel()
		return nil, cloudError(err)
	}
	return &cloudWriter{Writer: w, cancel: cancel}, nil
}

// open implements [bucket].
func (b *cloudBucket) open(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, cloudError(err)
	}
	return r, nil
}

// attributes implements [bucket].
func (b *cloudBucket) attributes(ctx context.Context, key string) (objectAttrs, error) {
	attrs, err := b.bucket.Attributes(ctx, key)
	if err != nil {
		return objectAttrs{}, cloudError(err)
	}
	return objectAttrs{size: attrs.Size, contentType: attrs.ContentType, filename: attrs.Metadata[filenameKey]}, nil
}

// delete implements [bucket].
func (b *cloudBucket) delete(ctx context.Context, key string) error {
	if err := b.bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return err
	}
	return nil
}

// close implements [bucket]: the bucket is closed when the store opened it
// or was told to ([Config.CloseBucket]).
func (b *cloudBucket) close() error {
	if !b.closes {
		return nil
	}
	return b.bucket.Close()
}

// cloudError marks a missing object as [media.ErrNotFound].
func cloudError(err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%w: %w", media.ErrNotFound, err)
	}
	return err
}

// cloudWriter is a gocloud.dev blob writer as an [objectWriter].
type cloudWriter struct {
	*blob.Writer
	cancel context.CancelFunc
}

// commit implements [objectWriter]: closing the writer completes the
// upload.
func (w *cloudWriter) commit() error {
	defer w.cancel()
	return w.Close()
}

// abort implements [objectWriter]: the upload's context is cancelled before
// the writer is closed, so nothing is kept.
func (w *cloudWriter) abort() error {
	w.cancel()
	_ = w.Close()
	return nil
}
