package anakin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/anakin"
)

// The toolkit creates a scrape job, waits for it, and gives the model the
// page's Markdown.
func Example() {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/url-scraper":
			io.WriteString(w, `{"jobId":"job_1","status":"pending"}`)
		case r.URL.Path == "/v1/url-scraper/job_1" && polls.Add(1) < 2:
			io.WriteString(w, `{"id":"job_1","status":"processing"}`)
		default:
			io.WriteString(w, `{"id":"job_1","status":"completed","url":"https://example.com","markdown":"# Example Domain"}`)
		}
	}))
	defer srv.Close()

	k, err := anakin.New(anakin.Config{
		APIKey:              "ak-example",
		PollIntervalSeconds: 0.001,
		Network:             toolkit.Network{BaseURL: srv.URL + "/v1", AllowPrivate: true},
	})
	if err != nil {
		panic(err)
	}
	scrape := k.Tools[0]
	out, err := scrape.Call(context.Background(), json.RawMessage(`{"url":"https://example.com"}`))
	fmt.Println(scrape.Spec().Name)
	fmt.Println(out, err)
	// Output:
	// scrape_url
	// Content of https://example.com:
	//
	// # Example Domain <nil>
}
