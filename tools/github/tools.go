package github

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the model's arguments and of results.
const (
	defaultSearchLimit   = 10
	defaultListLimit     = 20
	defaultCommentsLimit = 5
	maxCommentsLimit     = 30
	maxDescriptionChars  = 300
	maxPullFiles         = 100
)

// repoArgs name a repository; both may be left out when the toolkit has
// defaults.
type repoArgs struct {
	Owner string `json:"owner,omitempty" jsonschema:"the repository's owner, a user or an organisation; the toolkit's default when left out"`
	Repo  string `json:"repo,omitempty" jsonschema:"the repository's name, or OWNER/NAME; the toolkit's default when left out"`
}

// GitHub's answers, as far as the tools read them.
type (
	ghUser struct {
		Login string `json:"login"`
	}
	ghLabel struct {
		Name string `json:"name"`
	}
	ghIssue struct {
		Number        int       `json:"number"`
		Title         string    `json:"title"`
		State         string    `json:"state"`
		StateReason   string    `json:"state_reason"`
		Body          string    `json:"body"`
		User          ghUser    `json:"user"`
		Labels        []ghLabel `json:"labels"`
		Assignees     []ghUser  `json:"assignees"`
		Comments      int       `json:"comments"`
		HTMLURL       string    `json:"html_url"`
		RepositoryURL string    `json:"repository_url"`
		CreatedAt     string    `json:"created_at"`
		UpdatedAt     string    `json:"updated_at"`
		ClosedAt      string    `json:"closed_at"`
		PullRequest   *struct{} `json:"pull_request"`
	}
	ghComment struct {
		ID        int64  `json:"id"`
		User      ghUser `json:"user"`
		Body      string `json:"body"`
		HTMLURL   string `json:"html_url"`
		CreatedAt string `json:"created_at"`
	}
	ghRef struct {
		Ref   string `json:"ref"`
		Label string `json:"label"`
	}
	ghPull struct {
		Number       int       `json:"number"`
		Title        string    `json:"title"`
		State        string    `json:"state"`
		Draft        bool      `json:"draft"`
		Merged       bool      `json:"merged"`
		MergedAt     string    `json:"merged_at"`
		Body         string    `json:"body"`
		User         ghUser    `json:"user"`
		Labels       []ghLabel `json:"labels"`
		Base         ghRef     `json:"base"`
		Head         ghRef     `json:"head"`
		HTMLURL      string    `json:"html_url"`
		CreatedAt    string    `json:"created_at"`
		UpdatedAt    string    `json:"updated_at"`
		Comments     int       `json:"comments"`
		Commits      int       `json:"commits"`
		Additions    int       `json:"additions"`
		Deletions    int       `json:"deletions"`
		ChangedFiles int       `json:"changed_files"`
	}
	ghFile struct {
		Filename  string `json:"filename"`
		Status    string `json:"status"`
		Additions int    `json:"additions"`
		Deletions int    `json:"deletions"`
	}
)

func labelNames(labels []ghLabel) []string {
	var names []string
	for _, l := range labels {
		names = append(names, l.Name)
	}
	return names
}

// issueItem is an issue or pull request in a list.
type issueItem struct {
	Repository  string   `json:"repository,omitempty"`
	Number      int      `json:"number"`
	Title       string   `json:"title"`
	State       string   `json:"state"`
	PullRequest bool     `json:"pull_request,omitempty"`
	Author      string   `json:"author"`
	Labels      []string `json:"labels,omitempty"`
	Comments    int      `json:"comments"`
	URL         string   `json:"url"`
	UpdatedAt   string   `json:"updated_at"`
}

func itemOf(i ghIssue) issueItem {
	repo := ""
	if _, after, ok := strings.Cut(i.RepositoryURL, "/repos/"); ok {
		repo = after
	}
	return issueItem{Repository: repo, Number: i.Number, Title: i.Title, State: i.State, PullRequest: i.PullRequest != nil,
		Author: i.User.Login, Labels: labelNames(i.Labels), Comments: i.Comments, URL: i.HTMLURL, UpdatedAt: i.UpdatedAt}
}

// searchRepositories

type searchReposArgs struct {
	Query string `json:"query" jsonschema:"GitHub repository search, e.g. 'http router language:go stars:>1000' or 'org:kubernetes topic:cli'"`
	Sort  string `json:"sort,omitempty" jsonschema:"stars, forks, help-wanted-issues or updated; best match when left out"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many repositories, 1 to 100; 10 when left out"`
}

type repoItem struct {
	FullName    string   `json:"full_name"`
	Description string   `json:"description,omitempty"`
	URL         string   `json:"url"`
	Stars       int      `json:"stars"`
	Forks       int      `json:"forks"`
	Language    string   `json:"language,omitempty"`
	Topics      []string `json:"topics,omitempty"`
	Archived    bool     `json:"archived,omitempty"`
	UpdatedAt   string   `json:"updated_at"`
}

type repoSearch struct {
	TotalCount int        `json:"total_count"`
	Items      []repoItem `json:"items"`
}

func (k *kit) searchRepositories(ctx context.Context, a searchReposArgs) (repoSearch, error) {
	if strings.TrimSpace(a.Query) == "" {
		return repoSearch{}, badRequest("query is empty")
	}
	q := url.Values{"q": {a.Query}, "per_page": {strconv.Itoa(perPage(a.Limit, defaultSearchLimit))}}
	if a.Sort != "" {
		q.Set("sort", a.Sort)
		q.Set("order", "desc")
	}
	var answer struct {
		TotalCount int `json:"total_count"`
		Items      []struct {
			FullName        string   `json:"full_name"`
			Description     string   `json:"description"`
			HTMLURL         string   `json:"html_url"`
			StargazersCount int      `json:"stargazers_count"`
			ForksCount      int      `json:"forks_count"`
			Language        string   `json:"language"`
			Topics          []string `json:"topics"`
			Archived        bool     `json:"archived"`
			UpdatedAt       string   `json:"updated_at"`
		} `json:"items"`
	}
	if err := k.do(ctx, http.MethodGet, "/search/repositories", q, nil, &answer); err != nil {
		return repoSearch{}, err
	}
	out := repoSearch{TotalCount: answer.TotalCount, Items: []repoItem{}}
	for _, r := range answer.Items {
		out.Items = append(out.Items, repoItem{FullName: r.FullName, Description: cut(r.Description, maxDescriptionChars),
			URL: r.HTMLURL, Stars: r.StargazersCount, Forks: r.ForksCount, Language: r.Language, Topics: r.Topics,
			Archived: r.Archived, UpdatedAt: r.UpdatedAt})
	}
	return out, nil
}

// searchIssues

type searchIssuesArgs struct {
	Query string `json:"query" jsonschema:"GitHub issue search, e.g. 'repo:OWNER/NAME is:issue is:open label:bug crash' or 'author:USER is:pr is:merged'"`
	Sort  string `json:"sort,omitempty" jsonschema:"comments, reactions, created or updated; best match when left out"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many results, 1 to 100; 10 when left out"`
}

type issueSearch struct {
	TotalCount int         `json:"total_count"`
	Items      []issueItem `json:"items"`
}

func (k *kit) searchIssues(ctx context.Context, a searchIssuesArgs) (issueSearch, error) {
	if strings.TrimSpace(a.Query) == "" {
		return issueSearch{}, badRequest("query is empty")
	}
	q := url.Values{"q": {a.Query}, "per_page": {strconv.Itoa(perPage(a.Limit, defaultSearchLimit))}, "advanced_search": {"true"}}
	if a.Sort != "" {
		q.Set("sort", a.Sort)
		q.Set("order", "desc")
	}
	var answer struct {
		TotalCount int       `json:"total_count"`
		Items      []ghIssue `json:"items"`
	}
	if err := k.do(ctx, http.MethodGet, "/search/issues", q, nil, &answer); err != nil {
		return issueSearch{}, err
	}
	out := issueSearch{TotalCount: answer.TotalCount, Items: []issueItem{}}
	for _, i := range answer.Items {
		out.Items = append(out.Items, itemOf(i))
	}
	return out, nil
}

// getIssue

type getIssueArgs struct {
	repoArgs
	Number          int  `json:"number" jsonschema:"the issue's (or pull request's) number"`
	IncludeComments bool `json:"include_comments,omitempty" jsonschema:"also return the issue's first comments"`
	CommentsLimit   int  `json:"comments_limit,omitempty" jsonschema:"how many of the first comments to return, 1 to 30; 5 when left out"`
}

type commentItem struct {
	Author    string `json:"author"`
	CreatedAt string `json:"created_at"`
	Body      string `json:"body"`
}

type issueDetail struct {
	Repository   string        `json:"repository"`
	Number       int           `json:"number"`
	Title        string        `json:"title"`
	State        string        `json:"state"`
	StateReason  string        `json:"state_reason,omitempty"`
	PullRequest  bool          `json:"pull_request,omitempty"`
	Author       string        `json:"author"`
	Labels       []string      `json:"labels,omitempty"`
	Assignees    []string      `json:"assignees,omitempty"`
	CommentCount int           `json:"comments"`
	CreatedAt    string        `json:"created_at,omitempty"`
	ClosedAt     string        `json:"closed_at,omitempty"`
	URL          string        `json:"url"`
	Body         string        `json:"body"`
	FirstComment []commentItem `json:"first_comments,omitempty"`
}

func (k *kit) getIssue(ctx context.Context, a getIssueArgs) (issueDetail, error) {
	base, name, err := k.repoPath(a.Owner, a.Repo)
	if err != nil {
		return issueDetail{}, err
	}
	if a.Number <= 0 {
		return issueDetail{}, badRequest("number must be an issue number, 1 or more")
	}
	path := base + "/issues/" + strconv.Itoa(a.Number)
	var i ghIssue
	if err := k.do(ctx, http.MethodGet, path, nil, nil, &i); err != nil {
		return issueDetail{}, err
	}
	out := issueDetail{Repository: name, Number: i.Number, Title: i.Title, State: i.State, StateReason: i.StateReason,
		PullRequest: i.PullRequest != nil, Author: i.User.Login, Labels: labelNames(i.Labels), CommentCount: i.Comments,
		CreatedAt: i.CreatedAt, ClosedAt: i.ClosedAt, URL: i.HTMLURL, Body: cut(i.Body, k.maxBodyChars)}
	for _, u := range i.Assignees {
		out.Assignees = append(out.Assignees, u.Login)
	}
	if a.IncludeComments && i.Comments > 0 {
		limit := a.CommentsLimit
		switch {
		case limit <= 0:
			limit = defaultCommentsLimit
		case limit > maxCommentsLimit:
			limit = maxCommentsLimit
		}
		var comments []ghComment
		if err := k.do(ctx, http.MethodGet, path+"/comments", url.Values{"per_page": {strconv.Itoa(limit)}}, nil, &comments); err != nil {
			return issueDetail{}, err
		}
		for _, c := range comments {
			out.FirstComment = append(out.FirstComment, commentItem{Author: c.User.Login, CreatedAt: c.CreatedAt, Body: cut(c.Body, k.maxBodyChars)})
		}
	}
	return out, nil
}

// listIssues

type listIssuesArgs struct {
	repoArgs
	State  string   `json:"state,omitempty" jsonschema:"open, closed or all; open when left out"`
	Labels []string `json:"labels,omitempty" jsonschema:"only issues carrying all these labels"`
	Limit  int      `json:"limit,omitempty" jsonschema:"how many issues, 1 to 100; 20 when left out"`
}

type issueList struct {
	Repository string      `json:"repository"`
	State      string      `json:"state"`
	Issues     []issueItem `json:"issues"`
}

// state checks a state argument.
func state(s string) (string, error) {
	switch s {
	case "":
		return "open", nil
	case "open", "closed", "all":
		return s, nil
	}
	return "", badRequest("state %q: want open, closed or all", s)
}

func (k *kit) listIssues(ctx context.Context, a listIssuesArgs) (issueList, error) {
	base, name, err := k.repoPath(a.Owner, a.Repo)
	if err != nil {
		return issueList{}, err
	}
	st, err := state(a.State)
	if err != nil {
		return issueList{}, err
	}
	q := url.Values{"state": {st}, "per_page": {strconv.Itoa(perPage(a.Limit, defaultListLimit))}}
	if len(a.Labels) > 0 {
		q.Set("labels", strings.Join(a.Labels, ","))
	}
	var answer []ghIssue
	if err := k.do(ctx, http.MethodGet, base+"/issues", q, nil, &answer); err != nil {
		return issueList{}, err
	}
	out := issueList{Repository: name, State: st, Issues: []issueItem{}}
	for _, i := range answer {
		if i.PullRequest != nil {
			continue // GitHub lists pull requests among issues; list_pull_requests has them.
		}
		item := itemOf(i)
		item.Repository = ""
		out.Issues = append(out.Issues, item)
	}
	return out, nil
}

// createIssue

type createIssueArgs struct {
	repoArgs
	Title     string   `json:"title" jsonschema:"the issue's title"`
	Body      string   `json:"body,omitempty" jsonschema:"the issue's description, in Markdown"`
	Labels    []string `json:"labels,omitempty" jsonschema:"labels to put on the issue; they must exist in the repository"`
	Assignees []string `json:"assignees,omitempty" jsonschema:"logins of the people to assign"`
}

type created struct {
	Repository string `json:"repository"`
	Number     int    `json:"number"`
	Title      string `json:"title,omitempty"`
	URL        string `json:"url"`
	CommentID  int64  `json:"comment_id,omitempty"`
}

func (k *kit) createIssue(ctx context.Context, a createIssueArgs) (created, error) {
	base, name, err := k.repoPath(a.Owner, a.Repo)
	if err != nil {
		return created{}, err
	}
	if strings.TrimSpace(a.Title) == "" {
		return created{}, badRequest("title is empty")
	}
	body := map[string]any{"title": a.Title}
	if a.Body != "" {
		body["body"] = a.Body
	}
	if len(a.Labels) > 0 {
		body["labels"] = a.Labels
	}
	if len(a.Assignees) > 0 {
		body["assignees"] = a.Assignees
	}
	var i ghIssue
	if err := k.do(ctx, http.MethodPost, base+"/issues", nil, body, &i); err != nil {
		return created{}, err
	}
	return created{Repository: name, Number: i.Number, Title: i.Title, URL: i.HTMLURL}, nil
}

// commentOnIssue

type commentArgs struct {
	repoArgs
	Number int    `json:"number" jsonschema:"the issue's or pull request's number"`
	Body   string `json:"body" jsonschema:"the comment, in Markdown"`
}

func (k *kit) commentOnIssue(ctx context.Context, a commentArgs) (created, error) {
	base, name, err := k.repoPath(a.Owner, a.Repo)
	if err != nil {
		return created{}, err
	}
	if a.Number <= 0 {
		return created{}, badRequest("number must be an issue number, 1 or more")
	}
	if strings.TrimSpace(a.Body) == "" {
		return created{}, badRequest("body is empty")
	}
	var c ghComment
	if err := k.do(ctx, http.MethodPost, base+"/issues/"+strconv.Itoa(a.Number)+"/comments", nil, map[string]any{"body": a.Body}, &c); err != nil {
		return created{}, err
	}
	return created{Repository: name, Number: a.Number, URL: c.HTMLURL, CommentID: c.ID}, nil
}

// getPullRequest

type getPullArgs struct {
	repoArgs
	Number int `json:"number" jsonschema:"the pull request's number"`
}

type fileItem struct {
	Filename  string `json:"filename"`
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
}

type pullDetail struct {
	Repository   string     `json:"repository"`
	Number       int        `json:"number"`
	Title        string     `json:"title"`
	State        string     `json:"state"`
	Draft        bool       `json:"draft,omitempty"`
	Merged       bool       `json:"merged"`
	MergedAt     string     `json:"merged_at,omitempty"`
	Author       string     `json:"author"`
	Labels       []string   `json:"labels,omitempty"`
	Base         string     `json:"base"`
	Head         string     `json:"head"`
	Commits      int        `json:"commits"`
	Additions    int        `json:"additions"`
	Deletions    int        `json:"deletions"`
	ChangedFiles int        `json:"changed_files"`
	Comments     int        `json:"comments"`
	CreatedAt    string     `json:"created_at,omitempty"`
	URL          string     `json:"url"`
	Body         string     `json:"body"`
	Files        []fileItem `json:"files"`
	Note         string     `json:"note,omitempty"`
}

func (k *kit) getPullRequest(ctx context.Context, a getPullArgs) (pullDetail, error) {
	base, name, err := k.repoPath(a.Owner, a.Repo)
	if err != nil {
		return pullDetail{}, err
	}
	if a.Number <= 0 {
		return pullDetail{}, badRequest("number must be a pull request number, 1 or more")
	}
	path := base + "/pulls/" + strconv.Itoa(a.Number)
	var p ghPull
	if err := k.do(ctx, http.MethodGet, path, nil, nil, &p); err != nil {
		return pullDetail{}, err
	}
	var files []ghFile
	if err := k.do(ctx, http.MethodGet, path+"/files", url.Values{"per_page": {strconv.Itoa(maxPullFiles)}}, nil, &files); err != nil {
		return pullDetail{}, err
	}
	out := pullDetail{Repository: name, Number: p.Number, Title: p.Title, State: p.State, Draft: p.Draft, Merged: p.Merged,
		MergedAt: p.MergedAt, Author: p.User.Login, Labels: labelNames(p.Labels), Base: p.Base.Ref, Head: p.Head.Label,
		Commits: p.Commits, Additions: p.Additions, Deletions: p.Deletions, ChangedFiles: p.ChangedFiles, Comments: p.Comments,
		CreatedAt: p.CreatedAt, URL: p.HTMLURL, Body: cut(p.Body, k.maxBodyChars), Files: []fileItem{}}
	for _, f := range files {
		out.Files = append(out.Files, fileItem(f))
	}
	if p.ChangedFiles > len(out.Files) {
		out.Note = fmt.Sprintf("the first %d of %d changed files are listed", len(out.Files), p.ChangedFiles)
	}
	return out, nil
}

// listPullRequests

type listPullsArgs struct {
	repoArgs
	State string `json:"state,omitempty" jsonschema:"open, closed or all; open when left out"`
	Base  string `json:"base,omitempty" jsonschema:"only pull requests into this branch"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many pull requests, 1 to 100; 20 when left out"`
}

type pullItem struct {
	Number    int      `json:"number"`
	Title     string   `json:"title"`
	State     string   `json:"state"`
	Draft     bool     `json:"draft,omitempty"`
	Author    string   `json:"author"`
	Labels    []string `json:"labels,omitempty"`
	Base      string   `json:"base"`
	Head      string   `json:"head"`
	MergedAt  string   `json:"merged_at,omitempty"`
	URL       string   `json:"url"`
	UpdatedAt string   `json:"updated_at"`
}

type pullList struct {
	Repository   string     `json:"repository"`
	State        string     `json:"state"`
	PullRequests []pullItem `json:"pull_requests"`
}

func (k *kit) listPullRequests(ctx context.Context, a listPullsArgs) (pullList, error) {
	base, name, err := k.repoPath(a.Owner, a.Repo)
	if err != nil {
		return pullList{}, err
	}
	st, err := state(a.State)
	if err != nil {
		return pullList{}, err
	}
	q := url.Values{"state": {st}, "per_page": {strconv.Itoa(perPage(a.Limit, defaultListLimit))}}
	if a.Base != "" {
		q.Set("base", a.Base)
	}
	var answer []ghPull
	if err := k.do(ctx, http.MethodGet, base+"/pulls", q, nil, &answer); err != nil {
		return pullList{}, err
	}
	out := pullList{Repository: name, State: st, PullRequests: []pullItem{}}
	for _, p := range answer {
		out.PullRequests = append(out.PullRequests, pullItem{Number: p.Number, Title: p.Title, State: p.State, Draft: p.Draft,
			Author: p.User.Login, Labels: labelNames(p.Labels), Base: p.Base.Ref, Head: p.Head.Label, MergedAt: p.MergedAt,
			URL: p.HTMLURL, UpdatedAt: p.UpdatedAt})
	}
	return out, nil
}

// getFileContents

type fileArgs struct {
	repoArgs
	Path string `json:"path" jsonschema:"the file's or directory's path in the repository, e.g. README.md or cmd/server; empty for the root"`
	Ref  string `json:"ref,omitempty" jsonschema:"a branch, tag or commit SHA; the default branch when left out"`
}

type ghContent struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
	Target   string `json:"target"`
	HTMLURL  string `json:"html_url"`
}

func (k *kit) getFileContents(ctx context.Context, a fileArgs) (string, error) {
	base, name, err := k.repoPath(a.Owner, a.Repo)
	if err != nil {
		return "", err
	}
	var segments []string
	for _, s := range strings.Split(strings.Trim(a.Path, "/"), "/") {
		switch s {
		case "", ".":
			continue
		case "..":
			return "", badRequest("path %q: '..' is not allowed", a.Path)
		}
		segments = append(segments, url.PathEscape(s))
	}
	var q url.Values
	if a.Ref != "" {
		q = url.Values{"ref": {a.Ref}}
	}
	var raw json.RawMessage
	if err := k.do(ctx, http.MethodGet, base+"/contents/"+strings.Join(segments, "/"), q, nil, &raw); err != nil {
		return "", err
	}
	at := name
	if a.Ref != "" {
		at += "@" + a.Ref
	}
	if trimmed := strings.TrimSpace(string(raw)); strings.HasPrefix(trimmed, "[") {
		var entries []ghContent
		if err := json.Unmarshal(raw, &entries); err != nil {
			return "", badRequest("the directory listing is not the JSON expected: %v", err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Directory /%s of %s (%d entries):\n", strings.Trim(a.Path, "/"), at, len(entries))
		for _, e := range entries {
			switch e.Type {
			case "dir":
				fmt.Fprintf(&b, "%s/\n", e.Name)
			case "file":
				fmt.Fprintf(&b, "%s (%d bytes)\n", e.Name, e.Size)
			default:
				fmt.Fprintf(&b, "%s (%s)\n", e.Name, e.Type)
			}
		}
		return cut(b.String(), k.maxFileChars), nil
	}
	var c ghContent
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", badRequest("the answer is not the JSON expected: %v", err)
	}
	switch c.Type {
	case "file":
	case "symlink":
		return fmt.Sprintf("%s in %s is a symbolic link to %s.", c.Path, at, c.Target), nil
	case "submodule":
		return fmt.Sprintf("%s in %s is a git submodule.", c.Path, at), nil
	default:
		return fmt.Sprintf("%s in %s is a %s, not a file.", c.Path, at, c.Type), nil
	}
	if c.Encoding != "base64" {
		return fmt.Sprintf("%s in %s is %d bytes, too large for GitHub's contents API to return (see %s).", c.Path, at, c.Size, c.HTMLURL), nil
	}
	data, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(c.Content, "\n", ""))
	if err != nil {
		return "", badRequest("the file's content is not valid base64: %v", err)
	}
	if !utf8.Valid(data) || strings.ContainsRune(string(data), 0) {
		return fmt.Sprintf("%s in %s is a binary file of %d bytes; it is not shown.", c.Path, at, len(data)), nil
	}
	return cut(fmt.Sprintf("%s in %s (%d bytes):\n\n%s", c.Path, at, len(data), data), k.maxFileChars), nil
}
