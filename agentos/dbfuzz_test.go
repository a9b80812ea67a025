package agentos_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// fuzzDBEnv selects the database FuzzRoutesReachTheDatabase drives while
// fuzzing: "postgres", or SQLite when unset. The seed corpus, run by every
// `go test`, drives both.
const fuzzDBEnv = "AGNOGO_FUZZ_DB"

// FuzzRoutesReachTheDatabase sends fuzzed text — a message, ids, a session
// name, a search, a form field of any name — through run creation and the
// session routes of a server on a real store, and the model answers with
// the message it was sent, so whatever the client wrote also comes back as
// content the server stores. No answer is a 5xx, whatever the input; a run
// that is accepted is stored and readable.
func FuzzRoutesReachTheDatabase(f *testing.F) {
	for _, seed := range []struct{ message, sessionID, userID, name, field, value string }{
		{"hello", "s1", "u1", "chat", "metadata", `{"a":1}`},
		{"nul\x00byte", "s\x00", "u\x00", "n\x00", "x\x00", "\x00"},
		{"bad \xff utf8", "s\xff", "u\xff", "n\xff", "\xff", "\xff"},
		{`escaped \u0000 text`, "s-2", "", "%00", "session_state", `{"k":"\u0000"}`},
		{strings.Repeat("long ", 500), strings.Repeat("s", 300), "u", "", "dependencies", "[]"},
		{"", "", "", "", "", ""},
	} {
		f.Add(seed.message, seed.sessionID, seed.userID, seed.name, seed.field, seed.value)
	}
	backends := []string{"sqlite", "postgres"}
	if fuzzing() {
		backends = []string{os.Getenv(fuzzDBEnv)}
		if backends[0] == "" {
			backends[0] = "sqlite"
		}
	}
	servers := make([]*server, len(backends))
	for i, backend := range backends {
		servers[i] = fuzzServer(f, backend)
	}
	f.Fuzz(func(t *testing.T, message, sessionID, userID, name, field, value string) {
		for _, s := range servers {
			form := url.Values{"message": {message}, "session_id": {sessionID}, "user_id": {userID}, "stream": {"false"}}
			if field != "" && field != "stream" && field != "background" {
				form.Set(field, value)
			}
			resp, body := do(t, s, http.MethodPost, "/agents/assistant/runs", "application/x-www-form-urlencoded", form.Encode())
			noServerError(t, "create a run", resp, body)
			if resp.StatusCode == http.StatusOK {
				var out map[string]any
				if err := json.Unmarshal(body, &out); err != nil {
					t.Fatalf("a 200 that is not JSON: %s", body)
				}
				runID, _ := out["run_id"].(string)
				session, _ := out["session_id"].(string)
				stored, storedBody := do(t, s, http.MethodGet, "/agents/assistant/runs/"+url.PathEscape(runID)+"?"+
					url.Values{"session_id": {session}, "user_id": {userID}}.Encode(), "", "")
				if stored.StatusCode != http.StatusOK {
					t.Fatalf("an accepted run is not readable: %d %s", stored.StatusCode, storedBody)
				}
			}
			query := url.Values{"session_name": {name}, "user_id": {userID}, "component_id": {value}}.Encode()
			for _, target := range []string{
				"/sessions?" + query,
				"/sessions/" + url.PathEscape(sessionID) + "?" + url.Values{"user_id": {userID}}.Encode(),
				"/sessions/" + url.PathEscape(sessionID) + "/runs?" + url.Values{"user_id": {userID}}.Encode(),
				"/agents/assistant/runs?" + url.Values{"session_id": {sessionID}, "user_id": {userID}}.Encode(),
				"/memories?" + url.Values{"search_content": {message}, "topics": {name}, "user_id": {userID}}.Encode(),
			} {
				resp, body := do(t, s, http.MethodGet, target, "", "")
				noServerError(t, "GET "+target, resp, body)
			}
			encodedName, _ := json.Marshal(name) // invalid UTF-8 becomes U+FFFD
			rename := `{"session_name": ` + string(encodedName) + `}`
			resp, body = do(t, s, http.MethodPost, "/sessions/"+url.PathEscape(sessionID)+"/rename?"+url.Values{"user_id": {userID}}.Encode(),
				"application/json", rename)
			noServerError(t, "rename a session", resp, body)
		}
	})
}

// fuzzing reports whether the test binary runs a fuzzer (-test.fuzz set),
// rather than the seed corpus.
func fuzzing() bool {
	for _, arg := range os.Args {
		if strings.HasPrefix(arg, "-test.fuzz=") && arg != "-test.fuzz=" {
			return true
		}
	}
	return false
}

// fuzzServer is a server on a real store whose model answers with the last
// message it was sent.
func fuzzServer(f *testing.F, backend string) *server {
	var store storage.Store
	switch backend {
	case "postgres":
		pg, err := postgres.Open(f.Context(), postgres.Config{URL: testdb.PostgresURL(f), Schema: testdb.UniqueName(f, "fuzz"), AutoMigrate: true})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { pg.Close() })
		store = pg
	default:
		lite, err := sqlite.Open(f.Context(), sqlite.Config{Path: filepath.Join(f.TempDir(), "fuzz.db")})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { lite.Close() })
		store = lite
	}
	echo := scripted.Reply{Func: func(req *model.Request) scripted.Reply {
		last := req.Messages[len(req.Messages)-1]
		return scripted.Text("you said: " + last.ContentString())
	}}
	m := scripted.New([]scripted.Reply{echo}, scripted.Loop(), scripted.NoRecord())
	a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: m, Store: store, AddHistoryToContext: true})
	if err != nil {
		f.Fatal(err)
	}
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{a}})
	if err != nil {
		f.Fatal(err)
	}
	ts := httptest.NewServer(os)
	f.Cleanup(ts.Close)
	return &server{Server: ts, model: m, store: store, os: os}
}

// noServerError fails the test on a 5xx.
func noServerError(t *testing.T, what string, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode >= 500 {
		t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
	}
}
