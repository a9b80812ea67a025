package anthropic_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/anthropic"
)

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		reply     fakeanthropic.Reply
		class     model.Class
		retryable bool
	}{
		{"overloaded", fakeanthropic.HTTPError(529, "overloaded_error", "Overloaded"), model.ClassServer, true},
		{"server", fakeanthropic.HTTPError(500, "api_error", "Internal server error"), model.ClassServer, true},
		{"rate limit", fakeanthropic.HTTPError(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), model.ClassRateLimit, true},
		{"auth", fakeanthropic.HTTPError(401, "authentication_error", "invalid x-api-key"), model.ClassAuth, false},
		{"prompt too long", fakeanthropic.HTTPError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"), model.ClassContextWindow, false},
		{"bad request", fakeanthropic.HTTPError(400, "invalid_request_error", "messages: roles must alternate"), model.ClassBadRequest, false},
	} {
		check := func(t *testing.T, b bundle, err error) {
			t.Helper()
			var modelErr *model.Error
			require.ErrorAs(t, err, &modelErr)
			require.Equal(t, "Anthropic", modelErr.Provider)
			require.Equal(t, tc.class, modelErr.Class)
			require.Equal(t, tc.retryable, model.IsRetryable(err))
			require.Len(t, b.srv.Requests(), 1, "the SDK must not retry")
			require.Contains(t, modelErr.Message, "_error: ")
		}
		t.Run(tc.name+"/Invoke", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.srv.Enqueue(tc.reply, fakeanthropic.Text("must not be reached"))
			_, err := b.model.Invoke(t.Context(), userRequest("hi"))
			check(t, b, err)
		})
		t.Run(tc.name+"/Stream", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.srv.Enqueue(tc.reply, fakeanthropic.Text("must not be reached"))
			got := collect(t, b.model.Stream(t.Context(), userRequest("hi")))
			check(t, b, got.err)
			require.Empty(t, got.content)
		})
	}
}

func TestHTTPErrorKeepsStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.HTTPError(529, "overloaded_error", "Overloaded"))
	_, err := b.model.Invoke(t.Context(), userRequest("hi"))
	var modelErr *model.Error
	require.ErrorAs(t, err, &modelErr)
	require.Equal(t, 529, modelErr.StatusCode)
	require.Equal(t, "overloaded_error: Overloaded", modelErr.Message)
	require.EqualError(t, err, "Anthropic: server_error (HTTP 529): overloaded_error: Overloaded")
}

func TestMidStreamError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.Text("A partial answer").ThenStreamError("overloaded_error", "Overloaded"))

	got := collect(t, b.model.Stream(t.Context(), userRequest("hi")))
	require.Equal(t, "A partial answer", strings.Join(got.content, ""))
	require.Nil(t, got.response)
	var modelErr *model.Error
	require.ErrorAs(t, got.err, &modelErr)
	require.Equal(t, model.ClassServer, modelErr.Class)
	require.Zero(t, modelErr.StatusCode)
	require.Contains(t, modelErr.Message, "overloaded_error: Overloaded")
	require.True(t, model.IsRetryable(got.err))
}

func TestStreamEndingEarlyIsAnError(t *testing.T) {
	t.Parallel()
	// A server that closes the stream after message_start, without an error
	// event or message_stop.
	srv := http.Server{}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"))
	})
	go func() { _ = srv.Serve(listener) }()
	t.Cleanup(func() { _ = srv.Close() })

	m, err := anthropic.New(anthropic.Config{ID: testModelID, BaseURL: "http://" + listener.Addr().String()})
	require.NoError(t, err)
	got := collect(t, m.Stream(t.Context(), userRequest("hi")))
	require.ErrorContains(t, got.err, "stream ended before message_stop")
	require.True(t, model.IsRetryable(got.err))
}

func TestInvokeGetsHTTPErrorForStreamErrorReply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.StreamError("overloaded_error", "Overloaded"))
	_, err := b.model.Invoke(t.Context(), userRequest("hi"))
	var modelErr *model.Error
	require.ErrorAs(t, err, &modelErr)
	require.Equal(t, 529, modelErr.StatusCode)
	require.True(t, model.IsRetryable(err))
}

func TestEmptyQueueFailsLoudly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.model.Invoke(t.Context(), userRequest("hi"))
	require.ErrorContains(t, err, "no reply enqueued for request 1")
	require.Equal(t, model.ClassServer, model.ClassOf(err))
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	address := listener.Addr().String()
	require.NoError(t, listener.Close())

	m, err := anthropic.New(anthropic.Config{ID: testModelID, BaseURL: "http://" + address})
	require.NoError(t, err)
	for name, call := range map[string]func() error{
		"Invoke": func() error { _, err := m.Invoke(t.Context(), userRequest("hi")); return err },
		"Stream": func() error { return collect(t, m.Stream(t.Context(), userRequest("hi"))).err },
	} {
		err := call()
		var modelErr *model.Error
		require.ErrorAs(t, err, &modelErr, name)
		require.Equal(t, model.ClassConnection, modelErr.Class, name)
		require.Zero(t, modelErr.StatusCode, name)
		var opErr *net.OpError
		require.ErrorAs(t, err, &opErr, "%s: the cause is kept", name)
		require.True(t, model.IsRetryable(err), name)
	}
}

func TestMaxRetriesLetsTheSDKRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, func(cfg *anthropic.Config) { cfg.MaxRetries = 1 })
	b.srv.Enqueue(
		fakeanthropic.HTTPError(529, "overloaded_error", "Overloaded").WithHeader("retry-after-ms", "0"),
		fakeanthropic.Text("second time lucky"),
	)
	response, err := b.model.Invoke(t.Context(), userRequest("hi"))
	require.NoError(t, err)
	require.Equal(t, "second time lucky", response.Content)
	require.Len(t, b.srv.Requests(), 2)
}

func TestInvokeCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.Text("never sent").ThenHang())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := b.model.Invoke(ctx, userRequest("hi"))
		done <- err
	}()
	require.Eventually(t, func() bool { return len(b.srv.Requests()) == 1 }, testTimeout, pollInterval)
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, model.IsRetryable(err))
	require.Eventually(t, func() bool { return b.srv.Disconnects() == 1 }, testTimeout, pollInterval)
}

func TestStreamCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.Text("first words then silence").ThenHang())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var chunks int
	var streamErr error
	for chunk, err := range b.model.Stream(ctx, userRequest("hi")) {
		if err != nil {
			streamErr = err
			break
		}
		require.Nil(t, chunk.Response)
		chunks++
		if chunks == 4 { // all the text: the server now hangs
			cancel()
		}
	}
	require.Equal(t, 4, chunks)
	require.ErrorIs(t, streamErr, context.Canceled)
	require.False(t, model.IsRetryable(streamErr))
	require.Eventually(t, func() bool { return b.srv.Disconnects() == 1 }, testTimeout, pollInterval)
}

func TestStreamBreakClosesConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(fakeanthropic.Text("one two three four").ThenHang())
	for chunk, err := range b.model.Stream(t.Context(), userRequest("hi")) {
		require.NoError(t, err)
		require.Equal(t, "one ", chunk.ContentDelta)
		break
	}
	require.Eventually(t, func() bool { return b.srv.Disconnects() == 1 }, testTimeout, pollInterval)
}
