package slack_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/slack"
)

const (
	botToken  = "xoxb-test-1"
	userToken = "xoxp-test-2"
)

// request is what the fake received.
type request struct {
	Method, Path, Auth, ContentType string
	Form                            url.Values
}

// fake is an in-process Slack Web API: form-encoded POSTs to /api/METHOD,
// the token in Authorization: Bearer, answers of HTTP 200 with "ok".
type fake struct {
	history string // conversations.history's answer, when set

	mu       sync.Mutex
	requests []request
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(data))
	f.mu.Lock()
	f.requests = append(f.requests, request{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"),
		ContentType: r.Header.Get("Content-Type"), Form: form})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	ok := func(body string) { _, _ = io.WriteString(w, `{"ok":true,`+body+`}`) }
	fail := func(code string) { _, _ = io.WriteString(w, `{"ok":false,"error":"`+code+`"}`) }

	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case token == "xoxb-limited":
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	case token == "xoxb-inactive":
		fail("account_inactive")
		return
	case token != botToken && token != userToken:
		fail("invalid_auth")
		return
	}
	switch r.URL.Path {
	case "/api/chat.postMessage":
		if form.Get("channel") == "C404" {
			fail("channel_not_found")
			return
		}
		ok(`"channel":"` + form.Get("channel") + `","ts":"1767225600.000200","message":{"type":"message","text":"` + form.Get("text") + `"}`)
	case "/api/conversations.history":
		if f.history != "" {
			_, _ = io.WriteString(w, f.history)
			return
		}
		ok(`"has_more":true,"messages":[
			{"type":"message","user":"U1","text":"Deploy done","ts":"1767225600.000100","thread_ts":"1767225600.000100","reply_count":2},
			{"type":"message","subtype":"bot_message","bot_id":"B9","username":"ci","text":"Build green","ts":"1767225500.000100"}]`)
	case "/api/conversations.list":
		ok(`"channels":[{"id":"C1","name":"general","is_channel":true,"is_member":true,"num_members":42,
			"topic":{"value":"Company news"},"purpose":{"value":"Everyone"}},
			{"id":"G2","name":"secret","is_private":true,"num_members":3,"topic":{"value":""},"purpose":{"value":""}}],
			"response_metadata":{"next_cursor":"dGVhbTpDMDYx"}`)
	case "/api/search.messages":
		if token != userToken {
			fail("not_allowed_token_type")
			return
		}
		ok(`"query":"` + form.Get("query") + `","messages":{"total":1,"matches":[{"type":"message","user":"U1","username":"alice",
			"text":"the outage is over","ts":"1767225600.000300","permalink":"https://example.slack.com/archives/C1/p1767225600000300",
			"channel":{"id":"C1","name":"ops"}}],"paging":{"count":20,"total":1,"page":1,"pages":1}}`)
	default:
		fail("unknown_method")
	}
}

func (f *fake) last() request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func newKit(t *testing.T, f *fake, edit func(*slack.Config)) map[string]tool.Tool {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := slack.Config{
		Token:   botToken,
		Network: toolkit.Network{BaseURL: srv.URL + "/api/", AllowPrivate: true},
		Getenv:  func(string) string { return "" },
	}
	if edit != nil {
		edit(&cfg)
	}
	k, err := slack.New(cfg)
	require.NoError(t, err)
	tools := map[string]tool.Tool{}
	for _, tl := range k.Tools {
		tools[tl.Spec().Name] = tl
	}
	return tools
}

func call(t *testing.T, tools map[string]tool.Tool, name, args string) (string, error) {
	t.Helper()
	return tools[name].Call(t.Context(), json.RawMessage(args))
}

// requireForm checks a request slack-go sent: a form POST, with the token
// in the header and not in the body.
func requireForm(t *testing.T, got request, path, token string) {
	t.Helper()
	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, path, got.Path)
	require.Equal(t, "Bearer "+token, got.Auth)
	require.Equal(t, "application/x-www-form-urlencoded", got.ContentType)
	require.False(t, got.Form.Has("token"), "the token must not travel in the body")
}

func TestSendMessage(t *testing.T) {
	f := &fake{}
	tools := newKit(t, f, nil)
	require.False(t, tools[slack.SendMessageName].Spec().RequiresConfirmation)

	out, err := call(t, tools, slack.SendMessageName, `{"channel":"C1","text":"Hello *team*","thread_ts":"1767225600.000100"}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true,"channel":"C1","ts":"1767225600.000200","thread_ts":"1767225600.000100"}`, out)
	got := f.last()
	requireForm(t, got, "/api/chat.postMessage", botToken)
	require.Equal(t, "C1", got.Form.Get("channel"))
	require.Equal(t, "Hello *team*", got.Form.Get("text"))
	require.Equal(t, "1767225600.000100", got.Form.Get("thread_ts"))

	_, err = call(t, tools, slack.SendMessageName, `{"channel":"C404","text":"hi"}`)
	var tkErr *toolkit.Error
	require.ErrorAs(t, err, &tkErr)
	require.Equal(t, run.ClassBadRequest, tkErr.Class)
	require.Contains(t, err.Error(), "slack: bad_request: channel_not_found")

	confirmed := newKit(t, f, func(c *slack.Config) { c.ConfirmPosts = true })
	require.True(t, confirmed[slack.SendMessageName].Spec().RequiresConfirmation)
	require.False(t, confirmed[slack.ListChannelsName].Spec().RequiresConfirmation)
}

func TestChannelHistoryAndList(t *testing.T) {
	f := &fake{}
	tools := newKit(t, f, nil)

	out, err := call(t, tools, slack.GetChannelHistoryName, `{"channel":"C1","limit":2}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"channel":"C1","has_more":true,"messages":[
		{"user":"U1","text":"Deploy done","ts":"1767225600.000100","thread_ts":"1767225600.000100","reply_count":2},
		{"username":"ci","bot_id":"B9","text":"Build green","ts":"1767225500.000100","subtype":"bot_message"}]}`, out)
	got := f.last()
	requireForm(t, got, "/api/conversations.history", botToken)
	require.Equal(t, "C1", got.Form.Get("channel"))
	require.Equal(t, "2", got.Form.Get("limit"))

	out, err = call(t, tools, slack.ListChannelsName, `{"types":"public_channel,private_channel","limit":50}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"next_cursor":"dGVhbTpDMDYx","channels":[
		{"id":"C1","name":"general","is_member":true,"num_members":42,"topic":"Company news","purpose":"Everyone"},
		{"id":"G2","name":"secret","is_private":true,"num_members":3}]}`, out)
	got = f.last()
	requireForm(t, got, "/api/conversations.list", botToken)
	require.Equal(t, "public_channel,private_channel", got.Form.Get("types"))
	require.Equal(t, "50", got.Form.Get("limit"))
	require.Equal(t, "true", got.Form.Get("exclude_archived"))

	_, err = call(t, tools, slack.ListChannelsName, `{"types":"dm"}`)
	require.ErrorContains(t, err, "types")
}

func TestSearchMessages(t *testing.T) {
	f := &fake{}
	user := newKit(t, f, func(c *slack.Config) { c.Token = userToken })
	out, err := call(t, user, slack.SearchMessagesName, `{"query":"outage in:#ops","count":5}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"query":"outage in:#ops","total":1,"matches":[{"channel":"ops","channel_id":"C1","user":"U1","username":"alice",
		"text":"the outage is over","ts":"1767225600.000300","permalink":"https://example.slack.com/archives/C1/p1767225600000300"}]}`, out)
	got := f.last()
	requireForm(t, got, "/api/search.messages", userToken)
	require.Equal(t, "outage in:#ops", got.Form.Get("query"))
	require.Equal(t, "5", got.Form.Get("count"))

	bot := newKit(t, f, nil)
	_, err = call(t, bot, slack.SearchMessagesName, `{"query":"outage"}`)
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	require.ErrorContains(t, err, "not_allowed_token_type")
	require.ErrorContains(t, err, "user token (xoxp-")
}

func TestErrorsAreClassified(t *testing.T) {
	f := &fake{}
	wrong := newKit(t, f, func(c *slack.Config) { c.Token = "xoxb-wrong" })
	_, err := call(t, wrong, slack.ListChannelsName, `{}`)
	var tkErr *toolkit.Error
	require.ErrorAs(t, err, &tkErr)
	require.Equal(t, run.ClassAuthentication, tkErr.Class)
	require.Contains(t, tkErr.Message, "invalid_auth")

	inactive := newKit(t, f, func(c *slack.Config) { c.Token = "xoxb-inactive" })
	_, err = call(t, inactive, slack.GetChannelHistoryName, `{"channel":"C1"}`)
	require.Equal(t, run.ClassAuthentication, run.ClassOf(err))
	require.ErrorContains(t, err, "account_inactive")

	limited := newKit(t, f, func(c *slack.Config) { c.Token = "xoxb-limited" })
	_, err = call(t, limited, slack.SendMessageName, `{"channel":"C1","text":"hi"}`)
	require.ErrorAs(t, err, &tkErr)
	require.Equal(t, run.ClassRateLimit, tkErr.Class)
	require.Equal(t, http.StatusTooManyRequests, tkErr.StatusCode)
	require.Contains(t, tkErr.Message, "ratelimited")
	require.Contains(t, tkErr.Message, "30s")
}

func TestLargeAnswersAreBounded(t *testing.T) {
	long := strings.Repeat("x", 5000)
	f := &fake{history: `{"ok":true,"has_more":false,"messages":[{"type":"message","user":"U1","text":"` + long + `","ts":"1.0"}]}`}
	tools := newKit(t, f, nil)
	out, err := call(t, tools, slack.GetChannelHistoryName, `{"channel":"C1"}`)
	require.NoError(t, err)
	require.Contains(t, out, "[cut: 2000 of 5000 characters shown]")

	tight := newKit(t, f, func(c *slack.Config) { c.MaxResponseBytes = 1000 })
	_, err = call(t, tight, slack.GetChannelHistoryName, `{"channel":"C1"}`)
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	require.ErrorContains(t, err, "max_response_bytes (1000 bytes)")
}

func TestPrivateAddressRefused(t *testing.T) {
	f := &fake{}
	tools := newKit(t, f, func(c *slack.Config) { c.AllowPrivate = false })
	_, err := call(t, tools, slack.SendMessageName, `{"channel":"C1","text":"hi"}`)
	var tkErr *toolkit.Error
	require.ErrorAs(t, err, &tkErr)
	require.Equal(t, run.ClassBadRequest, tkErr.Class)
	require.Contains(t, tkErr.Message, "allow_private")
	require.Zero(t, f.count())
}

func TestSettings(t *testing.T) {
	_, err := slack.New(slack.Config{Getenv: func(string) string { return "" }})
	require.ErrorContains(t, err, "token is required")
	require.ErrorContains(t, err, "SLACK_TOKEN")
	require.ErrorContains(t, err, "SLACK_BOT_TOKEN")

	_, err = slack.New(slack.Config{Token: "x", Network: toolkit.Network{BaseURL: "slack.com/api"}})
	require.ErrorContains(t, err, "base_url")

	// SLACK_TOKEN first, then SLACK_BOT_TOKEN.
	f := &fake{}
	env := map[string]string{slack.EnvBotToken: botToken}
	tools := newKit(t, f, func(c *slack.Config) { c.Token = ""; c.Getenv = func(k string) string { return env[k] } })
	_, err = call(t, tools, slack.ListChannelsName, `{}`)
	require.NoError(t, err)
	require.Equal(t, "Bearer "+botToken, f.last().Auth)
	env[slack.EnvToken] = userToken
	tools = newKit(t, f, func(c *slack.Config) { c.Token = ""; c.Getenv = func(k string) string { return env[k] } })
	_, err = call(t, tools, slack.ListChannelsName, `{}`)
	require.NoError(t, err)
	require.Equal(t, "Bearer "+userToken, f.last().Auth)

	t.Setenv(slack.EnvToken, botToken)
	def := slack.Definition()
	require.Equal(t, "slack", def.Name())
	require.Equal(t, slack.Names(), def.ToolNames())
	built, _, err := def.Build(t.Context(), json.RawMessage(`{"confirm_posts":true,"timeout_seconds":5}`))
	require.NoError(t, err)
	require.Len(t, built, 4)
	require.True(t, built[0].Spec().RequiresConfirmation)
	_, _, err = def.Build(t.Context(), json.RawMessage(`{"bot_token":"x"}`))
	require.ErrorContains(t, err, "unknown key")
}
