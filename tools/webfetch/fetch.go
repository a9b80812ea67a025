package webfetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/toolkit"
)

// accept is the Accept header sent: pages first, then the text types the
// tool returns as they are.
const accept = "text/html,application/xhtml+xml;q=0.9,text/markdown;q=0.8,text/plain;q=0.8,application/json;q=0.7,*/*;q=0.1"

// badRequest is a call the toolkit refuses.
func badRequest(format string, args ...any) error {
	return &toolkit.Error{Toolkit: Name, Class: run.ClassBadRequest, Message: fmt.Sprintf(format, args...)}
}

// fetch carries out a fetch_page call.
func (f *fetcher) fetch(ctx context.Context, args pageArgs) (string, error) {
	if args.MaxChars < 0 {
		return "", badRequest("max_chars %d is negative", args.MaxChars)
	}
	if args.Offset < 0 {
		return "", badRequest("offset %d is negative", args.Offset)
	}
	maxChars := f.maxChars
	if args.MaxChars > 0 && args.MaxChars < maxChars {
		maxChars = args.MaxChars
	}
	target, err := f.resolve(args.URL)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return "", badRequest("url %q: %v", args.URL, err)
	}
	req.Header.Set("User-Agent", f.userAgent)
	req.Header.Set("Accept", accept)
	resp, err := f.client.Do(req)
	if err != nil {
		return "", toolkit.Classify(Name, err)
	}
	defer resp.Body.Close()
	data, cut, err := toolkit.ReadBody(resp, f.limit)
	if err != nil {
		return "", toolkit.Classify(Name, err)
	}
	contentType := resp.Header.Get("Content-Type")
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType == "" {
		contentType = http.DetectContentType(data)
		mediaType, _, _ = mime.ParseMediaType(contentType)
	}
	if resp.StatusCode >= 400 {
		if isHTML(mediaType) {
			// An error page's HTML says nothing a status does not.
			return "", &toolkit.Error{Toolkit: Name, Class: toolkit.ClassifyStatus(resp.StatusCode), StatusCode: resp.StatusCode,
				Message: fmt.Sprintf("%s answered %s", target, resp.Status)}
		}
		return "", toolkit.StatusError(Name, resp.StatusCode, data)
	}
	final := resp.Request.URL
	var header, text string
	switch {
	case isHTML(mediaType):
		header, text, err = page(decode(data, contentType, cut), final)
		if err != nil {
			return "", err
		}
	case isText(mediaType):
		text = decode(data, contentType, cut)
	default:
		return "", &toolkit.Error{Toolkit: Name, Class: run.ClassBadRequest, Message: fmt.Sprintf(
			"%s is %s, not a web page or text: fetch_page reads HTML, plain text, Markdown and JSON only", final, mediaType)}
	}
	return window(header, text, args.Offset, maxChars, cut, f.limit)
}

// resolve returns the URL raw names: absolute, or a path under base_url.
func (f *fetcher) resolve(raw string) (*url.URL, error) { return toolkit.ResolveURL(Name, f.base, raw) }

// isHTML reports a media type of web pages.
func isHTML(mediaType string) bool {
	return mediaType == "text/html" || mediaType == "application/xhtml+xml"
}

// isText reports a media type returned as it is.
func isText(mediaType string) bool {
	if strings.HasPrefix(mediaType, "text/") {
		return true
	}
	if strings.HasSuffix(mediaType, "+json") || strings.HasSuffix(mediaType, "+xml") {
		return true
	}
	switch mediaType {
	case "application/json", "application/xml", "application/javascript", "application/x-ndjson", "application/yaml",
		"application/x-yaml", "application/toml", "application/csv", "application/markdown":
		return true
	}
	return false
}

// decode returns a body as UTF-8 text: in the charset its Content-Type,
// byte order mark or meta element declares, else UTF-8 when it is valid
// UTF-8, else Windows-1252 as browsers read it. cut says the body was cut,
// maybe within a character.
func decode(data []byte, contentType string, cut bool) string {
	_, name, certain := charset.DetermineEncoding(data, contentType)
	if name != "utf-8" && (certain || !utf8.Valid(trimPartialRune(data))) {
		if reader, err := charset.NewReaderLabel(name, bytes.NewReader(data)); err == nil {
			if decoded, err := io.ReadAll(reader); err == nil {
				return string(decoded)
			}
		}
	}
	if cut {
		data = trimPartialRune(data)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// trimPartialRune drops the bytes of a character a cut split at the end
// of data.
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

// page extracts a page's article: a header of its title and details, and
// its content as Markdown; a page without an article is converted whole.
func page(source string, pageURL *url.URL) (string, string, error) {
	doc, err := html.Parse(strings.NewReader(source))
	if err != nil {
		return "", "", &toolkit.Error{Toolkit: Name, Class: run.ClassUnknown, Message: fmt.Sprintf("%s: the HTML cannot be read: %v", pageURL, err), Err: err}
	}
	parser := readability.NewParser()
	// Classes name code blocks' languages (language-go).
	parser.KeepClasses = true
	article, err := parser.ParseDocument(doc, pageURL)
	var content string
	if err == nil && article.Node != nil {
		content = Markdown(article.Node, pageURL)
	}
	if strings.TrimSpace(content) == "" {
		content = Markdown(find(doc, atom.Body, doc), pageURL)
	}
	title := strings.TrimSpace(article.Title())
	if title == "" {
		if node := find(doc, atom.Title, nil); node != nil {
			title = strings.TrimSpace(collapse(textContent(node)))
		}
	}
	var header strings.Builder
	if title != "" {
		header.WriteString("# " + title + "\n\n")
	}
	details := []string{"Source: " + pageURL.String()}
	if byline := strings.TrimSpace(collapse(article.Byline())); byline != "" {
		details = append(details, "By "+byline)
	}
	if site := strings.TrimSpace(collapse(article.SiteName())); site != "" && site != title {
		details = append(details, site)
	}
	if published, err := article.PublishedTime(); err == nil && !published.IsZero() {
		details = append(details, "Published "+published.Format("2006-01-02"))
	}
	header.WriteString(strings.Join(details, " · "))
	return header.String(), content, nil
}

// find returns the first element of kind a under n, or fallback.
func find(n *html.Node, a atom.Atom, fallback *html.Node) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for child := n.FirstChild; child != nil; child = child.NextSibling {
		if found := find(child, a, nil); found != nil {
			return found
		}
	}
	return fallback
}

// window returns header and the part of text from offset, at most
// maxChars characters of it, with notes saying what was left out.
func window(header, text string, offset, maxChars int, cut bool, limit int64) (string, error) {
	runes := []rune(text)
	total := len(runes)
	if offset > 0 && offset >= total {
		return "", badRequest("offset %d is past the end of the text, which has %d characters", offset, total)
	}
	end := min(offset+maxChars, total)
	var sb strings.Builder
	if header != "" {
		sb.WriteString(header)
		sb.WriteString("\n\n")
	}
	if offset > 0 {
		fmt.Fprintf(&sb, "[Characters %d to %d of %d.]\n\n", offset, end, total)
	}
	sb.WriteString(string(runes[offset:end]))
	if end < total {
		fmt.Fprintf(&sb, "\n\n[Text cut at character %d of %d: call fetch_page with offset %d to read on.]", end, total, end)
	}
	if cut {
		fmt.Fprintf(&sb, "\n\n[The page is larger than max_response_bytes (%d bytes): only its beginning was read.]", limit)
	}
	if total == 0 && header == "" {
		sb.WriteString("[The page has no text.]")
	}
	return sb.String(), nil
}
