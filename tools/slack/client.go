package slack

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/toolkit"
)

// bearerClient sends slack-go's requests through the toolkit's HTTP client
// (and so its address policy), with the token in the Authorization header
// rather than in the form body where slack-go puts it, and bounds each
// answer to max_response_bytes.
type bearerClient struct {
	client *http.Client
	token  string
	limit  int64
}

// Do implements slack-go's HTTP client.
func (c *bearerClient) Do(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if req.Body != nil && strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		data, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		values, err := url.ParseQuery(string(data))
		if err != nil {
			return nil, fmt.Errorf("read slack-go's form: %w", err)
		}
		values.Del("token")
		encoded := values.Encode()
		req.Body = io.NopCloser(strings.NewReader(encoded))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(encoded)), nil }
		req.ContentLength = int64(len(encoded))
	}
	if query := req.URL.Query(); query.Has("token") {
		query.Del("token")
		req.URL.RawQuery = query.Encode()
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{body: resp.Body, limit: c.limit}
	return resp, nil
}

// tooLargeError is an answer longer than max_response_bytes.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("Slack's answer is larger than max_response_bytes (%d bytes): ask for fewer items (a smaller limit or count), or raise max_response_bytes", e.limit)
}

// boundedBody fails a read past limit bytes.
type boundedBody struct {
	body  io.ReadCloser
	limit int64
	read  int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, &tooLargeError{limit: b.limit}
	}
	if room := b.limit + 1 - b.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.body.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return n - int(b.read-b.limit), &tooLargeError{limit: b.limit}
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }

// Slack's error codes that mean the token is wrong.
var authCodes = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true, "token_expired": true,
}

// classify turns slack-go's error into an [*toolkit.Error] naming Slack's
// error code. A cancelled context is returned as it is.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var slackErr slackapi.SlackErrorResponse
	var limited *slackapi.RateLimitedError
	var status slackapi.StatusCodeError
	var tooLarge *tooLargeError
	switch {
	case errors.As(err, &slackErr):
		code := slackErr.Err
		class := run.ClassBadRequest
		switch {
		case authCodes[code]:
			class = run.ClassAuthentication
		case code == "ratelimited":
			class = run.ClassRateLimit
		}
		return &toolkit.Error{Toolkit: Name, Class: class, Message: code + hint(slackErr), Err: err}
	case errors.As(err, &limited):
		return &toolkit.Error{Toolkit: Name, Class: run.ClassRateLimit, StatusCode: http.StatusTooManyRequests,
			Message: fmt.Sprintf("ratelimited: Slack asks to retry after %s", limited.RetryAfter), Err: err}
	case errors.As(err, &status):
		return &toolkit.Error{Toolkit: Name, Class: toolkit.ClassifyStatus(status.Code), StatusCode: status.Code,
			Message: "Slack answered " + status.Status, Err: err}
	case errors.As(err, &tooLarge):
		return &toolkit.Error{Toolkit: Name, Class: run.ClassBadRequest, Message: tooLarge.Error(), Err: err}
	}
	return toolkit.Classify(Name, err)
}

// hint explains the Slack error codes a model can act on.
func hint(e slackapi.SlackErrorResponse) string {
	switch e.Err {
	case "not_allowed_token_type":
		return ": this method needs another kind of token — search.messages needs a user token (xoxp-…) " +
			"with the search:read scope, not a bot token (xoxb-…)"
	case "missing_scope":
		msg := ": the token lacks a permission scope"
		if e.Needed != "" {
			msg += " (needs " + e.Needed
			if e.Provided != "" {
				msg += "; has " + e.Provided
			}
			msg += ")"
		}
		return msg
	case "channel_not_found":
		return ": no channel with that ID is visible to this token; find IDs with list_channels"
	case "not_in_channel":
		return ": the bot is not a member of that channel; a person must invite it first"
	case "is_archived":
		return ": the channel is archived"
	case "invalid_auth", "not_authed":
		return ": the token is missing or wrong"
	}
	return ""
}
