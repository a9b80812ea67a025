// Package webfetch is the web_fetch toolkit: its tool fetch_page reads a
// web page the way a person would, as its article — title, byline and
// main content, without navigation, ads or scripts — converted to
// Markdown, so that a model reads pages at a fraction of their HTML's
// size.
//
// The article is found with go-readability (Mozilla's Readability.js in
// Go); a page it finds no article in is converted whole. The Markdown
// keeps headings, paragraphs, links (made absolute), lists, block quotes,
// code, emphasis and tables. A text answer that is not HTML — text/plain,
// Markdown, JSON, CSV, XML — is returned as it is; anything else, such as
// a PDF or an image, is refused with a message naming its type. Text
// longer than max_chars is cut with a note saying where, and the model
// may ask for the rest with offset.
//
// # Settings
//
//   - max_chars: the most characters of text one call returns; defaults
//     to 20000. A call may ask for fewer.
//   - user_agent: the User-Agent sent; defaults to [DefaultUserAgent].
//   - the network keys of every network toolkit: base_url (a url that is
//     not absolute is a path under it), allow_private, allow_hosts,
//     deny_hosts, timeout_seconds, max_response_bytes (the most of a page
//     read, 5 MiB by default). Loopback, private and link-local addresses
//     are refused unless allow_private or allow_hosts let them through.
package webfetch

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// Name is the toolkit's name, as config files list it.
const Name = "web_fetch"

// FetchPageName is the name of the toolkit's tool.
const FetchPageName = "fetch_page"

// Names lists the toolkit's tools.
func Names() []string { return []string{FetchPageName} }

// Defaults of [Config].
const (
	// DefaultMaxChars bounds the text one call returns.
	DefaultMaxChars = 20000
	// DefaultUserAgent is the User-Agent the toolkit sends.
	DefaultUserAgent = "Mozilla/5.0 (compatible; agnogo-web-fetch/1.0; +https://github.com/agnogo/agnogo)"
)

// Config is the web_fetch toolkit's settings, from Go or from a config
// file.
type Config struct {
	// Network is where pages may be fetched from: base_url,
	// allow_private, allow_hosts, deny_hosts, timeout_seconds and
	// max_response_bytes (toolkit.DefaultMaxResponseBytes, 5 MiB, unless
	// set). BaseURL, when set, is the root relative URLs are resolved
	// against; it defaults to none, and then every url must be absolute.
	toolkit.Network
	// MaxChars is the most characters of text one call returns; longer
	// text is cut with a note. Defaults to [DefaultMaxChars].
	MaxChars int `json:"max_chars,omitempty"`
	// UserAgent is the User-Agent header sent. Defaults to
	// [DefaultUserAgent].
	UserAgent string `json:"user_agent,omitempty"`
}

// fetcher is a built toolkit's state; it is not changed after New.
type fetcher struct {
	base      *url.URL
	maxChars  int
	userAgent string
	limit     int64
	client    *http.Client
}

// pageArgs are fetch_page's arguments.
type pageArgs struct {
	URL      string `json:"url" jsonschema:"the page's address: an absolute http or https URL"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"the most characters of text to return; the toolkit's limit when left out or larger"`
	Offset   int    `json:"offset,omitempty" jsonschema:"the character to start from, to read on where an earlier call's text was cut; 0 when left out"`
}

// New returns the web_fetch toolkit with cfg's settings. It checks them
// and connects nowhere.
func New(cfg Config) (*toolkit.Toolkit, error) {
	if err := cfg.Network.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if cfg.MaxChars < 0 {
		return nil, fmt.Errorf("%s: max_chars: %d is negative; leave it out for %d", Name, cfg.MaxChars, DefaultMaxChars)
	}
	if strings.ContainsAny(cfg.UserAgent, "\r\n") {
		return nil, fmt.Errorf("%s: user_agent: a header value cannot hold a line break", Name)
	}
	f := &fetcher{maxChars: cfg.MaxChars, userAgent: cfg.UserAgent, limit: cfg.Network.MaxBytes(), client: cfg.Network.Client()}
	if f.maxChars == 0 {
		f.maxChars = DefaultMaxChars
	}
	if f.userAgent == "" {
		f.userAgent = DefaultUserAgent
	}
	description := fmt.Sprintf("Fetch a web page and read its main content as Markdown: title, byline, then the article "+
		"(headings, paragraphs, links, lists, code, tables), without navigation or ads. Plain text, Markdown and JSON are returned "+
		"as they are; PDFs, images and other binary files cannot be read. At most %d characters are returned; when the text is "+
		"cut, the note at its end gives the offset to read on from.", f.maxChars)
	if cfg.BaseURL != "" {
		base, err := url.Parse(cfg.Network.Base(""))
		if err != nil {
			return nil, fmt.Errorf("%s: base_url: %w", Name, err)
		}
		f.base = base
		description += " url may also be a path under " + base.String() + "."
	}
	t, err := tool.New(tool.Config{Name: FetchPageName, Description: description}, f.fetch)
	if err != nil {
		return nil, err
	}
	return &toolkit.Toolkit{Name: Name, Tools: []tool.Tool{t}}, nil
}

// Definition declares the toolkit for config files, as web_fetch.
func Definition() toolkit.Definition {
	return toolkit.Define(Name, "Read web pages as Markdown: fetch_page extracts a page's article (title, byline, content) with readability.",
		Names(), func(_ context.Context, cfg Config) (*toolkit.Toolkit, error) {
			return New(cfg)
		})
}
