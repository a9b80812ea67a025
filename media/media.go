package media

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Store keeps media blobs. Put streams a blob in without holding it whole in
// memory; Open streams it back out. Implementations are safe for concurrent
// use.
type Store interface {
	// Put copies r into a new blob and returns its reference. It reads r to
	// its end, or until the blob exceeds the store's limit for info.MimeType,
	// when it fails with a [*TooLargeError] and keeps nothing. A failed Put
	// leaves no blob behind.
	Put(ctx context.Context, r io.Reader, info Info) (Ref, error)
	// Open returns the blob's bytes. The caller closes the reader. A blob
	// that does not exist fails with an error wrapping [ErrNotFound].
	Open(ctx context.Context, id string) (io.ReadCloser, error)
	// Stat returns the blob's reference without reading it.
	Stat(ctx context.Context, id string) (Ref, error)
	// Delete removes the blob. Deleting a blob that does not exist is not an
	// error.
	Delete(ctx context.Context, id string) error
	// Close releases the store's resources.
	Close() error
}

// Info describes a blob being put.
type Info struct {
	// MimeType is the blob's media type, e.g. "image/jpeg". It selects the
	// blob's size limit (see [Limits]).
	MimeType string
	// Filename is the name the blob was uploaded under, kept for display.
	Filename string
}

// Ref is a stored blob as a run refers to it.
type Ref struct {
	// ID names the blob in its store.
	ID string
	// URL is where the blob can be fetched publicly — by a model provider,
	// or a browser — when the store has a public base URL; empty otherwise.
	URL string
	// Size is the blob's length in bytes.
	Size int64
	// MimeType is the blob's media type.
	MimeType string
	// Filename is the name the blob was uploaded under.
	Filename string
}

// ErrNotFound is wrapped by the error of reading a blob that does not exist
// (or an id that no blob can have).
var ErrNotFound = errors.New("media: blob not found")

// ErrTooLarge is wrapped by [*TooLargeError].
var ErrTooLarge = errors.New("media: blob too large")

// TooLargeError refuses a blob larger than the store's limit for its type.
type TooLargeError struct {
	// Limit is the largest size accepted, in bytes.
	Limit int64
	// MimeType is the blob's media type, which chose the limit.
	MimeType string
}

// Error says the limit that was exceeded.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than the limit of %s for %s", FormatBytes(e.Limit), cmp.Or(e.MimeType, "this type"))
}

// Unwrap returns [ErrTooLarge].
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// DefaultMaxBytes is the size limit of a blob when [Limits] sets none:
// 32 MiB.
const DefaultMaxBytes int64 = 32 << 20

// Limits bound the size of the blobs a store accepts.
type Limits struct {
	// MaxBytes bounds every blob. Zero means [DefaultMaxBytes]; a negative
	// value removes the bound.
	MaxBytes int64
	// PerType overrides MaxBytes for some types, keyed by a full MIME type
	// ("video/mp4") or a top-level type ("video", or "video/*"), in lower
	// case; the full type wins. A value follows MaxBytes's rules. Defaults
	// to none.
	PerType map[string]int64
}

// For returns the limit for a blob of mimeType, in bytes; -1 means none.
func (l Limits) For(mimeType string) int64 {
	mimeType = strings.ToLower(strings.TrimSpace(mimeType))
	limit := l.MaxBytes
	top, _, _ := strings.Cut(mimeType, "/")
	for _, key := range []string{mimeType, top + "/*", top} {
		if v, ok := l.PerType[key]; ok && key != "" {
			limit = v
			break
		}
	}
	switch {
	case limit == 0:
		return DefaultMaxBytes
	case limit < 0:
		return -1
	}
	return limit
}

// Validate checks the limits' keys, so that a typo in a config file is
// reported rather than silently ignored. Every store calls it (through
// [Options.Prepare]).
func (l Limits) Validate() error {
	for key := range l.PerType {
		top, sub, _ := strings.Cut(key, "/")
		if top == "" || strings.ContainsAny(key, " \t;") || strings.Count(key, "/") > 1 || (strings.Contains(key, "/") && sub == "") {
			return fmt.Errorf("media limits: %q is not a MIME type (e.g. video/mp4) or a top-level type (e.g. video)", key)
		}
		if key != strings.ToLower(key) {
			// For compares lower-cased types: this key would never match.
			return fmt.Errorf("media limits: write the type %q in lower case", key)
		}
	}
	return nil
}

// FormatBytes renders a size for people: "32 MiB", "1.5 GiB", "700 bytes".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	value, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		value /= unit
		suffix = s
		if value < unit {
			break
		}
	}
	text := fmt.Sprintf("%.1f", value)
	text = strings.TrimSuffix(text, ".0")
	return text + " " + suffix
}
