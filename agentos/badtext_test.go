package agentos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/team"
)

// badTexts are text a database cannot store: a NUL character, and a byte
// that is not UTF-8.
var badTexts = map[string]string{"NUL": "a\x00b", "invalid UTF-8": "a\xffb"}

// TestTextADatabaseCannotStoreIsRefused sends every route of the API (as
// /openapi.json lists them) a NUL character and invalid UTF-8 in every
// position it reads — each path parameter, each query parameter, each form
// field and its name, a JSON body — on SQLite and Postgres. Every answer is
// 422 (a route answers 404 or 503 only when what it names does not exist or
// its feature is off, before it reads a body), none is a 5xx, and the model
// is never called for a refused run.
func TestTextADatabaseCannotStoreIsRefused(t *testing.T) { onBackends(t, testBadText) }

func testBadText(t *testing.T, store storage.Store) {
	m := scripted.New([]scripted.Reply{scripted.Text("stored")})
	a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: m, Store: store})
	require.NoError(t, err)
	leader := scripted.New(nil)
	crew, err := team.New(team.Config{ID: "crew", Model: leader, Members: []run.Runner{a}, Store: store})
	require.NoError(t, err)
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{a, crew}})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	s := &server{Server: ts, model: m, store: store, os: os}

	// What the routes name exists, so each reaches the text it is sent.
	ran := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "session_id": {"s1"}, "stream": {"false"}}))
	require.Equal(t, "stored", ran["content"])
	memory := s.createMemory(t, "u1", "likes tea")
	ids := map[string]string{"agent_id": "assistant", "team_id": "crew", "session_id": "s1", "run_id": ran["run_id"].(string),
		"memory_id": memory["memory_id"].(string), "message_index": "0", "db_id": "agnogo-db",
		"schedule_id": "no-such-schedule", "approval_id": "no-such-approval", "account_id": "no-such-account"}
	calls := len(m.Requests())

	doc := decode[openAPIDoc](t, s.get(t, "/openapi.json"))
	statuses := map[int]int{}
	var wrong []string
	check := func(what string, resp *http.Response, body []byte, readsBody bool) {
		statuses[resp.StatusCode]++
		switch {
		case resp.StatusCode == http.StatusUnprocessableEntity:
			if !strings.Contains(string(body), "string_invalid_text") && !strings.Contains(string(body), "cannot store") {
				wrong = append(wrong, fmt.Sprintf("%s: 422 without saying why: %s", what, body))
			}
		case readsBody && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusServiceUnavailable ||
			resp.StatusCode == http.StatusUnauthorized):
			// Refused before the body is read: the thing named is not
			// there, the feature is off, or the caller may not (minting a
			// service account on an open server needs a credential).
		default:
			wrong = append(wrong, fmt.Sprintf("%s: %d %s", what, resp.StatusCode, body))
		}
	}
	sent := 0
	for _, path := range doc.sortedPaths() {
		for method, op := range doc.Paths[path] {
			method = strings.ToUpper(method)
			for kind, bad := range badTexts {
				route := method + " " + path
				// Each path parameter.
				for _, p := range op.params("path") {
					resp, body := do(t, s, method, fill(path, ids, p, bad), "", "")
					check(route+" path "+p+" "+kind, resp, body, false)
					sent++
				}
				// Each query parameter.
				for _, p := range op.params("query") {
					resp, body := do(t, s, method, fill(path, ids, "", "")+"?"+url.Values{p: {bad}}.Encode(), "", "")
					check(route+" query "+p+" "+kind, resp, body, false)
					sent++
				}
				// Each form field, and a field's name.
				if fields := op.formFields(); len(fields) > 0 {
					for _, field := range append(fields, "") {
						form := url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}}
						if field == "" {
							form.Set(bad, "x")
						} else {
							form.Set(field, bad)
						}
						resp, body := do(t, s, method, fill(path, ids, "", ""), "application/x-www-form-urlencoded", form.Encode())
						check(route+" form "+field+" "+kind, resp, body, true)
						sent++
					}
				}
				// A JSON body: an escaped NUL, or a raw byte that is not UTF-8.
				if op.hasJSONBody() {
					payload := `{"memory": "x\u0000y", "session_name": "x\u0000y", "user_id": "u1", "memory_ids": ["x\u0000y"]}`
					if kind == "invalid UTF-8" {
						payload = "{\"memory\": \"x\xffy\", \"session_name\": \"x\xffy\", \"user_id\": \"u1\", \"memory_ids\": [\"x\xffy\"]}"
					}
					resp, body := do(t, s, method, fill(path, ids, "", ""), "application/json", payload)
					check(route+" JSON body "+kind, resp, body, true)
					sent++
				}
			}
		}
	}
	t.Logf("%d requests: statuses %v", sent, statuses)
	require.Empty(t, wrong, "%d of %d requests were not refused with 422", len(wrong), sent)
	require.Len(t, m.Requests(), calls, "no refused run called the model")
	require.Empty(t, leader.Requests(), "no refused team run called the leader's model")
	require.Greater(t, sent, 300, "the sweep reached every route")
}

// openAPIDoc is the part of /openapi.json the sweep reads.
type openAPIDoc struct {
	Paths map[string]map[string]openAPIOp `json:"paths"`
}

type openAPIOp struct {
	Parameters []struct {
		In   string `json:"in"`
		Name string `json:"name"`
	} `json:"parameters"`
	RequestBody struct {
		Content map[string]struct {
			Schema struct {
				Properties map[string]any `json:"properties"`
			} `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
}

func (d openAPIDoc) sortedPaths() []string {
	paths := make([]string, 0, len(d.Paths))
	for p := range d.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

func (op openAPIOp) params(in string) []string {
	var names []string
	for _, p := range op.Parameters {
		if p.In == in {
			names = append(names, p.Name)
		}
	}
	return names
}

func (op openAPIOp) formFields() []string {
	var names []string
	for name := range op.RequestBody.Content["application/x-www-form-urlencoded"].Schema.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (op openAPIOp) hasJSONBody() bool {
	_, ok := op.RequestBody.Content["application/json"]
	return ok
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// fill puts ids into a path's parameters, and value into the one named
// bad.
func fill(path string, ids map[string]string, bad, value string) string {
	return pathParam.ReplaceAllStringFunc(path, func(m string) string {
		name := m[1 : len(m)-1]
		if name == bad {
			return url.PathEscape(value)
		}
		return url.PathEscape(ids[name])
	})
}

// do sends one request and reads its answer whole.
func do(t *testing.T, s *server, method, target, contentType, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+target, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, bytes.TrimSpace(data)
}

// failingSessions is a store whose session listing fails with err, as a
// broken database would.
type failingSessions struct {
	storage.Store
	err error
}

func (f failingSessions) ListSessions(context.Context, storage.SessionQuery) ([]*storage.Session, int, error) {
	return nil, 0, fmt.Errorf("list sessions: %w", f.err)
}

// TestInternalErrorNamesAnIDNotAType: a failure the server cannot explain
// answers 500 with "Internal server error" and an error id, never the Go
// type or text of the error; the log has the error under that id.
func TestInternalErrorNamesAnIDNotAType(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	var logs bytes.Buffer
	os, err := agentos.New(agentos.Config{Store: failingSessions{store, errors.New("connection refused")}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)

	resp, body := do(t, &server{Server: ts}, http.MethodGet, "/sessions", "", "")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	var answer struct {
		Detail  string `json:"detail"`
		ErrorID string `json:"error_id"`
	}
	require.NoError(t, json.Unmarshal(body, &answer))
	require.Equal(t, "Internal server error", answer.Detail)
	require.NotEmpty(t, answer.ErrorID)
	require.NotContains(t, string(body), "connection refused")
	require.NotContains(t, string(body), "*fmt")
	require.Contains(t, logs.String(), `"error_id":"`+answer.ErrorID+`"`)
	require.Contains(t, logs.String(), "connection refused", "the log has what went wrong")
}

// TestDatabaseOutageAnswers503: a request the database fails transiently
// (restarting, unreachable) answers 503 with Retry-After, so a client
// knows to try again; the log has the error under the answer's id.
func TestDatabaseOutageAnswers503(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	for name, outage := range map[string]error{
		"restart":     &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		"unreachable": &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
	} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			os, err := agentos.New(agentos.Config{Store: failingSessions{store, outage}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			require.NoError(t, err)
			ts := httptest.NewServer(os)
			t.Cleanup(ts.Close)

			resp, body := do(t, &server{Server: ts}, http.MethodGet, "/sessions", "", "")
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
			require.Equal(t, "1", resp.Header.Get("Retry-After"))
			var answer struct {
				Detail  string `json:"detail"`
				ErrorID string `json:"error_id"`
			}
			require.NoError(t, json.Unmarshal(body, &answer))
			require.Contains(t, answer.Detail, "database is unavailable")
			require.Contains(t, logs.String(), `"error_id":"`+answer.ErrorID+`"`)
		})
	}
}
