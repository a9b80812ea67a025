package agentos

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
)

// FuzzRunForm sends arbitrary bodies to the run routes: whatever arrives,
// the answer is never a 5xx and nothing panics.
func FuzzRunForm(f *testing.F) {
	seeds := []struct{ contentType, body string }{
		{"application/x-www-form-urlencoded", "message=hi&stream=false"},
		{"application/x-www-form-urlencoded", "message=hi&stream=maybe&session_state=%7Bnope"},
		{"application/x-www-form-urlencoded", "message=&metadata=%5B1%2C2%5D"},
		{"multipart/form-data; boundary=X", "--X\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi\r\n--X\r\nContent-Disposition: form-data; name=\"stream\"\r\n\r\nfalse\r\n--X--\r\n"},
		{"multipart/form-data; boundary=X", "--X\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi"},
		{"application/json", `{"message":"hi"}`},
		{"text/plain", "\x00\xff"},
	}
	for _, s := range seeds {
		f.Add(s.contentType, s.body, false)
		f.Add(s.contentType, s.body, true)
	}
	m := scripted.New([]scripted.Reply{scripted.Text("ok")}, scripted.Loop(), scripted.NoRecord())
	a, err := agent.New(agent.Config{ID: "assistant", Model: m})
	if err != nil {
		f.Fatal(err)
	}
	os, err := New(Config{Runners: []run.Runner{a}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, contentType, body string, continueRoute bool) {
		path := "/agents/assistant/runs"
		if continueRoute {
			path = "/agents/assistant/runs/r1/continue"
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		os.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s with %q %q answered %d: %s", path, contentType, body, rec.Code, rec.Body)
		}
	})
}
