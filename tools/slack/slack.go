// Package slack is the Slack toolkit: Slack's Web API through
// github.com/slack-go/slack, for a model that posts messages, reads a
// channel's recent messages, lists channels and searches messages.
//
// Tools: send_message (chat.postMessage, optionally in a thread),
// get_channel_history (conversations.history), list_channels
// (conversations.list) and search_messages (search.messages, which needs a
// user token — xoxp-… with the search:read scope; a bot token is refused by
// Slack, and the error says so).
//
// Settings ([Config]): token (falls back to the SLACK_TOKEN environment
// variable, then SLACK_BOT_TOKEN; required), confirm_posts (default false:
// send_message runs unattended; true makes it pause the run for a person's
// confirmation), and the network keys of [toolkit.Network]: base_url
// defaults to https://slack.com/api/, and every request goes through
// [toolkit.Network.Client], so the address policy applies to Slack's
// client too. The token travels in the Authorization: Bearer header, never
// in the request body.
//
// Slack answers most failures with HTTP 200 and {"ok": false, "error":
// "…"}; the toolkit turns them into [*toolkit.Error] values naming Slack's
// error code: invalid_auth, not_authed, account_inactive, token_revoked and
// token_expired are authentication_error, ratelimited (and HTTP 429) is
// rate_limit, anything else bad_request.
package slack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// Name is the toolkit's name, as config files list it.
const Name = "slack"

// The tools' names.
const (
	SendMessageName       = "send_message"
	GetChannelHistoryName = "get_channel_history"
	ListChannelsName      = "list_channels"
	SearchMessagesName    = "search_messages"
)

// Names lists the toolkit's tools, in order.
func Names() []string {
	return []string{SendMessageName, GetChannelHistoryName, ListChannelsName, SearchMessagesName}
}

// Defaults of [Config].
const (
	// DefaultBaseURL is Slack's Web API.
	DefaultBaseURL = "https://slack.com/api/"
	// EnvToken is the environment variable token falls back to first.
	EnvToken = "SLACK_TOKEN"
	// EnvBotToken is the environment variable token falls back to second.
	EnvBotToken = "SLACK_BOT_TOKEN"
)

// Config is the toolkit's settings, from Go or from a config file's
// mapping.
type Config struct {
	// Token is a Slack token: a bot token (xoxb-…) or a user token
	// (xoxp-…, needed by search_messages). Defaults to the SLACK_TOKEN
	// environment variable, then SLACK_BOT_TOKEN; one is required.
	Token string `json:"token,omitempty"`
	// ConfirmPosts makes send_message pause the run for a person's
	// confirmation before each post. Defaults to false.
	ConfirmPosts bool `json:"confirm_posts,omitempty"`
	// Network is where the API is (base_url, default
	// https://slack.com/api/) and which addresses the toolkit may reach.
	toolkit.Network
	// Getenv reads the environment for the token's fallback. Defaults to
	// os.Getenv.
	Getenv func(string) string `json:"-"`
}

// kit is a configured toolkit; its tools share it. It is immutable.
type kit struct {
	api *slackapi.Client
}

// New checks cfg and builds the toolkit. It does no I/O: Slack is first
// reached by a tool call.
func New(cfg Config) (*toolkit.Toolkit, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	token := strings.TrimSpace(cmp.Or(cfg.Token, getenv(EnvToken), getenv(EnvBotToken)))
	var errs []error
	if token == "" {
		errs = append(errs, fmt.Errorf("token is required: set it, or the %s (or %s) environment variable", EnvToken, EnvBotToken))
	}
	if err := cfg.Network.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	client := &bearerClient{client: cfg.Network.Client(), token: token, limit: cfg.Network.MaxBytes()}
	k := &kit{api: slackapi.New(token,
		slackapi.OptionAPIURL(cfg.Network.Base(DefaultBaseURL)+"/"),
		slackapi.OptionHTTPClient(client))}
	tools, err := k.tools(cfg.ConfirmPosts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &toolkit.Toolkit{
		Name:  Name,
		Tools: tools,
		Instructions: "The Slack tools take channel IDs (C…, G…, D…); find them with list_channels. " +
			"A message's ts identifies it: pass it as thread_ts to reply in its thread.",
	}, nil
}

// Definition declares the toolkit for config files.
func Definition() toolkit.Definition {
	return toolkit.Define(Name,
		"Slack's Web API: post messages, read a channel's history, list channels and search messages.",
		Names(), func(_ context.Context, cfg Config) (*toolkit.Toolkit, error) { return New(cfg) })
}

// tools builds the toolkit's tools; confirm flags send_message.
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
	add(tool.New(tool.Config{Name: SendMessageName, RequiresConfirmation: confirm,
		Description: "Post a message to a Slack channel, or reply in a thread with thread_ts. " +
			"The text takes Slack's mrkdwn (*bold*, _italic_, <https://example.com|links>)."}, k.sendMessage))
	add(tool.New(tool.Config{Name: GetChannelHistoryName,
		Description: "Read a Slack channel's most recent messages, newest first: each with its author's user ID, text and ts."}, k.channelHistory))
	add(tool.New(tool.Config{Name: ListChannelsName,
		Description: "List the workspace's Slack channels with their IDs, names, member counts and topics."}, k.listChannels))
	add(tool.New(tool.Config{Name: SearchMessagesName,
		Description: "Search the workspace's Slack messages with Slack's search syntax, e.g. 'deploy in:#ops from:@alice after:2026-01-01'. " +
			"Needs a user token."}, k.searchMessages))
	return tools, errors.Join(errs...)
}
