package websearch_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/websearch"
)

// received is what a fake API saw of one request.
type received struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   string
}

// api is a fake search API answering status and body to every request.
func api(t *testing.T, status int, body string) (*httptest.Server, chan received) {
	t.Helper()
	seen := make(chan received, 8)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		seen <- received{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: string(data)}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(server.Close)
	return server, seen
}

// noEnv is an environment without variables.
func noEnv(string) string { return "" }

func searchTool(t *testing.T, cfg websearch.Config) tool.Tool {
	t.Helper()
	if cfg.Getenv == nil {
		cfg.Getenv = noEnv
	}
	k, err := websearch.New(cfg)
	require.NoError(t, err)
	require.Equal(t, "web_search", k.Name)
	require.Len(t, k.Tools, 1)
	return k.Tools[0]
}

func search(t *testing.T, tl tool.Tool, args string) (websearch.Response, error) {
	t.Helper()
	out, err := tl.Call(t.Context(), json.RawMessage(args))
	if err != nil {
		return websearch.Response{}, err
	}
	var resp websearch.Response
	require.NoError(t, json.Unmarshal([]byte(out), &resp), out)
	return resp, nil
}

func at(server *httptest.Server) toolkit.Network {
	return toolkit.Network{BaseURL: server.URL, AllowPrivate: true}
}

// The answer of Tavily's documentation.
const tavilyAnswer = `{
  "query": "Who is Leo Messi?",
  "answer": "Lionel Messi, born in 1987, is an Argentine footballer.",
  "images": [],
  "results": [
    {"title": "Lionel Messi Facts | Britannica", "url": "https://www.britannica.com/facts/Lionel-Messi",
     "content": "Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest football players of his generation.",
     "score": 0.81025416, "raw_content": null, "published_date": "Sun, 14 Jan 2024 10:00:00 GMT"},
    {"title": "Messi - Wikipedia", "url": "https://en.wikipedia.org/wiki/Lionel_Messi", "content": "Lionel Andrés Messi is an Argentine professional footballer.", "score": 0.7, "raw_content": null}
  ],
  "response_time": "1.67"
}`

func TestTavily(t *testing.T) {
	server, seen := api(t, http.StatusOK, tavilyAnswer)
	searcher := searchTool(t, websearch.Config{Provider: "tavily", APIKey: "tvly-test", SearchDepth: "advanced", Topic: "news", Network: at(server)})
	require.Contains(t, searcher.Spec().Description, "tavily")

	resp, err := search(t, searcher, `{"query":"who is Leo Messi?","max_results":3}`)
	require.NoError(t, err)
	got := <-seen
	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, "/search", got.Path)
	require.Equal(t, "Bearer tvly-test", got.Header.Get("Authorization"))
	require.Equal(t, "application/json", got.Header.Get("Content-Type"))
	require.JSONEq(t, `{"query":"who is Leo Messi?","max_results":3,"search_depth":"advanced","topic":"news","include_answer":true}`, got.Body)

	require.Equal(t, "who is Leo Messi?", resp.Query)
	require.Equal(t, "Lionel Messi, born in 1987, is an Argentine footballer.", resp.Answer)
	require.Len(t, resp.Results, 2)
	require.Equal(t, websearch.Result{
		Title: "Lionel Messi Facts | Britannica", URL: "https://www.britannica.com/facts/Lionel-Messi",
		Content: "Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest football players of his generation.",
		Score:   0.81025416, Published: "Sun, 14 Jan 2024 10:00:00 GMT",
	}, resp.Results[0])

	// Defaults: basic depth, 5 results, no topic; the key from the
	// environment.
	env := func(name string) string { return map[string]string{"TAVILY_API_KEY": "tvly-env"}[name] }
	_, err = search(t, searchTool(t, websearch.Config{Provider: "tavily", Network: at(server), Getenv: env, IncludeAnswer: new(false)}), `{"query":"q"}`)
	require.NoError(t, err)
	got = <-seen
	require.Equal(t, "Bearer tvly-env", got.Header.Get("Authorization"))
	require.JSONEq(t, `{"query":"q","max_results":5,"search_depth":"basic","include_answer":false}`, got.Body)
}

// An answer of Exa's documented shape.
const exaAnswer = `{
  "requestId": "b5947044c4b78efa9552a7c89b306d95",
  "resolvedSearchType": "neural",
  "results": [
    {"title": "A Comprehensive Overview of Large Language Models", "url": "https://arxiv.org/pdf/2307.06435.pdf",
     "publishedDate": "2023-11-16T01:36:32.547Z", "author": "Humza Naveed", "id": "https://arxiv.org/abs/2307.06435",
     "score": 0.38, "text": "Abstract Large Language Models (LLMs) have recently demonstrated remarkable capabilities..."},
    {"title": null, "url": "https://example.com/no-title", "publishedDate": null, "id": "x",
     "highlights": ["First highlight.", "Second highlight."]}
  ],
  "costDollars": {"total": 0.005}
}`

func TestExa(t *testing.T) {
	server, seen := api(t, http.StatusOK, exaAnswer)
	searcher := searchTool(t, websearch.Config{Provider: "exa", APIKey: "exa-test", MaxContentChars: 40, Network: at(server)})
	resp, err := search(t, searcher, `{"query":"latest research in LLMs"}`)
	require.NoError(t, err)
	got := <-seen
	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, "/search", got.Path)
	require.Equal(t, "exa-test", got.Header.Get("x-api-key"))
	require.Empty(t, got.Header.Get("Authorization"))
	require.JSONEq(t, `{"query":"latest research in LLMs","numResults":5,"contents":{"text":{"maxCharacters":40}}}`, got.Body)

	require.Empty(t, resp.Answer)
	require.Equal(t, []websearch.Result{
		{Title: "A Comprehensive Overview of Large Language Models", URL: "https://arxiv.org/pdf/2307.06435.pdf",
			Content: "Abstract Large Language Models (LLMs) ha…", Score: 0.38, Published: "2023-11-16T01:36:32.547Z"},
		{URL: "https://example.com/no-title", Content: "First highlight. … Second highlight."},
	}, resp.Results)
}

// An answer of Brave's documented shape.
const braveAnswer = `{
  "type": "search",
  "query": {"original": "golang generics", "more_results_available": true},
  "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
  "web": {
    "type": "search",
    "results": [
      {"title": "Tutorial: Getting started with <strong>generics</strong> - The Go Programming Language",
       "url": "https://go.dev/doc/tutorial/generics", "is_source_local": false, "is_source_both": false,
       "description": "This tutorial introduces the basics of <strong>generics</strong> in <strong>Go</strong>. With generics, you can declare and use functions or types that are written to work with any of a set of types provided by calling code &amp; more.",
       "page_age": "2022-03-15T00:00:00", "age": "March 15, 2022", "language": "en", "family_friendly": true,
       "profile": {"name": "Go", "url": "https://go.dev/doc/tutorial/generics"},
       "meta_url": {"scheme": "https", "netloc": "go.dev", "hostname": "go.dev", "path": "› doc › tutorial › generics"}},
      {"title": "An Introduction To Generics", "url": "https://go.dev/blog/intro-generics", "description": "if a < b > c then", "age": "2 years ago"}
    ],
    "family_friendly": true
  }
}`

func TestBrave(t *testing.T) {
	server, seen := api(t, http.StatusOK, braveAnswer)
	env := func(name string) string { return map[string]string{"BRAVE_API_KEY": "brave-env"}[name] }
	searcher := searchTool(t, websearch.Config{Provider: "brave", Network: at(server), Getenv: env})
	resp, err := search(t, searcher, `{"query":"golang generics","max_results":2}`)
	require.NoError(t, err)
	got := <-seen
	require.Equal(t, http.MethodGet, got.Method)
	require.Equal(t, "/res/v1/web/search", got.Path)
	require.Equal(t, url.Values{"q": {"golang generics"}, "count": {"2"}}, got.Query)
	require.Equal(t, "brave-env", got.Header.Get("X-Subscription-Token"))
	require.Equal(t, "application/json", got.Header.Get("Accept"))
	require.Empty(t, got.Body)

	require.Equal(t, []websearch.Result{
		{Title: "Tutorial: Getting started with generics - The Go Programming Language", URL: "https://go.dev/doc/tutorial/generics",
			Content:   "This tutorial introduces the basics of generics in Go. With generics, you can declare and use functions or types that are written to work with any of a set of types provided by calling code & more.",
			Published: "2022-03-15T00:00:00"},
		{Title: "An Introduction To Generics", URL: "https://go.dev/blog/intro-generics", Content: "if a < b > c then", Published: "2 years ago"},
	}, resp.Results)
}

// An answer of SearXNG's JSON format.
const searxngAnswer = `{
  "query": "eiffel tower height",
  "number_of_results": 0,
  "results": [
    {"url": "https://en.wikipedia.org/wiki/Eiffel_Tower", "title": "Eiffel Tower - Wikipedia", "content": "The tower is 330 metres (1,083 ft) tall.",
     "engine": "wikipedia", "engines": ["wikipedia", "duckduckgo"], "positions": [1, 2], "score": 4.5, "category": "general", "publishedDate": null},
    {"url": "https://www.toureiffel.paris/en", "title": "Official website", "content": "Visit the tower.", "engine": "bing", "score": 1.2,
     "category": "general", "publishedDate": "2024-02-01T00:00:00"},
    {"url": "https://example.com/3", "title": "Third", "content": "", "engine": "bing", "score": 0.5}
  ],
  "answers": [{"answer": "330 m", "url": null, "engine": "wikidata"}],
  "corrections": [], "infoboxes": [], "suggestions": ["eiffel tower tickets"], "unresponsive_engines": []
}`

func TestSearXNG(t *testing.T) {
	server, seen := api(t, http.StatusOK, searxngAnswer)
	network := at(server)
	network.BaseURL += "/searx/"
	searcher := searchTool(t, websearch.Config{Provider: "searxng", MaxResults: 2, Network: network})
	resp, err := search(t, searcher, `{"query":"eiffel tower height"}`)
	require.NoError(t, err)
	got := <-seen
	require.Equal(t, http.MethodGet, got.Method)
	require.Equal(t, "/searx/search", got.Path)
	require.Equal(t, url.Values{"q": {"eiffel tower height"}, "format": {"json"}}, got.Query)
	require.Empty(t, got.Header.Get("Authorization"))

	require.Equal(t, "330 m", resp.Answer)
	require.Equal(t, []websearch.Result{
		{Title: "Eiffel Tower - Wikipedia", URL: "https://en.wikipedia.org/wiki/Eiffel_Tower", Content: "The tower is 330 metres (1,083 ft) tall.", Score: 4.5},
		{Title: "Official website", URL: "https://www.toureiffel.paris/en", Content: "Visit the tower.", Score: 1.2, Published: "2024-02-01T00:00:00"},
	}, resp.Results, "cut to max_results")

	// Older versions give answers as strings.
	old, _ := api(t, http.StatusOK, `{"results":[],"answers":["42"]}`)
	resp, err = search(t, searchTool(t, websearch.Config{Provider: "searxng", Network: at(old)}), `{"query":"answer"}`)
	require.NoError(t, err)
	require.Equal(t, "42", resp.Answer)
	require.Equal(t, []websearch.Result{}, resp.Results)
}

func TestErrorsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    websearch.Config
		status int
		body   string
		class  run.ErrorClass
		text   string
	}{
		{"tavily 401", websearch.Config{Provider: "tavily", APIKey: "bad"}, 401, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`,
			run.ClassAuthentication, "web_search: authentication_error (HTTP 401): Unauthorized: missing or invalid API key."},
		{"tavily 429", websearch.Config{Provider: "tavily", APIKey: "k"}, 429, `{"detail":{"error":"Rate limit exceeded"}}`,
			run.ClassRateLimit, "web_search: rate_limit (HTTP 429): Rate limit exceeded"},
		{"exa 401", websearch.Config{Provider: "exa", APIKey: "bad"}, 401, `{"requestId":"x","error":"Invalid API key","tag":"INVALID_API_KEY"}`,
			run.ClassAuthentication, "web_search: authentication_error (HTTP 401): Invalid API key"},
		{"brave 429", websearch.Config{Provider: "brave", APIKey: "k"}, 429,
			`{"type":"ErrorResponse","error":{"id":"1","status":429,"code":"RATE_LIMITED","detail":"Request rate limit exceeded for plan.","meta":{"plan":"Free"}},"time":1}`,
			run.ClassRateLimit, "web_search: rate_limit (HTTP 429): Request rate limit exceeded for plan."},
		{"brave 422", websearch.Config{Provider: "brave", APIKey: "bad"}, 422,
			`{"type":"ErrorResponse","error":{"id":"1","status":422,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."}}`,
			run.ClassBadRequest, "web_search: bad_request (HTTP 422): The provided subscription token is invalid."},
		{"searxng 403", websearch.Config{Provider: "searxng"}, 403, `Forbidden`,
			run.ClassAuthentication, "web_search: authentication_error (HTTP 403): Forbidden (a SearXNG instance answers 403 when its settings.yml does not list json under search.formats)"},
		{"exa 500", websearch.Config{Provider: "exa", APIKey: "k"}, 500, `{"error":"internal"}`, run.ClassServer, "web_search: server_error (HTTP 500): internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, _ := api(t, tc.status, tc.body)
			tc.cfg.Network = at(server)
			_, err := search(t, searchTool(t, tc.cfg), `{"query":"q"}`)
			require.Equal(t, tc.class, run.ClassOf(err))
			require.EqualError(t, err, tc.text)
			var tkErr *toolkit.Error
			require.True(t, errors.As(err, &tkErr))
			require.Equal(t, tc.status, tkErr.StatusCode)
		})
	}
}

func TestTooLargeAnswers(t *testing.T) {
	server, _ := api(t, http.StatusOK, tavilyAnswer)
	network := at(server)
	network.MaxResponseBytes = 100
	_, err := search(t, searchTool(t, websearch.Config{Provider: "tavily", APIKey: "k", Network: network}), `{"query":"q"}`)
	require.ErrorContains(t, err, "the answer is larger than max_response_bytes (100 bytes)")

	long := `{"results":[{"title":"` + strings.Repeat("T", 400) + `","url":"https://x","content":"` + strings.Repeat("é", 50) + `"}]}`
	server, _ = api(t, http.StatusOK, long)
	resp, err := search(t, searchTool(t, websearch.Config{Provider: "searxng", MaxContentChars: 10, Network: at(server)}), `{"query":"q","max_results":50}`)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("é", 10)+"…", resp.Results[0].Content)
	require.Equal(t, strings.Repeat("T", 300)+"…", resp.Results[0].Title)
}

func TestMaxResultsArgument(t *testing.T) {
	server, seen := api(t, http.StatusOK, `{"results":[]}`)
	searcher := searchTool(t, websearch.Config{Provider: "tavily", APIKey: "k", Network: at(server)})
	_, err := search(t, searcher, `{"query":"q","max_results":99}`)
	require.NoError(t, err)
	require.Contains(t, (<-seen).Body, `"max_results":20`)
	_, err = search(t, searcher, `{"query":"  "}`)
	require.ErrorContains(t, err, "query is empty")
	require.Empty(t, seen)
}

func TestPrivateAddressesAreRefused(t *testing.T) {
	var hits atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer server.Close()
	searcher := searchTool(t, websearch.Config{Provider: "searxng", Network: toolkit.Network{BaseURL: server.URL}})
	_, err := search(t, searcher, `{"query":"q"}`)
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	require.ErrorContains(t, err, "allow_private")
	require.Zero(t, hits.Load())
}

func TestBadSettings(t *testing.T) {
	for _, tc := range []struct {
		cfg  websearch.Config
		want []string
	}{
		{websearch.Config{}, []string{"provider: required: one of tavily, exa, brave, searxng"}},
		{websearch.Config{Provider: "google"}, []string{`provider: "google" is not one of tavily, exa, brave, searxng`}},
		{websearch.Config{Provider: "tavily"}, []string{"api_key: the tavily provider needs an API key: set api_key or the TAVILY_API_KEY environment variable"}},
		{websearch.Config{Provider: "exa"}, []string{"EXA_API_KEY"}},
		{websearch.Config{Provider: "brave"}, []string{"BRAVE_API_KEY"}},
		{websearch.Config{Provider: "searxng"}, []string{"base_url: the searxng provider needs the address of a SearXNG instance"}},
		{websearch.Config{Provider: "searxng", APIKey: "k", Network: toolkit.Network{BaseURL: "https://s.example"}}, []string{"api_key: the searxng provider takes no key"}},
		{websearch.Config{Provider: "tavily", APIKey: "k", MaxResults: 21}, []string{"max_results: 21 is not between 1 and 20"}},
		{websearch.Config{Provider: "tavily", APIKey: "k", SearchDepth: "deep", Topic: "sport"}, []string{`search_depth: "deep" is not basic or advanced`, `topic: "sport" is not general, news or finance`}},
		{websearch.Config{Provider: "exa", APIKey: "k", SearchDepth: "advanced", IncludeAnswer: new(true)}, []string{"search_depth: only the tavily provider takes it, not exa", "include_answer: only the tavily provider"}},
		{websearch.Config{Provider: "brave", APIKey: "k", MaxContentChars: -1}, []string{"max_content_chars: -1 is negative"}},
		{websearch.Config{Provider: "brave", APIKey: "k", Network: toolkit.Network{BaseURL: "api.search.brave.com"}}, []string{"base_url"}},
	} {
		tc.cfg.Getenv = noEnv
		_, err := websearch.New(tc.cfg)
		require.Error(t, err, tc.cfg.Provider)
		for _, want := range tc.want {
			require.ErrorContains(t, err, want)
		}
	}
}

func TestDefinition(t *testing.T) {
	def := websearch.Definition()
	require.Equal(t, "web_search", def.Name())
	require.Equal(t, []string{"web_search"}, def.ToolNames())
	for _, key := range []string{"provider", "api_key", "max_results", "search_depth", "base_url", "max_response_bytes"} {
		require.Contains(t, def.Keys(), key)
	}
	got, _, err := def.Build(t.Context(), json.RawMessage(`{"provider":"searxng","base_url":"https://searx.example.org","max_results":10,"cache_results":true}`))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Contains(t, got[0].Spec().Description, "Returns 10 results")

	_, _, err = def.Build(t.Context(), json.RawMessage(`{"provider":"brave","apikey":"x"}`))
	require.ErrorContains(t, err, `unknown key "apikey"`)
	_, _, err = def.Build(t.Context(), json.RawMessage(`{}`))
	require.ErrorContains(t, err, "provider: required")
}
