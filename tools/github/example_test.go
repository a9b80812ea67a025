package github_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/github"
)

// A model reads an issue of the toolkit's default repository.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/repos/octo/hello/issues/1" || r.Header.Get("X-GitHub-Api-Version") != "2022-11-28" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"number":1,"title":"Add a README","state":"open","body":"Please.","user":{"login":"alice"},
			"labels":[{"name":"docs"}],"comments":0,"html_url":"https://github.com/octo/hello/issues/1"}`)
	}))
	defer srv.Close()

	k, err := github.New(github.Config{
		DefaultOwner: "octo",
		DefaultRepo:  "hello",
		Network:      toolkit.Network{BaseURL: srv.URL, AllowPrivate: true},
		Getenv:       func(string) string { return "" }, // no token: public reads only
	})
	if err != nil {
		panic(err)
	}
	for _, t := range k.Tools {
		if t.Spec().Name == github.GetIssueName {
			out, err := t.Call(context.Background(), json.RawMessage(`{"number":1}`))
			fmt.Println(out, err)
		}
	}
	// Output:
	// {"repository":"octo/hello","number":1,"title":"Add a README","state":"open","author":"alice","labels":["docs"],"comments":0,"url":"https://github.com/octo/hello/issues/1","body":"Please."} <nil>
}
