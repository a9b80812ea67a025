package websearch_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/websearch"
)

func ExampleNew() {
	// A stand-in for Tavily's API.
	tavily := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.Header.Get("Authorization") != "Bearer tvly-demo" {
			http.Error(w, `{"detail":{"error":"Unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"query":"tallest mountain","answer":"Mount Everest, 8,849 m.",
			"results":[{"title":"Mount Everest - Wikipedia","url":"https://en.wikipedia.org/wiki/Mount_Everest",
			"content":"Mount Everest is Earth's highest mountain above sea level.","score":0.93,"raw_content":null}],
			"response_time":0.8}`)
	}))
	defer tavily.Close()

	kit, err := websearch.New(websearch.Config{
		Provider: websearch.Tavily,
		APIKey:   "tvly-demo",
		// BaseURL points the toolkit at the stand-in, which AllowHosts
		// lets it reach.
		Network: toolkit.Network{BaseURL: tavily.URL, AllowHosts: []string{"127.0.0.1"}},
	})
	if err != nil {
		panic(err)
	}
	out, err := kit.Tools[0].Call(context.Background(), []byte(`{"query":"tallest mountain","max_results":1}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// {"query":"tallest mountain","answer":"Mount Everest, 8,849 m.","results":[{"title":"Mount Everest - Wikipedia","url":"https://en.wikipedia.org/wiki/Mount_Everest","content":"Mount Everest is Earth's highest mountain above sea level.","score":0.93}]}
}
