// Package websearch is the web_search toolkit: its tool web_search asks a
// search API for a query and gives the model the results — title, URL and
// a snippet of each, with the relevance score and publication date where
// the provider has them, and the provider's own short answer when it gives
// one.
//
// Four providers are supported:
//
//   - tavily: POST https://api.tavily.com/search with an
//     "Authorization: Bearer <key>" header; answers with a short answer
//     (include_answer) and scored results.
//   - exa: POST https://api.exa.ai/search with an x-api-key header, asking
//     for each result's text (contents.text.maxCharacters).
//   - brave: GET https://api.search.brave.com/res/v1/web/search with an
//     X-Subscription-Token header; results under web.results.
//   - searxng: GET {base_url}/search?format=json of a SearXNG instance,
//     which must have the json format enabled; no key.
//
// # Settings
//
//   - provider: tavily, exa, brave or searxng. Required.
//   - api_key: the provider's key; defaults to the TAVILY_API_KEY,
//     EXA_API_KEY or BRAVE_API_KEY environment variable. searxng takes
//     none.
//   - max_results: results a call returns unless it asks for fewer or
//     more; defaults to 5, at most 20.
//   - max_content_chars: the longest snippet of a result; defaults to
//     1000 (and is exa's contents.text.maxCharacters).
//   - search_depth (tavily): basic (the default) or advanced, which costs
//     two credits.
//   - topic (tavily): general (the default), news or finance.
//   - include_answer (tavily): whether to ask for Tavily's short answer;
//     defaults to true.
//   - the network keys of every network toolkit: base_url (replaces the
//     provider's API root; the SearXNG instance's address, required for
//     searxng), allow_private, allow_hosts, deny_hosts, timeout_seconds,
//     max_response_bytes.
package websearch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// Name is the toolkit's name, as config files list it.
const Name = "web_search"

// WebSearchName is the name of the toolkit's tool.
const WebSearchName = "web_search"

// Names lists the toolkit's tools.
func Names() []string { return []string{WebSearchName} }

// The providers.
const (
	Tavily  = "tavily"
	Exa     = "exa"
	Brave   = "brave"
	SearXNG = "searxng"
)

// Providers lists the providers, in the order the documentation gives
// them.
func Providers() []string { return []string{Tavily, Exa, Brave, SearXNG} }

// Defaults and bounds of [Config].
const (
	// DefaultMaxResults is how many results a call returns unless told.
	DefaultMaxResults = 5
	// MaxResultsLimit bounds max_results: no provider returns more in one
	// call without paging.
	MaxResultsLimit = 20
	// DefaultMaxContentChars bounds one result's snippet.
	DefaultMaxContentChars = 1000
)

// The providers' public API roots, which base_url replaces.
const (
	TavilyURL = "https://api.tavily.com"
	ExaURL    = "https://api.exa.ai"
	BraveURL  = "https://api.search.brave.com"
)

// keyVariables are the environment variables of the providers' keys.
var keyVariables = map[string]string{Tavily: "TAVILY_API_KEY", Exa: "EXA_API_KEY", Brave: "BRAVE_API_KEY"}

// Config is the web_search toolkit's settings, from Go or from a config
// file.
type Config struct {
	// Provider is the search API: tavily, exa, brave or searxng. Required.
	Provider string `json:"provider"`
	// APIKey is the provider's key. Defaults to the environment variable
	// TAVILY_API_KEY, EXA_API_KEY or BRAVE_API_KEY; searxng needs none.
	APIKey string `json:"api_key,omitempty"`
	// MaxResults is how many results a call returns when it does not ask
	// for a number. Defaults to [DefaultMaxResults]; at most
	// [MaxResultsLimit].
	MaxResults int `json:"max_results,omitempty"`
	// MaxContentChars bounds each result's snippet, which is cut with
	// "…". Defaults to [DefaultMaxContentChars].
	MaxContentChars int `json:"max_content_chars,omitempty"`
	// SearchDepth is Tavily's search_depth, basic or advanced (two
	// credits a search). Defaults to basic. Tavily only.
	SearchDepth string `json:"search_depth,omitempty"`
	// Topic is Tavily's topic: general, news or finance. Defaults to
	// general. Tavily only.
	Topic string `json:"topic,omitempty"`
	// IncludeAnswer asks Tavily for a short answer to the query, given
	// before the results. Defaults to true. Tavily only.
	IncludeAnswer *bool `json:"include_answer,omitempty"`
	// Network is where the API is and which addresses may be reached:
	// base_url (the provider's API root by default; a SearXNG instance's
	// address, required for searxng), allow_private, allow_hosts,
	// deny_hosts, timeout_seconds, max_response_bytes.
	toolkit.Network
	// Getenv reads the environment for the API key. Defaults to
	// os.Getenv.
	Getenv func(string) string `json:"-"`
}

// searcher is a built toolkit's state; it is not changed after New.
type searcher struct {
	provider        string
	key             string
	base            string
	maxResults      int
	maxContentChars int
	searchDepth     string
	topic           string
	includeAnswer   bool
	limit           int64
	client          *http.Client
}

// searchArgs are web_search's arguments.
type searchArgs struct {
	Query      string `json:"query" jsonschema:"what to search for, as you would type it into a search engine"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"how many results to return, 1 to 20; the toolkit's default when left out"`
}

// New returns the web_search toolkit with cfg's settings. It checks them
// and connects nowhere.
func New(cfg Config) (*toolkit.Toolkit, error) {
	s, err := newSearcher(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	description := fmt.Sprintf("Search the web (%s) and get the most relevant pages: title, url and a snippet of each, "+
		"with a score and publication date when known", s.provider)
	if s.includeAnswer {
		description += ", and a short answer to the query when the search engine has one"
	}
	description += fmt.Sprintf(". Returns %d results unless max_results says otherwise. Use it for current events, facts "+
		"to check and pages to read; cite the urls you use.", s.maxResults)
	t, err := tool.New(tool.Config{Name: WebSearchName, Description: description}, s.search)
	if err != nil {
		return nil, err
	}
	return &toolkit.Toolkit{Name: Name, Tools: []tool.Tool{t}}, nil
}

func newSearcher(cfg Config) (*searcher, error) {
	provider := strings.ToLower(strings.TrimSpace(cfg.Provider))
	if provider == "" {
		return nil, fmt.Errorf("provider: required: one of %s", strings.Join(Providers(), ", "))
	}
	if !slices.Contains(Providers(), provider) {
		return nil, fmt.Errorf("provider: %q is not one of %s", cfg.Provider, strings.Join(Providers(), ", "))
	}
	if err := cfg.Network.Validate(); err != nil {
		return nil, err
	}
	s := &searcher{
		provider:        provider,
		maxResults:      cfg.MaxResults,
		maxContentChars: cfg.MaxContentChars,
		searchDepth:     cfg.SearchDepth,
		topic:           cfg.Topic,
		includeAnswer:   provider == Tavily && (cfg.IncludeAnswer == nil || *cfg.IncludeAnswer),
		limit:           cfg.Network.MaxBytes(),
		client:          cfg.Network.Client(),
	}
	var errs []error
	switch {
	case cfg.MaxResults < 0 || cfg.MaxResults > MaxResultsLimit:
		errs = append(errs, fmt.Errorf("max_results: %d is not between 1 and %d", cfg.MaxResults, MaxResultsLimit))
	case cfg.MaxResults == 0:
		s.maxResults = DefaultMaxResults
	}
	switch {
	case cfg.MaxContentChars < 0:
		errs = append(errs, fmt.Errorf("max_content_chars: %d is negative", cfg.MaxContentChars))
	case cfg.MaxContentChars == 0:
		s.maxContentChars = DefaultMaxContentChars
	}
	tavilyOnly := func(key string, set bool) {
		if set && provider != Tavily {
			errs = append(errs, fmt.Errorf("%s: only the tavily provider takes it, not %s", key, provider))
		}
	}
	tavilyOnly("search_depth", cfg.SearchDepth != "")
	tavilyOnly("topic", cfg.Topic != "")
	tavilyOnly("include_answer", cfg.IncludeAnswer != nil)
	if provider == Tavily {
		if s.searchDepth == "" {
			s.searchDepth = "basic"
		}
		if s.searchDepth != "basic" && s.searchDepth != "advanced" {
			errs = append(errs, fmt.Errorf("search_depth: %q is not basic or advanced", cfg.SearchDepth))
		}
		if s.topic != "" && !slices.Contains([]string{"general", "news", "finance"}, s.topic) {
			errs = append(errs, fmt.Errorf("topic: %q is not general, news or finance", cfg.Topic))
		}
	}

	switch provider {
	case SearXNG:
		if cfg.BaseURL == "" {
			errs = append(errs, errors.New("base_url: the searxng provider needs the address of a SearXNG instance, such as https://searx.example.org"))
		}
		if cfg.APIKey != "" {
			errs = append(errs, errors.New("api_key: the searxng provider takes no key"))
		}
	default:
		s.key = strings.TrimSpace(cfg.APIKey)
		if s.key == "" {
			getenv := cfg.Getenv
			if getenv == nil {
				getenv = os.Getenv
			}
			s.key = strings.TrimSpace(getenv(keyVariables[provider]))
		}
		if s.key == "" {
			errs = append(errs, fmt.Errorf("api_key: the %s provider needs an API key: set api_key or the %s environment variable", provider, keyVariables[provider]))
		}
	}
	s.base = cfg.Network.Base(map[string]string{Tavily: TavilyURL, Exa: ExaURL, Brave: BraveURL}[provider])
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// Definition declares the toolkit for config files, as web_search.
func Definition() toolkit.Definition {
	return toolkit.Define(Name, "Web search with Tavily, Exa, Brave or a SearXNG instance: web_search returns titles, URLs and snippets.",
		Names(), func(_ context.Context, cfg Config) (*toolkit.Toolkit, error) {
			return New(cfg)
		})
}
