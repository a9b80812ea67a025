package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agnogo/agnogo/media"
)

// DefaultPartSize is the size of the parts an S3 upload is sent in: 5 MiB,
// the smallest part S3 accepts. An upload holds one part in memory at a
// time.
const DefaultPartSize = 5 << 20

// filenameKey is the object metadata key holding a blob's file name.
const filenameKey = "filename"

// defaultContentType is the content type of a blob put without a MIME type.
const defaultContentType = "application/octet-stream"

// Store keeps blobs in a bucket: each is the object <prefix><id>, with its
// MIME type as the object's content type and its file name in the object's
// metadata. [Open] opens one from a URL.
type Store struct {
	bucket bucket
	prefix string
	opts   media.Options
}

var _ media.Store = (*Store)(nil)

// bucket is where a [Store] keeps its objects: S3, a directory, or a
// gocloud.dev bucket. A missing object is reported with an error wrapping
// [media.ErrNotFound].
type bucket interface {
	// newWriter begins the object key. limit is the most bytes the object
	// may reach (-1: unbounded), which an upload in parts sizes its parts
	// by.
	newWriter(ctx context.Context, key string, attrs objectAttrs, limit int64) (objectWriter, error)
	// open streams the object's bytes.
	open(ctx context.Context, key string) (io.ReadCloser, error)
	// attributes returns the object's size, content type and file name.
	attributes(ctx context.Context, key string) (objectAttrs, error)
	// delete removes the object; a missing one is not an error.
	delete(ctx context.Context, key string) error
	// close releases the bucket.
	close() error
}

// objectWriter receives an object's bytes. Exactly one of commit and abort
// ends it.
type objectWriter interface {
	io.Writer
	// commit makes the object visible under its key. On failure nothing
	// is left.
	commit() error
	// abort discards what was written, leaving no object.
	abort() error
}

// objectAttrs is what an object records beside its bytes.
type objectAttrs struct {
	size        int64
	contentType string
	filename    string
}

// opener opens the [Store] a URL of one scheme names.
type opener func(ctx context.Context, u *url.URL, opts media.Options) (*Store, error)

// openers are the schemes this build knows, by name: the ones it serves,
// and the ones whose driver it was built without (their opener says which
// build tag brings them).
var openers = map[string]opener{}

func init() {
	register("s3", openS3URL)
	register("file", openFileURL)
}

// register makes scheme open with open, here and through [media.Open].
func register(scheme string, open opener) {
	openers[scheme] = open
	media.Register(scheme, func(ctx context.Context, u *url.URL, opts media.Options) (media.Store, error) {
		store, err := open(ctx, u, opts)
		if err != nil {
			return nil, err
		}
		return store, nil
	})
}

// notBuiltIn is the opener of a scheme whose driver this binary was built
// without: it says which build tag brings it.
func notBuiltIn(scheme, tag string) opener {
	return func(context.Context, *url.URL, media.Options) (*Store, error) {
		return nil, fmt.Errorf("media: %s:// needs agnogo built with the %s build tag (go build -tags %s ./cmd/agnogo): its driver is left out of the default build for its size", scheme, tag, tag)
	}
}

// Open opens the bucket rawURL names as a store: an s3:// or file:// URL in
// every build, gs:// and azblob:// in builds with their tags (see the
// package documentation for the parameters). opts are used as they are;
// [media.Open] is the entry point that also takes public_url from the URL.
func Open(ctx context.Context, rawURL string, opts media.Options) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("media: open bucket: %w", err)
	}
	open, ok := openers[strings.ToLower(u.Scheme)]
	if !ok {
		return nil, fmt.Errorf("media: open bucket %s: unknown scheme %q (known: %s)", u.Redacted(), u.Scheme, strings.Join(slices.Sorted(maps.Keys(openers)), ", "))
	}
	return open(ctx, u, opts)
}

// newStore returns a store over bucket, its ids prefixed with prefix.
func newStore(bucket bucket, prefix string, opts media.Options) (*Store, error) {
	opts, err := opts.Prepare()
	if err != nil {
		return nil, err
	}
	return &Store{bucket: bucket, prefix: prefix, opts: opts}, nil
}

// Put implements [media.Store]. The blob streams into the bucket as it is
// read; a failed or refused Put leaves no object.
func (s *Store) Put(ctx context.Context, r io.Reader, info media.Info) (media.Ref, error) {
	id, err := s.opts.NextID()
	if err != nil {
		return media.Ref{}, err
	}
	contentType, err := normalizeContentType(info.MimeType)
	if err != nil {
		return media.Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	limit := s.opts.Limits.For(info.MimeType)
	w, err := s.bucket.newWriter(ctx, s.prefix+id, objectAttrs{contentType: contentType, filename: info.Filename}, limit)
	if err != nil {
		return media.Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	n, err := media.CopyLimited(ctx, w, r, limit, info.MimeType)
	if err != nil {
		if abortErr := w.abort(); abortErr != nil {
			err = errors.Join(err, fmt.Errorf("discarding the partial blob %s: %w", id, abortErr))
		}
		return media.Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	if err := w.commit(); err != nil {
		return media.Ref{}, fmt.Errorf("media: put blob: %w", err)
	}
	return media.Ref{ID: id, URL: s.opts.URL(id), Size: n, MimeType: info.MimeType, Filename: info.Filename}, nil
}

// Open implements [media.Store].
func (s *Store) Open(ctx context.Context, id string) (io.ReadCloser, error) {
	if err := media.CheckID(id); err != nil {
		return nil, err
	}
	r, err := s.bucket.open(ctx, s.prefix+id)
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
	attrs, err := s.bucket.attributes(ctx, s.prefix+id)
	if err != nil {
		return media.Ref{}, blobError("stat", id, err)
	}
	return media.Ref{ID: id, URL: s.opts.URL(id), Size: attrs.size, MimeType: attrs.contentType, Filename: attrs.filename}, nil
}

// Delete implements [media.Store].
func (s *Store) Delete(ctx context.Context, id string) error {
	if !media.ValidID(id) {
		return nil // no blob can have it
	}
	if err := s.bucket.delete(ctx, s.prefix+id); err != nil {
		return blobError("delete", id, err)
	}
	return nil
}

// Close implements [media.Store]. A store opened from a URL closes its
// bucket; one made by New closes it when told to (Config.CloseBucket).
func (s *Store) Close() error {
	if err := s.bucket.close(); err != nil {
		return fmt.Errorf("media: close bucket: %w", err)
	}
	return nil
}

// blobError wraps a bucket error, reducing a missing object to
// [media.ErrNotFound].
func blobError(op, id string, err error) error {
	if errors.Is(err, media.ErrNotFound) {
		return fmt.Errorf("media: %s blob %s: %w", op, id, media.ErrNotFound)
	}
	return fmt.Errorf("media: %s blob %s: %w", op, id, err)
}

// normalizeContentType returns the content type a blob of mimeType is
// stored with: the type in canonical form ("image/png"), or
// application/octet-stream for none. A type that does not parse is refused,
// as it was when gocloud.dev wrote every blob.
func normalizeContentType(mimeType string) (string, error) {
	if mimeType == "" {
		return defaultContentType, nil
	}
	mediaType, params, err := mime.ParseMediaType(mimeType)
	if err != nil {
		return "", fmt.Errorf("content type %q: %w", mimeType, err)
	}
	contentType := mime.FormatMediaType(mediaType, params)
	if contentType == "" {
		return "", fmt.Errorf("content type %q: not a media type", mimeType)
	}
	return contentType, nil
}

// bucketPrefix takes the prefix parameter out of q: the text every blob id
// is prefixed with.
func bucketPrefix(q url.Values) (string, error) {
	prefix := q.Get("prefix")
	q.Del("prefix")
	if !utf8.ValidString(prefix) {
		return "", fmt.Errorf("prefix %q is not valid UTF-8", prefix)
	}
	return prefix, nil
}

// unknownParams refuses the parameters left in q, none of which a scheme
// whose parameters are known takes.
func unknownParams(q url.Values, known []string) error {
	if len(q) == 0 {
		return nil
	}
	var names []string
	for name := range q {
		names = append(names, fmt.Sprintf("%q", name))
	}
	slices.Sort(names)
	noun := "parameter"
	if len(names) > 1 {
		noun = "parameters"
	}
	return fmt.Errorf("unknown query %s %s (known: %s)", noun, strings.Join(names, ", "), strings.Join(known, ", "))
}

// parseBool reads the boolean query parameter name.
func parseBool(name, value string) (bool, error) {
	b, err := strconv.ParseBool(value)
	if err != nil {
		return false, fmt.Errorf("invalid value for %q: %w", name, err)
	}
	return b, nil
}
