package websearch

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/toolkit"
)

// Response is what the model reads of a search.
type Response struct {
	// Query is the query searched.
	Query string `json:"query"`
	// Answer is the provider's short answer, when it gave one.
	Answer string `json:"answer,omitempty"`
	// Results are the results, most relevant first.
	Results []Result `json:"results"`
}

// Result is one search result.
type Result struct {
	// Title is the page's title.
	Title string `json:"title"`
	// URL is the page's address.
	URL string `json:"url"`
	// Content is a snippet of the page's text, cut at max_content_chars.
	Content string `json:"content,omitempty"`
	// Score is the provider's relevance score, when it gives one.
	Score float64 `json:"score,omitempty"`
	// Published is the page's publication date as the provider gives it,
	// when it knows it.
	Published string `json:"published,omitempty"`
}

// search carries out a web_search call.
func (s *searcher) search(ctx context.Context, args searchArgs) (Response, error) {
	query := strings.TrimSpace(args.Query)
	if query == "" {
		return Response{}, &toolkit.Error{Toolkit: Name, Class: run.ClassBadRequest, Message: "query is empty"}
	}
	n := s.maxResults
	if args.MaxResults > 0 {
		n = min(args.MaxResults, MaxResultsLimit)
	}
	var (
		resp Response
		err  error
	)
	switch s.provider {
	case Tavily:
		resp, err = s.tavily(ctx, query, n)
	case Exa:
		resp, err = s.exa(ctx, query, n)
	case Brave:
		resp, err = s.brave(ctx, query, n)
	case SearXNG:
		resp, err = s.searxng(ctx, query)
	}
	if err != nil {
		return Response{}, s.refine(err)
	}
	resp.Query = query
	if resp.Results == nil {
		resp.Results = []Result{}
	}
	if len(resp.Results) > n {
		resp.Results = resp.Results[:n]
	}
	for i := range resp.Results {
		r := &resp.Results[i]
		r.Title = clean(r.Title, 300)
		r.Content = clean(r.Content, s.maxContentChars)
	}
	resp.Answer = strings.TrimSpace(resp.Answer)
	return resp, nil
}

// tavily searches with Tavily's POST /search.
func (s *searcher) tavily(ctx context.Context, query string, n int) (Response, error) {
	body := map[string]any{
		"query":          query,
		"max_results":    n,
		"search_depth":   s.searchDepth,
		"include_answer": s.includeAnswer,
	}
	if s.topic != "" {
		body["topic"] = s.topic
	}
	var out struct {
		Answer  string `json:"answer"`
		Results []struct {
			Title         string  `json:"title"`
			URL           string  `json:"url"`
			Content       string  `json:"content"`
			Score         float64 `json:"score"`
			PublishedDate string  `json:"published_date"`
		} `json:"results"`
	}
	err := toolkit.DoJSON(ctx, s.client, Name, toolkit.Request{
		Method: http.MethodPost,
		URL:    s.base + "/search",
		Header: http.Header{"Authorization": {"Bearer " + s.key}},
		Body:   body,
	}, s.limit, &out)
	if err != nil {
		return Response{}, err
	}
	resp := Response{Answer: out.Answer}
	for _, r := range out.Results {
		resp.Results = append(resp.Results, Result{Title: r.Title, URL: r.URL, Content: r.Content, Score: r.Score, Published: r.PublishedDate})
	}
	return resp, nil
}

// exa searches with Exa's POST /search, asking for each result's text.
func (s *searcher) exa(ctx context.Context, query string, n int) (Response, error) {
	body := map[string]any{
		"query":      query,
		"numResults": n,
		"contents":   map[string]any{"text": map[string]any{"maxCharacters": s.maxContentChars}},
	}
	var out struct {
		Results []struct {
			Title         string   `json:"title"`
			URL           string   `json:"url"`
			Text          string   `json:"text"`
			Highlights    []string `json:"highlights"`
			Summary       string   `json:"summary"`
			Score         float64  `json:"score"`
			PublishedDate string   `json:"publishedDate"`
		} `json:"results"`
	}
	err := toolkit.DoJSON(ctx, s.client, Name, toolkit.Request{
		Method: http.MethodPost,
		URL:    s.base + "/search",
		Header: http.Header{"X-Api-Key": {s.key}},
		Body:   body,
	}, s.limit, &out)
	if err != nil {
		return Response{}, err
	}
	var resp Response
	for _, r := range out.Results {
		content := r.Text
		if content == "" {
			content = strings.Join(r.Highlights, " … ")
		}
		if content == "" {
			content = r.Summary
		}
		resp.Results = append(resp.Results, Result{Title: r.Title, URL: r.URL, Content: content, Score: r.Score, Published: r.PublishedDate})
	}
	return resp, nil
}

// brave searches with Brave's GET /res/v1/web/search.
func (s *searcher) brave(ctx context.Context, query string, n int) (Response, error) {
	params := url.Values{"q": {query}, "count": {strconv.Itoa(n)}}
	var out struct {
		Web struct {
			Results []struct {
				Title         string   `json:"title"`
				URL           string   `json:"url"`
				Description   string   `json:"description"`
				PageAge       string   `json:"page_age"`
				Age           string   `json:"age"`
				ExtraSnippets []string `json:"extra_snippets"`
			} `json:"results"`
		} `json:"web"`
	}
	err := toolkit.DoJSON(ctx, s.client, Name, toolkit.Request{
		Method: http.MethodGet,
		URL:    s.base + "/res/v1/web/search?" + params.Encode(),
		Header: http.Header{"X-Subscription-Token": {s.key}},
	}, s.limit, &out)
	if err != nil {
		return Response{}, err
	}
	var resp Response
	for _, r := range out.Web.Results {
		published := r.PageAge
		if published == "" {
			published = r.Age
		}
		resp.Results = append(resp.Results, Result{Title: r.Title, URL: r.URL, Content: r.Description, Published: published})
	}
	return resp, nil
}

// searxng searches with a SearXNG instance's GET /search?format=json. The
// API takes no count: the results are cut afterwards.
func (s *searcher) searxng(ctx context.Context, query string) (Response, error) {
	params := url.Values{"q": {query}, "format": {"json"}}
	var out struct {
		Results []struct {
			Title         string  `json:"title"`
			URL           string  `json:"url"`
			Content       string  `json:"content"`
			Score         float64 `json:"score"`
			PublishedDate any     `json:"publishedDate"`
		} `json:"results"`
		Answers []json.RawMessage `json:"answers"`
	}
	err := toolkit.DoJSON(ctx, s.client, Name, toolkit.Request{
		Method: http.MethodGet,
		URL:    s.base + "/search?" + params.Encode(),
	}, s.limit, &out)
	if err != nil {
		var tkErr *toolkit.Error
		if errors.As(err, &tkErr) && tkErr.StatusCode == http.StatusForbidden {
			tkErr.Message += " (a SearXNG instance answers 403 when its settings.yml does not list json under search.formats)"
		}
		return Response{}, err
	}
	var resp Response
	for _, raw := range out.Answers {
		if text := answerText(raw); text != "" {
			resp.Answer = text
			break
		}
	}
	for _, r := range out.Results {
		published, _ := r.PublishedDate.(string)
		resp.Results = append(resp.Results, Result{Title: r.Title, URL: r.URL, Content: r.Content, Score: r.Score, Published: published})
	}
	return resp, nil
}

// refine completes the message of a failed call: with the text of a Brave
// (error.detail) or Tavily (detail.error) error body, which
// toolkit.StatusError quotes whole, and with the likely cause of an answer
// that is not whole JSON.
func (s *searcher) refine(err error) error {
	var tkErr *toolkit.Error
	if !errors.As(err, &tkErr) {
		return err
	}
	if tkErr.StatusCode >= 400 {
		var body struct {
			Error struct {
				Detail string `json:"detail"`
			} `json:"error"`
			Detail struct {
				Error string `json:"error"`
			} `json:"detail"`
		}
		if json.Unmarshal([]byte(tkErr.Message), &body) == nil {
			if text := strings.TrimSpace(body.Error.Detail + " " + body.Detail.Error); text != "" {
				tkErr.Message = text
			}
		}
	}
	return err
}

// answerText is a SearXNG answer's text: a string in older versions, an
// object with "answer" in newer ones.
func answerText(raw json.RawMessage) string {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var object struct {
		Answer string `json:"answer"`
	}
	if json.Unmarshal(raw, &object) == nil {
		return object.Answer
	}
	return ""
}

// clean makes a provider's text plain: no HTML tags or entities (Brave
// marks the query's words with <strong>), single spaces, at most limit
// characters, cut with "…".
func clean(text string, limit int) string {
	if strings.ContainsAny(text, "<&") {
		text = html.UnescapeString(stripTags(text))
	}
	text = strings.Join(strings.Fields(text), " ")
	if runes := []rune(text); len(runes) > limit {
		text = strings.TrimSpace(string(runes[:limit])) + "…"
	}
	return text
}

// stripTags removes what looks like HTML tags from text.
func stripTags(text string) string {
	var sb strings.Builder
	for {
		start := strings.IndexByte(text, '<')
		if start < 0 {
			break
		}
		end := strings.IndexByte(text[start:], '>')
		if end < 0 || !looksLikeTag(text[start+1:start+end]) {
			sb.WriteString(text[:start+1])
			text = text[start+1:]
			continue
		}
		sb.WriteString(text[:start])
		text = text[start+end+1:]
	}
	sb.WriteString(text)
	return sb.String()
}

// looksLikeTag reports the inside of <…> that is a tag: a name, maybe a
// closing slash, and attributes; not "a < b > c".
func looksLikeTag(inner string) bool {
	inner = strings.TrimPrefix(inner, "/")
	if inner == "" {
		return false
	}
	c := inner[0]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
