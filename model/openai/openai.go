package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agnogo/agnogo/model"
)

// The APIs a [Model] can call, for [Config.API].
const (
	// APIChat is Chat Completions (POST /chat/completions), which OpenAI and
	// every OpenAI-compatible server offer.
	APIChat = "chat"
	// APIResponses is the Responses API (POST /responses).
	APIResponses = "responses"
)

// defaultBaseURL is OpenAI's API.
const defaultBaseURL = "https://api.openai.com/v1/"

// DefaultProvider is the provider name a [Model] reports unless
// [Config.Provider] says otherwise.
const DefaultProvider = "OpenAI"

// Config configures a [Model].
type Config struct {
	// ID is the model id sent with each request, e.g. gpt-5-mini. Required.
	ID string
	// APIKey authenticates the requests. Defaults to $OPENAI_API_KEY. A key is
	// required unless BaseURL (or $OPENAI_BASE_URL) names another server:
	// local servers such as Ollama need none.
	APIKey string
	// BaseURL is the API's base URL, for OpenAI-compatible servers such as
	// Ollama (http://localhost:11434/v1), vLLM or LM Studio. Defaults to
	// $OPENAI_BASE_URL, else OpenAI's https://api.openai.com/v1.
	BaseURL string
	// API is the API to call: [APIChat] or [APIResponses]. Defaults to
	// [APIChat].
	API string
	// HTTPClient sends the requests. Defaults to the SDK's client, whose
	// transport waits at most 10 minutes for response headers and has no
	// overall timeout (streams may run long; ctx bounds each call).
	HTTPClient *http.Client
	// Provider is the provider name reported by [Model.Info] and in errors.
	// Defaults to [DefaultProvider], "OpenAI".
	Provider string
	// MaxRetries is how many times the SDK itself retries a failed request.
	// Defaults to 0: retrying is the agent's job, which classifies the
	// failure (see [model.IsRetryable]) and records each attempt; SDK retries
	// would be silent.
	MaxRetries int
	// Temperature is the sampling temperature. Defaults to nil, the server's
	// default; [model.Request.Temperature] overrides it per call.
	Temperature *float64
	// MaxTokens caps the tokens of each reply: max_completion_tokens on
	// OpenAI, max_tokens on other servers (a BaseURL not on api.openai.com),
	// max_output_tokens on the Responses API. Defaults to 0, the server's default;
	// [model.Request.MaxTokens] overrides it per call.
	MaxTokens int
}

// Model is an OpenAI model, or a model behind an OpenAI-compatible server. It
// implements [model.Model] and is safe for concurrent use.
type Model struct {
	info   model.Info
	api    string
	client sdk.Client
	// legacyMaxTokens sends max_tokens rather than max_completion_tokens, for
	// OpenAI-compatible servers that know only the former.
	legacyMaxTokens bool
	temperature     *float64
	maxTokens       int
}

var _ model.Model = (*Model)(nil)

// New returns a model configured by cfg.
func New(cfg Config) (*Model, error) {
	cfg.APIKey = cmp.Or(cfg.APIKey, os.Getenv("OPENAI_API_KEY"))
	cfg.BaseURL = cmp.Or(cfg.BaseURL, os.Getenv("OPENAI_BASE_URL"))
	cfg.API = cmp.Or(cfg.API, APIChat)
	cfg.Provider = cmp.Or(cfg.Provider, DefaultProvider)
	if err := cfg.validate(); err != nil {
		return nil, err
	}

	options := []option.RequestOption{
		option.WithMaxRetries(cfg.MaxRetries),
		option.WithMiddleware(normalizeErrorBody),
	}
	if cfg.APIKey != "" {
		options = append(options, option.WithAPIKey(cfg.APIKey))
	}
	// Always explicit: the SDK would take $OPENAI_BASE_URL even when it is
	// set but empty, leaving requests without a host.
	options = append(options, option.WithBaseURL(cmp.Or(cfg.BaseURL, defaultBaseURL)))
	if cfg.HTTPClient != nil {
		options = append(options, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{
		info:            model.Info{ID: cfg.ID, Provider: cfg.Provider},
		api:             cfg.API,
		client:          sdk.NewClient(options...),
		legacyMaxTokens: !isOpenAI(cfg.BaseURL),
		temperature:     cloneFloat(cfg.Temperature),
		maxTokens:       cfg.MaxTokens,
	}, nil
}

func (cfg *Config) validate() error {
	var problems []error
	if cfg.ID == "" {
		problems = append(problems, errors.New("ID is required"))
	}
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		problems = append(problems, errors.New("no API key: set Config.APIKey or OPENAI_API_KEY"))
	}
	if cfg.BaseURL != "" {
		if parsed, err := url.Parse(cfg.BaseURL); err != nil || parsed.Scheme == "" || parsed.Host == "" {
			problems = append(problems, fmt.Errorf("BaseURL %q is not an absolute URL", cfg.BaseURL))
		}
	}
	if cfg.API != APIChat && cfg.API != APIResponses {
		problems = append(problems, fmt.Errorf("API %q is not %q or %q", cfg.API, APIChat, APIResponses))
	}
	if cfg.MaxRetries < 0 {
		problems = append(problems, fmt.Errorf("MaxRetries %d is negative", cfg.MaxRetries))
	}
	if cfg.MaxTokens < 0 {
		problems = append(problems, fmt.Errorf("MaxTokens %d is negative", cfg.MaxTokens))
	}
	if err := errors.Join(problems...); err != nil {
		return fmt.Errorf("openai model config: %w", err)
	}
	return nil
}

// Info names the model and its provider.
func (m *Model) Info() model.Info { return m.info }

// Invoke sends req and waits for the complete reply.
func (m *Model) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	if m.api == APIResponses {
		return m.invokeResponses(ctx, req)
	}
	return m.invokeChat(ctx, req)
}

// Stream sends req and yields the reply's text and reasoning as they arrive;
// the last chunk carries the complete reply, tool calls and usage included.
// Breaking the loop closes the HTTP stream.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	if m.api == APIResponses {
		return m.streamResponses(ctx, req)
	}
	return m.streamChat(ctx, req)
}

// isOpenAI reports whether baseURL is OpenAI's own API ("" is).
func isOpenAI(baseURL string) bool {
	if baseURL == "" {
		return true
	}
	parsed, err := url.Parse(baseURL)
	return err == nil && strings.EqualFold(parsed.Hostname(), "api.openai.com")
}

func cloneFloat(value *float64) *float64 {
	if value == nil {
		return nil
	}
	return new(*value)
}

// temperatureFor returns the temperature for req: its own, else the model's.
func (m *Model) temperatureFor(req *model.Request) *float64 {
	if req.Temperature != nil {
		return req.Temperature
	}
	return m.temperature
}

// maxTokensFor returns the reply cap for req: its own, else the model's.
func (m *Model) maxTokensFor(req *model.Request) int64 {
	return int64(cmp.Or(req.MaxTokens, m.maxTokens))
}

// endStream ends a streamed call, in order of precedence: the transport's
// error, a cancelled context, a stream cut before its end marker, or the
// final chunk carrying the complete reply.
func (m *Model) endStream(ctx context.Context, yield func(*model.Chunk, error) bool, streamErr error, complete bool, response func() *model.Response) {
	switch {
	case streamErr != nil:
		yield(nil, m.wrapError(ctx, streamErr))
	case ctx.Err() != nil:
		yield(nil, ctx.Err())
	case !complete:
		yield(nil, m.cutStream())
	default:
		yield(&model.Chunk{Response: response()}, nil)
	}
}
