package media

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Opener opens the store a URL names, for a scheme registered with
// [Register]. opts carry the limits and the public base URL (taken from the
// URL's public_url parameter, which is removed from u).
type Opener func(ctx context.Context, u *url.URL, opts Options) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// Register makes [Open] open URLs of scheme with opener. Implementations
// call it from an init function, as media/blobstore does for s3, gs, azblob
// and file. It panics when opener is nil or the scheme is taken, which is a
// mistake in the program, not in its input.
func Register(scheme string, opener Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	scheme = strings.ToLower(scheme)
	if opener == nil {
		panic("media: Register opener is nil")
	}
	if _, dup := openers[scheme]; dup {
		panic("media: Register called twice for scheme " + scheme)
	}
	openers[scheme] = opener
}

// Schemes lists the URL schemes [Open] knows, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	var schemes []string
	for scheme := range openers {
		schemes = append(schemes, scheme)
	}
	slices.Sort(schemes)
	return schemes
}

// Option configures [Open].
type Option func(*openConfig)

type openConfig struct {
	dataDir string
	limits  Limits
}

// WithDataDir sets the data directory: an empty URL opens a [Local] store in
// its "media" subdirectory. Defaults to the working directory.
func WithDataDir(dir string) Option { return func(c *openConfig) { c.dataDir = dir } }

// WithLimits sets the store's size limits. Defaults to 32 MiB per blob.
func WithLimits(limits Limits) Option { return func(c *openConfig) { c.limits = limits } }

// publicURLParam is the query parameter of a store URL that sets
// [Options.PublicBaseURL]; it is removed before the URL reaches the store's
// opener.
const publicURLParam = "public_url"

// Open opens the store rawURL names:
//
//   - "" — a [Local] store in <data dir>/media (see [WithDataDir]);
//   - a plain path ("./data/media", "/var/lib/agnogo/media") — a [Local]
//     store in that directory;
//   - a URL with a scheme ("s3://bucket?region=eu-west-1") — the store
//     registered for the scheme (see [Register]). A public_url parameter
//     ("…&public_url=https://cdn.example.com/media/") sets where the blobs
//     are served publicly.
func Open(ctx context.Context, rawURL string, opts ...Option) (Store, error) {
	var cfg openConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	rawURL = strings.TrimSpace(rawURL)
	if rawURL == "" {
		return NewLocal(LocalConfig{Dir: filepath.Join(cmp.Or(cfg.dataDir, "."), "media"), Options: Options{Limits: cfg.limits}})
	}
	u, err := url.Parse(rawURL)
	if err != nil || !hasScheme(u) {
		return NewLocal(LocalConfig{Dir: rawURL, Options: Options{Limits: cfg.limits}})
	}
	scheme := strings.ToLower(u.Scheme)
	openersMu.RLock()
	opener, ok := openers[scheme]
	openersMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("media storage %s: no store for the scheme %q (known: %s); "+
			"import github.com/agnogo/agnogo/media/blobstore for s3, gs, azblob and file URLs", u.Redacted(), scheme, strings.Join(append([]string{"a directory path"}, Schemes()...), ", "))
	}
	options := Options{Limits: cfg.limits}
	query := u.Query()
	if query.Has(publicURLParam) {
		options.PublicBaseURL = query.Get(publicURLParam)
		query.Del(publicURLParam)
		u.RawQuery = query.Encode()
	}
	options, err = options.Prepare()
	if err != nil {
		return nil, err
	}
	store, err := opener(ctx, u, options)
	if err != nil {
		return nil, fmt.Errorf("media storage %s: %w", u.Redacted(), err)
	}
	return store, nil
}

// hasScheme tells a URL from a plain path: a scheme of two letters or more
// (a Windows drive letter is a path).
func hasScheme(u *url.URL) bool { return len(u.Scheme) > 1 }
