package fakeanthropic_test

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeanthropic"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// post sends a Messages request and returns the response and its body.
func post(t *testing.T, srv *fakeanthropic.Server, body string) (*http.Response, string) {
	t.Helper()
	request, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
	require.NoError(t, err)
	request.Header.Set("Content-Type", "application/json")
	response, err := http.DefaultClient.Do(request)
	require.NoError(t, err)
	defer response.Body.Close()
	data, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	return response, string(data)
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), got)
}

func scripted() fakeanthropic.Reply {
	return fakeanthropic.Message(
		fakeanthropic.ThinkingBlock("Paris, so metric."),
		fakeanthropic.TextBlock("Checking the weather."),
		fakeanthropic.ToolUseBlock("get_weather", `{"city":"Paris"}`),
	).WithUsage(fakeanthropic.Usage{InputTokens: 20, OutputTokens: 9, CacheReadInputTokens: 100, CacheCreationInputTokens: 5})
}

func TestStreamFrames(t *testing.T) {
	t.Parallel()
	srv := fakeanthropic.New(t)
	srv.Enqueue(scripted(), fakeanthropic.Text("Partly cloudy").ThenStreamError("overloaded_error", "Overloaded"))

	response, body := post(t, srv, `{"model":"claude-test","max_tokens":10,"stream":true,"messages":[]}`)
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.Equal(t, "text/event-stream", response.Header.Get("Content-Type"))
	require.Equal(t, "req_fake_001", response.Header.Get("Request-Id"))
	golden(t, "stream.golden", body)

	_, body = post(t, srv, `{"model":"claude-test","max_tokens":10,"stream":true,"messages":[]}`)
	golden(t, "stream_error.golden", body)
}

func TestJSONReply(t *testing.T) {
	t.Parallel()
	srv := fakeanthropic.New(t)
	srv.Enqueue(scripted())

	response, body := post(t, srv, `{"model":"claude-test","max_tokens":10,"messages":[]}`)
	require.Equal(t, http.StatusOK, response.StatusCode)
	require.Equal(t, "application/json", response.Header.Get("Content-Type"))
	require.JSONEq(t, `{
		"id":"msg_fake_001","type":"message","role":"assistant","model":"claude-test",
		"content":[
			{"type":"thinking","thinking":"Paris, so metric.","signature":"sig_fake"},
			{"type":"text","text":"Checking the weather."},
			{"type":"tool_use","id":"toolu_fake_01","name":"get_weather","input":{"city":"Paris"}}
		],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":20,"output_tokens":9,"cache_read_input_tokens":100,"cache_creation_input_tokens":5}
	}`, body)
}

func TestErrors(t *testing.T) {
	t.Parallel()
	srv := fakeanthropic.New(t)
	srv.Enqueue(
		fakeanthropic.HTTPError(529, "overloaded_error", "Overloaded").WithHeader("retry-after", "3"),
		fakeanthropic.StreamError("rate_limit_error", "slow down"),
	)

	response, body := post(t, srv, `{"stream":true}`)
	require.Equal(t, 529, response.StatusCode)
	require.Equal(t, "3", response.Header.Get("Retry-After"))
	require.JSONEq(t, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake_001"}`, body)

	response, body = post(t, srv, `{}`)
	require.Equal(t, http.StatusTooManyRequests, response.StatusCode, "a non-streaming request gets the error as a status")
	require.Contains(t, body, "slow down")

	response, body = post(t, srv, `{}`)
	require.Equal(t, http.StatusInternalServerError, response.StatusCode)
	require.Contains(t, body, "no reply enqueued for request 3")

	response, body = post(t, srv, `not json`)
	require.Equal(t, http.StatusBadRequest, response.StatusCode)
	require.Contains(t, body, "not a JSON object")

	getResponse, err := http.Get(srv.URL + "/v1/models")
	require.NoError(t, err)
	require.NoError(t, getResponse.Body.Close())
	require.Equal(t, http.StatusNotFound, getResponse.StatusCode)

	require.Len(t, srv.Requests(), 3, "only well-formed Messages requests are recorded")
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	srv := fakeanthropic.New(t)
	const requests = 20
	for i := range requests {
		srv.Enqueue(fakeanthropic.Text(fmt.Sprintf("reply %d", i)))
	}
	statuses := make(chan int, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			body := fmt.Sprintf(`{"n":%d,"stream":%t}`, i, i%2 == 0)
			response, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
			if err != nil {
				statuses <- 0
				return
			}
			_, _ = io.Copy(io.Discard, response.Body)
			_ = response.Body.Close()
			statuses <- response.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	for status := range statuses {
		require.Equal(t, http.StatusOK, status)
	}
	require.Len(t, srv.Requests(), requests)
	require.Len(t, srv.Headers(), requests)
	require.Zero(t, srv.Pending())
}
