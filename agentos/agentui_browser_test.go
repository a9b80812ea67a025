package agentos_test

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// The browser side of the agent-ui tests (agentui_test.go): the CORS rules a
// page at agentUIOrigin is held to.

// browser sends requests as a page served from agentUIOrigin does: with an
// Origin header, after a CORS preflight when the request is not a simple
// one, and failing (as fetch does) when the server's CORS answer would make
// the browser withhold the response.
type browser struct {
	base, origin string
}

// fetch sends one cross-origin request.
func (b *browser) fetch(ctx context.Context, method, path string, header http.Header, body io.Reader) (*http.Response, error) {
	if header == nil {
		header = http.Header{}
	}
	if requested, needed := preflightHeaders(method, header); needed {
		if err := b.preflight(ctx, method, path, requested); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	req.Header.Set("Origin", b.origin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != b.origin && got != "*" {
		resp.Body.Close()
		return nil, fmt.Errorf("CORS: %s %s answered %d with Access-Control-Allow-Origin %q; the browser withholds it", method, path, resp.StatusCode, got)
	}
	return resp, nil
}

// preflightHeaders returns the request headers a browser names in a
// preflight (lower-cased, sorted) and whether it sends one: for any method
// but GET, HEAD and POST, and for any header outside the CORS safelist — the
// UI's JSON Content-Type on every GET and DELETE, and its Authorization.
func preflightHeaders(method string, header http.Header) ([]string, bool) {
	var named []string
	for name, values := range header {
		lower := strings.ToLower(name)
		switch lower {
		case "accept", "accept-language", "content-language":
			continue
		case "content-type":
			mediaType, _, _ := mime.ParseMediaType(values[0])
			if mediaType == "multipart/form-data" || mediaType == "application/x-www-form-urlencoded" || mediaType == "text/plain" {
				continue
			}
		}
		named = append(named, lower)
	}
	slices.Sort(named)
	simpleMethod := method == http.MethodGet || method == http.MethodHead || method == http.MethodPost
	return named, !simpleMethod || len(named) > 0
}

// preflight sends the OPTIONS request and checks its answer as the fetch
// standard's CORS check does (no credentials are sent, so "*" counts, but
// never for Authorization).
func (b *browser) preflight(ctx context.Context, method, path string, requested []string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, b.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Origin", b.origin)
	req.Header.Set("Access-Control-Request-Method", method)
	if len(requested) > 0 {
		req.Header.Set("Access-Control-Request-Headers", strings.Join(requested, ","))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	fail := func(why string) error { return fmt.Errorf("CORS preflight of %s %s: %s", method, path, why) }
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(fmt.Sprintf("status %d", resp.StatusCode))
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != b.origin && got != "*" {
		return fail(fmt.Sprintf("Access-Control-Allow-Origin %q", got))
	}
	methods := headerList(resp.Header.Get("Access-Control-Allow-Methods"))
	if !slices.Contains(methods, method) && !slices.Contains(methods, "*") && !slices.Contains([]string{"GET", "HEAD", "POST"}, method) {
		return fail(fmt.Sprintf("method not in Access-Control-Allow-Methods %v", methods))
	}
	allowed := headerList(strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")))
	for _, h := range requested {
		if !slices.Contains(allowed, h) && (h == "authorization" || !slices.Contains(allowed, "*")) {
			return fail(fmt.Sprintf("header %q not in Access-Control-Allow-Headers %v", h, allowed))
		}
	}
	return nil
}

func headerList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
