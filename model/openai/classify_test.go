package openai

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/model"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status              int
		code, kind, message string
		want                model.Class
	}{
		{500, "", "server_error", "boom", model.ClassServer},
		{529, "", "", "overloaded", model.ClassServer},
		{429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota", model.ClassRateLimit},
		{401, "invalid_api_key", "invalid_request_error", "Incorrect API key", model.ClassAuth},
		{403, "", "permission_error", "no access", model.ClassAuth},
		{408, "", "", "timeout", model.ClassTimeout},
		{404, "model_not_found", "invalid_request_error", "The model does not exist", model.ClassBadRequest},
		{400, "context_length_exceeded", "invalid_request_error", "too long", model.ClassContextWindow},
		{400, "", "", "This model's maximum context length is 8192 tokens", model.ClassContextWindow},
		{413, "", "", "Input exceeds the context window", model.ClassContextWindow},
		{400, "content_filter", "", "filtered", model.ClassContentPolicy},
		{400, "invalid_prompt", "invalid_request_error", "Invalid prompt: your prompt was flagged as potentially violating our usage policy.", model.ClassContentPolicy},
		{429, "rate_limit_exceeded", "tokens", "Rate limit reached; context window is large", model.ClassRateLimit},
		{0, "context_length_exceeded", "server_error", "", model.ClassContextWindow},
		{0, "rate_limit_exceeded", "", "", model.ClassRateLimit},
		{0, "server_error", "", "", model.ClassServer},
		{0, "invalid_prompt", "", "bad prompt", model.ClassBadRequest},
		{0, "", "", "something odd", model.ClassUnknown},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, classify(tc.status, tc.code, tc.kind, tc.message), "%+v", tc)
	}
}

func TestOpenAIErrorBody(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body        string
		wantChanged bool
		wantMessage string
	}{
		{`{"error":{"message":"as OpenAI sends it","code":"x"}}`, false, ""},
		{`{"error":"model not found"}`, true, "model not found"},
		{`{"detail":"Not Found"}`, true, "Not Found"},
		{`{"message":"upstream failed"}`, true, "upstream failed"},
		{`<html>Bad Gateway</html>`, true, "<html>Bad Gateway</html>"},
		{``, true, "Bad Gateway"},
	}
	for _, tc := range cases {
		body, changed := openAIErrorBody(http.StatusBadGateway, []byte(tc.body))
		require.Equal(t, tc.wantChanged, changed, tc.body)
		if !changed {
			require.Equal(t, tc.body, string(body))
			continue
		}
		_, _, message := errorFields(body)
		require.Equal(t, tc.wantMessage, message, tc.body)
	}
}

func TestSchemaName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "WeatherReport", schemaName("WeatherReport"))
	require.Equal(t, "Weather_report_v2", schemaName("Weather report.v2"))
	require.Equal(t, "response", schemaName(""))
	require.Len(t, schemaName(string(make([]byte, 100))), 64)
}
