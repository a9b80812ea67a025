// Package github is the GitHub toolkit: GitHub's REST API (v3) through
// net/http, for a model that searches repositories, issues and pull
// requests, reads them and files, and — with a person's confirmation —
// opens issues and comments on them.
//
// Tools: search_repositories, search_issues (issues and pull requests, in
// GitHub's search syntax), get_issue (with its first comments on request),
// list_issues, create_issue, comment_on_issue, get_pull_request (with its
// changed files), list_pull_requests and get_file_contents (a file's text,
// or a directory's entries). create_issue and comment_on_issue pause the
// run for a person's confirmation unless confirm_writes is false.
//
// Settings ([Config]): token (falls back to the GITHUB_TOKEN environment
// variable; optional — public repositories can be read without one, at a
// lower rate limit), default_owner and default_repo (used when the model
// names no repository), confirm_writes (default true), max_body_chars
// (default 4000) and max_file_chars (default 20000), and the network keys
// of [toolkit.Network]: base_url defaults to https://api.github.com; for
// GitHub Enterprise Server set it to https://HOST/api/v3.
//
// Every request sends Accept: application/vnd.github+json and
// X-GitHub-Api-Version: 2022-11-28, and Authorization: Bearer TOKEN when
// there is a token. GitHub's 403 with x-ratelimit-remaining: 0, like its
// 429, is a rate_limit [*toolkit.Error].
package github

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// Name is the toolkit's name, as config files list it.
const Name = "github"

// The tools' names.
const (
	SearchRepositoriesName = "search_repositories"
	SearchIssuesName       = "search_issues"
	GetIssueName           = "get_issue"
	ListIssuesName         = "list_issues"
	CreateIssueName        = "create_issue"
	CommentOnIssueName     = "comment_on_issue"
	GetPullRequestName     = "get_pull_request"
	ListPullRequestsName   = "list_pull_requests"
	GetFileContentsName    = "get_file_contents"
)

// Names lists the toolkit's tools, in order.
func Names() []string {
	return []string{SearchRepositoriesName, SearchIssuesName, GetIssueName, ListIssuesName, CreateIssueName,
		CommentOnIssueName, GetPullRequestName, ListPullRequestsName, GetFileContentsName}
}

// Defaults of [Config].
const (
	// DefaultBaseURL is GitHub's public REST API.
	DefaultBaseURL = "https://api.github.com"
	// DefaultMaxBodyChars bounds an issue's, a pull request's or a
	// comment's body in a result.
	DefaultMaxBodyChars = 4000
	// DefaultMaxFileChars bounds the text get_file_contents returns.
	DefaultMaxFileChars = 20000
	// EnvToken is the environment variable token falls back to.
	EnvToken = "GITHUB_TOKEN"
	// APIVersion is the REST API version every request asks for.
	APIVersion = "2022-11-28"
)

// Config is the toolkit's settings, from Go or from a config file's
// mapping.
type Config struct {
	// Token is a GitHub token (personal access token, fine-grained or an
	// app's installation token). Defaults to the GITHUB_TOKEN environment
	// variable; optional: without one, public data can be read at
	// GitHub's unauthenticated rate limit, and writing fails.
	Token string `json:"token,omitempty"`
	// DefaultOwner is the repository owner (user or organisation) used
	// when a call names none. Defaults to none.
	DefaultOwner string `json:"default_owner,omitempty"`
	// DefaultRepo is the repository used when a call names none. Defaults
	// to none.
	DefaultRepo string `json:"default_repo,omitempty"`
	// ConfirmWrites makes create_issue and comment_on_issue pause the run
	// for a person's confirmation before each call. Defaults to true.
	ConfirmWrites *bool `json:"confirm_writes,omitempty"`
	// MaxBodyChars bounds each issue, pull request or comment body in a
	// result; longer ones are cut with a note. Defaults to 4000
	// ([DefaultMaxBodyChars]).
	MaxBodyChars int `json:"max_body_chars,omitempty"`
	// MaxFileChars bounds the text get_file_contents returns; a longer
	// file is cut with a note. Defaults to 20000 ([DefaultMaxFileChars]).
	MaxFileChars int `json:"max_file_chars,omitempty"`
	// Network is where the API is (base_url, default
	// https://api.github.com; https://HOST/api/v3 for GitHub Enterprise
	// Server) and which addresses the toolkit may reach.
	toolkit.Network
	// Getenv reads the environment for the token's fallback. Defaults to
	// os.Getenv.
	Getenv func(string) string `json:"-"`
}

// namePattern is what GitHub allows in an owner's or a repository's name.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// kit is a configured toolkit; its tools share it. It is immutable.
type kit struct {
	token        string
	base         string
	network      toolkit.Network
	client       *http.Client
	owner, repo  string
	maxBodyChars int
	maxFileChars int
}

// New checks cfg and builds the toolkit. It does no I/O: GitHub is first
// reached by a tool call.
func New(cfg Config) (*toolkit.Toolkit, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var errs []error
	if cfg.DefaultOwner != "" && !validName(cfg.DefaultOwner) {
		errs = append(errs, fmt.Errorf("default_owner: %q is not a GitHub user or organisation name", cfg.DefaultOwner))
	}
	if cfg.DefaultRepo != "" && !validName(cfg.DefaultRepo) {
		errs = append(errs, fmt.Errorf("default_repo: %q is not a repository name (give the owner in default_owner)", cfg.DefaultRepo))
	}
	if cfg.MaxBodyChars < 0 {
		errs = append(errs, fmt.Errorf("max_body_chars: %d is negative", cfg.MaxBodyChars))
	}
	if cfg.MaxFileChars < 0 {
		errs = append(errs, fmt.Errorf("max_file_chars: %d is negative", cfg.MaxFileChars))
	}
	if err := cfg.Network.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	k := &kit{
		token:        cmp.Or(cfg.Token, getenv(EnvToken)),
		base:         cfg.Network.Base(DefaultBaseURL),
		network:      cfg.Network,
		client:       cfg.Network.Client(),
		owner:        cfg.DefaultOwner,
		repo:         cfg.DefaultRepo,
		maxBodyChars: cmp.Or(cfg.MaxBodyChars, DefaultMaxBodyChars),
		maxFileChars: cmp.Or(cfg.MaxFileChars, DefaultMaxFileChars),
	}
	tools, err := k.tools(cfg.ConfirmWrites == nil || *cfg.ConfirmWrites)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	instructions := "The GitHub tools read GitHub's repositories, issues, pull requests and files. " +
		"search_issues takes GitHub's search syntax, e.g. repo:OWNER/NAME is:issue is:open label:bug."
	if k.owner != "" && k.repo != "" {
		instructions += fmt.Sprintf(" When no repository is named, the tools use %s/%s.", k.owner, k.repo)
	}
	return &toolkit.Toolkit{Name: Name, Tools: tools, Instructions: instructions}, nil
}

// validName reports an owner or repository name GitHub could have.
func validName(s string) bool {
	return namePattern.MatchString(s) && s != "." && s != ".."
}

// Definition declares the toolkit for config files.
func Definition() toolkit.Definition {
	return toolkit.Define(Name,
		"GitHub's REST API: search repositories, issues and pull requests; read them and files; open issues and comment.",
		Names(), func(_ context.Context, cfg Config) (*toolkit.Toolkit, error) { return New(cfg) })
}

// tools builds the toolkit's tools; confirm flags the writing ones.
func (k *kit) tools(confirm bool) ([]tool.Tool, error) {
	var tools []tool.Tool
	var errs []error
	add := func(t tool.Tool, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		tools = append(tools, t)
	}
	add(tool.New(tool.Config{Name: SearchRepositoriesName,
		Description: "Search GitHub repositories with GitHub's search syntax, e.g. 'vector database language:go stars:>500'. " +
			"Returns each repository's full name, description, stars and language."}, k.searchRepositories))
	add(tool.New(tool.Config{Name: SearchIssuesName,
		Description: "Search GitHub issues and pull requests with GitHub's search syntax, e.g. " +
			"'repo:golang/go is:issue is:open label:NeedsFix context'. Add is:issue or is:pr to get only one kind."}, k.searchIssues))
	add(tool.New(tool.Config{Name: GetIssueName,
		Description: "Read one issue (or pull request) by number: title, state, author, labels, body, comment count, " +
			"and its first comments when include_comments is true."}, k.getIssue))
	add(tool.New(tool.Config{Name: ListIssuesName,
		Description: "List a repository's issues (not pull requests), most recently created first, " +
			"filtered by state and labels."}, k.listIssues))
	add(tool.New(tool.Config{Name: CreateIssueName, RequiresConfirmation: confirm,
		Description: "Open a new issue in a repository, with a title, a Markdown body, and optional labels and assignees."}, k.createIssue))
	add(tool.New(tool.Config{Name: CommentOnIssueName, RequiresConfirmation: confirm,
		Description: "Add a Markdown comment to an issue or a pull request."}, k.commentOnIssue))
	add(tool.New(tool.Config{Name: GetPullRequestName,
		Description: "Read one pull request by number: title, state, branches, body, size, and the list of changed files."}, k.getPullRequest))
	add(tool.New(tool.Config{Name: ListPullRequestsName,
		Description: "List a repository's pull requests, most recently created first, filtered by state."}, k.listPullRequests))
	add(tool.New(tool.Config{Name: GetFileContentsName,
		Description: "Read a file of a repository as text, at a branch, tag or commit (the default branch when ref is left out). " +
			"For a directory, lists its entries."}, k.getFileContents))
	return tools, errors.Join(errs...)
}
