package anakin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// Bounds of the model's arguments.
const (
	defaultCrawlPages = 10
	maxCrawlPages     = 100
	defaultMapLimit   = 100
	maxMapLimit       = 5000
	defaultSearchHits = 5
	maxSearchHits     = 20
	maxSnippetChars   = 600
	minPageChars      = 500
)

type scrapeArgs struct {
	URL        string `json:"url" jsonschema:"the http or https address of the page to read"`
	UseBrowser bool   `json:"use_browser,omitempty" jsonschema:"render the page in a headless browser first; for single-page apps and pages built by JavaScript. Slower"`
	Country    string `json:"country,omitempty" jsonschema:"two-letter country code to fetch the page from, e.g. us or de; Anakin's default when left out"`
}

type crawlArgs struct {
	URL             string   `json:"url" jsonschema:"the http or https address to start crawling from"`
	MaxPages        int      `json:"max_pages,omitempty" jsonschema:"how many pages to read at most, 1 to 100; 10 when left out"`
	Depth           int      `json:"depth,omitempty" jsonschema:"how many links away from the start page to follow; 1 when left out"`
	IncludePatterns []string `json:"include_patterns,omitempty" jsonschema:"only read pages whose URL matches one of these glob patterns, e.g. /blog/*"`
	ExcludePatterns []string `json:"exclude_patterns,omitempty" jsonschema:"skip pages whose URL matches one of these glob patterns"`
	UseBrowser      bool     `json:"use_browser,omitempty" jsonschema:"render each page in a headless browser first; slower"`
}

type mapArgs struct {
	URL               string `json:"url" jsonschema:"the http or https address to discover links from, usually a home page"`
	Limit             int    `json:"limit,omitempty" jsonschema:"how many links to return at most; 100 when left out"`
	Search            string `json:"search,omitempty" jsonschema:"only return links whose address or title matches this keyword"`
	IncludeSubdomains bool   `json:"include_subdomains,omitempty" jsonschema:"also return links on subdomains of the start page's host"`
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"what to search the web for, in natural language"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many results, 1 to 20; 5 when left out"`
}

// checkURL refuses an address Anakin could not scrape, before spending a
// job on it.
func checkURL(raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &toolkit.Error{Toolkit: Name, Class: run.ClassBadRequest,
			Message: fmt.Sprintf("url %q is not an http or https address such as https://example.com/page", raw)}
	}
	return nil
}

// cut bounds s to max characters, with a note saying how much was left
// out.
func cut(s string, max int) string { return toolkit.Cut(s, max, "\n\n") }

func (k *kit) scrapeTool() (tool.Tool, error) {
	return tool.New(tool.Config{
		Name: ScrapeURLName,
		Description: "Read one web page with Anakin and return its content as Markdown. " +
			"Use it to read an article, a documentation page or a product page at a known address.",
	}, k.scrape)
}

func (k *kit) scrape(ctx context.Context, a scrapeArgs) (string, error) {
	if err := checkURL(a.URL); err != nil {
		return "", err
	}
	body := map[string]any{"url": strings.TrimSpace(a.URL), "useBrowser": a.UseBrowser}
	if a.Country != "" {
		body["country"] = a.Country
	}
	j, err := k.run(ctx, "/url-scraper", "scrape of "+a.URL, body)
	if err != nil {
		return "", err
	}
	content := strings.TrimSpace(j.Markdown)
	if content == "" {
		content = strings.TrimSpace(j.CleanedHTML)
	}
	if content == "" {
		return fmt.Sprintf("Anakin read %s but found no text content on the page.", a.URL), nil
	}
	return cut(fmt.Sprintf("Content of %s:\n\n%s", or(j.URL, a.URL), content), k.maxResultChars), nil
}

func (k *kit) crawlTool() (tool.Tool, error) {
	return tool.New(tool.Config{
		Name: CrawlWebsiteName,
		Description: "Crawl a website with Anakin from a start page, following its links, and return each page's " +
			"content as Markdown. Use it to read several pages of one site; use scrape_url for a single page.",
	}, k.crawl)
}

func (k *kit) crawl(ctx context.Context, a crawlArgs) (string, error) {
	if err := checkURL(a.URL); err != nil {
		return "", err
	}
	pages := a.MaxPages
	switch {
	case pages <= 0:
		pages = defaultCrawlPages
	case pages > maxCrawlPages:
		pages = maxCrawlPages
	}
	body := map[string]any{"url": strings.TrimSpace(a.URL), "maxPages": pages, "useBrowser": a.UseBrowser}
	if a.Depth > 0 {
		body["depth"] = a.Depth
	}
	if len(a.IncludePatterns) > 0 {
		body["includePatterns"] = a.IncludePatterns
	}
	if len(a.ExcludePatterns) > 0 {
		body["excludePatterns"] = a.ExcludePatterns
	}
	j, err := k.run(ctx, "/crawl", "crawl of "+a.URL, body)
	if err != nil {
		return "", err
	}
	if len(j.Results) == 0 {
		return fmt.Sprintf("Anakin crawled %s but returned no pages.", a.URL), nil
	}
	ok := 0
	for _, p := range j.Results {
		if p.Status != statusFailed {
			ok++
		}
	}
	share := max(k.maxResultChars/len(j.Results), minPageChars)
	var b strings.Builder
	fmt.Fprintf(&b, "Crawled %d pages from %s (%d read, %d failed).\n", len(j.Results), or(j.URL, a.URL), ok, len(j.Results)-ok)
	for _, p := range j.Results {
		fmt.Fprintf(&b, "\n## %s\n\n", p.URL)
		if p.Status == statusFailed {
			fmt.Fprintf(&b, "(failed: %s)\n", or(errorText(p.Error), "no reason given"))
			continue
		}
		content := strings.TrimSpace(p.Markdown)
		if content == "" {
			content = "(no text content)"
		}
		b.WriteString(cut(content, share))
		b.WriteString("\n")
	}
	return cut(b.String(), k.maxResultChars), nil
}

func (k *kit) mapTool() (tool.Tool, error) {
	return tool.New(tool.Config{
		Name: MapWebsiteName,
		Description: "Discover the addresses of a website's pages with Anakin, without reading them. " +
			"Use it to find which pages a site has before reading some with scrape_url.",
	}, k.mapSite)
}

// mapResult is map_website's answer.
type mapResult struct {
	URL        string   `json:"url"`
	TotalLinks int      `json:"total_links"`
	Links      []string `json:"links"`
	Note       string   `json:"note,omitempty"`
}

func (k *kit) mapSite(ctx context.Context, a mapArgs) (mapResult, error) {
	if err := checkURL(a.URL); err != nil {
		return mapResult{}, err
	}
	limit := a.Limit
	switch {
	case limit <= 0:
		limit = defaultMapLimit
	case limit > maxMapLimit:
		limit = maxMapLimit
	}
	body := map[string]any{"url": strings.TrimSpace(a.URL), "limit": limit, "includeSubdomains": a.IncludeSubdomains}
	if a.Search != "" {
		body["search"] = a.Search
	}
	j, err := k.run(ctx, "/map", "map of "+a.URL, body)
	if err != nil {
		return mapResult{}, err
	}
	out := mapResult{URL: or(j.URL, a.URL), TotalLinks: max(j.TotalLinks, len(j.Links)), Links: []string{}}
	size := 0
	for _, link := range j.Links {
		size += len(link) + 3
		if size > k.maxResultChars {
			out.Note = fmt.Sprintf("cut: %d of %d links shown", len(out.Links), len(j.Links))
			break
		}
		out.Links = append(out.Links, link)
	}
	return out, nil
}

func (k *kit) searchTool() (tool.Tool, error) {
	return tool.New(tool.Config{
		Name: SearchWebName,
		Description: "Search the web with Anakin; returns the results' titles, addresses and snippets. " +
			"Read a result in full with scrape_url.",
	}, k.search)
}

// hit is one search result.
type hit struct {
	Title   string `json:"title,omitempty"`
	URL     string `json:"url"`
	Snippet string `json:"snippet,omitempty"`
	Date    string `json:"date,omitempty"`
}

// searchResult is search_web's answer.
type searchResult struct {
	Query   string `json:"query"`
	Results []hit  `json:"results"`
	Note    string `json:"note,omitempty"`
}

func (k *kit) search(ctx context.Context, a searchArgs) (searchResult, error) {
	query := strings.TrimSpace(a.Query)
	if query == "" {
		return searchResult{}, &toolkit.Error{Toolkit: Name, Class: run.ClassBadRequest, Message: "query is empty"}
	}
	limit := a.Limit
	switch {
	case limit <= 0:
		limit = defaultSearchHits
	case limit > maxSearchHits:
		limit = maxSearchHits
	}
	var answer struct {
		Results []hit           `json:"results"`
		Error   json.RawMessage `json:"error"`
	}
	if err := k.do(ctx, http.MethodPost, "/search", map[string]any{"prompt": query, "limit": limit}, &answer); err != nil {
		return searchResult{}, err
	}
	out := searchResult{Query: query, Results: []hit{}}
	size := 0
	for _, h := range answer.Results {
		h.Snippet = cut(h.Snippet, maxSnippetChars)
		size += len(h.Title) + len(h.URL) + len(h.Snippet) + len(h.Date) + 40
		if size > k.maxResultChars {
			out.Note = fmt.Sprintf("cut: %d of %d results shown", len(out.Results), len(answer.Results))
			break
		}
		out.Results = append(out.Results, h)
	}
	if len(answer.Results) == 0 {
		if msg := errorText(answer.Error); msg != "" {
			return searchResult{}, &toolkit.Error{Toolkit: Name, Class: run.ClassServer, Message: "the search failed: " + msg}
		}
	}
	return out, nil
}
