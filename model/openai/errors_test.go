package openai_test

import (
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
)

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		reply         fakeopenai.Reply
		wantStatus    int
		wantClass     model.Class
		wantRetryable bool
		wantMessage   string
	}{
		{
			name:       "server overloaded",
			reply:      fakeopenai.Error(http.StatusServiceUnavailable, "", "The server is overloaded."),
			wantStatus: 503, wantClass: model.ClassServer, wantRetryable: true,
			wantMessage: "The server is overloaded.",
		},
		{
			name:       "bad key",
			reply:      fakeopenai.Error(http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided: sk-test."),
			wantStatus: 401, wantClass: model.ClassAuth, wantRetryable: false,
			wantMessage: "Incorrect API key provided: sk-test.",
		},
		{
			name:       "rate limited",
			reply:      fakeopenai.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "Rate limit reached for requests."),
			wantStatus: 429, wantClass: model.ClassRateLimit, wantRetryable: true,
			wantMessage: "Rate limit reached for requests.",
		},
		{
			name:       "context window",
			reply:      fakeopenai.ContextLengthExceeded(),
			wantStatus: 400, wantClass: model.ClassContextWindow, wantRetryable: false,
			wantMessage: "maximum context length",
		},
		{
			name:       "content policy",
			reply:      fakeopenai.Error(http.StatusBadRequest, "content_policy_violation", "Your request was rejected by our safety system."),
			wantStatus: 400, wantClass: model.ClassContentPolicy, wantRetryable: false,
			wantMessage: "rejected",
		},
		{
			name:       "azure content filter",
			reply:      fakeopenai.Error(http.StatusBadRequest, "content_filter", "The response was filtered due to the prompt triggering Azure OpenAI's content management policy."),
			wantStatus: 400, wantClass: model.ClassContentPolicy, wantRetryable: false,
			wantMessage: "content management policy",
		},
		{
			name:       "bad request",
			reply:      fakeopenai.Error(http.StatusBadRequest, "invalid_value", "Invalid value for 'temperature'."),
			wantStatus: 400, wantClass: model.ClassBadRequest, wantRetryable: false,
			wantMessage: "temperature",
		},
		{
			name:       "proxy error page",
			reply:      fakeopenai.RawError(http.StatusBadGateway, "<html><body>502 Bad Gateway</body></html>"),
			wantStatus: 502, wantClass: model.ClassServer, wantRetryable: true,
			wantMessage: "502 Bad Gateway",
		},
		{
			name:       "ollama unknown model",
			reply:      fakeopenai.RawError(http.StatusNotFound, `{"error":"model \"llama9\" not found, try pulling it first"}`),
			wantStatus: 404, wantClass: model.ClassBadRequest, wantRetryable: false,
			wantMessage: `model "llama9" not found`,
		},
		{
			name:       "vllm context window",
			reply:      fakeopenai.RawError(http.StatusBadRequest, `{"detail":"This model's maximum context length is 4096 tokens."}`),
			wantStatus: 400, wantClass: model.ClassContextWindow, wantRetryable: false,
			wantMessage: "maximum context length",
		},
	}
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		for _, tc := range cases {
			b := setup(t, api)
			b.srv.Enqueue(tc.reply)

			resp, err := call(t, b.model, stream, userRequest("hi"))
			require.Nil(t, resp, tc.name)
			var modelErr *model.Error
			require.ErrorAs(t, err, &modelErr, tc.name)
			require.Equal(t, "OpenAI", modelErr.Provider, tc.name)
			require.Equal(t, tc.wantStatus, modelErr.StatusCode, tc.name)
			require.Equal(t, tc.wantClass, modelErr.Class, "%s: %v", tc.name, err)
			require.Equal(t, tc.wantClass, model.ClassOf(err), tc.name)
			require.Equal(t, tc.wantRetryable, model.IsRetryable(err), tc.name)
			require.Contains(t, modelErr.Message, tc.wantMessage, tc.name)
			require.Len(t, b.srv.Requests(), 1, "%s: exactly one request: the SDK does not retry", tc.name)
		}
	})
}

func TestFailureMidStream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reply     fakeopenai.Reply
		wantClass model.Class
	}{
		{fakeopenai.Failed("context_length_exceeded", "Your input exceeds the context window of this model."), model.ClassContextWindow},
		{fakeopenai.Failed("server_error", "The model had an error."), model.ClassServer},
		{fakeopenai.Failed("rate_limit_exceeded", "Slow down."), model.ClassRateLimit},
	}
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			b := setup(t, api)
			for _, tc := range cases {
				b.srv.Enqueue(tc.reply)
				result := collect(t.Context(), b.model, userRequest("hi"))
				require.Nil(t, result.response)
				var modelErr *model.Error
				require.ErrorAs(t, result.err, &modelErr)
				require.Equal(t, tc.wantClass, modelErr.Class, "%v", result.err)
				require.Zero(t, modelErr.StatusCode, "the HTTP status was 200")
				require.NotEmpty(t, modelErr.Message)
			}
		})
	}
}

func TestEmptyQueueIsAServerError(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		b := setup(t, api)
		_, err := call(t, b.model, stream, userRequest("hi"))
		var modelErr *model.Error
		require.ErrorAs(t, err, &modelErr)
		require.Equal(t, 500, modelErr.StatusCode)
		require.Contains(t, modelErr.Message, "no reply enqueued")
	})
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	baseURL := "http://" + listener.Addr().String() + "/v1"
	require.NoError(t, listener.Close())

	forEachMode(t, func(t *testing.T, api string, stream bool) {
		m, err := openai.New(openai.Config{ID: "gpt-test", BaseURL: baseURL, API: api})
		require.NoError(t, err)
		_, err = call(t, m, stream, userRequest("hi"))
		require.Error(t, err)
		require.Equal(t, model.ClassConnection, model.ClassOf(err), "%v", err)
		require.True(t, model.IsRetryable(err))
		var opErr *net.OpError
		require.True(t, errors.As(err, &opErr), "the transport error is kept as the cause")
	})
}
