package apidocs_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/apidocs"
)

func serve(t *testing.T, method, target, acceptEncoding string) *httptest.ResponseRecorder {
	t.Helper()
	h := apidocs.Handler(apidocs.Config{Title: "Test API", SpecURL: "/openapi.json", Prefix: "/docs"})
	req := httptest.NewRequest(method, target, nil)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// The page loads the explorer from the server itself: its scripts and
// stylesheet are under /docs/assets/, nothing from another origin.
func TestPageLoadsEverythingFromTheServer(t *testing.T) {
	rec := serve(t, http.MethodGet, "/docs", "")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	page := rec.Body.String()
	require.Contains(t, page, "<title>Test API</title>")
	for _, ref := range []string{`src="/docs/assets/swagger-ui-bundle.js"`, `src="/docs/assets/init.js"`, `href="/docs/assets/swagger-ui.css"`} {
		require.Contains(t, page, ref)
	}
	require.NotContains(t, page, "http://")
	require.NotContains(t, page, "https://")

	init := serve(t, http.MethodGet, "/docs/assets/init.js", "")
	require.Equal(t, http.StatusOK, init.Code)
	require.Contains(t, init.Body.String(), `url: "/openapi.json"`)
}

// The bundle goes compressed to a browser and decompressed to a client
// that does not accept gzip; both are the same script.
func TestBundleIsSentCompressedWhenAccepted(t *testing.T) {
	zipped := serve(t, http.MethodGet, "/docs/assets/swagger-ui-bundle.js", "gzip, deflate, br")
	require.Equal(t, http.StatusOK, zipped.Code)
	require.Equal(t, "gzip", zipped.Header().Get("Content-Encoding"))
	require.Equal(t, "text/javascript; charset=utf-8", zipped.Header().Get("Content-Type"))
	zr, err := gzip.NewReader(bytes.NewReader(zipped.Body.Bytes()))
	require.NoError(t, err)
	unzipped, err := io.ReadAll(zr)
	require.NoError(t, err)

	plain := serve(t, http.MethodGet, "/docs/assets/swagger-ui-bundle.js", "identity")
	require.Equal(t, http.StatusOK, plain.Code)
	require.Empty(t, plain.Header().Get("Content-Encoding"))
	require.Equal(t, unzipped, plain.Body.Bytes())
	require.Contains(t, plain.Body.String(), "SwaggerUIBundle")

	refused := serve(t, http.MethodGet, "/docs/assets/swagger-ui.css", "gzip;q=0")
	require.Empty(t, refused.Header().Get("Content-Encoding"))
	require.Equal(t, "text/css; charset=utf-8", refused.Header().Get("Content-Type"))
}

func TestUnknownAssetsAndMethods(t *testing.T) {
	for _, target := range []string{"/docs/assets/", "/docs/assets/nope.js", "/docs/assets/../apidocs.go", "/docs/assets/.hidden", "/docs/other"} {
		rec := serve(t, http.MethodGet, target, "")
		require.Equal(t, http.StatusNotFound, rec.Code, target)
		require.JSONEq(t, `{"detail":"File not found"}`, rec.Body.String(), target)
	}
	rec := serve(t, http.MethodPost, "/docs", "")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.True(t, strings.Contains(rec.Header().Get("Allow"), "GET"))
	head := serve(t, http.MethodHead, "/docs/assets/LICENSE.txt", "")
	require.Equal(t, http.StatusNotFound, head.Code, "LICENSE has no extension the server sends")
	lic := serve(t, http.MethodGet, "/docs/assets/swagger-ui-bundle.js.LICENSE.txt", "")
	require.Equal(t, http.StatusOK, lic.Code)
}

// The title and the assets' URL are escaped as html/template escaped them.
func TestPageEscapesTitleAndPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title, prefix string
		wantTitle     string
		wantAssets    string
	}{
		{"Test API", "/docs", "<title>Test API</title>", `src="/docs/assets/init.js"`},
		{`<T> & "co's" +1`, "/my docs/é", "<title>&lt;T&gt; &amp; &#34;co&#39;s&#34; &#43;1</title>", `src="/my%20docs/%c3%a9/assets/init.js"`},
		{"T", `/a"b'<c>?x=1&y=%41%zz`, "<title>T</title>", `src="/a%22b%27%3cc%3e?x=1&amp;y=%41%25zz/assets/init.js"`},
		{"T", "javascript:alert(1)", "<title>T</title>", `src="#ZgotmplZ/init.js"`},
	}
	for _, tt := range tests {
		h := apidocs.Handler(apidocs.Config{Title: tt.title, SpecURL: "/openapi.json", Prefix: tt.prefix})
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.Path = tt.prefix
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, tt.prefix)
		require.Contains(t, rec.Body.String(), tt.wantTitle)
		require.Contains(t, rec.Body.String(), tt.wantAssets)
	}
}
