package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/slack"
)

// A model posts a message; the fake Slack checks the token arrived as a
// bearer token.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat.postMessage" || r.Header.Get("Authorization") != "Bearer xoxb-example" {
			io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
			return
		}
		r.ParseForm()
		fmt.Printf("Slack got %q for %s\n", r.PostForm.Get("text"), r.PostForm.Get("channel"))
		io.WriteString(w, `{"ok":true,"channel":"C024BE91L","ts":"1767225600.000200"}`)
	}))
	defer srv.Close()

	k, err := slack.New(slack.Config{
		Token:   "xoxb-example",
		Network: toolkit.Network{BaseURL: srv.URL + "/api/", AllowPrivate: true},
	})
	if err != nil {
		panic(err)
	}
	send := k.Tools[0]
	out, err := send.Call(context.Background(), json.RawMessage(`{"channel":"C024BE91L","text":"Deploy finished"}`))
	fmt.Println(send.Spec().Name, out, err)
	// Output:
	// Slack got "Deploy finished" for C024BE91L
	// send_message {"ok":true,"channel":"C024BE91L","ts":"1767225600.000200"} <nil>
}
