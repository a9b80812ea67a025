package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/toolkit"
)

// do sends one request to GitHub's API and decodes its JSON answer into
// out (when not nil). path is below base_url and already escaped. A
// failure is an [*toolkit.Error].
func (k *kit) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	target := k.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	header := http.Header{"Accept": {"application/vnd.github+json"}, "X-Github-Api-Version": {APIVersion}, "User-Agent": {"agnogo-github-toolkit"}}
	if k.token != "" {
		header.Set("Authorization", "Bearer "+k.token)
	}
	return toolkit.DoJSON(ctx, k.client, Name, toolkit.Request{Method: method, URL: target, Header: header, Body: body,
		StatusError: func(resp *http.Response, data []byte) error { return k.statusError(resp, data) }}, k.network.MaxBytes(), out)
}

// statusError is the error of GitHub's HTTP error answer: its message and
// validation errors, a 403 with no requests left read as a rate limit,
// and a hint on a 404 without a token.
func (k *kit) statusError(resp *http.Response, body []byte) *toolkit.Error {
	e := toolkit.StatusError(Name, resp.StatusCode, body)
	var answer struct {
		Message string `json:"message"`
		Errors  []struct {
			Resource string `json:"resource"`
			Field    string `json:"field"`
			Code     string `json:"code"`
			Message  string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &answer) == nil && answer.Message != "" {
		msg := answer.Message
		for _, detail := range answer.Errors {
			switch {
			case detail.Message != "":
				msg += "; " + detail.Message
			case detail.Field != "":
				msg += fmt.Sprintf("; %s %s: %s", detail.Resource, detail.Field, detail.Code)
			}
		}
		e.Message = cut(msg, 500)
	}
	switch {
	case resp.StatusCode == http.StatusForbidden && resp.Header.Get("X-RateLimit-Remaining") == "0":
		e.Class = run.ClassRateLimit
		if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			e.Message += fmt.Sprintf(" (the limit resets at %s)", time.Unix(reset, 0).UTC().Format(time.RFC3339))
		}
		if k.token == "" {
			e.Message += "; set token (or GITHUB_TOKEN) for a higher limit"
		}
	case resp.StatusCode == http.StatusNotFound && k.token == "":
		e.Message += " (no token is set: a private repository looks missing without one)"
	}
	return e
}

// badRequest is an error in the model's arguments.
func badRequest(format string, args ...any) error {
	return &toolkit.Error{Toolkit: Name, Class: run.ClassBadRequest, Message: fmt.Sprintf(format, args...)}
}

// repoPath resolves a call's owner and repo, with the defaults and the
// "owner/name" form, to the escaped path /repos/OWNER/NAME.
func (k *kit) repoPath(owner, repo string) (string, string, error) {
	owner, repo = strings.TrimSpace(owner), strings.TrimSpace(repo)
	if before, after, ok := strings.Cut(repo, "/"); ok && (owner == "" || owner == before) {
		owner, repo = before, after
	}
	if repo == "" && (owner == "" || owner == k.owner) {
		owner, repo = k.owner, k.repo
	}
	if owner == "" {
		owner = k.owner
	}
	if owner == "" || repo == "" {
		return "", "", badRequest("name the repository: owner and repo (or repo as OWNER/NAME); this toolkit has no default_owner and default_repo")
	}
	if !validName(owner) || !validName(repo) {
		return "", "", badRequest("%q/%q is not a GitHub repository name", owner, repo)
	}
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo), owner + "/" + repo, nil
}

// cut bounds s to max characters, with a note saying how much was left
// out.
func cut(s string, max int) string { return toolkit.Cut(s, max, "\n") }

// perPage bounds a model's limit to GitHub's page size.
func perPage(limit, def int) int {
	switch {
	case limit <= 0:
		return def
	case limit > 100:
		return 100
	}
	return limit
}
