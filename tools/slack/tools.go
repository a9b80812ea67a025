package slack

import (
	"context"
	"fmt"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/toolkit"
)

// Bounds of the model's arguments and of results.
const (
	defaultHistory    = 20
	maxHistory        = 200
	defaultChannels   = 100
	maxChannels       = 1000
	defaultSearch     = 20
	maxSearch         = 100
	maxMessageChars   = 2000
	maxTopicChars     = 200
	maxResultChars    = 30000
	defaultChannelTyp = "public_channel"
)

// cut bounds s to max characters, with a note saying how much was left
// out.
func cut(s string, max int) string { return toolkit.Cut(s, max, " ") }

// bound clamps a model's count to [1, most], def when it gave none.
func bound(n, def, most int) int {
	switch {
	case n <= 0:
		return def
	case n > most:
		return most
	}
	return n
}

func badRequest(format string, args ...any) error {
	return &toolkit.Error{Toolkit: Name, Class: run.ClassBadRequest, Message: fmt.Sprintf(format, args...)}
}

// sendMessage

type sendArgs struct {
	Channel  string `json:"channel" jsonschema:"the channel's ID (C…, G…) or a user's ID (U…) for a direct message"`
	Text     string `json:"text" jsonschema:"the message, in Slack mrkdwn"`
	ThreadTS string `json:"thread_ts,omitempty" jsonschema:"the ts of the message to reply to, to post in its thread"`
}

type sent struct {
	OK       bool   `json:"ok"`
	Channel  string `json:"channel"`
	TS       string `json:"ts"`
	ThreadTS string `json:"thread_ts,omitempty"`
}

func (k *kit) sendMessage(ctx context.Context, a sendArgs) (sent, error) {
	channel := strings.TrimSpace(a.Channel)
	if channel == "" {
		return sent{}, badRequest("channel is empty")
	}
	if strings.TrimSpace(a.Text) == "" {
		return sent{}, badRequest("text is empty")
	}
	options := []slackapi.MsgOption{slackapi.MsgOptionText(a.Text, false)}
	if a.ThreadTS != "" {
		options = append(options, slackapi.MsgOptionTS(a.ThreadTS))
	}
	gotChannel, ts, err := k.api.PostMessageContext(ctx, channel, options...)
	if err != nil {
		return sent{}, classify(err)
	}
	return sent{OK: true, Channel: gotChannel, TS: ts, ThreadTS: a.ThreadTS}, nil
}

// channelHistory

type historyArgs struct {
	Channel string `json:"channel" jsonschema:"the channel's ID (C…, G…, D…); find it with list_channels"`
	Limit   int    `json:"limit,omitempty" jsonschema:"how many recent messages, 1 to 200; 20 when left out"`
}

type message struct {
	User       string `json:"user,omitempty"`
	Username   string `json:"username,omitempty"`
	BotID      string `json:"bot_id,omitempty"`
	Text       string `json:"text"`
	TS         string `json:"ts"`
	ThreadTS   string `json:"thread_ts,omitempty"`
	ReplyCount int    `json:"reply_count,omitempty"`
	Subtype    string `json:"subtype,omitempty"`
}

type history struct {
	Channel  string    `json:"channel"`
	Messages []message `json:"messages"`
	HasMore  bool      `json:"has_more"`
	Note     string    `json:"note,omitempty"`
}

func (k *kit) channelHistory(ctx context.Context, a historyArgs) (history, error) {
	channel := strings.TrimSpace(a.Channel)
	if channel == "" {
		return history{}, badRequest("channel is empty")
	}
	resp, err := k.api.GetConversationHistoryContext(ctx, &slackapi.GetConversationHistoryParameters{
		ChannelID: channel, Limit: bound(a.Limit, defaultHistory, maxHistory)})
	if err != nil {
		return history{}, classify(err)
	}
	out := history{Channel: channel, Messages: []message{}, HasMore: resp.HasMore}
	size := 0
	for _, m := range resp.Messages {
		msg := message{User: m.User, Username: m.Username, BotID: m.BotID, Text: cut(m.Text, maxMessageChars),
			TS: m.Timestamp, ThreadTS: m.ThreadTimestamp, ReplyCount: m.ReplyCount, Subtype: m.SubType}
		size += len(msg.Text) + 80
		if size > maxResultChars {
			out.Note = fmt.Sprintf("cut: %d of %d messages shown", len(out.Messages), len(resp.Messages))
			break
		}
		out.Messages = append(out.Messages, msg)
	}
	return out, nil
}

// listChannels

type listArgs struct {
	Types  string `json:"types,omitempty" jsonschema:"comma-separated kinds: public_channel, private_channel, mpim, im; public_channel when left out"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many channels, 1 to 1000; 100 when left out"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call, to get the next page"`
}

type channel struct {
	ID         string `json:"id"`
	Name       string `json:"name,omitempty"`
	IsPrivate  bool   `json:"is_private,omitempty"`
	IsArchived bool   `json:"is_archived,omitempty"`
	IsMember   bool   `json:"is_member,omitempty"`
	NumMembers int    `json:"num_members,omitempty"`
	Topic      string `json:"topic,omitempty"`
	Purpose    string `json:"purpose,omitempty"`
}

type channelList struct {
	Channels   []channel `json:"channels"`
	NextCursor string    `json:"next_cursor,omitempty"`
	Note       string    `json:"note,omitempty"`
}

func (k *kit) listChannels(ctx context.Context, a listArgs) (channelList, error) {
	types := strings.TrimSpace(a.Types)
	if types == "" {
		types = defaultChannelTyp
	}
	var kinds []string
	for _, t := range strings.Split(types, ",") {
		t = strings.TrimSpace(t)
		switch t {
		case "public_channel", "private_channel", "mpim", "im":
			kinds = append(kinds, t)
		default:
			return channelList{}, badRequest("types: %q is not public_channel, private_channel, mpim or im", t)
		}
	}
	channels, next, err := k.api.GetConversationsContext(ctx, &slackapi.GetConversationsParameters{
		Cursor: a.Cursor, ExcludeArchived: true, Limit: bound(a.Limit, defaultChannels, maxChannels), Types: kinds})
	if err != nil {
		return channelList{}, classify(err)
	}
	out := channelList{Channels: []channel{}, NextCursor: next}
	size := 0
	for _, c := range channels {
		item := channel{ID: c.ID, Name: c.Name, IsPrivate: c.IsPrivate, IsArchived: c.IsArchived, IsMember: c.IsMember,
			NumMembers: c.NumMembers, Topic: cut(c.Topic.Value, maxTopicChars), Purpose: cut(c.Purpose.Value, maxTopicChars)}
		size += len(item.Name) + len(item.Topic) + len(item.Purpose) + 80
		if size > maxResultChars {
			out.Note = fmt.Sprintf("cut: %d of %d channels shown; ask for a smaller limit", len(out.Channels), len(channels))
			break
		}
		out.Channels = append(out.Channels, item)
	}
	return out, nil
}

// searchMessages

type searchArgs struct {
	Query string `json:"query" jsonschema:"what to search for, in Slack's search syntax, e.g. 'outage in:#ops from:@alice'"`
	Count int    `json:"count,omitempty" jsonschema:"how many matches, 1 to 100; 20 when left out"`
}

type match struct {
	Channel   string `json:"channel,omitempty"`
	ChannelID string `json:"channel_id,omitempty"`
	User      string `json:"user,omitempty"`
	Username  string `json:"username,omitempty"`
	Text      string `json:"text"`
	TS        string `json:"ts"`
	Permalink string `json:"permalink,omitempty"`
}

type searchResult struct {
	Query   string  `json:"query"`
	Total   int     `json:"total"`
	Matches []match `json:"matches"`
	Note    string  `json:"note,omitempty"`
}

func (k *kit) searchMessages(ctx context.Context, a searchArgs) (searchResult, error) {
	query := strings.TrimSpace(a.Query)
	if query == "" {
		return searchResult{}, badRequest("query is empty")
	}
	params := slackapi.NewSearchParameters()
	params.Count = bound(a.Count, defaultSearch, maxSearch)
	found, err := k.api.SearchMessagesContext(ctx, query, params)
	if err != nil {
		return searchResult{}, classify(err)
	}
	out := searchResult{Query: query, Total: found.Total, Matches: []match{}}
	size := 0
	for _, m := range found.Matches {
		item := match{Channel: m.Channel.Name, ChannelID: m.Channel.ID, User: m.User, Username: m.Username,
			Text: cut(m.Text, maxMessageChars), TS: m.Timestamp, Permalink: m.Permalink}
		size += len(item.Text) + len(item.Permalink) + 100
		if size > maxResultChars {
			out.Note = fmt.Sprintf("cut: %d of %d matches shown", len(out.Matches), len(found.Matches))
			break
		}
		out.Matches = append(out.Matches, item)
	}
	return out, nil
}
