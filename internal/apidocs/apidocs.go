// Package apidocs serves an interactive explorer of an OpenAPI document:
// Swagger UI, vendored into the binary (see update.sh), so the page works
// with no network access and loads nothing from a CDN.
package apidocs

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// SwaggerUIVersion is the version of swagger-ui-dist vendored in swaggerui/.
const SwaggerUIVersion = "5.35.0"

//go:embed swaggerui
var assets embed.FS

// Config describes the explorer page.
type Config struct {
	// Title is the page's title.
	Title string
	// SpecURL is where the browser fetches the OpenAPI document.
	SpecURL string
	// Prefix is the path the page is served at, e.g. "/docs"; its assets
	// are served under Prefix + "/assets/".
	Prefix string
}

// Handler serves the explorer page at c.Prefix and its assets under
// c.Prefix + "/assets/". The bundle and its stylesheet are stored gzipped
// and sent so to clients that accept it (every browser); others get them
// decompressed.
func Handler(c Config) http.Handler {
	prefix := strings.TrimSuffix(c.Prefix, "/")
	specURL, _ := json.Marshal(c.SpecURL) // a JavaScript string literal
	pageBytes, initBytes := page(c.Title, prefix+"/assets"), []byte(strings.Replace(initScript, "SPEC_URL", string(specURL), 1))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, `{"detail":"Method Not Allowed"}`, http.StatusMethodNotAllowed)
			return
		}
		p := r.URL.Path
		switch {
		case p == prefix || p == prefix+"/":
			writeAsset(w, r, "text/html; charset=utf-8", pageBytes, false)
		case p == prefix+"/assets/init.js":
			writeAsset(w, r, "text/javascript; charset=utf-8", initBytes, false)
		case strings.HasPrefix(p, prefix+"/assets/"):
			serveFile(w, r, strings.TrimPrefix(p, prefix+"/assets/"))
		default:
			notFound(w)
		}
	})
}

// contentTypes maps the vendored files' extensions to their media types.
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".png": "image/png",
	".txt": "text/plain; charset=utf-8",
}

// serveFile serves one vendored file by name, from its gzipped copy when
// there is one.
func serveFile(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" || strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		notFound(w)
		return
	}
	if data, err := assets.ReadFile("swaggerui/" + name + ".gz"); err == nil {
		writeAsset(w, r, contentTypes[path.Ext(name)], data, true)
		return
	}
	data, err := fs.ReadFile(assets, "swaggerui/"+name)
	ct, known := contentTypes[path.Ext(name)]
	if err != nil || !known {
		notFound(w)
		return
	}
	writeAsset(w, r, ct, data, false)
}

// writeAsset writes a file; gzipped data is sent as is to a client that
// accepts gzip and decompressed for one that does not.
func writeAsset(w http.ResponseWriter, r *http.Request, contentType string, data []byte, gzipped bool) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	if strings.HasPrefix(contentType, "text/html") {
		h.Set("Cache-Control", "no-cache")
	} else {
		h.Set("Cache-Control", "public, max-age=86400")
	}
	if gzipped {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
		} else {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				http.Error(w, `{"detail":"Internal server error"}`, http.StatusInternalServerError)
				return
			}
			data, err = io.ReadAll(zr)
			if err != nil {
				http.Error(w, `{"detail":"Internal server error"}`, http.StatusInternalServerError)
				return
			}
		}
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(data)
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip
// (listed, or "*", with a q-value above zero).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.TrimSpace(coding)
		if !strings.EqualFold(coding, "gzip") && coding != "*" {
			continue
		}
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				q = f
			}
		}
		return q > 0
	}
	return false
}

// notFound answers 404 with a JSON detail, as the API does.
func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, `{"detail":"File not found"}`)
}

// page is the explorer's page, its assets under the URL path assets: no
// inline script, so a strict Content-Security-Policy can allow scripts from
// the server only.
//
// It is written by hand rather than with html/template: a template
// anywhere in the binary makes the linker keep every exported method of
// every type (cmd/agnogo's TestBinaryLinksNoTemplates). The values are
// escaped as html/template escaped them.
func page(title, assets string) []byte {
	title, assets = EscapeHTML(title), EscapeHTML(normalizeURL(assets))
	return []byte(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>` + title + `</title>
<link rel="icon" type="image/png" href="` + assets + `/favicon-32x32.png">
<link rel="stylesheet" href="` + assets + `/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="` + assets + `/swagger-ui-bundle.js"></script>
<script src="` + assets + `/init.js"></script>
</body>
</html>
`)
}

// htmlEscaper replaces what html/template replaced in text and in quoted
// attribute values: what [html.EscapeString] does, and also '+' (against UTF-7
// sniffing) and NUL.
var htmlEscaper = strings.NewReplacer(
	"\x00", "\uFFFD",
	`"`, "&#34;",
	"&", "&amp;",
	"'", "&#39;",
	"+", "&#43;",
	"<", "&lt;",
	">", "&gt;",
)

// EscapeHTML escapes s for HTML text or a quoted attribute value, as
// html/template did in those contexts.
func EscapeHTML(s string) string { return htmlEscaper.Replace(s) }

// normalizeURL makes s safe to start a URL attribute with, as html/template
// did: a URL whose scheme is not http, https or mailto (javascript:, say)
// becomes "#ZgotmplZ"; bytes a URL may not hold are percent-encoded
// (lowercase hex), valid %XX escapes and RFC 3986's reserved characters
// kept. The result still needs [EscapeHTML].
func normalizeURL(s string) string {
	if scheme, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(scheme, "/") &&
		!strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "mailto") {
		return "#ZgotmplZ"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~!#$&*+,/:;=?@[]", c) >= 0,
			c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// initScript starts Swagger UI on the document at SPEC_URL. "Try it out"
// is on, and the Authorize dialog keeps a bearer token for the session.
const initScript = `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: SPEC_URL,
    dom_id: "#swagger-ui",
    deepLinking: true,
    tryItOutEnabled: true,
    persistAuthorization: true,
    displayRequestDuration: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
`
