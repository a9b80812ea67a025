package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/run"
)

var _ model.Model = (*openai.Model)(nil)

// apis are the two APIs every behaviour is tested on.
var apis = []string{openai.APIChat, openai.APIResponses}

// testBundle is a model wired to a fake server.
type testBundle struct {
	srv   *fakeopenai.Server
	model *openai.Model
}

func setup(t *testing.T, api string) testBundle {
	t.Helper()
	srv := fakeopenai.New(t)
	m, err := openai.New(openai.Config{ID: "gpt-test", APIKey: "sk-test", BaseURL: srv.URL, API: api})
	require.NoError(t, err)
	return testBundle{srv: srv, model: m}
}

// streamResult is what a consumer of Stream saw.
type streamResult struct {
	content   string
	reasoning string
	deltas    int
	response  *model.Response
	err       error
}

func collect(ctx context.Context, m model.Model, req *model.Request) streamResult {
	var result streamResult
	for chunk, err := range m.Stream(ctx, req) {
		if err != nil {
			result.err = err
			break
		}
		if chunk.Response != nil {
			result.response = chunk.Response
			continue
		}
		result.deltas++
		result.content += chunk.ContentDelta
		result.reasoning += chunk.ReasoningDelta
	}
	return result
}

// call runs req through Invoke or Stream and returns the final reply; for a
// stream it also checks the deltas add up to the reply.
func call(t *testing.T, m model.Model, stream bool, req *model.Request) (*model.Response, error) {
	t.Helper()
	if !stream {
		return m.Invoke(t.Context(), req)
	}
	result := collect(t.Context(), m, req)
	if result.err != nil {
		require.Nil(t, result.response, "no final reply after an error")
		return nil, result.err
	}
	require.NotNil(t, result.response, "the last chunk carries the reply")
	require.Equal(t, result.response.Content, result.content, "content deltas add up to the reply")
	require.Equal(t, result.response.ReasoningContent, result.reasoning, "reasoning deltas add up to the reply")
	return result.response, nil
}

// forEachMode runs test for both APIs, with Invoke and with Stream.
func forEachMode(t *testing.T, test func(t *testing.T, api string, stream bool)) {
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			name := api + "/invoke"
			if stream {
				name = api + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				test(t, api, stream)
			})
		}
	}
}

func userRequest(text string) *model.Request {
	return &model.Request{Messages: []*run.Message{{Role: run.RoleUser, Content: text}}}
}

// jsonOf re-encodes a decoded request value, for JSONEq.
func jsonOf(t *testing.T, value any) string {
	t.Helper()
	encoded, err := json.Marshal(value)
	require.NoError(t, err)
	return string(encoded)
}

func TestNewValidatesConfig(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")

	_, err := openai.New(openai.Config{ID: "gpt-test"})
	require.ErrorContains(t, err, "OPENAI_API_KEY", "OpenAI itself needs a key")

	m, err := openai.New(openai.Config{ID: "llama3.2", BaseURL: "http://localhost:11434/v1"})
	require.NoError(t, err, "a compatible server such as Ollama needs no key")
	require.Equal(t, model.Info{ID: "llama3.2", Provider: "OpenAI"}, m.Info())

	t.Setenv("OPENAI_API_KEY", "sk-env")
	m, err = openai.New(openai.Config{ID: "gpt-test", Provider: "Ollama"})
	require.NoError(t, err, "the key defaults to $OPENAI_API_KEY")
	require.Equal(t, "Ollama", m.Info().Provider)

	for _, cfg := range []openai.Config{
		{},
		{ID: "gpt-test", API: "completions"},
		{ID: "gpt-test", BaseURL: "localhost:11434"},
		{ID: "gpt-test", MaxRetries: -1},
		{ID: "gpt-test", MaxTokens: -1},
	} {
		_, err := openai.New(cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

func TestDefaultEndpointSendsKeyAndMaxCompletionTokens(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "") // set but empty: the SDK alone would lose its host
	for _, baseURL := range []string{"", "https://api.openai.com/v1"} {
		srv := fakeopenai.New(t)
		srv.Enqueue(fakeopenai.Text("hello"))
		m, err := openai.New(openai.Config{
			ID:         "gpt-test",
			APIKey:     "sk-secret",
			BaseURL:    baseURL,
			MaxTokens:  256,
			HTTPClient: &http.Client{Transport: redirectTo(t, srv.URL)},
		})
		require.NoError(t, err)

		resp, err := m.Invoke(t.Context(), userRequest("hi"))
		require.NoError(t, err)
		require.Equal(t, "hello", resp.Content)

		requests := srv.Requests()
		require.Len(t, requests, 1)
		require.Equal(t, "Bearer sk-secret", requests[0].Header.Get("Authorization"))
		require.EqualValues(t, 256, requests[0].Body["max_completion_tokens"], "OpenAI's current name for the cap")
		require.NotContains(t, requests[0].Body, "max_tokens")
	}
}

func TestCompatibleServerGetsMaxTokensAndTemperature(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.New(t)
	srv.Enqueue(fakeopenai.Text("one"), fakeopenai.Text("two"))
	m, err := openai.New(openai.Config{ID: "llama3.2", BaseURL: srv.URL, Temperature: new(0.2), MaxTokens: 100})
	require.NoError(t, err)

	_, err = m.Invoke(t.Context(), userRequest("hi"))
	require.NoError(t, err)
	req := userRequest("again")
	req.Temperature = new(0.9)
	req.MaxTokens = 50
	_, err = m.Invoke(t.Context(), req)
	require.NoError(t, err)

	requests := srv.Requests()
	require.Empty(t, requests[0].Header.Get("Authorization"), "no key, no header")
	require.EqualValues(t, 100, requests[0].Body["max_tokens"], "compatible servers know max_tokens")
	require.InDelta(t, 0.2, requests[0].Body["temperature"], 1e-9)
	require.EqualValues(t, 50, requests[1].Body["max_tokens"], "the request overrides the config")
	require.InDelta(t, 0.9, requests[1].Body["temperature"], 1e-9)
}

// redirectTo is a transport that sends every request to the fake server,
// standing in for api.openai.com.
func redirectTo(t *testing.T, baseURL string) http.RoundTripper {
	t.Helper()
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		require.Equal(t, "api.openai.com", req.URL.Host)
		target := req.Clone(req.Context())
		target.URL.Scheme = "http"
		target.URL.Host = baseURL[len("http://") : len(baseURL)-len("/v1")]
		target.Host = target.URL.Host
		return http.DefaultTransport.RoundTrip(target)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
