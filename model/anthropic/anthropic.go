package anthropic

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"os"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agnogo/agnogo/model"
)

// Provider is the provider name the model reports, as Agno names it.
const Provider = "Anthropic"

// APIKeyEnv is the environment variable [Config.APIKey] defaults to.
const APIKeyEnv = "ANTHROPIC_API_KEY"

// DefaultMaxTokens is the max_tokens sent when neither [Config.MaxTokens] nor
// [model.Request.MaxTokens] sets one; the API requires a value.
const DefaultMaxTokens = 8192

// responseHeaderTimeout bounds the wait for response headers on the default
// HTTP client, as the SDK's own default client does; streams are not
// affected once the headers arrive.
const responseHeaderTimeout = 10 * time.Minute

// Config configures a [Model].
type Config struct {
	// ID is the Anthropic model id, e.g. claude-sonnet-4-5. Required.
	ID string
	// APIKey authenticates the requests. Defaults to the ANTHROPIC_API_KEY
	// environment variable; [New] fails when both are empty, unless BaseURL
	// is set (a proxy or a test fake may need no key). No other credential
	// source of the SDK (auth tokens, profiles, federation) is consulted.
	APIKey string
	// BaseURL is the API's address, without /v1. Defaults to
	// https://api.anthropic.com; ANTHROPIC_BASE_URL is not read.
	BaseURL string
	// HTTPClient sends the requests. Defaults to a client on a clone of
	// [http.DefaultTransport] that waits at most 10 minutes for response
	// headers, like the SDK's default.
	HTTPClient *http.Client
	// MaxTokens caps the reply's length; [model.Request.MaxTokens] overrides
	// it per call. Defaults to 8192 ([DefaultMaxTokens]).
	MaxTokens int
	// Temperature is sent as "temperature" when set;
	// [model.Request.Temperature] overrides it per call. Defaults to nil:
	// not sent, the model's default. The SDK's API version (2026-10-21)
	// rejects temperature with HTTP 400 on every model, so set it only for a
	// BaseURL that accepts it.
	Temperature *float64
	// MaxRetries is how many times the SDK itself retries a failed request.
	// Defaults to 0: the agent's run loop owns retries (with backoff and
	// events), so the SDK never retries behind its back.
	MaxRetries int
}

// validate checks c and fills in its defaults.
func (c *Config) validate() error {
	if c.ID == "" {
		return errors.New("new anthropic model: Config.ID is required")
	}
	if c.APIKey == "" {
		c.APIKey = os.Getenv(APIKeyEnv)
	}
	if c.APIKey == "" && c.BaseURL == "" {
		return errors.New("new anthropic model: no API key: set Config.APIKey or the " + APIKeyEnv + " environment variable")
	}
	if c.MaxTokens < 0 {
		return errors.New("new anthropic model: Config.MaxTokens must not be negative")
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.MaxRetries < 0 {
		return errors.New("new anthropic model: Config.MaxRetries must not be negative")
	}
	if c.HTTPClient == nil {
		c.HTTPClient = defaultHTTPClient()
	}
	return nil
}

func defaultHTTPClient() *http.Client {
	if transport, ok := http.DefaultTransport.(*http.Transport); ok {
		transport = transport.Clone()
		transport.ResponseHeaderTimeout = responseHeaderTimeout
		return &http.Client{Transport: transport}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

// Model is an Anthropic model behind the Messages API. It implements
// [model.Model] and is safe for concurrent use.
type Model struct {
	id          string
	maxTokens   int
	temperature *float64
	messages    sdk.MessageService
}

var _ model.Model = (*Model)(nil)

// New returns a model configured by cfg.
func New(cfg Config) (*Model, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		// The config is the only source of settings: no environment defaults.
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	client := sdk.NewClient(opts...)
	return &Model{
		id:          cfg.ID,
		maxTokens:   cfg.MaxTokens,
		temperature: cfg.Temperature,
		messages:    client.Messages,
	}, nil
}

// Info implements [model.Model].
func (m *Model) Info() model.Info { return model.Info{ID: m.id, Provider: Provider} }

// Invoke implements [model.Model] with one Messages API request.
func (m *Model) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	call, err := m.newCall(req)
	if err != nil {
		return nil, err
	}
	var opts []option.RequestOption
	// The SDK refuses non-streaming requests whose max_tokens could take
	// over ten minutes to generate. The caller's ctx bounds the call instead.
	if _, err := sdk.CalculateNonStreamingTimeout(int(call.params.MaxTokens), call.params.Model, nil); err != nil {
		opts = append(opts, option.WithRequestTimeout(time.Hour))
	}
	message, err := m.messages.New(ctx, call.params, opts...)
	if err != nil {
		return nil, providerError(ctx, err)
	}
	return call.response(message), nil
}

// Stream implements [model.Model] with one streaming Messages API request.
// Text arrives as ContentDelta, thinking as ReasoningDelta, and the input of
// the structured-output tool (see the package doc) as ContentDelta too; tool
// calls are assembled from their input_json_delta events and delivered with
// the final chunk.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		call, err := m.newCall(req)
		if err != nil {
			yield(nil, err)
			return
		}
		stream := m.messages.NewStreaming(ctx, call.params)
		defer stream.Close()

		var message sdk.Message
		stopped := false
		for stream.Next() {
			event := stream.Current()
			if err := message.Accumulate(event); err != nil {
				yield(nil, streamError(ctx, err))
				return
			}
			if event.Type == "message_stop" {
				stopped = true
			}
			if chunk := call.delta(event, &message); chunk != nil && !yield(chunk, nil) {
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(nil, providerError(ctx, err))
			return
		}
		if !stopped {
			yield(nil, streamError(ctx, errors.New("stream ended before message_stop")))
			return
		}
		yield(&model.Chunk{Response: call.response(&message)}, nil)
	}
}
