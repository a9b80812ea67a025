package agentos

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/apidocs"
)

// The /redoc page escapes every value it shows, in text and in attributes,
// as html/template did: a summary, description or default with markup in it
// is shown, never interpreted.
func TestDocsPageEscapes(t *testing.T) {
	t.Parallel()
	o, err := New(Config{ID: `os"1`, Name: `Docs <OS> & "co's"`, Version: "1.0+<b>"})
	require.NoError(t, err)
	routes := []apiRoute{{
		method: "GET", path: "/things/{thing_id}", id: "get thing", tag: "Things & <stuff>",
		summary:     `Find <things> & "others"`,
		description: "It's <script>alert(1)</script>",
		query: []apiParam{{
			name: "q<", typ: "string", def: `a<b&"c'd`, enum: []string{"<x>", "y&z"},
			description: "Filter 'this' & that.",
		}},
		body: &apiBody{schema: "<none>"},
		ok:   apiResponse{status: http.StatusOK, description: "the <thing>"},
		errors: []apiError{
			{http.StatusNotFound, `no thing has this "id" & <name>`},
		},
	}}
	page := string(docsPage(o.docsView(routes)))

	for _, want := range []string{
		`<title>Docs &lt;OS&gt; &amp; &#34;co&#39;s&#34; API</title>`,
		`<h1>Docs &lt;OS&gt; &amp; &#34;co&#39;s&#34; API</h1>`,
		`os_id <code>os&#34;1</code> · version <code>1.0&#43;&lt;b&gt;</code>`,
		// The table of routes: the link's fragment is percent-encoded.
		`<tr><td class="method GET">GET</td><td><a href="#get%20thing"><code>/things/{thing_id}</code></a></td><td>Find &lt;things&gt; &amp; &#34;others&#34;</td><td>bearer</td></tr>`,
		`<h2>Things &amp; &lt;stuff&gt;</h2>`,
		`<section class="route" id="get thing">`,
		`<h3><span class="method GET">GET</span> <code>/things/{thing_id}</code> — Find &lt;things&gt; &amp; &#34;others&#34;</h3>`,
		`<p>It&#39;s &lt;script&gt;alert(1)&lt;/script&gt;</p>`,
		`<tr><td><code>thing_id</code> <strong>required</strong></td><td>path</td><td>string</td><td></td>`,
		`<tr><td><code>q&lt;</code></td><td>query</td><td>string</td><td><code>a&lt;b&amp;&#34;c&#39;d</code></td><td>Filter &#39;this&#39; &amp; that. One of &lt;x&gt;, y&amp;z.</td></tr>`,
		`<p>Request body: JSON &lt;none&gt;: </p>`,
		`<tr><td>200</td><td>the &lt;thing&gt;</td></tr>`,
		`<tr><td>404</td><td>no thing has this &#34;id&#34; &amp; &lt;name&gt;</td></tr>`,
	} {
		require.Contains(t, page, want)
	}
	for _, raw := range []string{"<script", "<things>", `"others"`, "co's", `a<b`, "<stuff>", "<name>"} {
		require.NotContains(t, page, raw, "a value is written unescaped")
	}
}

func TestDocsPageEscapers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, html, urlComponent string
	}{
		{"plain-Text_1.2~", "plain-Text_1.2~", "plain-Text_1.2~"},
		{`<a href="x">&'</a>`, "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt;", "%3ca%20href%3d%22x%22%3e%26%27%3c%2fa%3e"},
		{"1+1", "1&#43;1", "1%2b1"},
		{"nul\x00", "nul\uFFFD", "nul%00"},
		{"é #?", "é #?", "%c3%a9%20%23%3f"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.html, apidocs.EscapeHTML(tt.in), "EscapeHTML(%q)", tt.in)
		require.Equal(t, tt.urlComponent, escapeURLComponent(tt.in), "escapeURLComponent(%q)", tt.in)
	}
}
