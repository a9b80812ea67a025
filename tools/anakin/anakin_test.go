package anakin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/agnogo/agnogo/tools/anakin"
)

const testKey = "ak-test-123"

// request is what the fake received.
type request struct {
	Method, Path, APIKey, Auth, ContentType string
	Body                                    map[string]any
}

// fake is an in-process Anakin API: POST /v1/{kind} creates a job, GET
// /v1/{kind}/{id} reports its status — "pending" and "processing" for
// pendingPolls reads, then final (or forever "processing" when final is
// nil) — and POST /v1/search answers at once.
type fake struct {
	pendingPolls int
	final        func(kind string) map[string]any
	submit       func(w http.ResponseWriter) bool // answers the submit itself when it returns true
	onPoll       func(n int)

	mu       sync.Mutex
	requests []request
	polls    int
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	rec := request{Method: r.Method, Path: r.URL.Path, APIKey: r.Header.Get("X-API-Key"),
		Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type")}
	if len(data) > 0 {
		_ = json.Unmarshal(data, &rec.Body)
	}
	f.mu.Lock()
	f.requests = append(f.requests, rec)
	f.mu.Unlock()
	if r.Header.Get("X-API-Key") != testKey {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"unauthorized","message":"Invalid API key"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/search":
		_, _ = io.WriteString(w, `{"id":"search_987","results":[
			{"url":"https://go.dev/doc","title":"Go docs","snippet":"Documentation for Go","date":"2026-01-02"},
			{"url":"https://go.dev/blog","title":"Go blog","snippet":"The Go blog"}]}`)
	case r.Method == http.MethodPost && len(parts) == 2:
		if f.submit != nil && f.submit(w) {
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = fmt.Fprintf(w, `{"jobId":"job_%s_42","status":"pending"}`, parts[1])
	case r.Method == http.MethodGet && len(parts) == 3:
		f.mu.Lock()
		f.polls++
		n := f.polls
		f.mu.Unlock()
		if f.onPoll != nil {
			f.onPoll(n)
		}
		status := map[string]any{"id": parts[2], "status": "processing"}
		switch {
		case n <= f.pendingPolls && n == 1:
			status["status"] = "pending"
		case n <= f.pendingPolls:
		case f.final != nil:
			status = f.final(parts[1])
			status["id"] = parts[2]
		}
		_ = json.NewEncoder(w).Encode(status)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"not_found","message":"no such route"}`)
	}
}

func (f *fake) received() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.requests...)
}

func (f *fake) pollCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls
}

func completed(kind string) map[string]any {
	switch kind {
	case "crawl":
		return map[string]any{"status": "completed", "url": "https://example.com", "totalPages": 2, "completedPages": 1,
			"results": []any{
				map[string]any{"url": "https://example.com", "status": "completed", "markdown": "# Home\n\nWelcome home."},
				map[string]any{"url": "https://example.com/blog", "status": "failed", "error": "Connection timeout"},
			}}
	case "map":
		return map[string]any{"status": "completed", "url": "https://example.com", "totalLinks": 3,
			"links": []any{"https://example.com/about", "https://example.com/blog", "https://example.com/contact"}}
	}
	return map[string]any{"status": "completed", "url": "https://example.com", "markdown": "# Example Domain\n\nThis domain is for examples.",
		"html": "<html>…</html>", "cached": false}
}

// newKit builds the toolkit against the fake, with tiny poll settings.
func newKit(t *testing.T, f *fake, edit func(*anakin.Config)) map[string]tool.Tool {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	all := true
	cfg := anakin.Config{
		APIKey: testKey, EnableScrape: &all, EnableCrawl: &all, EnableMap: &all, EnableSearch: &all,
		PollIntervalSeconds: 0.001, MaxWaitSeconds: 30,
		Network: toolkit.Network{BaseURL: srv.URL + "/v1", AllowPrivate: true},
		Getenv:  func(string) string { return "" },
	}
	if edit != nil {
		edit(&cfg)
	}
	k, err := anakin.New(cfg)
	require.NoError(t, err)
	tools := map[string]tool.Tool{}
	for _, tl := range k.Tools {
		tools[tl.Spec().Name] = tl
	}
	return tools
}

func TestScrapePollsUntilCompleted(t *testing.T) {
	f := &fake{pendingPolls: 2, final: completed}
	tools := newKit(t, f, nil)

	out, err := tools[anakin.ScrapeURLName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com","use_browser":true}`))
	require.NoError(t, err)
	require.Contains(t, out, "# Example Domain")
	require.Contains(t, out, "This domain is for examples.")
	require.NotContains(t, out, "job_")
	require.Equal(t, 3, f.pollCount(), "pending, processing, then completed")

	got := f.received()
	require.Len(t, got, 4)
	require.Equal(t, http.MethodPost, got[0].Method)
	require.Equal(t, "/v1/url-scraper", got[0].Path)
	require.Equal(t, testKey, got[0].APIKey)
	require.Equal(t, "Bearer "+testKey, got[0].Auth)
	require.Equal(t, "application/json", got[0].ContentType)
	require.Equal(t, map[string]any{"url": "https://example.com", "useBrowser": true}, got[0].Body)
	for _, r := range got[1:] {
		require.Equal(t, http.MethodGet, r.Method)
		require.Equal(t, "/v1/url-scraper/job_url-scraper_42", r.Path)
		require.Equal(t, testKey, r.APIKey)
	}
}

func TestCrawlAndMap(t *testing.T) {
	f := &fake{pendingPolls: 1, final: completed}
	tools := newKit(t, f, nil)

	out, err := tools[anakin.CrawlWebsiteName].Call(t.Context(),
		json.RawMessage(`{"url":"https://example.com","max_pages":5,"include_patterns":["/blog/*"]}`))
	require.NoError(t, err)
	require.Contains(t, out, "Crawled 2 pages from https://example.com (1 read, 1 failed)")
	require.Contains(t, out, "## https://example.com\n\n# Home")
	require.Contains(t, out, "(failed: Connection timeout)")
	require.NotContains(t, out, "job_")
	submit := f.received()[0]
	require.Equal(t, "/v1/crawl", submit.Path)
	require.Equal(t, map[string]any{"url": "https://example.com", "maxPages": float64(5), "useBrowser": false,
		"includePatterns": []any{"/blog/*"}}, submit.Body)

	out, err = tools[anakin.MapWebsiteName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com","search":"blog"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"url":"https://example.com","total_links":3,
		"links":["https://example.com/about","https://example.com/blog","https://example.com/contact"]}`, out)
	var mapSubmit request
	for _, r := range f.received() {
		if r.Method == http.MethodPost && r.Path == "/v1/map" {
			mapSubmit = r
		}
	}
	require.Equal(t, map[string]any{"url": "https://example.com", "limit": float64(100), "includeSubdomains": false, "search": "blog"}, mapSubmit.Body)
}

func TestSearchIsAnsweredDirectly(t *testing.T) {
	f := &fake{}
	tools := newKit(t, f, nil)
	out, err := tools[anakin.SearchWebName].Call(t.Context(), json.RawMessage(`{"query":"go documentation","limit":2}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"query":"go documentation","results":[
		{"title":"Go docs","url":"https://go.dev/doc","snippet":"Documentation for Go","date":"2026-01-02"},
		{"title":"Go blog","url":"https://go.dev/blog","snippet":"The Go blog"}]}`, out)
	require.NotContains(t, out, "search_987")
	got := f.received()
	require.Len(t, got, 1)
	require.Equal(t, "/v1/search", got[0].Path)
	require.Equal(t, map[string]any{"prompt": "go documentation", "limit": float64(2)}, got[0].Body)
}

func TestFailedJobIsAnError(t *testing.T) {
	f := &fake{pendingPolls: 1, final: func(string) map[string]any {
		return map[string]any{"status": "failed", "error": "Target site returned 403"}
	}}
	tools := newKit(t, f, nil)
	_, err := tools[anakin.ScrapeURLName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com"}`))
	var tkErr *toolkit.Error
	require.ErrorAs(t, err, &tkErr)
	require.Equal(t, run.ClassServer, tkErr.Class)
	require.Contains(t, err.Error(), "the scrape of https://example.com failed: Target site returned 403")
	require.NotContains(t, err.Error(), "job_")

	// An error given as an object reads the same.
	f2 := &fake{final: func(string) map[string]any {
		return map[string]any{"status": "failed", "error": map[string]any{"code": "BLOCKED", "message": "bot wall"}}
	}}
	tools = newKit(t, f2, nil)
	_, err = tools[anakin.MapWebsiteName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com"}`))
	require.ErrorContains(t, err, "the map of https://example.com failed: BLOCKED: bot wall")
}

func TestJobThatNeverCompletesHitsMaxWait(t *testing.T) {
	f := &fake{} // always "processing"
	tools := newKit(t, f, func(c *anakin.Config) { c.MaxWaitSeconds = 0.05; c.PollIntervalSeconds = 0.005 })
	_, err := tools[anakin.CrawlWebsiteName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com"}`))
	require.Error(t, err)
	require.Equal(t, run.ClassTimeout, run.ClassOf(err))
	require.Contains(t, err.Error(), "max_wait_seconds")
	require.Contains(t, err.Error(), "the crawl of https://example.com was still ")
	require.NotContains(t, err.Error(), "job_")
	require.GreaterOrEqual(t, f.pollCount(), 2)
}

func TestPollingStopsWhenContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := &fake{onPoll: func(n int) {
		if n == 2 {
			cancel()
		}
	}}
	tools := newKit(t, f, func(c *anakin.Config) { c.MaxWaitSeconds = 600; c.PollIntervalSeconds = 0.002 })
	_, err := tools[anakin.ScrapeURLName].Call(ctx, json.RawMessage(`{"url":"https://example.com"}`))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, run.ClassCancelled, run.ClassOf(err))
	polls := f.pollCount()
	require.LessOrEqual(t, polls, 3, "no polling once the context is cancelled")
	// The call has returned: nothing polls any more.
	require.Equal(t, polls, f.pollCount())
}

func TestHTTPErrorsAreClassified(t *testing.T) {
	f := &fake{}
	tools := newKit(t, f, func(c *anakin.Config) { c.APIKey = "wrong" })
	_, err := tools[anakin.ScrapeURLName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com"}`))
	require.Equal(t, run.ClassAuthentication, run.ClassOf(err))
	require.ErrorContains(t, err, "anakin: authentication_error (HTTP 401): unauthorized: Invalid API key")

	limited := &fake{submit: func(w http.ResponseWriter) bool {
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"status":"error","error":{"code":"RATE_LIMITED","message":"60 requests/min"}}`)
		return true
	}}
	tools = newKit(t, limited, nil)
	_, err = tools[anakin.CrawlWebsiteName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com"}`))
	var tkErr *toolkit.Error
	require.ErrorAs(t, err, &tkErr)
	require.Equal(t, run.ClassRateLimit, tkErr.Class)
	require.Equal(t, http.StatusTooManyRequests, tkErr.StatusCode)
	require.Contains(t, tkErr.Message, "RATE_LIMITED: 60 requests/min")

	noID := &fake{submit: func(w http.ResponseWriter) bool {
		_, _ = io.WriteString(w, `{"status":"pending"}`)
		return true
	}}
	tools = newKit(t, noID, nil)
	_, err = tools[anakin.ScrapeURLName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com"}`))
	require.ErrorContains(t, err, "gave no job id")

	_, err = tools[anakin.ScrapeURLName].Call(t.Context(), json.RawMessage(`{"url":"file:///etc/passwd"}`))
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
}

func TestLongContentIsCut(t *testing.T) {
	long := strings.Repeat("word ", 2000)
	f := &fake{final: func(string) map[string]any {
		return map[string]any{"status": "completed", "markdown": long}
	}}
	tools := newKit(t, f, func(c *anakin.Config) { c.MaxResultChars = 300 })
	out, err := tools[anakin.ScrapeURLName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com"}`))
	require.NoError(t, err)
	require.Contains(t, out, "[cut: 300 of")
	require.Less(t, len(out), 400)

	// A body beyond max_response_bytes is refused, saying which setting.
	tools = newKit(t, f, func(c *anakin.Config) { c.MaxResponseBytes = 1000 })
	_, err = tools[anakin.ScrapeURLName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com"}`))
	require.ErrorContains(t, err, "max_response_bytes (1000 bytes)")
}

func TestPrivateAddressRefused(t *testing.T) {
	f := &fake{final: completed}
	tools := newKit(t, f, func(c *anakin.Config) { c.AllowPrivate = false })
	_, err := tools[anakin.ScrapeURLName].Call(t.Context(), json.RawMessage(`{"url":"https://example.com"}`))
	var tkErr *toolkit.Error
	require.ErrorAs(t, err, &tkErr)
	require.Equal(t, run.ClassBadRequest, tkErr.Class)
	require.Contains(t, tkErr.Message, "allow_private")
	require.Empty(t, f.received())
}

func TestSettings(t *testing.T) {
	no := false
	env := func(key string) string {
		if key == anakin.EnvAPIKey {
			return "from-env"
		}
		return ""
	}

	_, err := anakin.New(anakin.Config{Getenv: func(string) string { return "" }})
	require.ErrorContains(t, err, "api_key is required")
	require.ErrorContains(t, err, "ANAKIN_API_KEY")

	_, err = anakin.New(anakin.Config{Getenv: env, EnableScrape: &no, EnableSearch: &no})
	require.ErrorContains(t, err, "enable at least one")

	_, err = anakin.New(anakin.Config{Getenv: env, PollIntervalSeconds: -1, MaxWaitSeconds: -2})
	require.ErrorContains(t, err, "poll_interval_seconds")
	require.ErrorContains(t, err, "max_wait_seconds")

	_, err = anakin.New(anakin.Config{Getenv: env, Network: toolkit.Network{BaseURL: "ftp://x"}})
	require.ErrorContains(t, err, "base_url")

	// Defaults: scrape and search, the key from the environment.
	k, err := anakin.New(anakin.Config{Getenv: env})
	require.NoError(t, err)
	var names []string
	for _, tl := range k.Tools {
		names = append(names, tl.Spec().Name)
	}
	require.Equal(t, []string{anakin.ScrapeURLName, anakin.SearchWebName}, names)
	require.Equal(t, []string{"scrape_url", "crawl_website", "map_website", "search_web"}, anakin.Names())
}

func TestDefinition(t *testing.T) {
	t.Setenv(anakin.EnvAPIKey, "from-env")
	def := anakin.Definition()
	require.Equal(t, "anakin", def.Name())
	require.Contains(t, def.Keys(), "enable_crawl")
	require.Contains(t, def.Keys(), "allow_private")

	tools, _, err := def.Build(t.Context(), json.RawMessage(`{"enable_crawl":true,"enable_search":false,"max_wait_seconds":30}`))
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Spec().Name)
	}
	require.Equal(t, []string{anakin.ScrapeURLName, anakin.CrawlWebsiteName}, names)

	_, _, err = def.Build(t.Context(), json.RawMessage(`{"enable_scrap":true}`))
	require.ErrorContains(t, err, "unknown key")
	_, _, err = def.Build(t.Context(), json.RawMessage(`{"enable_scrape":false,"enable_search":false}`))
	require.ErrorContains(t, err, "enable at least one")
	require.False(t, errors.Is(err, context.Canceled))
}
