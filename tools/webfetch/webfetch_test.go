package webfetch_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/webfetch"
)

const articleHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>How Rivers Shape Cities | Example News</title>
<meta name="author" content="Jane Doe">
<meta property="og:site_name" content="Example News">
<meta property="article:published_time" content="2024-05-01T10:00:00Z">
<script>trackEverything()</script><style>body{color:red}</style></head>
<body>
<nav class="menu"><a href="/">Home</a> <a href="/world">World</a> <a href="/sports">Sports</a></nav>
<div class="ad banner">Buy now! Limited offer!</div>
<article>
<h1>How Rivers Shape Cities</h1>
<p>Rivers have shaped where people build cities for thousands of years. They bring water, food and trade, and they carry away what a city no longer wants. The oldest cities of the world grew on the banks of great rivers, and many of the newest still do.</p>
<h2>Water and trade</h2>
<p>A river is a road that never needs paving. Boats carried grain, wood and stone long before railways, and the <a href="/history/ports">river ports</a> that served them became markets, then towns, then cities. Merchants settled where goods changed hands, and the <em>crossing points</em> of rivers became the <strong>most valuable land</strong> of all.</p>
<ul><li>Grain moved downstream to the coast.</li><li>Timber floated down from the forests.</li><li>Stone came by barge for the cathedrals.</li></ul>
<p>Engineers still model river flows today, with code such as <code>flow = area * velocity</code>, to plan for floods that the old builders could only guess at. Cities that forget their river tend to be reminded of it, sooner or later, by a flood.</p>
<pre><code class="language-python">def flow(area, velocity):
    return area * velocity
</code></pre>
<p>The future of river cities depends on how well they learn to live with water rather than against it, giving rivers room to spread when they rise and keeping the banks open to the people who live beside them.</p>
</article>
<aside class="sidebar"><h3>Most read</h3><ul><li><a href="/celebs">Celebrity gossip</a></li></ul></aside>
<footer>Copyright 2024 Example News. All rights reserved.</footer>
</body></html>`

// site is a fake web site: each path answers with a content type and a
// body; the requests it saw come out of the channel.
func site(t *testing.T, pages map[string][2]string) (*httptest.Server, chan *http.Request) {
	t.Helper()
	seen := make(chan *http.Request, 16)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Clone(r.Context())
		p, ok := pages[r.URL.Path]
		if !ok {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "<html><body><h1>Not found</h1><p>Sorry.</p></body></html>")
			return
		}
		w.Header().Set("Content-Type", p[0])
		_, _ = io.WriteString(w, p[1])
	}))
	t.Cleanup(server.Close)
	return server, seen
}

func fetchTool(t *testing.T, cfg webfetch.Config) tool.Tool {
	t.Helper()
	k, err := webfetch.New(cfg)
	require.NoError(t, err)
	require.Equal(t, "web_fetch", k.Name)
	require.Len(t, k.Tools, 1)
	require.Equal(t, webfetch.FetchPageName, k.Tools[0].Spec().Name)
	return k.Tools[0]
}

func fetch(t *testing.T, tl tool.Tool, args string) (string, error) {
	t.Helper()
	return tl.Call(t.Context(), json.RawMessage(args))
}

func local() toolkit.Network { return toolkit.Network{AllowPrivate: true} }

func TestFetchArticle(t *testing.T) {
	server, seen := site(t, map[string][2]string{"/2024/05/rivers": {"text/html; charset=utf-8", articleHTML}})
	out, err := fetch(t, fetchTool(t, webfetch.Config{Network: local()}), `{"url":"`+server.URL+`/2024/05/rivers"}`)
	require.NoError(t, err)

	req := <-seen
	require.Equal(t, http.MethodGet, req.Method)
	require.Equal(t, webfetch.DefaultUserAgent, req.Header.Get("User-Agent"))
	require.True(t, strings.HasPrefix(req.Header.Get("Accept"), "text/html"))

	require.True(t, strings.HasPrefix(out, "# How Rivers Shape Cities | Example News\n\nSource: "+server.URL+"/2024/05/rivers · By Jane Doe · Example News · Published 2024-05-01\n\n"), out)
	for _, want := range []string{
		"Rivers have shaped where people build cities",
		"## Water and trade",
		"[river ports](" + server.URL + "/history/ports)",
		"*crossing points*",
		"**most valuable land**",
		"- Grain moved downstream to the coast.\n- Timber floated down from the forests.",
		"`flow = area * velocity`",
		"```python\ndef flow(area, velocity):\n    return area * velocity\n```",
	} {
		require.Contains(t, out, want)
	}
	for _, unwanted := range []string{"trackEverything", "color:red", "Buy now", "Celebrity gossip", "Copyright", "<p>", "Sports"} {
		require.NotContains(t, out, unwanted)
	}
}

func TestPageWithoutArticleIsConvertedWhole(t *testing.T) {
	server, _ := site(t, map[string][2]string{"/": {"text/html", `<html><head><title>Tiny</title></head><body><p>Just <b>one</b> line.</p><script>x()</script></body></html>`}})
	out, err := fetch(t, fetchTool(t, webfetch.Config{Network: local()}), `{"url":"`+server.URL+`/"}`)
	require.NoError(t, err)
	require.Equal(t, "# Tiny\n\nSource: "+server.URL+"/\n\nJust **one** line.", out)
}

func TestTextIsReturnedAsItIs(t *testing.T) {
	server, _ := site(t, map[string][2]string{
		"/notes.txt":  {"text/plain; charset=utf-8", "line one\n  line two\n"},
		"/data.json":  {"application/json", `{"a": [1, 2]}`},
		"/readme.md":  {"text/markdown", "# Title\n\n*emphasis*"},
		"/doc.pdf":    {"application/pdf", "%PDF-1.7 binary"},
		"/photo":      {"image/jpeg", "\xff\xd8\xff"},
		"/latin1.txt": {"text/plain; charset=iso-8859-1", "caf\xe9"},
	})
	fetcher := fetchTool(t, webfetch.Config{Network: local()})
	for path, want := range map[string]string{
		"/notes.txt":  "line one\n  line two\n",
		"/data.json":  `{"a": [1, 2]}`,
		"/readme.md":  "# Title\n\n*emphasis*",
		"/latin1.txt": "café",
	} {
		out, err := fetch(t, fetcher, `{"url":"`+server.URL+path+`"}`)
		require.NoError(t, err, path)
		require.Equal(t, want, out, path)
	}
	for path, mediaType := range map[string]string{"/doc.pdf": "application/pdf", "/photo": "image/jpeg"} {
		_, err := fetch(t, fetcher, `{"url":"`+server.URL+path+`"}`)
		require.ErrorContains(t, err, "is "+mediaType+", not a web page or text", path)
		require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	}
}

func TestCharsetOfPage(t *testing.T) {
	page := "<html><head><meta charset=\"iso-8859-1\"><title>Men\xfa</title></head><body><p>Caf\xe9 cr\xe8me</p></body></html>"
	// ASCII for more than the first 1024 bytes, then UTF-8, and no charset
	// declared: read as UTF-8, not Windows-1252.
	late := "<html><body><p>" + strings.Repeat("a", 1100) + " naïve</p></body></html>"
	server, _ := site(t, map[string][2]string{"/menu": {"text/html", page}, "/late": {"text/html", late}})
	fetcher := fetchTool(t, webfetch.Config{Network: local()})
	out, err := fetch(t, fetcher, `{"url":"`+server.URL+`/menu"}`)
	require.NoError(t, err)
	require.Contains(t, out, "# Menú")
	require.Contains(t, out, "Café crème")
	out, err = fetch(t, fetcher, `{"url":"`+server.URL+`/late"}`)
	require.NoError(t, err)
	require.Contains(t, out, " naïve")
}

func TestMaxCharsAndOffset(t *testing.T) {
	text := strings.Repeat("0123456789", 10) // 100 characters
	server, _ := site(t, map[string][2]string{"/t": {"text/plain", text}})
	fetcher := fetchTool(t, webfetch.Config{Network: local(), MaxChars: 40})
	require.Contains(t, fetcher.Spec().Description, "At most 40 characters")

	out, err := fetch(t, fetcher, `{"url":"`+server.URL+`/t"}`)
	require.NoError(t, err)
	require.Equal(t, text[:40]+"\n\n[Text cut at character 40 of 100: call fetch_page with offset 40 to read on.]", out)

	out, err = fetch(t, fetcher, `{"url":"`+server.URL+`/t","offset":40,"max_chars":1000}`)
	require.NoError(t, err, "a call cannot ask for more than max_chars")
	require.Equal(t, "[Characters 40 to 80 of 100.]\n\n"+text[40:80]+"\n\n[Text cut at character 80 of 100: call fetch_page with offset 80 to read on.]", out)

	out, err = fetch(t, fetcher, `{"url":"`+server.URL+`/t","offset":90,"max_chars":5}`)
	require.NoError(t, err)
	require.Equal(t, "[Characters 90 to 95 of 100.]\n\n01234\n\n[Text cut at character 95 of 100: call fetch_page with offset 95 to read on.]", out)

	_, err = fetch(t, fetcher, `{"url":"`+server.URL+`/t","offset":100}`)
	require.ErrorContains(t, err, "offset 100 is past the end of the text, which has 100 characters")
}

func TestTooLargeResponseIsCut(t *testing.T) {
	server, _ := site(t, map[string][2]string{"/big": {"text/plain; charset=utf-8", strings.Repeat("é", 100)}})
	network := local()
	network.MaxResponseBytes = 21
	out, err := fetch(t, fetchTool(t, webfetch.Config{Network: network}), `{"url":"`+server.URL+`/big"}`)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("é", 10)+"\n\n[The page is larger than max_response_bytes (21 bytes): only its beginning was read.]", out)
}

func TestErrorStatusesAreClassified(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"sign in first"}`)
		case "/busy":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, "too many requests")
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "<html><body><h1>Not found</h1></body></html>")
		}
	}))
	defer server.Close()
	fetcher := fetchTool(t, webfetch.Config{Network: local()})
	for path, want := range map[string]struct {
		class run.ErrorClass
		text  string
	}{
		"/login":   {run.ClassAuthentication, "web_fetch: authentication_error (HTTP 401): sign in first"},
		"/busy":    {run.ClassRateLimit, "web_fetch: rate_limit (HTTP 429): too many requests"},
		"/missing": {run.ClassBadRequest, "web_fetch: bad_request (HTTP 404): " + server.URL + "/missing answered 404 Not Found"},
	} {
		_, err := fetch(t, fetcher, `{"url":"`+server.URL+path+`"}`)
		require.Equal(t, want.class, run.ClassOf(err), path)
		require.EqualError(t, err, want.text, path)
		var tkErr *toolkit.Error
		require.True(t, errors.As(err, &tkErr))
	}
}

func TestPrivateAddressesAreRefused(t *testing.T) {
	var hits atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, "http://10.0.0.1/secret", http.StatusFound)
		}
	}))
	defer server.Close()
	_, err := fetch(t, fetchTool(t, webfetch.Config{}), `{"url":"`+server.URL+`/admin"}`)
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	require.ErrorContains(t, err, "allow_private")
	require.Zero(t, hits.Load())

	// Allowed to reach the server, not where it redirects.
	_, err = fetch(t, fetchTool(t, webfetch.Config{Network: toolkit.Network{AllowHosts: []string{"127.0.0.1"}}}), `{"url":"`+server.URL+`/hop"}`)
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	require.ErrorContains(t, err, "10.0.0.1")
	require.EqualValues(t, 1, hits.Load())
}

func TestBadURLs(t *testing.T) {
	fetcher := fetchTool(t, webfetch.Config{Network: local()})
	for args, want := range map[string]string{
		`{"url":"/relative"}`:                       "want an absolute http or https URL",
		`{"url":"ftp://example.com/file"}`:          "only http and https",
		`{"url":""}`:                                "url is empty",
		`{"url":"https://example.com","offset":-1}`: "offset -1 is negative",
	} {
		_, err := fetch(t, fetcher, args)
		require.ErrorContains(t, err, want, args)
	}
}

func TestBaseURL(t *testing.T) {
	server, seen := site(t, map[string][2]string{"/docs/intro": {"text/plain", "intro"}})
	network := local()
	network.BaseURL = server.URL + "/docs"
	fetcher := fetchTool(t, webfetch.Config{Network: network})
	require.Contains(t, fetcher.Spec().Description, "a path under "+server.URL+"/docs")
	out, err := fetch(t, fetcher, `{"url":"/intro"}`)
	require.NoError(t, err)
	require.Equal(t, "intro", out)
	require.Equal(t, "/docs/intro", (<-seen).URL.Path)
}

func TestBadSettings(t *testing.T) {
	for _, tc := range []struct {
		cfg  webfetch.Config
		want string
	}{
		{webfetch.Config{MaxChars: -5}, "max_chars: -5 is negative"},
		{webfetch.Config{UserAgent: "a\nb"}, "user_agent"},
		{webfetch.Config{Network: toolkit.Network{BaseURL: "example.com"}}, "base_url"},
		{webfetch.Config{Network: toolkit.Network{AllowHosts: []string{"http://bad/"}}}, ""},
	} {
		_, err := webfetch.New(tc.cfg)
		require.Error(t, err)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestDefinition(t *testing.T) {
	def := webfetch.Definition()
	require.Equal(t, "web_fetch", def.Name())
	require.Equal(t, []string{"fetch_page"}, def.ToolNames())
	require.Contains(t, def.Keys(), "max_chars")
	got, _, err := def.Build(t.Context(), json.RawMessage(`{"max_chars":500,"timeout_seconds":10,"cache_results":true}`))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Contains(t, got[0].Spec().Description, "At most 500 characters")
	_, _, err = def.Build(t.Context(), json.RawMessage(`{"max_char":500}`))
	require.ErrorContains(t, err, `unknown key "max_char"`)
	_, _, err = def.Build(t.Context(), json.RawMessage(`{"max_chars":"lots"}`))
	require.ErrorContains(t, err, "max_chars")
}

func TestMarkdown(t *testing.T) {
	doc, err := html.Parse(strings.NewReader(`<body>
<h3> Spaced   <em>title</em> </h3>
<p>A <a href="docs/x.html">rel link</a>, an <a href="javascript:alert(1)">unsafe one</a>, a <a href="#s">fragment</a>
and <code>a` + "`" + `b</code>.<br>Second line.</p>
<ol start="3"><li>three</li><li>four<ul><li>nested</li></ul></li></ol>
<blockquote><p>quoted</p><p>twice</p></blockquote>
<table><caption>Scores</caption><tr><th>name</th><th>a|b</th></tr><tr><td>x</td><td>1</td></tr></table>
<p><img src="/i.png" alt="An image"> <img src="data:image/png;base64,AAAA" alt="inline"></p>
<pre>` + "x = ```\n" + `</pre>
<dl><dt>term</dt><dd>meaning</dd></dl>
<hr><div>end<script>gone()</script></div>
</body>`))
	require.NoError(t, err)
	base, _ := url.Parse("https://example.com/a/b")
	require.Equal(t, "### Spaced *title*\n\n"+
		"A [rel link](https://example.com/a/docs/x.html), an unsafe one, a fragment and ``a`b``.\nSecond line.\n\n"+
		"3. three\n4. four\n   - nested\n\n"+
		"> quoted\n>\n> twice\n\n"+
		"**Scores**\n\n| name | a\\|b |\n| --- | --- |\n| x | 1 |\n\n"+
		"![An image](https://example.com/i.png) inline\n\n"+
		"````\nx = ```\n````\n\n"+
		"**term**\n\nmeaning\n\n---\n\nend",
		webfetch.Markdown(doc, base))
}
