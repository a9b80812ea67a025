package media

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// Options configure what every store shares, whatever keeps its bytes.
type Options struct {
	// Limits bound the blobs the store accepts. Defaults to 32 MiB per blob.
	Limits Limits
	// PublicBaseURL, when set, is where the store's blobs are served
	// publicly (a CDN, a public bucket): a blob's URL is PublicBaseURL
	// followed by its id, and a model provider is given that URL instead of
	// the bytes where it takes one. Defaults to none: blobs are private and
	// their bytes are sent.
	PublicBaseURL string
	// NewID names new blobs; it must return ids [ValidID] accepts, unique
	// within the store. Defaults to [NewID].
	NewID func() string
}

// Prepare applies the defaults to o and checks it. Implementations call it
// once, in their constructor.
func (o Options) Prepare() (Options, error) {
	if o.NewID == nil {
		o.NewID = NewID
	}
	if err := o.Limits.Validate(); err != nil {
		return o, err
	}
	if o.PublicBaseURL != "" {
		u, err := url.Parse(o.PublicBaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return o, fmt.Errorf("media public base URL %q: want an absolute http(s) URL", o.PublicBaseURL)
		}
		if !strings.HasSuffix(o.PublicBaseURL, "/") {
			o.PublicBaseURL += "/"
		}
	}
	return o, nil
}

// URL is the public URL of the blob id, or "" without a public base URL.
func (o Options) URL(id string) string {
	if o.PublicBaseURL == "" {
		return ""
	}
	return o.PublicBaseURL + id
}

// NextID returns the id of a new blob, checked with [ValidID].
func (o Options) NextID() (string, error) {
	newID := o.NewID
	if newID == nil {
		newID = NewID
	}
	id := newID()
	if !ValidID(id) {
		return "", fmt.Errorf("media: generated blob id %q is not valid: use 1 to 128 of A-Z a-z 0-9 _ -", id)
	}
	return id, nil
}

// NewID returns a random blob id of 32 hexadecimal characters.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id can name a blob: 1 to 128 characters of
// A-Z a-z 0-9 _ and -. Anything else (a path separator, a dot) is refused
// before it reaches a file system or a bucket.
func ValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// CheckID returns an error wrapping [ErrNotFound] for an id no blob can
// have.
func CheckID(id string) error {
	if !ValidID(id) {
		return fmt.Errorf("media blob %q: %w (not a blob id)", id, ErrNotFound)
	}
	return nil
}

// copyBufferSize is the size of the buffer a blob is copied through.
const copyBufferSize = 64 << 10

// CopyLimited copies src to dst through one small buffer, so a blob of any
// size costs constant memory. It fails with a [*TooLargeError] once more
// than limit bytes arrive (a negative limit means none), and with ctx's
// error once ctx ends. It returns the bytes copied.
func CopyLimited(ctx context.Context, dst io.Writer, src io.Reader, limit int64, mimeType string) (int64, error) {
	reader := io.Reader(&contextReader{ctx: ctx, r: src})
	if limit >= 0 {
		reader = io.LimitReader(reader, limit+1)
	}
	// Plain wrappers, so neither side's ReaderFrom/WriterTo takes over with
	// a buffer of its own size.
	n, err := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{reader}, make([]byte, copyBufferSize))
	if err != nil {
		return n, err
	}
	if limit >= 0 && n > limit {
		return n, &TooLargeError{Limit: limit, MimeType: mimeType}
	}
	return n, nil
}

// contextReader stops reading once its context ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

// Read reads from the underlying reader while the context lives.
func (c *contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
