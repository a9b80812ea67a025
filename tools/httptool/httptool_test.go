package httptool_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
	"github.com/agnogo/agnogo/tools/httptool"
)

// received is what a fake server saw of one request.
type received struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   string
}

// fake is a server recording each request and answering with handle.
func fake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, chan received) {
	t.Helper()
	seen := make(chan received, 16)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen <- received{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)}
		handle(w, r)
	}))
	t.Cleanup(server.Close)
	return server, seen
}

// tools builds the toolkit and returns its tools by name.
func tools(t *testing.T, cfg httptool.Config) map[string]tool.Tool {
	t.Helper()
	k, err := httptool.New(cfg)
	require.NoError(t, err)
	require.Equal(t, "http", k.Name)
	byName := map[string]tool.Tool{}
	for _, tl := range k.Tools {
		byName[tl.Spec().Name] = tl
	}
	return byName
}

func call(t *testing.T, tl tool.Tool, args string) (httptool.Response, error) {
	t.Helper()
	out, err := tl.Call(t.Context(), json.RawMessage(args))
	if err != nil {
		return httptool.Response{}, err
	}
	var resp httptool.Response
	require.NoError(t, json.Unmarshal([]byte(out), &resp), out)
	return resp, nil
}

func local() toolkit.Network { return toolkit.Network{AllowPrivate: true} }

func TestGetWithBaseURLAndDefaultHeaders(t *testing.T) {
	server, seen := fake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("X-Secret-Internal", "not shown")
		_, _ = io.WriteString(w, `{"id":1,"name":"Ada"}`)
	})
	network := local()
	network.BaseURL = server.URL + "/v1/"
	byName := tools(t, httptool.Config{Network: network, DefaultHeaders: map[string]string{"Authorization": "Bearer s3cret", "X-Api-Version": "2"}})
	require.Len(t, byName, 2)
	require.Contains(t, byName[httptool.RequestName].Spec().Description, server.URL+"/v1")

	resp, err := call(t, byName[httptool.RequestName], `{"url":"/users/1?fields=name","headers":{"Accept":"application/json","X-Api-Version":"3"}}`)
	require.NoError(t, err)
	got := <-seen
	require.Equal(t, "GET", got.Method)
	require.Equal(t, "/v1/users/1", got.Path)
	require.Equal(t, "fields=name", got.Query)
	require.Equal(t, "Bearer s3cret", got.Header.Get("Authorization"))
	require.Equal(t, "3", got.Header.Get("X-Api-Version"), "the model's header replaces the default")
	require.Equal(t, "application/json", got.Header.Get("Accept"))

	require.Equal(t, 200, resp.Status)
	require.JSONEq(t, `{"id":1,"name":"Ada"}`, resp.Body)
	require.False(t, resp.Truncated)
	require.Equal(t, "application/json", resp.Headers["content-type"])
	require.Equal(t, `"v1"`, resp.Headers["etag"])
	require.NotContains(t, resp.Headers, "x-secret-internal")
	require.Empty(t, resp.URL)

	// "users/2" is under base_url too.
	_, err = call(t, byName[httptool.RequestName], `{"url":"users/2","method":"head"}`)
	require.NoError(t, err)
	got = <-seen
	require.Equal(t, "HEAD", got.Method)
	require.Equal(t, "/v1/users/2", got.Path)
}

func TestDefaultHeadersStayWithBaseURLHost(t *testing.T) {
	other, otherSeen := fake(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hi") })
	api, apiSeen := fake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, other.URL+"/landing", http.StatusFound)
		}
	})
	network := local()
	network.BaseURL = api.URL
	byName := tools(t, httptool.Config{Network: network, DefaultHeaders: map[string]string{"Authorization": "Bearer s3cret", "X-Api-Key": "k3y"}})

	resp, err := call(t, byName[httptool.RequestName], `{"url":"`+other.URL+`/page"}`)
	require.NoError(t, err)
	require.Equal(t, "hi", resp.Body)
	got := <-otherSeen
	require.Empty(t, got.Header.Get("Authorization"), "a credential for base_url's host went elsewhere")
	require.Empty(t, got.Header.Get("X-Api-Key"))

	_, err = call(t, byName[httptool.RequestName], `{"url":"`+api.URL+`/x"}`)
	require.NoError(t, err)
	got = <-apiSeen
	require.Equal(t, "Bearer s3cret", got.Header.Get("Authorization"))
	require.Equal(t, "k3y", got.Header.Get("X-Api-Key"))

	// Nor does a redirect carry them away.
	resp, err = call(t, byName[httptool.RequestName], `{"url":"/away"}`)
	require.NoError(t, err)
	require.Equal(t, other.URL+"/landing", resp.URL)
	require.Equal(t, "k3y", (<-apiSeen).Header.Get("X-Api-Key"))
	got = <-otherSeen
	require.Equal(t, "/landing", got.Path)
	require.Empty(t, got.Header.Get("X-Api-Key"))
	require.Empty(t, got.Header.Get("Authorization"))
}

func TestWrite(t *testing.T) {
	server, seen := fake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/items/7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":7}`)
	})
	byName := tools(t, httptool.Config{Network: local()})
	write := byName[httptool.WriteName]
	require.True(t, write.Spec().RequiresConfirmation, "writes are confirmed by default")
	require.False(t, byName[httptool.RequestName].Spec().RequiresConfirmation)

	resp, err := call(t, write, `{"method":"POST","url":"`+server.URL+`/items","json":{"name":"pen","tags":["a"]}}`)
	require.NoError(t, err)
	got := <-seen
	require.Equal(t, "POST", got.Method)
	require.Equal(t, "/items", got.Path)
	require.Equal(t, "application/json", got.Header.Get("Content-Type"))
	require.JSONEq(t, `{"name":"pen","tags":["a"]}`, got.Body)
	require.Equal(t, 201, resp.Status)
	require.Equal(t, "/items/7", resp.Headers["location"])
	require.Equal(t, `{"id":7}`, resp.Body)

	_, err = call(t, write, `{"method":"put","url":"`+server.URL+`/items/7","body":"a,b\n1,2","headers":{"Content-Type":"text/csv"}}`)
	require.NoError(t, err)
	got = <-seen
	require.Equal(t, "PUT", got.Method)
	require.Equal(t, "text/csv", got.Header.Get("Content-Type"))
	require.Equal(t, "a,b\n1,2", got.Body)

	_, err = call(t, write, `{"method":"POST","url":"`+server.URL+`","body":"x","json":{}}`)
	require.ErrorContains(t, err, "either body or json")
	_, err = call(t, write, `{"method":"GET","url":"`+server.URL+`"}`)
	require.ErrorContains(t, err, "use the http_request tool")
	_, err = call(t, byName[httptool.RequestName], `{"method":"DELETE","url":"`+server.URL+`"}`)
	require.ErrorContains(t, err, "use the http_write tool")
	_, err = call(t, byName[httptool.RequestName], `{"method":"BREW","url":"`+server.URL+`"}`)
	require.ErrorContains(t, err, `method "BREW": want one of GET, HEAD, OPTIONS`)
	require.Empty(t, seen, "refused calls sent nothing")

	unconfirmed := tools(t, httptool.Config{Network: local(), ConfirmWrites: new(false)})
	require.False(t, unconfirmed[httptool.WriteName].Spec().RequiresConfirmation)
}

func TestAllowedMethods(t *testing.T) {
	server, seen := fake(t, func(w http.ResponseWriter, r *http.Request) {})
	readOnly := tools(t, httptool.Config{Network: local(), AllowedMethods: []string{"get", "HEAD"}})
	require.Len(t, readOnly, 1, "no write method allowed, no http_write")
	_, err := call(t, readOnly[httptool.RequestName], `{"method":"OPTIONS","url":"`+server.URL+`"}`)
	require.ErrorContains(t, err, "OPTIONS is not allowed here; allowed: GET, HEAD")
	require.Empty(t, seen)

	writeOnly := tools(t, httptool.Config{Network: local(), AllowedMethods: []string{"POST"}})
	require.Len(t, writeOnly, 1)
	require.Contains(t, writeOnly, httptool.WriteName)
	_, err = call(t, writeOnly[httptool.WriteName], `{"method":"DELETE","url":"`+server.URL+`"}`)
	require.ErrorContains(t, err, "DELETE is not allowed here")
}

func TestTruncatedAndBinaryBodies(t *testing.T) {
	server, _ := fake(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, strings.Repeat("é", 100)) // 200 bytes
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...))
		case "/latin1":
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			_, _ = w.Write([]byte("caf\xe9"))
		case "/sniffed":
			w.Header()["Content-Type"] = nil
			_, _ = w.Write([]byte{0, 1, 2, 3, 0xff, 0xfe})
		}
	})
	network := local()
	network.MaxResponseBytes = 51
	request := tools(t, httptool.Config{Network: network})[httptool.RequestName]

	resp, err := call(t, request, `{"url":"`+server.URL+`/big"}`)
	require.NoError(t, err)
	require.True(t, resp.Truncated)
	require.Equal(t, strings.Repeat("é", 25), resp.Body, "cut at 51 bytes, on a rune boundary")
	require.Contains(t, resp.Note, "body cut at 51 of 200 bytes")

	resp, err = call(t, request, `{"url":"`+server.URL+`/png"}`)
	require.NoError(t, err)
	require.Empty(t, resp.Body)
	require.Equal(t, "binary body not shown: image/png, 48 bytes", resp.Note)

	resp, err = call(t, request, `{"url":"`+server.URL+`/latin1"}`)
	require.NoError(t, err)
	require.Equal(t, "café", resp.Body)

	resp, err = call(t, request, `{"url":"`+server.URL+`/sniffed"}`)
	require.NoError(t, err)
	require.Equal(t, "binary body not shown: application/octet-stream, 6 bytes", resp.Note)
}

func TestDefaultLimit(t *testing.T) {
	server, _ := fake(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("a", httptool.DefaultMaxResponseBytes+10))
	})
	resp, err := call(t, tools(t, httptool.Config{Network: local()})[httptool.RequestName], `{"url":"`+server.URL+`"}`)
	require.NoError(t, err)
	require.True(t, resp.Truncated)
	require.Len(t, resp.Body, httptool.DefaultMaxResponseBytes)
}

func TestRedirectIsFollowed(t *testing.T) {
	server, _ := fake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
			return
		}
		_, _ = io.WriteString(w, "moved here")
	})
	resp, err := call(t, tools(t, httptool.Config{Network: local()})[httptool.RequestName], `{"url":"`+server.URL+`/old"}`)
	require.NoError(t, err)
	require.Equal(t, server.URL+"/new", resp.URL)
	require.Equal(t, "moved here", resp.Body)
}

func TestErrorStatusesAreClassified(t *testing.T) {
	server, _ := fake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/private":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"invalid token"}}`)
		case "/busy":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"message":"slow down"}`)
		case "/broken":
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"detail":"no such item"}`)
		}
	})
	request := tools(t, httptool.Config{Network: local()})[httptool.RequestName]
	for path, want := range map[string]struct {
		class run.ErrorClass
		text  string
	}{
		"/private": {run.ClassAuthentication, "http: authentication_error (HTTP 401): invalid token"},
		"/busy":    {run.ClassRateLimit, "http: rate_limit (HTTP 429): slow down"},
		"/broken":  {run.ClassServer, "http: server_error (HTTP 502)"},
		"/missing": {run.ClassBadRequest, "http: bad_request (HTTP 404): no such item"},
	} {
		_, err := call(t, request, `{"url":"`+server.URL+path+`"}`)
		require.Error(t, err, path)
		require.Equal(t, want.class, run.ClassOf(err), path)
		require.ErrorContains(t, err, want.text, path)
		var tkErr *toolkit.Error
		require.True(t, errors.As(err, &tkErr))
	}
}

func TestPrivateAddressesAreRefused(t *testing.T) {
	var hits atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer server.Close()
	byName := tools(t, httptool.Config{ConfirmWrites: new(false)})
	for name, args := range map[string]string{
		httptool.RequestName: `{"url":"` + server.URL + `/admin"}`,
		httptool.WriteName:   `{"method":"DELETE","url":"` + server.URL + `/admin"}`,
	} {
		_, err := call(t, byName[name], args)
		require.Error(t, err, name)
		require.Equal(t, run.ClassBadRequest, run.ClassOf(err), name)
		require.ErrorContains(t, err, "allow_private", name)
	}
	_, err := call(t, byName[httptool.RequestName], `{"url":"http://169.254.169.254/latest/meta-data/"}`)
	require.Equal(t, run.ClassBadRequest, run.ClassOf(err))
	require.Zero(t, hits.Load())

	allowed := tools(t, httptool.Config{Network: toolkit.Network{AllowHosts: []string{"127.0.0.1"}}})
	_, err = call(t, allowed[httptool.RequestName], `{"url":"`+server.URL+`"}`)
	require.NoError(t, err)
	require.EqualValues(t, 1, hits.Load())
}

func TestBadURLs(t *testing.T) {
	request := tools(t, httptool.Config{Network: local()})[httptool.RequestName]
	for args, want := range map[string]string{
		`{"url":"/relative"}`:          "want an absolute http or https URL",
		`{"url":"file:///etc/passwd"}`: "only http and https",
		`{"url":"  "}`:                 "url is empty",
		`{"url":"https://example.com","headers":{"Host":"internal"}}`:   "header Host",
		`{"url":"https://example.com","headers":{"X-A":"b\r\nX-B: c"}}`: "header X-A",
	} {
		_, err := call(t, request, args)
		require.ErrorContains(t, err, want, args)
		require.Equal(t, run.ClassBadRequest, run.ClassOf(err), args)
	}
}

func TestBadSettings(t *testing.T) {
	for _, tc := range []struct {
		cfg  httptool.Config
		want string
	}{
		{httptool.Config{AllowedMethods: []string{"GET", "FETCH"}}, `allowed_methods: "FETCH" is not one of GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE`},
		{httptool.Config{DefaultHeaders: map[string]string{"Bad Name": "x"}}, `default_headers: "Bad Name" is not a valid header name`},
		{httptool.Config{DefaultHeaders: map[string]string{"X-A": "a\nb"}}, "default_headers: the value of X-A"},
		{httptool.Config{Network: toolkit.Network{BaseURL: "ftp://example.com"}}, "base_url"},
		{httptool.Config{Network: toolkit.Network{TimeoutSeconds: -1}}, "timeout_seconds"},
	} {
		_, err := httptool.New(tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestDefinition(t *testing.T) {
	def := httptool.Definition()
	require.Equal(t, "http", def.Name())
	require.Equal(t, httptool.Names(), def.ToolNames())
	require.Contains(t, def.Keys(), "allowed_methods")
	require.Contains(t, def.Keys(), "max_response_bytes")

	got, _, err := def.Build(t.Context(), json.RawMessage(`{"base_url":"https://api.example.com/v1","allowed_methods":["GET","POST"],
		"default_headers":{"Authorization":"Bearer x"},"confirm_writes":false,"timeout_seconds":5,"exclude_tools":["http_request"]}`))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, httptool.WriteName, got[0].Spec().Name)
	require.False(t, got[0].Spec().RequiresConfirmation)

	_, _, err = def.Build(t.Context(), json.RawMessage(`{"allowed_method":["GET"]}`))
	require.ErrorContains(t, err, `unknown key "allowed_method"`)
	_, _, err = def.Build(t.Context(), json.RawMessage(`{"allowed_methods":["TRACE"]}`))
	require.ErrorContains(t, err, "allowed_methods")
	_, _, err = def.Build(t.Context(), json.RawMessage(`{"confirm_writes":"no"}`))
	require.ErrorContains(t, err, "confirm_writes")
}
