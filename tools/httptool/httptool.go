// Package httptool is the http toolkit: HTTP requests a model makes to a
// web API or a page, with the address policy of every network toolkit so
// that a model cannot make the server reach inside its own network.
//
// It has two tools, so that a person can be asked before anything is
// changed while reading stays free:
//
//   - http_request sends the safe methods, GET (the default), HEAD and
//     OPTIONS;
//   - http_write sends POST, PUT, PATCH and DELETE, with a text body or a
//     JSON value, and by default pauses the run for a person's
//     confirmation before each call (confirm_writes: false turns that off).
//
// Both answer a JSON object {status, url, headers, body, truncated, note}:
// the status code, the final URL when redirects were followed, a few
// useful response headers (content-type, content-length, location, etag,
// last-modified, retry-after, allow, …), the body as text cut at
// max_response_bytes (64 KiB unless set) with a note, and in place of a
// binary body a note with its content type and size. A status of 400 or
// more is an error classified with run's error taxonomy (401 is
// authentication_error, 429 rate_limit, 5xx server_error, …) quoting the
// body's error message.
//
// # Settings
//
//   - base_url: when set, a url that is not absolute is a path under it
//     ("users/1" or "/users/1" is {base_url}/users/1), and default_headers
//     go only to base_url's host.
//   - allowed_methods: the methods the model may use; defaults to all
//     seven. A toolkit left with no write method has no http_write, one
//     with no safe method no http_request.
//   - default_headers: headers sent with every request (an Authorization
//     from the environment, an API version); the model's own headers of
//     the same name replace them.
//   - confirm_writes: whether http_write pauses for a person's
//     confirmation; defaults to true.
//   - the network keys of every network toolkit: allow_private,
//     allow_hosts, deny_hosts, timeout_seconds, max_response_bytes.
package httptool

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// Name is the toolkit's name, as config files list it.
const Name = "http"

// The tools' names.
const (
	// RequestName sends GET, HEAD and OPTIONS requests.
	RequestName = "http_request"
	// WriteName sends POST, PUT, PATCH and DELETE requests.
	WriteName = "http_write"
)

// Names lists the toolkit's tools, in order.
func Names() []string { return []string{RequestName, WriteName} }

// DefaultMaxResponseBytes bounds the body a response shows the model
// unless max_response_bytes says otherwise: 64 KiB, a size a model's
// context holds.
const DefaultMaxResponseBytes = 64 << 10

// safeMethods are the methods of http_request, which change nothing.
var safeMethods = []string{"GET", "HEAD", "OPTIONS"}

// writeMethods are the methods of http_write.
var writeMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

// Methods lists every method the toolkit can send: GET, HEAD, OPTIONS,
// POST, PUT, PATCH and DELETE.
func Methods() []string { return slices.Concat(safeMethods, writeMethods) }

// Config is the http toolkit's settings, from Go or from a config file.
type Config struct {
	// Network is where requests may go: base_url, allow_private,
	// allow_hosts, deny_hosts, timeout_seconds and max_response_bytes
	// (which defaults to [DefaultMaxResponseBytes] here). BaseURL, when
	// set, is the root relative URLs are resolved against; it defaults to
	// none, and then every url must be absolute.
	toolkit.Network
	// AllowedMethods lists the methods the model may send, in any case.
	// Defaults to all of [Methods].
	AllowedMethods []string `json:"allowed_methods,omitempty"`
	// DefaultHeaders are sent with every request, under the model's own
	// headers of the same name. When BaseURL is set they are sent only to
	// its host, so a credential among them does not leave for another.
	// Defaults to none.
	DefaultHeaders map[string]string `json:"default_headers,omitempty"`
	// ConfirmWrites makes http_write pause the run before each call until
	// a person confirms or rejects it. Defaults to true.
	ConfirmWrites *bool `json:"confirm_writes,omitempty"`
}

// kit is a built toolkit's state, shared by its tools; it is not changed
// after New.
type kit struct {
	cfg     Config
	base    *url.URL
	allowed []string
	limit   int64
	client  *http.Client
}

// New returns the http toolkit with cfg's settings. It checks them and
// connects nowhere.
func New(cfg Config) (*toolkit.Toolkit, error) {
	if err := cfg.Network.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	k := &kit{cfg: cfg, limit: DefaultMaxResponseBytes}
	if cfg.MaxResponseBytes > 0 {
		k.limit = cfg.MaxResponseBytes
	}
	if cfg.BaseURL != "" {
		base, err := url.Parse(cfg.Network.Base(""))
		if err != nil {
			return nil, fmt.Errorf("%s: base_url: %w", Name, err)
		}
		k.base = base
	}
	if len(cfg.AllowedMethods) == 0 {
		k.allowed = Methods()
	}
	for _, method := range cfg.AllowedMethods {
		upper := strings.ToUpper(strings.TrimSpace(method))
		if !slices.Contains(Methods(), upper) {
			return nil, fmt.Errorf("%s: allowed_methods: %q is not one of %s", Name, method, strings.Join(Methods(), ", "))
		}
		if !slices.Contains(k.allowed, upper) {
			k.allowed = append(k.allowed, upper)
		}
	}
	for name, value := range cfg.DefaultHeaders {
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("%s: default_headers: %q is not a valid header name", Name, name)
		}
		if !httpguts.ValidHeaderFieldValue(value) {
			return nil, fmt.Errorf("%s: default_headers: the value of %s has a character a header cannot hold (a line break?)", Name, name)
		}
	}
	k.client = cfg.Network.Client()
	if k.base != nil && len(cfg.DefaultHeaders) > 0 {
		// A redirect away from base_url's host does not carry the default
		// headers along (Go's client drops only Authorization and cookies).
		check := k.client.CheckRedirect
		k.client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if !k.atBase(req.URL) {
				for name := range cfg.DefaultHeaders {
					req.Header.Del(name)
				}
			}
			return check(req, via)
		}
	}

	var tools []tool.Tool
	if safe := k.methods(safeMethods); len(safe) > 0 {
		t, err := tool.New(tool.Config{Name: RequestName, Description: k.describe(
			"Send an HTTP request that changes nothing and read the answer: method "+strings.Join(safe, ", ")+
				" (GET when left out).", false)}, k.request)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	if writes := k.methods(writeMethods); len(writes) > 0 {
		confirm := cfg.ConfirmWrites == nil || *cfg.ConfirmWrites
		text := "Send an HTTP request that may change something: method " + strings.Join(writes, ", ") +
			", with a text body or a JSON value."
		if confirm {
			text += " A person confirms each call before it is sent."
		}
		t, err := tool.New(tool.Config{Name: WriteName, Description: k.describe(text, true), RequiresConfirmation: confirm}, k.write)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return &toolkit.Toolkit{Name: Name, Tools: tools}, nil
}

// atBase reports a URL on base_url's host, or any URL when there is no
// base_url: where the default headers go.
func (k *kit) atBase(u *url.URL) bool {
	return k.base == nil || (u.Scheme == k.base.Scheme && u.Host == k.base.Host)
}

// methods returns those of list the settings allow, in list's order.
func (k *kit) methods(list []string) []string {
	var out []string
	for _, method := range list {
		if slices.Contains(k.allowed, method) {
			out = append(out, method)
		}
	}
	return out
}

// describe completes a tool's description with what the model needs to
// know of the settings.
func (k *kit) describe(text string, write bool) string {
	if k.base != nil {
		text += " url is absolute or a path under " + k.base.String() + " (e.g. /items/1)."
	} else {
		text += " url is an absolute http or https URL."
	}
	text += " Returns JSON {status, url, headers, body, truncated, note}: the body is text cut at " +
		fmt.Sprint(k.limit) + " bytes; a binary body is described, not shown. A status of 400 or more is an error quoting the API's message."
	if !write && len(k.methods(writeMethods)) > 0 {
		text += " To send data, use " + WriteName + "."
	}
	return text
}

// Definition declares the toolkit for config files, as http.
func Definition() toolkit.Definition {
	return toolkit.Define(Name, "HTTP requests to web APIs and pages: http_request (GET, HEAD, OPTIONS) and http_write (POST, PUT, PATCH, DELETE; confirmed by a person by default).",
		Names(), func(_ context.Context, cfg Config) (*toolkit.Toolkit, error) {
			return New(cfg)
		})
}
