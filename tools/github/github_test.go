package github_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/github"
)

const testToken = "ghp_test123"

// request is what the fake received.
type request struct {
	Method, Path, RawQuery, Auth, Accept, Version, ContentType string
	Body                                                       map[string]any
}

// fake is an in-process GitHub REST API serving the repository octo/hello.
type fake struct {
	mux *http.ServeMux

	mu       sync.Mutex
	requests []request
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	rec := request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Auth: r.Header.Get("Authorization"),
		Accept: r.Header.Get("Accept"), Version: r.Header.Get("X-GitHub-Api-Version"), ContentType: r.Header.Get("Content-Type")}
	if len(data) > 0 {
		_ = json.Unmarshal(data, &rec.Body)
	}
	f.mu.Lock()
	f.requests = append(f.requests, rec)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	f.mux.ServeHTTP(w, r)
}

func (f *fake) last() request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

func (f *fake) all() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.requests...)
}

const issueJSON = `{"number":7,"title":"Crash on start","state":"open","body":"It crashes.\n\nSteps: run it.",
	"user":{"login":"alice"},"labels":[{"name":"bug"},{"name":"p1"}],"assignees":[{"login":"bob"}],"comments":2,
	"html_url":"https://github.com/octo/hello/issues/7","repository_url":"https://api.github.com/repos/octo/hello",
	"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-03T03:04:05Z","closed_at":null}`

func newFake() *fake {
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, status int, body string) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	mux.HandleFunc("GET /search/repositories", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, `{"total_count":1234,"incomplete_results":false,"items":[{"full_name":"octo/hello","description":"Hello world",
			"html_url":"https://github.com/octo/hello","stargazers_count":42,"forks_count":7,"language":"Go","topics":["demo"],
			"updated_at":"2026-01-01T00:00:00Z","owner":{"login":"octo"}}]}`)
	})
	mux.HandleFunc("GET /search/issues", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, `{"total_count":2,"items":[`+issueJSON+`,{"number":9,"title":"Fix crash","state":"open","user":{"login":"carol"},
			"comments":0,"html_url":"https://github.com/octo/hello/pull/9","repository_url":"https://api.github.com/repos/octo/hello",
			"pull_request":{"url":"https://api.github.com/repos/octo/hello/pulls/9"},"updated_at":"2026-01-04T00:00:00Z"}]}`)
	})
	mux.HandleFunc("GET /repos/octo/hello/issues/7", func(w http.ResponseWriter, r *http.Request) { write(w, 200, issueJSON) })
	mux.HandleFunc("GET /repos/octo/hello/issues/7/comments", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, `[{"id":1,"user":{"login":"bob"},"body":"Confirmed.","created_at":"2026-01-02T05:00:00Z"},
			{"id":2,"user":{"login":"alice"},"body":"Thanks!","created_at":"2026-01-02T06:00:00Z"}]`)
	})
	mux.HandleFunc("GET /repos/octo/hello/issues", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, `[`+issueJSON+`,{"number":9,"title":"Fix crash","state":"open","user":{"login":"carol"},
			"pull_request":{"url":"x"},"html_url":"https://github.com/octo/hello/pull/9"}]`)
	})
	mux.HandleFunc("POST /repos/octo/hello/issues", func(w http.ResponseWriter, r *http.Request) {
		write(w, 201, `{"number":10,"title":"New bug","state":"open","html_url":"https://github.com/octo/hello/issues/10","user":{"login":"me"}}`)
	})
	mux.HandleFunc("POST /repos/octo/hello/issues/7/comments", func(w http.ResponseWriter, r *http.Request) {
		write(w, 201, `{"id":555,"body":"On it","html_url":"https://github.com/octo/hello/issues/7#issuecomment-555","user":{"login":"me"}}`)
	})
	mux.HandleFunc("GET /repos/octo/hello/pulls/9", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, `{"number":9,"title":"Fix crash","state":"open","draft":false,"merged":false,"body":"Fixes #7",
			"user":{"login":"carol"},"base":{"ref":"main","label":"octo:main"},"head":{"ref":"fix","label":"carol:fix"},
			"html_url":"https://github.com/octo/hello/pull/9","commits":2,"additions":10,"deletions":3,"changed_files":2,"comments":1}`)
	})
	mux.HandleFunc("GET /repos/octo/hello/pulls/9/files", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, `[{"filename":"main.go","status":"modified","additions":8,"deletions":3,"patch":"@@ …"},
			{"filename":"main_test.go","status":"added","additions":2,"deletions":0}]`)
	})
	mux.HandleFunc("GET /repos/octo/hello/pulls", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, `[{"number":9,"title":"Fix crash","state":"open","user":{"login":"carol"},"base":{"ref":"main"},
			"head":{"label":"carol:fix"},"html_url":"https://github.com/octo/hello/pull/9","updated_at":"2026-01-04T00:00:00Z"}]`)
	})
	mux.HandleFunc("GET /repos/octo/hello/contents/docs/READ ME.md", func(w http.ResponseWriter, r *http.Request) {
		content := base64.StdEncoding.EncodeToString([]byte("# Hello\n\nSome docs.\n"))
		write(w, 200, `{"type":"file","encoding":"base64","name":"READ ME.md","path":"docs/READ ME.md","size":20,
			"content":"`+content[:10]+`\n`+content[10:]+`"}`)
	})
	mux.HandleFunc("GET /repos/octo/hello/contents/docs", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, `[{"type":"file","name":"READ ME.md","path":"docs/READ ME.md","size":20},
			{"type":"dir","name":"img","path":"docs/img","size":0}]`)
	})
	mux.HandleFunc("GET /repos/octo/hello/contents/logo.png", func(w http.ResponseWriter, r *http.Request) {
		content := base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G', 0, 0, 0xff})
		write(w, 200, `{"type":"file","encoding":"base64","name":"logo.png","path":"logo.png","size":7,"content":"`+content+`"}`)
	})
	// Failures.
	mux.HandleFunc("GET /repos/octo/private/issues/1", func(w http.ResponseWriter, r *http.Request) {
		write(w, 404, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`)
	})
	mux.HandleFunc("GET /repos/octo/limited/issues", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "1767225600")
		write(w, 403, `{"message":"API rate limit exceeded for 1.2.3.4."}`)
	})
	mux.HandleFunc("GET /repos/octo/forbidden/issues", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "4999")
		write(w, 403, `{"message":"Resource not accessible by personal access token"}`)
	})
	mux.HandleFunc("GET /repos/octo/secondary/issues", func(w http.ResponseWriter, r *http.Request) {
		write(w, 429, `{"message":"You have exceeded a secondary rate limit."}`)
	})
	mux.HandleFunc("GET /repos/octo/badcreds/issues", func(w http.ResponseWriter, r *http.Request) {
		write(w, 401, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`)
	})
	mux.HandleFunc("POST /repos/octo/strict/issues", func(w http.ResponseWriter, r *http.Request) {
		write(w, 422, `{"message":"Validation Failed","errors":[{"resource":"Issue","field":"assignees","code":"invalid"}]}`)
	})
	mux.HandleFunc("GET /repos/octo/big/pulls", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, `[`+strings.Repeat(`{"number":1,"title":"x"},`, 500)+`{"number":2}]`)
	})
	return &fake{mux: mux}
}

func newKit(t *testing.T, f *fake, edit func(*github.Config)) map[string]tool.Tool {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := github.Config{
		Token:   testToken,
		Network: toolkit.Network{BaseURL: srv.URL, AllowHosts: []string{"127.0.0.1"}},
		Getenv:  func(string) string { return "" },
	}
	if edit != nil {
		edit(&cfg)
	}
	k, err := github.New(cfg)
	require.NoError(t, err)
	tools := map[string]tool.Tool{}
	for _, tl := range k.Tools {
		tools[tl.Spec().Name] = tl
	}
	return tools
}

func call(t *testing.T, tools map[string]tool.Tool, name, args string) (string, error) {
	t.Helper()
	return tools[name].Call(t.Context(), json.RawMessage(args))
}

func TestSearch(t *testing.T) {
	f := newFake()
	tools := newKit(t, f, nil)

	out, err := call(t, tools, github.SearchRepositoriesName, `{"query":"hello language:go","sort":"stars","limit":5}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"total_count":1234,"items":[{"full_name":"octo/hello","description":"Hello world",
		"url":"https://github.com/octo/hello","stars":42,"forks":7,"language":"Go","topics":["demo"],"updated_at":"2026-01-01T00:00:00Z"}]}`, out)
	got := f.last()
	require.Equal(t, "/search/repositories", got.Path)
	require.Equal(t, "order=desc&per_page=5&q=hello+language%3Ago&sort=stars", got.RawQuery)
	require.Equal(t, "Bearer "+testToken, got.Auth)
	require.Equal(t, "application/vnd.github+json", got.Accept)
	require.Equal(t, "2022-11-28", got.Version)

	out, err = call(t, tools, github.SearchIssuesName, `{"query":"repo:octo/hello crash"}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"total_count":2,"items":[
		{"repository":"octo/hello","number":7,"title":"Crash on start","state":"open","author":"alice","labels":["bug","p1"],
		 "comments":2,"url":"https://github.com/octo/hello/issues/7","updated_at":"2026-01-03T03:04:05Z"},
		{"repository":"octo/hello","number":9,"title":"Fix crash","state":"open","pull_request":true,"author":"carol",
		 "comments":0,"url":"https://github.com/octo/hello/pull/9","updated_at":"2026-01-04T00:00:00Z"}]}`, out)
	require.Equal(t, "advanced_search=true&per_page=10&q=repo%3Aocto%2Fhello+crash", f.last().RawQuery)
}

func TestIssues(t *testing.T) {
	f := newFake()
	tools := newKit(t, f, func(c *github.Config) { c.DefaultOwner, c.DefaultRepo = "octo", "hello" })

	out, err := call(t, tools, github.GetIssueName, `{"number":7,"include_comments":true,"comments_limit":2}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"repository":"octo/hello","number":7,"title":"Crash on start","state":"open","author":"alice",
		"labels":["bug","p1"],"assignees":["bob"],"comments":2,"created_at":"2026-01-02T03:04:05Z",
		"url":"https://github.com/octo/hello/issues/7","body":"It crashes.\n\nSteps: run it.",
		"first_comments":[{"author":"bob","created_at":"2026-01-02T05:00:00Z","body":"Confirmed."},
		                  {"author":"alice","created_at":"2026-01-02T06:00:00Z","body":"Thanks!"}]}`, out)
	got := f.all()
	require.Equal(t, "/repos/octo/hello/issues/7", got[0].Path)
	require.Equal(t, "/repos/octo/hello/issues/7/comments", got[1].Path)
	require.Equal(t, "per_page=2", got[1].RawQuery)

	// Without include_comments, no comment request.
	before := len(f.all())
	_, err = call(t, tools, github.GetIssueName, `{"repo":"octo/hello","number":7}`)
	require.NoError(t, err)
	require.Len(t, f.all(), before+1)

	out, err = call(t, tools, github.ListIssuesName, `{"owner":"octo","repo":"hello","state":"all","labels":["bug","p1"],"limit":3}`)
	require.NoError(t, err)
	require.Contains(t, out, `"number":7`)
	require.NotContains(t, out, `"number":9`, "pull requests are left out")
	require.Equal(t, "labels=bug%2Cp1&per_page=3&state=all", f.last().RawQuery)

	_, err = call(t, tools, github.ListIssuesName, `{"state":"merged"}`)
	require.ErrorContains(t, err, "want open, closed or all")
}

func TestWrites(t *testing.T) {
	f := newFake()
	tools := newKit(t, f, nil)
	require.True(t, tools[github.CreateIssueName].Spec().RequiresConfirmation)
	require.True(t, tools[github.CommentOnIssueName].Spec().RequiresConfirmation)
	require.False(t, tools[github.GetIssueName].Spec().RequiresConfirmation)

	out, err := call(t, tools, github.CreateIssueName, `{"owner":"octo","repo":"hello","title":"New bug","body":"Details","labels":["bug"]}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"repository":"octo/hello","number":10,"title":"New bug","url":"https://github.com/octo/hello/issues/10"}`, out)
	got := f.last()
	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, "application/json", got.ContentType)
	require.Equal(t, map[string]any{"title": "New bug", "body": "Details", "labels": []any{"bug"}}, got.Body)

	out, err = call(t, tools, github.CommentOnIssueName, `{"repo":"octo/hello","number":7,"body":"On it"}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"repository":"octo/hello","number":7,"url":"https://github.com/octo/hello/issues/7#issuecomment-555","comment_id":555}`, out)
	require.Equal(t, map[string]any{"body": "On it"}, f.last().Body)

	_, err = call(t, tools, github.CreateIssueName, `{"owner":"octo","repo":"strict","title":"x","assignees":["ghost"]}`)
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	require.ErrorContains(t, err, "Validation Failed; Issue assignees: invalid")

	unconfirmed := newKit(t, f, func(c *github.Config) { no := false; c.ConfirmWrites = &no })
	require.False(t, unconfirmed[github.CreateIssueName].Spec().RequiresConfirmation)
	require.False(t, unconfirmed[github.CommentOnIssueName].Spec().RequiresConfirmation)
}

func TestPullRequests(t *testing.T) {
	f := newFake()
	tools := newKit(t, f, nil)
	out, err := call(t, tools, github.GetPullRequestName, `{"owner":"octo","repo":"hello","number":9}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"repository":"octo/hello","number":9,"title":"Fix crash","state":"open","merged":false,"author":"carol",
		"base":"main","head":"carol:fix","commits":2,"additions":10,"deletions":3,"changed_files":2,"comments":1,
		"url":"https://github.com/octo/hello/pull/9","body":"Fixes #7",
		"files":[{"filename":"main.go","status":"modified","additions":8,"deletions":3},
		         {"filename":"main_test.go","status":"added","additions":2,"deletions":0}]}`, out)
	require.Equal(t, "/repos/octo/hello/pulls/9/files", f.last().Path)
	require.Equal(t, "per_page=100", f.last().RawQuery)

	out, err = call(t, tools, github.ListPullRequestsName, `{"owner":"octo","repo":"hello","base":"main"}`)
	require.NoError(t, err)
	require.Contains(t, out, `"head":"carol:fix"`)
	require.Equal(t, "base=main&per_page=20&state=open", f.last().RawQuery)
}

func TestFileContents(t *testing.T) {
	f := newFake()
	tools := newKit(t, f, nil)
	out, err := call(t, tools, github.GetFileContentsName, `{"owner":"octo","repo":"hello","path":"/docs/READ ME.md","ref":"main"}`)
	require.NoError(t, err)
	require.Equal(t, "docs/READ ME.md in octo/hello@main (20 bytes):\n\n# Hello\n\nSome docs.\n", out)
	require.Equal(t, "/repos/octo/hello/contents/docs/READ ME.md", f.last().Path)
	require.Equal(t, "ref=main", f.last().RawQuery)

	out, err = call(t, tools, github.GetFileContentsName, `{"owner":"octo","repo":"hello","path":"docs"}`)
	require.NoError(t, err)
	require.Equal(t, "Directory /docs of octo/hello (2 entries):\nREAD ME.md (20 bytes)\nimg/\n", out)

	out, err = call(t, tools, github.GetFileContentsName, `{"owner":"octo","repo":"hello","path":"logo.png"}`)
	require.NoError(t, err)
	require.Contains(t, out, "binary file of 7 bytes")

	_, err = call(t, tools, github.GetFileContentsName, `{"owner":"octo","repo":"hello","path":"../../etc"}`)
	require.ErrorContains(t, err, "'..' is not allowed")

	small := newKit(t, f, func(c *github.Config) { c.MaxFileChars = 20 })
	out, err = call(t, small, github.GetFileContentsName, `{"owner":"octo","repo":"hello","path":"docs/READ ME.md"}`)
	require.NoError(t, err)
	require.Contains(t, out, "[cut: 20 of")
}

func TestErrorsAreClassified(t *testing.T) {
	f := newFake()
	tools := newKit(t, f, nil)

	_, err := call(t, tools, github.ListIssuesName, `{"repo":"octo/limited"}`)
	var tkErr *toolkit.Error
	require.ErrorAs(t, err, &tkErr)
	require.Equal(t, run.ClassRateLimit, tkErr.Class)
	require.Equal(t, 403, tkErr.StatusCode)
	require.Contains(t, tkErr.Message, "API rate limit exceeded")
	require.Contains(t, tkErr.Message, "resets at 2026-01-01T00:00:00Z")

	_, err = call(t, tools, github.ListIssuesName, `{"repo":"octo/forbidden"}`)
	require.Equal(t, run.ClassAuthentication, run.ClassOf(err))

	_, err = call(t, tools, github.ListIssuesName, `{"repo":"octo/secondary"}`)
	require.Equal(t, run.ClassRateLimit, run.ClassOf(err))
	require.ErrorContains(t, err, "github: rate_limit (HTTP 429): You have exceeded a secondary rate limit.")

	_, err = call(t, tools, github.ListIssuesName, `{"repo":"octo/badcreds"}`)
	require.Equal(t, run.ClassAuthentication, run.ClassOf(err))
	require.ErrorContains(t, err, "github: authentication_error (HTTP 401): Bad credentials")

	_, err = call(t, tools, github.ListIssuesName, `{}`)
	require.ErrorContains(t, err, "name the repository")

	// Unauthenticated: no Authorization header, and a hint on 404.
	anonymous := newKit(t, f, func(c *github.Config) { c.Token = "" })
	_, err = call(t, anonymous, github.GetIssueName, `{"repo":"octo/private","number":1}`)
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	require.ErrorContains(t, err, "Not Found (no token is set")
	require.Empty(t, f.last().Auth)

	// A body beyond max_response_bytes is refused, naming the setting.
	tight := newKit(t, f, func(c *github.Config) { c.MaxResponseBytes = 2000 })
	_, err = call(t, tight, github.ListPullRequestsName, `{"repo":"octo/big"}`)
	require.ErrorContains(t, err, "max_response_bytes (2000 bytes)")
}

func TestPrivateAddressRefused(t *testing.T) {
	f := newFake()
	tools := newKit(t, f, func(c *github.Config) { c.AllowHosts = nil })
	_, err := call(t, tools, github.SearchRepositoriesName, `{"query":"x"}`)
	var tkErr *toolkit.Error
	require.ErrorAs(t, err, &tkErr)
	require.Equal(t, run.ClassBadRequest, tkErr.Class)
	require.Contains(t, tkErr.Message, "allow_private")
	require.Empty(t, f.all())
}

func TestSettings(t *testing.T) {
	_, err := github.New(github.Config{DefaultOwner: "bad owner", DefaultRepo: "a/b", MaxBodyChars: -1})
	require.ErrorContains(t, err, "default_owner")
	require.ErrorContains(t, err, "default_repo")
	require.ErrorContains(t, err, "max_body_chars")
	_, err = github.New(github.Config{Network: toolkit.Network{BaseURL: "api.github.com"}})
	require.ErrorContains(t, err, "base_url")

	// The token falls back to GITHUB_TOKEN.
	f := newFake()
	tools := newKit(t, f, func(c *github.Config) {
		c.Token = ""
		c.Getenv = func(key string) string {
			if key == github.EnvToken {
				return "from-env"
			}
			return ""
		}
	})
	_, err = call(t, tools, github.SearchRepositoriesName, `{"query":"x"}`)
	require.NoError(t, err)
	require.Equal(t, "Bearer from-env", f.last().Auth)

	def := github.Definition()
	require.Equal(t, "github", def.Name())
	require.Equal(t, github.Names(), def.ToolNames())
	built, instructions, err := def.Build(t.Context(), json.RawMessage(`{"default_owner":"octo","default_repo":"hello","confirm_writes":false}`))
	require.NoError(t, err)
	require.Len(t, built, 9)
	require.Contains(t, instructions, "octo/hello")
	_, _, err = def.Build(t.Context(), json.RawMessage(`{"owner":"octo"}`))
	require.ErrorContains(t, err, "unknown key")
}
