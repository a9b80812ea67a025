// Package anakin is the toolkit of the Anakin web-scraping API (anakin.io),
// Agno's AnakinTools: a page as Markdown (scrape_url), the pages of a site
// (crawl_website), the links of a site (map_website) and a web search
// (search_web).
//
// Anakin scrapes, crawls and maps asynchronously: a request creates a job
// and answers with its id, and the job's status is read until it is
// completed or failed. The toolkit does that waiting itself — every
// poll_interval_seconds, for at most max_wait_seconds — so the model
// receives the content or the links, never a job id to chase. A failed job
// is an [*toolkit.Error] quoting Anakin's message; a job still running at
// the deadline is a timeout; a cancelled context stops the polling at once.
// The search is answered directly.
//
// Settings ([Config]): api_key (falls back to the ANAKIN_API_KEY
// environment variable; required), enable_scrape (default true),
// enable_crawl (default false), enable_map (default false), enable_search
// (default true) — at least one must be on —, poll_interval_seconds
// (default 2), max_wait_seconds (default 120), max_result_chars (default
// 20000), and the network keys of [toolkit.Network] (base_url defaults to
// https://api.anakin.io/v1).
//
// Requests carry the key in the X-API-Key header, as Anakin documents it,
// and as a bearer token, as Agno's toolkit sends it.
package anakin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// Name is the toolkit's name, as config files list it.
const Name = "anakin"

// The tools' names.
const (
	ScrapeURLName    = "scrape_url"
	CrawlWebsiteName = "crawl_website"
	MapWebsiteName   = "map_website"
	SearchWebName    = "search_web"
)

// Names lists the toolkit's tools, in order.
func Names() []string {
	return []string{ScrapeURLName, CrawlWebsiteName, MapWebsiteName, SearchWebName}
}

// Defaults of [Config].
const (
	// DefaultBaseURL is Anakin's API, as Agno's toolkit has it.
	DefaultBaseURL = "https://api.anakin.io/v1"
	// DefaultPollInterval is the wait between two reads of a job's status.
	DefaultPollInterval = 2 * time.Second
	// DefaultMaxWait bounds the wait for one job.
	DefaultMaxWait = 120 * time.Second
	// DefaultMaxResultChars bounds the text one call returns to the model.
	DefaultMaxResultChars = 20000
	// EnvAPIKey is the environment variable api_key falls back to.
	EnvAPIKey = "ANAKIN_API_KEY"
)

// Config is the toolkit's settings, from Go or from a config file's
// mapping.
type Config struct {
	// APIKey is the Anakin API key. Defaults to the ANAKIN_API_KEY
	// environment variable; one of the two is required.
	APIKey string `json:"api_key,omitempty"`
	// EnableScrape gives the model scrape_url. Defaults to true.
	EnableScrape *bool `json:"enable_scrape,omitempty"`
	// EnableCrawl gives the model crawl_website. Defaults to false.
	EnableCrawl *bool `json:"enable_crawl,omitempty"`
	// EnableMap gives the model map_website. Defaults to false.
	EnableMap *bool `json:"enable_map,omitempty"`
	// EnableSearch gives the model search_web. Defaults to true.
	EnableSearch *bool `json:"enable_search,omitempty"`
	// PollIntervalSeconds is the wait between two reads of a job's status.
	// Defaults to 2 ([DefaultPollInterval]).
	PollIntervalSeconds float64 `json:"poll_interval_seconds,omitempty"`
	// MaxWaitSeconds bounds the wait for one job; a job still running then
	// is reported as a timeout. Defaults to 120 ([DefaultMaxWait]).
	MaxWaitSeconds float64 `json:"max_wait_seconds,omitempty"`
	// MaxResultChars bounds the text one call returns; longer content is
	// cut with a note. Defaults to 20000 ([DefaultMaxResultChars]).
	MaxResultChars int `json:"max_result_chars,omitempty"`
	// Network is where the API is (base_url, default
	// https://api.anakin.io/v1) and which addresses the toolkit may reach.
	toolkit.Network
	// Getenv reads the environment for the key's fallback. Defaults to
	// os.Getenv.
	Getenv func(string) string `json:"-"`
}

// kit is a configured toolkit; its tools share it. It is immutable.
type kit struct {
	apiKey         string
	base           string
	network        toolkit.Network
	client         *http.Client
	pollInterval   time.Duration
	maxWait        time.Duration
	maxResultChars int
}

// flag is b's value, or def when b is nil.
func flag(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// New checks cfg and builds the toolkit. It does no I/O: the API is first
// reached by a tool call.
func New(cfg Config) (*toolkit.Toolkit, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	apiKey := cmp.Or(cfg.APIKey, getenv(EnvAPIKey))
	var errs []error
	if apiKey == "" {
		errs = append(errs, fmt.Errorf("api_key is required: set it, or the %s environment variable", EnvAPIKey))
	}
	scrape, crawl := flag(cfg.EnableScrape, true), flag(cfg.EnableCrawl, false)
	mapSite, search := flag(cfg.EnableMap, false), flag(cfg.EnableSearch, true)
	if !scrape && !crawl && !mapSite && !search {
		errs = append(errs, errors.New("enable_scrape, enable_crawl, enable_map and enable_search are all false: enable at least one"))
	}
	if cfg.PollIntervalSeconds < 0 {
		errs = append(errs, fmt.Errorf("poll_interval_seconds: %v is negative", cfg.PollIntervalSeconds))
	}
	if cfg.MaxWaitSeconds < 0 {
		errs = append(errs, fmt.Errorf("max_wait_seconds: %v is negative", cfg.MaxWaitSeconds))
	}
	if cfg.MaxResultChars < 0 {
		errs = append(errs, fmt.Errorf("max_result_chars: %d is negative", cfg.MaxResultChars))
	}
	if err := cfg.Network.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	k := &kit{
		apiKey:         apiKey,
		base:           cfg.Network.Base(DefaultBaseURL),
		network:        cfg.Network,
		client:         cfg.Network.Client(),
		pollInterval:   seconds(cfg.PollIntervalSeconds, DefaultPollInterval),
		maxWait:        seconds(cfg.MaxWaitSeconds, DefaultMaxWait),
		maxResultChars: cmp.Or(cfg.MaxResultChars, DefaultMaxResultChars),
	}
	var tools []tool.Tool
	add := func(on bool, build func() (tool.Tool, error)) {
		if !on {
			return
		}
		t, err := build()
		if err != nil {
			errs = append(errs, err)
			return
		}
		tools = append(tools, t)
	}
	add(scrape, k.scrapeTool)
	add(crawl, k.crawlTool)
	add(mapSite, k.mapTool)
	add(search, k.searchTool)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &toolkit.Toolkit{
		Name:  Name,
		Tools: tools,
		Instructions: "The Anakin tools fetch live web content. They wait for Anakin's jobs to finish, " +
			"which can take a while; call them once per page or site rather than repeatedly.",
	}, nil
}

// seconds is s seconds, or def when s is 0.
func seconds(s float64, def time.Duration) time.Duration {
	if s == 0 {
		return def
	}
	return time.Duration(s * float64(time.Second))
}

// Definition declares the toolkit for config files.
func Definition() toolkit.Definition {
	return toolkit.Define(Name,
		"Anakin (anakin.io) web scraping: a page as Markdown, a site's pages, a site's links and web search.",
		Names(), func(_ context.Context, cfg Config) (*toolkit.Toolkit, error) { return New(cfg) })
}
