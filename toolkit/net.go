package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/urlpolicy"
)

// Defaults of [Network].
const (
	// DefaultTimeout bounds one request of a network toolkit.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes bounds the body read of one response: 5 MiB.
	DefaultMaxResponseBytes = 5 << 20
)

// Network is what every network toolkit takes: where its API is, and which
// addresses it may reach. Toolkits embed it in their settings, so its keys
// (base_url, allow_private, allow_hosts, deny_hosts, timeout_seconds,
// max_response_bytes) are theirs. The zero value reaches the toolkit's
// default API and refuses loopback, private and link-local addresses: a
// model cannot make the server fetch what sits inside its network
// (server-side request forgery).
type Network struct {
	// BaseURL is the API's address, which tests point at a local fake.
	// Defaults to the toolkit's public API.
	BaseURL string `json:"base_url,omitempty"`
	// AllowPrivate lets requests reach loopback, private and link-local
	// addresses. Defaults to false.
	AllowPrivate bool `json:"allow_private,omitempty"`
	// AllowHosts, when not empty, lists the only hosts requests may reach
	// (host, *.domain, IP or CIDR); they pass even when private.
	AllowHosts []string `json:"allow_hosts,omitempty"`
	// DenyHosts lists hosts requests may not reach, in the same forms.
	DenyHosts []string `json:"deny_hosts,omitempty"`
	// TimeoutSeconds bounds one request. Defaults to [DefaultTimeout].
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// MaxResponseBytes bounds the body read of one response; a longer one
	// is cut there. Defaults to [DefaultMaxResponseBytes].
	MaxResponseBytes int64 `json:"max_response_bytes,omitempty"`
	// Transport, when set, sends the requests instead of a transport
	// dialing through the policy (a proxy, a test's recorder). The policy's
	// URL check still applies to each request.
	Transport http.RoundTripper `json:"-"`
}

// Policy is the address policy the settings describe.
func (n Network) Policy() *urlpolicy.Policy {
	return &urlpolicy.Policy{BlockPrivate: !n.AllowPrivate, Allow: n.AllowHosts, Deny: n.DenyHosts}
}

// Timeout is the bound of one request.
func (n Network) Timeout() time.Duration {
	if n.TimeoutSeconds > 0 {
		return time.Duration(n.TimeoutSeconds * float64(time.Second))
	}
	return DefaultTimeout
}

// MaxBytes is the bound of one response body.
func (n Network) MaxBytes() int64 {
	if n.MaxResponseBytes > 0 {
		return n.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}

// Validate checks the settings.
func (n Network) Validate() error {
	if n.BaseURL != "" {
		u, err := url.Parse(n.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("base_url: %q is not an http or https URL", n.BaseURL)
		}
	}
	if n.TimeoutSeconds < 0 {
		return fmt.Errorf("timeout_seconds: %v is negative", n.TimeoutSeconds)
	}
	if n.MaxResponseBytes < 0 {
		return fmt.Errorf("max_response_bytes: %d is negative", n.MaxResponseBytes)
	}
	policy := n.Policy()
	if err := policy.Validate(); err != nil {
		return err
	}
	return nil
}

// Base returns BaseURL, or fallback when it is empty, without a trailing
// slash.
func (n Network) Base(fallback string) string {
	base := n.BaseURL
	if base == "" {
		base = fallback
	}
	return strings.TrimSuffix(base, "/")
}

// Client returns an HTTP client that reaches only what the policy allows,
// on every request and every redirect, bounded by the timeout. It uses no
// proxy from the environment: a proxy would dial for it, past the policy.
func (n Network) Client() *http.Client {
	policy := n.Policy()
	var transport http.RoundTripper = &checked{next: n.Transport, policy: policy}
	if n.Transport == nil {
		dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		transport = &http.Transport{
			Proxy:                 nil,
			DialContext:           policy.DialContext(dialer),
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: n.Timeout(),
		}
	}
	return &http.Client{
		Transport: transport,
		Timeout:   n.Timeout(),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

// checked refuses requests the policy does not allow before a transport
// that does not dial through the policy sends them.
type checked struct {
	next   http.RoundTripper
	policy *urlpolicy.Policy
}

// RoundTrip implements [http.RoundTripper].
func (c *checked) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := c.policy.Check(req.Context(), req.URL.String()); err != nil {
		return nil, fmt.Errorf("%w: %w", urlpolicy.ErrDialRefused, err)
	}
	return c.next.RoundTrip(req)
}

// ReadBody reads at most limit bytes of a response's body, and reports
// whether there was more.
func ReadBody(resp *http.Response, limit int64) ([]byte, bool, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(body)) > limit {
		return body[:limit], true, nil
	}
	return body, false, nil
}

// Request is one call of a JSON API by [DoJSON].
type Request struct {
	// Method defaults to GET, or POST when Body is set.
	Method string
	// URL is the full address.
	URL string
	// Header is sent as is.
	Header http.Header
	// Body, when not nil, is sent as JSON.
	Body any
	// StatusError, when set, makes the error of an answer outside 2xx
	// (an API whose error body or headers say more than [StatusError]
	// reads). Defaults to [StatusError].
	StatusError func(resp *http.Response, body []byte) error
}

// DoJSON sends req with client and decodes a 2xx JSON answer into out
// (when not nil). A failure is an [*Error] of toolkit classified with run's
// error taxonomy: an HTTP status by [ClassifyStatus], a refused address, a
// timeout or a connection failure by [Classify]. The body read is bounded
// by limit: a longer answer is a bad_request error naming
// max_response_bytes, not a broken JSON document.
func DoJSON(ctx context.Context, client *http.Client, toolkit string, req Request, limit int64, out any) error {
	method := req.Method
	var body io.Reader
	if req.Body != nil {
		encoded, err := json.Marshal(req.Body)
		if err != nil {
			return fmt.Errorf("%s: encode the request: %w", toolkit, err)
		}
		body = strings.NewReader(string(encoded))
		if method == "" {
			method = http.MethodPost
		}
	}
	if method == "" {
		method = http.MethodGet
	}
	httpReq, err := http.NewRequestWithContext(ctx, method, req.URL, body)
	if err != nil {
		return &Error{Toolkit: toolkit, Class: classBadRequest, Message: err.Error(), Err: err}
	}
	for key, values := range req.Header {
		httpReq.Header[key] = values
	}
	if req.Body != nil {
		httpReq.Header.Set("Content-Type", "application/json")
	}
	if httpReq.Header.Get("Accept") == "" {
		httpReq.Header.Set("Accept", "application/json")
	}
	resp, err := client.Do(httpReq)
	if err != nil {
		return Classify(toolkit, err)
	}
	defer resp.Body.Close()
	data, more, err := ReadBody(resp, limit)
	if err != nil {
		return Classify(toolkit, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if req.StatusError != nil {
			return req.StatusError(resp, data)
		}
		return StatusError(toolkit, resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if more {
		return &Error{Toolkit: toolkit, Class: run.ClassBadRequest, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("the answer is larger than max_response_bytes (%d bytes): ask for less, or raise max_response_bytes", limit)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &Error{Toolkit: toolkit, Class: classUnknown, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("the answer is not the JSON expected: %v", err), Err: err}
	}
	return nil
}
