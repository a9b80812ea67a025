package webfetch_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/webfetch"
)

func ExampleNew() {
	// A stand-in for a web site.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<html><head><title>Tea</title><meta name="author" content="Ann Lee"></head><body>
<nav><a href="/">Home</a> <a href="/shop">Shop</a></nav>
<article><h1>Tea</h1>
<p>Tea is brewed by pouring hot water over the cured leaves of the tea plant. After plain water it is
the most widely drunk drink in the world, and it comes in many kinds: <em>green</em>, <em>black</em>,
<em>oolong</em> and others, which differ in how the leaves are processed after picking.</p>
<h2>Brewing</h2>
<p>Green tea wants water below boiling, around eighty degrees, for two or three minutes; black tea
takes boiling water and steeps longer. See the <a href="/guide">brewing guide</a> for details.</p>
<ol><li>Warm the pot.</li><li>Add one spoon of leaves a cup.</li><li>Pour, wait, strain.</li></ol>
</article><footer>© Tea Shop</footer></body></html>`)
	}))
	defer site.Close()

	kit, err := webfetch.New(webfetch.Config{
		// AllowHosts lets the toolkit reach the local stand-in, which the
		// address policy refuses otherwise.
		Network:  toolkit.Network{AllowHosts: []string{"127.0.0.1"}},
		MaxChars: 300,
	})
	if err != nil {
		panic(err)
	}
	out, err := kit.Tools[0].Call(context.Background(), []byte(`{"url":"`+site.URL+`/tea"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.ReplaceAll(out, site.URL, "https://tea.example"))
	// Output:
	// # Tea
	//
	// Source: https://tea.example/tea · By Ann Lee
	//
	// Tea is brewed by pouring hot water over the cured leaves of the tea plant. After plain water it is the most widely drunk drink in the world, and it comes in many kinds: *green*, *black*, *oolong* and others, which differ in how the leaves are processed after picking.
	//
	// ## Brewing
	//
	// Green tea wants wat
	//
	// [Text cut at character 300 of 557: call fetch_page with offset 300 to read on.]
}
