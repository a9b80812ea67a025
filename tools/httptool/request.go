package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/net/http/httpguts"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/toolkit"
)

// requestArgs are http_request's arguments.
type requestArgs struct {
	Method  string            `json:"method,omitempty" jsonschema:"GET (the default), HEAD or OPTIONS"`
	URL     string            `json:"url" jsonschema:"the address: an absolute http or https URL, or a path under the toolkit's base URL when it has one"`
	Headers map[string]string `json:"headers,omitempty" jsonschema:"request headers, such as {\"Accept\": \"application/json\"}"`
}

// writeArgs are http_write's arguments.
type writeArgs struct {
	Method  string            `json:"method" jsonschema:"POST, PUT, PATCH or DELETE"`
	URL     string            `json:"url" jsonschema:"the address: an absolute http or https URL, or a path under the toolkit's base URL when it has one"`
	Headers map[string]string `json:"headers,omitempty" jsonschema:"request headers, such as {\"Content-Type\": \"text/csv\"}"`
	Body    string            `json:"body,omitempty" jsonschema:"the request body as text; give its Content-Type in headers. Leave out when json is given"`
	JSON    any               `json:"json,omitempty" jsonschema:"a JSON value to send as the body, with Content-Type application/json. Leave out when body is given"`
}

// Response is what the model reads of an answer.
type Response struct {
	// Status is the HTTP status code.
	Status int `json:"status"`
	// URL is the address that answered, when redirects led away from the
	// one asked.
	URL string `json:"url,omitempty"`
	// Headers are the answer's useful headers, by lower-case name.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the answer's body as text, cut at the toolkit's limit.
	Body string `json:"body"`
	// Truncated reports a body cut at the limit.
	Truncated bool `json:"truncated"`
	// Note says what was left out: the rest of a cut body, a binary body.
	Note string `json:"note,omitempty"`
}

// shownHeaders are the response headers the model is shown.
var shownHeaders = []string{
	"Content-Type", "Content-Length", "Content-Disposition", "Content-Encoding", "Location", "ETag", "Last-Modified",
	"Cache-Control", "Expires", "Retry-After", "Allow", "Link", "WWW-Authenticate",
	"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
}

// request carries out an http_request call.
func (k *kit) request(ctx context.Context, args requestArgs) (Response, error) {
	method := strings.ToUpper(strings.TrimSpace(args.Method))
	if method == "" {
		method = http.MethodGet
	}
	if err := k.checkMethod(method, safeMethods, WriteName); err != nil {
		return Response{}, err
	}
	return k.do(ctx, method, args.URL, args.Headers, nil, "")
}

// write carries out an http_write call.
func (k *kit) write(ctx context.Context, args writeArgs) (Response, error) {
	method := strings.ToUpper(strings.TrimSpace(args.Method))
	if err := k.checkMethod(method, writeMethods, RequestName); err != nil {
		return Response{}, err
	}
	var body []byte
	var contentType string
	switch {
	case args.JSON != nil && args.Body != "":
		return Response{}, badRequest("give either body or json, not both")
	case args.JSON != nil:
		encoded, err := json.Marshal(args.JSON)
		if err != nil {
			return Response{}, badRequest("json: %v", err)
		}
		body, contentType = encoded, "application/json"
	case args.Body != "":
		body = []byte(args.Body)
	}
	return k.do(ctx, method, args.URL, args.Headers, body, contentType)
}

// checkMethod refuses a method the tool does not send or the settings do
// not allow.
func (k *kit) checkMethod(method string, own []string, other string) error {
	if !slices.Contains(own, method) {
		if slices.Contains(Methods(), method) {
			return badRequest("method %s: use the %s tool for it", method, other)
		}
		return badRequest("method %q: want one of %s", method, strings.Join(k.methods(own), ", "))
	}
	if !slices.Contains(k.allowed, method) {
		return badRequest("method %s is not allowed here; allowed: %s", method, strings.Join(k.allowed, ", "))
	}
	return nil
}

// badRequest is a call's argument the toolkit refuses.
func badRequest(format string, args ...any) error {
	return &toolkit.Error{Toolkit: Name, Class: run.ClassBadRequest, Message: fmt.Sprintf(format, args...)}
}

// resolve returns the URL raw names: absolute, or a path under base_url.
func (k *kit) resolve(raw string) (*url.URL, error) { return toolkit.ResolveURL(Name, k.base, raw) }

// do sends one request and renders its answer.
func (k *kit) do(ctx context.Context, method, rawURL string, headers map[string]string, body []byte, contentType string) (Response, error) {
	target, err := k.resolve(rawURL)
	if err != nil {
		return Response{}, err
	}
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target.String(), reader)
	if err != nil {
		return Response{}, badRequest("%v", err)
	}
	req.Header.Set("User-Agent", "agnogo-http/1")
	if k.atBase(target) {
		for name, value := range k.cfg.DefaultHeaders {
			req.Header.Set(name, value)
		}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for name, value := range headers {
		if !httpguts.ValidHeaderFieldName(name) {
			return Response{}, badRequest("header %q: not a valid header name", name)
		}
		if !httpguts.ValidHeaderFieldValue(value) {
			return Response{}, badRequest("header %s: the value has a character a header cannot hold (a line break?)", name)
		}
		if strings.EqualFold(name, "Host") {
			return Response{}, badRequest("header Host: the host is the url's")
		}
		req.Header.Set(name, value)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return Response{}, toolkit.Classify(Name, err)
	}
	defer resp.Body.Close()
	data, cut, err := toolkit.ReadBody(resp, k.limit)
	if err != nil {
		return Response{}, toolkit.Classify(Name, err)
	}
	if resp.StatusCode >= 400 {
		return Response{}, toolkit.StatusError(Name, resp.StatusCode, data)
	}
	out := Response{Status: resp.StatusCode, Headers: map[string]string{}}
	if final := resp.Request.URL.String(); final != target.String() {
		out.URL = final
	}
	for _, name := range shownHeaders {
		if value := resp.Header.Get(name); value != "" {
			out.Headers[strings.ToLower(name)] = value
		}
	}
	if len(out.Headers) == 0 {
		out.Headers = nil
	}
	if method == http.MethodHead || len(data) == 0 {
		return out, nil
	}
	mediaType, text, ok := textOf(resp.Header.Get("Content-Type"), data, cut)
	if !ok {
		size := fmt.Sprintf("%d bytes", len(data))
		switch {
		case resp.ContentLength >= 0:
			size = fmt.Sprintf("%d bytes", resp.ContentLength)
		case cut:
			size = fmt.Sprintf("more than %d bytes", len(data))
		}
		out.Note = fmt.Sprintf("binary body not shown: %s, %s", mediaType, size)
		return out, nil
	}
	out.Body = text
	if cut {
		out.Truncated = true
		out.Note = fmt.Sprintf("body cut at %d bytes (max_response_bytes); the rest was not read", k.limit)
		if resp.ContentLength > 0 {
			out.Note = fmt.Sprintf("body cut at %d of %d bytes (max_response_bytes)", k.limit, resp.ContentLength)
		}
	}
	return out, nil
}

// textOf returns a body's media type and, when it is text, the body as
// UTF-8 text; cut says the body was cut, maybe within a character.
func textOf(contentType string, data []byte, cut bool) (string, string, bool) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType == "" {
		mediaType, params, _ = mime.ParseMediaType(http.DetectContentType(data))
	}
	if !isText(mediaType) {
		return mediaType, "", false
	}
	if label := params["charset"]; label != "" && !strings.EqualFold(label, "utf-8") && !strings.EqualFold(label, "utf8") {
		if reader, err := charset.NewReaderLabel(label, bytes.NewReader(data)); err == nil {
			if decoded, err := io.ReadAll(reader); err == nil {
				data = decoded
			}
		}
	}
	if cut {
		data = trimPartialRune(data)
	}
	if !utf8.Valid(data) {
		if mediaType == "application/octet-stream" || bytes.IndexByte(data, 0) >= 0 {
			return mediaType, "", false
		}
		return mediaType, strings.ToValidUTF8(string(data), "\uFFFD"), true
	}
	return mediaType, string(data), true
}

// isText reports a media type whose body reads as text.
func isText(mediaType string) bool {
	if strings.HasPrefix(mediaType, "text/") {
		return true
	}
	for _, suffix := range []string{"+json", "+xml", "+yaml"} {
		if strings.HasSuffix(mediaType, suffix) {
			return true
		}
	}
	switch mediaType {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript", "application/x-www-form-urlencoded",
		"application/yaml", "application/x-yaml", "application/toml", "application/graphql", "application/sql", "application/x-ndjson",
		"application/jsonl", "application/csv", "image/svg+xml":
		return true
	}
	return false
}

// trimPartialRune drops the bytes of a rune a cut split at the end of
// data.
func trimPartialRune(data []byte) []byte {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				return data[:i]
			}
			return data
		}
	}
	return data
}
