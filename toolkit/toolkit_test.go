package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/urlpolicy"
)

type echoArgs struct {
	Text string `json:"text"`
}

// counter is a toolkit of two tools counting their calls.
func counter(calls *atomic.Int64) *toolkit.Toolkit {
	echo := tool.MustNew(tool.Config{Name: "echo"}, func(_ context.Context, a echoArgs) (string, error) {
		calls.Add(1)
		if a.Text == "fail" {
			return "", errors.New("asked to fail")
		}
		return a.Text, nil
	})
	shout := tool.MustNew(tool.Config{Name: "shout"}, func(_ context.Context, a echoArgs) (string, error) {
		calls.Add(1)
		return strings.ToUpper(a.Text), nil
	})
	return &toolkit.Toolkit{Name: "counter", Tools: []tool.Tool{echo, shout}}
}

func names(tools []tool.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Spec().Name)
	}
	return out
}

func TestOptionsSelectAndFlag(t *testing.T) {
	var calls atomic.Int64
	tools, err := toolkit.Options{ExcludeTools: []string{"shout"}, RequiresConfirmationTools: []string{"echo"},
		ShowResultTools: []string{"echo"}}.Apply(counter(&calls))
	require.NoError(t, err)
	require.Equal(t, []string{"echo"}, names(tools))
	spec := tools[0].Spec()
	require.True(t, spec.RequiresConfirmation)
	require.True(t, spec.ShowResult)
	require.False(t, spec.StopAfterToolCall)

	tools, err = toolkit.Options{IncludeTools: []string{"shout"}, StopAfterToolCallTools: []string{"shout"}}.Apply(counter(&calls))
	require.NoError(t, err)
	require.Equal(t, []string{"shout"}, names(tools))
	require.True(t, tools[0].Spec().StopAfterToolCall)

	_, err = toolkit.Options{RequiresConfirmationTools: []string{"ehco"}}.Apply(counter(&calls))
	require.ErrorContains(t, err, `requires_confirmation_tools: counter has no tool "ehco"; its tools are echo, shout`)
	_, err = toolkit.Options{ExcludeTools: []string{"echo", "shout"}}.Apply(counter(&calls))
	require.ErrorContains(t, err, "leave no tool")
}

func TestCacheAnswersRepeatedCallsUntilTTL(t *testing.T) {
	var calls atomic.Int64
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	tools, err := toolkit.Options{CacheResults: true, CacheTTL: time.Minute, Now: clock}.Apply(counter(&calls))
	require.NoError(t, err)
	echo := tools[0]
	call := func(args string) string {
		out, err := echo.Call(t.Context(), json.RawMessage(args))
		require.NoError(t, err)
		return out
	}
	require.Equal(t, "hi", call(`{"text":"hi"}`))
	require.Equal(t, "hi", call(` { "text" : "hi" } `), "the same arguments, written otherwise, are answered from the cache")
	require.EqualValues(t, 1, calls.Load())
	require.Equal(t, "ho", call(`{"text":"ho"}`))
	require.EqualValues(t, 2, calls.Load())
	out, err := tools[1].Call(t.Context(), json.RawMessage(`{"text":"hi"}`))
	require.NoError(t, err)
	require.Equal(t, "HI", out, "each tool has its own entries")

	now = now.Add(time.Minute)
	require.Equal(t, "hi", call(`{"text":"hi"}`))
	require.EqualValues(t, 4, calls.Load(), "an expired entry calls the tool again")

	_, err = echo.Call(t.Context(), json.RawMessage(`{"text":"fail"}`))
	require.Error(t, err)
	_, err = echo.Call(t.Context(), json.RawMessage(`{"text":"fail"}`))
	require.Error(t, err)
	require.EqualValues(t, 6, calls.Load(), "a failure is never cached")

	validator, ok := echo.(tool.Validator)
	require.True(t, ok, "a cached tool still validates its arguments")
	require.Error(t, validator.ValidateArgs(json.RawMessage(`{"text": 3}`)))
}

func TestCacheSkipsToolsThatPause(t *testing.T) {
	var calls atomic.Int64
	tools, err := toolkit.Options{CacheResults: true, RequiresConfirmationTools: []string{"echo"}}.Apply(counter(&calls))
	require.NoError(t, err)
	for range 2 {
		_, err := tools[0].Call(t.Context(), json.RawMessage(`{"text":"x"}`))
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, calls.Load(), "a tool a person confirms is called each time")
}

func TestCacheBounded(t *testing.T) {
	cache := toolkit.NewCache(time.Hour, 2, nil)
	var calls atomic.Int64
	echo := cache.Wrap(counter(&calls).Tools[0])
	for _, text := range []string{"a", "b", "c", "a"} {
		_, err := echo.Call(t.Context(), json.RawMessage(`{"text":"`+text+`"}`))
		require.NoError(t, err)
	}
	require.Equal(t, 2, cache.Len())
	require.EqualValues(t, 4, calls.Load(), "a was pushed out by c and called again")
}

type settings struct {
	toolkit.Network
	Greeting string `json:"greeting"`
	Times    int    `json:"times,omitempty"`
}

func definition() toolkit.Definition {
	return toolkit.Define("greeter", "Greets.", []string{"greet"}, func(_ context.Context, s settings) (*toolkit.Toolkit, error) {
		if s.Greeting == "" {
			return nil, errors.New("greeting is required")
		}
		greet := tool.MustNew(tool.Config{Name: "greet"}, func(context.Context, struct{}) (string, error) {
			return strings.Repeat(s.Greeting, max(s.Times, 1)), nil
		})
		return &toolkit.Toolkit{Tools: []tool.Tool{greet}, Instructions: "Greet first."}, nil
	})
}

func TestDefinitionBuildsFromSettings(t *testing.T) {
	d := definition()
	require.Equal(t, "greeter", d.Name())
	require.Equal(t, []string{"base_url", "allow_private", "allow_hosts", "deny_hosts", "timeout_seconds", "max_response_bytes", "greeting", "times"},
		d.Keys(), "the keys of an embedded struct are the toolkit's own")
	tools, instructions, err := d.Build(t.Context(), json.RawMessage(`{"greeting":"hi ","times":2,"show_result_tools":["greet"],"cache_results":true,"cache_ttl":60}`))
	require.NoError(t, err)
	require.Equal(t, "Greet first.", instructions)
	require.True(t, tools[0].Spec().ShowResult)
	out, err := tools[0].Call(t.Context(), json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Equal(t, "hi hi ", out)

	for settings, want := range map[string]string{
		`{"greting":"x"}`: `greeter: settings: unknown key "greting"; its keys are base_url, allow_private, allow_hosts, deny_hosts, ` +
			`timeout_seconds, max_response_bytes, greeting, times, and include_tools, exclude_tools, requires_confirmation_tools, ` +
			`external_execution_required_tools, requires_approval_tools, stop_after_tool_call_tools, show_result_tools, cache_results, ` +
			`cache_ttl, cache_max_entries`,
		`{"greeting":"x","times":"two"}`:     `greeter: settings: times: want a number, got a JSON string`,
		`{}`:                                 `greeter: greeting is required`,
		`{"greeting":"x","cache_ttl":"1h"}`:  `greeter: cache_ttl: want a number of seconds such as 3600, got "1h"`,
		`{"greeting":"x","exclude_tools":1}`: `greeter: exclude_tools: want a list, got a JSON number`,
	} {
		_, _, err := d.Build(t.Context(), json.RawMessage(settings))
		require.EqualError(t, err, want, settings)
	}
}

func TestRegistry(t *testing.T) {
	r, err := toolkit.NewRegistry(definition())
	require.NoError(t, err)
	require.Equal(t, []string{"greeter"}, r.Names())
	_, ok := r.Lookup("greeter")
	require.True(t, ok)
	_, ok = r.Lookup("nope")
	require.False(t, ok)
	_, err = toolkit.NewRegistry(definition(), definition())
	require.ErrorContains(t, err, `two toolkits named "greeter"`)
	_, err = toolkit.NewRegistry(toolkit.Definition{})
	require.Error(t, err)
}

func TestNetworkRefusesPrivateAddresses(t *testing.T) {
	var hits atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer server.Close()

	var out map[string]any
	err := toolkit.DoJSON(t.Context(), toolkit.Network{}.Client(), "probe", toolkit.Request{URL: server.URL}, 1<<10, &out)
	require.Error(t, err)
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	require.ErrorIs(t, err, urlpolicy.ErrDialRefused)
	require.Contains(t, err.Error(), "allow_private")
	require.Zero(t, hits.Load(), "the request never reached the server")

	// A name that resolves to loopback is refused where it connects.
	redirect := httptest.NewServer(http.RedirectHandler(server.URL, http.StatusFound))
	defer redirect.Close()
	network := toolkit.Network{AllowHosts: []string{"127.0.0.1"}, DenyHosts: []string{"localhost"}}
	require.NoError(t, toolkit.DoJSON(t.Context(), network.Client(), "probe", toolkit.Request{URL: server.URL}, 1<<10, &out))
	require.EqualValues(t, 1, hits.Load())
	localhost := strings.Replace(server.URL, "127.0.0.1", "localhost", 1)
	err = toolkit.DoJSON(t.Context(), network.Client(), "probe", toolkit.Request{URL: localhost}, 1<<10, &out)
	require.ErrorIs(t, err, urlpolicy.ErrDialRefused, "a denied host is refused")

	require.NoError(t, toolkit.DoJSON(t.Context(), toolkit.Network{AllowPrivate: true}.Client(), "probe", toolkit.Request{URL: redirect.URL}, 1<<10, &out))
	require.EqualValues(t, 2, hits.Load())
}

// rebinding resolves every name to loopback, as a DNS server turned
// hostile after a URL was checked would.
type rebinding struct{}

func (rebinding) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func TestDialRefusesNameResolvingToPrivateAddress(t *testing.T) {
	policy := &urlpolicy.Policy{BlockPrivate: true, Resolver: rebinding{}}
	_, err := policy.DialContext(nil)(t.Context(), "tcp", "public.example.com:80")
	require.ErrorIs(t, err, urlpolicy.ErrDialRefused)
	require.ErrorContains(t, err, "127.0.0.1")
}

func TestDoJSONClassifiesFailures(t *testing.T) {
	status := atomic.Int64{}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.Equal(t, "secret", r.Header.Get("X-Key"))
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte(`{"error":{"message":"slow down"}}`))
	}))
	defer server.Close()
	client := toolkit.Network{AllowPrivate: true}.Client()
	for code, class := range map[int]run.ErrorClass{401: run.ClassAuthentication, 402: run.ClassBilling, 404: run.ClassBadRequest,
		429: run.ClassRateLimit, 503: run.ClassServer} {
		status.Store(int64(code))
		err := toolkit.DoJSON(t.Context(), client, "search", toolkit.Request{URL: server.URL, Body: map[string]string{"q": "x"},
			Header: http.Header{"X-Key": {"secret"}}}, 1<<10, nil)
		require.Equal(t, class, run.ClassOf(err), "HTTP %d", code)
		var tkErr *toolkit.Error
		require.ErrorAs(t, err, &tkErr)
		require.Equal(t, code, tkErr.StatusCode)
		require.Contains(t, err.Error(), "search: "+class.ErrorType())
		require.Contains(t, err.Error(), "slow down")
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	err := toolkit.DoJSON(t.Context(), client, "search", toolkit.Request{URL: closed.URL}, 1<<10, nil)
	require.Equal(t, run.ClassConnection, run.ClassOf(err))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = toolkit.DoJSON(ctx, client, "search", toolkit.Request{URL: server.URL}, 1<<10, nil)
	require.ErrorIs(t, err, context.Canceled, "a cancel is not a toolkit failure")
}

func TestNetworkValidate(t *testing.T) {
	require.NoError(t, toolkit.Network{BaseURL: "https://api.example.com/v1"}.Validate())
	require.ErrorContains(t, toolkit.Network{BaseURL: "ftp://x"}.Validate(), "base_url")
	require.ErrorContains(t, toolkit.Network{TimeoutSeconds: -1}.Validate(), "timeout_seconds")
	require.ErrorContains(t, toolkit.Network{AllowHosts: []string{"http://x"}}.Validate(), "not a host name")
	require.Equal(t, "https://x.test", toolkit.Network{}.Base("https://x.test/"))
	require.Equal(t, 2*time.Second, toolkit.Network{TimeoutSeconds: 2}.Timeout())
}

func TestDoJSONBoundsTheAnswerAndTakesAStatusHook(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/limited" {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.WriteHeader(http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte(`{"items":["` + strings.Repeat("x", 200) + `"]}`))
	}))
	defer server.Close()
	client := toolkit.Network{AllowPrivate: true}.Client()
	var out map[string]any
	err := toolkit.DoJSON(t.Context(), client, "api", toolkit.Request{URL: server.URL}, 100, &out)
	require.ErrorContains(t, err, "api: bad_request (HTTP 200): the answer is larger than max_response_bytes (100 bytes)")
	require.NoError(t, toolkit.DoJSON(t.Context(), client, "api", toolkit.Request{URL: server.URL}, 1000, &out))

	err = toolkit.DoJSON(t.Context(), client, "api", toolkit.Request{URL: server.URL + "/limited",
		StatusError: func(resp *http.Response, _ []byte) error {
			if resp.Header.Get("X-RateLimit-Remaining") == "0" {
				return &toolkit.Error{Toolkit: "api", Class: run.ClassRateLimit, StatusCode: resp.StatusCode, Message: "out of calls"}
			}
			return nil
		}}, 1000, &out)
	require.Equal(t, run.ClassRateLimit, run.ClassOf(err), "the hook reads the headers a status alone does not tell")
}

func TestCutAndResolveURL(t *testing.T) {
	require.Equal(t, "héllo", toolkit.Cut("héllo", 5, " "))
	require.Equal(t, "hé [cut: 2 of 5 characters shown]", toolkit.Cut("héllo", 2, " "))
	base, err := url.Parse("https://api.example.com/v1")
	require.NoError(t, err)
	for raw, want := range map[string]string{"users/1": "https://api.example.com/v1/users/1", "/users/1": "https://api.example.com/v1/users/1",
		"https://other.example/x": "https://other.example/x"} {
		u, err := toolkit.ResolveURL("http", base, raw)
		require.NoError(t, err)
		require.Equal(t, want, u.String())
	}
	for raw, want := range map[string]string{"": "url is empty", "ftp://x/y": "only http and https", "users/1": "want an absolute http or https URL"} {
		_, err := toolkit.ResolveURL("http", nil, raw)
		require.ErrorContains(t, err, want)
		require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	}
}

// TestOptionsRequireApproval: requires_approval_tools makes the named
// tools wait for an admin's approval — a confirmation, as they pause no
// other way — and leaves the others alone; the key reads from settings
// like the other options.
func TestOptionsRequireApproval(t *testing.T) {
	var calls atomic.Int64
	_, options, err := toolkit.SplitOptions(json.RawMessage(`{"requires_approval_tools":["echo"]}`))
	require.NoError(t, err)
	tools, err := options.Apply(counter(&calls))
	require.NoError(t, err)
	echo, shout := tools[0].Spec(), tools[1].Spec()
	require.True(t, echo.RequiresApproval)
	require.True(t, echo.RequiresConfirmation, "an approval with no other pause is a confirmation")
	require.False(t, shout.RequiresApproval)
	require.False(t, shout.RequiresConfirmation)

	_, err = toolkit.Options{RequiresApprovalTools: []string{"ehco"}}.Apply(counter(&calls))
	require.ErrorContains(t, err, `requires_approval_tools: counter has no tool "ehco"`)
}
